/**
 * Reductions of plain JavaScript values (reduceObject and the rest): a
 * function (a, b) => value, or a predefined Op on numbers, bigints and
 * booleans, elementwise on arrays and typed arrays of them, and MAXLOC and
 * MINLOC on [value, index] pairs. Values are combined in ascending rank
 * order, as MPI does for ops that do not commute.
 */
import { describe, fail } from '../errors.js';
import { Op } from '../op.js';

/** An object collective's function op: combines two ranks' values, the lower rank's first. */
export type Combine<T> = (a: T, b: T) => T;

/**
 * @internal The combining function of `op` for call `call`: ERR_OP for
 * anything but a function or an Op that reduces (a user-defined Op works on
 * buffers, REPLACE and NO_OP on one-sided accumulates).
 */
export function combiner<T>(op: unknown, call: string): Combine<T> {
  if (typeof op === 'function') return op as Combine<T>;
  if (!(op instanceof Op)) fail('ERR_OP', call, `op must be an Op or a function (a, b) => value, got ${describe(op)}`);
  if (op.id < 0) fail('ERR_OP', call, `${op.name} is a user-defined Op over buffers; pass a function (a, b) => value`);
  if (op === Op.REPLACE || op === Op.NO_OP) fail('ERR_OP', call, `Op.${op.name} is for accumulate operations, not reductions`);
  return (a, b) => apply(op, a, b, call, 'value') as T;
}

/**
 * @internal The first `count` values combined left to right. Under a
 * predefined `op` a lone value is combined with itself and the result
 * dropped, so that a value the op cannot take throws on one rank as on many.
 */
export function fold<T>(values: readonly T[], count: number, f: Combine<T>, op: unknown): T {
  let acc = values[0] as T;
  if (count === 1 && typeof op !== 'function') f(acc, acc);
  for (let i = 1; i < count; i++) acc = f(acc, values[i]!);
  return acc;
}

// [value, index]: what MAXLOC and MINLOC combine.
function isPair(x: unknown): x is [number | bigint, number] {
  return Array.isArray(x) && x.length === 2 && (typeof x[0] === 'number' || typeof x[0] === 'bigint') && typeof x[1] === 'number';
}

function apply(op: Op, a: unknown, b: unknown, call: string, path: string): unknown {
  if (op === Op.MAXLOC || op === Op.MINLOC) {
    if (isPair(a) && isPair(b)) return loc(op, a, b, call, path);
    if (!Array.isArray(a)) fail('ERR_OP', call, `Op.${op.name} combines [value, index] pairs or arrays of them; ${path} is ${describe(a)}`);
  }
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || b.length !== a.length) fail('ERR_OP', call, `${path}: ${describe(a)} cannot be combined with ${describe(b)}`);
    return a.map((x, i) => apply(op, x, b[i], call, `${path}[${i}]`));
  }
  if (ArrayBuffer.isView(a) && !(a instanceof DataView)) {
    const ta = a as unknown as ArrayLike<unknown> & { constructor: new (n: number) => Record<number, unknown> };
    if (!ArrayBuffer.isView(b) || b.constructor !== a.constructor || (b as unknown as ArrayLike<unknown>).length !== ta.length) {
      fail('ERR_OP', call, `${path}: ${describe(a)} cannot be combined with ${describe(b)}`);
    }
    const tb = b as unknown as ArrayLike<unknown>;
    const out = new ta.constructor(ta.length);
    for (let i = 0; i < ta.length; i++) out[i] = scalar(op, ta[i], tb[i], call, `${path}[${i}]`);
    return out;
  }
  return scalar(op, a, b, call, path);
}

function loc(op: Op, a: [number | bigint, number], b: [number | bigint, number], call: string, path: string): [number | bigint, number] {
  if (typeof a[0] !== typeof b[0]) fail('ERR_OP', call, `${path}: Op.${op.name} of a ${typeof a[0]} and a ${typeof b[0]} value`);
  if (a[0] === b[0]) return [a[0], Math.min(a[1], b[1])];
  const first = op === Op.MAXLOC ? a[0] > b[0] : a[0] < b[0];
  return first ? [a[0], a[1]] : [b[0], b[1]];
}

function scalar(op: Op, a: unknown, b: unknown, call: string, path: string): unknown {
  const t = typeof a;
  if (t !== typeof b || (t !== 'number' && t !== 'bigint' && t !== 'boolean')) {
    fail('ERR_OP', call, `Op.${op.name} is not defined on ${describe(a)} and ${describe(b)} (${path})`);
  }
  if (t === 'boolean') return logical(op, a as boolean, b as boolean, call, path);
  const x = a as number, y = b as number;  // or both bigints: the operators are the same
  switch (op) {
    case Op.SUM: return x + y;
    case Op.PROD: return x * y;
    // A NaN operand gives NaN (Math.max, Math.min).
    case Op.MAX: return t === 'number' ? Math.max(x, y) : (x > y ? x : y);
    case Op.MIN: return t === 'number' ? Math.min(x, y) : (x < y ? x : y);
    case Op.LAND: return truth(t, Boolean(x) && Boolean(y));
    case Op.LOR: return truth(t, Boolean(x) || Boolean(y));
    case Op.LXOR: return truth(t, Boolean(x) !== Boolean(y));
    default: return bitwise(op, a as number | bigint, b as number | bigint, call, path);
  }
}

// A logical op's result in the operands' type: 1/0 or 1n/0n, as C's && on integers.
function truth(t: string, v: boolean): number | bigint {
  return t === 'bigint' ? (v ? 1n : 0n) : v ? 1 : 0;
}

function logical(op: Op, a: boolean, b: boolean, call: string, path: string): boolean {
  switch (op) {
    case Op.LAND: case Op.BAND: case Op.MIN: return a && b;
    case Op.LOR: case Op.BOR: case Op.MAX: return a || b;
    case Op.LXOR: case Op.BXOR: return a !== b;
    default: return fail('ERR_OP', call, `Op.${op.name} is not defined on booleans (${path})`);
  }
}

// BAND, BOR, BXOR on integers: bigints as they are, numbers as safe integers
// (JavaScript's own operators would cut them to 32 bits).
function bitwise(op: Op, a: number | bigint, b: number | bigint, call: string, path: string): number | bigint {
  if (typeof a === 'number' && !(Number.isSafeInteger(a) && Number.isSafeInteger(b as number))) {
    fail('ERR_OP', call, `Op.${op.name} needs integers; ${path} is ${describe(a)} and ${describe(b)}`);
  }
  const x = BigInt(a), y = BigInt(b);
  const r = op === Op.BAND ? x & y : op === Op.BOR ? x | y : x ^ y;
  return typeof a === 'bigint' ? r : Number(r);
}
