/**
 * Sizes and extents of every predefined datatype named in the API (LP64
 * Linux), in the vitest process itself.
 */
import { describe, expect, it } from 'vitest';

import * as mpi from '../../dist/index.js';

const { Datatype } = mpi;

// name: [size, extent]
const LP64: Record<string, [number, number]> = {
  CHAR: [1, 1], SIGNED_CHAR: [1, 1], UNSIGNED_CHAR: [1, 1], SHORT: [2, 2], UNSIGNED_SHORT: [2, 2],
  INT: [4, 4], UNSIGNED: [4, 4], LONG: [8, 8], UNSIGNED_LONG: [8, 8], LONG_LONG_INT: [8, 8], LONG_LONG: [8, 8],
  UNSIGNED_LONG_LONG: [8, 8], FLOAT: [4, 4], DOUBLE: [8, 8], LONG_DOUBLE: [16, 16], WCHAR: [4, 4], C_BOOL: [1, 1],
  INT8_T: [1, 1], INT16_T: [2, 2], INT32_T: [4, 4], INT64_T: [8, 8],
  UINT8_T: [1, 1], UINT16_T: [2, 2], UINT32_T: [4, 4], UINT64_T: [8, 8],
  AINT: [8, 8], OFFSET: [8, 8], COUNT: [8, 8], BYTE: [1, 1], PACKED: [1, 1],
  C_COMPLEX: [8, 8], C_FLOAT_COMPLEX: [8, 8], C_DOUBLE_COMPLEX: [16, 16], C_LONG_DOUBLE_COMPLEX: [32, 32],
  // 16-bit floating point (beyond MPI 4.1)
  FLOAT16: [2, 2], BFLOAT16: [2, 2],
  // Fortran
  INTEGER: [4, 4], REAL: [4, 4], DOUBLE_PRECISION: [8, 8], LOGICAL: [4, 4], COMPLEX: [8, 8], DOUBLE_COMPLEX: [16, 16],
  // Pairs: size counts the two members, extent is the C struct with its padding.
  FLOAT_INT: [8, 8], DOUBLE_INT: [12, 16], LONG_INT: [12, 16], TWO_INT: [8, 8], SHORT_INT: [6, 8],
  LONG_DOUBLE_INT: [20, 32], TWO_REAL: [8, 8], TWO_DOUBLE_PRECISION: [16, 16], TWO_INTEGER: [8, 8],
};

// The pairs' true extent (MPI_Type_get_true_extent) ends with the index
// member, without the struct's tail padding: offsetof(index) + sizeof(index),
// as MPICH computes it for its pair types.
const PAIR_TRUE_EXTENT: Record<string, number> = {
  FLOAT_INT: 8, DOUBLE_INT: 12, LONG_INT: 12, TWO_INT: 8, SHORT_INT: 8, LONG_DOUBLE_INT: 20,
  TWO_REAL: 8, TWO_DOUBLE_PRECISION: 16, TWO_INTEGER: 8,
};

type DT = InstanceType<typeof Datatype>;
const get = (name: string): DT => (Datatype as unknown as Record<string, DT>)[name]!;

describe('predefined datatypes', () => {
  it('exist for every name in the API', () => {
    for (const name of Object.keys(LP64)) {
      expect(get(name), name).toBeInstanceOf(Datatype);
    }
  });

  it('are distinct objects', () => {
    const all = Object.keys(LP64).map(get);
    expect(new Set(all).size).toBe(all.length);
  });

  for (const [name, [size, extent]] of Object.entries(LP64)) {
    it(`${name} has size ${size} and extent ${extent}`, () => {
      const dt = get(name);
      expect(dt.size, `${name}.size`).toBe(size);
      expect(dt.extent, `${name}.extent`).toBe(extent);
      expect(dt.lb, `${name}.lb`).toBe(0);
      expect(dt.ub, `${name}.ub`).toBe(extent);
      expect(dt.trueLb, `${name}.trueLb`).toBe(0);
      expect(dt.committed, `${name}.committed`).toBe(true);
      expect(typeof dt.name).toBe('string');
      expect(dt.name, `${name}.name`).toContain(name);
    });
  }

  it('non-pair types have a true extent equal to their size', () => {
    for (const [name, [size]] of Object.entries(LP64)) {
      if (name in PAIR_TRUE_EXTENT) continue;
      expect(get(name).trueExtent, `${name}.trueExtent`).toBe(size);
    }
  });

  it('pair types have the true extent of the C struct without tail padding', () => {
    const got = Object.fromEntries(Object.keys(PAIR_TRUE_EXTENT).map((n) => [n, get(n).trueExtent]));
    expect(got).toEqual(PAIR_TRUE_EXTENT);
  });
});
