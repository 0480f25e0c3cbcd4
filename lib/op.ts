/**
 * Reduction operations (MPI_Op): the predefined ones run in native kernels;
 * which datatypes each accepts follows MPI 4.1's table.
 */
import { BasicType, type Category, type Datatype } from './datatype.js';
import { describe, fail } from './errors.js';

/** Every TypedArray kind a user function may receive. */
export type TypedArray =
  | Int8Array | Uint8Array | Int16Array | Uint16Array | Int32Array | Uint32Array
  | Float32Array | Float64Array | BigInt64Array | BigUint64Array;

/**
 * A user-defined reduction: computes `inoutvec[i] = invec[i] op inoutvec[i]`
 * for `len` items of `datatype`. It may be called several times on chunks.
 */
export type UserFunction = (
  invec: TypedArray | DataView, inoutvec: TypedArray | DataView, len: number, datatype: Datatype,
) => void;

const allowed: Record<string, readonly Category[]> = {
  MAX: ['cint', 'fint', 'float', 'multi'],
  MIN: ['cint', 'fint', 'float', 'multi'],
  SUM: ['cint', 'fint', 'float', 'complex', 'multi'],
  PROD: ['cint', 'fint', 'float', 'complex', 'multi'],
  LAND: ['cint', 'logical'],
  LOR: ['cint', 'logical'],
  LXOR: ['cint', 'logical'],
  BAND: ['cint', 'fint', 'byte', 'multi'],
  BOR: ['cint', 'fint', 'byte', 'multi'],
  BXOR: ['cint', 'fint', 'byte', 'multi'],
  MAXLOC: ['pair'],
  MINLOC: ['pair'],
  REPLACE: [],
  NO_OP: [],
};

/** A reduction operation (MPI_Op). */
export class Op {
  /** @internal Native op number (native/core/kernels/kernels.h OpId). */
  readonly id: number;
  readonly name: string;
  readonly commutative: boolean;
  #freed = false;

  /** @internal The function of a user-defined op (id -1). */
  readonly fn: UserFunction | undefined;

  /** @internal */
  constructor(id: number, name: string, commutative: boolean, fn?: UserFunction) {
    this.id = id;
    this.name = name;
    this.commutative = commutative;
    this.fn = fn;
  }

  /**
   * MPI_Op_create: a reduction computed by `fn` in JavaScript. Commutative
   * ops may be applied in any order; non-commutative ones always combine in
   * ascending rank order. There is no limit on how many exist at once.
   */
  static create(fn: UserFunction, commute = true): Op {
    if (typeof fn !== 'function') fail('ERR_ARG', 'Op.create', `fn must be a function, got ${describe(fn)}`);
    if (typeof commute !== 'boolean') fail('ERR_ARG', 'Op.create', `commute must be a boolean, got ${describe(commute)}`);
    return new Op(-1, fn.name ? `user:${fn.name}` : 'user', commute, fn);
  }

