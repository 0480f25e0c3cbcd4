/**
 * Per-rank argument lists (bytes, displacements) on their way to the addon.
 *
 * A small TypedArray lives on V8's heap; the addon asking for its memory makes
 * V8 move it to a fresh malloc'd backing store first, a malloc and a free per
 * array per call: most of the cost of a small v-collective. The lists are
 * written into views of one persistent off-heap buffer instead, which the
 * addon keeps too (setArgLists): a call names a list by its number, and the
 * addon reads it during the call only (it copies what it keeps).
 */
import { native } from './native.js';

const SLOTS = 10;
let width = 0;
let views: Float64Array[] = [];

/**
 * Off-heap slot `slot` (0 to 9; one per list of a call), at least `n`
 * entries long, to fill in place. It may be longer than `n`: the addon reads
 * one entry per rank.
 */
export function argList(slot: number, n: number): Float64Array {
  if (n > width) {
    const w = Math.max(n, 64);
    const buf = new ArrayBuffer(SLOTS * w * 8);
    native.setArgLists(buf, w);
    width = w;
    views = Array.from({ length: SLOTS }, (_, k) => new Float64Array(buf, k * w * 8, w));
  }
  return views[slot]!;
}

/**
 * Slot `slot` for the addon, holding `list`: `list` is copied there unless
 * it is that slot already (resolveV filled it in place). Null stays null (an
 * absent list).
 */
export function offHeap(slot: number, list: Float64Array): number;
export function offHeap(slot: number, list: Float64Array | null): number | null;
export function offHeap(slot: number, list: Float64Array | null): number | null {
  if (list === null) return null;
  const v = argList(slot, list.length);
  if (list !== v) v.set(list);
  return slot;
}
