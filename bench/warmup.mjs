#!/usr/bin/env node
// The warm-up ramp of small collectives: `node bench/warmup.mjs [--np N] [--runs R] [--dist DIR] [--json FILE]`.
//
// The sweeps (bench/run.mjs) time collectives after a long warm-up; this
// times what comes before it. Each job is a fresh process tree
// (node DIR/cli.js -n N bench/warmup_job.mjs) that times, on every rank,
// the first 20 000 back-to-back calls of one 8 B collective
// (allreduce SUM, bcast from 0, barrier); one collective per job, so that
// every column's call 1 is the first collective call of its processes. The
// table shows calls 1-10 one by one and the means of the later decades, max
// over ranks, median over R runs, and what a rank's start-up up to the end of
// init() costs; then the issue's measures, from calls 1001-20000 timed in
// blocks of 500: the first 1000 calls' mean and the worst block against the
// steady state (the median block of calls 15001-20000), per run, median. --dist DIR measures another build (its cli.js, index.js and
// the addon it loads), e.g. a worktree of an older commit, with the same
// script: run it once per build for an A/B comparison.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join, relative, resolve } from 'node:path';
import { BENCH, EXT_MAX, ROOT, fmtUs, log, machineInfo, median, onInterrupt, parseOptions, runJob, usageError } from './lib/jobs.mjs';
import { compactJson, loadSummary, repeatJobs } from './lib/repeat.mjs';

const COLLS = ['allreduce', 'bcast', 'barrier'];
// in warmup_job.mjs's order
const CALLS = ['1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11–100', '101–1000', '1001–10000'];

const usage = `usage: node bench/warmup.mjs [options]
  --np N           world size (default 2)
  --runs R         fresh-process runs of each collective, median reported (default 5)
  --dist DIR       the build to measure: DIR/cli.js launches, DIR/index.js is imported
                   (default: this repository's dist/)
  --node-flags=F   flags for the ranks' node, space-separated (e.g. --node-flags=--no-maglev):
                   the ranks start as \`cli.js -n N -- node F warmup_job.mjs\`
  --json FILE      write every run and the medians to FILE
  --budget-min M   re-run noisy jobs (other processes used > ${EXT_MAX} cores) until M minutes
                   into the bench (default 3)
  --no-idle-wait   do not wait for other work to leave the CPUs idle before a job, nor re-run noisy jobs`;

const v = parseOptions('warmup', usage, {
  np: { type: 'string', default: '2' }, runs: { type: 'string', default: '5' }, dist: { type: 'string', default: join(ROOT, 'dist') },
  json: { type: 'string' }, 'node-flags': { type: 'string', default: '' }, 'budget-min': { type: 'string', default: '3' }, 'no-idle-wait': { type: 'boolean', default: false },
});
const o = {
  np: Number(v.np), runs: Number(v.runs), dist: resolve(v.dist), json: v.json, nodeFlags: v['node-flags'].split(' ').filter(Boolean), budgetMin: Number(v['budget-min']), idleWait: !v['no-idle-wait'],
};
if (!(Number.isInteger(o.np) && o.np >= 1 && Number.isInteger(o.runs) && o.runs >= 1 && o.budgetMin >= 0)) usageError('warmup', usage, 'bad option value');
if (!existsSync(join(o.dist, 'cli.js')) || !existsSync(join(o.dist, 'index.js'))) usageError('warmup', usage, `${o.dist}: no cli.js and index.js (not built?)`);

