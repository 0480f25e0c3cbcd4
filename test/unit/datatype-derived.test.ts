// Derived datatypes in-process: type-map bounds of many constructed types
// against values worked out by hand, every constructor error, the internal
// getters the collectives use, the committed descriptions, and pack/unpack
// with exact bytes (plus a seeded fuzz against a naive type-map model).
import { describe, expect, it } from 'vitest';
import * as mpi from '../../dist/index.js';
import { checkOp } from '../../dist/op.js';
import * as packing from '../../dist/pack.js';  // internal kernel-layout helpers

const { Datatype, MPIError, Op } = mpi;
type Datatype = InstanceType<typeof Datatype>;
const { pack, unpack, packSize } = mpi;
const { INT, DOUBLE, CHAR, SHORT, FLOAT, LONG_DOUBLE, DOUBLE_INT, SHORT_INT, BYTE } = Datatype;

// Internal getters (lib/datatype.ts marks them @internal).
interface Internal {
  contiguous: boolean; handle: number; basic: number; elements: number; category: string;
  signature: bigint; signatureOf(count: number): bigint; describeLayout(): string; span(count: number): [number, number];
}
const internal = (t: Datatype) => t as unknown as Internal;

interface Bounds { size: number; extent: number; lb: number; ub: number; trueLb: number; trueExtent: number }
function bounds(t: Datatype): Bounds {
  return { size: t.size, extent: t.extent, lb: t.lb, ub: t.ub, trueLb: t.trueLb, trueExtent: t.trueExtent };
}
const b = (size: number, lb: number, ub: number, trueLb: number, trueExtent: number): Bounds =>
  ({ size, extent: ub - lb, lb, ub, trueLb, trueExtent });

function expectMPIError(fn: () => unknown, code: string, ...mentions: string[]): void {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  expect(err, `expected MPIError ${code}`).toBeInstanceOf(MPIError);
  const e = err as InstanceType<typeof MPIError>;
  expect(e.code, e.message).toBe(code);
  expect(e.errorClass).toBe((mpi as unknown as Record<string, number>)[code]);
  for (const m of mentions) expect(e.message).toContain(m);
}

// BasicType numbers (lib/datatype.ts).
const I32 = 4, F64 = 9, DOUBLE_INT_BASIC = 18, NONE = 255;

describe('predefined datatypes keep their shape', () => {
  it('has size, extent, bounds, basic type and category as before', () => {
    expect(bounds(DOUBLE)).toEqual(b(8, 0, 8, 0, 8));
    expect(bounds(LONG_DOUBLE)).toEqual(b(16, 0, 16, 0, 16));
    expect(bounds(DOUBLE_INT)).toEqual(b(12, 0, 16, 0, 12));
    expect(bounds(SHORT_INT)).toEqual(b(6, 0, 8, 0, 8));
    expect(bounds(Datatype.LONG_DOUBLE_INT)).toEqual(b(20, 0, 32, 0, 20));
    expect(internal(DOUBLE).basic).toBe(F64);
    expect(DOUBLE.category).toBe('float');
    expect(internal(DOUBLE_INT).basic).toBe(DOUBLE_INT_BASIC);
    expect(DOUBLE_INT.category).toBe('pair');
    expect(DOUBLE.committed && DOUBLE.predefined).toBe(true);
    expect(internal(DOUBLE).elements).toBe(1);
  });
  it('is contiguous unless the C struct has padding', () => {
    for (const t of [CHAR, INT, DOUBLE, LONG_DOUBLE, BYTE, Datatype.C_DOUBLE_COMPLEX, Datatype.TWO_INT, Datatype.FLOAT_INT]) {
      expect(internal(t).contiguous, t.name).toBe(true);
    }
    for (const t of [DOUBLE_INT, SHORT_INT, Datatype.LONG_INT, Datatype.LONG_DOUBLE_INT]) {
      expect(internal(t).contiguous, t.name).toBe(false);
    }
  });
});

