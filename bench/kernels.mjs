#!/usr/bin/env node
// Reduction-kernel throughput: `node bench/kernels.mjs [--quick] [--sizes ...] [--out FILE]`.
//
// For every (op, datatype, size) it measures, in one run and side by side:
//   nodempi         mpi.reduceLocal with the kernel table picked at start-up
//   nodempi scalar  the same with NODEMPI_KERNELS=scalar (the SSE2 baseline)
//   JS loop         `inout[i] += in[i]` and friends over the same TypedArrays
//   memcpy          dst.set(src) of the same bytes (V8 copies same-type arrays with memcpy)
//   Open MPI        MPI_Reduce_local from bench/ompi/reduce_local.c (built with mpicc)
// plus reduceLocals (three buffers) for double SUM, the cost of a user-defined
// op (Op.create) against the same loop called directly, and the fixed cost
// of one call. The kernel table is chosen once per process, so every size
// runs as three fresh processes: this script with --worker auto, with
// --worker scalar, and the C program; the whole set is repeated --runs times
// (job order rotated) and the median over runs reported. Writes
// bench/results/kernels.json and bench/KERNELS.md (full run) or
// bench/results/kernels-partial.json (--quick, --sizes, --cases).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  BENCH, EXT_MAX, NCPU, ROOT, idleWaiter, list, log, onInterrupt, parseOptions, runJob as runBenchJob, tryRun, usageError, which,
} from './lib/jobs.mjs';

const SELF = fileURLToPath(import.meta.url);
const KiB = 1024, MiB = 1024 * KiB;
const SIZES = [4 * KiB, 256 * KiB, 16 * MiB, 256 * MiB];
const QUICK_SIZES = [4 * KiB, 256 * KiB];
const GUARD = 64;        // bytes after each output buffer that must stay untouched
const JOB_TIMEOUT_S = 600;
const IDLE_WAIT_JOB = 5;     // seconds a job may wait for other work to leave a core free
const IDLE_WAIT_TOTAL = 60;  // and all jobs together

// The matrix. reduceLocal unless api says otherwise.
const CASES = [
  ['SUM', 'DOUBLE'], ['SUM', 'FLOAT'], ['SUM', 'INT32_T'], ['SUM', 'INT64_T'], ['SUM', 'INT8_T'],
  ['SUM', 'C_DOUBLE_COMPLEX'], ['SUM', 'LONG_DOUBLE'],
  ['MAX', 'DOUBLE'], ['MAX', 'INT32_T'], ['MIN', 'DOUBLE'], ['MIN', 'INT32_T'],
  ['PROD', 'DOUBLE'], ['PROD', 'C_DOUBLE_COMPLEX'],
  ['BXOR', 'INT32_T'], ['BXOR', 'UINT64_T'], ['BAND', 'INT32_T'], ['BAND', 'UINT64_T'],
  ['LAND', 'INT32_T'],
  ['MAXLOC', 'DOUBLE_INT'], ['MAXLOC', 'FLOAT_INT'], ['MINLOC', 'TWO_INT'], ['MAXLOC', 'LONG_INT'],
  ['MINLOC', 'SHORT_INT'], ['MAXLOC', 'LONG_DOUBLE_INT'], ['MINLOC', 'TWO_DOUBLE_PRECISION'],
  ['SUM', 'DOUBLE', 'reduceLocals'],
].map(([op, type, api = 'reduceLocal']) => ({ api, op, type }));
const caseName = (c) => `${c.op}:${c.type}${c.api === 'reduceLocals' ? ':3' : ''}`;

// lane: bytes per scalar element; item: bytes per MPI item (complex: two lanes, pair: struct with padding).
// Types without a TypedArray are read and written through MEMBERS: LONG_DOUBLE
// as one member, a pair as [value member, index member, index offset], laid
// out as the C struct.
const TYPES = {
  DOUBLE: { Array: Float64Array, lane: 8, item: 8 },
  FLOAT: { Array: Float32Array, lane: 4, item: 4 },
  INT32_T: { Array: Int32Array, lane: 4, item: 4 },
  INT64_T: { Array: BigInt64Array, lane: 8, item: 8 },
  INT8_T: { Array: Int8Array, lane: 1, item: 1 },
  UINT64_T: { Array: BigUint64Array, lane: 8, item: 8 },
  C_DOUBLE_COMPLEX: { Array: Float64Array, lane: 8, item: 16 },
  LONG_DOUBLE: { member: 'f80', lane: 16, item: 16 },
  FLOAT_INT: { pair: ['f32', 'i32', 4], item: 8 },
  DOUBLE_INT: { pair: ['f64', 'i32', 8], item: 16 },
  LONG_INT: { pair: ['i64', 'i32', 8], item: 16 },
  TWO_INT: { pair: ['i32', 'i32', 4], item: 8 },
  SHORT_INT: { pair: ['i16', 'i32', 4], item: 8 },
  LONG_DOUBLE_INT: { pair: ['f80', 'i32', 16], item: 32 },
  TWO_DOUBLE_PRECISION: { pair: ['f64', 'f64', 8], item: 16 },
};

// Scalars at a byte offset, little-endian: the bytes that carry the value,
// the TypedArray a JS loop would view them with (none for long double), a
// writer and a reader. Exact for the patterns' values (small integers).
const f80Scratch = new DataView(new ArrayBuffer(8));
const MEMBERS = {
  i16: { bytes: 2, Array: Int16Array, set: (d, o, x) => d.setInt16(o, x, true), get: (d, o) => d.getInt16(o, true) },
  i32: { bytes: 4, Array: Int32Array, set: (d, o, x) => d.setInt32(o, x, true), get: (d, o) => d.getInt32(o, true) },
  // Two's-complement halves, as fillMember writes them.
  i64: { bytes: 8, Array: BigInt64Array,
    set: (d, o, x) => { d.setInt32(o, x, true); d.setInt32(o + 4, x < 0 ? -1 : 0, true); },
    get: (d, o) => d.getUint32(o, true) + d.getInt32(o + 4, true) * 2 ** 32 },
  f32: { bytes: 4, Array: Float32Array, set: (d, o, x) => d.setFloat32(o, x, true), get: (d, o) => d.getFloat32(o, true) },
  f64: { bytes: 8, Array: Float64Array, set: (d, o, x) => d.setFloat64(o, x, true), get: (d, o) => d.getFloat64(o, true) },
  // x86-64's long double: 10 bytes (64-bit significand with an explicit
  // integer bit, then sign and a 15-bit exponent biased by 16383) in a
  // 16-byte slot; set rewrites a normal double's fields, so it is exact.
  f80: { bytes: 10, Array: null,
    set: (d, o, x) => {
      f80Scratch.setFloat64(0, x, true);
      const lo = f80Scratch.getUint32(0, true), hi = f80Scratch.getUint32(4, true);
      d.setUint32(o, lo << 11, true);
      d.setUint32(o + 4, x === 0 ? 0 : 0x80000000 | (hi & 0xFFFFF) << 11 | lo >>> 21, true);
      d.setUint16(o + 8, (hi >>> 16 & 0x8000) | (x === 0 ? 0 : (hi >>> 20 & 0x7FF) - 1023 + 16383), true);
    },
    get: (d, o) => {
      const se = d.getUint16(o + 8, true);
      return (se & 0x8000 ? -1 : 1) * (d.getUint32(o + 4, true) * 2 ** 32 + d.getUint32(o, true)) * 2 ** ((se & 0x7FFF) - 16383 - 63);
    } },
};

