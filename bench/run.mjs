#!/usr/bin/env node
// nodempi collective benchmark: `npm run bench` or `node bench/run.mjs [options]`.
//
// Runs the OSU-style sweep of bench/lib/sweep.mjs (same scheme in C in
// bench/ompi/osu_coll.c) for every implementation side by side:
//   nodempi    node dist/cli.js -n N bench/nodempi_job.mjs
//   sab        bench/baseline/sab.mjs: worker_threads + SharedArrayBuffer + Atomics.wait
//   sab-spin   the same, polling before Atomics.wait (only when ranks <= cores)
//   ipc        bench/baseline/ipc.mjs: child_process.fork + process.send ('advanced')
//   ompi       Open MPI's C API, mpirun --oversubscribe, busy-polling (its default
//              with ranks <= cores; forced with mpi_yield_when_idle 0 above that)
//   ompi-yield the same with --mca mpi_yield_when_idle 1 (only when ranks > cores)
//   nodempi-nocheck  nodempi with NODEMPI_CHECK_SAME=0 (when named: --impl)
// Every job is a fresh process (a fresh mpirun / launcher for MPI jobs); the
// whole set is repeated --runs times and the median per point is reported.
// Writes bench/results/latest.json and the table in bench/README.md (full
// runs) or bench/results/partial.json (--quick, --only, --np, --impl, --sizes).
// --set v runs the collectives added by the "complete collective API" issue
// instead (gatherv ... exscan, bench/lib/sweep.mjs VCOLLS) and writes
// bench/results/vcoll.json and bench/VCOLL.md (or results/vcoll-partial.json);
// the baselines implement only the original eight, so their jobs are skipped
// for collectives they lack and their cells stay empty.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import {
  BENCH, EXT_MAX, NCPU, ROOT, addonInfo, buildOsuColl, fmtRatio, list, log, onInterrupt, parseOptions, runJob as runBenchJob, tryRun, usageError, which,
} from './lib/jobs.mjs';
import { latencySvg } from './lib/plot.mjs';
import { compactJson, loadSummary, repeatJobs, roundPoint, summarize as summarizeRuns, writeBetweenMarkers } from './lib/repeat.mjs';
import { ALL_COLLS, COLLS, SIZES, VCOLLS, sweepArgv } from './lib/sweep.mjs';

const NODE = process.execPath;
const ALL_IMPLS = ['nodempi', 'sab', 'sab-spin', 'ipc', 'ompi', 'ompi-yield'];
// Run only when named, so the default run and its table stay as they were.
const KNOWN_IMPLS = [...ALL_IMPLS, 'nodempi-nocheck'];
const SAB_SPIN = 20000; // Atomics.load polls before Atomics.wait in sab-spin (how long that lasts: bench/README.md)
// What each implementation can run; a baseline is asked only for these (the
// plain-JS peers were written for the original eight and are not meant to grow).
const IMPL_COLLS = { nodempi: ALL_COLLS, 'nodempi-nocheck': ALL_COLLS, sab: COLLS, 'sab-spin': COLLS, ipc: COLLS, ompi: ALL_COLLS, 'ompi-yield': ALL_COLLS };
// The collective sets: the default keeps the README table comparable from run to run.
// The v set's full run must stay under ~8 minutes on 2 cores: 3 runs of 5 jobs fit.
const SETS = {
  default: { colls: COLLS, full: 'latest.json', partial: 'partial.json', md: 'README.md', runs: 5, budgetMin: 14 },
  v: { colls: VCOLLS, full: 'vcoll.json', partial: 'vcoll-partial.json', md: 'VCOLL.md', runs: 3, budgetMin: 8 },
};

