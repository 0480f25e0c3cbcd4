/**
 * Communicators (MPI_Comm) and their blocking collectives. Every argument is
 * checked here, before the native call sends anything.
 */
import * as C from './coll/collectives.js';
import type { Collective, SendSpec } from './coll/collectives.js';
import type { Made } from './backend.js';
import type { Members, Started } from './coll/backend.js';
import { backend } from './backends/active.js';
import { ANY_SOURCE, ANY_TAG, COMM_TYPE_SHARED, CONGRUENT, IDENT, IN_PLACE, UNDEFINED, UNEQUAL } from './constants.js';
import { nameArg } from './datatype.js';
import { describe, fail, MPIError, retitle } from './errors.js';
import { beginStaging, releaseStaging, takeStaging } from './coll/staging.js';
import type { Msg, VMsg, WMsg } from './message.js';
import { Op } from './op.js';
import { Mode, PersistentRequest, Request, setNextCall, setNextHooks } from './request.js';
import { argList, RECORD, REPLAYED, Replays } from './replay.js';
import { hasUserOp, hold } from './hold.js';
import { ensureInit, worldRank } from './runtime.js';
import { compareRanks, Group } from './group.js';
import * as O from './objects/collectives.js';
import * as P from './p2p/p2p.js';
import type { Peers } from './p2p/backend.js';
import type { Status } from './p2p/status.js';
import type { Combine } from './objects/combine.js';

/** An intercommunicator (lib/intercomm.ts). */
export interface Intercomm extends Comm {
  readonly remoteSize: number;
  remoteGroup(): Group;
  merge(high: boolean): Comm;
}
type MakeIntercomm = (local: Comm, localLeader: number, peerComm: Comm, remoteLeader: number, tag: number) => Intercomm;
let makeIntercomm: MakeIntercomm | undefined;
/** @internal lib/intercomm.ts registers itself here (it extends Comm, so Comm cannot import it). */
export function registerIntercomm(make: MakeIntercomm): void {
  makeIntercomm = make;
}

// Handles of the predefined communicators.
const WORLD = 0;
const SELF = 1;

/**
 * A communicator: a group of ranks and a private context for their
 * collectives and messages.
 *
 * Errors: every method checks its arguments before anything is sent and
 * throws an MPIError naming the method and the argument: ERR_BUFFER (not a
 * buffer, or too small for its count and datatype), ERR_COUNT, ERR_TYPE
 * (a freed or uncommitted datatype), ERR_ROOT, ERR_OP (an op the datatype
 * does not allow), ERR_RANK and ERR_TAG (messages), ERR_ARG (anything else
 * malformed), ERR_COMM (a freed communicator). A collective whose ranks
 * disagree on what they call (collective, root, op, datatype, size) throws
 * ERR_NOT_SAME on every rank (on the mpi backend with NODEMPI_CHECK_SAME=1;
 * on shm with NODEMPI_CHECK_SAME=0, a small bcast's or scatter's root does
 * not throw it, nor does a small gather's non-root that agrees with the
 * root),
 * and the communicator stays usable; a message or block longer than its
 * receive buffer throws ERR_TRUNCATE; a rank that died makes the others
 * throw ERR_PROC_FAILED instead of hanging.
 * Nonblocking calls report the same errors when their Request completes.
 */
export class Comm {
  #handle: number;
  #rank = -1;
  #size = -1;
  #name: string;
  #group: Group | null;
  #freed = false;
  #replays: Replays | null = null;
  // Nonblocking collectives started here, and those not yet complete.
  #started = 0;
  #inflight = 0;
  #members: Members | null = null;

  /**
   * @internal `handle` is the backend's; `group` lists the members' world
   * ranks (null for the predefined communicators, which learn it at
   * initialisation).
   */
  constructor(handle: number, name: string, group: Group | null = null) {
    this.#handle = handle;
    this.#name = name;
    this.#group = group;
  }

