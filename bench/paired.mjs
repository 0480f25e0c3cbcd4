#!/usr/bin/env node
// Small collectives against Open MPI, one level of the machine at a time:
// `node bench/paired.mjs [options]`.
//
// This VM runs at two speeds that switch within seconds (bench/BACKENDS.md,
// "Notes"), about 3x apart for the smallest calls, so a sweep whose jobs
// fall on both levels cannot decide a bound like 1.5x. Here Open MPI's job
// (bench/ompi/osu_coll.c) and nodempi's (bench/nodempi_job.mjs) run one
// after the other, one collective per job, by the same OSU-style method, so
// each job takes a few seconds; each job runs an allreduce of 8 B before
// and after its collective to gauge the level it ran on, and a point counts
// in a round when all its gauges (two per job) are below --fast-us. Prints,
// over the rounds that count, each point's median for both and the range
// of the per-round ratios, as a Markdown table; every job's lines go to
// --out (JSON lines).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { BENCH, ROOT, buildOsuColl, fmtSize, list, log, median, parseOptions, runJob, usageError } from './lib/jobs.mjs';

const usage = `usage: node bench/paired.mjs [options]
  --np N          ranks (default 2)
  --colls LIST    collectives, one pair of jobs each per round (default allreduce,alltoall,alltoallv)
  --sizes LIST    bytes per rank (default 8,64,1024); 8 is always run, for the gauge
  --rounds N      rounds (default 7)
  --fast-us X     a round of a collective counts when every allreduce of 8 B around it took less (default 0.33)
  --bound R       mark the points whose median ratio is above R (default 1.5)
  --specs LIST    per-call, once or both: how nodempi's job builds its v and w specs
                  (bench/nodempi_job.mjs --specs); each is a job of its own (default per-call)
  --out FILE      every job's lines, JSON lines (default: not kept)`;

const v = parseOptions('paired', usage, {
  np: { type: 'string', default: '2' }, colls: { type: 'string', default: 'allreduce,alltoall,alltoallv' },
  sizes: { type: 'string', default: '8,64,1024' }, rounds: { type: 'string', default: '7' },
  'fast-us': { type: 'string', default: '0.33' }, bound: { type: 'string', default: '1.5' }, out: { type: 'string' },
  specs: { type: 'string', default: 'per-call' },
});
const np = Number(v.np), rounds = Number(v.rounds), fastUs = Number(v['fast-us']), bound = Number(v.bound);
const colls = [...new Set(list(v.colls))];
const sizes = [...new Set([8, ...list(v.sizes, Number)])].sort((a, b) => a - b);
const specs = [...new Set(list(v.specs))];
if (!(np >= 2 && rounds >= 1 && fastUs > 0 && bound > 0) || sizes.some((s) => !(s > 0)) ||
    specs.length === 0 || specs.some((s) => s !== 'per-call' && s !== 'once')) usageError('paired', usage, 'bad option value');
// The nodempi jobs, by the name their column takes.
const nodempiJobs = specs.map((s) => [s === 'per-call' ? 'nodempi' : 'nodempi, specs once', s]);

const timing = ['--sizes', sizes.join(','), '--target-ms', '150', '--warm-ms', '80', '--first-warm-ms', '500'];
const tmp = mkdtempSync(join(os.tmpdir(), 'nodempi-paired-'));
const lines = [];
// "coll bytes" -> [{ ompi, nodempi, ... }], one per round that counts
const kept = new Map();
try {
  const osu = buildOsuColl(join(tmp, 'osu_coll'));
  const jobs = {
    ompi: (c) => ['mpirun', ['--allow-run-as-root', '--oversubscribe', '-n', String(np), osu, '--colls', c, ...timing, '--label', 'ompi']],
  };
  for (const [name, how] of nodempiJobs) {
    jobs[name] = (c) => [process.execPath, [join(ROOT, 'dist', 'cli.js'), '--oversubscribe', '-n', String(np),
      join(BENCH, 'nodempi_job.mjs'), '--colls', c, '--specs', how, ...timing]];
  }
  for (let round = 1; round <= rounds; round++) {
    let counted = 0;
    for (const coll of colls) {
      const asked = coll === 'allreduce' ? 'allreduce' : `allreduce,${coll},allreduce`;
      const got = {}, gauges = [];
      for (const [impl, job] of Object.entries(jobs)) {
        const [cmd, args] = job(asked);
        const { points } = await runJob(`${impl} ${coll} round ${round}`, cmd, args, process.env);
        got[impl] = new Map(points.filter((p) => p.coll === coll).map((p) => [p.bytes, p.us]));
        gauges.push(...points.filter((p) => p.coll === 'allreduce' && p.bytes === 8).map((p) => p.us));
        for (const p of points) lines.push({ round, asked, ...p, impl });
      }
      if (!gauges.every((g) => g < fastUs)) continue;
      counted++;
      for (const bytes of sizes) {
        const key = `${coll} ${bytes}`;
        if (!kept.has(key)) kept.set(key, []);
        kept.get(key).push(Object.fromEntries(Object.keys(jobs).map((impl) => [impl, got[impl].get(bytes)])));
      }
    }
    log(`paired: round ${round} of ${rounds}: ${counted} of ${colls.length} collectives on the fast level in every job`);
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
if (v.out) writeFileSync(v.out, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');

console.log(`${np} ranks; a collective's round counts when the allreduce of 8 B before and after it took less than ` +
  `${fastUs} µs in every job; medians in µs, the range of the per-round ratios, and the rounds that counted.\n`);
console.log('| collective | size | nodempi | Open MPI | ratio | per round | rounds |');
console.log('|---|--:|--:|--:|--:|---|--:|');
for (const coll of colls) {
  for (const bytes of sizes) {
    const rows = kept.get(`${coll} ${bytes}`) ?? [];
    if (rows.length === 0) continue;
    const us = (impl) => median(rows.map((r) => r[impl]));
    for (const [impl] of nodempiJobs) {
      const ratios = rows.map((r) => r[impl] / r.ompi);
      const ratio = us(impl) / us('ompi');
      const what = impl === 'nodempi' ? coll : `${coll}, ${impl.slice('nodempi, '.length)}`;
      console.log(`| ${what} | ${fmtSize(bytes)} | ${us(impl).toFixed(3)} | ${us('ompi').toFixed(3)} | ` +
        `${ratio.toFixed(2)}${ratio > bound ? ' **above**' : ''} | ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)} | ${rows.length} |`);
    }
  }
}
