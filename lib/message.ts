/**
 * Message specs: `buf`, `[buf, datatype]` or `[buf, count, datatype]`,
 * resolved to a view, a count and a datatype, with every check done before
 * anything is sent.
 */
import { argList } from './args.js';
import { IN_PLACE } from './constants.js';
import { checkDatatype, Datatype } from './datatype.js';
import { describe, fail } from './errors.js';
import { native } from './native.js';
import { fromKernel, kernelType, toKernel } from './pack.js';

/** Anything that holds bytes. */
export type Buf = ArrayBufferView | ArrayBuffer | SharedArrayBuffer;
/** A buffer with an optional count and datatype. */
export type Msg = Buf | [Buf, Datatype] | [Buf, number, Datatype];

/** A message spec after checking. */
export interface Resolved {
  /** The bytes, as a view the addon accepts. */
  readonly view: ArrayBufferView;
  /** Items (per block, for block specs). */
  readonly count: number;
  readonly type: Datatype;
  /** count × extent: the bytes one message (or block) occupies. */
  readonly bytes: number;
}

// The datatype a bare buffer implies (API.md, "Buffers: message specs").
const inferred = new Map<unknown, Datatype>([
  [Int8Array, Datatype.INT8_T],
  [Uint8Array, Datatype.BYTE],
  [Uint8ClampedArray, Datatype.UNSIGNED_CHAR],
  [Int16Array, Datatype.INT16_T],
  [Uint16Array, Datatype.UINT16_T],
  [Int32Array, Datatype.INT32_T],
  [Uint32Array, Datatype.UINT32_T],
  [Float32Array, Datatype.FLOAT],
  [Float64Array, Datatype.DOUBLE],
  [BigInt64Array, Datatype.INT64_T],
  [BigUint64Array, Datatype.UINT64_T],
  [DataView, Datatype.BYTE],
]);

// The last kind looked up: a call site passes the same kind call after
// call, and a compare is much cheaper than the Map lookup.
let lastKind: unknown = Float64Array;
let lastType: Datatype = Datatype.DOUBLE;

/** @internal The datatype a TypedArray of a built-in kind implies, if it is one (no subclasses). */
export function bareType(view: ArrayBufferView): Datatype | undefined {
  const kind = view.constructor;
  if (kind === lastKind) return lastType;
  const type = inferred.get(kind);
  if (type) {
    lastKind = kind;
    lastType = type;
  }
  return type;
}

function inferType(view: ArrayBufferView): Datatype {
  const direct = bareType(view);
  if (direct) return direct;
  let proto: unknown = Object.getPrototypeOf(view);
  // Subclasses such as Buffer infer like their base class.
  while (proto) {
    const dt = inferred.get((proto as { constructor: unknown }).constructor);
    if (dt) return dt;
    proto = Object.getPrototypeOf(proto);
  }
  return Datatype.BYTE;
}

function isBuffer(b: unknown): b is Buf {
  return ArrayBuffer.isView(b) || b instanceof ArrayBuffer ||
    (typeof SharedArrayBuffer !== 'undefined' && b instanceof SharedArrayBuffer);
}

function asView(call: string, what: string, b: unknown): ArrayBufferView {
  if (ArrayBuffer.isView(b)) return b;
  if (isBuffer(b)) return new Uint8Array(b as ArrayBuffer);
  if (Array.isArray(b)) {
    fail('ERR_BUFFER', call, `${what} must be a TypedArray, DataView, Buffer or ArrayBuffer, got a plain array (wrap numbers in e.g. Float64Array.from(array))`);
  }
  fail('ERR_BUFFER', call, `${what} must be a TypedArray, DataView, Buffer or ArrayBuffer, got ${describe(b)}`);
}

function checkCount(call: string, what: string, count: unknown): number {
  if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 0) {
    fail('ERR_COUNT', call, `${what} count must be a non-negative integer, got ${describe(count)}`);
  }
  return count;
}

interface Parsed {
  view: ArrayBufferView;
  count: number | undefined;
  type: Datatype;
}

function parse(call: string, what: string, spec: unknown): Parsed {
  if (spec === IN_PLACE) fail('ERR_ARG', call, `IN_PLACE is not allowed for ${what} here`);
  if (Array.isArray(spec) && spec.length > 0 && isBuffer(spec[0])) {
    if (spec.length === 2) {
      return { view: asView(call, what, spec[0]), count: undefined, type: checkDatatype(spec[1], call, what, ' datatype') };
    }
    if (spec.length === 3) {
      return {
        view: asView(call, what, spec[0]),
        count: checkCount(call, what, spec[1]),
        type: checkDatatype(spec[2], call, what, ' datatype'),
      };
    }
    fail('ERR_ARG', call, `${what} must be buf, [buf, datatype] or [buf, count, datatype], got an array of length ${spec.length}`);
  }
  const view = asView(call, what, spec);
  return { view, count: undefined, type: inferType(view) };
}

