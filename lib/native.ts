/**
 * The typed contract of the native addon. Nothing else in lib/ loads it.
 * Buffers are TypedArrays or DataViews (lib/message.ts wraps ArrayBuffers);
 * `null` for a send buffer means MPI_IN_PLACE. Handles are small integers.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import type { UserOpSpec } from './op.js';

type View = ArrayBufferView;
/**
 * Per-rank doubles for the addon: the number of an argument list set with
 * setArgLists (lib/args.ts), or a Float64Array.
 */
type List = number | Float64Array;

export interface NativeAddon {
  setErrorFactory(make: (errorClass: number, message: string, cause?: unknown) => Error): void;
  /** The call block (lib/block.ts): 16 doubles, kept until exit. */
  setCallBlock(buffer: ArrayBuffer): void;
  /** Seconds since the addon was loaded (CLOCK_MONOTONIC), left in the call block's WTIME. */
  wtime(): undefined;
  /** Attach to the job (fd from the launcher) or start a singleton (fd -1). */
  init(rank: number, size: number, fd: number): void;
  finalize(): void;
  /** Mark the job failed and signal the other ranks; the caller then exits. */
  abort(): void;
  /**
   * Ties this process to the launcher `pid` of its job: SIGKILL when the
   * launcher ends if it is the parent (PR_SET_PDEATHSIG), SIGKILL at once
   * if the launcher is already gone; nothing in the launcher itself.
   */
  watchLauncher(pid: number): void;
  /**
   * What does not parse among the core's NODEMPI_* settings
   * (native/core/tuning.h), '' when all do: of this process's environment
   * (read once), or of `env`.
   */
  settingsErrors(env?: NodeJS.ProcessEnv): string;
  kernelIsa(): string;
  selectKernelIsa(name: string): boolean;
  /** Calls this process ended by direct copies between processes (for tests). */
  singleCopies(): number;
  /** Slot sets this rank has ever written (tests: memory follows busy communicators). */
  slotSetsUsed(): number;

  commInfo(comm: number): [rank: number, size: number];
  // Every collective takes a trailing mode (0 blocking, 1 nonblocking,
  // 2 persistent) and returns a request or template id for modes 1 and 2.
  barrier(comm: number, mode: number): number | undefined;
  /**
   * `type` 0: `buf` is `bytes` plain bytes. Otherwise a datatype handle:
   * `buf` holds `count` items of it (origin at byte 0), whose packed stream
   * (`bytes` long) is what travels.
   */
  bcast(comm: number, buf: View, bytes: number, root: number, type: number, count: number, mode: number): number | undefined;
  gather(comm: number, send: View | null, recv: View | null, bytes: number, root: number, mode: number): number | undefined;
  scatter(comm: number, send: View | null, recv: View | null, bytes: number, root: number, mode: number): number | undefined;
  /** Types and counts as for bcast; `bytes` is one block's stream, `recvCount` the items of all blocks. */
  allgather(comm: number, send: View | null, recv: View, bytes: number, sendType: number, sendCount: number,
    recvType: number, recvCount: number, mode: number): number | undefined;
  alltoall(comm: number, send: View | null, recv: View, bytes: number, mode: number): number | undefined;
  /** op -1 is a user-defined op described by `user`. */
  reduce(comm: number, send: View | null, recv: View | null, count: number, type: number, op: number, root: number,
    user: UserOpSpec | undefined, mode: number): number | undefined;
  allreduce(comm: number, send: View | null, recv: View, count: number, type: number, op: number, user: UserOpSpec | undefined, mode: number): number | undefined;

  /**
   * The argument lists (lib/args.ts): four lists of `width` doubles
   * each, one after another; a List argument given as a number k is list k.
   */
  setArgLists(buffer: ArrayBuffer, width: number): void;
  /** Counts and displacements (Lists) are in bytes, one per rank. */
  gatherv(comm: number, send: View | null, sendBytes: number, recv: View | null, recvBytes: List | null,
    recvDispls: List | null, root: number, mode: number): number | undefined;
  scatterv(comm: number, send: View | null, sendBytes: List | null, sendDispls: List | null,
    recv: View | null, recvBytes: number, root: number, mode: number): number | undefined;
  allgatherv(comm: number, send: View | null, sendBytes: number, recv: View, recvBytes: List, recvDispls: List, mode: number): number | undefined;
  alltoallv(comm: number, send: View | null, sendBytes: List | null, sendDispls: List | null,
    recv: View, recvBytes: List, recvDispls: List, mode: number): number | undefined;
  /** counts in items, one per rank. */
  reduceScatter(comm: number, send: View | null, recv: View, counts: List, type: number, op: number, user: UserOpSpec | undefined, mode: number): number | undefined;
  scan(comm: number, send: View | null, recv: View, count: number, type: number, op: number, exclusive: boolean, user: UserOpSpec | undefined, mode: number): number | undefined;

