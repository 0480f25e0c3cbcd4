/**
 * Message specs: `buf`, `[buf, datatype]` or `[buf, count, datatype]`,
 * resolved to a view, a count and a datatype, with every check done before
 * anything is sent.
 */
import { argList } from './args.js';
import { IN_PLACE } from './constants.js';
import { checkDatatype, Datatype } from './datatype.js';
import { describe, fail } from './errors.js';
import { isDetached } from './hold.js';

/** Anything that holds bytes. */
export type Buf = ArrayBufferView | ArrayBuffer | SharedArrayBuffer;
/** A buffer with an optional count and datatype. */
export type Msg = Buf | readonly [Buf, Datatype] | readonly [Buf, number, Datatype];

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

// The datatype a bare buffer implies (API.md, "Buffers: message specs"),
// by class.
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
// Float16Array (Node 24 and later, or a polyfill installed as the global)
// holds FLOAT16; where the runtime has none there is nothing to infer.
const Float16Ctor = (globalThis as { Float16Array?: unknown }).Float16Array;
if (typeof Float16Ctor === 'function') inferred.set(Float16Ctor, Datatype.FLOAT16);

/**
 * @internal The datatype a TypedArray or DataView of a built-in class
 * implies, if it is one; a subclass may or may not be told (inferType()
 * is). The two usual classes first, by `instanceof`, which optimized code
 * folds to a check of the view's hidden class: in Node 20's V8
 * `view.constructor` is a generic property load of several nanoseconds, a
 * noticeable part of a small message's call (bench/P2P.md). Small, so that
 * it is inlined.
 */
export function bareType(view: ArrayBufferView): Datatype | undefined {
  if (view instanceof Float64Array) return Datatype.DOUBLE;
  if (view instanceof Uint8Array) return Datatype.BYTE;
  return inferred.get(view.constructor);
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

/**
 * @internal An ArrayBuffer's bytes as a view. A detached one has none and
 * takes no view (the addon refuses an empty view of one, as here).
 */
export function wholeBytes(call: string, what: string, b: ArrayBufferLike): Uint8Array {
  try {
    return new Uint8Array(b);
  } catch {
    detached(call, what);
  }
}

function detached(call: string, what: string): never {
  fail('ERR_BUFFER', call, `the ${what}'s ArrayBuffer is detached (transferred, or handed to a stream): it holds nothing now`);
}

/**
 * @internal `view`'s byte length, or ERR_BUFFER when its ArrayBuffer is
 * detached: a detached buffer is refused wherever it matters, whatever the
 * count, rather than taken for an empty message. (A DataView's getter
 * throws then; a TypedArray's reads 0.)
 */
export function liveBytes(call: string, what: string, view: ArrayBufferView): number {
  let bytes: number;
  try {
    bytes = view.byteLength;
  } catch {
    detached(call, what);
  }
  if (bytes === 0 && isDetached(view.buffer)) detached(call, what);
  return bytes;
}

function asView(call: string, what: string, b: unknown): ArrayBufferView {
  if (ArrayBuffer.isView(b)) {
    liveBytes(call, what, b);
    return b;
  }
  if (isBuffer(b)) return wholeBytes(call, what, b as ArrayBuffer);
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
  const n = liveBytes(call, what, view) / type.extent;
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

/** @internal stillHeld's second view for a call that has one: always 0 bytes. */
export const NO_VIEW: ArrayBufferView = new Float64Array(0);

/**
 * @internal Whether views `a` and `b` (NO_VIEW: none) still hold `na` and
 * `nb` bytes by trueBytes: the check a repeated call makes that no buffer
 * it recorded was detached or shrunk. Each view's `length` is read first:
 * that lets V8 check their maps there and then, knowing them TypedArrays,
 * read their byte lengths in place rather than call the getter
 * (bench/VCOLL.md, "One path per shape"); no branch may come between, or
 * V8 forgets what it checked. Only trueBytes's values count. A `length`
 * getter of the program's (a subclass's) runs before any byte length is
 * read, so whatever it detaches is seen.
 */
export function stillHeld(a: ArrayBufferView, na: number, b: ArrayBufferView, nb: number): boolean {
  void (a as Uint8Array).length;
  void (b as Uint8Array).length;
  return trueBytes(a) === na && trueBytes(b) === nb;
}

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
export type VMsg = readonly [Buf, readonly number[], (readonly number[] | null)?, Datatype?];
/** `[buf, counts, byteDispls, datatypes]`: one datatype per rank, displacements in bytes. */
export type WMsg = readonly [Buf, readonly number[], readonly number[], readonly Datatype[]];

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