  /** @internal The backend's handle, initialising MPI on first use. */
  get handle(): number {
    if (this.#size < 0) this.#learn();
    return this.#handle;
  }

  /** @internal The communicator as a backend sees it, initialising MPI on first use. */
  _members(): Members {
    return this.#members ?? this.#learn();
  }

  /** @internal The communicator as point-to-point sees it (Intercomm: with its remote group). */
  _peers(): Peers {
    return this._members();
  }

  #learn(): Members {
    if (this.#freed) fail('ERR_COMM', this.#name || 'comm', 'the communicator has been freed');
    ensureInit();
    ({ rank: this.#rank, size: this.#size } = backend.comms.info(this.#handle));
    return (this.#members = { handle: this.#handle, rank: this.#rank, size: this.#size });
  }

  /**
   * @internal The handle for method `call`: once the communicator has been
   * freed, ERR_COMM naming the method.
   */
  _live(call: string): number {
    if (this.#freed) fail('ERR_COMM', call, `the communicator${this.#name ? ` ${this.#name}` : ''} has been freed`);
    return this.handle;
  }

  /** This process's rank in the communicator (MPI_Comm_rank). */
  get rank(): number {
    this._live('rank');
    return this.#rank;
  }

  /** Number of ranks (MPI_Comm_size). */
  get size(): number {
    this._live('size');
    return this.#size;
  }

  /** Always false for an intracommunicator. */
  get isInter(): boolean { return false; }

  get name(): string { return this.#name; }
  set name(value: string) { this.#name = nameArg('Comm.name', value); }

  toString(): string { return `Comm(${this.#name})`; }

  /** MPI_Comm_group: the members, in rank order. */
  group(): Group {
    this._live('group');
    if (!this.#group) {
      const size = this.size;
      this.#group = new Group(this.#handle === WORLD ? Array.from({ length: size }, (_, r) => r) : [worldRank()]);
    }
    return this.#group;
  }

  /** MPI_Comm_dup: a new communicator with the same members and order, and its own context. */
  dup(): Comm {
    this._live('dup');
    return made(backend.comms.dup(this._members(), this.group().worldRanks, 'dup'));
  }

  /**
   * MPI_Comm_split: one new communicator per color, ranks ordered by key and
   * then by rank here; color mpi.UNDEFINED gives null.
   */
  split(color: number, key = 0): Comm | null {
    this._live('split');
    if (!Number.isInteger(color) || (color < 0 && color !== UNDEFINED)) {
      fail('ERR_ARG', 'split', `color must be a non-negative integer or mpi.UNDEFINED, got ${describe(color)}`);
    }
    if (!Number.isInteger(key)) fail('ERR_ARG', 'split', `key must be an integer, got ${describe(key)}`);
    return this.#derive('split', color, key);
  }

  /**
   * MPI_Comm_split_type: with mpi.COMM_TYPE_SHARED, the ranks that can share
   * memory (those of this rank's machine); mpi.UNDEFINED gives null.
   */
  splitType(type: number = COMM_TYPE_SHARED, key = 0): Comm | null {
    this._live('splitType');
    if (type !== COMM_TYPE_SHARED && type !== UNDEFINED) {
      fail('ERR_ARG', 'splitType', `type must be mpi.COMM_TYPE_SHARED or mpi.UNDEFINED, got ${describe(type)}`);
    }
    if (!Number.isInteger(key)) fail('ERR_ARG', 'splitType', `key must be an integer, got ${describe(key)}`);
    return made(backend.comms.splitShared(this._members(), this.group().worldRanks, type === UNDEFINED, key));
  }

  /**
   * MPI_Comm_create: a communicator of the members of `group` (a subgroup
   * of this one), ranked as in the group; null on the other ranks.
   */
  create(group: Group): Comm | null {
    this._live('create');
    if (!(group instanceof Group)) fail('ERR_GROUP', 'create', `group must be a Group, got ${describe(group)}`);
    const mine = this.group().worldRanks;
    const at = new Map(mine.map((w, r) => [w, r]));
    for (const w of group.worldRanks) {
      if (!at.has(w)) fail('ERR_GROUP', 'create', `the group holds world rank ${w}, which is not in this communicator`);
    }
    const k = group.worldRanks.indexOf(mine[this.rank]!);
    return this.#derive('create', k < 0 ? UNDEFINED : 0, k);
  }

  /**
   * MPI_Intercomm_create: collective over this communicator and, through the
   * two leaders, over the other group's. `localLeader` is a rank here;
   * `remoteLeader` is the other group's leader as a rank of `peerComm`
   * (which must hold both leaders); `tag` tells concurrent creations apart.
   */
  createIntercomm(localLeader: number, peerComm: Comm, remoteLeader: number, tag = 0): Intercomm {
    if (!makeIntercomm) fail('ERR_INTERN', 'createIntercomm', 'intercommunicator support is not loaded');
    return makeIntercomm(this, localLeader, peerComm, remoteLeader, tag);
  }

  /** MPI_Comm_free: collective; waits for this communicator's pending requests, then releases it. */
  free(): void {
    const h = this._live('free');
    if (h === WORLD || h === SELF) fail('ERR_COMM', 'free', `${this.#name} is predefined and cannot be freed`);
    this.#replays?.clear();
    this.#replays = null;
    backend.comms.free(h);
    this.#freed = true;
    this.#size = -1;
    this.#members = null;
  }

  /** MPI_Comm_compare: IDENT (same object), CONGRUENT (same ranks in order), SIMILAR (same members), UNEQUAL. */
  compare(other: Comm): number {
    if (!(other instanceof Comm)) fail('ERR_COMM', 'compare', `other must be a Comm, got ${describe(other)}`);
    // Both must be live, even when they are the same object.
    this._live('compare');
    other._live('compare');
    if (other === this) return IDENT;
    if (other.isInter) return UNEQUAL;
    const c = compareRanks(this.group().worldRanks, other.group().worldRanks);
    return c === IDENT ? CONGRUENT : c;
  }

  // split and create: one new communicator per color, ranked by key.
  #derive(call: string, color: number, key: number): Comm | null {
    this._live(call);
    return made(backend.comms.split(this._members(), this.group().worldRanks, call, color, key));
  }

  // Nonblocking (i-prefixed) and persistent (Init-suffixed) forms take the
  // same arguments and return a Request / PersistentRequest; the buffers
  // must not be touched until it completes.

  /** MPI_Barrier: returns once every rank has entered. */
  barrier(): void {
    this._blocking(C.barrier);
  }
  /** Nonblocking barrier (MPI_Ibarrier): returns at once; await or wait() the Request. */
  ibarrier(): Request {
    return this._request(C.barrier, []);
  }
  /** Persistent barrier: start() runs it, as often as needed. */
  barrierInit(): PersistentRequest {
    return this._persistent(C.barrier, []);
  }

  /** MPI_Bcast: `buf` at `root` is copied into `buf` at every other rank. */
  bcast(buf: Msg, root = 0): void {
    this._blocking(C.bcast, buf, root);
  }
  /** Nonblocking bcast (MPI_Ibcast): returns at once; await or wait() the Request. */
  ibcast(buf: Msg, root = 0): Request {
    return this._request(C.bcast, [buf, root]);
  }
  /** Persistent bcast: start() runs it, as often as needed. */
  bcastInit(buf: Msg, root = 0): PersistentRequest {
    return this._persistent(C.bcast, [buf, root]);
  }

  /**
   * MPI_Gather: every rank's `send` lands in block `rank` of `recv` at the
   * root. `recv` matters only at the root; IN_PLACE is for the root's send.
   */
  gather(send: SendSpec, recv: Msg | null, root = 0): void {
    this._blocking(C.gather, send, recv, root);
  }
  /** Nonblocking gather (MPI_Igather): returns at once; await or wait() the Request. */
  igather(send: SendSpec, recv: Msg | null, root = 0): Request {
    return this._request(C.gather, [send, recv, root]);
  }
  /** Persistent gather: start() runs it, as often as needed. */
  gatherInit(send: SendSpec, recv: Msg | null, root = 0): PersistentRequest {
    return this._persistent(C.gather, [send, recv, root]);
  }

  /**
   * MPI_Scatter: block `r` of `send` at the root goes to rank r's `recv`.
   * `send` matters only at the root; IN_PLACE is for the root's recv.
   */
  scatter(send: Msg | null, recv: SendSpec, root = 0): void {
    this._blocking(C.scatter, send, recv, root);
  }
  /** Nonblocking scatter (MPI_Iscatter): returns at once; await or wait() the Request. */
  iscatter(send: Msg | null, recv: SendSpec, root = 0): Request {
    return this._request(C.scatter, [send, recv, root]);
  }
  /** Persistent scatter: start() runs it, as often as needed. */
  scatterInit(send: Msg | null, recv: SendSpec, root = 0): PersistentRequest {
    return this._persistent(C.scatter, [send, recv, root]);
  }

  /** MPI_Allgather: every rank gets every rank's `send`, in rank order. */
  allgather(send: SendSpec, recv: Msg): void {
    this._blocking(C.allgather, send, recv);
  }
  /** Nonblocking allgather (MPI_Iallgather): returns at once; await or wait() the Request. */
  iallgather(send: SendSpec, recv: Msg): Request {
    return this._request(C.allgather, [send, recv]);
  }
  /** Persistent allgather: start() runs it, as often as needed. */
  allgatherInit(send: SendSpec, recv: Msg): PersistentRequest {
    return this._persistent(C.allgather, [send, recv]);
  }

  /** MPI_Alltoall: block j of rank i's `send` becomes block i of rank j's `recv`. */
  alltoall(send: SendSpec, recv: Msg): void {
    this._blocking(C.alltoall, send, recv);
  }
  /** Nonblocking alltoall (MPI_Ialltoall): returns at once; await or wait() the Request. */
  ialltoall(send: SendSpec, recv: Msg): Request {
    return this._request(C.alltoall, [send, recv]);
  }
  /** Persistent alltoall: start() runs it, as often as needed. */
  alltoallInit(send: SendSpec, recv: Msg): PersistentRequest {
    return this._persistent(C.alltoall, [send, recv]);
  }

  /**
   * MPI_Reduce: combines every rank's `send` with `op` into `recv` at the
   * root. `recv` matters only at the root; IN_PLACE is for the root's send.
   */
  reduce(send: SendSpec, recv: Msg | null, op: Op = Op.SUM, root = 0): void {
    this._blocking(C.reduce, send, recv, op, root);
  }
  /** Nonblocking reduce (MPI_Ireduce): returns at once; await or wait() the Request. */
  ireduce(send: SendSpec, recv: Msg | null, op: Op = Op.SUM, root = 0): Request {
    return this._request(C.reduce, [send, recv, op, root]);
  }
  /** Persistent reduce: start() runs it, as often as needed. */
  reduceInit(send: SendSpec, recv: Msg | null, op: Op = Op.SUM, root = 0): PersistentRequest {
    return this._persistent(C.reduce, [send, recv, op, root]);
  }

  /** MPI_Allreduce: every rank gets all ranks' `send` combined with `op`. */
  allreduce(send: SendSpec, recv: Msg, op: Op = Op.SUM): void {
    this._blocking(C.allreduce, send, recv, op);
  }
  /** Nonblocking allreduce (MPI_Iallreduce): returns at once; await or wait() the Request. */
  iallreduce(send: SendSpec, recv: Msg, op: Op = Op.SUM): Request {
    return this._request(C.allreduce, [send, recv, op]);
  }
  /** Persistent allreduce: start() runs it, as often as needed. */
  allreduceInit(send: SendSpec, recv: Msg, op: Op = Op.SUM): PersistentRequest {
    return this._persistent(C.allreduce, [send, recv, op]);
  }

  /**
   * MPI_Gatherv: rank r's `send` lands at `displs[r]` (items; packed in rank
   * order when omitted) of `recv` at the root. `recv` matters only at the root.
   */
  gatherv(send: SendSpec, recv: VMsg | null, root = 0): void {
    this._blocking(C.gatherv, send, recv, root);
  }
  /** Nonblocking gatherv (MPI_Igatherv): returns at once; await or wait() the Request. */
  igatherv(send: SendSpec, recv: VMsg | null, root = 0): Request {
    return this._request(C.gatherv, [send, recv, root]);
  }
  /** Persistent gatherv: start() runs it, as often as needed. */
  gathervInit(send: SendSpec, recv: VMsg | null, root = 0): PersistentRequest {
    return this._persistent(C.gatherv, [send, recv, root]);
  }

  /**
   * MPI_Scatterv: the block at `displs[r]` of `send` at the root goes to
   * rank r's `recv`. `send` matters only at the root.
   */
  scatterv(send: VMsg | null, recv: SendSpec, root = 0): void {
    this._blocking(C.scatterv, send, recv, root);
  }
  /** Nonblocking scatterv (MPI_Iscatterv): returns at once; await or wait() the Request. */
  iscatterv(send: VMsg | null, recv: SendSpec, root = 0): Request {
    return this._request(C.scatterv, [send, recv, root]);
  }
  /** Persistent scatterv: start() runs it, as often as needed. */
  scattervInit(send: VMsg | null, recv: SendSpec, root = 0): PersistentRequest {
    return this._persistent(C.scatterv, [send, recv, root]);
  }

  /** MPI_Allgatherv: every rank's `send` lands at `displs[r]` of every rank's `recv`. */
  allgatherv(send: SendSpec, recv: VMsg): void {
    this._blocking(C.allgatherv, send, recv);
  }
  /** Nonblocking allgatherv (MPI_Iallgatherv): returns at once; await or wait() the Request. */
  iallgatherv(send: SendSpec, recv: VMsg): Request {
    return this._request(C.allgatherv, [send, recv]);
  }
  /** Persistent allgatherv: start() runs it, as often as needed. */
  allgathervInit(send: SendSpec, recv: VMsg): PersistentRequest {
    return this._persistent(C.allgatherv, [send, recv]);
  }

  /** MPI_Alltoallv: block j of rank i's `send` becomes block i of rank j's `recv`. */
  alltoallv(send: VMsg | typeof IN_PLACE, recv: VMsg): void {
    this._blockingPair(C.alltoallv, send, recv);
  }
  /** Nonblocking alltoallv (MPI_Ialltoallv): returns at once; await or wait() the Request. */
  ialltoallv(send: VMsg | typeof IN_PLACE, recv: VMsg): Request {
    return this._request(C.alltoallv, [send, recv]);
  }
  /** Persistent alltoallv: start() runs it, as often as needed. */
  alltoallvInit(send: VMsg | typeof IN_PLACE, recv: VMsg): PersistentRequest {
    return this._persistent(C.alltoallv, [send, recv]);
  }

  /**
   * MPI_Alltoallw: as alltoallv, with byte displacements and a datatype per
   * block.
   */
  alltoallw(send: WMsg | typeof IN_PLACE, recv: WMsg): void {
    this._blockingPair(C.alltoallw, send, recv);
  }
  /** Nonblocking alltoallw (MPI_Ialltoallw): returns at once; await or wait() the Request. */
  ialltoallw(send: WMsg | typeof IN_PLACE, recv: WMsg): Request {
    return this._request(C.alltoallw, [send, recv]);
  }
  /** Persistent alltoallw: start() runs it, as often as needed. */
  alltoallwInit(send: WMsg | typeof IN_PLACE, recv: WMsg): PersistentRequest {
    return this._persistent(C.alltoallw, [send, recv]);
  }

  /**
   * MPI_Reduce_scatter: the vector of sum(recvcounts) items is combined with
   * `op` over all ranks and rank r receives the r-th block of recvcounts[r]
   * items. With IN_PLACE the input is read from `recv`.
   */
  reduceScatter(send: SendSpec, recv: Msg, recvcounts: readonly number[], op: Op = Op.SUM): void {
    this._blocking(C.reduceScatter, send, recv, recvcounts, op);
  }
  /** Nonblocking reduceScatter (MPI_Ireducescatter): returns at once; await or wait() the Request. */
  ireduceScatter(send: SendSpec, recv: Msg, recvcounts: readonly number[], op: Op = Op.SUM): Request {
    return this._request(C.reduceScatter, [send, recv, recvcounts, op]);
  }
  /** Persistent reduceScatter: start() runs it, as often as needed. */
  reduceScatterInit(send: SendSpec, recv: Msg, recvcounts: readonly number[], op: Op = Op.SUM): PersistentRequest {
    return this._persistent(C.reduceScatter, [send, recv, recvcounts, op]);
  }

  /**
   * MPI_Reduce_scatter_block: as reduceScatter with every block the same
   * size. A bare send buffer is split evenly into size() blocks; with
   * IN_PLACE, `recv` holds all blocks and receives this rank's at its start.
   */
  reduceScatterBlock(send: SendSpec, recv: Msg, op: Op = Op.SUM): void {
    this._blocking(C.reduceScatterBlock, send, recv, op);
  }
  /** Nonblocking reduceScatterBlock (MPI_Ireducescatterblock): returns at once; await or wait() the Request. */
  ireduceScatterBlock(send: SendSpec, recv: Msg, op: Op = Op.SUM): Request {
    return this._request(C.reduceScatterBlock, [send, recv, op]);
  }
  /** Persistent reduceScatterBlock: start() runs it, as often as needed. */
  reduceScatterBlockInit(send: SendSpec, recv: Msg, op: Op = Op.SUM): PersistentRequest {
    return this._persistent(C.reduceScatterBlock, [send, recv, op]);
  }

  /** MPI_Scan: rank r receives the combination of ranks 0..r's `send`. */
  scan(send: SendSpec, recv: Msg, op: Op = Op.SUM): void {
    this._blocking(C.scan, send, recv, op);
  }
  /** Nonblocking scan (MPI_Iscan): returns at once; await or wait() the Request. */
  iscan(send: SendSpec, recv: Msg, op: Op = Op.SUM): Request {
    return this._request(C.scan, [send, recv, op]);
  }
  /** Persistent scan: start() runs it, as often as needed. */
  scanInit(send: SendSpec, recv: Msg, op: Op = Op.SUM): PersistentRequest {
    return this._persistent(C.scan, [send, recv, op]);
  }

  /**
   * MPI_Exscan: rank r receives the combination of ranks 0..r-1's `send`;
   * rank 0's `recv` is left untouched.
   */
  exscan(send: SendSpec, recv: Msg, op: Op = Op.SUM): void {
    this._blocking(C.exscan, send, recv, op);
  }
  /** Nonblocking exscan (MPI_Iexscan): returns at once; await or wait() the Request. */
  iexscan(send: SendSpec, recv: Msg, op: Op = Op.SUM): Request {
    return this._request(C.exscan, [send, recv, op]);
  }
  /** Persistent exscan: start() runs it, as often as needed. */
  exscanInit(send: SendSpec, recv: Msg, op: Op = Op.SUM): PersistentRequest {
    return this._persistent(C.exscan, [send, recv, op]);
  }

  // ---- Object collectives: any value structuredClone accepts, by node:v8
  // serialization (lib/objects/collectives.ts). The `i` forms return a
  // Promise and leave the event loop free.

  /** The root's `value` on every rank (the root gets back `value` itself). */
  bcastObject<T>(value: T, root = 0): T {
    return O.blocking('bcastObject', O.bcastSteps(this, 'bcastObject', value, root));
  }
  ibcastObject<T>(value: T, root = 0): Promise<T> {
    return O.nonblocking('ibcastObject', O.bcastSteps(this, 'ibcastObject', value, root));
  }
  /** Every rank's `value`, in rank order, at the root; null elsewhere. */
  gatherObject<T>(value: T, root = 0): T[] | null {
    return O.blocking('gatherObject', O.gatherSteps(this, 'gatherObject', value, root));
  }
  igatherObject<T>(value: T, root = 0): Promise<T[] | null> {
    return O.nonblocking('igatherObject', O.gatherSteps(this, 'igatherObject', value, root));
  }
  /** `values[r]` of the root at rank r (`values` matters only at the root, one per rank). */
  scatterObject<T>(values: readonly T[] | null, root = 0): T {
    return O.blocking('scatterObject', O.scatterSteps(this, 'scatterObject', values, root));
  }
  iscatterObject<T>(values: readonly T[] | null, root = 0): Promise<T> {
    return O.nonblocking('iscatterObject', O.scatterSteps(this, 'iscatterObject', values, root));
  }
  /** Every rank's `value`, in rank order, on every rank. */
  allgatherObject<T>(value: T): T[] {
    return O.blocking('allgatherObject', O.allgatherSteps(this, 'allgatherObject', value));
  }
  iallgatherObject<T>(value: T): Promise<T[]> {
    return O.nonblocking('iallgatherObject', O.allgatherSteps(this, 'iallgatherObject', value));
  }
  /** `values[i]` goes to rank i; the result holds what each rank sent here, in rank order. */
  alltoallObject<T>(values: readonly T[]): T[] {
    return O.blocking('alltoallObject', O.alltoallSteps(this, 'alltoallObject', values));
  }
  ialltoallObject<T>(values: readonly T[]): Promise<T[]> {
    return O.nonblocking('ialltoallObject', O.alltoallSteps(this, 'ialltoallObject', values));
  }
  /**
   * Every rank's `value` combined in rank order at the root (null
   * elsewhere): a predefined Op on numbers, bigints, booleans, arrays and
   * typed arrays of them (MAXLOC/MINLOC on [value, index] pairs), or a
   * function.
   */
  reduceObject<T>(value: T, op: Op | Combine<T>, root = 0): T | null {
    return O.blocking('reduceObject', O.reduceSteps(this, 'reduceObject', value, op, root));
  }
  ireduceObject<T>(value: T, op: Op | Combine<T>, root = 0): Promise<T | null> {
    return O.nonblocking('ireduceObject', O.reduceSteps(this, 'ireduceObject', value, op, root));
  }
  /** reduceObject's result on every rank. */
  allreduceObject<T>(value: T, op: Op | Combine<T>): T {
    return O.blocking('allreduceObject', O.allreduceSteps(this, 'allreduceObject', value, op));
  }
  iallreduceObject<T>(value: T, op: Op | Combine<T>): Promise<T> {
    return O.nonblocking('iallreduceObject', O.allreduceSteps(this, 'iallreduceObject', value, op));
  }
  /** The values of ranks 0 to this one, combined in rank order. */
  scanObject<T>(value: T, op: Op | Combine<T>): T {
    return O.blocking('scanObject', O.scanSteps(this, 'scanObject', value, op));
  }
  iscanObject<T>(value: T, op: Op | Combine<T>): Promise<T> {
    return O.nonblocking('iscanObject', O.scanSteps(this, 'iscanObject', value, op));
  }
  /** The values of ranks 0 to the one before this, combined in rank order; undefined at rank 0. */
  exscanObject<T>(value: T, op: Op | Combine<T>): T | undefined {
    return O.blocking('exscanObject', O.exscanSteps(this, 'exscanObject', value, op));
  }
  iexscanObject<T>(value: T, op: Op | Combine<T>): Promise<T | undefined> {
    return O.nonblocking('iexscanObject', O.exscanSteps(this, 'iexscanObject', value, op));
  }

  // ---- Point-to-point (lib/p2p/p2p.ts). Ranks name the remote group on an
  // intercommunicator; mpi.PROC_NULL as a peer completes at once.

  /**
   * MPI_Send (standard mode): may return before the receive is posted (small
   * messages), or wait for it (large ones). Messages between two ranks with
   * one tag on one communicator arrive in the order sent.
   */
  send(buf: Msg, dest: number, tag = 0): void {
    P.send(this, 'send', buf, dest, tag);
  }
  /**
   * MPI_Recv: waits for a message from `source` with `tag` (by default any)
   * and returns its Status. A message longer than `buf` throws
   * ERR_TRUNCATE; nothing is written past `buf`.
   */
  recv(buf: Msg, source: number = ANY_SOURCE, tag: number = ANY_TAG): Status {
    return P.recv(this, 'recv', buf, source, tag);
  }
  /** MPI_Sendrecv: sends `send` to `dest` and receives into `recv` from `source`, without waiting on each other. */
  sendrecv(send: Msg, dest: number, sendtag: number, recv: Msg, source: number, recvtag: number): Status {
    return P.sendrecv(this, 'sendrecv', send, dest, sendtag, recv, source, recvtag);
  }
  /** MPI_Sendrecv_replace: sends `buf`, then receives into it. */
  sendrecvReplace(buf: Msg, dest: number, sendtag: number, source: number, recvtag: number): Status {
    return P.sendrecvReplace(this, 'sendrecvReplace', buf, dest, sendtag, source, recvtag);
  }
  /** MPI_Isend: returns at once; `buf` must stay unchanged until the Request completes. */
  isend(buf: Msg, dest: number, tag = 0): Request {
    return P.isend(this, 'isend', buf, dest, tag);
  }
  /** MPI_Irecv: returns at once; awaiting the Request gives the message's Status (also `request.status`). */
  irecv(buf: Msg, source: number = ANY_SOURCE, tag: number = ANY_TAG): Request<Status> {
    return P.irecv(this, 'irecv', buf, source, tag);
  }
  /** MPI_Probe: waits until a matching message can be received and returns its Status, leaving it to be received. */
  probe(source: number = ANY_SOURCE, tag: number = ANY_TAG): Status {
    return P.probe(this, 'probe', source, tag);
  }
  /** MPI_Iprobe: a matching message's Status if one can be received now, else null. */
  iprobe(source: number = ANY_SOURCE, tag: number = ANY_TAG): Status | null {
    return P.iprobe(this, 'iprobe', source, tag);
  }
  /** Sends any value structuredClone accepts (node:v8 serialization) to `dest`. */
  sendObject(value: unknown, dest: number, tag = 0): void {
    P.sendObject(this, 'sendObject', value, dest, tag);
  }
  /**
   * Receives a value sendObject sent, of whatever size; `status`, if given,
   * is filled with the message's source, tag and byteLength. From
   * mpi.PROC_NULL: undefined.
   */
  recvObject<T>(source: number = ANY_SOURCE, tag: number = ANY_TAG, status?: Status): T {
    return P.recvObject(this, 'recvObject', source, tag, status) as T;
  }
  /** sendObject with the event loop free until the value has left. */
  isendObject(value: unknown, dest: number, tag = 0): Promise<void> {
    return P.isendObject(this, 'isendObject', value, dest, tag);
  }
  /** recvObject with the event loop free until a value arrives. */
  irecvObject<T>(source: number = ANY_SOURCE, tag: number = ANY_TAG): Promise<T> {
    return P.irecvObject(this, 'irecvObject', source, tag) as Promise<T>;
  }

  /**
   * @internal A blocking collective. A call with the very arguments of a
   * recent one runs as the persistent request made of it (lib/replay.ts);
   * anything else goes through _run. The arguments come one by one and no
   * array is made for a repeat, so that a loop of blocking calls allocates
   * nothing: each young-generation collection stops a rank for up to a
   * millisecond early in a job, and stops its peers with it
   * (bench/WARMUP.md).
   */
  _blocking<A extends [unknown?, unknown?, unknown?, unknown?]>(d: Collective<A>, ...args: Required<A>): void;
  _blocking(d: Collective<unknown[]>, a0?: unknown, a1?: unknown, a2?: unknown, a3?: unknown): void {
    // Not a rest parameter nor `arguments`: each is an object per call
    // until V8 optimizes the function.
    const replays = running === 0 ? this.#replays ?? this._replays() : null;
    const r = replays !== null ? replays.replay(d.id, d.arity, a0, a1, a2, a3) : -1;
    if (r !== REPLAYED) this.#unreplayed(d, replays, r, a0, a1, a2, a3);
  }

  /** @internal _blocking for alltoallv and alltoallw (Replays.replayPair). */
  _blockingPair(d: Collective<[unknown, unknown]>, a0: unknown, a1: unknown): void {
    const replays = running === 0 ? this.#replays ?? this._replays() : null;
    const r = replays !== null ? replays.replayPair(d.id, a0, a1) : -1;
    if (r !== REPLAYED) this.#unreplayed(d as Collective<unknown[]>, replays, r, a0, a1, undefined, undefined);
  }

  // A blocking call that did not run from a template: kept as one when
  // replay() said RECORD, else run as usual. Apart from _blocking, which
  // V8 inlines into the caller's loop, so that only what a repeat runs is
  // inlined there.
  #unreplayed(d: Collective<unknown[]>, replays: Replays | null, r: number, a0: unknown, a1: unknown, a2: unknown, a3: unknown): void {
    const args = argList(d.arity, a0, a1, a2, a3);
    if (r === RECORD && this.#keep(replays!, d, args)) return;
    this._run(d, Mode.BLOCKING, args);
  }

  /**
   * @internal Runs collective `d` in `mode` with the public method's
   * arguments, with the packing and unpacking its datatypes need around it.
   */
  _run<A extends unknown[]>(d: Collective<A>, mode: Mode, args: A): Started {
    // The only way back in while a call runs is a user-defined op's
    // function, and MPI does not let a user function communicate: say so,
    // rather than lose the outer call's staging or deadlock.
    if (running > 0) {
      fail('ERR_OTHER', d.name, 'called from inside the user-defined op of another collective; a user function must not communicate');
    }
    // JavaScript may run while the operation holds the buffers (a request
    // in flight, a user op's function): refuse what could shrink under it,
    // and keep the rest from being taken away (lib/hold.ts).
    const held = mode !== Mode.BLOCKING || hasUserOp(args) ? hold(publicName(d.name, mode), d.inout === true, args) : null;
    beginStaging(mode === Mode.BLOCKING);
    let result: Started;
    running++;
    try {
      result = this._collective(d, mode, held ? held.args : args);
    } catch (err) {
      // Nothing is in flight after a failed call (blocking or not started).
      releaseStaging(takeStaging());
      if (this.#inflight > 0) hintDup(err);
      throw retitle(err, publicName(d.name, mode));
    } finally {
      running--;
    }
    // Derived datatypes: unpack now, or when the request completes.
    const st = takeStaging();
    if (mode === Mode.BLOCKING) {
      if (st) {
        for (const f of st.after) f();
        releaseStaging(st);
      }
      held?.after();
    } else {
      // The request checks (and copies) the caller's buffers before each
      // start, then packs; at completion it unpacks, then checks (and
      // copies back).
      setNextCall(publicName(d.name, mode), held);
      if (st) setNextHooks(st);
    }
    return result;
  }

  /** @internal The nonblocking form of collective `d`. */
  _request<A extends unknown[]>(d: Collective<A>, args: A): Request {
    const req = new Request(started(this._run(d, Mode.NONBLOCKING, args), d.name), args);
    // In flight beside another: one was at the start, or one started since.
    const alongside = this.#inflight > 0, seq = ++this.#started;
    this.#inflight++;
    req._onEnd = (err) => {
      this.#inflight--;
      if (err && (alongside || this.#started > seq)) hintDup(err);
    };
    return req;
  }

  /** @internal The persistent form of collective `d`. */
  _persistent<A extends unknown[]>(d: Collective<A>, args: A): PersistentRequest {
    return new PersistentRequest(started(this._run(d, Mode.PERSISTENT, args), d.name), args);
  }

  // The second of two identical blocking calls: made a persistent request
  // and run from it. False when it staged a derived type (then it runs as
  // usual, and is never kept).
  #keep<A extends unknown[]>(replays: Replays, d: Collective<A>, args: A): boolean {
    beginStaging(false);
    let id: Started;
    running++;
    try {
      id = this._collective(d, Mode.PERSISTENT, args);
    } catch (err) {
      takeStaging();
      throw retitle(err, d.name);
    } finally {
      running--;
    }
    const staged = takeStaging() !== null;
    if (id === undefined) return false;
    if (staged) {
      replays.kept(-1);
      backend.requests.freeTemplate(id);
      return false;
    }
    replays.kept(id);
    return backend.requests.runTemplate!(id);
  }

  /**
   * @internal This communicator's replays of repeated blocking calls, where
   * the backend runs templates as blocking calls. Intercomm has none: its
   * collectives make more than one call to the addon, or exchange counts
   * first.
   */
  protected _replays(): Replays | null {
    if (this.#replays === null && !backend.requests.runTemplate) return null;
    return (this.#replays ??= new Replays());
  }

  /** @internal The collective on this communicator's backend; Intercomm runs the intercommunicator form. */
  protected _collective<A extends unknown[]>(d: Collective<A>, mode: Mode, args: A): Started {
    return d.intra(backend.collectives.intra, this._members(), mode, ...args);
  }
}

// The Comm of a communicator the backend made (null: none on this rank).
function made(m: Made): Comm;
function made(m: Made | null): Comm | null;
function made(m: Made | null): Comm | null {
  return m === null ? null : new Comm(m.handle, '', new Group(m.world));
}

// A nonblocking or persistent call's request or template id.
function started(id: Started, call: string): number {
  if (id === undefined) fail('ERR_INTERN', call, 'the backend started no request');
  return id;
}

// Collective calls of this thread in progress (see Comm._run).
let running = 0;

// The method a collective was called through, for messages.
// (Made once per collective: a string per call costs more than the lookup.)
const iNames = new Map<string, string>(), initNames = new Map<string, string>();
function publicName(name: string, mode: Mode): string {
  if (mode === Mode.NONBLOCKING) {
    let s = iNames.get(name);
    if (s === undefined) iNames.set(name, (s = `i${name}`));
    return s;
  }
  if (mode === Mode.PERSISTENT) {
    let s = initNames.get(name);
    if (s === undefined) initNames.set(name, (s = `${name}Init`));
    return s;
  }
  return name;
}


// Ranks that disagree while several collectives are in flight on one
// communicator have most likely started them in different orders: two async
// tasks sharing it, each rank's event loop interleaving them its own way.
function hintDup(err: unknown): void {
  if (!(err instanceof MPIError) || err.code !== 'ERR_NOT_SAME' || err.message.includes('comm.dup()')) return;
  err.message += '. Several collectives were in flight on this communicator: every rank must start them in the same order; ' +
    'give each concurrent async task its own communicator (comm.dup())';
}
