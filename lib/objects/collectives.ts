/**
 * Object collectives: plain JavaScript values between ranks, by `node:v8`
 * serialization (structured clone), as mpi4py's lowercase methods do with
 * pickle. Each is written once, as a generator of communication steps over
 * the communicator's own byte collectives (sizes first, then the bytes),
 * and run either blocking or with each step's nonblocking form awaited.
 *
 * A value that cannot be serialized never stops the others half way: its
 * rank sends the size -1 and no bytes, every step still runs (with nothing
 * for that rank), and then the rank throws ERR_ARG naming the value's path
 * while every rank that missed its value throws ERR_ARG naming the rank.
 */
import v8 from 'node:v8';

import type { Comm, Intercomm } from '../comm.js';
import { checkRoot, interRoot } from '../coll/collectives.js';
import { describe, fail, MPIError, retitle } from '../errors.js';
import type { Request } from '../request.js';
import { combiner, fold, type Combine } from './combine.js';
import { serialize, type Packed } from './serialize.js';

/** One step: the same byte collective, blocking or nonblocking. */
interface Step {
  now(): void;
  later(): Request;
}
type Steps<T> = Generator<Step, T, undefined>;

const step = (now: () => void, later: () => Request): Step => ({ now, later });

/** @internal Runs `steps` blocking; errors name `call`. */
export function blocking<T>(call: string, steps: Steps<T>): T {
  try {
    for (let s = steps.next(); ; s = steps.next()) {
      if (s.done) return s.value;
      s.value.now();
    }
  } catch (err) {
    throw retitle(err, call);
  }
}

/** @internal Runs `steps` with the event loop free between them; errors name `call`. */
export async function nonblocking<T>(call: string, steps: Steps<T>): Promise<T> {
  try {
    for (let s = steps.next(); ; s = steps.next()) {
      if (s.done) return s.value;
      await s.value.later();
    }
  } catch (err) {
    throw retitle(err, call);
  }
}

// Node's deserializer reads a typed array, Buffer or DataView as a view of
// the bytes it reads: received values keep their receive buffer, and the
// values of one gather share one. Copying each out would cost more than
// the transfer: a fresh buffer's first touch is about 0.5 ms a MiB here
// (bench/OBJECTS.md).
function unpack(bytes: Uint8Array): unknown {
  return v8.deserialize(bytes);
}

// ---- Send buffers ---------------------------------------------------------------------

// Values packed end to end go out of buffers that are reused: a fresh
// buffer's first touch costs more than moving it (bench/OBJECTS.md). A few
// are kept, none above 64 MiB.
const pool: ArrayBuffer[] = [];
const POOL_SIZE = 4, POOL_MAX = 64 << 20;

function scratch(n: number): Uint8Array {
  const i = pool.findIndex((b) => b.byteLength >= n);
  const buf = i >= 0 ? pool.splice(i, 1)[0]! : new ArrayBuffer(n);
  return new Uint8Array(buf, 0, n);
}

// `v` (from scratch()) is free again: its transfer is over.
function release(v: Uint8Array): void {
  const buf = v.buffer as ArrayBuffer;
  if (buf.byteLength > POOL_MAX || buf.byteLength === 0) return;
  if (pool.length === POOL_SIZE) {
    // Keep the larger ones.
    let least = 0;
    for (let i = 1; i < pool.length; i++) if (pool[i]!.byteLength < pool[least]!.byteLength) least = i;
    if (pool[least]!.byteLength >= buf.byteLength) return;
    pool.splice(least, 1);
  }
  pool.push(buf);
}

// Nothing to move (a fresh one each time: a pending request holds its buffers).
const empty = (): Uint8Array => new Uint8Array(0);

// The size a rank announces: its byte count, or -1 when it has no bytes.
const sizeOf = (p: Packed): number => (p instanceof MPIError ? -1 : p.byteLength);

// Bytes with the vector counts and displacements of their parts.
interface Layout {
  all: Uint8Array;
  counts: number[];
  displs: number[];
}

// Room for parts of `counts` bytes, end to end, in a buffer from `alloc`.
function place(counts: number[], alloc: (n: number) => Uint8Array): Layout {
  const displs: number[] = [];
  let total = 0;
  for (const c of counts) {
    displs.push(total);
    total += c;
  }
  return { all: alloc(total), counts, displs };
}

// Packed values end to end (0 bytes for one that failed), in a buffer from
// scratch(): release() it once sent.
function concat(parts: readonly Packed[]): Layout {
  const l = place(parts.map((p) => Math.max(sizeOf(p), 0)), scratch);
  parts.forEach((p, i) => {
    if (!(p instanceof MPIError)) l.all.set(p, l.displs[i]);
  });
  return l;
}

