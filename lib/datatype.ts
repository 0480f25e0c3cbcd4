/**
 * MPI datatypes. Predefined types carry the storage type the native kernels
 * reduce (BasicType) and the MPI category that decides which ops apply.
 */
import { fail } from './errors.js';

/** Storage types of the native kernels; numbering shared with native/core/kernels/kernels.h. */
export const enum BasicType {
  I8 = 0, U8, I16, U16, I32, U32, I64, U64,
  F32, F64, F80,
  C32, C64, C80,
  BOOL, LOGICAL, BYTE,
  FLOAT_INT, DOUBLE_INT, LONG_INT, TWO_INT, SHORT_INT, LONG_DOUBLE_INT,
  TWO_FLOAT, TWO_DOUBLE,
  NONE = 255,
}

/**
 * MPI's groups of basic datatypes (MPI 4.1 §6.9.2) that decide which
 * predefined ops apply; `char` and `packed` take none.
 */
export type Category =
  | 'cint' | 'fint' | 'float' | 'logical' | 'complex' | 'byte' | 'multi' | 'pair' | 'char' | 'packed' | 'derived';

/** An MPI datatype (MPI_Datatype). */
export class Datatype {
  /** @internal */ readonly basic: BasicType;
  /** @internal */ readonly category: Category;
  #name: string;
  #size: number;
  #extent: number;
  #lb: number;
  #committed: boolean;
  #freed = false;
  readonly #predefined: boolean;

  /** @internal */
  constructor(name: string, size: number, extent: number, basic: BasicType, category: Category, predefined: boolean) {
    this.#name = name;
    this.#size = size;
    this.#extent = extent;
    this.#lb = 0;
    this.basic = basic;
    this.category = category;
    this.#committed = predefined;
    this.#predefined = predefined;
  }