function needBytes(call: string, what: string, view: ArrayBufferView, bytes: number, count: number, type: Datatype): void {
  if (!type.predefined) {
    // A derived type touches its span, which holes, lb and extent make
    // differ from count × extent.
    const [lo, hi] = type.span(count);
    if (lo < 0 || hi > view.byteLength) {
      fail('ERR_BUFFER', call, `${count} × ${type.name} touch bytes ${lo} to ${hi} of the ${what}, which holds bytes 0 to ${view.byteLength}`);
    }
    return;
  }
  if (view.byteLength < bytes) {
    fail('ERR_BUFFER', call, `${what} of ${view.byteLength} bytes is too small for ${count} × ${type.name} (${bytes} bytes)`);
  }
}

function wholeCount(call: string, what: string, view: ArrayBufferView, type: Datatype): number {
  if (type.extent <= 0) fail('ERR_COUNT', call, `${what}: datatype ${type.name} has extent ${type.extent}; give an explicit count`);
  const n = view.byteLength / type.extent;
  if (!Number.isInteger(n)) {
    fail('ERR_COUNT', call, `${what} of ${view.byteLength} bytes is not a whole number of ${type.name} (extent ${type.extent})`);
  }
  return n;
}

/**
 * @internal A TypedArray's byte length from the intrinsic getter, which no
 * own property shadows: 0 once its buffer is detached, or shrunk below it.
 */
export const trueBytes = Function.prototype.call.bind(
  Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), 'byteLength')!.get!,
) as (view: ArrayBufferView) => number;

/** @internal A TypedArray's buffer from the intrinsic getter, which no own or subclass property shadows. */
export const trueBuffer = Function.prototype.call.bind(
  Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), 'buffer')!.get!,
) as (view: ArrayBufferView) => ArrayBufferLike;

/**
 * @internal A Resolved. Every one is made here, so that they all share one
 * hidden class: literals at several sites made V8 migrate objects between
 * maps at every call once a few collectives had run.
 */
export function resolved(view: ArrayBufferView, count: number, type: Datatype, bytes: number): Resolved {
  return { view, count, type, bytes };
}

/** @internal `m` with another item count (bytes follow). */
export function withCount(m: Resolved, count: number): Resolved {
  return resolved(m.view, count, m.type, count * m.type.extent);
}

/** Resolves a whole-buffer message spec. */
export function resolve(call: string, what: string, spec: unknown): Resolved {
  if (ArrayBuffer.isView(spec)) {
    // The common bare view, without the general parse: its implied type
    // is predefined, so whole items are all the bounds there are.
    const type = inferType(spec);
    const count = wholeCount(call, what, spec, type);
    return resolved(spec, count, type, count * type.extent);
  }
  const p = parse(call, what, spec);
  const count = p.count ?? wholeCount(call, what, p.view, p.type);
  const bytes = count * p.type.extent;
  needBytes(call, what, p.view, bytes, count, p.type);
  return resolved(p.view, count, p.type, bytes);
}

/**
 * Resolves a spec that holds one block per rank (gather's receive buffer,
 * scatter's send buffer, alltoall): a bare buffer or [buf, datatype] is
 * split evenly into `blocks`; an explicit count is the per-block count.
 */
export function resolveBlocks(call: string, what: string, spec: unknown, blocks: number): Resolved {
  const p = ArrayBuffer.isView(spec) ? { view: spec, count: undefined, type: inferType(spec) } : parse(call, what, spec);
  let count: number;
  if (p.count === undefined) {
    const total = wholeCount(call, what, p.view, p.type);
    if (total % blocks !== 0) {
      fail('ERR_COUNT', call, `${what} holds ${total} × ${p.type.name}, which does not split evenly into ${blocks} blocks`);
    }
    count = total / blocks;
  } else {
    count = p.count;
  }
  const bytes = count * p.type.extent;
  needBytes(call, what, p.view, bytes * blocks, count * blocks, p.type);
  return resolved(p.view, count, p.type, bytes);
}

/** `[buf, counts, displs?, datatype?]`: counts and displacements in items. */
export type VMsg = [Buf, number[], (number[] | null)?, Datatype?];
/** `[buf, counts, byteDispls, datatypes]`: one datatype per rank, displacements in bytes. */
export type WMsg = [Buf, number[], number[], Datatype[]];