describe('constructed types have MPI bounds', () => {
  const cases: [string, () => Datatype, Bounds][] = [
    ['contiguous(4, INT)', () => Datatype.contiguous(4, INT), b(16, 0, 16, 0, 16)],
    ['contiguous(0, DOUBLE)', () => Datatype.contiguous(0, DOUBLE), b(0, 0, 0, 0, 0)],
    ['contiguous(3, DOUBLE_INT)', () => Datatype.contiguous(3, DOUBLE_INT), b(36, 0, 48, 0, 44)],
    ['vector(3, 2, 4, DOUBLE)', () => Datatype.vector(3, 2, 4, DOUBLE), b(48, 0, 80, 0, 80)],
    ['vector(3, 2, -4, DOUBLE)', () => Datatype.vector(3, 2, -4, DOUBLE), b(48, -64, 16, -64, 80)],
    ['vector(2, 3, 2, INT) (overlapping)', () => Datatype.vector(2, 3, 2, INT), b(24, 0, 20, 0, 20)],
    ['vector(0, 3, 2, INT)', () => Datatype.vector(0, 3, 2, INT), b(0, 0, 0, 0, 0)],
    ['vector(4, 1, 0, INT) (stride 0)', () => Datatype.vector(4, 1, 0, INT), b(16, 0, 4, 0, 4)],
    ['hvector(3, 1, 10, SHORT)', () => Datatype.hvector(3, 1, 10, SHORT), b(6, 0, 22, 0, 22)],
    ['hvector(2, 2, -12, FLOAT)', () => Datatype.hvector(2, 2, -12, FLOAT), b(16, -12, 8, -12, 20)],
    ['indexed([2, 1, 3], [5, 0, 2], INT)', () => Datatype.indexed([2, 1, 3], [5, 0, 2], INT), b(24, 0, 28, 0, 28)],
    ['indexed([1, 1], [-2, 3], DOUBLE)', () => Datatype.indexed([1, 1], [-2, 3], DOUBLE), b(16, -16, 32, -16, 48)],
    ['indexed([1, 0], [0, 100], INT) (empty block ignored)', () => Datatype.indexed([1, 0], [0, 100], INT), b(4, 0, 4, 0, 4)],
    ['hindexed([1, 2], [6, -4], SHORT)', () => Datatype.hindexed([1, 2], [6, -4], SHORT), b(6, -4, 8, -4, 12)],
    ['indexedBlock(2, [3, 0], INT)', () => Datatype.indexedBlock(2, [3, 0], INT), b(16, 0, 20, 0, 20)],
    ['hindexedBlock(1, [0, 9], DOUBLE) (no padding)', () => Datatype.hindexedBlock(1, [0, 9], DOUBLE), b(16, 0, 17, 0, 17)],
    ['struct {double; char}', () => Datatype.struct([1, 1], [0, 8], [DOUBLE, CHAR]), b(9, 0, 16, 0, 9)],
    ['struct {char; int}', () => Datatype.struct([1, 1], [0, 4], [CHAR, INT]), b(5, 0, 8, 0, 8)],
    ['struct {int; char; short}', () => Datatype.struct([1, 1, 1], [0, 4, 8], [INT, CHAR, SHORT]), b(7, 0, 12, 0, 10)],
    ['struct {char c[3]}', () => Datatype.struct([3], [0], [CHAR]), b(3, 0, 3, 0, 3)],
    ['struct {char; long double}', () => Datatype.struct([1, 1], [0, 16], [CHAR, LONG_DOUBLE]), b(17, 0, 32, 0, 32)],
    ['struct {int[2] at 0; double at 8}', () => Datatype.struct([2, 1], [0, 8], [INT, DOUBLE]), b(16, 0, 16, 0, 16)],
    ['struct {int at -4; double at 0}', () => Datatype.struct([1, 1], [-4, 0], [INT, DOUBLE]), b(12, -4, 12, -4, 12)],
    ['struct {DOUBLE_INT[2]}', () => Datatype.struct([2], [0], [DOUBLE_INT]), b(24, 0, 32, 0, 28)],
    ['struct {struct{double; char}; char}',
      () => Datatype.struct([1, 1], [0, 16], [Datatype.struct([1, 1], [0, 8], [DOUBLE, CHAR]), CHAR]), b(10, 0, 24, 0, 17)],
    ['struct with a resized member (its ub marker wins, no padding)',
      () => Datatype.struct([1, 1], [0, 12], [DOUBLE.resized(0, 12), CHAR]), b(9, 0, 12, 0, 13)],
    ['struct of empty blocks', () => Datatype.struct([0, 0], [5, 9], [INT, DOUBLE]), b(0, 0, 0, 0, 0)],
    ['DOUBLE.resized(-8, 24)', () => DOUBLE.resized(-8, 24), b(8, -8, 16, 0, 8)],
    ['contiguous(3, DOUBLE.resized(-8, 24))', () => Datatype.contiguous(3, DOUBLE.resized(-8, 24)), b(24, -8, 64, 0, 56)],
    ['vector(2, 1, 2, INT).resized(0, 4) (extent below the true extent)',
      () => Datatype.vector(2, 1, 2, INT).resized(0, 4), b(8, 0, 4, 0, 12)],
    ['INT.resized(0, 0)', () => INT.resized(0, 0), b(4, 0, 0, 0, 4)],
    ['contiguous(0, INT.resized(-4, 16)) (markers without data)', () => Datatype.contiguous(0, INT.resized(-4, 16)), b(0, 0, 0, 0, 0)],
    ['struct mixing a resized and a plain member',
      () => Datatype.struct([1, 1], [0, 100], [INT.resized(-2, 8), DOUBLE]), b(12, -2, 6, 0, 108)],
    ['subarray([4, 5], [2, 3], [1, 2], C, DOUBLE)', () => Datatype.subarray([4, 5], [2, 3], [1, 2], 'C', DOUBLE), b(48, 0, 160, 56, 64)],
    ['subarray([4, 5], [2, 3], [1, 2], F, DOUBLE)', () => Datatype.subarray([4, 5], [2, 3], [1, 2], 'F', DOUBLE), b(48, 0, 160, 72, 80)],
    ['subarray([4, 5, 6], [2, 3, 4], [1, 1, 2], C, INT)',
      () => Datatype.subarray([4, 5, 6], [2, 3, 4], [1, 1, 2], 'C', INT), b(96, 0, 480, 152, 184)],
    ['subarray([4, 5, 6], [2, 3, 4], [1, 1, 2], F, INT)',
      // strides 4, 16, 80: first (1,1,2) at 4+16+160, last (2,3,5) at 8+48+400
      () => Datatype.subarray([4, 5, 6], [2, 3, 4], [1, 1, 2], 'F', INT), b(96, 0, 480, 180, 280)],
    ['subarray of a resized type (lb 0, extent the whole array)',
      () => Datatype.subarray([3], [1], [2], 'C', DOUBLE.resized(-8, 16)), b(8, 0, 48, 32, 8)],
    ['nesting 4 deep',
      () => Datatype.vector(2, 1, 3, Datatype.indexed([1, 2], [4, 0], Datatype.struct([1, 1], [0, 4], [SHORT, Datatype.hvector(2, 1, 8, INT)]))),
      // struct: short@0, int@4, int@12 -> size 10, ub 16 (align 4); indexed: 2 at 0, 1 at 64 -> [0, 80);
      // vector: stride 3 * 80 -> [0, 320)
      b(60, 0, 320, 0, 320)],
    ['dup of a struct', () => Datatype.struct([1, 1], [0, 8], [DOUBLE, CHAR]).dup(), b(9, 0, 16, 0, 9)],
  ];
  for (const [name, make, want] of cases) {
    it(name, () => {
      const t = make();
      expect(bounds(t)).toEqual(want);
      // The addon recomputes size and true bounds from the description and
      // refuses a commit that disagrees.
      t.commit();
      expect(t.committed).toBe(true);
    });
  }
});

describe('nesting to any depth', () => {
  it('builds, commits and packs a type 8000 constructors deep', () => {
    let t = DOUBLE;
    let chars = 0;
    for (let i = 0; i < 8000; i++) {
      if (i % 3 === 0) t = Datatype.contiguous(1, t);
      else if (i % 3 === 1) t = t.resized(0, 8 + 8 * (i % 7));
      else { t = Datatype.struct([1, 1], [0, 8 * (i % 4) + 8], [t, CHAR]); chars++; }
    }
    expect(t.size).toBe(8 + chars);
    expect(t.name.length).toBeLessThan(200);
    t.commit();
    const [, hi] = internal(t).span(1);
    const src = new Uint8Array(Math.max(hi, t.extent)).map((_, i) => i & 0xff);
    const out = new Uint8Array(t.size);
    expect(pack([src, 1, t], out, 0)).toBe(t.size);
    expect(Array.from(out.subarray(0, 8))).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(internal(t).signature).toBe(internal(Datatype.struct([1, chars], [0, 8], [DOUBLE, CHAR])).signature);
  });
});