// What a Node developer writes without nodempi: one plain loop per case
// (separate functions, so each stays monomorphic in V8), over the same
// TypedArrays nodempi gets. 64-bit integers are BigInt64Array/BigUint64Array,
// so their loops use BigInt arithmetic, as such code would.
const JS_LOOPS = {
  'SUM:DOUBLE': (a, b) => { for (let i = 0; i < b.length; i++) b[i] += a[i]; },
  'SUM:FLOAT': (a, b) => { for (let i = 0; i < b.length; i++) b[i] += a[i]; },
  'SUM:INT32_T': (a, b) => { for (let i = 0; i < b.length; i++) b[i] += a[i]; },
  'SUM:INT64_T': (a, b) => { for (let i = 0; i < b.length; i++) b[i] += a[i]; },
  'SUM:INT8_T': (a, b) => { for (let i = 0; i < b.length; i++) b[i] += a[i]; },
  // Re and im add independently: the same loop over the interleaved doubles.
  'SUM:C_DOUBLE_COMPLEX': (a, b) => { for (let i = 0; i < b.length; i++) b[i] += a[i]; },
  'PROD:C_DOUBLE_COMPLEX': (a, b) => {
    for (let i = 0; i < b.length; i += 2) {
      const re = a[i] * b[i] - a[i + 1] * b[i + 1];
      b[i + 1] = a[i] * b[i + 1] + a[i + 1] * b[i];
      b[i] = re;
    }
  },
  'MAX:DOUBLE': (a, b) => { for (let i = 0; i < b.length; i++) b[i] = Math.max(a[i], b[i]); },
  'MAX:INT32_T': (a, b) => { for (let i = 0; i < b.length; i++) b[i] = Math.max(a[i], b[i]); },
  'MIN:DOUBLE': (a, b) => { for (let i = 0; i < b.length; i++) b[i] = Math.min(a[i], b[i]); },
  'MIN:INT32_T': (a, b) => { for (let i = 0; i < b.length; i++) b[i] = Math.min(a[i], b[i]); },
  'PROD:DOUBLE': (a, b) => { for (let i = 0; i < b.length; i++) b[i] *= a[i]; },
  'BXOR:INT32_T': (a, b) => { for (let i = 0; i < b.length; i++) b[i] ^= a[i]; },
  'BXOR:UINT64_T': (a, b) => { for (let i = 0; i < b.length; i++) b[i] ^= a[i]; },
  'BAND:INT32_T': (a, b) => { for (let i = 0; i < b.length; i++) b[i] &= a[i]; },
  'BAND:UINT64_T': (a, b) => { for (let i = 0; i < b.length; i++) b[i] &= a[i]; },
  'LAND:INT32_T': (a, b) => { for (let i = 0; i < b.length; i++) b[i] = a[i] && b[i] ? 1 : 0; },
  'SUM:DOUBLE:3': (a, b, out) => { for (let i = 0; i < out.length; i++) out[i] = a[i] + b[i]; },
};

/**
 * The case's JS loop, or null where JS has no such numbers (long double):
 * its JS column then reads n/a. MAXLOC/MINLOC is the loop one writes for
 * the one pair type, over a TypedArray view of each member (b.v, b.k),
 * compiled from source per case: closures of one function literal share
 * V8's type feedback, and one loop serving every pair type went megamorphic
 * (bench/README.md, "Measurements behind the code").
 */
function jsLoop(c) {
  const t = TYPES[c.type];
  if (!t.pair) return JS_LOOPS[caseName(c)] ?? null;
  const [V, K] = [MEMBERS[t.pair[0]], MEMBERS[t.pair[1]]];
  if (!V.Array) return null;
  const v = `${t.item / V.bytes} * i`, k = `${t.item / K.bytes} * i + ${t.pair[2] / K.bytes}`;
  return new Function('a', 'b', `
    const av = a.v, ak = a.k, bv = b.v, bk = b.k;
    for (let i = 0; i < b.n; i++) {
      const x = av[${v}], y = bv[${v}];
      if (x ${c.op === 'MAXLOC' ? '>' : '<'} y) {
        bv[${v}] = x;
        bk[${k}] = ak[${k}];
      } else if (x === y && ak[${k}] < bk[${k}]) {
        bk[${k}] = ak[${k}];
      }
    }`);
}

// The loop a user-defined op runs, called both through Op.create +
// reduceLocal and directly: the difference is the cost of the callback path.
const userSum = (inv, inout, len) => { for (let i = 0; i < len; i++) inout[i] += inv[i]; };

const usage = `usage: node bench/kernels.mjs [options]
  --quick            smoke test: 4 KiB and 256 KiB, short trials (< 1 min); writes results/kernels-partial.json
  --sizes 4K,256K    sizes of one operand (bytes, or with K/M suffix; multiples of 32; default 4K,256K,16M,256M)
  --cases SUM:DOUBLE,MAXLOC:DOUBLE_INT   a subset of the matrix (OP:TYPE, OP:TYPE:3 for reduceLocals)
  --warm-ms W        warm-up per point (default 100; quick 10)
  --trial-ms T       length of one trial (default 20; quick 5)
  --trials N         trials per point, median reported (default 9; quick 3)
  --runs R           fresh-process repetitions of every job, median reported (default 3; quick 1)
  --no-idle-wait     start every job at once, even when other processes keep the CPUs busy
  --out FILE         results file (default bench/results/kernels.json for a full run, kernels-partial.json otherwise)
  --report FILE      run nothing: rewrite bench/KERNELS.md from a results file
A full run (no --quick, --sizes or --cases) also rewrites bench/KERNELS.md.`;

// ---------------------------------------------------------------- options
function options(argv) {
  const v = parseOptions('kernels', usage, {
    quick: { type: 'boolean' }, sizes: { type: 'string' }, cases: { type: 'string' }, 'warm-ms': { type: 'string' },
    'trial-ms': { type: 'string' }, trials: { type: 'string' }, runs: { type: 'string' }, 'no-idle-wait': { type: 'boolean' },
    out: { type: 'string' }, report: { type: 'string' },
    worker: { type: 'string' }, bytes: { type: 'string' },   // internal: one measuring process
  }, argv);
  const num = (x) => (x === undefined ? null : Number(x));
  const o = {
    quick: !!v.quick, sizes: v.sizes === undefined ? null : list(v.sizes, parseSize),
    cases: v.cases === undefined ? CASES
      : list(v.cases, (w) => CASES.find((c) => caseName(c) === w) ?? die(`unknown case ${w} (known: ${CASES.map(caseName).join(', ')})`)),
    warmMs: num(v['warm-ms']), trialMs: num(v['trial-ms']), trials: num(v.trials), runs: num(v.runs), idleWait: !v['no-idle-wait'],
    out: v.out ?? null, report: v.report ?? null, worker: v.worker ?? null, bytes: num(v.bytes),
    partial: !!(v.quick || v.sizes !== undefined || v.cases !== undefined),
  };
  o.sizes ??= o.quick ? QUICK_SIZES : SIZES;
  o.warmMs ??= o.quick ? 10 : 100;
  o.trialMs ??= o.quick ? 5 : 20;
  o.trials ??= o.quick ? 3 : 9;
  o.runs ??= o.quick ? 1 : 3;
  if (o.quick) o.idleWait = false;  // a smoke test must stay short; its figures are not kept
  if (!(Number.isInteger(o.runs) && o.runs >= 1)) die('--runs must be a positive integer');
  if (!(o.trials >= 1 && o.trials <= 64)) die('--trials must be 1..64');
  if (!(o.trialMs > 0) || !(o.warmMs >= 0)) die('--trial-ms must be > 0 and --warm-ms >= 0');
  o.out ??= join(BENCH, 'results', o.partial ? 'kernels-partial.json' : 'kernels.json');
  return o;
}

function parseSize(s) {
  const m = /^(\d+)\s*(k|ki|kib|m|mi|mib)?$/i.exec(s.trim());
  if (!m) die(`bad size ${s}`);
  const unit = m[2] ? (m[2][0].toLowerCase() === 'k' ? KiB : MiB) : 1;
  const bytes = Number(m[1]) * unit;
  // 32: the largest item (LONG_DOUBLE_INT) must divide every size.
  if (!(bytes >= 32) || bytes % 32) die(`sizes must be positive multiples of 32 bytes, got ${s}`);
  return bytes;
}

