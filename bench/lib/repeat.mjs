// The repetition scheme of the scripts that put implementations side by side
// over the sweep (bench/run.mjs, bench/backends.mjs), and what they write:
// every job a fresh process tree, R runs of the whole set in an order rotated
// from run to run (so no implementation always runs right after the same
// one), a wait for idle CPUs before each job, a job marked noisy when other
// processes used more than EXT_MAX cores meanwhile, top-up runs for jobs short
// of clean runs while a time budget lasts, and per point the median over the
// clean runs. One copy, so that the numbers of both scripts mean the same.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { EXT_MAX, idleWaiter, log, median } from './jobs.mjs';

// seconds one job, and a whole run, may spend waiting for other work to finish
const IDLE_WAIT_JOB = 10, IDLE_WAIT_TOTAL = 120;

/**
 * Runs `groups` (arrays of jobs; each group, e.g. one world size, is rotated
 * by one place from run to run) `runs` times, then tops up jobs with fewer than
 * min(runs, 3) clean runs, fewest first, while the bench (started at t0, a
 * performance.now() value) is under budgetMin minutes (no top-up with quick).
 * Before each job it waits for idle CPUs up to idleWaitS seconds (1 with
 * quick), and 12 times that over the whole run.
 * A job is { fields, name }: fields (e.g. { np, impl }) go into its records
 * after `run` and identify it; name is how the log shows it.
 * start(job) runs it once and resolves with runJob's result (bench/lib/jobs.mjs).
 * When start rejects, keepGoing(job, error) decides: true drops the job from
 * the later runs and records the failure, false (the default) rethrows.
 * Resolves with { runs: job records, failures, busy: the busy fractions seen
 * before jobs, extra: top-up runs, waitedS }.
 */
export async function repeatJobs({
  groups, runs: R, quick = false, idleWait = true, idleWaitS = IDLE_WAIT_JOB, budgetMin, t0, start, keepGoing = () => false,
}) {
  const keyOf = (job) => JSON.stringify(job.fields);
  const runs = [], failures = [], busy = [], dropped = new Set();
  let k = 0, extra = 0, waitedTotal = 0;
  const total = R * groups.reduce((n, g) => n + g.length, 0);
  const waitIdle = idleWaiter(quick ? 1 : idleWaitS, idleWaitS * (IDLE_WAIT_TOTAL / IDLE_WAIT_JOB));
  const runOne = async (run, job, tag) => {
    const idle = idleWait ? await waitIdle() : { busyBefore: null, waitedS: 0 };
    waitedTotal += idle.waitedS;
    let res;
    try {
      res = await start(job);
    } catch (e) {
      if (!keepGoing(job, e)) throw e;
      dropped.add(keyOf(job));
      failures.push({ run, ...job.fields, error: e });
      log(`  [${tag}] run ${run} ${job.name} FAILED; not run again`);
      return null;
    }
    const ext = res.extCores;
    const rec = { run, ...job.fields, seconds: +res.seconds.toFixed(2), cpuS: res.cpuS,
      extCores: ext === null ? null : +ext.toFixed(2), ...idle };
    if (ext !== null && ext > EXT_MAX) rec.noisy = true;
    rec.points = res.points;
    if (idle.busyBefore !== null) busy.push(idle.busyBefore);
    runs.push(rec);
    log(`  [${tag}] run ${run} ${job.name} ${res.seconds.toFixed(1).padStart(6)} s` +
      `${ext !== null ? `  other work: ${ext.toFixed(2)} cores${rec.noisy ? ' (noisy)' : ''}` : ''}`);
    return rec;
  };
  const recordsOf = (job) => runs.filter((r) => Object.entries(job.fields).every(([f, v]) => r[f] === v));
  // 1. R runs of every job, in an order rotated from run to run
  for (let run = 1; run <= R; run++) {
    for (const group of groups) {
      const rot = (run - 1) % group.length;
      for (const job of [...group.slice(rot), ...group.slice(0, rot)]) {
        if (dropped.has(keyOf(job))) continue;
        await runOne(run, job, `${++k}/${total}`);
      }
    }
  }
  // 2. top-up: a job with fewer than min(R, 3) runs that other processes left
  //    alone runs again, fewest clean runs first, while the time budget lasts
  const want = Math.min(R, 3);
  for (;;) {
    if (quick) break;
    const cands = groups.flat().filter((job) => !dropped.has(keyOf(job)))
      .map((job) => ({ job, n: recordsOf(job).filter((r) => !r.noisy).length }))
      .filter((c) => c.n < want).sort((a, b) => a.n - b.n);
    if (!cands.length) break;
    const elapsed = (performance.now() - t0) / 1000;
    const est = (c) => Math.max(...recordsOf(c.job).map((r) => r.seconds)) + 2;
    const next = cands.find((c) => elapsed + est(c) <= budgetMin * 60);
    if (!next) {
      log(`bench: time budget (${budgetMin} min) reached; ${cands.length} job(s) keep noisy runs in their median`);
      break;
    }
    extra++;
    await runOne(recordsOf(next.job).length + 1, next.job, `extra ${extra}`);
  }
  return { runs, failures, busy, extra, waitedS: waitedTotal };
}

