// The soak test: one job of 4 ranks under the real launcher runs
// bench/soak_job.mjs (1,000,000 allreduces of 8 B, 10,000 dup/free cycles,
// 100,000 nonblocking requests, after a warm-up), and every rank reports its
// resident set, open descriptors and mappings after the warm-up, halfway and
// at the end. Prints a table and exits 1 when any of them grew by 10 % or
// more from start to end on any rank, or when a check in the job failed.
//
//   npm run soak                      the full counts; writes bench/results/soak.json
//   node bench/soak.mjs --scale 0.02  a short form (test/stress/soak.test.ts)
//   options: --np N (4), --limit PCT (10), --json FILE, --timeout SEC,
//            --only allreduce|dupFree|nonblocking (one workload alone),
//            --v8-defaults (V8's young generation left to grow, see below)
// bench/SOAK.md has the results of a full run.
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { ROOT, parseOptions, runJob } from './lib/jobs.mjs';

const usage = `usage: node bench/soak.mjs [options]
  --scale S        times the full counts (default 1)
  --np N           ranks (default 4)
  --limit PCT      growth from start to end that fails the soak (default 10)
  --json FILE      results file (default bench/results/soak.json for a full, plain run)
  --timeout SEC    the launcher's timeout (default 3600)
  --only W         one workload alone: allreduce, dupFree or nonblocking
  --v8-defaults    V8's young generation left to grow (see below)`;
const v = parseOptions('soak', usage, {
  scale: { type: 'string', default: '1' }, np: { type: 'string', default: '4' }, limit: { type: 'string', default: '10' },
  json: { type: 'string' }, timeout: { type: 'string', default: '3600' }, only: { type: 'string' }, 'v8-defaults': { type: 'boolean' },
});
const o = {
  scale: Number(v.scale), np: Number(v.np), limit: Number(v.limit), json: v.json, timeout: Number(v.timeout), only: v.only,
  v8Defaults: !!v['v8-defaults'],
};
if (o.scale === 1 && !o.only && !o.v8Defaults && o.json === undefined) o.json = join(ROOT, 'bench', 'results', 'soak.json');

// V8 sizes its young generation by the allocation rate: with the default
// flags it starts at 8 MiB and doubles, to 16 or 32 MiB, while the
// nonblocking requests run (their promises are short-lived garbage), which
// alone grows RSS and the mappings (256 KiB pages) after any warm-up short
// of that workload's own length, and then stays put (bench/SOAK.md, "V8's
// young generation", has the figures). So the
// ranks run with it fixed at that maximum from the start (the semi-space
// size is not allowed in NODE_OPTIONS, hence `-- node FLAGS script`), and
// what grows is what the job itself keeps. --v8-defaults runs without.
const young = o.v8Defaults ? [] : ['--min-semi-space-size=16', '--max-semi-space-size=16'];
const args = [join(ROOT, 'dist', 'cli.js'), '-n', String(o.np), '--timeout', String(o.timeout), '--',
  process.execPath, ...young, join(ROOT, 'bench', 'soak_job.mjs'), '--scale', String(o.scale),
  ...(o.only ? ['--only', o.only] : [])];
const t0 = Date.now();
// The job's stderr goes straight to ours (progress and failures as they
// happen); a failed job is reported below with whatever ranks printed.
const job = await runJob('soak', process.execPath, args, process.env, o.timeout + 60, { stderr: 'inherit' }).then(
  (r) => ({ status: 0, signal: null, stdout: r.stdout }),
  (e) => ({ status: e.code ?? null, signal: e.signal ?? null, stdout: e.stdout ?? '' }));
const seconds = (Date.now() - t0) / 1000;

const reports = job.stdout.split('\n').filter((l) => l.startsWith('SOAK ')).map((l) => JSON.parse(l.slice(5)));
reports.sort((a, b) => a.rank - b.rank);
const problems = [];
if (job.status !== 0) problems.push(`the job ended with status ${job.status}${job.signal ? ` (${job.signal})` : ''}`);
if (reports.length !== o.np) problems.push(`${reports.length} of ${o.np} ranks reported`);

const growth = (a, b) => ((b - a) / a) * 100;
const fmt = (x) => (x >= 0 ? '+' : '') + x.toFixed(1) + ' %';
const metrics = [
  ['RSS (MiB)', (s) => s.rssKiB / 1024, (x) => x.toFixed(1)],
  ['open fds', (s) => s.fds, String],
  ['mappings', (s) => s.maps, String],
  ['V8 young gen (MiB)', (s) => s.newSpaceKiB / 1024, (x) => x.toFixed(0)],
];
// Under AddressSanitizer (npm run test:asan preloads it) freed memory waits
// in its quarantine (up to 256 MiB) before reuse, so the resident set grows
// by design: it is shown but not checked there.
const asan = /libasan/.test(process.env.LD_PRELOAD ?? '');
const rows = [];
for (const r of reports) {
  for (const [name, get, show] of metrics) {
    const [start, middle, end] = ['start', 'middle', 'end'].map((l) => get(r.samples.find((s) => s.label === l)));
    const g = growth(start, end);
    rows.push([String(r.rank), name, show(start), show(middle), show(end), fmt(g), fmt(growth(middle, end))]);
    if (asan && name.startsWith('RSS')) continue;
    if (!(g < o.limit)) problems.push(`rank ${r.rank}: ${name} grew ${fmt(g)} from start to end (limit ${o.limit} %)`);
  }
}

const c = reports[0]?.counts;
console.log(`soak: ${o.np} ranks, ${c ? `${c.allreduce} allreduces of 8 B, ${c.dupFree} dup/free cycles, ` +
  `${c.nonblocking} nonblocking requests` : 'no counts'} (scale ${o.scale}), ` +
  `${young.length ? young.join(' ') : 'V8 defaults'}, ${seconds.toFixed(1)} s`);
const head = ['rank', 'measure', 'start', 'middle', 'end', 'start→end', 'middle→end'];
const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
const line = (cells) => cells.map((x, i) => (i < 2 ? x.padEnd(widths[i]) : x.padStart(widths[i]))).join('  ');
console.log(line(head));
for (const r of rows) console.log(line(r));
if (reports[0]?.times) {
  const t = reports[0].times;
  const ms = (h) => `allreduce ${(h.allreduceMs / 1000).toFixed(1)} s, dup/free ${(h.dupFreeMs / 1000).toFixed(1)} s, ` +
    `nonblocking ${(h.nonblockingMs / 1000).toFixed(1)} s`;
  console.log(`rank 0 times: first half ${ms(t.first)}; second half ${ms(t.second)}`);
}

if (o.json) {
  writeFileSync(o.json, JSON.stringify({
    date: new Date().toISOString(), node: process.version, cpus: os.cpus().length, cpu: os.cpus()[0]?.model,
    kernel: os.release(), np: o.np, scale: o.scale, limitPercent: o.limit, v8Flags: young, seconds, reports, problems,
  }, null, 2) + '\n');
  console.log(`soak: results in ${o.json}`);
}
if (problems.length) {
  for (const p of problems) console.log(`soak: FAILED: ${p}`);
  process.exit(1);
}
console.log(`soak: passed (every measure${asan ? ' but RSS (AddressSanitizer)' : ''} grew less than ${o.limit} % on every rank)`);
