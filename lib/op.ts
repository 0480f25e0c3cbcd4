/**
 * Reduction operations (MPI_Op): the predefined ones run in native kernels;
 * which datatypes each accepts follows MPI 4.1's table.
 */
import { fail } from './errors.js';
import type { Category, Datatype } from './datatype.js';

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

  /** @internal */
  constructor(id: number, name: string, commutative: boolean) {
    this.id = id;
    this.name = name;
    this.commutative = commutative;
  }

  get freed(): boolean { return this.#freed; }

  /** MPI_Op_free. Predefined ops cannot be freed. */
  free(): void {
    if (this.id >= 0) fail('ERR_OP', 'Op.free', `predefined op ${this.name} cannot be freed`);
    this.#freed = true;
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
}

/** Checks that `op` applies to `dt` in `call`; throws ERR_OP otherwise. */
export function checkOp(op: unknown, dt: Datatype, call: string): Op {
  if (!(op instanceof Op)) fail('ERR_OP', call, `op must be an Op (e.g. Op.SUM), got ${op === null ? 'null' : typeof op}`);
  if (op.freed) fail('ERR_OP', call, `op ${op.name} has been freed`);
  if (op.id >= 0 && !allowed[op.name]?.includes(dt.category)) {
    const why = op.name === 'REPLACE' || op.name === 'NO_OP' ? ' (it is only for one-sided accumulate)' : '';
    fail('ERR_OP', call, `op ${op.name} is not defined for datatype ${dt.name}${why}`);
  }
  return op;
}