/** How loaded the machine was, for the results file: from repeatJobs's result. */
export function loadSummary({ runs, busy, extra, waitedS }, more = {}) {
  const ext = runs.map((j) => j.extCores).filter((x) => x !== null);
  return {
    medianBusyBefore: busy.length ? median(busy) : null,
    medianExtCores: ext.length ? median(ext) : null,
    maxExtCores: ext.length ? Math.max(...ext) : null,
    noisyJobs: runs.filter((j) => j.noisy).length,
    extraRuns: extra,
    waitedS: +waitedS.toFixed(1),
    loadavg: os.loadavg(),
    ...more,
  };
}

/**
 * Per point, the median over a job's clean runs (other processes used <
 * EXT_MAX cores) when it has at least `want` of them, else over all its runs
 * (then `noisy: true`). keyFields name the job record fields that identify a
 * job (e.g. ['np', 'impl']); order(m) gives a median's sort key (an array).
 */
export function summarize(runs, want, keyFields, order) {
  const acc = new Map();
  for (const job of runs) {
    for (const p of job.points) {
      const key = [...keyFields.map((f) => job[f]), p.coll, p.bytes].join('|');
      if (!acc.has(key)) {
        acc.set(key, { ...Object.fromEntries(keyFields.map((f) => [f, job[f]])), coll: p.coll, bytes: p.bytes, clean: [], all: [] });
      }
      const m = acc.get(key);
      m.all.push(p.us);
      if (!job.noisy) m.clean.push(p.us);
    }
  }
  const medians = [...acc.values()].map(({ clean, all, ...m }) => {
    const use = clean.length >= want ? clean : all;
    return {
      ...m, median_us: median(use), min_us: Math.min(...use), max_us: Math.max(...use), runs_us: use,
      ...(use === all && clean.length < all.length ? { noisy: true } : {}), clean_runs: clean.length, all_runs_us: all,
    };
  });
  medians.sort((a, b) => {
    const x = order(a), y = order(b);
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i] - y[i];
    return 0;
  });
  return medians;
}

/** Rounds a job point's floats to 5 significant digits (the JSON stays readable and small). */
export function roundPoint(p) {
  const q = { ...p };
  for (const k of ['us', 'min_us', 'avg_us']) if (typeof q[k] === 'number') q[k] = Number(q[k].toPrecision(5));
  return q;
}

/** JSON with small objects and arrays on one line each. */
export function compactJson(v, indent = '') {
  const flat = JSON.stringify(v);
  if (v === null || typeof v !== 'object' || flat.length <= 200) return flat;
  const inner = `${indent} `;
  if (Array.isArray(v)) return `[\n${v.map((x) => inner + compactJson(x, inner)).join(',\n')}\n${indent}]`;
  const entries = Object.entries(v).filter(([, x]) => x !== undefined);
  return `{\n${entries.map(([k, x]) => `${inner}${JSON.stringify(k)}: ${compactJson(x, inner)}`).join(',\n')}\n${indent}}`;
}

/**
 * Puts md between the start and end markers of the markdown file at path
 * (the rest of the file is the reader's prose and stays); a missing file is
 * created with `title`, markers missing from it are appended under `heading`.
 */
export function writeBetweenMarkers(path, md, { title, heading = 'Results', start = '<!-- results:start -->', end = '<!-- results:end -->' }) {
  let text = existsSync(path) ? readFileSync(path, 'utf8') : `# ${title}\n\n## ${heading}\n\n${start}\n${end}\n`;
  const block = `${start}\n${md}\n${end}`;
  const i = text.indexOf(start), j = text.indexOf(end);
  text = i >= 0 && j > i ? text.slice(0, i) + block + text.slice(j + end.length) : `${text.trimEnd()}\n\n## ${heading}\n\n${block}\n`;
  writeFileSync(path, text);
}
