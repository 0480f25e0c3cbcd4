/**
 * Per-rank argument lists (bytes, displacements) on their way to the addon.
 *
 * A small TypedArray lives on V8's heap; the addon asking for its memory makes
 * V8 move it to a fresh malloc'd backing store first, a malloc and a free per
 * array per call: most of the cost of a small v-collective. The lists are
 * copied into views of one persistent off-heap buffer instead, which the
 * addon reads during the call only (it copies what it keeps).
 */
const SLOTS = 4;
let width = 0;
let views: Float64Array[] = [];

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
  }
  return views[slot]!;
}

/** `list` copied to off-heap slot `slot`. */
export function offHeap(slot: number, list: Float64Array): Float64Array;
export function offHeap(slot: number, list: Float64Array | null): Float64Array | null;
export function offHeap(slot: number, list: Float64Array | null): Float64Array | null {
  if (list === null) return null;
  const v = argList(slot, list.length);
  v.set(list);
  return v;
}
