#!/usr/bin/env node
// Communicators benchmark: `node bench/comms.mjs [--quick] [--runs R]`.
//
// Measures what a communicator costs to make and whether collectives on it
// are as fast as on COMM_WORLD:
//   nodempi  node dist/cli.js -n N bench/comms_job.mjs   creation cost of dup, split
//            and create (+ free), then collective latency on COMM_WORLD, a dup, a
//            same-members split, COMM_WORLD again (A/A) and a half-size split
//   ompi     bench/ompi/comms.c under mpirun: the same creation cost in Open
//            MPI's C API, for context
// Every job is a fresh process tree; the set of jobs is repeated R times (in a
// rotated order) and medians are reported. A full run writes
// bench/results/comms.json and bench/COMMS.md; --quick (or --np) writes
// bench/results/comms-partial.json only.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, relative } from 'node:path';
import {
  BENCH, EXT_MAX, ROOT, idleWaiter, list, log, onInterrupt, parseOptions, runJob as runBenchJob, tryRun, usageError, which,
} from './lib/jobs.mjs';

const IDLE_WAIT_JOB = 10;   // seconds to wait for idle CPUs before one job...
const IDLE_WAIT_TOTAL = 90; // ...and over the whole run, which must stay short
const TOL_MIN = 0.05;       // the latency target's tolerance is never tighter than 5 %

const KINDS = ['dup', 'split(rank%2,rank)', 'split(0,-rank)', 'create(group)'];
const MODES = ['pair', 'create', 'free'];
const POINTS = [['barrier', 0], ['allreduce', 8], ['allreduce', 1024], ['allreduce', 1048576], ['bcast', 8], ['bcast', 1048576]];
const VARIANTS = ['world', 'dup', 'split', 'world-again', 'half', 'dup-2048th', 'rotating'];

const usage = `usage: node bench/comms.mjs [options]
  --quick          smoke test: 2 and 4 ranks, one run, short loops (writes results/comms-partial.json)
  --runs R         fresh-process repetitions of every job (default 5); medians reported
  --np 2,3,4       world sizes (default 2,3,4; anything else writes the partial file)
  --no-ompi        skip the Open MPI column (writes the partial file)
  --no-idle-wait   start jobs even while other work keeps the CPUs busy
  --report FILE    measure nothing: recompute medians and targets from a results file and rewrite
                   it (and, for bench/results/comms.json, bench/COMMS.md)`;

function options(argv) {
  const v = parseOptions('comms', usage, {
    quick: { type: 'boolean' }, runs: { type: 'string' }, np: { type: 'string' }, 'no-ompi': { type: 'boolean' },
    'no-idle-wait': { type: 'boolean' }, report: { type: 'string' },
  }, argv);
  const o = {
    quick: !!v.quick, runs: v.runs === undefined ? null : Number(v.runs), nps: v.np === undefined ? [2, 3, 4] : list(v.np, Number),
    partial: !!(v.quick || v.np !== undefined || v['no-ompi']), ompi: !v['no-ompi'], idleWait: !v['no-idle-wait'],
  };
  if (v.report !== undefined) o.report = v.report;
  if (o.quick && !v.seen.has('np')) o.nps = [2, 4];
  for (const n of o.nps) if (!Number.isInteger(n) || n < 2 || n > 64) die(`bad --np value ${n}`);
  o.runs ??= o.quick ? 1 : 5;
  if (!Number.isInteger(o.runs) || o.runs < 1) die('--runs must be a positive integer');
  // Creation loops never go below minIters; with the pool's capacity
  // checked before and after them, a communicator that is not given back
  // makes the job fail.
  o.params = o.quick
    ? { warmMs: 10, targetMs: 20, minIters: 300, maxIters: 5000, collWarmMs: 10, collTargetMs: 20 }
    : { warmMs: 50, targetMs: 150, minIters: 2000, maxIters: 20000, collWarmMs: 50, collTargetMs: 120 };
  return o;
}

const die = (msg) => usageError('comms', usage, msg);

// ---------------------------------------------------------------- machine
// Numbers taken while other work loads 2 cores are worthless, so wait a
// little for it to pass; the total wait is capped to keep the run short.
const waitIdle = idleWaiter(IDLE_WAIT_JOB, IDLE_WAIT_TOTAL);