/** A v- or w-spec after checking: per-rank byte counts and byte displacements. */
export interface ResolvedV {
  readonly view: ArrayBufferView;
  /** The caller's list, checked but not copied (stageMoveV copies what it keeps). */
  readonly counts: ArrayLike<number>;
  /** Datatype of every block (one for a v-spec). */
  readonly types: readonly Datatype[];
  /** Per rank: count × extent, as the addon takes them. */
  readonly bytes: Float64Array;
  readonly displs: Float64Array;
  /** Every block's datatype moves as its memory (stageMoveV has nothing to do). */
  readonly contiguous: boolean;
}

// `list`, an array or TypedArray of n non-negative integers, checked where
// it is: this runs at every v-collective call, so no copy, and the name
// ("receive spec" + " counts") is put together only for an error.
function intList(call: string, what: string, which: string, list: unknown, n: number, code: 'ERR_COUNT' | 'ERR_ARG'): ArrayLike<number> {
  if (!Array.isArray(list) && !(ArrayBuffer.isView(list) && !(list instanceof DataView))) {
    fail('ERR_ARG', call, `${what} ${which} must be an array of ${n} numbers, got ${describe(list)}`);
  }
  const arr = list as ArrayLike<number>;
  if (arr.length !== n) fail('ERR_ARG', call, `${what} ${which} must have one entry per rank (${n}), got ${arr.length}`);
  for (let r = 0; r < n; r++) {
    const v = arr[r];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
      fail(code, call, `${what} ${which}[${r}] must be a non-negative integer, got ${describe(v)}`);
    }
  }
  return arr;
}

// `n` copies of `type`, shared between calls (never written once made).
let sameTypes: Datatype[] = [];
function typesOf(type: Datatype, n: number): readonly Datatype[] {
  if (sameTypes.length !== n || sameTypes[0] !== type) sameTypes = new Array<Datatype>(n).fill(type);
  return sameTypes;
}

function vParts(call: string, what: string, spec: unknown): unknown[] {
  if (spec === IN_PLACE) fail('ERR_ARG', call, `IN_PLACE is not allowed for ${what} here`);
  if (!Array.isArray(spec) || spec.length < 2 || !isBuffer(spec[0])) {
    fail('ERR_BUFFER', call, `${what} must be [buf, counts, displs?, datatype?], got ${describe(spec)}`);
  }
  return spec;
}

function checkBlocks(call: string, what: string, view: ArrayBufferView, bytes: Float64Array, displs: Float64Array,
  counts: ArrayLike<number>, types: readonly Datatype[]): void {
  for (let r = 0; r < counts.length; r++) {
    const t = types?.[r];
    if (t && !t.predefined) {
      const [lo, hi] = t.span(counts![r]!);
      if (hi > lo && (displs[r]! + lo < 0 || displs[r]! + hi > view.byteLength)) {
        fail('ERR_BUFFER', call, `${what} block ${r} (bytes ${displs[r]! + lo} to ${displs[r]! + hi}) lies outside its ${view.byteLength} bytes`);
      }
      continue;
    }
    if (bytes[r]! > 0 && displs[r]! + bytes[r]! > view.byteLength) {
      fail('ERR_BUFFER', call, `${what} block ${r} (bytes ${displs[r]} to ${displs[r]! + bytes[r]!}) lies outside its ${view.byteLength} bytes`);
    }
  }
}

/**
 * Resolves a v-spec for a communicator of `n` ranks. With `slot`, the byte
 * counts and displacements go to the off-heap argument lists `slot` and
 * `slot + 1` (lib/args.ts), good until the next call fills them; without,
 * to arrays of their own.
 */
export function resolveV(call: string, what: string, spec: unknown, n: number, slot?: number): ResolvedV {
  const parts = vParts(call, what, spec);
  const view = asView(call, what, parts[0]);
  const type = parts[3] === undefined ? inferType(view) : checkDatatype(parts[3], call, what, ' datatype');
  const [bytes, displs] = lists(n, slot);
  if (quickV(view, type, parts[1], parts[2], n, bytes, displs)) {
    return { view, counts: parts[1] as number[], types: typesOf(type, n), bytes, displs, contiguous: type.contiguous };
  }
  const counts = intList(call, what, 'counts', parts[1], n, 'ERR_COUNT');
  if (parts[2] === undefined || parts[2] === null) {
    let at = 0;
    for (let r = 0; r < n; r++) {
      displs[r] = at * type.extent;
      at += counts[r]!;
    }
  } else {
    const d = intList(call, what, 'displs', parts[2], n, 'ERR_ARG');
    for (let r = 0; r < n; r++) displs[r] = d[r]! * type.extent;
  }
  for (let r = 0; r < n; r++) bytes[r] = counts[r]! * type.extent;
  const types = typesOf(type, n);
  checkBlocks(call, what, view, bytes, displs, counts, types);
  return { view, counts, types, bytes, displs, contiguous: type.contiguous };
}

