/**
 * Message specs: `buf`, `[buf, datatype]` or `[buf, count, datatype]`,
 * resolved to a view, a count and a datatype, with every check done before
 * anything is sent.
 */
import { IN_PLACE } from './constants.js';
import { checkDatatype, Datatype } from './datatype.js';
import { describe, fail } from './errors.js';

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

function inferType(view: ArrayBufferView): Datatype {
  const direct = inferred.get(view.constructor);
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
      return { view: asView(call, what, spec[0]), count: undefined, type: checkDatatype(spec[1], call, `${what} datatype`) };
    }
    if (spec.length === 3) {
      return {
        view: asView(call, what, spec[0]),
        count: checkCount(call, what, spec[1]),
        type: checkDatatype(spec[2], call, `${what} datatype`),
      };
    }
    fail('ERR_ARG', call, `${what} must be buf, [buf, datatype] or [buf, count, datatype], got an array of length ${spec.length}`);
  }
  const view = asView(call, what, spec);
  return { view, count: undefined, type: inferType(view) };
}

function needBytes(call: string, what: string, view: ArrayBufferView, bytes: number, count: number, type: Datatype): void {
  if (view.byteLength < bytes) {
    fail('ERR_BUFFER', call, `${what} of ${view.byteLength} bytes is too small for ${count} × ${type.name} (${bytes} bytes)`);
  }
}

function wholeCount(call: string, what: string, view: ArrayBufferView, type: Datatype): number {
  const n = view.byteLength / type.extent;
  if (!Number.isInteger(n)) {
    fail('ERR_COUNT', call, `${what} of ${view.byteLength} bytes is not a whole number of ${type.name} (extent ${type.extent})`);
  }
  return n;
}

/** Resolves a whole-buffer message spec. */
export function resolve(call: string, what: string, spec: unknown): Resolved {
  const p = parse(call, what, spec);
  const count = p.count ?? wholeCount(call, what, p.view, p.type);
  const bytes = count * p.type.extent;
  needBytes(call, what, p.view, bytes, count, p.type);
  return { view: p.view, count, type: p.type, bytes };
}

/**
 * Resolves a spec that holds one block per rank (gather's receive buffer,
 * scatter's send buffer, alltoall): a bare buffer or [buf, datatype] is
 * split evenly into `blocks`; an explicit count is the per-block count.
 */
export function resolveBlocks(call: string, what: string, spec: unknown, blocks: number): Resolved {
  const p = parse(call, what, spec);
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
  return { view: p.view, count, type: p.type, bytes };
}

/** `[buf, counts, displs?, datatype?]`: counts and displacements in items. */
export type VMsg = [Buf, number[], (number[] | null)?, Datatype?];
/** `[buf, counts, byteDispls, datatypes]`: one datatype per rank, displacements in bytes. */
export type WMsg = [Buf, number[], number[], Datatype[]];

/** A v- or w-spec after checking: per-rank byte counts and byte displacements. */
export interface ResolvedV {
  readonly view: ArrayBufferView;
  readonly counts: readonly number[];
  /** Datatype of every block (one for a v-spec). */
  readonly types: readonly Datatype[];
  /** Per rank: count × extent, as the addon takes them. */
  readonly bytes: Float64Array;
  readonly displs: Float64Array;
}

function intList(call: string, what: string, list: unknown, n: number, code: 'ERR_COUNT' | 'ERR_ARG'): number[] {
  if (!Array.isArray(list) && !(ArrayBuffer.isView(list) && !(list instanceof DataView))) {
    fail('ERR_ARG', call, `${what} must be an array of ${n} numbers, got ${describe(list)}`);
  }
  const arr = Array.from(list as ArrayLike<number>);
  if (arr.length !== n) fail('ERR_ARG', call, `${what} must have one entry per rank (${n}), got ${arr.length}`);
  for (let r = 0; r < n; r++) {
    const v = arr[r];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
      fail(code, call, `${what}[${r}] must be a non-negative integer, got ${describe(v)}`);
    }
  }
  return arr;
}

function vParts(call: string, what: string, spec: unknown): unknown[] {
  if (spec === IN_PLACE) fail('ERR_ARG', call, `IN_PLACE is not allowed for ${what} here`);
  if (!Array.isArray(spec) || spec.length < 2 || !isBuffer(spec[0])) {
    fail('ERR_BUFFER', call, `${what} must be [buf, counts, displs?, datatype?], got ${describe(spec)}`);
  }
  return spec;
}

function checkBlocks(call: string, what: string, view: ArrayBufferView, bytes: Float64Array, displs: Float64Array): void {
  for (let r = 0; r < bytes.length; r++) {
    if (bytes[r]! > 0 && displs[r]! + bytes[r]! > view.byteLength) {
      fail('ERR_BUFFER', call, `${what} block ${r} (bytes ${displs[r]} to ${displs[r]! + bytes[r]!}) lies outside its ${view.byteLength} bytes`);
    }
  }
}

/** Resolves a v-spec for a communicator of `n` ranks. */
export function resolveV(call: string, what: string, spec: unknown, n: number): ResolvedV {
  const parts = vParts(call, what, spec);
  const view = asView(call, what, parts[0]);
  const counts = intList(call, `${what} counts`, parts[1], n, 'ERR_COUNT');
  const type = parts[3] === undefined ? inferType(view) : checkDatatype(parts[3], call, `${what} datatype`);
  const bytes = new Float64Array(n), displs = new Float64Array(n);
  if (parts[2] === undefined || parts[2] === null) {
    let at = 0;
    for (let r = 0; r < n; r++) {
      displs[r] = at * type.extent;
      at += counts[r]!;
    }
  } else {
    const d = intList(call, `${what} displs`, parts[2], n, 'ERR_ARG');
    for (let r = 0; r < n; r++) displs[r] = d[r]! * type.extent;
  }
  for (let r = 0; r < n; r++) bytes[r] = counts[r]! * type.extent;
  checkBlocks(call, what, view, bytes, displs);
  return { view, counts, types: new Array<Datatype>(n).fill(type), bytes, displs };
}

/** Resolves a w-spec (alltoallw) for a communicator of `n` ranks. */
export function resolveW(call: string, what: string, spec: unknown, n: number): ResolvedV {
  const parts = vParts(call, what, spec);
  if (parts.length !== 4) fail('ERR_ARG', call, `${what} must be [buf, counts, byteDispls, datatypes], got an array of length ${parts.length}`);
  const view = asView(call, what, parts[0]);
  const counts = intList(call, `${what} counts`, parts[1], n, 'ERR_COUNT');
  const d = intList(call, `${what} byteDispls`, parts[2], n, 'ERR_ARG');
  if (!Array.isArray(parts[3]) || parts[3].length !== n) {
    fail('ERR_ARG', call, `${what} datatypes must list one Datatype per rank (${n}), got ${describe(parts[3])}`);
  }
  const types = (parts[3] as unknown[]).map((t, r) => checkDatatype(t, call, `${what} datatypes[${r}]`));
  const bytes = new Float64Array(n), displs = new Float64Array(n);
  for (let r = 0; r < n; r++) {
    bytes[r] = counts[r]! * types[r]!.extent;
    displs[r] = d[r]!;
  }
  checkBlocks(call, what, view, bytes, displs);
  return { view, counts, types, bytes, displs };
}