const usage = `usage: node bench/run.mjs [options]
  --quick            smoke test: sizes 8 B, 16 KiB, 1 MiB, one run, short loops (< ~1 min)
  --runs R           fresh-process repetitions per job, median reported (default 5; 3 with --set v)
  --np 2,4           world sizes (default 2,4)
  --set v            the collectives of the complete-API issue instead of the original eight:
                     ${VCOLLS.join(',')};
                     results in results/vcoll.json and bench/VCOLL.md (results/vcoll-partial.json when
                     partial); the baselines lack them, so their jobs are skipped
  --only a,b         collectives (default: ${COLLS.join(',')});
                     the --set v ones may be named too (a list of only those implies --set v)
  --impl a,b         implementations (default: ${ALL_IMPLS.join(',')}; also nodempi-nocheck,
                     nodempi with NODEMPI_CHECK_SAME=0)
  --sizes 8,1024     message sizes in bytes (default: 8 B ... 16 MiB)
  --target-ms T      timed part of each point, per job (default 150)
  --warm-ms W        warm-up part of each point (default 50)
  --no-idle-wait     start jobs even when something else keeps the CPUs busy
  --budget-min M     after the R runs, jobs with fewer than min(R, 3) clean runs (other processes
                     used < ${EXT_MAX} cores meanwhile) run again while the bench is under M minutes
                     (default 14; 8 with --set v)
  --report FILE      no run: recompute medians and targets from a results file, rewrite it, its
                     SVG and (for results/latest.json, or with --readme) the README table
  --out FILE         results file (default bench/results/latest.json for a full
                     run, bench/results/partial.json otherwise)
  --readme / --no-readme   force / skip writing the table into bench/README.md (bench/VCOLL.md with --set v)`;

// ---------------------------------------------------------------- options
function options(argv) {
  const v = parseOptions('bench', usage, {
    quick: { type: 'boolean' }, runs: { type: 'string' }, np: { type: 'string' }, only: { type: 'string' }, set: { type: 'string' },
    impl: { type: 'string' }, sizes: { type: 'string' }, 'target-ms': { type: 'string' }, 'warm-ms': { type: 'string' },
    'no-idle-wait': { type: 'boolean' }, 'budget-min': { type: 'string' }, out: { type: 'string' }, report: { type: 'string' },
    readme: { type: 'boolean' }, 'no-readme': { type: 'boolean' },
  }, argv);
  const num = (x) => (x === undefined ? null : Number(x));
  const o = {
    quick: !!v.quick, runs: num(v.runs), nps: v.np === undefined ? [2, 4] : list(v.np, Number),
    colls: v.only === undefined ? COLLS.slice() : list(v.only), impls: v.impl === undefined ? ALL_IMPLS.slice() : list(v.impl),
    sizes: v.sizes === undefined ? SIZES.slice() : list(v.sizes, Number), targetMs: num(v['target-ms']), warmMs: num(v['warm-ms']),
    idleWait: !v['no-idle-wait'], out: v.out ?? null, partial: ['np', 'only', 'impl', 'sizes'].some((k) => v.seen.has(k)),
    budgetMin: num(v['budget-min']), set: v.set ?? null, only: v.only !== undefined,
    // the later of --readme and --no-readme wins, as when they were read in order
    readme: v.readme ? (v['no-readme'] && argv.lastIndexOf('--no-readme') > argv.lastIndexOf('--readme') ? false : true)
      : v['no-readme'] ? false : null,
  };
  if (v.report !== undefined) o.report = v.report;
  o.readmeFlags = { on: !!v.readme, off: !!v['no-readme'] };
  if (o.set !== null && !SETS[o.set]) die(`unknown set ${o.set} (known: ${Object.keys(SETS).join(', ')})`);
  for (const c of o.colls) if (!ALL_COLLS.includes(c)) die(`unknown collective ${c} (known: ${ALL_COLLS.join(', ')})`);
  o.set ??= o.only && o.colls.every((c) => VCOLLS.includes(c)) ? 'v' : 'default';
  if (!o.only) o.colls = SETS[o.set].colls.slice();
  o.budgetMin ??= SETS[o.set].budgetMin;
  for (const m of o.impls) if (!KNOWN_IMPLS.includes(m)) die(`unknown implementation ${m} (known: ${KNOWN_IMPLS.join(', ')})`);
  for (const n of o.nps) if (!Number.isInteger(n) || n < 1 || n > 64) die(`bad --np value ${n}`);
  for (const s of o.sizes) if (!Number.isInteger(s) || s < 8 || s % 8) die(`sizes must be multiples of 8 bytes, got ${s}`);
  if (o.quick) {
    o.partial = true;
    if (!v.seen.has('sizes')) o.sizes = [8, 16384, 1048576];
    o.runs ??= 1;
    o.targetMs ??= 25;
    o.warmMs ??= 8;
  }
  o.runs ??= SETS[o.set].runs;
  o.targetMs ??= 150;
  o.warmMs ??= 50;
  if (!Number.isInteger(o.runs) || o.runs < 1) die('--runs must be a positive integer');
  o.out ??= join(BENCH, 'results', o.partial ? SETS[o.set].partial : SETS[o.set].full);
  o.readme ??= !o.partial;
  return o;
}