  /** Bytes of data in one item, padding excluded (MPI_Type_size). */
  get size(): number { return this.#size; }
  /** Distance between consecutive items (MPI_Type_get_extent). */
  get extent(): number { return this.#extent; }
  get lb(): number { return this.#lb; }
  get ub(): number { return this.#lb + this.#extent; }
  get trueLb(): number { return this.#lb; }
  get trueExtent(): number { return this.#extent; }
  get name(): string { return this.#name; }
  set name(value: string) { this.#name = String(value); }
  get committed(): boolean { return this.#committed; }
  get predefined(): boolean { return this.#predefined; }
  /** True once freed; a freed datatype cannot be used. */
  get freed(): boolean { return this.#freed; }

  /** MPI_Type_commit; required before use in communication. */
  commit(): this {
    if (this.#freed) fail('ERR_TYPE', 'Datatype.commit', `datatype ${this.#name} has been freed`);
    this.#committed = true;
    return this;
  }

  /** MPI_Type_free. Predefined datatypes cannot be freed. */
  free(): void {
    if (this.#predefined) fail('ERR_TYPE', 'Datatype.free', `predefined datatype ${this.#name} cannot be freed`);
    this.#freed = true;
  }

  toString(): string { return `Datatype(${this.#name})`; }

  static #predef(name: string, size: number, basic: BasicType, category: Category, extent = size): Datatype {
    return new Datatype(name, size, extent, basic, category, true);
  }

  // Predefined datatypes, sizes as on LP64 Linux.
  static readonly CHAR = Datatype.#predef('CHAR', 1, BasicType.I8, 'char');
  static readonly SIGNED_CHAR = Datatype.#predef('SIGNED_CHAR', 1, BasicType.I8, 'cint');
  static readonly UNSIGNED_CHAR = Datatype.#predef('UNSIGNED_CHAR', 1, BasicType.U8, 'cint');
  static readonly SHORT = Datatype.#predef('SHORT', 2, BasicType.I16, 'cint');
  static readonly UNSIGNED_SHORT = Datatype.#predef('UNSIGNED_SHORT', 2, BasicType.U16, 'cint');
  static readonly INT = Datatype.#predef('INT', 4, BasicType.I32, 'cint');
  static readonly UNSIGNED = Datatype.#predef('UNSIGNED', 4, BasicType.U32, 'cint');
  static readonly LONG = Datatype.#predef('LONG', 8, BasicType.I64, 'cint');
  static readonly UNSIGNED_LONG = Datatype.#predef('UNSIGNED_LONG', 8, BasicType.U64, 'cint');
  static readonly LONG_LONG_INT = Datatype.#predef('LONG_LONG_INT', 8, BasicType.I64, 'cint');
  static readonly LONG_LONG = Datatype.#predef('LONG_LONG', 8, BasicType.I64, 'cint');
  static readonly UNSIGNED_LONG_LONG = Datatype.#predef('UNSIGNED_LONG_LONG', 8, BasicType.U64, 'cint');
  static readonly FLOAT = Datatype.#predef('FLOAT', 4, BasicType.F32, 'float');
  static readonly DOUBLE = Datatype.#predef('DOUBLE', 8, BasicType.F64, 'float');
  static readonly LONG_DOUBLE = Datatype.#predef('LONG_DOUBLE', 16, BasicType.F80, 'float');
  static readonly WCHAR = Datatype.#predef('WCHAR', 4, BasicType.I32, 'char');
  static readonly C_BOOL = Datatype.#predef('C_BOOL', 1, BasicType.BOOL, 'logical');
  static readonly INT8_T = Datatype.#predef('INT8_T', 1, BasicType.I8, 'cint');
  static readonly INT16_T = Datatype.#predef('INT16_T', 2, BasicType.I16, 'cint');
  static readonly INT32_T = Datatype.#predef('INT32_T', 4, BasicType.I32, 'cint');
  static readonly INT64_T = Datatype.#predef('INT64_T', 8, BasicType.I64, 'cint');
  static readonly UINT8_T = Datatype.#predef('UINT8_T', 1, BasicType.U8, 'cint');
  static readonly UINT16_T = Datatype.#predef('UINT16_T', 2, BasicType.U16, 'cint');
  static readonly UINT32_T = Datatype.#predef('UINT32_T', 4, BasicType.U32, 'cint');
  static readonly UINT64_T = Datatype.#predef('UINT64_T', 8, BasicType.U64, 'cint');
  static readonly AINT = Datatype.#predef('AINT', 8, BasicType.I64, 'multi');
  static readonly OFFSET = Datatype.#predef('OFFSET', 8, BasicType.I64, 'multi');
  static readonly COUNT = Datatype.#predef('COUNT', 8, BasicType.I64, 'multi');
  static readonly BYTE = Datatype.#predef('BYTE', 1, BasicType.BYTE, 'byte');
  static readonly PACKED = Datatype.#predef('PACKED', 1, BasicType.BYTE, 'packed');
  static readonly C_COMPLEX = Datatype.#predef('C_COMPLEX', 8, BasicType.C32, 'complex');
  static readonly C_FLOAT_COMPLEX = Datatype.#predef('C_FLOAT_COMPLEX', 8, BasicType.C32, 'complex');
  static readonly C_DOUBLE_COMPLEX = Datatype.#predef('C_DOUBLE_COMPLEX', 16, BasicType.C64, 'complex');
  static readonly C_LONG_DOUBLE_COMPLEX = Datatype.#predef('C_LONG_DOUBLE_COMPLEX', 32, BasicType.C80, 'complex');
  static readonly INTEGER = Datatype.#predef('INTEGER', 4, BasicType.I32, 'fint');
  static readonly REAL = Datatype.#predef('REAL', 4, BasicType.F32, 'float');
  static readonly DOUBLE_PRECISION = Datatype.#predef('DOUBLE_PRECISION', 8, BasicType.F64, 'float');
  static readonly LOGICAL = Datatype.#predef('LOGICAL', 4, BasicType.LOGICAL, 'logical');
  static readonly COMPLEX = Datatype.#predef('COMPLEX', 8, BasicType.C32, 'complex');
  static readonly DOUBLE_COMPLEX = Datatype.#predef('DOUBLE_COMPLEX', 16, BasicType.C64, 'complex');
  // Pair types for MAXLOC/MINLOC: size counts the two members, extent the C
  // struct with its padding.
  static readonly FLOAT_INT = Datatype.#predef('FLOAT_INT', 8, BasicType.FLOAT_INT, 'pair', 8);
  static readonly DOUBLE_INT = Datatype.#predef('DOUBLE_INT', 12, BasicType.DOUBLE_INT, 'pair', 16);
  static readonly LONG_INT = Datatype.#predef('LONG_INT', 12, BasicType.LONG_INT, 'pair', 16);
  static readonly TWO_INT = Datatype.#predef('TWO_INT', 8, BasicType.TWO_INT, 'pair', 8);
  static readonly SHORT_INT = Datatype.#predef('SHORT_INT', 6, BasicType.SHORT_INT, 'pair', 8);
  static readonly LONG_DOUBLE_INT = Datatype.#predef('LONG_DOUBLE_INT', 20, BasicType.LONG_DOUBLE_INT, 'pair', 32);
  static readonly TWO_REAL = Datatype.#predef('TWO_REAL', 8, BasicType.TWO_FLOAT, 'pair', 8);
  static readonly TWO_DOUBLE_PRECISION = Datatype.#predef('TWO_DOUBLE_PRECISION', 16, BasicType.TWO_DOUBLE, 'pair', 16);
  static readonly TWO_INTEGER = Datatype.#predef('TWO_INTEGER', 8, BasicType.TWO_INT, 'pair', 8);
}


/** Checks that `dt` is a usable datatype for communication in `call`. */
export function checkDatatype(dt: unknown, call: string, what: string): Datatype {
  if (!(dt instanceof Datatype)) fail('ERR_TYPE', call, `${what} must be a Datatype, got ${typeof dt === 'object' ? String(dt) : typeof dt}`);
  if (dt.freed) fail('ERR_TYPE', call, `${what} ${dt.name} has been freed`);
  if (!dt.committed) fail('ERR_TYPE', call, `${what} ${dt.name} is not committed (call commit() first)`);
  return dt;
}