  get freed(): boolean { return this.#freed; }

  /** MPI_Op_free. Predefined ops cannot be freed. Operations already using it complete with it. */
  free(): void {
    if (this.id >= 0) fail('ERR_OP', 'Op.free', `predefined op ${this.name} cannot be freed`);
    if (this.#freed) fail('ERR_OP', 'Op.free', `op ${this.name} has already been freed`);
    this.#freed = true;
    for (const f of freeHooks) f(this);
  }

  toString(): string { return `Op(${this.name})`; }

  static readonly MAX = new Op(0, 'MAX', true);
  static readonly MIN = new Op(1, 'MIN', true);
  static readonly SUM = new Op(2, 'SUM', true);
  static readonly PROD = new Op(3, 'PROD', true);
  static readonly LAND = new Op(4, 'LAND', true);
  static readonly BAND = new Op(5, 'BAND', true);
  static readonly LOR = new Op(6, 'LOR', true);
  static readonly BOR = new Op(7, 'BOR', true);
  static readonly LXOR = new Op(8, 'LXOR', true);
  static readonly BXOR = new Op(9, 'BXOR', true);
  static readonly MAXLOC = new Op(10, 'MAXLOC', true);
  static readonly MINLOC = new Op(11, 'MINLOC', true);
  static readonly REPLACE = new Op(12, 'REPLACE', false);
  static readonly NO_OP = new Op(13, 'NO_OP', false);

  /** Every predefined op, in the order of their native numbers (`predefined[op.id] === op`). */
  static readonly predefined: readonly Op[] = Object.freeze([
    Op.MAX, Op.MIN, Op.SUM, Op.PROD, Op.LAND, Op.BAND, Op.LOR, Op.BOR, Op.LXOR, Op.BXOR, Op.MAXLOC, Op.MINLOC,
    Op.REPLACE, Op.NO_OP,
  ]);
}

// What a backend releases when a user op is freed (lib/coll/mpi.ts).
const freeHooks: ((op: Op) => void)[] = [];
/** @internal */
export function onOpFree(f: (op: Op) => void): void {
  freeHooks.push(f);
}

/** @internal Whether predefined `op` is defined on `dt`. */
export function opAllows(op: Op, dt: Datatype): boolean {
  return allowed[op.name]?.includes(dt.category) ?? false;
}

/** Checks that `op` applies to `dt` in `call`; throws ERR_OP otherwise. */
export function checkOp(op: unknown, dt: Datatype, call: string): Op {
  if (!(op instanceof Op)) fail('ERR_OP', call, `op must be an Op (e.g. Op.SUM), got ${op === null ? 'null' : typeof op}`);
  if (op.freed) fail('ERR_OP', call, `op ${op.name} has been freed`);
  if (op.id >= 0 && !opAllows(op, dt)) {
    const why = op.name === 'REPLACE' || op.name === 'NO_OP' ? ' (it is only for one-sided accumulate)' : '';
    fail('ERR_OP', call, `op ${op.name} is not defined for datatype ${dt.name}${why}`);
  }
  return op;
}

// The TypedArray a user function sees for a basic type; DataView for the
// types without one (long double, complex, pairs, LOGICAL). FLOAT16 and
// BFLOAT16 come as their bits, Uint16Array, whether or not the runtime has
// Float16Array: the addon (N-API 8) cannot make one.
const viewCtor: Partial<Record<BasicType, { new(b: ArrayBufferLike, o: number, n: number): TypedArray; BYTES_PER_ELEMENT: number }>> = {
  [BasicType.I8]: Int8Array, [BasicType.U8]: Uint8Array, [BasicType.BYTE]: Uint8Array, [BasicType.BOOL]: Uint8Array,
  [BasicType.I16]: Int16Array, [BasicType.U16]: Uint16Array, [BasicType.I32]: Int32Array, [BasicType.U32]: Uint32Array,
  [BasicType.F32]: Float32Array, [BasicType.F64]: Float64Array, [BasicType.I64]: BigInt64Array, [BasicType.U64]: BigUint64Array,
  [BasicType.F16]: Uint16Array, [BasicType.BF16]: Uint16Array,
};

// The same as the addon names it (napi_typedarray_type).
const napiKind = new Map<unknown, number>([
  [Int8Array, 0], [Uint8Array, 1], [Int16Array, 3], [Uint16Array, 4], [Int32Array, 5], [Uint32Array, 6],
  [Float32Array, 7], [Float64Array, 8], [BigInt64Array, 9], [BigUint64Array, 10],
]);

/**
 * @internal The view a user function gets of `bytes` bytes of `dt` items
 * at `view`'s memory (the view itself when it already is that), or null
 * when the memory is not aligned for the TypedArray.
 */
export function userView(dt: Datatype, view: ArrayBufferView, bytes: number): TypedArray | DataView | null {
  const Ctor = viewCtor[dt.basic];
  if (!Ctor) return new DataView(view.buffer, view.byteOffset, bytes);
  if (view instanceof Ctor && view.byteLength === bytes) return view;
  if (view.byteOffset % Ctor.BYTES_PER_ELEMENT !== 0) return null;
  return new Ctor(view.buffer, view.byteOffset, bytes / Ctor.BYTES_PER_ELEMENT);
}

/** @internal What the addon needs to call a user op on items of `dt`. */
export interface UserOpSpec {
  fn: UserFunction;
  datatype: Datatype;
  kind: number;
  item: number;
}

/** @internal */
export function userOpSpec(op: Op, dt: Datatype): UserOpSpec | undefined {
  if (op.id >= 0) return undefined;
  return { fn: op.fn!, datatype: dt, kind: napiKind.get(viewCtor[dt.basic]) ?? -1, item: dt.extent };
}
