/**
 * Staging: derived datatypes in the shared-memory backend's collectives.
 *
 * bcast and allgather take a derived type as it is (fuseMove: the core packs
 * and unpacks it chunk by chunk in its slots). The other native collectives
 * move contiguous bytes and reduce dense arrays of one basic type. There, a
 * message whose datatype is not plain bytes travels as its packed stream
 * (count × size bytes, type-map order, so that only type signatures need
 * match between ranks); a reduction on a derived type runs on its elements
 * in kernel layout. The collective records what to do around the native
 * call: pack the send side before it (again at every start of a persistent
 * request), unpack the receive side after it. Comm._run takes the record
 * and runs it (lib/comm.ts).
 */
import { Datatype } from '../datatype.js';
import { fail } from '../errors.js';
import { resolved, type Resolved, type ResolvedV } from '../message.js';
import { native } from '../native.js';
import { fromKernel, kernelType, toKernel } from '../pack.js';

/** Work around one collective call. */
export interface Staging {
  before: (() => void)[];
  after: (() => void)[];
  /** Wire buffers borrowed from the pool, for releaseStaging(). */
  lent: Uint8Array[];
}

let current: Staging | null = null;
let reuse = false;

function staging(): Staging {
  return (current ??= { before: [], after: [], lent: [] });
}

/**
 * @internal Starts recording a collective's staging. `pooled`: the call
 * completes before the caller regains control (blocking), so its wire
 * buffers may come from the pool and go back with releaseStaging(). A
 * nonblocking or persistent request keeps its wire buffers until it
 * completes or is freed, so it gets buffers of its own.
 */
export function beginStaging(pooled: boolean): void {
  current = null;
  reuse = pooled;
}

/** @internal Takes what the collective just resolved recorded (null for plain buffers). */
export function takeStaging(): Staging | null {
  const s = current;
  current = null;
  reuse = false;
  return s;
}

// Wire buffers of blocking calls, reused call after call. A fresh buffer
// costs a page fault per 4 KiB page at its first touch, which for 1 MiB
// costs many times the packing itself (bench/README.md, "Measurements
// behind the code"). Buffers stay in
// the pool while unused; a call borrows them (so a collective started from
// inside another one, by a user op, never shares its wire), and the pool
// keeps at most kPoolBytes, dropping the smallest first.
const pool: Uint8Array[] = [];
const kPoolBytes = 64 * 1024 * 1024;

function wireBuffer(bytes: number): Uint8Array {
  if (!reuse || bytes === 0) return new Uint8Array(bytes);
  let best = -1;
  for (let i = 0; i < pool.length; i++) {
    if (pool[i]!.length >= bytes && (best < 0 || pool[i]!.length < pool[best]!.length)) best = i;
  }
  const buf = best >= 0 ? pool.splice(best, 1)[0]! : new Uint8Array(bytes);
  staging().lent.push(buf);
  return buf.length === bytes ? buf : buf.subarray(0, bytes);
}

/** @internal Returns a finished blocking call's wire buffers to the pool. */
export function releaseStaging(st: Staging | null): void {
  if (!st) return;
  pool.push(...st.lent);
  st.lent.length = 0;
  pool.sort((a, b) => b.length - a.length);
  let total = 0;
  let keep = 0;
  while (keep < pool.length && total + pool[keep]!.length <= kPoolBytes) total += pool[keep++]!.length;
  pool.length = keep;
}

/**
 * @internal Runs `fill` now and again before every start of the persistent
 * request the collective makes (a backend's copy of a send side).
 */
export function refreshEachStart(fill: () => void): void {
  fill();
  staging().before.push(fill);
}

/** How a buffer takes part: read (send), written (receive), or both (bcast, IN_PLACE). */
export type Side = 'send' | 'recv' | 'both';

/** @internal `length` bytes of `view`'s memory from `offset`. */
export function bytesOf(view: ArrayBufferView, offset: number, length: number): Uint8Array {
  return new Uint8Array(view.buffer, view.byteOffset + offset, length);
}

/**
 * A message as a collective that packs and unpacks chunk by chunk takes it
 * (bcast, allgather): the user's own buffer, with the datatype handle and
 * item count when it is not dense (type 0: plain bytes). `bytes` is the
 * stream per block: count × size, or count × extent for dense types.
 */
export interface Fused {
  readonly view: ArrayBufferView;
  readonly bytes: number;
  readonly type: number;
  /** Items in the whole buffer: count × blocks. */
  readonly count: number;
}

/** @internal The fused form of a resolved message: no wire buffer, no staging. */
export function fuseMove(m: Resolved, blocks = 1): Fused {
  const t = m.type;
  if (t.contiguous) return { view: m.view, bytes: m.bytes, type: 0, count: 0 };
  return { view: m.view, bytes: m.count * t.size, type: t.handle, count: m.count * blocks };
}