describe('datatype lifecycle', () => {
  it('commits, dups, frees and names', () => {
    const v = Datatype.vector(2, 1, 2, INT);
    expect(v.committed).toBe(false);
    expect(v.predefined).toBe(false);
    expect(v.name).toBe('vector(2, 1, 2, INT)');
    expect(v.commit()).toBe(v);
    expect(v.commit()).toBe(v);
    v.name = 'column';
    expect(v.name).toBe('column');
    expect(String(v)).toBe('Datatype(column)');
    const d = v.dup();
    expect(d.committed).toBe(true);
    expect(bounds(d)).toEqual(bounds(v));
    expect(Datatype.contiguous(2, INT).dup().committed).toBe(false);
    const dd = DOUBLE.dup();
    expect(dd.predefined).toBe(false);
    expect(dd.committed).toBe(true);
    expect(bounds(dd)).toEqual(bounds(DOUBLE));
    dd.free();
  });
  it('keeps types built from a freed type working', () => {
    const inner = Datatype.contiguous(2, INT);
    const outer = Datatype.vector(2, 1, 2, inner);
    inner.free();
    expect(inner.freed).toBe(true);
    expect(bounds(inner)).toEqual(b(8, 0, 8, 0, 8));
    outer.commit();
    const src = Int32Array.from({ length: 8 }, (_, i) => i);
    const out = new Int32Array(4);
    expect(pack([src, 1, outer], out, 0)).toBe(16);
    expect(Array.from(out)).toEqual([0, 1, 4, 5]);
    expectMPIError(() => Datatype.contiguous(2, inner), 'ERR_TYPE', 'Datatype.contiguous', 'freed');
    expectMPIError(() => inner.commit(), 'ERR_TYPE', 'freed');
    expectMPIError(() => inner.dup(), 'ERR_TYPE', 'Datatype.dup', 'freed');
    expectMPIError(() => inner.resized(0, 4), 'ERR_TYPE', 'Datatype.resized', 'freed');
    expectMPIError(() => inner.free(), 'ERR_TYPE', 'already been freed');
    expectMPIError(() => DOUBLE.free(), 'ERR_TYPE', 'predefined');
    // A committed type freed later cannot start new operations, but its
    // description stays valid for those already holding it.
    const h = internal(outer).handle;
    outer.free();
    expectMPIError(() => pack([src, 1, outer], new Int32Array(4), 0), 'ERR_TYPE', 'freed');
    const again = new Int32Array(4);
    expect(mpiNative().typePack(h, 1, src, 0, again, 0)).toBe(16);
    expect(Array.from(again)).toEqual([0, 1, 4, 5]);
  });
});

describe('internal getters for the collectives', () => {
  it('basic, category and elements follow the type map', () => {
    const v = Datatype.vector(5, 2, 3, DOUBLE);
    expect(internal(v).basic).toBe(F64);
    expect(v.category).toBe('float');
    expect(internal(v).elements).toBe(10);
    const s = Datatype.struct([1, 2], [0, 8], [INT, Datatype.INT32_T]);
    expect(internal(s).basic).toBe(I32);
    expect(internal(s).elements).toBe(3);
    const mixed = Datatype.struct([1, 1], [0, 8], [DOUBLE, INT]);
    expect(internal(mixed).basic).toBe(NONE);
    expect(mixed.category).toBe('derived');
    expect(internal(Datatype.contiguous(2, mixed)).basic).toBe(NONE);
    const pairs = Datatype.contiguous(3, DOUBLE_INT);
    expect(internal(pairs).basic).toBe(DOUBLE_INT_BASIC);
    expect(pairs.category).toBe('pair');
    expect(internal(pairs).elements).toBe(3);
    expect(internal(Datatype.contiguous(0, DOUBLE)).basic).toBe(F64);
    // Ops check the category, so SUM works on a vector of doubles and not
    // on a struct; MAXLOC on a vector of pairs.
    expect(() => checkOp(Op.SUM, v, 'test')).not.toThrow();
    expect(() => checkOp(Op.MAXLOC, pairs, 'test')).not.toThrow();
    expectMPIError(() => checkOp(Op.SUM, mixed, 'test'), 'ERR_OP');
    expectMPIError(() => checkOp(Op.SUM, Datatype.contiguous(2, CHAR), 'test'), 'ERR_OP');
  });
  it('contiguous means count items are count × size dense bytes in order', () => {
    const yes = [
      Datatype.contiguous(4, INT), Datatype.vector(3, 2, 2, INT), Datatype.hvector(2, 1, 4, INT),
      Datatype.struct([1, 1], [0, 4], [INT, FLOAT]), Datatype.indexed([2, 3], [0, 2], SHORT), INT.resized(0, 4),
      Datatype.subarray([3, 4], [3, 4], [0, 0], 'C', DOUBLE), Datatype.contiguous(0, INT),
      Datatype.contiguous(2, Datatype.TWO_INT),
    ];
    for (const t of yes) expect(internal(t).contiguous, t.name).toBe(true);
    const no = [
      Datatype.indexed([1, 1], [1, 0], INT),  // reordered
      INT.resized(0, 8),  // a hole after each item
      INT.resized(-4, 8),  // lb not 0
      Datatype.vector(2, 1, 2, INT),  // a hole inside
      Datatype.hvector(2, 1, -4, INT),  // backwards
      Datatype.struct([1, 1], [0, 8], [DOUBLE, CHAR]),  // padding
      Datatype.contiguous(2, DOUBLE_INT),
      Datatype.vector(4, 1, 0, INT),  // the same int four times
      Datatype.subarray([3, 4], [3, 2], [0, 0], 'C', DOUBLE),
    ];
    for (const t of no) expect(internal(t).contiguous, t.name).toBe(false);
  });
  it('signatures ignore layout and compose over counts', () => {
    const s = (t: Datatype) => internal(t).signature;
    const five = s(Datatype.contiguous(5, DOUBLE));
    expect(s(Datatype.vector(5, 1, 3, DOUBLE))).toBe(five);
    expect(s(Datatype.indexed([2, 3], [7, -4], DOUBLE))).toBe(five);
    expect(internal(DOUBLE).signatureOf(5)).toBe(five);
    expect(s(Datatype.struct([2, 3], [0, 100], [DOUBLE, Datatype.DOUBLE_PRECISION]))).toBe(five);
    expect(s(Datatype.contiguous(2, Datatype.contiguous(3, DOUBLE)))).toBe(internal(DOUBLE).signatureOf(6));
    expect(internal(Datatype.contiguous(3, INT)).signatureOf(4)).toBe(internal(INT).signatureOf(12));
    expect(internal(Datatype.subarray([10, 10], [3, 4], [1, 1], 'C', INT)).signatureOf(2)).toBe(internal(INT).signatureOf(24));
    expect(s(DOUBLE_INT)).toBe(s(Datatype.struct([1, 1], [0, 8], [DOUBLE, INT])));
    expect(s(DOUBLE_INT)).not.toBe(s(Datatype.struct([1, 1], [0, 8], [INT, DOUBLE])));
    expect(s(INT)).not.toBe(s(FLOAT));
    expect(internal(DOUBLE).signatureOf(5)).not.toBe(internal(DOUBLE).signatureOf(4));
    expect(s(DOUBLE.resized(-8, 100))).toBe(s(DOUBLE));
    expect(s(Datatype.contiguous(0, DOUBLE))).toBe(internal(INT).signatureOf(0));
    // Large counts cost nothing.
    expect(internal(Datatype.contiguous(1e6, Datatype.contiguous(1e6, DOUBLE))).signature)
      .toBe(internal(DOUBLE).signatureOf(1e12));
    expect(typeof five).toBe('bigint');
    expect(five < 1n << 61n).toBe(true);
  });
  it('span gives the bytes count items touch', () => {
    expect(internal(Datatype.vector(3, 2, -4, DOUBLE)).span(2)).toEqual([-64, 96]);
    expect(internal(Datatype.vector(2, 1, 2, INT).resized(0, 4)).span(3)).toEqual([0, 20]);
    expect(internal(INT).span(0)).toEqual([0, 0]);
  });
  it('handle is there for committed types only', () => {
    const t = Datatype.vector(2, 1, 2, INT);
    expectMPIError(() => internal(t).handle, 'ERR_TYPE', 'not committed');
    t.commit();
    expect(internal(t).handle).toBeGreaterThan(0);
    expect(internal(DOUBLE_INT).handle).toBeGreaterThan(0);
  });
});

