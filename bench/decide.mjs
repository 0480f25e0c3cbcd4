#!/usr/bin/env node
// Decides issue 20's ratio targets from many fresh-job runs of
// bench/backends.mjs, where one median per point cannot: on this VM a fresh
// job's level at a point falls on one of two values 2-4x apart (BACKENDS.md,
// "Notes on the run above"), so a ratio of two medians of five moves by far
// more than 5%. Here every point gets the ratio of the medians and a 95%
// bootstrap interval for it (each implementation's runs resampled on their
// own, a fixed seed so a report can be reproduced), and a verdict:
//   met       the whole interval is at or below the bound
//   not met   the whole interval is above it
//   undecided the interval holds the bound: the runs do not tell
//
//   node bench/decide.mjs RESULTS.json [--mpi openmpi] [--np 2] [--boot 10000]
//
// With --vs REF [--impl A] [--bound X] it decides one bound instead, "A at
// most X times REF at every point" (default A nodempi-mpi, X 1), on any
// results file of repeated jobs: bench/run.mjs's and core_latency.mjs's too
// (no --mpi there), e.g.
//   node bench/decide.mjs results/partial.json --np 4 --impl nodempi --vs ompi-yield
//   node bench/decide.mjs results/core-latency-tight.json --impl nodempi --vs ompi --bound 1.2
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { fmtSize, fmtUs, median } from './lib/jobs.mjs';
import { TARGETS } from './lib/targets.mjs';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    mpi: { type: 'string', default: 'openmpi' },
    np: { type: 'string', default: '2' },
    boot: { type: 'string', default: '10000' },
    impl: { type: 'string', default: 'nodempi-mpi' },
    vs: { type: 'string' },
    bound: { type: 'string', default: '1' },
  },
});
if (positionals.length !== 1) {
  console.error('usage: node bench/decide.mjs RESULTS.json [--mpi openmpi] [--np 2] [--boot 10000] [--vs REF [--impl A] [--bound X]]');
  process.exit(2);
}
const results = JSON.parse(readFileSync(positionals[0], 'utf8'));
const np = Number(values.np), boots = Number(values.boot), impl = values.impl;

// mulberry32: a small seeded generator, so that two reports of one file agree.
function random(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function resampledMedian(xs, rand) {
  return median(Array.from(xs, () => xs[Math.floor(rand() * xs.length)]));
}

// 2.5th and 97.5th percentiles of median(a) / median(b) over resamples.
function interval(a, b, rand) {
  const ratios = Array.from({ length: boots }, () => resampledMedian(a, rand) / resampledMedian(b, rand));
  ratios.sort((x, y) => x - y);
  return [ratios[Math.floor(0.025 * boots)], ratios[Math.ceil(0.975 * boots) - 1]];
}

// This library's and world size's runs, by implementation and point.
// bench/core_latency.mjs's files keep each implementation's runs by
// collective instead (one size; barrier has none); bench/run.mjs's name no library.
const entries = results.medians ?? Object.entries(results.us).flatMap(([name, byColl]) =>
  Object.entries(byColl).map(([coll, runs]) =>
    ({ np: results.options.np, impl: name, coll, bytes: coll === 'barrier' ? 0 : results.options.bytes ?? 8, runs_us: runs })));
const ours = entries.filter((m) => m.np === np && (m.mpi === undefined || m.mpi === values.mpi));
const where = ours[0]?.mpi === undefined ? `${np} ranks` : `${values.mpi}, ${np} ranks`;
const runsOf = new Map(ours.map((m) => [`${m.impl} ${m.coll} ${m.bytes}`, m.runs_us]));
const points = [...new Map(ours.map((m) => [`${m.coll} ${m.bytes}`, m])).values()];

const [below2x, within5, mpi4py] = TARGETS;
const targets = values.vs ? [
  { name: `${impl} at most ${values.bound}x ${values.vs} at every point`, ref: values.vs, bound: Number(values.bound), pick: () => true },
] : [
  within5, mpi4py,
  // Not the issue's: the same bound against C at the mpi backend's thread
  // level, where Open MPI takes the same locks (bench/backends.mjs --impl c-funneled).
  { ...within5, name: within5.name.replace('of C', 'of C at MPI_THREAD_FUNNELED'), ref: 'c-funneled' },
  // Last: the resamples share one generator, and BACKENDS.md's intervals
  // of the others were drawn before this one was decided here.
  below2x,
];

const rand = random(20);
for (const t of targets) {
  const rows = [];
  const tally = { met: 0, 'not met': 0, undecided: 0 };
  for (const { coll, bytes } of points) {
    if (!t.pick(bytes)) continue;
    const a = runsOf.get(`${impl} ${coll} ${bytes}`), b = runsOf.get(`${t.ref} ${coll} ${bytes}`);
    if (!a?.length || !b?.length) continue;
    const ratio = median(a) / median(b);
    const [lo, hi] = interval(a, b, rand);
    const verdict = hi <= t.bound ? 'met' : lo > t.bound ? 'not met' : 'undecided';
    tally[verdict]++;
    rows.push(`| ${coll} | ${fmtSize(bytes)} | ${a.length}, ${b.length} | ${fmtUs(median(a))} | ${fmtUs(median(b))} | ` +
      `${ratio.toFixed(2)} | ${lo.toFixed(2)}–${hi.toFixed(2)} | ${(Math.min(...a) / Math.min(...b)).toFixed(2)} | ${verdict} |`);
  }
  if (!rows.length) continue;
  console.log(`\n**${t.name}** (${where}): met at ${tally.met}, not met at ${tally['not met']}, ` +
    `undecided at ${tally.undecided} of ${rows.length} points\n`);
  console.log(`| collective | size | runs | ${impl} µs | ${t.ref} µs | ratio of medians | 95% interval | ratio of minima | verdict |`);
  console.log('|---|--:|--:|--:|--:|--:|--:|--:|---|');
  for (const r of rows) console.log(r);
}