// A count or displacement the one-pass checks take: a number that is an
// integer from 0 to 2^32 - 1 (anything else goes the general way).
function small(x: unknown): x is number {
  return typeof x === 'number' && (x >>> 0) === x;
}

// The common w-spec in one pass, as quickV: plain arrays, predefined dense
// types (committed, never freed), every block inside the buffer.
function quickW(view: ArrayBufferView, counts: unknown, given: unknown, types: unknown, n: number,
  bytes: Float64Array, displs: Float64Array): boolean {
  if (!Array.isArray(counts) || !Array.isArray(given) || !Array.isArray(types)) return false;
  if (counts.length !== n || given.length !== n || types.length !== n) return false;
  const room = view.byteLength;
  for (let r = 0; r < n; r++) {
    const c: unknown = counts[r], d: unknown = given[r], t: unknown = types[r];
    if (!small(c) || !small(d)) return false;
    if (!(t instanceof Datatype) || !t.predefined || !t.contiguous) return false;
    const b = c * t.extent;
    if (b > 0 && d + b > room) return false;
    bytes[r] = b;
    displs[r] = d;
  }
  return true;
}

// The common v-spec in one pass: plain arrays of counts and displacements
// (or none) below 2^32, a predefined type, every block inside the buffer.
// False leaves the lists half filled for the general path, which does every
// check again and names what is wrong.
function quickV(view: ArrayBufferView, type: Datatype, counts: unknown, given: unknown, n: number,
  bytes: Float64Array, displs: Float64Array): boolean {
  if (!type.predefined || !Array.isArray(counts) || counts.length !== n) return false;
  const packed = given === undefined || given === null;
  if (!packed && (!Array.isArray(given) || given.length !== n)) return false;
  const extent = type.extent, room = view.byteLength;
  let at = 0;
  for (let r = 0; r < n; r++) {
    const c: unknown = counts[r];
    const d: unknown = packed ? at : (given as unknown[])[r];
    if (!small(c) || !small(d)) return false;
    if (c > 0 && (d + c) * extent > room) return false;
    bytes[r] = c * extent;
    displs[r] = d * extent;
    at += c;
  }
  return true;
}

function lists(n: number, slot: number | undefined): [Float64Array, Float64Array] {
  if (slot === undefined) return [new Float64Array(n), new Float64Array(n)];
  return [argList(slot, n), argList(slot + 1, n)];
}

/** Resolves a w-spec (alltoallw) for a communicator of `n` ranks; `slot` as for resolveV. */
export function resolveW(call: string, what: string, spec: unknown, n: number, slot?: number): ResolvedV {
  const parts = vParts(call, what, spec);
  if (parts.length !== 4) fail('ERR_ARG', call, `${what} must be [buf, counts, byteDispls, datatypes], got an array of length ${parts.length}`);
  const view = asView(call, what, parts[0]);
  const [bytes, displs] = lists(n, slot);
  if (quickW(view, parts[1], parts[2], parts[3], n, bytes, displs)) {
    return { view, counts: parts[1] as number[], types: parts[3] as Datatype[], bytes, displs, contiguous: true };
  }
  const counts = intList(call, what, 'counts', parts[1], n, 'ERR_COUNT');
  const d = intList(call, what, 'byteDispls', parts[2], n, 'ERR_ARG');
  if (!Array.isArray(parts[3]) || parts[3].length !== n) {
    fail('ERR_ARG', call, `${what} datatypes must list one Datatype per rank (${n}), got ${describe(parts[3])}`);
  }
  const types = (parts[3] as unknown[]).map((t, r) => checkDatatype(t, call, `${what} datatypes[${r}]`));
  for (let r = 0; r < n; r++) {
    bytes[r] = counts[r]! * types[r]!.extent;
    displs[r] = d[r]!;
  }
  checkBlocks(call, what, view, bytes, displs, counts, types);
  return { view, counts, types, bytes, displs, contiguous: types.every((t) => t.contiguous) };
}

// ---- Staging: derived datatypes in collectives ------------------------------
//
// bcast and allgather take a derived type as it is (fuseMove: the core packs
// and unpacks it chunk by chunk in its slots). The other native collectives
// move contiguous bytes and reduce dense arrays of one basic type. There, a
// message whose datatype is not plain bytes travels as its
// packed stream (count × size bytes, type-map order, so that only type
// signatures need match between ranks); a reduction on a derived type runs
// on its elements in kernel layout. The collective records what to do around
// the native call: pack the send side before it (again at every start of a
// persistent request), unpack the receive side after it.

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