// Room for the values of received sizes (a -1 brings nothing), fresh: the
// values keep it.
const layout = (sizes: Float64Array): Layout => place(Array.from(sizes, (s) => Math.max(s, 0)), (n) => new Uint8Array(n));

/**
 * The values received, in order: after the steps ran to the end, this
 * rank's own failure first, then the first peer whose value is missing
 * (part i comes from rank i of the sending group: the remote one on an
 * intercommunicator).
 */
function received<T>(call: string, own: MPIError | null, sizes: Float64Array, l: Layout): T[] {
  if (own) throw own;
  const missing = sizes.findIndex((s) => s < 0);
  if (missing >= 0) fail('ERR_ARG', call, `rank ${missing}'s value could not be sent (its own error says why)`);
  return l.counts.map((c, i) => unpack(l.all.subarray(l.displs[i], l.displs[i]! + c)) as T);
}

// ---- Roles -----------------------------------------------------------------------

// A rooted call's part for this rank: the root, a rank that receives from
// it (or sends to it), or, in the root's group of an intercommunicator,
// neither.
type Role = 'root' | 'leaf' | 'none';

function roleOf(comm: Comm, call: string, root: unknown): Role {
  if (!comm.isInter) return checkRoot(comm, call, root) === comm.rank ? 'root' : 'leaf';
  const { role } = interRoot(comm as Intercomm, call, root);
  return role === 'remote' ? 'leaf' : role;
}

// How many values a rank receives in an all-to-all pattern: the other
// group's on an intercommunicator.
const peers = (comm: Comm): number => (comm.isInter ? (comm as Intercomm).remoteSize : comm.size);

// `values` with one per rank, or why not (sent as a failure, as a value
// that cannot be serialized is).
function valuesArg(call: string, values: unknown, n: number): unknown[] | MPIError {
  if (!Array.isArray(values)) return new MPIError('ERR_ARG', `${call}: values must be an array of ${n} values, got ${describe(values)}`);
  if (values.length !== n) return new MPIError('ERR_ARG', `${call}: values must hold one value per rank (${n}), got ${values.length}`);
  return values;
}

// Every value of `values` packed, or, if one cannot be, that failure in
// every place: a rank sends all its values or none.
function packAll(call: string, values: unknown, n: number): Packed[] {
  const list = valuesArg(call, values, n);
  const parts = list instanceof MPIError ? [list] : list.map((v, i) => serialize(v, call, `values[${i}]`));
  const failed = parts.find((p) => p instanceof MPIError);
  return failed ? new Array<Packed>(n).fill(failed) : parts;
}

// ---- The collectives -----------------------------------------------------------

// Every rank takes part in every step, with nothing to move where it has
// nothing (a failed value, the root's group of an intercommunicator apart
// from the root): a rank that skipped one would desynchronise the rest.

/** @internal */
export function* bcastSteps<T>(comm: Comm, call: string, value: T, root: number): Steps<T> {
  const role = roleOf(comm, call, root);
  const size = new Float64Array(1);
  const data: Packed = role === 'root' ? serialize(value, call, 'value') : empty();
  size[0] = sizeOf(data);
  yield step(() => comm.bcast(size, root), () => comm.ibcast(size, root));
  const bytes = role === 'leaf' ? new Uint8Array(Math.max(size[0]!, 0)) : data instanceof MPIError ? empty() : data;
  yield step(() => comm.bcast(bytes, root), () => comm.ibcast(bytes, root));
  if (data instanceof MPIError) throw data;
  if (role !== 'leaf') return value;
  if (size[0]! < 0) fail('ERR_ARG', call, `the root's value could not be sent (the root's own error says why)`);
  return unpack(bytes) as T;
}

/** @internal */
export function* gatherSteps<T>(comm: Comm, call: string, value: T, root: number): Steps<T[] | null> {
  const role = roleOf(comm, call, root);
  // On an intercommunicator only the other group sends.
  const mine: Packed = comm.isInter && role !== 'leaf' ? empty() : serialize(value, call, 'value');
  const one = Float64Array.of(sizeOf(mine));
  const sizes = role === 'root' ? new Float64Array(peers(comm)) : null;
  yield step(() => comm.gather(one, sizes, root), () => comm.igather(one, sizes, root));
  const send = mine instanceof MPIError ? empty() : mine;
  const l = sizes ? layout(sizes) : null;
  const spec: [Uint8Array, number[], number[]] | null = l ? [l.all, l.counts, l.displs] : null;
  yield step(() => comm.gatherv(send, spec, root), () => comm.igatherv(send, spec, root));
  if (mine instanceof MPIError) throw mine;
  return l ? received<T>(call, null, sizes!, l) : null;
}

