/**
 * MPI_Pack, MPI_Unpack and MPI_Pack_size: items of any committed datatype
 * to and from a contiguous byte stream in type-map order (the stream of
 * `count` items is count × size bytes, padding excluded). Contiguous types
 * are one copy; the others run natively over the type's committed
 * description.
 */
import { Datatype } from './datatype.js';
import { describe, fail } from './errors.js';
import { resolve, wholeBytes, type Buf, type Msg } from './message.js';
import { native } from './native.js';

function streamView(call: string, what: string, b: unknown): ArrayBufferView {
  if (ArrayBuffer.isView(b)) return b;
  if (b instanceof ArrayBuffer || (typeof SharedArrayBuffer !== 'undefined' && b instanceof SharedArrayBuffer)) {
    return wholeBytes(call, what, b);
  }
  fail('ERR_BUFFER', call, `${what} must be a TypedArray, DataView, Buffer or ArrayBuffer, got ${describe(b)}`);
}

function positionArg(call: string, position: unknown): number {
  if (typeof position !== 'number' || !Number.isSafeInteger(position) || position < 0) {
    fail('ERR_ARG', call, `position must be a non-negative integer (bytes), got ${describe(position)}`);
  }
  return position;
}

/** The items must lie inside their view, whose start is item 0's origin. */
function checkSpan(call: string, what: string, view: ArrayBufferView, count: number, type: Datatype): void {
  const [lo, hi] = type.span(count);
  if (lo < 0 || hi > view.byteLength) {
    fail('ERR_BUFFER', call, `${count} × ${type.name} touch bytes ${lo} to ${hi} of ${what}, which holds bytes 0 to ${view.byteLength}`);
  }
}

function bytesOf(view: ArrayBufferView, offset: number, length: number): Uint8Array {
  return new Uint8Array(view.buffer, view.byteOffset + offset, length);
}

/**
 * MPI_Pack_size: an upper bound on the bytes `count` items of `datatype`
 * add to a packed stream (here exactly count × size).
 */
export function packSize(count: number, datatype: Datatype): number {
  const call = 'packSize';
  if (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 0) {
    fail('ERR_COUNT', call, `count must be a non-negative integer, got ${describe(count)}`);
  }
  if (!(datatype instanceof Datatype)) fail('ERR_TYPE', call, `datatype must be a Datatype, got ${describe(datatype)}`);
  if (datatype.freed) fail('ERR_TYPE', call, `datatype ${datatype.name} has been freed`);
  const bytes = count * datatype.size;
  if (!Number.isSafeInteger(bytes)) fail('ERR_COUNT', call, `${count} × ${datatype.name} is more than 2^53 bytes`);
  return bytes;
}

/**
 * MPI_Pack: appends the items of `inbuf` to `outbuf` at byte `position`;
 * returns the position after them. ERR_TRUNCATE when they do not fit.
 */
export function pack(inbuf: Msg, outbuf: Buf, position: number): number {
  const call = 'pack';
  const m = resolve(call, 'inbuf', inbuf);
  const out = streamView(call, 'outbuf', outbuf);
  positionArg(call, position);
  const bytes = m.count * m.type.size;
  const room = Math.max(0, out.byteLength - position);
  if (position > out.byteLength || bytes > room) {
    fail('ERR_TRUNCATE', call, `${m.count} × ${m.type.name} pack to ${bytes} bytes, outbuf of ${out.byteLength} bytes has ${room} after position ${position}`);
  }
  checkSpan(call, 'inbuf', m.view, m.count, m.type);
  if (bytes === 0) return position;
  if (m.type.contiguous) {
    bytesOf(out, position, bytes).set(bytesOf(m.view, 0, bytes));
  } else {
    native.typePack(m.type.handle, m.count, m.view, 0, out, position);
  }
  return position + bytes;
}

/**
 * MPI_Unpack: fills the items of `outbuf` from `inbuf` starting at byte
 * `position`; returns the position after the bytes read. ERR_TRUNCATE when
 * `inbuf` ends first.
 */
