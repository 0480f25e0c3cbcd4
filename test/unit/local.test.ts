/**
 * reduceLocal and reduceLocals on the singleton (the vitest process itself):
 * exact values of every predefined op on every datatype it applies to, with
 * C semantics; IN_PLACE for either or both inputs; the same buffer as both
 * inputs; subarray views with guard bytes; argument errors.
 */
import { describe, expect, it } from 'vitest';

import * as mpi from '../../dist/index.js';
// The reduction types and reference ops the rank scripts use.
import {
  BF16_FORMAT, F16_FORMAT, Guarded, RTYPES, encode, fold, halfBits, halfRefBits, halfValue, values,
} from '../fixtures/coll/common.mjs';
import { native } from '../../dist/native.js';

const { Op, Datatype, IN_PLACE } = mpi;
type Msg = Parameters<typeof mpi.reduceLocal>[0];

interface RType {
  label: string;
  dt: InstanceType<typeof Datatype>;
  T: { new (buf: ArrayBufferLike, off?: number, len?: number): ArrayBufferView; BYTES_PER_ELEMENT?: number };
  inferred: boolean;
  elt: number;
  align: number;
  pad: number[] | null;
  ops: string[];
  unsignedZeros?: Record<string, { part: number; valueBytes: number }>;
}
const types = RTYPES as RType[];
const ops = Op as unknown as Record<string, InstanceType<typeof Op>>;

/** A copy of `bytes` in a guarded buffer at an odd (or 3-item) offset, and the spec for it. */
function buffer(t: RType, bytes: Uint8Array, form: 'bare' | 'typed' | 'counted') {
  const g = new Guarded(bytes.length, { align: t.align, tail: 32 });
  g.set(bytes);
  const view = g.view(t.T);
  const n = bytes.length / t.elt;
  const spec: Msg = form === 'bare' ? view : form === 'typed' ? [view, t.dt] : [view, n, t.dt];
  return { g, spec };
}

/** Equal bytes, padding (and the sign of zero parts of complex products) excepted. */
function expectResult(t: RType, op: string, got: Uint8Array, want: Uint8Array, what: string) {
  const a = Uint8Array.from(got), b = Uint8Array.from(want);
  if (t.pad) for (let at = 0; at < a.length; at += t.elt) for (const p of t.pad) a[at + p] = b[at + p] = 0;
  const z = t.unsignedZeros?.[op];
  if (z) {
    for (const x of [a, b]) {
      for (let at = 0; at < x.length; at += z.part) {
        if (x[at + z.valueBytes - 1] === 0x80 && x.subarray(at, at + z.valueBytes - 1).every((v) => v === 0)) x[at + z.valueBytes - 1] = 0;
      }
    }
  }
  expect(Buffer.from(a).equals(Buffer.from(b)), `${what}: ${Buffer.from(a).toString('hex').slice(0, 64)} vs ${Buffer.from(b).toString('hex').slice(0, 64)}`).toBe(true);
}

const COUNT = 37;

