/**
 * The seam between the public API and what moves the data: a Backend.
 *
 * - `shm` (lib/backends/shm.ts): nodempi's own shared-memory transport, one
 *   machine; the `nodempi` launcher, mpi.launch() and a plain `node app.js`.
 * - `mpi` (lib/backends/mpi.ts): the system's MPI library (Open MPI, MPICH
 *   and their derivatives), loaded at run time, when an MPI launcher
 *   started the process; jobs span machines.
 *
 * lib/ checks and resolves every argument the same way whichever runs
 * (lib/coll/collectives.ts for the collectives), then calls `backend`,
 * chosen once at initialisation (lib/runtime.ts). Nothing outside
 * lib/backends/ and lib/coll/{shm,mpi}.ts asks which one it is.
 */
import type { CollectiveBackend, InterMembers, Members } from './coll/backend.js';
import type { PointToPoint } from './p2p/backend.js';

/** A communicator a backend made: its handle and its members' COMM_WORLD ranks. */
export interface Made {
  readonly handle: number;
  readonly world: readonly number[];
}

/** An intercommunicator a backend made. */
export interface MadeInter {
  readonly handle: number;
  readonly local: readonly number[];
  readonly remote: readonly number[];
  /** Whether the local group comes first in the shared context (shm's layout; false on mpi). */
  readonly low: boolean;
}

/** What createIntercomm hands a backend, checked at the local leader. */
export interface InterRequest {
  readonly local: Members;
  readonly localWorld: readonly number[];
  readonly localLeader: number;
  /** At the local leader: peerComm, and the remote leader as its rank and as a COMM_WORLD rank. */
  readonly peer: { readonly comm: Members; readonly remoteLeader: number; readonly remoteWorld: number } | null;
  readonly tag: number;
  /**
   * A collective of the local group: the leader's bytes to every member
   * (the backend tells the group what the leader learnt, or what failed).
   */
  bcastLocal(data: Int32Array, root: number): void;
}

/** Communicator management. */
export interface Communicators {
  /** This rank and the size of the (local) group. */
  info(handle: number): { rank: number; size: number };
  /** MPI_Comm_dup. `world` lists the members' COMM_WORLD ranks. */
  dup(c: Members, world: readonly number[], call: string): Made;
  /** MPI_Comm_split (and create, as a split): null for color mpi.UNDEFINED. */
  split(c: Members, world: readonly number[], call: string, color: number, key: number): Made | null;
  /** MPI_Comm_split_type(COMM_TYPE_SHARED): the ranks of this rank's host; null when `undefined`. */
  splitShared(c: Members, world: readonly number[], undefined: boolean, key: number): Made | null;
  free(handle: number): void;
  /** MPI_Intercomm_create. */
  createInter(r: InterRequest): MadeInter;
  /** MPI_Intercomm_merge. */
  merge(c: InterMembers, local: readonly number[], remote: readonly number[], low: boolean, high: boolean): Made;
  /** MPI_Comm_dup of an intercommunicator. */
  dupInter(c: InterMembers, local: readonly number[], remote: readonly number[], low: boolean): MadeInter;
}

/**
 * Requests of nonblocking and persistent collectives, by the id a
 * collective returned.
 */
export interface Requests {
  /** undefined while in flight, else null or the MPIError; never blocks. */
  test(id: number): Error | null | undefined;
  /** Blocks until done: null or the MPIError. */
  wait(id: number): Error | null;
  /** Blocks until one of `ids` is done; its index (wait() then reports it). */
  waitAny(ids: number[]): number;
  /** A new round of a persistent request: the id it completes under. */
  start(template: number): number;
  freeTemplate(template: number): void;
  /**
   * A request is in flight: `deliver([id, error | null, ...])` is to be
   * called with completions as they happen, from the event loop.
   */
  watch(deliver: (done: unknown[]) => void): void;
  /** Completions not delivered yet (after a wait() that may have run others). */
  drain(): unknown[];
  /**
   * Runs persistent template `id` as a blocking call (repeated blocking calls,
   * lib/replay.ts); false when the template is gone. Absent where a backend
   * gains nothing from it.
   */
  runTemplate?(id: number): boolean;
}

/** The life cycle of the process's part in the job. */
export interface Runtime {
  /** Joins the job: this rank and the size of COMM_WORLD. */
  init(): { rank: number; size: number };
  finalize(): void;
  /** The process is exiting with `code` without having finalized. */
  exit(code: number): void;
  /** Ends every rank of the job; the caller then exits with `code`. */
  abort(code: number): void;
  libraryVersion(): string;
  processorName(): string;
}

export interface Backend {
  readonly name: 'shm' | 'mpi';
  readonly runtime: Runtime;
  readonly comms: Communicators;
  readonly requests: Requests;
  readonly collectives: CollectiveBackend;
  /** Point-to-point messages (lib/p2p/backend.ts). */
  readonly p2p: PointToPoint;
}
