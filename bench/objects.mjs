#!/usr/bin/env node
// What sending plain values costs: `node bench/objects.mjs [--np N] [--runs R] [--launchers L]`.
//
// Issue 21 asks that bcastObject of a 1 MiB object take at most 1.5x what
// its parts cost alone: v8.serialize at the root, v8.deserialize at the
// others, and a bcast of as many bytes. Each job (bench/objects_job.mjs)
// times those, bcastObject itself and allgatherObject, for two kinds of
// value of about 1 MiB, in a fresh process tree; this runs R jobs per
// launcher, rotated, and prints the medians over runs. Launchers: nodempi
// (the shm backend) and, where installed, mpirun (Open MPI) and mpiexec.mpich
// (the mpi backend). Prints a Markdown table; --json FILE keeps every run.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BENCH, ROOT, fmtRatio, fmtUs, list, log, machineInfo, median, parseOptions, runJob, usageError, which } from './lib/jobs.mjs';
import { compactJson, loadSummary, repeatJobs } from './lib/repeat.mjs';

const usage = `usage: node bench/objects.mjs [options]
  --np N           world size (default 2)
  --runs R         fresh jobs per launcher, median reported (default 5)
  --launchers L    comma-separated: nodempi, openmpi, mpich (default: those installed)
  --json FILE      write every run and the medians to FILE
  --no-idle-wait   do not wait for the CPUs to be idle before each job`;
const v = parseOptions('objects', usage, {
  np: { type: 'string', default: '2' }, runs: { type: 'string', default: '5' }, launchers: { type: 'string' },
  json: { type: 'string' }, 'no-idle-wait': { type: 'boolean', default: false },
});
const np = Number(v.np), runs = Number(v.runs);
if (!(Number.isInteger(np) && np >= 1 && Number.isInteger(runs) && runs >= 1)) usageError('objects', usage, 'bad option value');

const job = join(BENCH, 'objects_job.mjs');
const LAUNCHERS = {
  nodempi: () => [process.execPath, [join(ROOT, 'dist', 'cli.js'), '-n', String(np), job]],
  openmpi: () => ['mpirun.openmpi', ['--allow-run-as-root', '--oversubscribe', '-n', String(np), process.execPath, job]],
  mpich: () => ['mpiexec.mpich', ['-n', String(np), process.execPath, job]],
};
const installed = { nodempi: true, openmpi: !!which('mpirun.openmpi'), mpich: !!which('mpiexec.mpich') };
const launchers = v.launchers ? list(v.launchers) : Object.keys(LAUNCHERS).filter((l) => installed[l]);
for (const l of launchers) if (!LAUNCHERS[l]) usageError('objects', usage, `unknown launcher ${l}`);

const env = { ...process.env };
delete env.NODEMPI_BACKEND;
const t0 = performance.now();
const rep = await repeatJobs({
  groups: [launchers.map((launcher) => ({ fields: { launcher }, name: launcher }))], runs, t0,
  idleWait: !v['no-idle-wait'], quick: !!v['no-idle-wait'], budgetMin: 3,
  start: ({ fields: { launcher } }) => {
    const [cmd, args] = LAUNCHERS[launcher]();
    return runJob(`objects: ${launcher} np=${np}`, cmd, args, env, 300, { check: (p) => (p.length === 2 ? null : 'not two kinds') });
  },
});

const COLS = ['bytes', 'bcastObject', 'serialize', 'deserialize', 'bcast', 'allgatherObject'];
const rows = [];
for (const launcher of launchers) {
  const recs = rep.runs.filter((r) => r.launcher === launcher);
  for (const kind of recs[0].points.map((p) => p.kind)) {
    const pts = recs.map((r) => r.points.find((p) => p.kind === kind));
    const m = Object.fromEntries(COLS.map((c) => [c, median(pts.map((p) => p[c]))]));
    rows.push({ launcher, backend: pts[0].backend, kind, runs: pts.length, ...m, parts: m.serialize + m.deserialize + m.bcast });
  }
}

const L = [`Plain values of about 1 MiB at ${np} ranks; µs, slowest rank, median of iterations, median of runs.`, '',
  '| launcher (backend) | value | bytes | bcastObject | serialize | deserialize | bcast | parts | bcastObject / parts | allgatherObject |',
  '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|'];
for (const r of rows) {
  L.push(`| ${r.launcher} (${r.backend}) | ${r.kind} | ${r.bytes} | ${fmtUs(r.bcastObject)} | ${fmtUs(r.serialize)} | ${fmtUs(r.deserialize)} | ` +
    `${fmtUs(r.bcast)} | ${fmtUs(r.parts)} | ${fmtRatio(r.bcastObject, r.parts)} | ${fmtUs(r.allgatherObject)} |`);
}
console.log(L.join('\n'));
if (v.json) {
  writeFileSync(v.json, `${compactJson({ date: new Date().toISOString(), machine: machineInfo(), options: { np, runs, launchers }, rows, load: loadSummary(rep), runs: rep.runs })}\n`);
  log(`objects: wrote ${v.json}`);
}