describe('committed descriptions are compact loops', () => {
  const cases: [() => Datatype, string][] = [
    [() => Datatype.contiguous(1e6, DOUBLE), 'block(8000000)'],
    [() => Datatype.vector(1e6, 1, 2, DOUBLE), 'vector(1000000 x 16, block(8))'],
    [() => Datatype.contiguous(1000, Datatype.vector(1000, 1, 2, DOUBLE).resized(0, 16000)), 'vector(1000000 x 16, block(8))'],
    [() => Datatype.vector(3, 2, -4, DOUBLE), 'vector(3 x -32, block(16))'],
    [() => Datatype.indexed([2, 1, 3], [5, 0, 2], INT), 'list(20+8 0+4 8+12)'],
    [() => Datatype.indexed([1, 1, 1], [0, 1, 2], INT), 'block(12)'],
    [() => Datatype.indexedBlock(2, [0, 3, 6, 9], INT), 'vector(4 x 12, block(8))'],
    [() => Datatype.hindexed([1, 1], [8, 0], Datatype.vector(2, 1, 2, INT)), '@8:vector(2 x -8, vector(2 x 8, block(4)))'],
    [() => Datatype.hindexed([1, 2], [40, 0], Datatype.vector(2, 1, 2, INT)), 'indexed(2 runs x 12, vector(2 x 8, block(4)))'],
    [() => Datatype.struct([1, 1], [0, 8], [DOUBLE, CHAR]), 'block(9)'],
    [() => Datatype.struct([1, 1, 1], [0, 4, 8], [INT, CHAR, SHORT]), 'list(0+5 8+2)'],
    [() => Datatype.struct([1, 2, 1], [0, 8, 40], [INT, DOUBLE.resized(0, 16), SHORT]),
      'struct(block(4), @8:vector(2 x 16, block(8)), @40:block(2))'],
    [() => Datatype.subarray([4, 5, 6], [2, 3, 4], [1, 1, 2], 'C', INT), '@120:vector(2 x 120, @24:vector(3 x 24, @8:block(16)))'],
    [() => Datatype.subarray([4, 5, 6], [4, 5, 6], [0, 0, 0], 'F', INT), 'block(480)'],
    [() => Datatype.contiguous(0, INT), 'empty'],
    [() => SHORT_INT, 'list(0+2 4+4)'],
  ];
  for (const [make, want] of cases) {
    it(want, () => {
      const t = make().commit();
      expect(internal(t).describeLayout()).toBe(want);
      // The addon parsed the same tree.
      expect(mpiNative().typeDescribe(internal(t).handle)).toBe(want);
    });
  }
});

// The addon, for typeDescribe (lib/native.ts is the only loader).
import * as nativeModule from '../../dist/native.js';
interface NativeTypes {
  typeDescribe(h: number): string;
  typePack(h: number, count: number, src: ArrayBufferView, origin: number, dst: ArrayBufferView, offset: number): number;
}
function mpiNative(): NativeTypes {
  return (nativeModule as unknown as { native: NativeTypes }).native;
}