/** @internal */
export function* scatterSteps<T>(comm: Comm, call: string, values: readonly T[] | null, root: number): Steps<T> {
  const role = roleOf(comm, call, root);
  const parts = role === 'root' ? packAll(call, values, peers(comm)) : [];
  const own = parts[0] instanceof MPIError ? parts[0] : null;
  const sizes = role === 'root' ? Float64Array.from(parts, sizeOf) : null, one = new Float64Array(1);
  yield step(() => comm.scatter(sizes, one, root), () => comm.iscatter(sizes, one, root));
  // On an intercommunicator only the other group receives.
  const receives = comm.isInter ? role === 'leaf' : true;
  const mine = receives ? new Uint8Array(Math.max(one[0]!, 0)) : empty();
  const c = role === 'root' ? concat(parts) : null;
  const spec: [Uint8Array, number[], number[]] | null = c ? [c.all, c.counts, c.displs] : null;
  yield step(() => comm.scatterv(spec, mine, root), () => comm.iscatterv(spec, mine, root));
  if (c) release(c.all);
  if (own) throw own;
  if (!receives) return undefined as T;
  if (one[0]! < 0) fail('ERR_ARG', call, `the values at the root could not be sent (the root's own error says why)`);
  return unpack(mine) as T;
}

/** @internal */
export function* allgatherSteps<T>(comm: Comm, call: string, value: T): Steps<T[]> {
  const mine = serialize(value, call, 'value');
  const one = Float64Array.of(sizeOf(mine)), sizes = new Float64Array(peers(comm));
  yield step(() => comm.allgather(one, sizes), () => comm.iallgather(one, sizes));
  const l = layout(sizes);
  const send = mine instanceof MPIError ? empty() : mine;
  const spec: [Uint8Array, number[], number[]] = [l.all, l.counts, l.displs];
  yield step(() => comm.allgatherv(send, spec), () => comm.iallgatherv(send, spec));
  return received<T>(call, mine instanceof MPIError ? mine : null, sizes, l);
}

/** @internal */
export function* alltoallSteps<T>(comm: Comm, call: string, values: readonly T[]): Steps<T[]> {
  const n = peers(comm);
  const parts = packAll(call, values, n);
  const own = parts[0] instanceof MPIError ? parts[0] : null;
  const out = Float64Array.from(parts, sizeOf), sizes = new Float64Array(n);
  yield step(() => comm.alltoall(out, sizes), () => comm.ialltoall(out, sizes));
  const c = concat(parts), l = layout(sizes);
  const send: [Uint8Array, number[], number[]] = [c.all, c.counts, c.displs], recv: [Uint8Array, number[], number[]] = [l.all, l.counts, l.displs];
  yield step(() => comm.alltoallv(send, recv), () => comm.ialltoallv(send, recv));
  release(c.all);
  return received<T>(call, own, sizes, l);
}

/** @internal */
export function* reduceSteps<T>(comm: Comm, call: string, value: T, op: unknown, root: number): Steps<T | null> {
  const f = combiner<T>(op, call);
  const all = yield* gatherSteps(comm, call, value, root);
  return all === null ? null : fold(all, all.length, f, op);
}

/** @internal */
export function* allreduceSteps<T>(comm: Comm, call: string, value: T, op: unknown): Steps<T> {
  const f = combiner<T>(op, call);
  // Every rank folds the same values in the same order, so that every rank
  // gets the same result, or the same error.
  const all = yield* allgatherSteps(comm, call, value);
  return fold(all, all.length, f, op);
}

/** @internal */
export function* scanSteps<T>(comm: Comm, call: string, value: T, op: unknown): Steps<T> {
  const { all, f } = yield* prefixSteps(comm, call, value, op);
  return fold(all, comm.rank + 1, f, op);
}

/** @internal */
export function* exscanSteps<T>(comm: Comm, call: string, value: T, op: unknown): Steps<T | undefined> {
  const { all, f } = yield* prefixSteps(comm, call, value, op);
  return comm.rank === 0 ? undefined : fold(all, comm.rank, f, op);
}

// scan's and exscan's values, on every rank.
function* prefixSteps<T>(comm: Comm, call: string, value: T, op: unknown): Steps<{ all: T[]; f: Combine<T> }> {
  if (comm.isInter) fail('ERR_COMM', call, 'scan and exscan are not defined on intercommunicators');
  const f = combiner<T>(op, call);
  const all = yield* allgatherSteps(comm, call, value);
  // Under a predefined op, all of them, not only this rank's prefix: what
  // it cannot combine throws on every rank alike.
  if (typeof op !== 'function') fold(all, all.length, f, op);
  return { all, f };
}