function machineInfo() {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model ?? 'unknown',
    cpuCount: cpus.length,
    uname: { sysname: os.type(), release: os.release(), version: os.version(), machine: os.machine() },
    totalMemGiB: +(os.totalmem() / 2 ** 30).toFixed(1),
  };
}

// ---------------------------------------------------------------- jobs
// Commands as recorded in the results: relative to the repository, no
// machine paths. The Open MPI binary lives in a temp dir, named by its source.
function jobCommand(impl, np, run, params, ompiExe) {
  const p = ['--run', String(run), '--warm-ms', String(params.warmMs), '--target-ms', String(params.targetMs),
    '--min-iters', String(params.minIters), '--max-iters', String(params.maxIters)];
  if (impl === 'nodempi') {
    const args = ['dist/cli.js', '-n', String(np), '--timeout', '300', 'bench/comms_job.mjs', ...p,
      '--coll-warm-ms', String(params.collWarmMs), '--coll-target-ms', String(params.collTargetMs)];
    return { cmd: process.execPath, args, shown: `node ${args.join(' ')}` };
  }
  const args = ['--allow-run-as-root', '--oversubscribe', '-n', String(np), ompiExe, ...p];
  return { cmd: 'mpirun', args, shown: `mpirun ${args.join(' ').replace(ompiExe, '<tmp>/comms')}` };
}

let tempDir = null;
onInterrupt(() => { if (tempDir) rmSync(tempDir, { recursive: true, force: true }); });

/** Runs one job; resolves with its JSON lines, rejects loudly on any failure (bench/lib/jobs.mjs). */
async function runJob(impl, np, run, params, ompiExe) {
  const { cmd, args, shown } = jobCommand(impl, np, run, params, ompiExe);
  const env = { ...process.env };
  // Open MPI's shared-memory single-copy mechanism stays at its default (as in bench/run.mjs).
  delete env.OMPI_MCA_btl_vader_single_copy_mechanism;
  const res = await runBenchJob(`comms: ${impl} np=${np}`, cmd, args, env, 360, { shown, check: (lines) => missing(impl, np, lines) });
  return { impl, np, run, command: shown, lines: res.points, seconds: res.seconds, cpuS: res.cpuS,
    extCores: res.exact.extCores === null ? null : +res.exact.extCores.toFixed(3) };
}

/** What a complete job must have printed; null when nothing is missing. */
function missing(impl, np, lines) {
  const have = (pred) => lines.some(pred);
  for (const kind of KINDS) {
    for (const mode of MODES) {
      if (!have((l) => l.section === 'create' && l.kind === kind && l.mode === mode)) return `no ${kind} ${mode} result`;
    }
  }
  if (impl === 'ompi') return null;
  const pool = lines.find((l) => l.section === 'pool');
  if (!pool) return 'no pool result';
  if (pool.after !== pool.before) {
    return `${pool.before} communicators could be held at once before the creation loops but ${pool.after} after them: contexts leaked`;
  }
  for (const [coll, bytes] of POINTS) {
    for (const v of VARIANTS) {
      const n = lines.filter((l) => l.section === 'latency' && l.variant === v && l.coll === coll && l.bytes === bytes).length;
      if (n !== (v === 'half' ? 2 : 1)) return `${n} results for ${v} ${coll} ${bytes} B`;
    }
  }
  if (!have((l) => l.section === 'done')) return 'no done line';
  return null;
}

// ---------------------------------------------------------------- stats
const median = (xs) => {
  const s = xs.slice().sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length ? (s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2) : null;
};

/** The runs a median is taken over: the clean ones when there are at least min(R, 3), else all. */
function usable(jobs, runs) {
  const clean = jobs.filter((j) => !j.noisy);
  return clean.length >= Math.min(runs, 3) ? { jobs: clean, noisy: false } : { jobs, noisy: clean.length < jobs.length };
}

// Per run, the half-size split's latency is the max over its two halves (max over ranks).
function latencyOf(job, variant, coll, bytes) {
  const xs = job.lines.filter((l) => l.section === 'latency' && l.variant === variant && l.coll === coll && l.bytes === bytes);
  return xs.length ? Math.max(...xs.map((l) => l.us)) : null;
}