describe('constructor errors', () => {
  const freed = Datatype.contiguous(1, INT);
  freed.free();
  const cases: [string, () => unknown, string, ...string[]][] = [
    ['negative count', () => Datatype.contiguous(-1, INT), 'ERR_COUNT', 'Datatype.contiguous', 'count', 'non-negative integer', 'number -1'],
    ['fractional count', () => Datatype.contiguous(1.5, INT), 'ERR_COUNT', 'Datatype.contiguous', 'count', '1.5'],
    ['string count', () => Datatype.contiguous('3' as unknown as number, INT), 'ERR_COUNT', 'count', 'the string "3"'],
    ['non-Datatype old', () => Datatype.contiguous(2, 'INT' as unknown as Datatype), 'ERR_TYPE', 'Datatype.contiguous', 'old type', 'must be a Datatype'],
    ['freed old', () => Datatype.vector(2, 1, 2, freed), 'ERR_TYPE', 'Datatype.vector', 'freed'],
    ['vector negative count', () => Datatype.vector(-2, 1, 2, INT), 'ERR_COUNT', 'Datatype.vector', 'count'],
    ['vector negative blocklength', () => Datatype.vector(2, -1, 2, INT), 'ERR_COUNT', 'Datatype.vector', 'blocklength', '-1'],
    ['vector fractional stride', () => Datatype.vector(2, 1, 1.5, INT), 'ERR_ARG', 'Datatype.vector', 'stride', '1.5'],
    ['hvector NaN stride', () => Datatype.hvector(2, 1, NaN, INT), 'ERR_ARG', 'Datatype.hvector', 'byteStride', 'NaN'],
    ['hvector fractional blocklength', () => Datatype.hvector(2, 0.5, 8, INT), 'ERR_COUNT', 'Datatype.hvector', 'blocklength'],
    ['hvector null old', () => Datatype.hvector(2, 1, 8, null as unknown as Datatype), 'ERR_TYPE', 'Datatype.hvector', 'null'],
    ['indexed mismatched lengths', () => Datatype.indexed([1, 2], [0], INT), 'ERR_ARG', 'Datatype.indexed', 'blocklengths has 2 entries', 'displs has 1'],
    ['indexed negative blocklength', () => Datatype.indexed([1, -2], [0, 1], INT), 'ERR_COUNT', 'Datatype.indexed', 'blocklengths[1]', '-2'],
    ['indexed fractional displacement', () => Datatype.indexed([1], [0.5], INT), 'ERR_ARG', 'Datatype.indexed', 'displs[0]', '0.5'],
    ['indexed non-array', () => Datatype.indexed('x' as unknown as number[], [0], INT), 'ERR_ARG', 'Datatype.indexed', 'blocklengths', 'must be an array'],
    ['indexed freed old', () => Datatype.indexed([1], [0], freed), 'ERR_TYPE', 'Datatype.indexed'],
    ['hindexed mismatched lengths', () => Datatype.hindexed([1], [0, 8], INT), 'ERR_ARG', 'Datatype.hindexed', 'byteDispls has 2'],
    ['hindexed fractional displacement', () => Datatype.hindexed([1, 1], [0, 2.5], INT), 'ERR_ARG', 'byteDispls[1]'],
    ['indexedBlock negative blocklength', () => Datatype.indexedBlock(-1, [0], INT), 'ERR_COUNT', 'Datatype.indexedBlock', 'blocklength'],
    ['indexedBlock bad displacement', () => Datatype.indexedBlock(1, [0, '1' as unknown as number], INT), 'ERR_ARG', 'Datatype.indexedBlock', 'displs[1]'],
    ['hindexedBlock bad old', () => Datatype.hindexedBlock(1, [0], {} as Datatype), 'ERR_TYPE', 'Datatype.hindexedBlock'],
    ['struct mismatched displacements', () => Datatype.struct([1], [0, 1], [INT]), 'ERR_ARG', 'Datatype.struct', 'byteDispls has 2'],
    ['struct mismatched types', () => Datatype.struct([1, 1], [0, 4], [INT]), 'ERR_ARG', 'Datatype.struct', 'types has 1'],
    ['struct null type', () => Datatype.struct([1], [0], [null as unknown as Datatype]), 'ERR_TYPE', 'Datatype.struct', 'types[0]'],
    ['struct freed type', () => Datatype.struct([1, 1], [0, 8], [INT, freed]), 'ERR_TYPE', 'types[1]', 'freed'],
    ['struct negative blocklength', () => Datatype.struct([-1], [0], [INT]), 'ERR_COUNT', 'Datatype.struct', 'blocklengths[0]'],
    ['subarray mismatched lengths', () => Datatype.subarray([4, 4], [2], [0, 0], 'C', INT), 'ERR_ARG', 'Datatype.subarray', 'subsizes has 1'],
    ['subarray bad order', () => Datatype.subarray([4], [2], [0], 'X' as 'C', INT), 'ERR_ARG', 'Datatype.subarray', 'order', 'the string "X"'],
    ['subarray zero size', () => Datatype.subarray([0], [0], [0], 'C', INT), 'ERR_ARG', 'sizes[0]', 'at least 1'],
    ['subarray subsize above size', () => Datatype.subarray([4, 4], [2, 5], [0, 0], 'C', INT), 'ERR_ARG', 'subsizes[1]', 'got 5'],
    ['subarray zero subsize', () => Datatype.subarray([4], [0], [0], 'F', INT), 'ERR_ARG', 'subsizes[0]'],
    ['subarray start too far', () => Datatype.subarray([4, 4], [2, 2], [3, 0], 'C', INT), 'ERR_ARG', 'starts[0]', 'between 0 and', 'got 3'],
    ['subarray negative start', () => Datatype.subarray([4], [2], [-1], 'C', INT), 'ERR_ARG', 'starts[0]', 'got -1'],
    ['subarray no dimensions', () => Datatype.subarray([], [], [], 'C', INT), 'ERR_ARG', 'at least one dimension'],
    ['subarray freed old', () => Datatype.subarray([4], [2], [0], 'C', freed), 'ERR_TYPE', 'Datatype.subarray'],
    ['resized fractional lb', () => INT.resized(1.5, 8), 'ERR_ARG', 'Datatype.resized', 'lb', '1.5'],
    ['resized string extent', () => INT.resized(0, '8' as unknown as number), 'ERR_ARG', 'Datatype.resized', 'extent'],
    ['a type beyond 2^53 bytes', () => Datatype.contiguous(2 ** 30, Datatype.contiguous(2 ** 30, DOUBLE)), 'ERR_ARG', 'Datatype.contiguous', '2^53'],
  ];
  for (const [name, fn, code, ...mentions] of cases) {
    it(name, () => expectMPIError(fn, code, ...mentions));
  }
});