const die = (msg) => usageError('bench', usage, msg);

// ---------------------------------------------------------------- machine
function machineInfo() {
  const cpus = os.cpus();
  const flags = (() => {
    try {
      const m = readFileSync('/proc/cpuinfo', 'utf8').match(/^flags\s*:\s*(.*)$/m);
      return m ? m[1].split(' ').filter((f) => /^(avx2|avx512f|avx512bw|sse4_2|neon|asimd)$/.test(f)) : [];
    } catch { return []; }
  })();
  return {
    cpuModel: cpus[0]?.model ?? 'unknown',
    cpuCount: cpus.length,
    cpuMHz: cpus[0]?.speed ?? null,
    cpuFlags: flags,
    uname: { sysname: os.type(), release: os.release(), version: os.version(), machine: os.machine() },
    totalMemGiB: +(os.totalmem() / 2 ** 30).toFixed(1),
    hostname: os.hostname(),
  };
}

// ---------------------------------------------------------------- jobs
function jobCommand(impl, np, sweep, ompiExe) {
  const timeoutS = 900;
  switch (impl) {
    case 'nodempi': case 'nodempi-nocheck':
      return [NODE, [join(ROOT, 'dist', 'cli.js'), '-n', String(np), '--timeout', String(timeoutS),
        join(BENCH, 'nodempi_job.mjs'), ...sweep]];
    case 'sab': return [NODE, [join(BENCH, 'baseline', 'sab.mjs'), '--np', String(np), ...sweep]];
    case 'sab-spin': return [NODE, [join(BENCH, 'baseline', 'sab.mjs'), '--np', String(np), '--spin', String(SAB_SPIN), ...sweep]];
    case 'ipc': return [NODE, [join(BENCH, 'baseline', 'ipc.mjs'), '--np', String(np), ...sweep]];
    case 'ompi': case 'ompi-yield': {
      // With more ranks than cores, mpirun --oversubscribe turns yielding on by
      // itself; the busy-polling job has to ask for busy-polling explicitly.
      const mca = impl === 'ompi-yield' ? ['--mca', 'mpi_yield_when_idle', '1']
        : np > NCPU ? ['--mca', 'mpi_yield_when_idle', '0'] : [];
      return ['mpirun', ['--allow-run-as-root', '--oversubscribe', ...mca, '-n', String(np), ompiExe, ...sweep, '--label', impl]];
    }
    default: throw new Error(impl);
  }
}

let tempDir = null;
onInterrupt(() => { if (tempDir) rmSync(tempDir, { recursive: true, force: true }); });

/** Runs one job (bench/lib/jobs.mjs); resolves with its JSON points, rejects loudly on any failure. */
async function runJob(impl, np, sweep, ompiExe, expected) {
  const [cmd, args] = jobCommand(impl, np, sweep, ompiExe);
  const env = { ...process.env };
  // Open MPI's shared-memory single-copy mechanism stays at its default.
  delete env.OMPI_MCA_btl_vader_single_copy_mechanism;
  if (impl === 'nodempi-nocheck') env.NODEMPI_CHECK_SAME = '0';
  const res = await runBenchJob(`bench: ${impl} np=${np}`, cmd, args, env, 1200,
    { check: (points) => (points.length === expected ? null : `${points.length}/${expected} points`) });
  return { points: res.points, seconds: res.exact.seconds, extCores: res.exact.extCores, cpuS: res.cpuS, stderr: res.stderr };
}

// ---------------------------------------------------------------- stats & report
function fmtSize(b) {
  if (b === 0) return '—';
  if (b >= 1048576) return `${b / 1048576} MiB`;
  if (b >= 1024) return `${b / 1024} KiB`;
  return `${b} B`;
}

