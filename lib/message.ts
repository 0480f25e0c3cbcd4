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