describe('pack and unpack', () => {
  const ints = (n: number) => Int32Array.from({ length: n }, (_, i) => i);
  const bytes = (v: ArrayBufferView) => Array.from(new Uint8Array(v.buffer, v.byteOffset, v.byteLength));

  it('packSize is count × size', () => {
    expect(packSize(3, Datatype.vector(2, 2, 5, DOUBLE))).toBe(96);
    expect(packSize(4, DOUBLE_INT)).toBe(48);
    expect(packSize(0, INT)).toBe(0);
    expectMPIError(() => packSize(-1, INT), 'ERR_COUNT', 'packSize', 'count');
    expectMPIError(() => packSize(1, 'INT' as unknown as Datatype), 'ERR_TYPE', 'packSize');
  });

  it('packs a strided vector, two items, and unpacks it back', () => {
    const col = Datatype.vector(3, 1, 2, INT).commit();  // extent 20
    const out = new Int32Array(6);
    expect(pack([ints(10), 2, col], out, 0)).toBe(24);
    expect(Array.from(out)).toEqual([0, 2, 4, 5, 7, 9]);
    const back = new Int32Array(10).fill(-1);
    expect(unpack(out, 0, [back, 2, col])).toBe(24);
    expect(Array.from(back)).toEqual([0, -1, 2, -1, 4, 5, -1, 7, -1, 9]);
  });

  it('appends at position and reads back in order', () => {
    const buf = new Uint8Array(64);
    let pos = pack(Int32Array.of(7, 8), buf, 0);
    expect(pos).toBe(8);
    pos = pack([Float64Array.of(1.5, 2.5, 3.5, 4.5), 2, Datatype.vector(2, 1, 2, DOUBLE).resized(0, 8).commit()], buf, pos);
    expect(pos).toBe(8 + 32);
    const a = new Int32Array(2), d = new Float64Array(4);
    let at = unpack(buf, 0, a);
    at = unpack(buf, at, [d, 4, DOUBLE]);
    expect(at).toBe(40);
    expect(Array.from(a)).toEqual([7, 8]);
    expect(Array.from(d)).toEqual([1.5, 3.5, 2.5, 4.5]);  // item 1 starts one double later
  });

  it('packs a struct without its padding', () => {
    const t = Datatype.struct([1, 1, 1], [0, 4, 8], [INT, CHAR, SHORT]).commit();  // size 7, extent 12
    const src = new Uint8Array(24).map((_, i) => i + 1);
    const out = new Uint8Array(14);
    expect(pack([src, 2, t], out, 0)).toBe(14);
    expect(Array.from(out)).toEqual([1, 2, 3, 4, 5, 9, 10, 13, 14, 15, 16, 17, 21, 22]);
    const back = new Uint8Array(24);
    unpack(out, 0, [back, 2, t]);
    expect(Array.from(back)).toEqual([1, 2, 3, 4, 5, 0, 0, 0, 9, 10, 0, 0, 13, 14, 15, 16, 17, 0, 0, 0, 21, 22, 0, 0]);
  });

  it('packs predefined pair types without their padding', () => {
    const src = new Uint8Array(32).map((_, i) => i);
    const out = new Uint8Array(24);
    expect(pack([src, 2, DOUBLE_INT], out, 0)).toBe(24);
    expect(Array.from(out)).toEqual([...Array(12).keys(), ...Array.from({ length: 12 }, (_, i) => 16 + i)]);
    const s = new Uint8Array(16).map((_, i) => i);
    const o = new Uint8Array(12);
    pack([s, 2, SHORT_INT], o, 0);
    expect(Array.from(o)).toEqual([0, 1, 4, 5, 6, 7, 8, 9, 12, 13, 14, 15]);
  });

  it('packs subarrays in C and Fortran order', () => {
    const m = Float64Array.from({ length: 20 }, (_, i) => i);  // 4 x 5 row-major
    const c = Datatype.subarray([4, 5], [2, 3], [1, 2], 'C', DOUBLE).commit();
    const out = new Float64Array(6);
    pack([m, 1, c], out, 0);
    expect(Array.from(out)).toEqual([7, 8, 9, 12, 13, 14]);
    const f = Datatype.subarray([4, 5], [2, 3], [1, 2], 'F', DOUBLE).commit();  // column-major 4 x 5
    pack([m, 1, f], out, 0);
    expect(Array.from(out)).toEqual([9, 10, 13, 14, 17, 18]);
    // A whole-buffer spec: the buffer is exactly one array.
    expect(pack([m, c], out, 0)).toBe(48);
  });

  it('packs a vector with a negative stride in type-map order', () => {
    const t = Datatype.hvector(3, 1, -8, DOUBLE).resized(0, 8).commit();
    // trueLb is -16: the view must start at the origin, so the data before
    // it is out of reach and pack refuses.
    expectMPIError(() => pack([new Float64Array(8), 1, t], new Float64Array(3), 0), 'ERR_BUFFER', 'pack', 'inbuf', '-16');
    // Shift the origin into the buffer with hindexed, then it works.
    const shifted = Datatype.hindexed([1], [16], t).commit();
    const out = new Float64Array(3);
    pack([Float64Array.of(0, 1, 2, 3), 1, shifted], out, 0);
    expect(Array.from(out)).toEqual([2, 1, 0]);
  });

  it('packs a resized type with a negative lb', () => {
    const t = DOUBLE.resized(-8, 24).commit();  // items every 3 doubles
    const out = new Float64Array(3);
    // lib/message.ts asks for count × extent bytes (72), though the items
    // only reach byte 56.
    pack([Float64Array.from({ length: 9 }, (_, i) => i), 3, t], out, 0);
    expect(Array.from(out)).toEqual([0, 3, 6]);
  });

  it('goes through the addon and back for a large vector', () => {
    const n = 1_000_000;
    const t = Datatype.vector(n, 1, 2, DOUBLE).commit();
    const src = Float64Array.from({ length: 2 * n - 1 }, (_, i) => i);
    const out = new Float64Array(n);
    expect(pack([src, 1, t], out, 0)).toBe(8 * n);
    let ok = true;
    for (let i = 0; i < n; i++) ok &&= out[i] === 2 * i;
    expect(ok).toBe(true);
    const back = new Float64Array(2 * n - 1).fill(-1);
    unpack(out, 0, [back, 1, t]);
    ok = true;
    for (let i = 0; i < back.length; i++) ok &&= back[i] === (i % 2 ? -1 : i);
    expect(ok).toBe(true);
  });

  it('packs and unpacks within one buffer', () => {
    const buf = Float64Array.from({ length: 8 }, (_, i) => i);
    const t = Datatype.vector(4, 1, 2, DOUBLE).commit();
    pack([buf, 1, t], buf, 0);
    expect(Array.from(buf.subarray(0, 4))).toEqual([0, 2, 4, 6]);
  });

  it('throws ERR_TRUNCATE when the stream does not fit, and writes nothing', () => {
    const t = Datatype.vector(3, 1, 2, INT).commit();
    const out = new Uint8Array(16).fill(0xee);
    expectMPIError(() => pack([ints(10), 2, t], out, 0), 'ERR_TRUNCATE', 'pack', '24 bytes', '16');
    expectMPIError(() => pack([ints(5), 1, t], out, 8), 'ERR_TRUNCATE', 'pack', 'after position 8');
    expectMPIError(() => pack([ints(5), 1, t], out, 17), 'ERR_TRUNCATE', 'pack');
    expect(bytes(out).every((x) => x === 0xee)).toBe(true);
    const back = new Int32Array(5).fill(-1);
    expectMPIError(() => unpack(new Uint8Array(11), 0, [back, 1, t]), 'ERR_TRUNCATE', 'unpack', '12 bytes');
    expectMPIError(() => unpack(new Uint8Array(16), 8, [back, 1, t]), 'ERR_TRUNCATE', 'unpack', 'after position 8');
    expect(Array.from(back)).toEqual([-1, -1, -1, -1, -1]);
  });

  it('throws ERR_BUFFER when items lie outside their buffer', () => {
    const t = Datatype.vector(2, 1, 2, INT).resized(0, 4).commit();  // true extent 12, extent 4
    expectMPIError(() => pack([new Int32Array(2), 2, t], new Int32Array(4), 0), 'ERR_BUFFER', 'pack', 'inbuf', '16');
    expectMPIError(() => unpack(new Int32Array(4), 0, [new Int32Array(2), 2, t]), 'ERR_BUFFER', 'unpack', 'outbuf');
    expectMPIError(() => pack('abc' as unknown as Int32Array, new Int32Array(4), 0), 'ERR_BUFFER', 'pack');
    expectMPIError(() => pack(new Int32Array(4), [1, 2] as unknown as Int32Array, 0), 'ERR_BUFFER', 'outbuf');
    expectMPIError(() => unpack(null as unknown as Int32Array, 0, new Int32Array(4)), 'ERR_BUFFER', 'inbuf');
  });

  it('checks position and datatype', () => {
    expectMPIError(() => pack(new Int32Array(1), new Int32Array(4), -1), 'ERR_ARG', 'position');
    expectMPIError(() => pack(new Int32Array(1), new Int32Array(4), 1.5), 'ERR_ARG', 'position');
    expectMPIError(() => unpack(new Int32Array(1), NaN, new Int32Array(1)), 'ERR_ARG', 'position');
    const t = Datatype.vector(2, 1, 2, INT);
    expectMPIError(() => pack([new Int32Array(4), 1, t], new Int32Array(4), 0), 'ERR_TYPE', 'not committed');
    expectMPIError(() => pack([new Int32Array(4), -1, INT], new Int32Array(4), 0), 'ERR_COUNT');
  });

  it('moves zero items', () => {
    expect(pack([new Int32Array(0), 0, Datatype.vector(2, 1, 2, INT).commit()], new Uint8Array(0), 0)).toBe(0);
    expect(unpack(new Uint8Array(0), 0, [new Int32Array(0), 1, Datatype.contiguous(0, INT).commit()])).toBe(0);
  });
});