  // communicator management (lib/comm.ts)
  /** A context from the pool for a communicator of `members` ranks; -1 when exhausted, 0 when none is needed. */
  ctxAlloc(members: number): number;
  ctxRelease(ctx: number): void;
  commCreate(ctx: number, rank: number, worldRanks: Int32Array): number;
  commFree(comm: number): void;
  /** Leaders of two groups swap a message through the segment (intercommunicator creation). */
  leaderExchange(peerWorldRank: number, tag: number, data: Int32Array): Int32Array;
  /** Intercommunicator reductions: alltoallv then fold what arrived (bytes per merged rank). */
  /** kind: 0 a rank that takes no part (MPI_PROC_NULL), 1 reduce, 2 allreduce, 3 reduce-scatter. */
  exchangeFold(comm: number, send: View | null, sendBytes: List, sendDispls: List, recv: View | null,
    recvBytes: List, count: number, type: number, op: number, user: UserOpSpec | undefined, kind: number, mode: number): number | undefined;

  // point-to-point (lib/p2p/shm.ts). The numbers of a call are in the call
  // block (lib/block.ts; the layout in native/napi/p2p_binding.cc):
  // [0] the communicator, [1] the byte count; a send's [2] peer, [3] tag,
  // [4] self; a blocking receive's envelope and then status at [4..7].
  // `peer` is a rank's index in the communicator's context (on an
  // intercommunicator, remoteBase + its rank in the remote group); `self`
  // is this rank in its own group, which the receiver matches and reports
  // as the source. A status is 4 doubles: source, tag, byteLength, message
  // handle. A receive or probe reads its envelope from it first: [source,
  // tag, first, count], source -1 for ANY_SOURCE and tag -1 for ANY_TAG; it
  // gives up with ERR_PROC_FAILED once the members [first, first + count)
  // of the context that could send its message have all gone.
  /** Standard-mode send; returns once the message is in the ring. */
  p2pSend(buf: View): void;
  /** The same, nonblocking: a request id of the progress engine. */
  p2pIsend(buf: View): number;
  /** A longer message fills the status and throws ERR_TRUNCATE. */
  p2pRecv(buf: View): void;
  /** The same, nonblocking, with its own status: a request id; status is written before it completes. */
  p2pIrecv(buf: View, status: Float64Array): number;
  /**
   * kind 0 probe, 1 iprobe (returns whether a message matched), 2 mprobe
   * (status[3] the handle), 3 improbe (returns a request id).
   */
  p2pProbe(status: Float64Array, kind: number): boolean | number | undefined;
  /** Receives the message of an mprobe/improbe handle, once. */
  p2pMrecv(message: number, buf: View, bytes: number, status: Float64Array): void;

  // progress engine (lib/request.ts)
  /** fn() runs on the main thread when requests may have completed. */
  setProgressCallback(fn: () => void): void;
  /** Completed nonblocking requests: [id, errorOrNull, ...]. */
  drain(): unknown[];
  /** undefined while in flight, else null or the MPIError; never blocks. */
  test(id: number): Error | null | undefined;
  /** Blocks until done: null or the MPIError. */
  wait(id: number): Error | null;
  /** Blocks until one is done; returns its index. */
  waitAny(ids: number[]): number;
  /** A new round of a persistent request: its request id. */
  start(template: number): number;
  freeTemplate(template: number): void;
  /**
   * Runs the persistent request's template whose id is in the call block's
   * TEMPLATE slot (lib/block.ts) as a blocking call: undefined, or false
   * when the template is gone. (No boolean when it ran: a returned value
   * costs a few nanoseconds.)
   */
  runTemplate(): undefined | false;
  /** Wakes lane threads holding requests not yet started. */
  kick(): void;