describe('reduceLocal / reduceLocals: every op on every datatype it applies to', () => {
  types.forEach((t, ti) => {
    it(`${t.label}: ${t.ops.join(' ')}`, () => {
      const a = values(t, 0, COUNT, 1000 + ti);
      const b = values(t, 1, COUNT, 1000 + ti);
      const ab = encode(t, a), bb = encode(t, b);
      const forms = t.inferred ? (['bare', 'typed', 'counted'] as const) : (['typed', 'counted'] as const);
      // Bare TypedArrays take a fast path of their own: every op goes through
      // it as well as through one of the explicit forms.
      t.ops.forEach((op, oi) => [...new Set([forms[0]!, forms[oi % forms.length]!])].forEach((form) => {
        const want = encode(t, fold(t, op, [a, b])); // a op b, a the lower rank (inbuf)
        const aa = encode(t, fold(t, op, [a, a]));
        const what = `${t.label} ${op} ${form}`;

        // reduceLocal: inoutbuf = inbuf op inoutbuf.
        let x = buffer(t, ab, form), y = buffer(t, bb, form);
        mpi.reduceLocal(x.spec, y.spec, ops[op]!);
        expectResult(t, op, y.g.bytes, want, `reduceLocal ${what}`);
        expect(Buffer.from(x.g.bytes).equals(Buffer.from(ab)), `reduceLocal ${what}: inbuf unchanged`).toBe(true);
        x.g.checkGuards(`reduceLocal ${what} inbuf`);
        y.g.checkGuards(`reduceLocal ${what} inoutbuf`);

        // reduceLocals: three buffers.
        x = buffer(t, ab, form);
        y = buffer(t, bb, form);
        let z = buffer(t, new Uint8Array(ab.length).fill(0xcd), form);
        mpi.reduceLocals(x.spec, y.spec, z.spec, ops[op]!);
        expectResult(t, op, z.g.bytes, want, `reduceLocals ${what}`);
        expect(Buffer.from(x.g.bytes).equals(Buffer.from(ab)), `reduceLocals ${what}: inbuf unchanged`).toBe(true);
        expect(Buffer.from(y.g.bytes).equals(Buffer.from(bb)), `reduceLocals ${what}: argbuf unchanged`).toBe(true);
        for (const g of [x.g, y.g, z.g]) g.checkGuards(`reduceLocals ${what}`);

        // IN_PLACE for the first operand: it is read from inoutbuf.
        z = buffer(t, ab, form);
        y = buffer(t, bb, form);
        mpi.reduceLocals(IN_PLACE, y.spec, z.spec, ops[op]!);
        expectResult(t, op, z.g.bytes, want, `reduceLocals IN_PLACE inbuf ${what}`);

        // IN_PLACE for the second operand.
        x = buffer(t, ab, form);
        z = buffer(t, bb, form);
        mpi.reduceLocals(x.spec, IN_PLACE, z.spec, ops[op]!);
        expectResult(t, op, z.g.bytes, want, `reduceLocals IN_PLACE argbuf ${what}`);

        // IN_PLACE for both: inoutbuf op inoutbuf.
        z = buffer(t, ab, form);
        mpi.reduceLocals(IN_PLACE, IN_PLACE, z.spec, ops[op]!);
        expectResult(t, op, z.g.bytes, aa, `reduceLocals IN_PLACE both ${what}`);

        // The same buffer as both inputs.
        x = buffer(t, ab, form);
        z = buffer(t, new Uint8Array(ab.length), form);
        mpi.reduceLocals(x.spec, x.spec, z.spec, ops[op]!);
        expectResult(t, op, z.g.bytes, aa, `reduceLocals same buffer twice ${what}`);
        expect(Buffer.from(x.g.bytes).equals(Buffer.from(ab)), `reduceLocals same buffer twice ${what}: input unchanged`).toBe(true);
      }));
    });
  });
});