function die(msg) {
  usageError('kernels', usage, msg);
}

// ---------------------------------------------------------------- data
// The patterns are shared with bench/ompi/reduce_local.c, so both sides
// reduce the same values: small integers for arithmetic (exact in float and
// double, so checks compare bits), +-1 for PROD and the units 1, i, -1, -i for
// a complex PROD (products stay bounded however often the call repeats in
// place, never reaching subnormals whose slow path would measure the data
// rather than the kernel), a multiplicative hash for bitwise ops, zeros among
// non-zeros for LAND, and for MAXLOC/MINLOC values equal in every third item,
// with indices in either order, so the samples a check reads hit the index
// rule both ways.
const patternOf = (c) => (c.op === 'PROD' && c.type === 'C_DOUBLE_COMPLEX' ? 'cprod'
  : { PROD: 'prod', BXOR: 'bits', BAND: 'bits', LAND: 'logic', MAXLOC: 'pair', MINLOC: 'pair' }[c.op] ?? 'arith');
const LANE_VALUES = {
  arith: [(j) => (j % 13) - 6, (j) => (j % 7) * 3 - 8],
  prod: [(j) => (j % 3 ? 1 : -1), (j) => (j % 11) - 4.5],
  cprod: [(j) => { const r = (j >> 1) % 4; return (j & 1) !== (r & 1) ? 0 : r < 2 ? 1 : -1; }, (j) => (j % 11) - 4.5],
  logic: [(j) => (j % 3 === 0 ? 0 : (j % 5) + 1), (j) => (j % 4 === 0 ? 0 : -7)],
};
// Per item: value and index of the input (which 0) and of the initial inout.
const PAIR_VALUES = [[(i) => (i % 13) - 6, (i) => i % 17], [(i) => (i % 3 ? (i % 7) - 3 : (i % 13) - 6), (i) => (i * 11 + 5) % 19]];

/**
 * Writes f(i) into the member at byte `off` of every item. Through TypedArray
 * views where there is one: MEMBERS' DataView calls, megamorphic here, are
 * slower (bench/README.md, "Measurements behind the code"), which a full run
 * would pay for seconds at 256 MiB.
 */
function fillMember(buf, bytes, item, off, member, f) {
  const m = MEMBERS[member], n = bytes / item;
  if (member === 'f80') {
    const d = new DataView(buf, 0, bytes);
    for (let i = 0; i < n; i++) m.set(d, i * item + off, f(i));
  } else if (member === 'i64') {
    // Two's-complement halves: BigInt conversions would take seconds at 256 MiB.
    const w = new Int32Array(buf, 0, bytes / 4), s = item / 4, o = off / 4;
    for (let i = 0; i < n; i++) {
      const x = f(i);
      w[s * i + o] = x;
      w[s * i + o + 1] = x < 0 ? -1 : 0;
    }
  } else {
    const a = new m.Array(buf, 0, bytes / m.bytes), s = item / m.bytes, o = off / m.bytes;
    for (let i = 0; i < n; i++) a[s * i + o] = f(i);
  }
}

/** Fills the first `bytes` of `buf` with the case's input (which 0) or initial inout (which 1). */
function fill(c, buf, bytes, which) {
  const t = TYPES[c.type];
  const p = patternOf(c);
  if (p === 'bits') {
    const w = new Uint32Array(buf, 0, bytes / 4);
    for (let k = 0; k < w.length; k++) w[k] = which === 0 ? Math.imul(k, 0x9E3779B1) : Math.imul(k, 0x85EBCA6B) ^ 0x5BD1E995;
  } else if (!t.Array) {
    new Uint8Array(buf, 0, bytes).fill(0);  // the pairs' padding and long double's unused bytes too
    if (t.pair) {
      fillMember(buf, bytes, t.item, 0, t.pair[0], PAIR_VALUES[which][0]);
      fillMember(buf, bytes, t.item, t.pair[2], t.pair[1], PAIR_VALUES[which][1]);
    } else {
      fillMember(buf, bytes, t.item, 0, t.member, LANE_VALUES[p][which]);
    }
  } else {
    const f = LANE_VALUES[p][which];
    if (t.Array === BigInt64Array || t.Array === BigUint64Array) {
      // Two's-complement halves: BigInt conversions would take seconds at 256 MiB.
      const w = new Int32Array(buf, 0, bytes / 4);
      for (let j = 0; j < bytes / 8; j++) {
        const x = f(j);
        w[2 * j] = x;
        w[2 * j + 1] = x < 0 ? -1 : 0;
      }
    } else {
      const a = new t.Array(buf, 0, bytes / t.lane);
      for (let j = 0; j < a.length; j++) a[j] = f(j);
    }
  }
}

// One result lane from two operand lanes; stored into a one-element array of
// the lane type, which wraps integers and rounds floats as the kernels must.
const REF = {
  SUM: (a, b) => a + b,
  PROD: (a, b) => a * b,
  MAX: (a, b) => (a > b ? a : b),
  MIN: (a, b) => (a < b ? a : b),
  BXOR: (a, b) => a ^ b,
  BAND: (a, b) => a & b,
  LAND: (a, b) => (a && b ? 1 : 0),
};

/** Ends, middle (where vector loops hand over to their tails) and a stride through the rest. */
function sampleItems(n) {
  const s = new Set();
  for (let k = 0; k < 4 && k < n; k++) { s.add(k); s.add(n - 1 - k); }
  s.add(n >> 1); s.add(Math.max(0, (n >> 1) - 1));
  for (let k = 1; k <= 10; k++) s.add(Number((BigInt(n) * BigInt(k) * 7919n / 10n) % BigInt(n)));
  return [...s];
}

/** Throws unless out = a op b at the sample items and the guard after out is untouched. */
function check(c, a, b, out, bytes, what) {
  const t = TYPES[c.type];
  const n = bytes / t.item;
  const fail = (detail) => { throw new Error(`WRONG RESULT: ${what} ${c.api} ${c.op}/${c.type}, ${bytes} bytes: ${detail}`); };
  if (t.Array) {
    const A = new t.Array(a), B = new t.Array(b), O = new t.Array(out), want = new t.Array(2);
    const lanes = t.item / t.lane;
    for (const i of sampleItems(n)) {
      const j = i * lanes;
      if (lanes === 2 && c.op === 'PROD') {
        want[0] = A[j] * B[j] - A[j + 1] * B[j + 1];
        want[1] = A[j] * B[j + 1] + A[j + 1] * B[j];
      } else {
        for (let k = 0; k < lanes; k++) want[k] = REF[c.op](A[j + k], B[j + k]);
      }
      for (let k = 0; k < lanes; k++) if (!Object.is(O[j + k], want[k])) fail(`lane ${j + k} is ${O[j + k]}, expected ${want[k]}`);
    }
  } else {
    // The expected members are written into an item of their own and
    // compared with out byte for byte, over the bytes that carry a value.
    const A = new DataView(a), B = new DataView(b), O = new DataView(out), W = new DataView(new ArrayBuffer(t.item));
    const [V, K, koff] = t.pair ? [MEMBERS[t.pair[0]], MEMBERS[t.pair[1]], t.pair[2]] : [MEMBERS[t.member]];
    const same = (m, off, at) => { for (let q = 0; q < m.bytes; q++) if (O.getUint8(at + off + q) !== W.getUint8(off + q)) return false; return true; };
    for (const i of sampleItems(n)) {
      const at = i * t.item, x = V.get(A, at), y = V.get(B, at);
      if (!t.pair) {
        V.set(W, 0, REF[c.op](x, y));
        if (!same(V, 0, at)) fail(`item ${i} is ${V.get(O, at)}, expected ${V.get(W, 0)}`);
        continue;
      }
      // MPI's rule: the larger (MAXLOC) or smaller (MINLOC) value wins; on equal values, the smaller index.
      const kx = K.get(A, at + koff), ky = K.get(B, at + koff);
      const [wv, wk] = (x === y ? kx <= ky : (x > y) === (c.op === 'MAXLOC')) ? [x, kx] : [y, ky];
      V.set(W, 0, wv);
      K.set(W, koff, wk);
      if (!same(V, 0, at) || !same(K, koff, at)) fail(`item ${i} is (${V.get(O, at)}, ${K.get(O, at + koff)}), expected (${wv}, ${wk})`);
    }
  }
  if (!new Uint8Array(out, bytes, GUARD).every((x) => x === 0xA5)) fail('wrote past the end of the buffer');
}