describe('kernel layout for reductions on derived types', () => {
  it('turns homogeneous items into dense elements and back', () => {
    expect(packing.kernelType(Datatype.vector(3, 1, 2, DOUBLE))).toBe(DOUBLE);
    expect(packing.kernelType(Datatype.contiguous(2, Datatype.DOUBLE_PRECISION))).toBe(DOUBLE);
    expect(packing.kernelType(Datatype.struct([1, 1], [0, 8], [DOUBLE, INT]))).toBeUndefined();
    const v = Datatype.vector(3, 1, 2, DOUBLE).commit();  // extent 40
    const src = Float64Array.from({ length: 10 }, (_, i) => i);
    const k = packing.toKernel(src, 2, v);
    expect(Array.from(new Float64Array(k.buffer, k.byteOffset, 6))).toEqual([0, 2, 4, 5, 7, 9]);
    const back = new Float64Array(10).fill(-1);
    packing.fromKernel(k, back, 2, v);
    expect(Array.from(back)).toEqual([0, -1, 2, -1, 4, 5, -1, 7, -1, 9]);
  });
  it('restores the padding of pair elements the kernels expect', () => {
    const t = Datatype.vector(2, 1, 2, DOUBLE_INT).commit();  // pairs at 0 and 32, extent 48
    expect(packing.kernelType(t)).toBe(DOUBLE_INT);
    const src = new Uint8Array(96).map((_, i) => i);
    const k = packing.toKernel(src, 2, t);
    expect(k.length).toBe(4 * 16);
    const want = new Uint8Array(64);
    [0, 32, 48, 80].forEach((from, j) => want.set(src.subarray(from, from + 12), 16 * j));
    expect(Array.from(k)).toEqual(Array.from(want));
    const back = new Uint8Array(96).fill(0xee);
    packing.fromKernel(k, back, 2, t);
    const expectBack = new Uint8Array(96).fill(0xee);
    for (const from of [0, 32, 48, 80]) expectBack.set(src.subarray(from, from + 12), from);
    expect(Array.from(back)).toEqual(Array.from(expectBack));
  });
});

// ---- Fuzz: random nested types against a naive type-map model ------------------------
//
// The model enumerates every copy explicitly (no closed forms): its runs are
// the type map's data in order, its bounds follow MPI's marker rules.

interface Model {
  size: number; lb: number; ub: number; tlb: number; tub: number; lbS: boolean; ubS: boolean; align: number;
  runs: [number, number][];
}

const basics: [Datatype, Model][] = [
  [CHAR, leaf(1, 1)], [SHORT, leaf(2, 2)], [INT, leaf(4, 4)], [DOUBLE, leaf(8, 8)], [FLOAT, leaf(4, 4)],
  [DOUBLE_INT, { ...leaf(12, 8), ub: 16, runs: [[0, 8], [8, 4]] }],
  [SHORT_INT, { ...leaf(6, 4), ub: 8, tub: 8, runs: [[0, 2], [4, 4]] }],
];
function leaf(size: number, align: number): Model {
  return { size, lb: 0, ub: size, tlb: 0, tub: size, lbS: false, ubS: false, align, runs: [[0, size]] };
}

function place(items: [Model, number][], isStruct = false, aligns: number[] = []): Model {
  const runs: [number, number][] = [];
  let size = 0, align = Math.max(1, ...aligns);
  const lbS: number[] = [], ubS: number[] = [], lbN: number[] = [], ubN: number[] = [], tl: number[] = [], tu: number[] = [];
  for (const [m, d] of items) {
    align = Math.max(align, m.align);
    for (const [o, l] of m.runs) runs.push([o + d, l]);
    size += m.size;
    if (m.lbS) lbS.push(d + m.lb); else if (m.size > 0) lbN.push(d + m.lb);
    if (m.ubS) ubS.push(d + m.ub); else if (m.size > 0) ubN.push(d + m.ub);
    if (m.size > 0) { tl.push(d + m.tlb); tu.push(d + m.tub); }
  }
  const lb = lbS.length ? Math.min(...lbS) : lbN.length ? Math.min(...lbN) : 0;
  let ub = ubS.length ? Math.max(...ubS) : ubN.length ? Math.max(...ubN) : 0;
  if (isStruct && !ubS.length && ub - lb > 0 && (ub - lb) % align) ub += align - ((ub - lb) % align);
  return {
    size, lb, ub, tlb: tl.length ? Math.min(...tl) : 0, tub: tu.length ? Math.max(...tu) : 0,
    lbS: lbS.length > 0, ubS: ubS.length > 0, align, runs,
  };
}