describe('reduceLocal / reduceLocals: exact C semantics', () => {
  it('integers wrap around', () => {
    let io: ArrayBufferView = Int8Array.of(100, -100, 127, -128);
    mpi.reduceLocal(Int8Array.of(100, -100, 1, -1), io, Op.SUM);
    expect(Array.from(io as Int8Array)).toEqual([-56, 56, -128, 127]);

    io = Uint32Array.of(0xffffffff, 65536, 3, 0x80000000);
    mpi.reduceLocal(Uint32Array.of(2, 65536, 0x55555556, 2), io, Op.PROD);
    expect(Array.from(io as Uint32Array)).toEqual([0xfffffffe, 0, 2, 0]);

    io = Int16Array.of(-32768, 300);
    mpi.reduceLocal(Int16Array.of(-1, 300), io, Op.PROD);
    expect(Array.from(io as Int16Array)).toEqual([-32768, 24464]);

    io = BigInt64Array.of(2n ** 63n - 1n, -(2n ** 63n));
    mpi.reduceLocal(BigInt64Array.of(1n, -1n), io, Op.SUM);
    expect(Array.from(io as BigInt64Array)).toEqual([-(2n ** 63n), 2n ** 63n - 1n]);

    io = BigUint64Array.of(2n ** 63n, 2n ** 64n - 1n);
    mpi.reduceLocal(BigUint64Array.of(2n, 2n ** 64n - 1n), io, Op.PROD);
    expect(Array.from(io as BigUint64Array)).toEqual([0n, 1n]);

    io = Uint8Array.of(200, 255);
    mpi.reduceLocal([Uint8Array.of(100, 1), Datatype.UNSIGNED_CHAR], [io, Datatype.UNSIGNED_CHAR], Op.SUM);
    expect(Array.from(io as Uint8Array)).toEqual([44, 0]);
  });

  it('logical ops give 0 or 1, bitwise ops work bit by bit', () => {
    const a = Int32Array.of(0, 5, -3, 0, 7);
    const b = Int32Array.of(7, 0, 2, 0, -1);
    const run = (op: InstanceType<typeof Op>) => {
      const io = Int32Array.from(b);
      mpi.reduceLocal(a, io, op);
      return Array.from(io);
    };
    expect(run(Op.LAND)).toEqual([0, 0, 1, 0, 1]);
    expect(run(Op.LOR)).toEqual([1, 1, 1, 0, 1]);
    expect(run(Op.LXOR)).toEqual([1, 1, 0, 0, 0]);
    expect(run(Op.BAND)).toEqual([0, 0, 0, 0, 7]);
    expect(run(Op.BOR)).toEqual([7, 5, -1, 0, -1]);
    expect(run(Op.BXOR)).toEqual([7, 5, -1, 0, -8]);
    const bools = Uint8Array.of(0, 1, 1, 0);
    mpi.reduceLocal([Uint8Array.of(0, 0, 1, 1), Datatype.C_BOOL], [bools, Datatype.C_BOOL], Op.LXOR);
    expect(Array.from(bools)).toEqual([0, 1, 0, 1]);
    const bytes = Uint8Array.of(0b1100, 0xff);
    mpi.reduceLocal(Uint8Array.of(0b1010, 0x0f), bytes, Op.BXOR);
    expect(Array.from(bytes)).toEqual([0b0110, 0xf0]);
  });

  it('floating results round as in C (float in float)', () => {
    const io = Float32Array.of(1, 16777216, 3);
    mpi.reduceLocal(Float32Array.of(2 ** -24, 1, 0.1), io, Op.SUM);
    expect(Array.from(io)).toEqual([1, 16777216, Math.fround(Math.fround(0.1) + 3)]);
    const d = Float64Array.of(0.1, 1e308, -0, -0);
    mpi.reduceLocal(Float64Array.of(0.2, 10, -0, 0), d, Op.SUM);
    expect(Object.is(d[0], 0.1 + 0.2)).toBe(true);
    expect(d[1]).toBe(1e308 + 10);
    expect(Object.is(d[2], -0)).toBe(true);
    expect(Object.is(d[3], 0)).toBe(true);
    const p = Float64Array.of(1e308, -0);
    mpi.reduceLocal(Float64Array.of(10, 5), p, Op.PROD);
    expect(p[0]).toBe(Infinity);
    expect(Object.is(p[1], -0)).toBe(true);
  });

  it('complex SUM and PROD', () => {
    const io = Float64Array.of(3, 4, 1, -1);
    mpi.reduceLocal([Float64Array.of(1, 2, 2, 0.5), Datatype.C_DOUBLE_COMPLEX], [io, Datatype.C_DOUBLE_COMPLEX], Op.PROD);
    expect(Array.from(io)).toEqual([-5, 10, 2.5, -1.5]);
    const f = Float32Array.of(1, 1);
    mpi.reduceLocal([Float32Array.of(0.5, -2), Datatype.C_FLOAT_COMPLEX], [f, Datatype.C_FLOAT_COMPLEX], Op.SUM);
    expect(Array.from(f)).toEqual([1.5, -1]);
  });

  it('MAXLOC and MINLOC on DOUBLE_INT: the value wins, ties go to the lowest index, padding is never read', () => {
    const pairs = (...p: [number, number][]) => {
      const dv = new DataView(new ArrayBuffer(16 * p.length));
      p.forEach(([v, i], k) => {
        dv.setFloat64(16 * k, v, true);
        dv.setInt32(16 * k + 8, i, true);
        dv.setUint32(16 * k + 12, 0xdeadbeef, true); // padding
      });
      return dv;
    };
    const read = (dv: DataView) => Array.from({ length: dv.byteLength / 16 }, (_, k) => [dv.getFloat64(16 * k, true), dv.getInt32(16 * k + 8, true)]);
    const inb = pairs([1, 5], [2, 7], [3, 2], [3, 9], [-1, 4]);
    const io = pairs([1, 3], [1, 0], [3, 8], [3, 1], [-2, 6]);
    mpi.reduceLocal([inb, Datatype.DOUBLE_INT], [io, Datatype.DOUBLE_INT], Op.MAXLOC);
    expect(read(io)).toEqual([[1, 3], [2, 7], [3, 2], [3, 1], [-1, 4]]);
    const io2 = pairs([1, 3], [1, 0], [3, 8], [3, 1], [-2, 6]);
    mpi.reduceLocal([inb, Datatype.DOUBLE_INT], [io2, Datatype.DOUBLE_INT], Op.MINLOC);
    expect(read(io2)).toEqual([[1, 3], [1, 0], [3, 2], [3, 1], [-2, 6]]);
  });

  it('count 0 is fine and writes nothing', () => {
    const io = Float64Array.of(1, 2);
    mpi.reduceLocal([Float64Array.of(5, 6), 0, Datatype.DOUBLE], [io, 0, Datatype.DOUBLE], Op.SUM);
    expect(Array.from(io)).toEqual([1, 2]);
    mpi.reduceLocals(new Float64Array(0), new Float64Array(0), new Float64Array(0), Op.SUM);
  });

  it('explicit counts on subarray views touch only their items', () => {
    const big = Float64Array.of(0, 1, 2, 3, 4, 5, 6, 7);
    const out = Float64Array.of(-1, -1, -1, -1, -1, -1);
    mpi.reduceLocals([big.subarray(1), 3, Datatype.DOUBLE], [big.subarray(4), 3, Datatype.DOUBLE], [out.subarray(2), 3, Datatype.DOUBLE], Op.SUM);
    expect(Array.from(out)).toEqual([-1, -1, 5, 7, 9, -1]);
    expect(Array.from(big)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });
});

describe('reduceLocal / reduceLocals: FLOAT16 and BFLOAT16 on any 16-bit patterns', () => {
  // Random patterns (NaN payloads, infinities, subnormals) and values near 1
  // and near the top (sums and products that round, ties, overflow), with
  // the operands' roles both ways, against the JS reference (float32 via
  // Math.fround, rounded to nearest even), in every kernel table this CPU runs.
  const n = 4099;
  const tables = ['scalar', 'avx2', 'avx512', 'neon'].filter((isa) => native.selectKernelIsa(isa));
  native.selectKernelIsa('auto');
  for (const [dt, f] of [[Datatype.FLOAT16, F16_FORMAT], [Datatype.BFLOAT16, BF16_FORMAT]] as const) {
    let s = 12345 + f.fraction;
    const rnd = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) >>> 8;
    const largest = (0x7fff & ~((1 << f.fraction) - 1)) - 1;
    const pattern = (): number => {
      const h = rnd();
      switch (h % 4) {
        case 0: return halfBits(f, (h & 1 ? -1 : 1) * (1 + (h % 97) * 2 ** -(f.fraction + 3)));
        case 1: return (h & 0x8000) | (largest - (h % 3));
        default: return rnd() & 0xffff;
      }
    };
    const a = Uint16Array.from({ length: n }, pattern), b = Uint16Array.from({ length: n }, pattern);
    for (const isa of tables) {
      for (const op of ['MAX', 'MIN', 'SUM', 'PROD'] as const) {
        it(`${dt.name} ${op} (${isa} kernels)`, () => {
          expect(native.selectKernelIsa(isa)).toBe(true);
          try {
            const want = a.map((x, i) => halfRefBits(f, op, x, b[i]));
            const io = Uint16Array.from(b);
            mpi.reduceLocal([a, dt], [io, dt], Op[op]);
            const out = new Uint16Array(n);
            mpi.reduceLocals([a, dt], [b, dt], [out, dt], Op[op]);
            for (let i = 0; i < n; i++) {
              if (io[i] !== want[i] || out[i] !== want[i]) {
                const show = (h: number) => `0x${h.toString(16)} (${halfValue(f, h)})`;
                expect.fail(`item ${i}: ${show(a[i]!)} ${op} ${show(b[i]!)} gave ${show(io[i]!)} / ${show(out[i]!)}, want ${show(want[i]!)}`);
              }
            }
          } finally {
            native.selectKernelIsa('auto');
          }
        });
      }
    }
  }
});

