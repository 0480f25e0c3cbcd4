/**
 * The exported constants, error classes and the MPIError shape, in the vitest
 * process itself (a world of one).
 */
import { describe, expect, it } from 'vitest';

import * as mpi from '../../dist/index.js';

const ERRORS = [
  'ERR_BUFFER', 'ERR_COUNT', 'ERR_TYPE', 'ERR_TAG', 'ERR_COMM', 'ERR_RANK', 'ERR_ROOT', 'ERR_GROUP', 'ERR_OP',
  'ERR_ARG', 'ERR_TRUNCATE', 'ERR_REQUEST', 'ERR_OTHER', 'ERR_INTERN', 'ERR_PROC_FAILED', 'ERR_NOT_SAME',
] as const;

const m = mpi as unknown as Record<string, unknown>;

describe('constants', () => {
  it('ERR_* are distinct positive integers', () => {
    const values = ERRORS.map((e) => m[e]);
    for (const [i, v] of values.entries()) {
      expect(Number.isInteger(v), `${ERRORS[i]} = ${String(v)}`).toBe(true);
      expect(v as number, ERRORS[i]).toBeGreaterThan(0);
    }
    expect(new Set(values).size).toBe(ERRORS.length);
  });

  it('IN_PLACE is a unique symbol', () => {
    expect(typeof mpi.IN_PLACE).toBe('symbol');
    expect(mpi.IN_PLACE).not.toBe(Symbol.for('nodempi.IN_PLACE'));
    expect(mpi.IN_PLACE).not.toBe(Symbol.for('IN_PLACE'));
  });

  it('version is MPI 4.1', () => {
    expect(mpi.version.major).toBe(4);
    expect(mpi.version.minor).toBe(1);
  });

  it('comparison results and special ranks are distinct numbers', () => {
    const cmp = [mpi.IDENT, mpi.CONGRUENT, mpi.SIMILAR, mpi.UNEQUAL];
    expect(new Set(cmp).size).toBe(4);
    const special = [mpi.UNDEFINED, mpi.ROOT, mpi.PROC_NULL];
    for (const v of [...cmp, ...special]) expect(Number.isInteger(v)).toBe(true);
    expect(new Set(special).size).toBe(3);
    // None of them can be a rank.
    for (const v of special) expect(v).toBeLessThan(0);
  });

  it('the predefined ops exist and the arithmetic and logical ones are commutative', () => {
    const names = ['MAX', 'MIN', 'SUM', 'PROD', 'LAND', 'BAND', 'LOR', 'BOR', 'LXOR', 'BXOR', 'MAXLOC', 'MINLOC', 'REPLACE', 'NO_OP'];
    const ops = names.map((n) => (mpi.Op as unknown as Record<string, InstanceType<typeof mpi.Op>>)[n]!);
    for (const [i, op] of ops.entries()) expect(op, names[i]).toBeInstanceOf(mpi.Op);
    expect(new Set(ops).size).toBe(names.length);
    for (const op of ops.slice(0, 12)) expect(op.commutative, op.name).toBe(true);
  });

  it('the functions of the API are there', () => {
    for (const f of ['init', 'finalize', 'isInitialized', 'isFinalized', 'wtime', 'wtick', 'abort', 'launch', 'reduceLocal', 'reduceLocals']) {
      expect(typeof m[f], f).toBe('function');
    }
    expect(mpi.COMM_WORLD).toBeInstanceOf(mpi.Comm);
    expect(mpi.COMM_SELF).toBeInstanceOf(mpi.Comm);
  });
});

describe('MPIError', () => {
  function caught(fn: () => void): unknown {
    try {
      fn();
    } catch (err) {
      return err;
    }
    return undefined;
  }

  it('is an Error with code, errorClass, name and a message naming the call', () => {
    const err = caught(() => mpi.reduceLocal('abc' as never, new Float64Array(2), mpi.Op.SUM));
    expect(err).toBeInstanceOf(mpi.MPIError);
    expect(err).toBeInstanceOf(Error);
    const e = err as InstanceType<typeof mpi.MPIError>;
    expect(e.code).toBe('ERR_BUFFER');
    expect(e.errorClass).toBe(mpi.ERR_BUFFER);
    expect(e.name).toBe('MPIError');
    expect(e.message).toContain('reduceLocal');
    expect(typeof e.stack).toBe('string');
  });

  it('carries the class of each kind of error', () => {
    const cases: [() => void, string][] = [
      [() => mpi.reduceLocal(new Float64Array(2), new Float64Array(3), mpi.Op.SUM), 'ERR_COUNT'],
      [() => mpi.reduceLocal(new Float32Array(2), new Float64Array(2), mpi.Op.SUM), 'ERR_TYPE'],
      [() => mpi.reduceLocal(new Float64Array(2), new Float64Array(2), mpi.Op.BAND), 'ERR_OP'],
      [() => mpi.COMM_SELF.bcast(new Float64Array(2), 1), 'ERR_ROOT'],
    ];
    for (const [fn, code] of cases) {
      const e = caught(fn) as InstanceType<typeof mpi.MPIError>;
      expect(e, code).toBeInstanceOf(mpi.MPIError);
      expect(e.code).toBe(code);
      expect(e.errorClass).toBe(m[code]);
    }
  });
});