/** The commit a build was made from, and when its addon was built: which build the numbers describe. */
function buildInfo(dist) {
  const git = (...args) => { try { return execFileSync('git', ['-C', dist, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim(); } catch { return null; } };
  const addon = join(dist, '..', 'build', 'Release', 'nodempi.node');
  return {
    dist: dist.startsWith(`${ROOT}/`) ? relative(ROOT, dist) : dist,
    commit: git('rev-parse', '--short', 'HEAD'),
    dirty: (git('status', '--porcelain', '--untracked-files=no') ?? '') !== '',
    addonBuilt: existsSync(addon) ? statSync(addon).mtime.toISOString() : null,
  };
}

// The build's own addon and the shm backend (the launcher's default), whatever the caller's environment says.
const env = { ...process.env };
delete env.NODEMPI_ADDON;
delete env.NODEMPI_BACKEND;

const t0 = performance.now();
const build = buildInfo(o.dist);
const syncDirs = mkdtempSync(join(os.tmpdir(), 'nodempi-warmup-'));
onInterrupt(() => rmSync(syncDirs, { recursive: true, force: true }));
let rep;
try {
  let n = 0;
  rep = await repeatJobs({
    groups: [COLLS.map((coll) => ({ fields: { coll }, name: coll }))], runs: o.runs, t0,
    // under steady load every job is noisy and top-ups would go on to the budget: none without the idle wait
    idleWait: o.idleWait, quick: !o.idleWait, budgetMin: o.budgetMin,
    start: ({ fields: { coll } }) => runJob(`warmup: ${coll} np=${o.np}`, process.execPath,
      [join(o.dist, 'cli.js'), '-n', String(o.np), ...(o.nodeFlags.length ? ['--', process.execPath, ...o.nodeFlags] : []), join(BENCH, 'warmup_job.mjs'), '--dist', o.dist, '--coll', coll,
        '--sync-dir', join(syncDirs, String(++n))], env, 120,
      { check: (p) => (p.length === 1 && p[0].coll === coll && p[0].us.length === CALLS.length && p[0].blocks?.length >= 10 && p[0].block > 0 ? null : 'not the one point expected') }),
  });
} finally {
  rmSync(syncDirs, { recursive: true, force: true });
}

// As bench/lib/repeat.mjs's summarize: the median over the clean runs when
// there are at least min(R, 3) of them, else over all runs.
const want = Math.min(o.runs, 3);
const pick = (recs) => { const clean = recs.filter((r) => !r.noisy); return clean.length >= want ? clean : recs; };
const medians = Object.fromEntries(COLLS.map((coll) => {
  const recs = pick(rep.runs.filter((r) => r.coll === coll));
  return [coll, { us: CALLS.map((_, j) => median(recs.map((r) => r.points[0].us[j]))), runs: recs.length }];
}));
// The issue's measures, per run: the first 1000 calls' mean, the steady
// state (median of the last 10 blocks), the worst block after call 1000,
// and how many blocks exceed 3x steady.
const FIRST = 1000;
function ramp(point) {
  const u = point.us, b = point.blocks;
  const first = (u.slice(0, 10).reduce((x, y) => x + y, 0) + 90 * u[10] + 900 * u[11]) / FIRST;
  const steady = median(b.slice(-10));
  const worst = Math.max(...b);
  return { first, steady, firstRatio: first / steady, worstRatio: worst / steady, worstAt: point.firstBlock + b.indexOf(worst) * point.block,
    over3: b.filter((x) => x > 3 * steady).length };
}
// Labels from the job's own blocks (warmup_job.mjs decides their size).
const shape = rep.runs[0].points[0];
const end = shape.firstBlock - 1 + shape.blocks.length * shape.block;
const RAMP = [
  [`first ${FIRST} calls (mean)`, 'first', fmtUs],
  [`steady: calls ${end - 10 * shape.block + 1}–${end} (median block of ${shape.block})`, 'steady', fmtUs],
  [`first ${FIRST} / steady (target ≤ 3)`, 'firstRatio', (x) => x.toFixed(1)],
  [`worst block of ${shape.block} after call ${shape.firstBlock - 1} / steady (target ≤ 3)`, 'worstRatio', (x) => x.toFixed(1)],
  [`blocks of ${shape.block} above 3x steady`, 'over3', (x) => String(x)],
];
for (const coll of COLLS) {
  const recs = pick(rep.runs.filter((r) => r.coll === coll)).map((r) => ramp(r.points[0]));
  medians[coll].ramp = Object.fromEntries(RAMP.map(([, k]) => [k, median(recs.map((x) => x[k]))]));
  medians[coll].worstAt = recs.map((x) => x.worstAt);
}

const all = pick(rep.runs);
const startup = Object.fromEntries(['startToInitMs', 'importMs', 'initMs', 'lateUs'].map((k) => [k, median(all.map((r) => r.points[0][k]))]));

const L = [];
L.push(`Warm-up of 8 B collectives, shm backend, ${o.np} rank(s); Node ${process.version}${o.nodeFlags.length ? ` ${o.nodeFlags.join(' ')}` : ''}; ` +
  `build ${build.dist} (${build.commit ?? 'no git'}${build.dirty ? ', uncommitted changes' : ''}).`,
  'µs per call, max over ranks, median over fresh-process runs; calls back to back, one collective per job.', '');
L.push(`| call | ${COLLS.join(' | ')} |`, `|---|${COLLS.map(() => '--:').join('|')}|`);
CALLS.forEach((c, j) => L.push(`| ${j < 10 ? c : `${c} (mean)`} | ${COLLS.map((coll) => fmtUs(medians[coll].us[j])).join(' | ')} |`));
RAMP.forEach(([label, k, f]) => L.push(`| ${label} | ${COLLS.map((coll) => f(medians[coll].ramp[k])).join(' | ')} |`));
L.push(`| worst block began at call (per run) | ${COLLS.map((coll) => medians[coll].worstAt.join(', ')).join(' | ')} |`);
L.push(`| runs | ${COLLS.map((coll) => medians[coll].runs).join(' | ')} |`);
L.push('', `Process start to the end of init(): ${startup.startToInitMs.toFixed(1)} ms (importing nodempi ${startup.importMs.toFixed(1)} ms, ` +
  `init() ${startup.initMs.toFixed(2)} ms); max over ranks, median of ${all.length} jobs.`);
L.push(`The last rank began call 1 ${fmtUs(startup.lateUs)} µs after the instant the ranks agreed on (median; call 1 times that wait too); ` +
  `${rep.runs.filter((r) => r.noisy).length} of ${rep.runs.length} jobs noisy (other processes used > ${EXT_MAX} cores).`);
console.log(L.join('\n'));

if (o.json) {
  writeFileSync(o.json, `${compactJson({
    date: new Date().toISOString(), totalSeconds: +((performance.now() - t0) / 1000).toFixed(1), machine: machineInfo(), build,
    options: { np: o.np, runs: o.runs, node: process.version, nodeFlags: o.nodeFlags, budgetMin: o.budgetMin, idleWait: o.idleWait },
    calls: CALLS, medians, startup, load: loadSummary(rep), runs: rep.runs,
  })}\n`);
  log(`warmup: wrote ${o.json}`);
}