describe('reduceLocal / reduceLocals: argument errors', () => {
  function code(fn: () => void): string | undefined {
    try {
      fn();
    } catch (err) {
      expect(err).toBeInstanceOf(mpi.MPIError);
      const e = err as InstanceType<typeof mpi.MPIError>;
      expect(e.errorClass).toBe((mpi as unknown as Record<string, number>)[e.code]);
      return e.code;
    }
    return undefined;
  }
  const f64 = (n: number) => new Float64Array(n);

  it('mismatched counts are ERR_COUNT', () => {
    expect(code(() => mpi.reduceLocal(f64(3), f64(4), Op.SUM))).toBe('ERR_COUNT');
    expect(code(() => mpi.reduceLocal(f64(4), f64(3), Op.SUM))).toBe('ERR_COUNT');
    expect(code(() => mpi.reduceLocal([f64(4), 2, Datatype.DOUBLE], [f64(4), 3, Datatype.DOUBLE], Op.SUM))).toBe('ERR_COUNT');
    expect(code(() => mpi.reduceLocals(f64(3), f64(4), f64(3), Op.SUM))).toBe('ERR_COUNT');
    expect(code(() => mpi.reduceLocals(f64(4), f64(3), f64(3), Op.SUM))).toBe('ERR_COUNT');
    expect(code(() => mpi.reduceLocals(f64(3), f64(3), f64(4), Op.SUM))).toBe('ERR_COUNT');
    expect(code(() => mpi.reduceLocals(IN_PLACE, f64(3), f64(4), Op.SUM))).toBe('ERR_COUNT');
    expect(code(() => mpi.reduceLocals(f64(3), IN_PLACE, f64(4), Op.SUM))).toBe('ERR_COUNT');
    expect(code(() => mpi.reduceLocal([f64(2), -1, Datatype.DOUBLE], f64(2), Op.SUM))).toBe('ERR_COUNT');
    expect(code(() => mpi.reduceLocal([f64(2), 1.5, Datatype.DOUBLE], f64(2), Op.SUM))).toBe('ERR_COUNT');
  });

  it('mismatched types are ERR_TYPE', () => {
    expect(code(() => mpi.reduceLocal(new Float32Array(2), f64(2), Op.SUM))).toBe('ERR_TYPE');
    expect(code(() => mpi.reduceLocal(f64(2), new BigInt64Array(2), Op.SUM))).toBe('ERR_TYPE');
    expect(code(() => mpi.reduceLocal(new Int32Array(2), new Uint32Array(2), Op.SUM))).toBe('ERR_TYPE');
    expect(code(() => mpi.reduceLocal([new Uint8Array(16), Datatype.DOUBLE_INT], [f64(2), Datatype.TWO_DOUBLE_PRECISION], Op.MAXLOC))).toBe('ERR_TYPE');
    expect(code(() => mpi.reduceLocals(f64(2), new Int32Array(4), f64(2), Op.SUM))).toBe('ERR_TYPE');
    expect(code(() => mpi.reduceLocals(new Int32Array(4), f64(2), f64(2), Op.SUM))).toBe('ERR_TYPE');
    expect(code(() => mpi.reduceLocals(IN_PLACE, new Float32Array(2), f64(2), Op.SUM))).toBe('ERR_TYPE');
    expect(code(() => mpi.reduceLocal([f64(2), {} as never], f64(2), Op.SUM))).toBe('ERR_TYPE');
    // A bare Uint16Array is UINT16_T, which is not FLOAT16, nor FLOAT16 BFLOAT16.
    const u16 = () => new Uint16Array(2);
    expect(code(() => mpi.reduceLocal(u16(), [u16(), Datatype.FLOAT16], Op.SUM))).toBe('ERR_TYPE');
    expect(code(() => mpi.reduceLocal([u16(), Datatype.BFLOAT16], [u16(), Datatype.FLOAT16], Op.SUM))).toBe('ERR_TYPE');
  });

  it('ops not defined on the datatype are ERR_OP', () => {
    expect(code(() => mpi.reduceLocal(f64(2), f64(2), Op.BAND))).toBe('ERR_OP');
    expect(code(() => mpi.reduceLocal(new Float32Array(2), new Float32Array(2), Op.LAND))).toBe('ERR_OP');
    expect(code(() => mpi.reduceLocal([new Uint8Array(2), Datatype.CHAR], [new Uint8Array(2), Datatype.CHAR], Op.SUM))).toBe('ERR_OP');
    expect(code(() => mpi.reduceLocal(new Int32Array(2), new Int32Array(2), Op.MAXLOC))).toBe('ERR_OP');
    expect(code(() => mpi.reduceLocal([new Uint8Array(2), Datatype.PACKED], [new Uint8Array(2), Datatype.PACKED], Op.BXOR))).toBe('ERR_OP');
    for (const dt of [Datatype.FLOAT16, Datatype.BFLOAT16]) {
      for (const op of [Op.LAND, Op.LOR, Op.LXOR, Op.BAND, Op.BOR, Op.BXOR, Op.MAXLOC, Op.MINLOC, Op.REPLACE, Op.NO_OP]) {
        expect(code(() => mpi.reduceLocal([new Uint16Array(2), dt], [new Uint16Array(2), dt], op)), `${op.name} ${dt.name}`).toBe('ERR_OP');
      }
    }
    expect(code(() => mpi.reduceLocals(f64(2), f64(2), f64(2), Op.REPLACE))).toBe('ERR_OP');
    expect(code(() => mpi.reduceLocals(f64(2), f64(2), f64(2), 'SUM' as never))).toBe('ERR_OP');
  });

  it('non-buffers are ERR_BUFFER and IN_PLACE output is not allowed', () => {
    for (const bad of ['abc', [1, 2], null, 42, {}]) {
      expect(code(() => mpi.reduceLocal(bad as never, f64(2), Op.SUM))).toBe('ERR_BUFFER');
      expect(code(() => mpi.reduceLocal(f64(2), bad as never, Op.SUM))).toBe('ERR_BUFFER');
      expect(code(() => mpi.reduceLocals(f64(2), f64(2), bad as never, Op.SUM))).toBe('ERR_BUFFER');
    }
    expect(code(() => mpi.reduceLocal(f64(2), IN_PLACE as never, Op.SUM))).toBe('ERR_ARG');
    expect(code(() => mpi.reduceLocals(f64(2), f64(2), IN_PLACE as never, Op.SUM))).toBe('ERR_ARG');
  });
});