// ---------------------------------------------------------------- timing
/**
 * The scheme of bench/ompi/reduce_local.c: warm-up in batches of 1, 2, 4, ...
 * calls until warmMs have passed and at least 2 calls were made (the last
 * batch gives the time per call); then trials of reps calls lasting about
 * trialMs each: 9 trials (5 when one call outlasts a trial, 3 when it outlasts
 * four), the median time per call reported.
 */
function measure(call, o) {
  let batch = 1, calls = 0, perCall = 0;
  const t0 = performance.now();
  for (;;) {
    const b0 = performance.now();
    for (let i = 0; i < batch; i++) call();
    const b1 = performance.now();
    perCall = (b1 - b0) / batch;
    calls += batch;
    const left = o.warmMs - (b1 - t0);
    if (left <= 0 && calls >= 2) break;
    // Never overshoot the warm-up by more than one call's worth.
    const fit = left > 0 ? Math.floor(left / Math.max(perCall, 1e-6)) + 1 : 1;
    batch = Math.min(batch * 2, fit);
  }
  const reps = Math.max(1, Math.round(o.trialMs / Math.max(perCall, 1e-6)));
  const trials = Math.min(o.trials, perCall > 4 * o.trialMs ? 3 : perCall > o.trialMs ? 5 : o.trials);
  const s = [];
  for (let k = 0; k < trials; k++) {
    const b0 = performance.now();
    for (let i = 0; i < reps; i++) call();
    s.push((performance.now() - b0) / 1e3 / reps);
  }
  s.sort((x, y) => x - y);
  return { s: s[trials >> 1], min_s: s[0], reps, trials, warm_calls: calls };
}

// ---------------------------------------------------------------- worker (one process, one size)
const emit = (x) => process.stdout.write(`${JSON.stringify(x)}\n`);

/**
 * kind 'auto': nodempi with the start-up table, the JS loops, memcpy, the
 * user-op pair and the call overhead. kind 'scalar': nodempi only (the
 * parent sets NODEMPI_KERNELS=scalar).
 */
async function worker(o) {
  const mpi = await import(new URL('../dist/index.js', import.meta.url).href);
  // Which table is active is not public API; the bench reads it from the
  // addon so a forced setting that did not take cannot go unnoticed.
  let isa = null;
  try {
    const { native } = await import(new URL('../dist/native.js', import.meta.url).href);
    isa = typeof native.kernelIsa === 'function' ? native.kernelIsa() : null;
  } catch { /* older build: leave it unknown */ }
  emit({ kind: 'info', isa });
  const auto = o.worker === 'auto';
  const impl = auto ? 'nodempi' : 'nodempi-scalar';
  const bytes = o.bytes;
  const point = (p, api, c, t) => emit({ impl: p, api, op: c?.op ?? '', type: c?.type ?? '', bytes, ...t,
    gbps: bytes / t.s / 1e9 });

  if (auto) {
    const one = new Float64Array([1]), acc = new Float64Array(1);
    const t = measure(() => mpi.reduceLocal(one, acc, mpi.Op.SUM), o);
    emit({ impl, api: 'overhead', op: 'SUM', type: 'DOUBLE', bytes: 8, ...t, gbps: 8 / t.s / 1e9 });
  }

  // Allocated once for the process; every case and implementation reuses them.
  const inBuf = new ArrayBuffer(bytes + GUARD), ioBuf = new ArrayBuffer(bytes + GUARD), io0Buf = new ArrayBuffer(bytes + GUARD);
  const inU8 = new Uint8Array(inBuf, 0, bytes), ioU8 = new Uint8Array(ioBuf, 0, bytes), io0U8 = new Uint8Array(io0Buf, 0, bytes);
  new Uint8Array(ioBuf, bytes, GUARD).fill(0xA5);
  const restore = () => ioU8.set(io0U8);

  if (auto) {
    inU8.fill(1);
    point('js', 'memcpy', null, measure(() => ioU8.set(inU8), o));
  }

  for (const c of o.cases) {
    const t = TYPES[c.type];
    const n = bytes / t.item;
    const dt = mpi.Datatype[c.type];
    const msg = (buf) => (!t.Array ? [new Uint8Array(buf, 0, bytes), n, dt]
      : t.item > t.lane ? [new t.Array(buf, 0, bytes / t.lane), n, dt]
        : new t.Array(buf, 0, bytes / t.lane));  // the datatype is inferred from the array, as users write it
    const view = (buf) => (t.pair
      ? { v: new MEMBERS[t.pair[0]].Array(buf, 0, bytes / MEMBERS[t.pair[0]].bytes),
        k: new MEMBERS[t.pair[1]].Array(buf, 0, bytes / MEMBERS[t.pair[1]].bytes), n }
      : new t.Array(buf, 0, bytes / t.lane));
    fill(c, inBuf, bytes, 0);
    fill(c, io0Buf, bytes, 1);

    const op = mpi.Op[c.op];
    const inM = msg(inBuf), ioM = msg(ioBuf), io0M = msg(io0Buf);
    // reduceLocals writes out = in op arg, with io0 as arg, so its check reads like reduceLocal's.
    const calls = [[impl, c.api === 'reduceLocals'
      ? () => mpi.reduceLocals(inM, io0M, ioM, op)
      : () => mpi.reduceLocal(inM, ioM, op)]];
    const loop = auto && jsLoop(c);
    if (loop) {
      const inV = view(inBuf), ioV = view(ioBuf), io0V = view(io0Buf);
      calls.push(['js', c.api === 'reduceLocals' ? () => loop(inV, io0V, ioV) : () => loop(inV, ioV)]);
    }
    for (const [who, call] of calls) {
      restore();
      call();
      check(c, inBuf, io0Buf, ioBuf, bytes, who);
      restore();
      point(who, c.api, c, measure(call, o));
    }
  }

  // Last, and the direct loop before the op: the op path detaches the
  // ArrayBuffers it lends the function, and V8's first detach in a process
  // makes every later TypedArray access check for detachment (slower loops;
  // bench/README.md, "Measurements behind the code"), which must not leak
  // into the plain-JS figures.
  if (auto) {
    const c = { api: 'userop', op: 'SUM', type: 'DOUBLE' };
    fill(c, inBuf, bytes, 0);
    fill(c, io0Buf, bytes, 1);
    const n = bytes / 8;
    const inV = new Float64Array(inBuf, 0, n), ioV = new Float64Array(ioBuf, 0, n);
    const userOp = mpi.Op.create(userSum, true);
    // Called directly with inV and ioV, V8 inlines the loop with the two
    // arrays as constants and drops every per-element check; a program that
    // calls its loop on arrays it passes around (jsarg: the same arrays read
    // from a list) runs the loop as compiled code of its own, as
    // reduceLocal does.
    const list = [inV, ioV];
    for (const [who, call] of [['js', () => userSum(inV, ioV, n)], ['jsarg', () => userSum(list[0], list[1], n)],
      ['nodempi', () => mpi.reduceLocal(inV, ioV, userOp)]]) {
      restore();
      call();
      check(c, inBuf, io0Buf, ioBuf, bytes, who);
      restore();
      point(who, 'userop', c, measure(call, o));
    }
    userOp.free();
  }
  const u = process.cpuUsage();
  emit({ kind: 'cpu', cpu_s: (u.user + u.system) / 1e6 });
}