function fmtUs(x) {
  if (x === undefined || x === null) return '—';
  if (x >= 1000) return x.toFixed(0);
  if (x >= 100) return x.toFixed(1);
  if (x >= 10) return x.toFixed(2);
  return x.toFixed(3);
}

/** Per point, the median over the job's clean runs (bench/lib/repeat.mjs), in table order. */
function summarize(config, runs) {
  return summarizeRuns(runs, Math.min(config.runs, 3), ['np', 'impl'],
    (m) => [config.nps.indexOf(m.np), KNOWN_IMPLS.indexOf(m.impl), ALL_COLLS.indexOf(m.coll), m.bytes]);
}

function lookup(medians) {
  const m = new Map(medians.map((x) => [`${x.np}|${x.impl}|${x.coll}|${x.bytes}`, x.median_us]));
  return (np, impl, coll, bytes) => m.get(`${np}|${impl}|${coll}|${bytes}`);
}

function pointsOf(config) {
  const pts = [];
  for (const coll of config.colls) for (const bytes of coll === 'barrier' ? [0] : config.sizes) pts.push([coll, bytes]);
  return pts;
}

/** The targets from the project brief, checked against the medians. */
function targets(config, medians) {
  const get = lookup(medians);
  const out = [];
  const fails = (list) => list.filter((x) => !x.ok);
  const describe = (x) => `${x.coll} ${fmtSize(x.bytes)} @${x.np}: ${x.text}`;
  const add = (name, list) => {
    const present = list.filter((x) => x.ok !== null);
    if (!present.length) return;
    const bad = fails(present);
    out.push({ target: name, met: bad.length === 0, checked: present.length, failing: bad.map(describe) });
  };
  const pts = pointsOf(config);
  const small = config.nps.includes(2) ? 2 : null;
  const vs = pts.filter(([coll]) => VCOLLS.includes(coll));
  if (small && vs.length) {  // the complete-API issue's own targets, first
    const vsOf = (pred) => vs.filter(pred).map(([coll, bytes]) => {
      const a = get(2, 'nodempi', coll, bytes), b = get(2, 'ompi', coll, bytes);
      return { np: 2, coll, bytes, a, b, text: `${fmtRatio(a, b)}x (nodempi ${fmtUs(a)} vs ${fmtUs(b)} us)` };
    });
    add('2 ranks: reduceScatterBlock, scan and allgatherv at 1 MiB at least as fast as Open MPI',
      vsOf(([c, b]) => b === 1048576 && ['reduceScatterBlock', 'scan', 'allgatherv'].includes(c))
        .map((x) => ({ ...x, ok: x.a && x.b ? x.a <= x.b : null })));
    add('2 ranks: the new collectives at 8 B–1 KiB within 2x of Open MPI',
      vsOf(([, b]) => b >= 8 && b <= 1024).map((x) => ({ ...x, ok: x.a && x.b ? x.a <= 2 * x.b : null })));
  }
  if (small) {
    add('2 ranks: allreduce and bcast of 8 B within 2x of Open MPI', ['allreduce', 'bcast'].map((coll) => {
      const a = get(2, 'nodempi', coll, 8), b = get(2, 'ompi', coll, 8);
      return { np: 2, coll, bytes: 8, ok: a && b ? a <= 2 * b : null, text: `nodempi ${fmtUs(a)} us vs Open MPI ${fmtUs(b)} us (${fmtRatio(a, b)}x)` };
    }));
    add('2 ranks: at 1 MiB and above at least as fast as Open MPI', pts.filter(([, b]) => b >= 1048576).map(([coll, bytes]) => {
      const a = get(2, 'nodempi', coll, bytes), b = get(2, 'ompi', coll, bytes);
      return { np: 2, coll, bytes, ok: a && b ? a <= b : null, text: `${fmtRatio(a, b)}x (nodempi ${fmtUs(a)} vs ${fmtUs(b)} us)` };
    }));
  }
  for (const np of config.nps.filter((n) => n > NCPU)) {
    add(`${np} ranks on ${NCPU} cores: no worse than Open MPI with yielding`, pts.map(([coll, bytes]) => {
      const a = get(np, 'nodempi', coll, bytes), b = get(np, 'ompi-yield', coll, bytes);
      return { np, coll, bytes, ok: a && b ? a <= b : null, text: `${fmtRatio(a, b)}x (nodempi ${fmtUs(a)} vs ${fmtUs(b)} us)` };
    }));
  }
  for (const [impl, factor, label] of [['ipc', 10, 'at least 10x faster than the IPC baseline'],
    ['sab', 1, 'faster than the SharedArrayBuffer baseline'], ['sab-spin', 1, 'faster than the SAB baseline that spins before waiting']]) {
    add(`every size: ${label}`, config.nps.flatMap((np) => pts.map(([coll, bytes]) => {
      const a = get(np, 'nodempi', coll, bytes), b = get(np, impl, coll, bytes);
      return { np, coll, bytes, ok: a && b ? b >= factor * a : null, text: `${impl}/nodempi ${fmtRatio(b, a)} (nodempi ${fmtUs(a)} vs ${fmtUs(b)} us)` };
    })));
  }
  return out;
}

