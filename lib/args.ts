/**
 * Per-rank argument lists (bytes, displacements) on their way to the addon.
 *
 * A small TypedArray lives on V8's heap; the addon asking for its memory makes
 * V8 move it to a fresh malloc'd backing store first, a malloc and a free per
 * array per call: most of the cost of a small v-collective. The lists are
 * written into views of one persistent off-heap buffer instead, which the
 * addon reads during the call only (it copies what it keeps).
 *
 * The addon gets byte views of the lists: N-API finds out a TypedArray's
 * kind by testing the kinds in turn, Uint8Array second and Float64Array
 * ninth, tens of nanoseconds per list.
 */
const SLOTS = 4;
let width = 0;
let views: Float64Array[] = [];
let bytes: Uint8Array[] = [];

/**
 * Off-heap slot `slot` (0 to 3; one per list of a call), at least `n`
 * entries long, to fill in place. It may be longer than `n`: the addon reads
 * one entry per rank.
 */
export function argList(slot: number, n: number): Float64Array {
  if (n > width) {
    width = Math.max(n, 64);
    const buf = new ArrayBuffer(SLOTS * width * 8);
    views = Array.from({ length: SLOTS }, (_, k) => new Float64Array(buf, k * width * 8, width));
    bytes = views.map((v) => new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
  }
  return views[slot]!;
}

/**
 * Slot `slot` for the addon, holding `list`: `list` is copied there unless
 * it is that slot already (resolveV filled it in place).
 */
export function offHeap(slot: number, list: Float64Array): Uint8Array;
export function offHeap(slot: number, list: Float64Array | null): Uint8Array | null;
export function offHeap(slot: number, list: Float64Array | null): Uint8Array | null {
  if (list === null) return null;
  const v = argList(slot, list.length);
  if (list !== v) v.set(list);
  return bytes[slot]!;
}