// ---------------------------------------------------------------- machine
function cacheSizes() {
  const out = {};
  try {
    const dir = '/sys/devices/system/cpu/cpu0/cache';
    for (const d of readdirSync(dir).filter((x) => x.startsWith('index'))) {
      const rd = (f) => readFileSync(join(dir, d, f), 'utf8').trim();
      const type = rd('type');
      if (type === 'Instruction') continue;
      const m = /^(\d+)([KM]?)$/.exec(rd('size'));
      if (m) out[`L${rd('level')}${type === 'Data' ? 'd' : ''}`] = Number(m[1]) * (m[2] === 'M' ? MiB : m[2] === 'K' ? KiB : 1);
    }
  } catch { /* not Linux */ }
  return out;
}

function machineInfo() {
  const cpus = os.cpus();
  let flags = [];
  try {
    const m = readFileSync('/proc/cpuinfo', 'utf8').match(/^flags\s*:\s*(.*)$/m);
    if (m) flags = m[1].split(' ').filter((f) => /^(sse2|avx|avx2|avx512f|avx512bw|avx512dq|avx512vl)$/.test(f));
  } catch { /* not Linux */ }
  return {
    cpuModel: cpus[0]?.model ?? 'unknown', cpuCount: cpus.length, cpuMHz: cpus[0]?.speed ?? null, cpuFlags: flags,
    caches: cacheSizes(),
    uname: { sysname: os.type(), release: os.release(), version: os.version(), machine: os.machine() },
    totalMemGiB: +(os.totalmem() / 2 ** 30).toFixed(1),
  };
}

function gitInfo() {
  const commit = tryRun('git', ['rev-parse', '--short', 'HEAD']);
  // Tracked files only: the bench's own untracked outputs do not make a build dirty.
  const status = tryRun('git', ['status', '--porcelain', '--untracked-files=no']);
  return { commit, dirty: status === null ? null : status.length > 0 };
}

// ---------------------------------------------------------------- Open MPI
let tempDir = null;

/** Builds bench/ompi/reduce_local.c; null (with a hint printed) when there is no mpicc. */
function buildOmpi() {
  if (!which('mpicc')) {
    log('kernels: mpicc not found, so the Open MPI columns stay empty. To include them:\n' +
      '  apt-get update && apt-get install -y openmpi-bin libopenmpi-dev');
    return null;
  }
  tempDir = mkdtempSync(join(os.tmpdir(), 'nodempi-kernels-'));
  const exe = join(tempDir, 'reduce_local');
  const r = spawnSync('mpicc', ['-O2', '-o', exe, join(BENCH, 'ompi', 'reduce_local.c')], { encoding: 'utf8', cwd: ROOT });
  if (r.status !== 0) throw new Error(`mpicc -O2 bench/ompi/reduce_local.c failed:\n${r.stderr}`);
  const ompiInfo = tryRun('ompi_info', []) ?? '';
  const opComponents = [...ompiInfo.matchAll(/MCA op: (\S+)/g)].map((m) => m[1]);
  return { exe, mpirun: tryRun('mpirun', ['--version'])?.split('\n')[0] ?? null, opComponents };
}

// ---------------------------------------------------------------- jobs
onInterrupt(() => { if (tempDir) rmSync(tempDir, { recursive: true, force: true }); });

function jobCommand(kind, bytes, o, ompi, viaMpirun) {
  const timing = ['--warm-ms', String(o.warmMs), '--trial-ms', String(o.trialMs), '--trials', String(o.trials)];
  const env = { ...process.env };
  delete env.NODEMPI_KERNELS;
  if (kind === 'ompi') {
    const args = ['--sizes', String(bytes), '--cases', o.cases.map(caseName).join(','), '--memcpy', '--overhead', ...timing];
    return viaMpirun
      ? { cmd: 'mpirun', args: ['--allow-run-as-root', '-n', '1', ompi.exe, ...args], env }
      : { cmd: ompi.exe, args, env };
  }
  if (kind === 'scalar') env.NODEMPI_KERNELS = 'scalar';
  const args = [SELF, '--worker', kind, '--bytes', String(bytes), '--cases', o.cases.map(caseName).join(','), ...timing];
  return { cmd: process.execPath, args, env };
}

/** Points a job must produce: anything less means it failed part-way. */
function expectedPoints(kind, o) {
  const n = o.cases.length;
  if (kind === 'auto') return n + o.cases.filter(jsLoop).length + 5;   // nodempi per case, JS where it has a loop, overhead, memcpy, user op x3
  if (kind === 'scalar') return n;
  return n + 2;                            // cases, overhead, memcpy
}

/**
 * Runs one measuring process (bench/lib/jobs.mjs); resolves with its points
 * and how many cores other work used meanwhile.
 */
async function runJob(kind, bytes, o, ompi, viaMpirun = false) {
  const { cmd, args, env } = jobCommand(kind, bytes, o, ompi, viaMpirun);
  const want = expectedPoints(kind, o);
  const points = (lines) => lines.filter((l) => !l.kind);
  let res;
  try {
    res = await runBenchJob(`kernels: ${kind} ${fmtSize(bytes)}`, cmd, args, env, JOB_TIMEOUT_S,
      { check: (lines) => (points(lines).length === want ? null : `${points(lines).length}/${want} points`) });
  } catch (e) {
    e.startedNothing = e.points !== undefined && e.points.length === 0;
    throw e;
  }
  const info = res.points.find((l) => l.kind === 'info') ?? {};
  const otherCores = res.exact.extCores;
  return { kind, bytes, info, points: points(res.points), seconds: res.exact.seconds, cpuS: res.cpuS, otherCores,
    noisy: otherCores !== null && otherCores > EXT_MAX, stderr: res.stderr };
}

async function runOmpiJob(bytes, o, ompi) {
  try {
    return await runJob('ompi', bytes, o, ompi);
  } catch (e) {
    // A singleton that cannot start by itself (no local daemon) may still run under mpirun.
    if (!e.startedNothing || !which('mpirun')) throw e;
    log('kernels: the Open MPI program did not start as a singleton; retrying under mpirun -n 1');
    return runJob('ompi', bytes, o, ompi, true);
  }
}