describe('local reductions on derived datatypes', () => {
  it('reduce the BFLOAT16 and FLOAT16 elements of a vector with their kernels and leave the holes alone', () => {
    const v = Datatype.vector(2, 1, 2, Datatype.BFLOAT16).commit();
    const io = Uint16Array.of(0x3f80, 0x1234, 0x3f80, 0x5678);  // 1, hole, 1, (after the item)
    mpi.reduceLocal([Uint16Array.of(0x3f80, 0xffff, 0x4000, 0xffff), 1, v], [io, 1, v], Op.SUM);
    expect([...io]).toEqual([0x4000, 0x1234, 0x4040, 0x5678]);  // 2, 3
    const w = Datatype.vector(2, 1, 2, Datatype.FLOAT16).commit();
    const out = Uint16Array.of(0, 0x1111, 0, 0x2222);
    mpi.reduceLocals([Uint16Array.of(0x3e00, 0, 0xc000, 0), 1, w], [Uint16Array.of(0x3e00, 0, 0x3800, 0), 1, w], [out, 1, w], Op.PROD);
    expect([...out]).toEqual([0x4080, 0x1111, 0xbc00, 0x2222]);  // 1.5 * 1.5, -2 * 0.5
    v.free();
    w.free();
  });

  it('apply a predefined op to each element of a strided vector and leave the holes alone', () => {
    const v = Datatype.vector(3, 1, 2, Datatype.DOUBLE).commit();
    // Two items, the second one extent (5 doubles) after the first: the
    // elements sit at 0, 2, 4 and 5, 7, 9; 1, 3, 6 and 8 are holes.
    const at = [0, 2, 4, 5, 7, 9];
    const image = (hole: number, f: (k: number) => number) => {
      const out = new Array<number>(10).fill(hole);
      at.forEach((p, k) => (out[p] = f(k)));
      return out;
    };
    const a = Float64Array.from(image(100, (k) => k + 1));
    const b = Float64Array.from(image(-1, (k) => 10 * (k + 1)));
    mpi.reduceLocal([a, 2, v], [b, 2, v], Op.SUM);
    expect(Array.from(b)).toEqual(image(-1, (k) => 11 * (k + 1)));
    const out = new Float64Array(10).fill(-9);
    mpi.reduceLocals([a, 2, v], [b, 2, v], [out, 2, v], Op.MAX);
    expect(Array.from(out)).toEqual(image(-9, (k) => 11 * (k + 1)));
    mpi.reduceLocals(IN_PLACE, [a, 2, v], [out, 2, v], Op.SUM);
    expect(Array.from(out)).toEqual(image(-9, (k) => 12 * (k + 1)));
    mpi.reduceLocals(IN_PLACE, IN_PLACE, [out, 2, v], Op.PROD);
    expect(Array.from(out)).toEqual(image(-9, (k) => 144 * (k + 1) ** 2));
    v.free();
  });

  it('give a user op whole struct items and keep the padding of the output', () => {
    const st = Datatype.struct([1, 1], [0, 8], [Datatype.INT, Datatype.DOUBLE]).commit();
    const x = new DataView(new ArrayBuffer(32)), y = new DataView(new ArrayBuffer(32));
    for (let i = 0; i < 2; i++) {
      x.setInt32(16 * i, i + 1, true); x.setInt32(16 * i + 4, 77, true); x.setFloat64(16 * i + 8, 0.5, true);
      y.setInt32(16 * i, 10, true); y.setInt32(16 * i + 4, 99, true); y.setFloat64(16 * i + 8, 3, true);
    }
    const seen: number[] = [];
    const op = Op.create((p, q, len) => {
      const a = p as DataView, b = q as DataView;
      seen.push(len, b.byteLength);
      for (let i = 0; i < len; i++) {
        b.setInt32(16 * i, a.getInt32(16 * i, true) + b.getInt32(16 * i, true), true);
        b.setFloat64(16 * i + 8, a.getFloat64(16 * i + 8, true) * b.getFloat64(16 * i + 8, true), true);
      }
    });
    mpi.reduceLocal([x, 2, st], [y, 2, st], op);
    expect(seen).toEqual([2, 32]);
    for (let i = 0; i < 2; i++) {
      expect([y.getInt32(16 * i, true), y.getInt32(16 * i + 4, true), y.getFloat64(16 * i + 8, true)]).toEqual([11 + i, 99, 1.5]);
    }
    expect(() => mpi.reduceLocal([x, 2, st], [y, 2, st], Op.SUM)).toThrow(expect.objectContaining({ code: 'ERR_OP' }));
    op.free();
    st.free();
  });
});