function summarize(config, jobs) {
  const creation = [];
  const latency = [];
  for (const np of config.nps) {
    for (const impl of ['nodempi', 'ompi']) {
      const mine = jobs.filter((j) => j.np === np && j.impl === impl);
      if (!mine.length) continue;
      const { jobs: use, noisy } = usable(mine, config.runs);
      for (const kind of KINDS) {
        for (const mode of MODES) {
          const xs = use.map((j) => j.lines.find((l) => l.section === 'create' && l.kind === kind && l.mode === mode).us);
          creation.push({ np, impl, kind, mode, median_us: median(xs), min_us: Math.min(...xs), max_us: Math.max(...xs),
            runs_us: xs, ...(noisy ? { noisy } : {}) });
        }
      }
      if (impl !== 'nodempi') continue;
      for (const [coll, bytes] of POINTS) {
        const row = { np, coll, bytes, ...(noisy ? { noisy } : {}) };
        const world = use.map((j) => latencyOf(j, 'world', coll, bytes));
        const again = use.map((j) => latencyOf(j, 'world-again', coll, bytes));
        for (const v of VARIANTS) {
          const xs = use.map((j) => latencyOf(j, v, coll, bytes));
          // Paired per run (both sides from the same process, seconds apart).
          // The reference is the mean of the two COMM_WORLD measurements, so
          // that one slow COMM_WORLD sample does not shift every ratio of the
          // point; the A/A ratio itself compares the two.
          const ratios = v === 'world-again' ? xs.map((x, i) => x / world[i]) : xs.map((x, i) => x / ((world[i] + again[i]) / 2));
          row[v] = { median_us: median(xs), runs_us: xs, ...(v === 'world' ? {} : { ratio: median(ratios), runs_ratio: ratios }) };
        }
        row.halfSizes = [...new Set(use[0].lines.filter((l) => l.section === 'latency' && l.variant === 'half').map((l) => l.commSize))].sort();
        latency.push(row);
      }
    }
  }
  return { creation, latency };
}

// Split and dup must match COMM_WORLD within noise. Noise at a world size is
// the largest gap between COMM_WORLD and COMM_WORLD measured again in the
// same job (the A/A pair), over all points, or 5 %, whichever is larger: a
// gap no bigger than the same communicator's own gap cannot be told apart
// from it. (Against the mean of the two COMM_WORLD samples a variant's ratio
// is, if anything, less noisy than the A/A ratio, so the rule is not lax.)
function targets(config, summary) {
  const out = [];
  for (const np of config.nps) {
    const rows = summary.latency.filter((r) => r.np === np);
    if (!rows.length) continue;
    const dev = (r, v) => Math.abs(r[v].ratio - 1);
    const aa = Math.max(...rows.map((r) => dev(r, 'world-again')));
    const tol = Math.max(TOL_MIN, aa);
    for (const v of ['split', 'dup', 'dup-2048th']) {
      const worst = rows.reduce((a, r) => (dev(r, v) > dev(a, v) ? r : a));
      const failing = rows.filter((r) => dev(r, v) > tol).map((r) => `${pointName(r.coll, r.bytes)} ${fmtRatio(r[v].ratio)}`);
      out.push({
        np, variant: v, tolerance: tol, aaNoise: aa, worst: dev(worst, v), worstPoint: pointName(worst.coll, worst.bytes),
        // a systematic gap would move the typical point, not only the worst
        medianRatio: median(rows.map((r) => r[v].ratio)), medianAaRatio: median(rows.map((r) => r['world-again'].ratio)),
        met: failing.length === 0, failing,
      });
    }
  }
  return out;
}

// ---------------------------------------------------------------- report
function fmtUs(x) {
  if (x === undefined || x === null) return '—';
  if (x >= 1000) return x.toFixed(0);
  if (x >= 100) return x.toFixed(1);
  if (x >= 10) return x.toFixed(2);
  return x.toFixed(3);
}
const fmtRatio = (r) => (r === undefined || r === null || !Number.isFinite(r) ? '—' : r.toFixed(2));
const pct = (x) => `${(x * 100).toFixed(1)} %`;
const fmtSize = (b) => (b === 0 ? '—' : b >= 1048576 ? `${b / 1048576} MiB` : b >= 1024 ? `${b / 1024} KiB` : `${b} B`);
const pointName = (coll, bytes) => (bytes ? `${coll} ${fmtSize(bytes)}` : coll);
const KIND_CALL = {
  dup: '`comm.dup()`', 'split(rank%2,rank)': '`split(rank % 2, rank)`', 'split(0,-rank)': '`split(0, -rank)`',
  'create(group)': '`create(world.group())`',
};