// ---------------------------------------------------------------- report
function fmtSize(b) {
  if (b >= MiB && b % MiB === 0) return `${b / MiB} MiB`;
  if (b >= KiB && b % KiB === 0) return `${b / KiB} KiB`;
  return `${b} B`;
}
const fmtNum = (x) => (x === undefined || x === null || !Number.isFinite(x) ? '—'
  : x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
const ratio = (a, b) => (a > 0 && b > 0 ? a / b : null);
const median = (xs) => {
  const s = xs.slice().sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : null;
};

/** Per point, the median over the runs (each run's figure already the median of its trials). */
function summarize(points) {
  const acc = new Map();
  for (const p of points) {
    const key = `${p.impl}|${p.api}|${p.op}|${p.type}|${p.bytes}`;
    if (!acc.has(key)) acc.set(key, { impl: p.impl, api: p.api, op: p.op, type: p.type, bytes: p.bytes, runs: [] });
    acc.get(key).runs.push(p);
  }
  return [...acc.values()].map(({ runs, ...m }) => ({ ...m, s: median(runs.map((p) => p.s)),
    gbps: median(runs.map((p) => p.gbps)), runs_gbps: runs.map((p) => p.gbps) }));
}

function lookup(points) {
  const m = new Map(points.map((p) => [`${p.impl}|${p.api}|${p.op}|${p.type}|${p.bytes}`, p]));
  return (impl, api, op, type, bytes) => m.get(`${impl}|${api}|${op}|${type}|${bytes}`)?.gbps ?? null;
}

/** Sizes at which both operands of an in-place reduction fit in L2 (in cache). */
function inCacheSizes(r) {
  const l2 = r.machine.caches?.L2;
  return r.params.sizes.filter((b) => (l2 ? 2 * b <= l2 : b <= 256 * KiB));
}

function targets(r) {
  const get = lookup(r.medians);
  const cases = r.params.cases;
  const out = [];
  const add = (target, rows) => {
    const present = rows.filter((x) => x.ok !== null);
    if (!present.length) return;
    const bad = present.filter((x) => !x.ok);
    out.push({ target, met: bad.length === 0, checked: present.length, failing: bad.map((x) => x.text),
      nearMiss: bad.filter((x) => x.near).length });
  };
  const rows = [];
  for (const c of cases) for (const b of r.params.sizes) rows.push([c, b]);
  add('nodempi reduceLocal at least as fast as Open MPI\'s MPI_Reduce_local, every size and type',
    rows.filter(([c]) => c.api === 'reduceLocal').map(([c, b]) => {
      const x = get('nodempi', c.api, c.op, c.type, b), y = get('ompi', c.api, c.op, c.type, b);
      const q = ratio(x, y);
      return { ok: q === null ? null : q >= 1, near: q !== null && q >= 0.95,
        text: `${c.op} ${c.type} ${fmtSize(b)}: ${fmtNum(q)}x (${fmtNum(x)} vs ${fmtNum(y)} GB/s)` };
    }));
  const cached = inCacheSizes(r);
  add(`at least 10x the JavaScript loop in cache (${cached.map(fmtSize).join(', ')}: both operands fit in L2)`,
    rows.filter(([, b]) => cached.includes(b)).map(([c, b]) => {
      const x = get('nodempi', c.api, c.op, c.type, b), y = get('js', c.api, c.op, c.type, b);
      const q = ratio(x, y);
      return { ok: q === null ? null : q >= 10, near: q !== null && q >= 9.5,
        text: `${c.api === 'reduceLocals' ? 'reduceLocals ' : ''}${c.op} ${c.type} ${fmtSize(b)}: ${fmtNum(q)}x (${fmtNum(x)} vs ${fmtNum(y)} GB/s)` };
    }));
  for (const [impl, what] of [['js', 'run directly'], ['jsarg', 'run directly on arrays passed as arguments']]) {
    add(`user-defined op (Op.create + reduceLocal) within 2x of the same loop ${what}`,
      r.params.sizes.map((b) => {
        const direct = get(impl, 'userop', 'SUM', 'DOUBLE', b), viaOp = get('nodempi', 'userop', 'SUM', 'DOUBLE', b);
        const q = ratio(direct, viaOp); // time via the op / time direct
        return { ok: q === null ? null : q <= 2, near: q !== null && q <= 2.1,
          text: `${fmtSize(b)}: ${fmtNum(q)}x the time (${fmtNum(viaOp)} vs ${fmtNum(direct)} GB/s)` };
      }));
  }
  return out;
}

// The figures quoted in the issue (GB/s of input, double SUM), for comparison.
const ISSUE_REF = {
  [4 * KiB]: { js: 5.5, scalar: 55, auto: 93, ompi: 88, memcpy: 96 },
  [256 * KiB]: { js: 5.5, scalar: 44, auto: 58, ompi: 58, memcpy: 55 },
  [256 * MiB]: { js: 5.5, scalar: 15, auto: 15, ompi: 15, memcpy: 12 },
};

function markdown(r) {
  const get = lookup(r.medians);
  const m = r.machine;
  const L = [];
  const isa = r.nodempi.isa;
  const hasOmpi = r.points.some((p) => p.impl === 'ompi');
  L.push('# Reduction kernel throughput');
  L.push('');
  L.push('<!-- Written by `node bench/kernels.mjs` (a full run); edits are overwritten. -->');
  L.push('');
  L.push('How fast `mpi.reduceLocal` combines two buffers, for each op and datatype, next to what a Node');
  L.push('developer would write without nodempi (a plain loop over the same TypedArrays), next to memcpy of');
  L.push('the same bytes, and next to Open MPI\'s `MPI_Reduce_local` on the same machine, in one run.');
  L.push('The collectives\' latency benchmark is in [README.md](README.md).');
  L.push('');
  L.push('## How to run');
  L.push('');
  L.push('```sh');
  L.push('npm run build                      # the bench uses dist/ and build/Release');
  L.push('node bench/kernels.mjs             # full run: rewrites this file and results/kernels.json');
  L.push('node bench/kernels.mjs --quick     # smoke test, < 1 min: results/kernels-partial.json only');
  L.push('node bench/kernels.mjs --report bench/results/kernels.json   # rewrite this file, no run');
  L.push('```');
  L.push('');
  L.push('| option | meaning |');
  L.push('|---|---|');
  L.push('| `--quick` | 4 KiB and 256 KiB only, 10 ms warm-up, 3 trials of 5 ms |');
  L.push('| `--sizes 4K,16M` | operand sizes (bytes, or K/M suffixes; multiples of 32) |');
  L.push('| `--cases SUM:DOUBLE,MAXLOC:DOUBLE_INT` | a subset of the matrix (`OP:TYPE:3` is reduceLocals) |');
  L.push('| `--warm-ms W`, `--trial-ms T`, `--trials N` | warm-up per point (100), length of a trial (20), trials per point (9) |');
  L.push('| `--runs R` | fresh-process repetitions of every job (3); the median over them is shown |');
  L.push(`| \`--no-idle-wait\` | do not wait (up to ${IDLE_WAIT_JOB} s per job, ${IDLE_WAIT_TOTAL} s in all) for other processes to leave a core idle |`);
  L.push('| `--out FILE` | results file |');
  L.push('');
  L.push('Only a full run (no `--quick`, `--sizes` or `--cases`) writes `results/kernels.json` and this file;');
  L.push('any other run writes `results/kernels-partial.json`. Open MPI is optional: without `mpicc` the');
  L.push('script prints how to install it (`apt-get update && apt-get install -y openmpi-bin libopenmpi-dev`)');
  L.push('and leaves its columns empty. The bench exits non-zero, printing the failing process\'s stderr, if');
  L.push('any implementation returns a wrong result or a point is missing.');
  L.push('');
  L.push('## What is measured, and how');
  L.push('');
  L.push('| column | what | where |');
  L.push('|---|---|---|');
  L.push('| nodempi | `mpi.reduceLocal(in, inout, op)` with the kernel table chosen at start-up' +
    `${isa?.auto ? ` (here: ${isa.auto})` : ''} | \`kernels.mjs --worker auto\` |`);
  L.push('| nodempi scalar | the same with `NODEMPI_KERNELS=scalar`, the SSE2 baseline table' +
    `${isa?.scalar ? ` (reported active: ${isa.scalar})` : ''} | \`kernels.mjs --worker scalar\` |`);
  L.push('| JS loop | `for (let i = 0; i < b.length; i++) b[i] += a[i]` (or `Math.max`, `*=`, `^=`, `&=`, `a[i] && b[i] ? 1 : 0`, the complex product, MAXLOC/MINLOC over a TypedArray view of each member of the pair) on the same TypedArrays; BigInt arithmetic for BigInt64Array/BigUint64Array; n/a for long double, which JS has no numbers for | `JS_LOOPS`, `jsLoop` in `kernels.mjs` |');
  L.push('| memcpy | `dst.set(src)` on Uint8Arrays of the same bytes (V8 copies with memcpy); C `memcpy` is in the JSON as `ompi`/`memcpy` | `kernels.mjs --worker auto` |');
  L.push('| Open MPI | `MPI_Reduce_local(in, inout, n, type, op)`, C, `mpicc -O2`, run as an MPI singleton' +
    `${r.ompi?.opComponents?.length ? ` (op components: ${r.ompi.opComponents.join(', ')})` : ''} | \`ompi/reduce_local.c\` |`);
  L.push('');
  L.push('- Sizes are one operand\'s bytes: 4 KiB (L1), 256 KiB (L2), 16 MiB (L3 on many servers), 256 MiB');
  L.push('  (main memory). **GB/s is bytes of one input operand per second** (10^9 B/s), for the kernels and');
  L.push('  memcpy alike. An in-place reduction reads two streams and writes one where memcpy reads one and');
  L.push('  writes one, so once memory-bound a kernel tops out below memcpy\'s figure.');
  L.push('- Every size runs in three fresh processes (nodempi + JS loop + memcpy; nodempi scalar; Open MPI),');
  L.push('  because the kernel table is picked once per process. Each allocates its three buffers (input,');
  L.push('  inout, a saved initial inout, each with a 64-byte guard after it) once, through malloc-backed');
  L.push('  ArrayBuffers in Node and malloc in C, so both sides get the same alignment.');
  L.push('- Per point: the buffers are filled with the case\'s pattern (the same in C and JS: small integers,');
  L.push('  ±1 (±1, ±i for complex) for PROD so repeated in-place products never reach subnormals, a hash for');
  L.push('  bitwise ops, value ties for MAXLOC/MINLOC); one call, then 16–20 items (both ends, the middle, a');
  L.push('  stride) are compared bit for bit (a long double: its 10 significant bytes) with a scalar reference');
  L.push('  and the guard is checked, so a broken kernel cannot post a number.');
  L.push('- Then the same scheme on both sides: warm-up in batches of 1, 2, 4, … calls until' +
    ` ${r.params.warmMs} ms have passed`);
  L.push(`  (and at least 2 calls); trials of as many calls as fill ~${r.params.trialMs} ms; the **median of` +
    ` ${r.params.trials} trials**`);
  L.push('  (5 when one call is longer than a trial, 3 when it is longer than four), as time per call.');
  L.push(`- The whole set of processes runs ${r.params.runs} time(s), the order of the three rotated each time;` +
    ' the tables show the **median over the runs** (every run\'s figure is in the JSON).');
  L.push(`- The machine may be shared: before each process the script waits (up to ${IDLE_WAIT_JOB} s, ${IDLE_WAIT_TOTAL} s in all) until`);
  L.push('  other processes leave a core idle, and records how many cores they used while it ran (CPU busy');
  L.push('  time from `/proc/stat` minus the process\'s own CPU time); above 0.25 cores the process is *noisy*.');
  L.push('- The reduction runs in place, repeatedly, as a collective accumulating into a buffer does.');
  L.push('  `reduceLocals` writes `out = in op arg` (three buffers); Open MPI has no such call, so its column');
  L.push('  there is `memcpy(out, arg)` + `MPI_Reduce_local(in, out)`, what one would write with MPI.');
  L.push('- User-defined op: `Op.create((inv, inout, len) => { for (…) inout[i] += inv[i]; })` through');
  L.push('  `reduceLocal` on Float64Arrays, against the very same function called directly on the whole arrays.');
  L.push('  It runs last in its process: the op path detaches ArrayBuffers, and after the first detach V8');
  L.push('  adds a detach check to every TypedArray loop in the process, which would slow the JS columns.');
  L.push('');
  L.push('## Results');
  L.push('');
  const minutes = (r.seconds / 60).toFixed(1);
  L.push(`Run of ${r.date} (${minutes} min, ${r.params.runs} run(s) of every process). Machine: ${m.cpuCount} × ${m.cpuModel}` +
    `${m.caches?.L1d ? `, L1d ${fmtSize(m.caches.L1d)} / L2 ${fmtSize(m.caches.L2)} / L3 ${fmtSize(m.caches.L3)} per cache` : ''}` +
    `, ${m.totalMemGiB} GiB, ${m.uname.sysname} ${m.uname.release} ${m.uname.machine}; flags ${m.cpuFlags.join(' ')}; ` +
    `Node ${r.versions.node}; ${r.ompi?.library ?? r.ompi?.mpirun ?? 'Open MPI not run'}; nodempi ${r.versions.nodempi} ` +
    `(${r.versions.commit ?? '?'}${r.versions.dirty ? ', uncommitted changes' : ''}); kernel table ${isa?.auto ?? '?'}.`);
  L.push('');
  const ext = r.jobs.map((j) => j.otherCores).filter((x) => x !== null);
  const noisy = r.jobs.filter((j) => j.noisy);
  L.push(`Load: the 1-minute load average was ${r.load.start[0].toFixed(2)} at the start and ${r.load.end[0].toFixed(2)} ` +
    `at the end (${NCPU} cores; above ~1 other processes were competing with the bench).` +
    (ext.length ? ` Other processes used a median ${median(ext).toFixed(2)} cores during a job (max ${Math.max(...ext).toFixed(2)});` +
      ` ${noisy.length} of ${r.jobs.length} jobs were noisy (others used > ${EXT_MAX} cores)` +
      `${noisy.length ? `: ${noisy.map((j) => `${j.kind} ${fmtSize(j.bytes)} (${j.otherCores.toFixed(2)})`).join(', ')}` : ''}.` : '') +
    ` The bench waited ${r.jobs.reduce((a, j) => a + (j.waitedS ?? 0), 0).toFixed(0)} s in all for idle cores.` +
    ' Treat figures from noisy jobs as lower bounds: a process that shares its core with another runs up to ~2x slower.');
  L.push('');

  L.push('### Targets');
  L.push('');
  const tg = r.targets;
  L.push('| target | met | points checked | failing |');
  L.push('|---|---|--:|--:|');
  for (const t of tg) L.push(`| ${t.target} | ${t.met ? 'yes' : '**no**'} | ${t.checked} | ${t.failing.length}` +
    `${t.nearMiss ? ` (${t.nearMiss} within 5%)` : ''} |`);
  L.push('');
  for (const t of tg.filter((x) => x.failing.length)) {
    L.push(`Failing, *${t.target}*: ${t.failing.join('; ')}.`);
    L.push('');
  }

  L.push('### Against the figures in the issue (double SUM, GB/s)');
  L.push('');
  L.push('Issue figures in parentheses; they were measured with a C harness, so the nodempi and');
  L.push('JavaScript figures here include the cost of a call from JavaScript.');
  L.push('');
  L.push('| size | JS loop | nodempi scalar | nodempi | Open MPI | memcpy |');
  L.push('|--:|--:|--:|--:|--:|--:|');
  for (const b of r.params.sizes) {
    const ref = ISSUE_REF[b] ?? {};
    const cell = (x, y) => `${fmtNum(x)}${y !== undefined ? ` (${y})` : ''}`;
    L.push(`| ${fmtSize(b)} | ${cell(get('js', 'reduceLocal', 'SUM', 'DOUBLE', b), ref.js)} | ` +
      `${cell(get('nodempi-scalar', 'reduceLocal', 'SUM', 'DOUBLE', b), ref.scalar)} | ` +
      `${cell(get('nodempi', 'reduceLocal', 'SUM', 'DOUBLE', b), ref.auto)} | ` +
      `${cell(get('ompi', 'reduceLocal', 'SUM', 'DOUBLE', b), ref.ompi)} | ${cell(get('js', 'memcpy', '', '', b), ref.memcpy)} |`);
  }
  L.push('');

  L.push('### Throughput by op and type (GB/s of one input operand)');
  L.push('');
  L.push('Ratios: nodempi / Open MPI (1 or more meets the first target) and nodempi / JS loop.');
  L.push('');
  const header = '| type | size | nodempi | nodempi scalar | JS loop | memcpy | Open MPI | nodempi / OMPI | nodempi / JS |';
  const align = '|---|--:|--:|--:|--:|--:|--:|--:|--:|';
  const row = (c, b) => {
    const x = get('nodempi', c.api, c.op, c.type, b), o = get('ompi', c.api, c.op, c.type, b), j = get('js', c.api, c.op, c.type, b);
    return `| ${c.type} | ${fmtSize(b)} | ${fmtNum(x)} | ${fmtNum(get('nodempi-scalar', c.api, c.op, c.type, b))} | ${jsLoop(c) ? fmtNum(j) : 'n/a'} | ` +
      `${fmtNum(get('js', 'memcpy', '', '', b))} | ${fmtNum(o)} | ${fmtNum(ratio(x, o))} | ${fmtNum(ratio(x, j))} |`;
  };
  const ops = [...new Set(r.params.cases.filter((c) => c.api === 'reduceLocal').map((c) => c.op))];
  for (const op of ops) {
    L.push(`**${op}**`);
    L.push('');
    L.push(header);
    L.push(align);
    for (const c of r.params.cases.filter((x) => x.api === 'reduceLocal' && x.op === op)) {
      for (const b of r.params.sizes) L.push(row(c, b));
    }
    L.push('');
  }
  for (const c of r.params.cases.filter((x) => x.api === 'reduceLocals')) {
    L.push(`**reduceLocals ${c.op}** (\`out = in + arg\`, three buffers; JS loop \`out[i] = a[i] + b[i]\`;` +
      ' Open MPI: `memcpy` + `MPI_Reduce_local`)');
    L.push('');
    L.push(header);
    L.push(align);
    for (const b of r.params.sizes) L.push(row(c, b));
    L.push('');
  }

  L.push('### User-defined op overhead (double SUM, Float64Array)');
  L.push('');
  L.push('The loop is called directly in two ways: on the two arrays a closure holds (V8 inlines it with');
  L.push('the arrays as constants and drops every per-element check) and on the same arrays read from a');
  L.push('list, as a program passes arrays around (the loop then runs as compiled code of its own, as it');
  L.push('does when reduceLocal calls it). Ratios are time through the op / time direct.');
  L.push('');
  L.push('| size | direct, constant arrays, GB/s | direct, arrays as arguments, GB/s | through Op.create + reduceLocal, GB/s | ratio to constant | ratio to arguments |');
  L.push('|--:|--:|--:|--:|--:|--:|');
  for (const b of r.params.sizes) {
    const d = get('js', 'userop', 'SUM', 'DOUBLE', b), a = get('jsarg', 'userop', 'SUM', 'DOUBLE', b), u = get('nodempi', 'userop', 'SUM', 'DOUBLE', b);
    L.push(`| ${fmtSize(b)} | ${fmtNum(d)} | ${fmtNum(a)} | ${fmtNum(u)} | ${fmtNum(ratio(d, u))} | ${fmtNum(ratio(a, u))} |`);
  }
  L.push('');

  const ns = (impl) => {
    const xs = r.points.filter((p) => p.impl === impl && p.api === 'overhead').map((p) => p.s * 1e9);
    return xs.length ? `${median(xs).toFixed(0)} ns (range ${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)}, ${xs.length} processes)` : '—';
  };
  L.push('### Fixed cost of one call');
  L.push('');
  const fixed = median(r.points.filter((p) => p.impl === 'nodempi' && p.api === 'overhead').map((p) => p.s));
  L.push(`One double, SUM: nodempi \`reduceLocal\` ${ns('nodempi')}; Open MPI \`MPI_Reduce_local\` ${ns('ompi')}.` +
    ' At 4 KiB a kernel at memcpy speed needs only ~40–60 ns, so this cost decides the smallest size' +
    (fixed ? `: with it alone, 4 KiB per call cannot go beyond ${fmtNum(4096 / fixed / 1e9)} GB/s.` : '.'));
  L.push('');
  if (!hasOmpi) {
    L.push('Open MPI was not run (no `mpicc`); its columns are empty.');
    L.push('');
  }
  return `${L.join('\n')}`;
}

// ---------------------------------------------------------------- main
async function main() {
  const o = options(process.argv.slice(2));
  if (o.worker) {
    if (!['auto', 'scalar'].includes(o.worker) || !(o.bytes > 0)) die('bad --worker/--bytes');
    try {
      await worker(o);
    } catch (e) {
      console.error(e && e.stack ? e.stack : String(e));
      process.exit(3);
    }
    return;
  }
  if (o.report) {
    const r = JSON.parse(readFileSync(o.report, 'utf8'));
    r.medians = summarize(r.points);
    r.targets = targets(r);
    writeFileSync(join(BENCH, 'KERNELS.md'), `${markdown(r)}\n`);
    log(`kernels: rewrote ${relative(process.cwd(), join(BENCH, 'KERNELS.md'))} from ${o.report}`);
    return;
  }
  if (!existsSync(join(ROOT, 'dist', 'index.js'))) die('dist/index.js is missing: run `npm run build` first');

  const t0 = performance.now();
  const date = new Date().toISOString();
  const loadStart = os.loadavg();
  const ompi = buildOmpi();
  const jobs = [];
  const isa = { auto: null, scalar: null };
  let library = null;
  const kinds = ['auto', 'scalar', ...(ompi ? ['ompi'] : [])];
  // The jobs are single-threaded, and a job that shares its core reads slow:
  // wait until other processes leave at least one core idle.
  const waitIdle = idleWaiter(IDLE_WAIT_JOB, IDLE_WAIT_TOTAL, 1 - 1 / NCPU + 0.1);
  try {
    for (let run = 0; run < o.runs; run++) {
      // Rotated, so a slow drift in the machine's load does not always hit the same column.
      const order = kinds.map((_, i) => kinds[(i + run) % kinds.length]);
      for (const bytes of o.sizes) {
        for (const kind of order) {
          const { waitedS } = o.idleWait ? await waitIdle() : { waitedS: 0 };
          const j = kind === 'ompi' ? await runOmpiJob(bytes, o, ompi) : await runJob(kind, bytes, o, ompi);
          if (kind === 'ompi') library = j.info.library ?? library;
          else isa[kind] = j.info.isa ?? isa[kind];
          if (kind === 'scalar' && j.info.isa && j.info.isa !== 'scalar') {
            throw new Error(`NODEMPI_KERNELS=scalar did not take: the worker reports the ${j.info.isa} table\n${j.stderr}`);
          }
          j.run = run;
          j.waitedS = waitedS;
          for (const p of j.points) p.run = run;
          jobs.push(j);
          log(`kernels: run ${run + 1}/${o.runs} ${fmtSize(bytes).padStart(7)} ${kind.padEnd(6)} ${j.seconds.toFixed(1)} s` +
            `${j.otherCores !== null ? `, others used ${j.otherCores.toFixed(2)} cores` : ''}${j.noisy ? ' (noisy)' : ''}`);
        }
      }
    }
  } finally {
    if (tempDir) rmSync(tempDir, { recursive: true, force: true });
  }

  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  const git = gitInfo();
  const r = {
    date,
    seconds: (performance.now() - t0) / 1000,
    partial: o.partial,
    command: `node bench/kernels.mjs ${process.argv.slice(2).join(' ')}`.trim(),
    machine: machineInfo(),
    load: { start: loadStart, end: os.loadavg() },
    versions: { node: process.version, nodempi: pkg.version, commit: git.commit, dirty: git.dirty },
    nodempi: { isa },
    ompi: ompi ? { library, mpirun: ompi.mpirun, opComponents: ompi.opComponents } : null,
    params: { sizes: o.sizes, cases: o.cases, warmMs: o.warmMs, trialMs: o.trialMs, trials: o.trials, runs: o.runs,
      guardBytes: GUARD, idleWait: o.idleWait },
    jobs: jobs.map(({ points, info, ...j }) => j),
    points: jobs.flatMap((j) => j.points),
  };
  r.medians = summarize(r.points);
  r.targets = targets(r);
  mkdirSync(dirname(o.out), { recursive: true });
  writeFileSync(o.out, `${JSON.stringify(r, null, 1)}\n`);
  log(`kernels: wrote ${relative(process.cwd(), o.out)} (${(r.seconds / 60).toFixed(1)} min)`);
  if (!o.partial) {
    writeFileSync(join(BENCH, 'KERNELS.md'), `${markdown(r)}\n`);
    log(`kernels: wrote ${relative(process.cwd(), join(BENCH, 'KERNELS.md'))}`);
  }
  for (const t of r.targets) {
    log(`  ${t.met ? 'met    ' : 'NOT met'} ${t.target}${t.failing.length ? ` (${t.failing.length}/${t.checked} failing)` : ''}`);
  }
}

await main();