function markdown(result) {
  const { config, machine, medians } = result;
  const get = lookup(medians);
  const has = (impl) => medians.some((m) => m.impl === impl);
  const noisyJobs = [...new Set(medians.filter((m) => m.noisy).map((m) => `${m.impl} @${m.np}`))];
  const lines = [];
  lines.push(`Run of ${result.date} (${(result.totalSeconds / 60).toFixed(1)} min): ${config.runs} fresh-process run(s) per job, median shown; ` +
    `warm-up ~${config.warmMs} ms then ~${config.targetMs} ms timed per point; latency in µs per call, max over ranks.`);
  lines.push('');
  lines.push(`Machine: ${machine.cpuCount} × ${machine.cpuModel}${machine.cpuMHz ? ` (${machine.cpuMHz} MHz)` : ''}, ` +
    `${machine.totalMemGiB} GiB, ${machine.uname.sysname} ${machine.uname.release} ${machine.uname.machine}; ` +
    `Node ${result.versions.node}; ${result.versions.openmpi ?? 'Open MPI not run'}; nodempi ${result.versions.nodempi} ` +
    `(${result.versions.commit ?? '?'}${result.versions.dirty ? ', uncommitted changes' : ''}` +
    `${result.versions.addon ? `; addon ${result.versions.addon.path}, built ${result.versions.addon.built}` : ''}).` +
    (result.load && result.load.medianExtCores !== null
      ? ` Other processes on the machine used a median ${result.load.medianExtCores.toFixed(2)} cores during a job ` +
        `(max ${result.load.maxExtCores.toFixed(2)}); ${result.load.noisyJobs} of ${result.runs.length} jobs were noisy ` +
        `(others used > ${EXT_MAX} cores); ${result.load.extraRuns} extra run(s) were added for jobs short of clean runs. A median is taken over the ` +
        `clean runs of a job when it has at least ${Math.min(config.runs, 3)}, else over all of its runs` +
        (noisyJobs.length ? ` (so for: ${noisyJobs.join(', ')})` : ' (no job needed that)') + '.' : ''));
  lines.push('');
  const tg = targets(config, medians);
  if (tg.length) {
    lines.push('| target | met | points checked | failing points |');
    lines.push('|---|---|---|---|');
    for (const t of tg) {
      const f = t.failing.length ? `${t.failing.length}: ${t.failing.slice(0, 6).join('; ')}${t.failing.length > 6 ? '; …' : ''}` : '';
      lines.push(`| ${t.target} | ${t.met ? 'yes' : '**no**'} | ${t.checked} | ${f} |`);
    }
    lines.push('');
  }
  for (const np of config.nps) {
    const over = np > NCPU;
    const cols = [['nodempi', 'nodempi']];
    if (has('nodempi-nocheck')) cols.push(['nodempi-nocheck', 'nodempi, checks off']);
    if (has('sab')) cols.push(['sab', 'SAB']);
    if (!over && has('sab-spin')) cols.push(['sab-spin', 'SAB spin']);
    if (has('ipc')) cols.push(['ipc', 'IPC']);
    if (has('ompi')) cols.push(['ompi', over ? 'Open MPI (busy)' : 'Open MPI']);
    if (over && has('ompi-yield')) cols.push(['ompi-yield', 'Open MPI (yield)']);
    const ref = over ? 'ompi-yield' : 'ompi';
    const ratios = [];
    if (has(ref)) ratios.push([`nodempi / ${over ? 'OMPI yield' : 'OMPI'}`, (c, b) => fmtRatio(get(np, 'nodempi', c, b), get(np, ref, c, b))]);
    if (has(ref) && has('nodempi-nocheck')) {
      ratios.push([`checks off / ${over ? 'OMPI yield' : 'OMPI'}`, (c, b) => fmtRatio(get(np, 'nodempi-nocheck', c, b), get(np, ref, c, b))]);
    }
    if (over && has('ompi')) ratios.push(['nodempi / OMPI busy', (c, b) => fmtRatio(get(np, 'nodempi', c, b), get(np, 'ompi', c, b))]);
    if (has('ipc')) ratios.push(['IPC / nodempi', (c, b) => fmtRatio(get(np, 'ipc', c, b), get(np, 'nodempi', c, b))]);
    if (has('sab')) ratios.push(['SAB / nodempi', (c, b) => fmtRatio(get(np, 'sab', c, b), get(np, 'nodempi', c, b))]);
    if (!over && has('sab-spin')) ratios.push(['SAB spin / nodempi', (c, b) => fmtRatio(get(np, 'sab-spin', c, b), get(np, 'nodempi', c, b))]);
    lines.push(`**${np} ranks${over ? ` (oversubscribed: ${np} ranks on ${NCPU} cores)` : ''}**, µs per call:`);
    lines.push('');
    lines.push(`| collective | size | ${cols.map((c) => c[1]).join(' | ')} | ${ratios.map((r) => r[0]).join(' | ')} |`);
    lines.push(`|---|--:|${cols.map(() => '--:').join('|')}|${ratios.map(() => '--:').join('|')}|`);
    for (const [coll, bytes] of pointsOf(config)) {
      lines.push(`| ${coll} | ${fmtSize(bytes)} | ${cols.map(([impl]) => fmtUs(get(np, impl, coll, bytes))).join(' | ')} | ` +
        `${ratios.map(([, f]) => f(coll, bytes)).join(' | ')} |`);
    }
    lines.push('');
  }
  return lines.join('\n');
}

