#!/usr/bin/env node
// Single copy (NODEMPI_CMA=1) against the slot pipeline (NODEMPI_CMA=0), the
// measurement behind the default (single copy unless ranks outnumber cores):
// `node bench/single_copy.mjs [--runs R]`.
// Runs bench/nodempi_job.mjs (the OSU-style sweep of bench/lib/sweep.mjs)
// in fresh jobs, alternating the two settings, at 2 and 4 ranks, and prints
// the median of R runs per point as a markdown table; the raw runs go to
// bench/results/single-copy.json.
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { BENCH, ROOT, median, parseOptions, runJob, tryRun, usageError } from './lib/jobs.mjs';

const usage = `usage: node bench/single_copy.mjs [options]
  --runs R         fresh jobs per setting and world size, median reported (default 3)`;
const RUNS = Number(parseOptions('single_copy', usage, { runs: { type: 'string', default: '3' } }).runs);
if (!(Number.isInteger(RUNS) && RUNS >= 1)) usageError('single_copy', usage, '--runs must be a positive integer');
const COLLS = ['bcast', 'scatter', 'gather', 'allgather', 'alltoall', 'gatherv', 'scatterv', 'allgatherv', 'alltoallv'];
const SIZES = [65536, 262144, 1048576, 4194304];
const SETTINGS = { slots: { NODEMPI_CMA: '0' }, 'single copy': { NODEMPI_CMA: '1' } };

async function job(np, env) {
  const { points } = await runJob(`single_copy: np=${np} NODEMPI_CMA=${env.NODEMPI_CMA}`, process.execPath, [
    join(ROOT, 'dist', 'cli.js'), '-n', String(np), join(BENCH, 'nodempi_job.mjs'),
    '--colls', COLLS.join(','), '--sizes', SIZES.join(','), '--target-ms', '60', '--warm-ms', '20',
  ], { ...process.env, ...env });
  return points;
}

const raw = [];
const load = [os.loadavg()[0]];
for (let run = 0; run < RUNS; run++) {
  for (const np of [2, 4]) {
    for (const [name, env] of Object.entries(SETTINGS)) {
      for (const p of await job(np, env)) raw.push({ run, np, setting: name, coll: p.coll, bytes: p.bytes, us: p.us });
    }
  }
}
load.push(os.loadavg()[0]);

const rows = ['| ranks | collective | size | slots (µs) | single copy (µs) | single copy / slots |', '|--:|---|--:|--:|--:|--:|'];
for (const np of [2, 4]) {
  for (const coll of COLLS) {
    for (const bytes of SIZES) {
      const pick = (setting) => median(raw.filter((r) => r.np === np && r.coll === coll && r.bytes === bytes && r.setting === setting).map((r) => r.us));
      const a = pick('slots'), b = pick('single copy');
      rows.push(`| ${np} | ${coll} | ${bytes >= 1048576 ? `${bytes / 1048576} MiB` : `${bytes / 1024} KiB`} | ${a.toFixed(1)} | ${b.toFixed(1)} | ${(b / a).toFixed(2)} |`);
    }
  }
}
const commit = tryRun('git', ['rev-parse', '--short', 'HEAD']);
writeFileSync(join(BENCH, 'results', 'single-copy.json'), JSON.stringify({
  date: new Date().toISOString(), cpu: os.cpus()[0]?.model, ncpu: os.cpus().length, node: process.version, commit,
  runs: RUNS, load1: load, raw,
}, null, 1) + '\n');
console.log(`${RUNS} run(s) per setting, median shown; 1-min load average ${load.map((l) => l.toFixed(2)).join(' -> ')}; nodempi ${commit}\n`);
console.log(rows.join('\n'));