export function unpack(inbuf: Buf, position: number, outbuf: Msg): number {
  const call = 'unpack';
  const src = streamView(call, 'inbuf', inbuf);
  positionArg(call, position);
  const m = resolve(call, 'outbuf', outbuf);
  const bytes = m.count * m.type.size;
  const avail = Math.max(0, src.byteLength - position);
  if (position > src.byteLength || bytes > avail) {
    fail('ERR_TRUNCATE', call, `${m.count} × ${m.type.name} unpack from ${bytes} bytes, inbuf of ${src.byteLength} bytes has ${avail} after position ${position}`);
  }
  checkSpan(call, 'outbuf', m.view, m.count, m.type);
  if (bytes === 0) return position;
  if (m.type.contiguous) {
    bytesOf(m.view, 0, bytes).set(bytesOf(src, position, bytes));
  } else {
    native.typeUnpack(m.type.handle, m.count, src, position, m.view, 0);
  }
  return position + bytes;
}

// ---- Kernel layout (for reductions on derived types) ---------------------------
//
// The reduction kernels work on dense arrays of one basic type, each element
// at its predefined type's extent. A type whose elements are all of one basic
// type (dt.basic) maps to that layout: its packed stream is it, except for
// the padded pair types (DOUBLE_INT, LONG_INT, SHORT_INT, LONG_DOUBLE_INT),
// whose stream drops the padding the kernels expect.

const kernelTypes = new Map<number, Datatype>();
for (const t of [
  Datatype.INT8_T, Datatype.UINT8_T, Datatype.INT16_T, Datatype.UINT16_T, Datatype.INT32_T, Datatype.UINT32_T,
  Datatype.INT64_T, Datatype.UINT64_T, Datatype.FLOAT, Datatype.DOUBLE, Datatype.LONG_DOUBLE, Datatype.C_FLOAT_COMPLEX,
  Datatype.C_DOUBLE_COMPLEX, Datatype.C_LONG_DOUBLE_COMPLEX, Datatype.C_BOOL, Datatype.LOGICAL, Datatype.BYTE,
  Datatype.FLOAT_INT, Datatype.DOUBLE_INT, Datatype.LONG_INT, Datatype.TWO_INT, Datatype.SHORT_INT,
  Datatype.LONG_DOUBLE_INT, Datatype.TWO_REAL, Datatype.TWO_DOUBLE_PRECISION, Datatype.FLOAT16, Datatype.BFLOAT16,
]) {
  if (!kernelTypes.has(t.basic)) kernelTypes.set(t.basic, t);
}

/**
 * @internal The predefined type whose kernel reduces the elements of `type`
 * (DOUBLE for a vector of DOUBLE), or undefined when they are not all of
 * one basic type.
 */
export function kernelType(type: Datatype): Datatype | undefined {
  return kernelTypes.get(type.basic);
}

/**
 * @internal `count` items of `type` at the start of `view`, as a new buffer
 * of count × elements dense elements of kernelType(type) (each at that
 * type's extent). The caller has checked the view and that the type is
 * committed and homogeneous.
 */
export function toKernel(view: ArrayBufferView, count: number, type: Datatype): Uint8Array {
  const k = kernelType(type)!;
  const n = count * type.elements;
  const stream = new Uint8Array(count * type.size);
  if (stream.length === 0) return new Uint8Array(n * k.extent);
  if (type.contiguous) stream.set(bytesOf(view, 0, stream.length));
  else native.typePack(type.handle, count, view, 0, stream, 0);
  if (k.contiguous) return stream;
  const out = new Uint8Array(n * k.extent);
  native.typeUnpack(k.handle, n, stream, 0, out, 0);
  return out;
}

/** @internal The reverse of toKernel: writes the elements back into `count` items of `type` in `view`. */
export function fromKernel(buf: Uint8Array, view: ArrayBufferView, count: number, type: Datatype): void {
  const k = kernelType(type)!;
  const n = count * type.elements;
  let stream = buf;
  if (count * type.size === 0) return;
  if (!k.contiguous) {
    stream = new Uint8Array(count * type.size);
    native.typePack(k.handle, n, buf, 0, stream, 0);
  }
  if (type.contiguous) bytesOf(view, 0, stream.length).set(stream.subarray(0, count * type.size));
  else native.typeUnpack(type.handle, count, stream, 0, view, 0);
}