function writeReadme(md) {
  writeBetweenMarkers(join(BENCH, 'README.md'), md, { title: 'nodempi benchmarks' });
}

// ---------------------------------------------------------------- main
async function main() {
  const o = options(process.argv.slice(2));
  if (o.report) {  // re-render a results file without running anything
    const out = resolve(o.report);  // relative to the working directory, or absolute
    const full = [join(BENCH, 'results', SETS.default.full), join(BENCH, 'results', SETS.v.full)];
    report(JSON.parse(readFileSync(out, 'utf8')), out, o.readmeFlags.on || (!o.readmeFlags.off && full.includes(out)));
    return;
  }
  const t0 = performance.now();

  if (!existsSync(join(ROOT, 'dist', 'index.js')) || !existsSync(join(ROOT, 'dist', 'cli.js'))) {
    console.error('bench: dist/ is missing; run `npm run build` first');
    process.exit(1);
  }
  const impls = o.impls.slice();
  let ompiExe = null, ompiDir = null, ompiVersion = null;
  if (impls.some((i) => i.startsWith('ompi'))) {
    if (!which('mpicc') || !which('mpirun')) {
      log('bench: Open MPI not found (mpicc/mpirun); its columns are skipped. To include it:\n' +
        '  apt-get update && apt-get install -y openmpi-bin libopenmpi-dev');
      for (const x of ['ompi', 'ompi-yield']) if (impls.includes(x)) impls.splice(impls.indexOf(x), 1);
    } else {
      ompiDir = tempDir = mkdtempSync(join(os.tmpdir(), 'nodempi-bench-'));
      ompiExe = join(ompiDir, 'osu_coll');
      try {
        buildOsuColl(ompiExe);
      } catch (e) {
        console.error(e.message);
        process.exit(1);
      }
      ompiVersion = (tryRun('mpirun', ['--version']) ?? '').split('\n')[0] || 'Open MPI (unknown version)';
    }
  }

  const sweepOpts = {
    colls: o.colls, sizes: o.sizes, warmMs: o.warmMs, firstWarmMs: 4 * o.warmMs, targetMs: o.targetMs,
    maxWarm: 1000000, minIters: 2, maxIters: 200000,
  };
  // each implementation runs the asked-for collectives it has (a baseline lacks the v forms)
  const collsOf = (impl) => o.colls.filter((c) => IMPL_COLLS[impl].includes(c));
  // More ranks than cores: a fresh nodempi job's first second of calls runs
  // slower than its steady state (bench/README.md, "Measurements behind the
  // code"), so the first size of each collective warms up for a second
  // there, for every implementation alike.
  const sweepOf = (impl, np) => sweepArgv({
    ...sweepOpts, colls: collsOf(impl), firstWarmMs: np > NCPU ? Math.max(1000, sweepOpts.firstWarmMs) : sweepOpts.firstWarmMs,
  });
  const expectedOf = (impl) => collsOf(impl).reduce((n, c) => n + (c === 'barrier' ? 1 : o.sizes.length), 0);
  const expected = expectedOf('nodempi');
  const skipped = impls.filter((impl) => collsOf(impl).length < o.colls.length);
  if (skipped.length) {
    log(`bench: ${skipped.join(', ')} lack ${o.colls.filter((c) => skipped.some((i) => !IMPL_COLLS[i].includes(c))).join(', ')}; ` +
      'those cells stay empty');
  }

  const jobsFor = (np) => impls.filter((impl) => {
    if (!collsOf(impl).length) return false;
    if (impl === 'sab-spin') return np <= NCPU;      // spinning only makes sense with a core per rank
    if (impl === 'ompi-yield') return np > NCPU;     // the oversubscribed case
    return true;
  });

  const machine = machineInfo();
  const versions = {
    node: process.version,
    openmpi: ompiVersion,
    nodempi: JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version,
    commit: tryRun('git', ['rev-parse', '--short', 'HEAD']),
    dirty: (tryRun('git', ['status', '--porcelain', '--untracked-files=no']) ?? '') !== '',
  };
  // an addon picked with NODEMPI_ADDON is named in the results; a stale one is worth a warning either way
  const addon = addonInfo();
  if (process.env.NODEMPI_ADDON) versions.addon = addon;
  if (addon.olderThanSources) log(`bench: warning: ${addon.path} is older than native/; the numbers describe an earlier build`);
  const config = { ...sweepOpts, nps: o.nps, runs: o.runs, impls, quick: o.quick, sabSpin: SAB_SPIN, cores: NCPU,
    ...(o.set !== 'default' ? { set: o.set } : {}) };
  const loadStart = os.loadavg();
  const total = o.runs * o.nps.reduce((n, np) => n + jobsFor(np).length, 0);
  const withJobs = impls.filter((impl) => o.nps.some((np) => jobsFor(np).includes(impl)));
  log(`bench: ${o.runs} run(s) × np ${o.nps.join(',')} × {${withJobs.join(', ')}}: ${total} jobs, ${expected} points each` +
    `${ompiVersion ? `; ${ompiVersion}` : ''}`);

  const groups = o.nps.map((np) => jobsFor(np).map((impl) => ({ fields: { np, impl }, name: `np=${np} ${impl.padEnd(10)}` })));
  let rep;
  try {
    rep = await repeatJobs({
      groups, runs: o.runs, quick: o.quick, idleWait: o.idleWait, budgetMin: o.budgetMin, t0,
      start: ({ fields: { np, impl } }) => runJob(impl, np, sweepOf(impl, np), ompiExe, expectedOf(impl)),
    });
  } catch (e) {
    console.error(`\nbench: FAILED: ${e.message}`);
    if (ompiDir) rmSync(ompiDir, { recursive: true, force: true });
    process.exit(1);
  }
  if (ompiDir) rmSync(ompiDir, { recursive: true, force: true });

  const result = {
    date: new Date().toISOString(),
    totalSeconds: (performance.now() - t0) / 1000,
    machine, versions, config,
    load: loadSummary(rep, o.set !== 'default' ? { loadavgStart: loadStart } : {}),
    method: METHOD,
    medians: null,
    runs: rep.runs,
  };
  report(result, o.out, o.readme);
}

