#!/usr/bin/env node
// What one mpi.reduceLocal call costs besides its kernel:
// `node bench/local_calls.mjs [--runs N] [--calls N]`.
//
// A loop that combines into the same accumulator again and again (a
// reduction over many inputs, a training step's gradient sum) calls
// reduceLocal on the very same arrays; the addon then keeps their
// addresses and skips unwrapping them (lib/local.ts, "the last call's
// arrays"). This measures, per call, the same arrays every call against
// two pairs of arrays taken in turn (so no call finds the last call's
// arrays: every call unwraps), for two whole Float64Arrays (the two-buffer
// form), three (reduceLocals) and the [buf, count, datatype] form, at 8 B
// and 4 KiB. Medians of --runs runs in one process, alternating the cases
// round after round; prints a Markdown table for bench/README.md.
import { log, parseOptions, usageError } from './lib/jobs.mjs';

const usage = `usage: node bench/local_calls.mjs [options]
  --runs N     rounds, median reported (default 9)
  --calls N    calls timed per case and round (default 200000)`;
const v = parseOptions('local_calls', usage, { runs: { type: 'string', default: '9' }, calls: { type: 'string', default: '200000' } });
const runs = Number(v.runs), calls = Number(v.calls);
if (!(runs >= 1 && calls >= 1000)) usageError('local_calls', usage, 'bad option value');

const mpi = await import(new URL('../dist/index.js', import.meta.url).href);
const { Op, Datatype } = mpi;

function time(f) {
  for (let i = 0; i < calls / 10; i++) f(i);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) f(i);
  return Number(process.hrtime.bigint() - t0) / calls;
}

function cases(n) {
  const set = () => ({ a: new Float64Array(n).fill(1), b: new Float64Array(n), c: new Float64Array(n) });
  const p = [set(), set()];
  const spec = (x, k) => [x[k], n, Datatype.DOUBLE];
  const sp = p.map((x) => ({ a: spec(x, 'a'), b: spec(x, 'b') }));
  return [
    ['reduceLocal(a, b)', (i) => mpi.reduceLocal(p[0].a, p[0].b, Op.SUM), (i) => mpi.reduceLocal(p[i & 1].a, p[i & 1].b, Op.SUM)],
    ['reduceLocals(a, c, b)', (i) => mpi.reduceLocals(p[0].a, p[0].c, p[0].b, Op.SUM), (i) => mpi.reduceLocals(p[i & 1].a, p[i & 1].c, p[i & 1].b, Op.SUM)],
    ['reduceLocal([a, n, DOUBLE], [b, n, DOUBLE])', (i) => mpi.reduceLocal(sp[0].a, sp[0].b, Op.SUM), (i) => mpi.reduceLocal(sp[i & 1].a, sp[i & 1].b, Op.SUM)],
  ];
}

const rows = [];
for (const bytes of [8, 4096]) {
  const cs = cases(bytes / 8);
  const same = cs.map(() => []), turn = cs.map(() => []);
  for (let r = 0; r < runs; r++) {
    cs.forEach(([, s, t], k) => {
      same[k].push(time(s));
      turn[k].push(time(t));
    });
  }
  const med = (xs) => xs.slice().sort((x, y) => x - y)[xs.length >> 1];
  cs.forEach(([name], k) => rows.push(`| ${name} | ${bytes === 8 ? '8 B' : '4 KiB'} | ${med(same[k]).toFixed(0)} | ${med(turn[k]).toFixed(0)} | ${(med(turn[k]) / med(same[k])).toFixed(2)} |`));
}
log(`local_calls: ${runs} runs of ${calls} calls per case`);
console.log('| call | size | same arrays, ns/call | two sets in turn, ns/call | ratio |');
console.log('|---|---|---|---|---|');
for (const r of rows) console.log(r);