function markdown(result) {
  const { config, machine, versions, summary, load } = result;
  const L = [];
  const cr = (np, impl, kind, mode) => summary.creation.find((c) => c.np === np && c.impl === impl && c.kind === kind && c.mode === mode);
  const hasOmpi = summary.creation.some((c) => c.impl === 'ompi');
  const p = config.params;
  const ncpu = machine.cpuCount;
  L.push('# Communicator benchmark', '');
  L.push('What a communicator costs to create and free in nodempi, and whether collectives on a',
    'communicator made by `dup()` or `split()` are as fast as on `COMM_WORLD`. Written by',
    '`bench/comms.mjs`; every number below comes from `bench/results/comms.json`.', '');
  L.push('## How to run', '');
  L.push('```sh', 'npm run build                  # the bench uses dist/ and build/Release',
    'node bench/comms.mjs           # full run (3-5 min on 2 cores): results/comms.json and this file',
    'node bench/comms.mjs --quick   # smoke test, under a minute: results/comms-partial.json only',
    '```', '');
  L.push('Options: `--runs R` (fresh-process repetitions, default 5), `--np 2,3,4` (world sizes;',
    'anything but the default writes the partial file, as does `--no-ompi`), `--no-idle-wait`,',
    '`--report FILE` (measure nothing; recompute medians, targets and this file from a results file).',
    'Open MPI is optional: without `mpicc` the script says how to install it and leaves its',
    'columns empty. `bench/ompi/comms.c` is compiled with `mpicc -O2` into a temporary',
    'directory and run with `mpirun --allow-run-as-root --oversubscribe -n N`. The bench exits',
    'non-zero if any result is wrong or a job fails.', '');
  L.push('## Method', '');
  L.push(`- **Jobs.** Per world size N (${config.nps.join(', ')}): \`node dist/cli.js -n N bench/comms_job.mjs\` and, for`,
    '  context, Open MPI\'s `bench/ompi/comms.c` under `mpirun`. Every job is a fresh process tree;',
    `  the whole set is repeated ${config.runs} time(s) in a rotated order and the tables show the **median**`,
    '  over runs. Before each job the script waits (up to 10 s, 90 s in all) for other work to',
    '  leave the CPUs idle and afterwards computes how many cores other processes used during the',
    `  job; a job during which they used more than ${EXT_MAX} cores is *noisy*, and a median is`,
    '  taken over the clean runs when there are at least min(R, 3) of them.',
    '- **Creation.** Four kinds, each followed by `free()`: `dup()`; `split(rank % 2, rank)`',
    '  (two halves); `split(0, -rank)` (one color, order reversed); `create(world.group())`.',
    '  Each kind is first verified (size, rank, member order by an allgather, an allreduce on the',
    '  new communicator; all exact), then warmed up for',
    `  ${p.warmMs} ms (timed batches of 1, 2, 4, … pairs), then timed OSU style: each call timed on`,
    '  its own, an untimed `COMM_WORLD` barrier between calls. *create+free* times',
    '  `make(); c.free()` together; *create* and *free* come from a second loop that times them',
    '  apart with a barrier in between, so each starts with the ranks in step. Iterations:',
    `  ~${p.targetMs} ms worth, at least ${p.minIters} (at most ${p.maxIters}) per loop, so every job`,
    '  creates and frees at least 16 000 communicators through a pool of 4095 contexts.',
    '  Before and after the loops the job holds as many dups at once as it can: the two counts must',
    '  be equal (a leaked context would fail the job). The per-rank mean is reported as the **max over ranks**. The',
    '  kinds run in an order rotated by run. Open MPI gets the same loops in C (`MPI_Comm_dup`,',
    '  `MPI_Comm_split`, `MPI_Comm_create`, `MPI_Comm_free`).',
    '- **Latency.** `bench/lib/sweep.mjs` (the scheme of `bench/run.mjs`: correctness call on',
    '  poisoned buffers with every element checked, timed warm-up, each call timed on its own',
    '  with an untimed barrier of the same communicator between calls, result checked again,',
    `  max over ranks; warm-up ${p.collWarmMs} ms and ~${p.collTargetMs} ms timed per point) for barrier,`,
    '  allreduce of 8 B, 1 KiB and 1 MiB and bcast of 8 B and 1 MiB (Float64Array, SUM, root 0)',
    '  on seven communicators: `COMM_WORLD`; `world.dup()`; `world.split(0, rank)` (same members,',
    '  same order); `COMM_WORLD` *again* — an A/A pair that shows the noise floor;',
    '  `world.split(rank % 2, rank)` for reference (both halves run at once; the max over both is',
    '  shown; at 2 ranks each half is a single rank); the 2048th of 2048 dups alive at once, each',
    '  used once before; and *rotating*: every call on the next of those 2048 (so every call finds',
    '  its communicator\'s slot set given to another and binds one again). The variants of a point run one after',
    '  another in the same process, in an order rotated by point and by run, after an untimed',
    '  warm-up pass on `COMM_WORLD`. Ratios are taken per run (both sides from the same job) against',
    '  the mean of the run\'s two `COMM_WORLD` samples, then the median over runs.', '');
  L.push('## Results', '');
  L.push(`Run of ${result.date} (${(result.totalSeconds / 60).toFixed(1)} min). Machine: ${machine.cpuCount} × ${machine.cpuModel}, ` +
    `${machine.totalMemGiB} GiB, ${machine.uname.sysname} ${machine.uname.release} ${machine.uname.machine}; Node ${versions.node}; ` +
    `${versions.openmpi ?? 'Open MPI not run'}; nodempi ${versions.nodempi} (${versions.commit ?? '?'}${versions.dirty ? ', uncommitted changes' : ''}). ` +
    `1-min load average ${load.loadavgStart.toFixed(2)} at the start, ${load.loadavgEnd.toFixed(2)} at the end; other processes used a median ` +
    `${load.medianExtCores === null ? '?' : load.medianExtCores.toFixed(2)} cores during a job (max ${load.maxExtCores === null ? '?' : load.maxExtCores.toFixed(2)}); ` +
    `${load.noisyJobs} of ${result.runs.length} jobs were noisy.` +
    (load.noisyMedians.length ? ` Medians over all runs, noisy ones included, for: ${load.noisyMedians.join(', ')}.` : '') +
    ` ${ncpu} cores: runs with more ranks than cores are oversubscribed (nodempi then yields instead of spinning; ` +
    'so does Open MPI under `--oversubscribe`) and far noisier.', '');

  L.push('### Targets', '');
  L.push('Collectives on a split or dup communicator, and on the 2048th communicator alive, as fast as on `COMM_WORLD`, within noise:',
    'for every point, the median over runs of the ratio variant / `COMM_WORLD` (the mean of the',
    'two `COMM_WORLD` samples of that run) within ± the tolerance, which is the largest A/A gap',
    '(median of `COMM_WORLD` again / `COMM_WORLD`) over the points at that world size, or 5 %,',
    'whichever is larger.', '');
  L.push('| ranks | communicator | tolerance (A/A noise) | worst gap | median ratio over the points (A/A) | met | points outside |');
  L.push('|--:|---|--:|--:|--:|---|---|');
  for (const t of result.targets) {
    L.push(`| ${t.np} | ${{ split: '`split(0, rank)`', dup: '`dup()`', 'dup-2048th': 'the 2048th `dup()`' }[t.variant]} | ±${pct(t.tolerance)} (${pct(t.aaNoise)}) | ` +
      `${pct(t.worst)} (${t.worstPoint}) | ${fmtRatio(t.medianRatio)} (${fmtRatio(t.medianAaRatio)}) | ${t.met ? 'yes' : '**no**'} | ${t.failing.join('; ')} |`);
  }
  L.push('');
  const tg = result.targets;
  if (tg.length) {
    const worstOf = (list) => list.reduce((a, t) => (t.worst > a.worst ? t : a));
    const w = worstOf(tg), aaMax = Math.max(...tg.map((t) => t.aaNoise));
    const at = (np) => tg.filter((t) => t.np === np);
    L.push(`In words: over ${config.nps.join(', ')} ranks, every point of \`dup()\`, \`split(0, rank)\` and the 2048th dup is within ` +
      `${pct(w.worst)} of \`COMM_WORLD\` (worst: ${w.variant} ${w.worstPoint} at ${w.np} ranks), while \`COMM_WORLD\` measured twice ` +
      `differs by up to ${pct(aaMax)}; the median ratio over the points is ` +
      `${config.nps.map((np) => `${at(np).map((t) => `${t.variant} ${fmtRatio(t.medianRatio)}`).join(', ')} at ${np} ranks`).join('; ')}. ` +
      (tg.every((t) => t.met) ? 'The target is met at every world size.'
        : `Points outside the tolerance: ${tg.filter((t) => !t.met).map((t) => `${t.variant} at ${t.np} ranks (${t.failing.join(', ')})`).join('; ')}.`),
      '');
  }

  L.push('### Creation cost', '');
  L.push('µs per call, max over ranks, median over runs. *create+free* is one loop timing both;',
    '*create* and *free* are timed apart in another loop (see Method), so they need not add up to it.', '');
  for (const np of config.nps) {
    L.push(`**${np} ranks**${np > ncpu ? ` (oversubscribed: ${np} ranks on ${ncpu} cores)` : ''}:`, '');
    L.push(`| kind | nodempi create+free | create | free |${hasOmpi ? ' Open MPI create+free | create | free | nodempi / Open MPI (create+free) |' : ''}`);
    L.push(`|---|--:|--:|--:|${hasOmpi ? '--:|--:|--:|--:|' : ''}`);
    for (const kind of KINDS) {
      const n = MODES.map((m) => cr(np, 'nodempi', kind, m)?.median_us);
      const o = MODES.map((m) => cr(np, 'ompi', kind, m)?.median_us);
      L.push(`| ${KIND_CALL[kind]} | ${n.map(fmtUs).join(' | ')} |` +
        (hasOmpi ? ` ${o.map(fmtUs).join(' | ')} | ${o[0] ? fmtRatio(n[0] / o[0]) : '—'} |` : ''));
    }
    const pools = result.runs.filter((j) => j.np === np && j.impl === 'nodempi').map((j) => j.lines.find((l) => l.section === 'pool'))
      .map((l) => `${l.before ?? '?'} / ${l.after ?? l.held}`);
    L.push('', `nodempi communicators that can exist at once, before / after the creation loops: ${[...new Set(pools)].join(', ')} ` +
      `(in each of ${pools.length} run(s)).`, '');
  }

  L.push('### Collective latency by communicator', '');
  L.push('µs per call, max over ranks, median over runs. Ratios are medians of per-run ratios: to the mean of',
    'the two `COMM_WORLD` samples of the run, except A/A (`COMM_WORLD` again / `COMM_WORLD`).', '');
  for (const np of config.nps) {
    const rows = summary.latency.filter((r) => r.np === np);
    if (!rows.length) continue;
    L.push(`**${np} ranks**${np > ncpu ? ' (oversubscribed)' : ''}; half-size split: communicators of ${rows[0].halfSizes.join(' and ')} rank(s):`, '');
    L.push('| collective | size | COMM_WORLD | dup | split(0, rank) | COMM_WORLD again | dup / world | split / world | A/A | half split | half / world | 2048th dup | 2048th / world | rotating over 2048 | rotating / world |');
    L.push('|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
    for (const r of rows) {
      L.push(`| ${r.coll} | ${fmtSize(r.bytes)} | ${fmtUs(r.world.median_us)} | ${fmtUs(r.dup.median_us)} | ${fmtUs(r.split.median_us)} | ` +
        `${fmtUs(r['world-again'].median_us)} | ${fmtRatio(r.dup.ratio)} | ${fmtRatio(r.split.ratio)} | ${fmtRatio(r['world-again'].ratio)} | ` +
        `${fmtUs(r.half.median_us)} | ${fmtRatio(r.half.ratio)} | ${fmtUs(r['dup-2048th'].median_us)} | ${fmtRatio(r['dup-2048th'].ratio)} | ` +
        `${fmtUs(r.rotating.median_us)} | ${fmtRatio(r.rotating.ratio)} |`);
    }
    L.push('');
  }
  L.push('`bench/results/comms.json` holds the machine, versions, parameters, every job of every run',
    '(command, duration, CPU use, other processes\' load, every line it printed), the medians with',
    'their run values, and the targets.', '');
  return L.join('\n');
}

// ---------------------------------------------------------------- main
async function main() {
  const config = options(process.argv.slice(2));
  if (config.report) {
    // Recomputes everything from the recorded runs, e.g. after a change to
    // the statistics, without measuring again.
    const file = join(process.cwd(), config.report);
    const result = JSON.parse(readFileSync(file, 'utf8'));
    report(result, file, file === join(BENCH, 'results', 'comms.json'));
    return;
  }
  const t0 = Date.now();
  const loadavgStart = os.loadavg()[0];
  const impls = ['nodempi'];
  let ompiExe = null, ompiVersion = null;
  if (config.ompi) {
    if (!which('mpicc') || !which('mpirun')) {
      log('comms: Open MPI not found (mpicc/mpirun); its column stays empty. To include it:\n' +
        '  apt-get update && apt-get install -y openmpi-bin libopenmpi-dev');
    } else {
      tempDir = mkdtempSync(join(os.tmpdir(), 'nodempi-comms-'));
      ompiExe = join(tempDir, 'comms');
      try {
        execFileSync('mpicc', ['-O2', '-o', ompiExe, join(BENCH, 'ompi', 'comms.c')], { stdio: ['ignore', 'inherit', 'inherit'] });
        impls.push('ompi');
        ompiVersion = (tryRun('mpirun', ['--version']) ?? '').split('\n')[0] || 'Open MPI (unknown version)';
      } catch (e) {
        log(`comms: mpicc failed to compile bench/ompi/comms.c (${e.message}); the Open MPI column stays empty`);
      }
    }
  }
  const versions = {
    node: process.version,
    openmpi: ompiVersion,
    nodempi: JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version,
    commit: tryRun('git', ['rev-parse', '--short', 'HEAD']),
    dirty: (tryRun('git', ['status', '--porcelain', '--untracked-files=no']) ?? '') !== '',
  };
  log(`comms: ${config.runs} run(s) x np ${config.nps.join(',')} x ${impls.join(', ')}; load average ${loadavgStart.toFixed(2)}`);

  const jobs = [];
  try {
    for (let run = 0; run < config.runs; run++) {
      const order = [];
      for (const np of config.nps) for (const impl of impls) order.push([impl, np]);
      const rot = run % order.length;
      for (const [impl, np] of [...order.slice(rot), ...order.slice(0, rot)]) {
        const idle = config.idleWait ? await waitIdle() : { busyBefore: null, waitedS: 0 };
        const job = await runJob(impl, np, run, config.params, ompiExe);
        job.idle = idle;
        job.noisy = job.extCores !== null && job.extCores > EXT_MAX;
        jobs.push(job);
        log(`comms: run ${run + 1}/${config.runs} ${impl} np=${np}: ${job.seconds} s, others used ${job.extCores ?? '?'} cores` +
          `${job.noisy ? ' (noisy)' : ''}${idle.waitedS > 1 ? `, waited ${idle.waitedS} s for idle CPUs` : ''}`);
      }
    }
  } finally {
    if (tempDir) rmSync(tempDir, { recursive: true, force: true });
  }

  const result = {
    date: new Date(t0).toISOString(),
    totalSeconds: +((Date.now() - t0) / 1000).toFixed(1),
    machine: machineInfo(),
    versions,
    config: { runs: config.runs, nps: config.nps, quick: config.quick, params: config.params, noisyAboveCores: EXT_MAX, tolMin: TOL_MIN },
    load: { loadavgStart, loadavgEnd: os.loadavg()[0] },
    runs: jobs,
  };
  report(result, join(BENCH, 'results', config.partial ? 'comms-partial.json' : 'comms.json'), !config.partial);
}

/** Medians, load summary and targets from the runs; writes the results file and, for a full run, COMMS.md. */
function report(result, out, writeMd) {
  const { config, runs: jobs } = result;
  const summary = summarize(config, jobs);
  const ext = jobs.map((j) => j.extCores).filter((x) => x !== null);
  const noisyMedians = [];
  for (const np of config.nps) {
    for (const impl of ['nodempi', 'ompi']) {
      if (summary.creation.some((c) => c.np === np && c.impl === impl && c.noisy)) noisyMedians.push(`${impl} @${np}`);
    }
  }
  Object.assign(result.load, {
    medianExtCores: median(ext), maxExtCores: ext.length ? Math.max(...ext) : null,
    noisyJobs: jobs.filter((j) => j.noisy).length, noisyMedians,
  });
  result.summary = summary;
  result.targets = targets(config, summary);
  // fixed key order, whichever way the result was produced
  const { runs, ...head } = result;
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify({ ...head, runs }, null, 1)}\n`);
  log(`comms: wrote ${relative(ROOT, out)}`);
  const md = markdown(result);
  if (writeMd) {
    writeFileSync(join(BENCH, 'COMMS.md'), md);
    log('comms: wrote bench/COMMS.md');
  } else {
    process.stdout.write(md.slice(md.indexOf('## Results')));
  }
}

main().catch((e) => {
  console.error(`comms: ${e.message}`);
  if (tempDir) rmSync(tempDir, { recursive: true, force: true });
  process.exit(1);
});