/** @internal The wire form of a resolved message for data movement. */
export function stageMove(m: Resolved, side: Side, blocks = 1): Resolved {
  const t = m.type;
  // Dense types move as their memory (one copy, no packing). Everything
  // else, the pair types with their padding included, moves as its packed
  // stream: only signatures must match between ranks, and a receiver's
  // bytes outside its type map (holes, padding) stay as they were.
  if (t.contiguous) return m;
  const items = m.count * blocks;
  const wire = wireBuffer(items * t.size);
  const st = staging();
  if (side !== 'recv' && wire.length) {
    const pack = () => native.typePack(t.handle, items, m.view, 0, wire, 0);
    pack();
    st.before.push(pack);
  }
  if (side !== 'send' && wire.length) st.after.push(() => native.typeUnpack(t.handle, items, wire, 0, m.view, 0));
  return resolved(wire, m.count, t, m.count * t.size);
}

/** @internal The wire form of a v- or w-spec: blocks packed one after another. */
export function stageMoveV(v: ResolvedV, side: Side): ResolvedV {
  if (v.contiguous) return v;
  // The pack and unpack below may run later (nonblocking, persistent): they
  // keep copies of the caller's counts and of argument-list slots.
  v = { ...v, counts: Array.from(v.counts), displs: v.displs.slice(0, v.counts.length) };
  const n = v.counts.length;
  const bytes = new Float64Array(n), displs = new Float64Array(n);
  let at = 0;
  for (let r = 0; r < n; r++) {
    const t = v.types[r]!;
    displs[r] = at;
    bytes[r] = v.counts[r]! * t.size;
    at += bytes[r]!;
  }
  const wire = wireBuffer(at);
  const each = (f: (r: number, t: Datatype) => void) => () => {
    for (let r = 0; r < n; r++) if (bytes[r]) f(r, v.types[r]!);
  };
  const st = staging();
  if (side !== 'recv') {
    const pack = each((r, t) => {
      // The block's origin is a position in the whole view: a type may
      // have data before its origin (negative lb).
      if (t.contiguous) wire.set(bytesOf(v.view, v.displs[r]!, bytes[r]!), displs[r]!);
      else native.typePack(t.handle, v.counts[r]!, v.view, v.displs[r]!, wire, displs[r]!);
    });
    pack();
    st.before.push(pack);
  }
  if (side !== 'send') {
    st.after.push(each((r, t) => {
      if (t.contiguous) bytesOf(v.view, v.displs[r]!, bytes[r]!).set(wire.subarray(displs[r]!, displs[r]! + bytes[r]!));
      else native.typeUnpack(t.handle, v.counts[r]!, wire, displs[r]!, v.view, v.displs[r]!);
    }));
  }
  return { view: wire, counts: v.counts, types: v.types, bytes, displs, contiguous: false };
}

/** A reduction operand as the kernels see it. */
export interface Reducible {
  view: ArrayBufferView;
  /** Kernel items: count × elements for a derived type. */
  count: number;
  /** Kernel type (native BasicType). */
  basic: number;
}

/**
 * @internal The kernel form of a reduction operand: predefined types as
 * they are; a derived type of one basic type as its elements; user ops keep
 * the items as laid out in memory.
 */
export function stageReduce(m: Resolved, side: Side, userOp: boolean): Reducible {
  const t = m.type;
  if (userOp) return t.contiguous ? { view: m.view, count: m.count, basic: t.basic } : stageItems(m, side);
  if (t.predefined) return { view: m.view, count: m.count, basic: t.basic };
  const k = kernelType(t);
  if (!k) fail('ERR_OP', 'reduction', `datatype ${t.name} mixes basic types; predefined ops need one basic type`);
  const n = m.count * t.elements;
  const wire = new Uint8Array(n * k.extent);
  const st = staging();
  if (side !== 'recv') {
    const pack = () => wire.set(toKernel(m.view, m.count, t));
    pack();
    st.before.push(pack);
  }
  if (side !== 'send') st.after.push(() => fromKernel(wire, m.view, m.count, t));
  return { view: wire, count: n, basic: k.basic };
}

/**
 * A user op on a type with holes or padding reduces whole items as laid out
 * in memory, in a scratch copy of the operand: item i at byte i × extent
 * from the origin. Only the type map's bytes go in and come back out, so
 * the holes of a receive buffer are never written.
 */
function stageItems(m: Resolved, side: Side): Reducible {
  const t = m.type;
  const bytes = m.count * t.extent;
  const [lo, hi] = t.span(m.count);
  const base = Math.min(0, lo);
  const scratch = new Uint8Array(Math.max(bytes, hi) - base);
  const wire = new Uint8Array(m.count * t.size);
  const st = staging();
  if (side !== 'recv' && wire.length) {
    const load = () => {
      native.typePack(t.handle, m.count, m.view, 0, wire, 0);
      native.typeUnpack(t.handle, m.count, wire, 0, scratch, -base);
    };
    load();
    st.before.push(load);
  }
  if (side !== 'send' && wire.length) {
    st.after.push(() => {
      native.typePack(t.handle, m.count, scratch, -base, wire, 0);
      native.typeUnpack(t.handle, m.count, wire, 0, m.view, 0);
    });
  }
  return { view: scratch.subarray(-base, -base + bytes), count: m.count, basic: t.basic };
}