function rng(seed: number): (n: number) => number {
  let s = seed >>> 0;
  return (n) => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return Math.floor((s / 2 ** 32) * n);
  };
}

function randomType(r: (n: number) => number, depth: number): [Datatype, Model] {
  if (depth === 0 || r(4) === 0) return basics[r(basics.length)]!;
  const [old, m] = randomType(r, depth - 1);
  const ext = m.ub - m.lb;
  const copies = (disp: number, n: number, stride: number): [Model, number][] =>
    Array.from({ length: n }, (_, k) => [m, disp + k * stride]);
  switch (r(9)) {
    case 0: {
      const n = r(4);
      return [Datatype.contiguous(n, old), place(copies(0, n, ext), false, [m.align])];
    }
    case 1: {
      const n = r(4), bl = r(3), st = r(7) - 3;
      return [Datatype.vector(n, bl, st, old), place(Array.from({ length: n }, (_, i) => copies(i * st * ext, bl, ext)).flat(), false, [m.align])];
    }
    case 2: {
      const n = r(4), bl = r(3), st = r(41) - 20;
      return [Datatype.hvector(n, bl, st, old), place(Array.from({ length: n }, (_, i) => copies(i * st, bl, ext)).flat(), false, [m.align])];
    }
    case 3: {
      const k = 1 + r(3);
      const bl = Array.from({ length: k }, () => r(3)), d = Array.from({ length: k }, () => r(9) - 4);
      return [Datatype.indexed(bl, d, old), place(bl.map((x, i) => copies(d[i]! * ext, x, ext)).flat(), false, [m.align])];
    }
    case 4: {
      const k = 1 + r(3);
      const bl = Array.from({ length: k }, () => r(3)), d = Array.from({ length: k }, () => r(61) - 30);
      return [Datatype.hindexed(bl, d, old), place(bl.map((x, i) => copies(d[i]!, x, ext)).flat(), false, [m.align])];
    }
    case 5: {
      const k = 1 + r(3), bl = r(3), d = Array.from({ length: k }, () => r(61) - 30);
      return [Datatype.hindexedBlock(bl, d, old), place(d.map((x) => copies(x, bl, ext)).flat(), false, [m.align])];
    }
    case 6: {
      const [old2, m2] = randomType(r, depth - 1);
      const bl = [r(3), r(3)], d = [r(41) - 20, r(41) - 20];
      const ext2 = m2.ub - m2.lb;
      const items: [Model, number][] = [
        ...copies(d[0]!, bl[0]!, ext),
        ...Array.from({ length: bl[1]! }, (_, k): [Model, number] => [m2, d[1]! + k * ext2]),
      ];
      return [Datatype.struct(bl, d, [old, old2]), place(items, true, [m.align, m2.align])];
    }
    case 7: {
      const lb = r(21) - 10, extent = r(30) - 5;
      return [old.resized(lb, extent), { ...m, lb, ub: lb + extent, lbS: true, ubS: true }];
    }
    default: {
      // 2-D subarray
      const sizes = [1 + r(3), 1 + r(3)], subs = sizes.map((s) => 1 + r(s)), starts = sizes.map((s, i) => r(s - subs[i]! + 1));
      const order = r(2) ? 'C' : 'F';
      const fast = order === 'C' ? 1 : 0, slow = 1 - fast;
      const items: [Model, number][] = [];
      for (let a = 0; a < subs[slow]!; a++) {
        for (let c = 0; c < subs[fast]!; c++) {
          items.push([m, ((starts[slow]! + a) * sizes[fast]! + starts[fast]! + c) * ext]);
        }
      }
      const data = place(items, false, [m.align]);
      return [Datatype.subarray(sizes, subs, starts, order, old),
        { ...data, lb: 0, ub: sizes[0]! * sizes[1]! * ext, lbS: true, ubS: true, align: m.align }];
    }
  }
}

describe('random nested types against a naive model', () => {
  it('agree on bounds and packed bytes (400 types)', () => {
    const r = rng(20240611);
    for (let round = 0; round < 400; round++) {
      const [t, m] = randomType(r, 1 + r(4));
      const what = `round ${round}: ${t.name}`;
      expect(bounds(t), what).toEqual(b(m.size, m.lb, m.ub, m.size ? m.tlb : 0, m.size ? m.tub - m.tlb : 0));
      t.commit();
      // Pack `count` items from a buffer whose start is the origin: shift
      // types reaching below 0 with hindexed.
      const count = 1 + r(3);
      const [lo] = internal(t).span(count);
      const shift = lo < 0 ? -lo : 0;
      const s = Datatype.hindexed([1], [shift], t).commit();
      const [, hi] = internal(s).span(count);
      // Whole count × extent too: lib/message.ts asks for that much.
      const src = new Uint8Array(Math.max(hi, count * s.extent, 0)).map((_, i) => (i * 7 + 3) & 0xff);
      const want: number[] = [];
      const extent = m.ub - m.lb;
      for (let i = 0; i < count; i++) {
        for (const [o, l] of m.runs) for (let k = 0; k < l; k++) want.push(src[shift + i * extent + o + k]!);
      }
      const out = new Uint8Array(want.length);
      expect(pack([src, count, s], out, 0), what).toBe(want.length);
      expect(Array.from(out), what).toEqual(want);
      // Unpack into a fresh buffer: the map's bytes are the stream's (the
      // last write wins where the map overlaps itself), the rest untouched.
      const back = new Uint8Array(src.length).fill(0xee);
      const expectBack = new Uint8Array(src.length).fill(0xee);
      let at = 0;
      for (let i = 0; i < count; i++) {
        for (const [o, l] of m.runs) for (let k = 0; k < l; k++) expectBack[shift + i * extent + o + k] = out[at++]!;
      }
      unpack(out, 0, [back, count, s]);
      expect(Array.from(back), what).toEqual(Array.from(expectBack));
    }
  });
});
