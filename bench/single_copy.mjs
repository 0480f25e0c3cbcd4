#!/usr/bin/env node
// Single copy (NODEMPI_CMA=1) against the slot pipeline (NODEMPI_CMA=0), the
// measurement behind the default (single copy unless ranks outnumber cores):
// `node bench/single_copy.mjs [--runs R]`.
// Runs bench/nodempi_job.mjs (the OSU-style sweep of bench/lib/sweep.mjs)
// in fresh jobs, alternating the two settings, at 2 and 4 ranks, and prints
// the median of R runs per point as a markdown table; the raw runs go to
// bench/results/single-copy.json.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BENCH = dirname(fileURLToPath(import.meta.url));
const ROOT = dirname(BENCH);
const runsArg = process.argv.indexOf('--runs');
const RUNS = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 3;
const COLLS = ['bcast', 'scatter', 'gather', 'allgather', 'alltoall', 'gatherv', 'scatterv', 'allgatherv', 'alltoallv'];
const SIZES = [65536, 262144, 1048576, 4194304];
const SETTINGS = { slots: { NODEMPI_CMA: '0' }, 'single copy': { NODEMPI_CMA: '1' } };

function job(np, env) {
  const out = execFileSync(process.execPath, [
    join(ROOT, 'dist', 'cli.js'), '-n', String(np), join(BENCH, 'nodempi_job.mjs'),
    '--colls', COLLS.join(','), '--sizes', SIZES.join(','), '--target-ms', '60', '--warm-ms', '20',
  ], { env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 1 << 26 });
  return out.trim().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const raw = [];
const load = [os.loadavg()[0]];
for (let run = 0; run < RUNS; run++) {
  for (const np of [2, 4]) {
    for (const [name, env] of Object.entries(SETTINGS)) {
      for (const p of job(np, env)) raw.push({ run, np, setting: name, coll: p.coll, bytes: p.bytes, us: p.us });
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
const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
writeFileSync(join(BENCH, 'results', 'single-copy.json'), JSON.stringify({
  date: new Date().toISOString(), cpu: os.cpus()[0]?.model, ncpu: os.cpus().length, node: process.version, commit,
  runs: RUNS, load1: load, raw,
}, null, 1) + '\n');
console.log(`${RUNS} run(s) per setting, median shown; 1-min load average ${load.map((l) => l.toFixed(2)).join(' -> ')}; nodempi ${commit}\n`);
console.log(rows.join('\n'));