const METHOD = 'OSU-style: per point, a correctness check, a probe call, a timed warm-up (50 ms; 200 ms for the first ' +
  'size of a collective, 1 s when ranks outnumber cores), then N timed calls (~150 ms) each followed by an untimed barrier (barrier itself: back-to-back ' +
  'loop); per-rank mean, max over ranks; median over fresh-process runs (clean runs only when there are >= min(R, 3)).';

/** The whole of bench/VCOLL.md: how the --set v numbers were taken, then the tables. */
function writeVcollMd(result, md) {
  const la = result.load ?? {};
  const fmtLoad = (l) => (Array.isArray(l) ? l[0].toFixed(2) : '?');
  const text = `# The collectives of the complete-API issue, against Open MPI

Written by \`node bench/run.mjs --set v\` (a full run; \`--set v --quick\` writes
\`results/vcoll-partial.json\` and leaves this file alone); raw runs, medians and
targets in \`results/vcoll.json\`, plot in \`results/vcoll.svg\`. Re-render
without running: \`node bench/run.mjs --report bench/results/vcoll.json\`.

What runs: ${VCOLLS.join(', ')}, on COMM_WORLD, with the scheme of the main
sweep (bench/README.md, "What is measured, and how"): Float64Array /
\`MPI_DOUBLE\`, SUM, root 0, a correctness check before and after the timed
loop, each call followed by an untimed barrier, max over ranks, median of
fresh-process runs. The size is one rank's block: what each rank sends for
gatherv/allgatherv, receives for scatterv/reduceScatter/reduceScatterBlock,
sends to each peer for alltoallv/alltoallw; the whole buffer for scan and
exscan. The v and w forms get equal counts and explicit displacements packed
in rank order (alltoallw: \`DOUBLE\` for every peer, byte displacements),
built once per point, so they move exactly the bytes of their plain
counterparts in bench/README.md's table. The plain-JS baselines implement only
the original eight collectives and are not run here.

Targets from the issue: at 2 ranks, reduceScatterBlock, scan and allgatherv at
1 MiB at least as fast as Open MPI's C; every new collective from 8 B to 1 KiB
within 2x of Open MPI. The other rows are the package-wide targets of
bench/README.md applied to these collectives, for information.

1-min load average at the start ${fmtLoad(la.loadavgStart)}, at the end ${fmtLoad(la.loadavg)}.

## Results

${md}
`;
  writeFileSync(join(BENCH, SETS.v.md), text);
}