  /**
   * out = a op b over `count` items; `code` is basic type | op id << 8, or -1
   * for the user op `user`.
   */
  reduceLocals(a: View, b: View, out: View, count: number, code: number, user?: UserOpSpec): void;
  /** out = a op b over `count` items of TypedArrays, a predefined op (`code` as above). */
  reduceLocal(a: View, b: View, out: View, count: number, code: number): void;
  /** io = a op io: the same with out = b, one view less to unwrap. */
  reduceLocal(a: View, io: View, count: number, code: number): void;
  /** How many bytes more than `bytes` allocMem's ArrayBuffer needs; 0 if too many (native/napi/memory_binding.cc). */
  memSlack(bytes: number): number;
  /** Where in `ab` (memSlack larger than `bytes`) allocMem's buffer starts; advises its pages. */
  placeMem(ab: ArrayBuffer, bytes: number): number;
  /** reduceLocal again on the last call's views, count and code from the slots (lib/local.ts). */
  reduceLast(): void;
  /** The 6 doubles lib/local.ts and reduceLast share (one buffer per environment). */
  localSlots(): ArrayBuffer;

  // datatypes
  /** Registers a committed datatype's description (lib/datatype.ts `serialize`); returns its handle. */
  typeCommit(description: Float64Array): number;
  /** Drops a handle; an operation already holding the description finishes with it. */
  typeRelease(handle: number): void;
  /** The description tree as text (tests, debugging). */
  typeDescribe(handle: number): string;
  /**
   * Packs `count` items whose first origin is at byte `srcOrigin` of `src`
   * into `dst` from byte `dstOffset` on; returns the bytes written (count × size).
   */
  typePack(handle: number, count: number, src: View, srcOrigin: number, dst: View, dstOffset: number): number;
  /** The reverse of typePack: reads the stream from byte `srcOffset` of `src`. */
  typeUnpack(handle: number, count: number, src: View, srcOffset: number, dst: View, dstOrigin: number): number;

  // The system MPI backend (native/napi/mpi_binding.cc). Handles are the
  // addon's small integers: communicators 0 (world) and 1 (self) on; basic
  // datatypes are BasicType numbers, derived ones from 64; predefined ops
  // are Op ids, user ops from 64.
  /** Opens the first of `candidates` that is an MPI library, or says why each was passed over. */
  mpiOpen(candidates: string[]): { path: string; abi: string } | { tried: string[] };
  mpiLibraryVersion(): string;
  mpiProcessorName(): string;
  /** MPI_Init_thread (threadLevel 0: SINGLE, 1: FUNNELED): [rank, size] in COMM_WORLD. */
  mpiInit(threadLevel: number): [rank: number, size: number];
  /** MPI_Query_thread: the thread level the library provides. */
  mpiThreadLevel(): number;
  mpiFinalize(): void;
  mpiAbort(code: number): void;
  /** [rank, size, remoteSize]; remoteSize -1 for an intracommunicator. */
  mpiCommInfo(comm: number): [rank: number, size: number, remoteSize: number];
  mpiCommDup(comm: number): number;
  /** -1 where the rank gets MPI_COMM_NULL (color UNDEFINED). */
  mpiCommSplit(comm: number, color: number, key: number): number;
  mpiCommSplitShared(comm: number, undefined: boolean, key: number): number;
  /** `peer` -1 where it does not matter (not the local leader). */
  mpiIntercommCreate(local: number, localLeader: number, peer: number, remoteLeader: number, tag: number): number;
  mpiIntercommMerge(comm: number, high: boolean): number;
  mpiCommFree(comm: number): void;
  /** COMM_WORLD ranks of the local (or remote) group. */
  mpiWorldRanks(comm: number, remote: boolean): Int32Array;
  /** A committed MPI datatype with the layout of a description (lib/datatype.ts layoutWords()). */
  mpiTypeCreate(description: Float64Array): number;
  /** An item of `bytes` bytes with no structure (user ops reduce these). */
  mpiOpaqueType(bytes: number): number;
  mpiTypeFree(type: number): void;
  /** MPI_Op_create calling `spec.fn` on items of `spec.datatype`. */
  mpiOpCreate(spec: UserOpSpec, commute: boolean): number;
  mpiOpFree(op: number): void;
  /** Where mpiColl reads its numeric arguments (lib/coll/mpi.ts). */
  mpiSetCallBlock(block: Int32Array): void;
  /** The collective the call block describes: undefined (blocking), a request id, or a template id. */
  mpiColl(send: View | null, recv: View | null): number | undefined;
  /** After a blocking collective with user op `op`: what its function threw here (read once), or undefined. */
  mpiUserOpFailure(op: number): { message: string; error: unknown } | undefined;
  /** Starts a round of a persistent request; it completes under the template's id. */
  mpiStart(template: number): void;
  /** runTemplate's form for the system MPI: the same call block slots. */
  mpiRunTemplate(): undefined | false;
  mpiFreeTemplate(template: number): void;
  // Point-to-point (lib/p2p/mpi.ts): the first `bytes` bytes of a view;
  // ranks of the communicator (its remote group's on an intercommunicator),
  // source ANY_SOURCE and tag ANY_TAG as -1; `status` a Float64Array(4)
  // filled with [source, tag, byteLength, message] when a message matches.
  // The addon keeps a nonblocking call's view and status until it completes.
  // A blocking send's and receive's numbers are in the call block (above):
  // [0] the communicator, [1] the byte count, [2] dest or source, [3] tag;
  // a receive's status at [4..7].
  mpiSend(view: View): void;
  /** A request id of the mpi backend's requests. */
  mpiIsend(comm: number, view: View, bytes: number, dest: number, tag: number): number;
  /** A longer message fills status and the view's `bytes`, then throws ERR_TRUNCATE. */
  mpiRecv(view: View): void;
  /** A request id; a longer message fails it with ERR_TRUNCATE. */
  mpiIrecv(comm: number, view: View, bytes: number, source: number, tag: number, status: Float64Array): number;
  mpiProbe(comm: number, source: number, tag: number, status: Float64Array): void;
  mpiIprobe(comm: number, source: number, tag: number, status: Float64Array): boolean;
  /** status[3] is the matched message's handle for mpiMrecv. */
  mpiMprobe(comm: number, source: number, tag: number, status: Float64Array): void;
  /** A request id, tried at every poll until a message matches; status[3] then its handle. */
  mpiImprobe(comm: number, source: number, tag: number, status: Float64Array): number;
  /** Receives a matched message once; status[3] is 0 after. */
  mpiMrecv(message: number, view: View, bytes: number, status: Float64Array): void;
  /** The library's MPI_TAG_UB (after mpiInit). */
  mpiTagUb(): number;
  mpiTest(id: number): Error | null | undefined;
  mpiWait(id: number): Error | null;
  mpiWaitAny(ids: number[]): number;
  /** Completions since the last poll: [id, errorOrNull, ...]. */
  mpiPoll(): unknown[];
  /** Requests active in the library. */
  mpiActive(): number;

  segmentCreate(nranks: number): { handle: number; fd: number; name: string; bytes: number };
  /** Closes the original descriptor once the launcher holds its duplicates. */
  segmentCloseFd(handle: number): void;
  /** status: 1 + exit code, or -signal number. */
  segmentExited(handle: number, rank: number, status: number, failed: boolean): void;
  /** Mark the job failed (timeout, signal) so waiting ranks stop. */
  segmentFail(handle: number): void;
  /** A close-on-exec duplicate of the segment descriptor, for a worker-thread rank. */
  segmentDupFd(handle: number): number;
  segmentClose(handle: number): void;
  /** Whether the job was marked failed, and by which rank (-1 when not by a rank). */
  segmentState(handle: number): [failed: boolean, failedRank: number];
}

/** The package root: dist/ and prebuilds/ sit side by side under it. */
export const packageRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

function load(): NativeAddon {
  const require = createRequire(import.meta.url);
  // A specific build (e.g. the sanitizer build in build-asan/) for testing.
  const override = process.env.NODEMPI_ADDON;
  if (override) return require(override) as NativeAddon;
  try {
    // node-gyp-build has no types; it looks in build/Release, then prebuilds/.
    const nodeGypBuild = require('node-gyp-build') as (dir: string) => NativeAddon;
    return nodeGypBuild(packageRoot);
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    throw new Error(
      `nodempi: could not load the native addon from ${packageRoot} ` +
        `(looked in build/Release and prebuilds/${process.platform}-${process.arch}): ${detail}. ` +
        'Reinstall the package, or run `npm run build` in a source checkout.',
      { cause: err },
    );
  }
}

// A copy with the same functions: the addon's exports object is built one
// property at a time and V8 keeps it in dictionary mode, which turns every
// `native.x` in the call paths into a hash lookup, a visible part of a
// small call (bench/README.md, "Measurements behind the code"); a spread
// copy has fast properties.
export const native: NativeAddon = { ...load() };