/** Medians, targets, the JSON file, the SVG next to it and (if asked) the table in bench/README.md or bench/VCOLL.md. */
function report(result, out, readme) {
  const { config } = result;
  for (const job of result.runs) {
    job.points = job.points.map(roundPoint);
    if (job.rejected) for (const r of job.rejected) r.points = r.points.map(roundPoint);
  }
  const medians = summarize(config, result.runs);
  result.medians = medians;
  result.targets = targets(config, medians);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${compactJson(result)}\n`);
  const svgPath = out.replace(/\.json$/, '') + '.svg';
  const vset = config.set === 'v';
  const plotColls = (vset ? ['allgatherv', 'reduceScatterBlock', 'scan'] : ['bcast', 'allreduce', 'alltoall'])
    .filter((c) => config.colls.includes(c));
  // only implementations with numbers get a legend entry (the baselines have none for the v set)
  const plotted = KNOWN_IMPLS.filter((i) => config.impls.includes(i) && medians.some((m) => m.impl === i));
  if (plotColls.length) writeFileSync(svgPath, latencySvg(medians, plotColls, config.nps, plotted));
  let md = markdown(result);
  if (plotColls.length && readme) {
    const rel = relative(BENCH, svgPath);
    md += `\n![latency against message size: ${plotColls.join(', ')}](${rel})\n`;
  }
  if (readme) { if (vset) writeVcollMd(result, md); else writeReadme(md); }
  console.log(md);
  log(`bench: wrote ${out}${plotColls.length ? `, ${svgPath}` : ''}${readme ? ` and bench/${vset ? SETS.v.md : 'README.md'}` : ''}` +
    ` (the runs took ${result.totalSeconds.toFixed(0)} s)`);
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
