#!/usr/bin/env node
// Point-to-point at 2 ranks: `node bench/p2p.mjs [options]` (bench/P2P.md).
//
// osu_latency (ping-pong, half round trip) and osu_bw (a window of isends
// and irecvs, then an ack) with the same method in every implementation,
// side by side in one run:
//   c            bench/ompi/osu_p2p.c built with mpicc.openmpi -O2, under mpirun.openmpi
//   mpi4py       bench/mpi4py/osu_p2p.py under mpirun.openmpi, by a python3 whose mpi4py
//                is built against Open MPI (Debian's python3-mpi4py)
//   nodempi      bench/p2p_job.mjs under the package's launcher (node dist/cli.js -n 2):
//                the shm backend
//   nodempi-mpi  bench/p2p_job.mjs under mpirun.openmpi with NODEMPI_BACKEND=mpi
// Every job is a fresh process tree; R runs of the set, rotated from run to
// run, idle waits, noisy jobs and medians over clean runs are
// bench/lib/repeat.mjs's, as in bench/backends.mjs. A job that fails is
// reported and not run again; its column says so and the script exits
// non-zero at the end.
// A full run (no --quick, --tests or sizes options) writes
// bench/results/p2p.json and the results in bench/P2P.md; any other run
// writes bench/results/p2p-partial.json and leaves P2P.md alone.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import {
  BENCH, EXT_MAX, NCPU, ROOT, findMpi4py, fmtRatio, fmtSize, fmtUs, list, log, machineInfo, onInterrupt, parseOptions, runJob, tryRun,
  usageError, which,
} from './lib/jobs.mjs';
import { BW_SIZES, LAT_SIZES, P2P_DEFAULTS, TESTS, p2pArgv } from './lib/p2p.mjs';
import { compactJson, loadSummary, repeatJobs, roundPoint, summarize, writeBetweenMarkers } from './lib/repeat.mjs';

const NODE = process.execPath;
const IMPLS = ['c', 'mpi4py', 'nodempi', 'nodempi-mpi'];
const LABELS = { c: 'C Open MPI', mpi4py: 'mpi4py', nodempi: 'nodempi (shm)', 'nodempi-mpi': 'nodempi-mpi' };
const NP = 2, MPICC = 'mpicc.openmpi', MPIRUN = 'mpirun.openmpi';
const JOB_TIMEOUT_S = 600;
// The targets: latency at 8 B at most 1.5x C; bandwidth from 1 MiB at least C's.
const LAT_TARGET_BYTES = 8, LAT_TARGET_RATIO = 1.5, BW_TARGET_FROM = 1048576;

const usage = `usage: node bench/p2p.mjs [options]
  --impl a,b        implementations (default: ${IMPLS.join(',')})
  --tests a,b       latency, bw (default: both)
  --sizes L         message sizes in bytes for both tests (each keeps its own default otherwise)
  --lat-sizes L     latency sizes (default 0, 1, 2, 4, ... 4 MiB)
  --bw-sizes L      bandwidth sizes (default 1 KiB, 4 KiB, ... 16 MiB)
  --runs R          fresh-process runs of every implementation, median reported (default 5)
  --quick           smoke test: 8 B, 4 KiB, 1 MiB latency and 64 KiB, 1 MiB bandwidth, one run, a tenth of the iterations
  --out FILE        results file (default bench/results/p2p.json for a full run, else
                    bench/results/p2p-partial.json); only the default full one updates bench/P2P.md
  --python EXE      the python3 for mpi4py (default: the first python3 on PATH that imports mpi4py and numpy)
  --idle-wait-s S   before a job, wait up to S seconds for other work to leave the CPUs idle (default 10)
  --no-idle-wait    start jobs even when something else keeps the CPUs busy
  --budget-min M    after the R runs, jobs with fewer than min(R, 3) clean runs (other processes used
                    < ${EXT_MAX} cores meanwhile) run again while the bench is under M minutes (default 15)
  --report FILE     no run: recompute medians and targets from a results file, rewrite it and (for the
                    default full results file) bench/P2P.md`;
const die = (msg) => usageError('p2p', usage, msg);

function options(argv) {
  const v = parseOptions('p2p', usage, {
    impl: { type: 'string' }, tests: { type: 'string' }, sizes: { type: 'string' }, 'lat-sizes': { type: 'string' },
    'bw-sizes': { type: 'string' }, runs: { type: 'string' }, quick: { type: 'boolean' }, out: { type: 'string' },
    python: { type: 'string' }, 'idle-wait-s': { type: 'string' }, 'no-idle-wait': { type: 'boolean' }, 'budget-min': { type: 'string' },
    report: { type: 'string' },
  }, argv);
  const o = {
    impls: v.impl === undefined ? IMPLS.slice() : list(v.impl), tests: v.tests === undefined ? TESTS.slice() : list(v.tests),
    runs: v.runs === undefined ? null : Number(v.runs), quick: !!v.quick, python: v.python ?? null, report: v.report ?? null,
    idleWait: !v['no-idle-wait'], idleWaitS: v['idle-wait-s'] === undefined ? 10 : Number(v['idle-wait-s']),
    budgetMin: v['budget-min'] === undefined ? 15 : Number(v['budget-min']),
    partial: !!v.quick || ['tests', 'sizes', 'lat-sizes', 'bw-sizes'].some((k) => v.seen.has(k)),
  };
  for (const m of o.impls) if (!IMPLS.includes(m)) die(`unknown implementation ${m} (known: ${IMPLS.join(', ')})`);
  for (const t of o.tests) if (!TESTS.includes(t)) die(`unknown test ${t} (known: ${TESTS.join(', ')})`);
  const sizes = (x, dflt) => (x === undefined ? dflt : list(x, Number));
  const p = { ...P2P_DEFAULTS, tests: o.tests };
  p.latSizes = sizes(v['lat-sizes'] ?? v.sizes, o.quick ? [8, 4096, 1048576] : LAT_SIZES);
  p.bwSizes = sizes(v['bw-sizes'] ?? v.sizes, o.quick ? [65536, 1048576] : BW_SIZES);
  for (const s of [...p.latSizes, ...p.bwSizes]) if (!Number.isInteger(s) || s < 0 || s > 2 ** 30) die(`bad size ${s}`);
  if (o.quick) {
    for (const k of ['latIters', 'latItersLarge', 'bwIters', 'bwItersLarge']) p[k] = Math.max(2, Math.round(p[k] / 10));
    p.warmMs = 10;
    p.firstWarmMs = 50;
  }
  o.p2p = p;
  o.runs ??= o.quick ? 1 : 5;
  if (!Number.isInteger(o.runs) || o.runs < 1) die('--runs must be a positive integer');
  if (!(o.idleWaitS >= 0)) die('--idle-wait-s must be a number of seconds');
  o.fullOut = join(BENCH, 'results', 'p2p.json');
  o.out = v.out === undefined ? (o.partial ? join(BENCH, 'results', 'p2p-partial.json') : o.fullOut) : resolve(v.out);
  return o;
}

// ---------------------------------------------------------------- jobs
function mpirun(nodempiMpi) {
  return [MPIRUN, [...(process.getuid?.() === 0 ? ['--allow-run-as-root'] : []), ...(nodempiMpi ? ['-x', 'NODEMPI_BACKEND=mpi'] : []),
    '-n', String(NP)]];
}

function jobCommand(impl, argv, ctx) {
  const tail = [...argv, '--label', impl];
  switch (impl) {
    case 'c': { const [cmd, a] = mpirun(false); return [cmd, [...a, ctx.exe, ...tail]]; }
    case 'mpi4py': { const [cmd, a] = mpirun(false); return [cmd, [...a, ctx.python, join(BENCH, 'mpi4py', 'osu_p2p.py'), ...tail]]; }
    case 'nodempi-mpi': { const [cmd, a] = mpirun(true); return [cmd, [...a, NODE, join(BENCH, 'p2p_job.mjs'), ...tail]]; }
    case 'nodempi':
      // the launcher's own timeout first, so that its diagnostics are the ones shown
      return [NODE, [join(ROOT, 'dist', 'cli.js'), '-n', String(NP), '--timeout', String(JOB_TIMEOUT_S - 60), join(BENCH, 'p2p_job.mjs'), ...tail]];
    default: throw new Error(impl);
  }
}

/** Every point there, from one world of 2 ranks, and a nodempi job on the backend it is named for. */
function checkPoints(impl, points, expected) {
  if (points.some((p) => p.np !== NP)) return `a point reports np=${points.find((p) => p.np !== NP).np}, not ${NP}`;
  const backend = { nodempi: 'shm', 'nodempi-mpi': 'mpi' }[impl];
  if (backend && points.some((p) => p.backend !== backend)) {
    return `ran on the ${points.find((p) => p.backend !== backend).backend} backend, not ${backend}`;
  }
  return points.length === expected ? null : `${points.length}/${expected} points`;
}

const firstLine = (s) => (s ?? '').split('\n').map((l) => l.trim()).find((l) => l) ?? '';

/** A failure as the results file keeps it: its first line and the job's most telling stderr line, without machine paths. */
function failureText(e) {
  const msg = String(e.message ?? e);
  const err = (/--- stderr:\n([\s\S]*?)\n--- stdout/.exec(msg)?.[1] ?? '').split('\n').map((l) => l.trim()).filter((l) => l);
  const tail = err.find((l) => /WRONG RESULT|has no /.test(l)) ?? err.pop() ?? '';
  const head = firstLine(msg);
  return `${head}${tail && !head.includes(tail) ? `; stderr: ${tail}` : ''}`.split(ROOT).join('.');
}

// ---------------------------------------------------------------- report
const sizesOf = (config, test) => (test === 'latency' ? config.p2p.latSizes : config.p2p.bwSizes);
const fmtBytes = (b) => (b === 0 ? '0 B' : fmtSize(b));
const mbs = (bytes, us) => (us > 0 ? bytes / us : undefined); // bytes per µs = MB/s

function lookup(medians) {
  const m = new Map(medians.map((x) => [`${x.impl}|${x.coll}|${x.bytes}`, x]));
  return (impl, test, bytes) => m.get(`${impl}|${test}|${bytes}`);
}

/** The two targets, for nodempi and nodempi-mpi each: met true/false, or null when not measured. */
function targets(config, medians) {
  const get = lookup(medians);
  const out = [];
  for (const impl of ['nodempi', 'nodempi-mpi']) {
    const lat = { target: `${LABELS[impl]}: latency at ${LAT_TARGET_BYTES} B at most ${LAT_TARGET_RATIO}x C Open MPI's`, test: 'latency',
      bytes: config.tests.includes('latency') ? config.p2p.latSizes.filter((b) => b === LAT_TARGET_BYTES) : [],
      ok: (a, c) => a <= LAT_TARGET_RATIO * c, show: (a, c) => `${fmtRatio(a, c)}x (${fmtUs(a)} vs ${fmtUs(c)} µs)` };
    const bw = { target: `${LABELS[impl]}: bandwidth from ${fmtSize(BW_TARGET_FROM)} at least C Open MPI's`, test: 'bw',
      bytes: config.tests.includes('bw') ? config.p2p.bwSizes.filter((b) => b >= BW_TARGET_FROM) : [],
      // per-message time: at most C's is bandwidth at least C's
      ok: (a, c) => a <= c, show: (a, c, b) => `${fmtRatio(c, a)}x (${mbs(b, a).toFixed(0)} vs ${mbs(b, c).toFixed(0)} MB/s)` };
    for (const t of [lat, bw]) {
      const rows = t.bytes.map((b) => ({ b, a: get(impl, t.test, b)?.median_us, c: get('c', t.test, b)?.median_us }))
        .filter((r) => r.a !== undefined && r.c !== undefined);
      out.push({
        target: t.target, impl, met: rows.length ? rows.every((r) => t.ok(r.a, r.c)) : null, checked: rows.length, of: t.bytes.length,
        points: rows.map((r) => `${fmtBytes(r.b)}: ${t.show(r.a, r.c, r.b)}${t.ok(r.a, r.c) ? '' : ' **fails**'}`),
      });
    }
  }
  return out;
}

function markdown(result) {
  const { config, machine, medians, load } = result;
  const get = lookup(medians);
  const ran = (impl) => config.impls.includes(impl) && !result.failures.some((f) => f.impl === impl);
  const empty = (impl) => (!config.impls.includes(impl) ? 'to be measured' : result.failures.some((f) => f.impl === impl) ? 'failed' : '—');
  const L = [];
  L.push(`Run of ${result.date} (${(result.totalSeconds / 60).toFixed(1)} min): ${config.runs} fresh-process run(s) of each implementation, ` +
    `alternating (rotated) from run to run; the median over runs is shown. ${NP} ranks on ${config.cores} cores.`);
  L.push('');
  const mpi4py = config.mpi4py;
  L.push(`Machine: ${machine.cpuCount} × ${machine.cpuModel}, ${machine.totalMemGiB} GiB, ${machine.uname}; Node ${machine.node}; ` +
    `${result.versions.openmpi ?? 'Open MPI (version unknown)'}` +
    (mpi4py ? `; mpi4py ${mpi4py.version} (numpy ${mpi4py.numpy}, Python ${mpi4py.python}, ${mpi4py.library})` : '') +
    `; nodempi ${machine.nodempi} (${machine.commit ?? '?'}${machine.dirty ? ', uncommitted changes' : ''}` +
    (config.impls.some((i) => i.startsWith('nodempi')) && machine.addon?.built
      ? `; addon built ${machine.addon.built}${machine.addon.olderThanSources ? ', older than native/' : ''}` : '') + ').');
  L.push('');
  if (load && load.medianExtCores !== null) {
    const noisy = [...new Set(medians.filter((m) => m.noisy).map((m) => m.impl))];
    L.push(`Load: other processes used a median ${load.medianExtCores.toFixed(2)} cores during a job (max ${load.maxExtCores.toFixed(2)}); ` +
      `${load.noisyJobs} of ${result.runs.length} jobs were noisy (others used > ${EXT_MAX} cores); ${load.extraRuns} extra run(s) were ` +
      `added for jobs short of clean runs; ${load.waitedS} s were spent waiting for idle CPUs. A median is over the clean runs of a job ` +
      `when it has at least ${Math.min(config.runs, 3)}, else over all of its runs` +
      (noisy.length ? ` (so for: ${noisy.map((i) => LABELS[i]).join(', ')})` : ' (no job needed that)') + '.');
    L.push('');
    if (noisy.length) {
      L.push(`**Medians over noisy runs** (${noisy.map((i) => LABELS[i]).join(', ')}): with 2 ranks busy-polling on 2 cores, whatever ` +
        'else runs takes a core from one of them, so these columns measure the machine\'s load more than the implementation. ' +
        'Do not read them as its speed; run again on an idle machine.');
      L.push('');
    }
  }
  if (result.failures.length) {
    L.push('Failed jobs (not run again):');
    L.push('');
    for (const f of result.failures) L.push(`- ${LABELS[f.impl]}, run ${f.run}: ${f.error}`);
    L.push('');
  }
  L.push('| target | met | points |');
  L.push('|---|---|---|');
  for (const t of result.targets) {
    const met = t.met === null ? (config.impls.includes(t.impl) ? 'not measured' : 'to be measured') : t.met ? 'yes' : '**no**';
    L.push(`| ${t.target} | ${met} | ${t.points.join('; ')} |`);
  }
  L.push('');
  const others = IMPLS.filter((i) => i !== 'c');
  for (const test of config.tests) {
    const isLat = test === 'latency';
    L.push(isLat
      ? '**Latency** (osu_latency: half round trip, µs; lower is better; ratio = implementation / C):'
      : `**Bandwidth** (osu_bw: window of ${config.p2p.window}, MB/s = 10^6 bytes/s; higher is better; ratio = implementation / C):`);
    L.push('');
    L.push(`| size | ${IMPLS.map((i) => LABELS[i]).join(' | ')} | ${others.map((i) => `${LABELS[i]} / C`).join(' | ')} |`);
    L.push(`|--:|${IMPLS.map(() => '--:').join('|')}|${others.map(() => '--:').join('|')}|`);
    for (const bytes of sizesOf(config, test)) {
      const us = (impl) => get(impl, test, bytes)?.median_us;
      const cell = (impl) => {
        if (!ran(impl) || us(impl) === undefined) return empty(impl);
        return isLat ? fmtUs(us(impl)) : mbs(bytes, us(impl)).toFixed(0);
      };
      const ratio = (impl) => {
        if (!ran(impl) || us(impl) === undefined || !ran('c') || us('c') === undefined) return '—';
        return isLat ? fmtRatio(us(impl), us('c')) : fmtRatio(us('c'), us(impl));
      };
      L.push(`| ${fmtBytes(bytes)} | ${IMPLS.map(cell).join(' | ')} | ${others.map(ratio).join(' | ')} |`);
    }
    L.push('');
  }
  // how far apart the runs were at the points the targets name
  const spread = [];
  for (const impl of IMPLS.filter(ran)) {
    const parts = [];
    const lat = get(impl, 'latency', LAT_TARGET_BYTES);
    if (lat) parts.push(`${LAT_TARGET_BYTES} B latency ${lat.runs_us.map(fmtUs).join(', ')} µs`);
    for (const b of config.tests.includes('bw') ? config.p2p.bwSizes.filter((x) => x >= BW_TARGET_FROM) : []) {
      const m = get(impl, 'bw', b);
      if (m) parts.push(`${fmtSize(b)} bw ${m.runs_us.map((u) => mbs(b, u).toFixed(0)).join(', ')} MB/s`);
    }
    if (parts.length) spread.push(`- ${LABELS[impl]}: ${parts.join('; ')}`);
  }
  if (spread.length) {
    L.push('Every run at the target points (the runs the median is over):');
    L.push('');
    L.push(...spread);
    L.push('');
  }
  return L.join('\n');
}

function report(result, out, writeMd) {
  const { config } = result;
  for (const job of result.runs) {
    job.points = job.points.map((p) => {
      const q = roundPoint(p);
      if (typeof q.mbs === 'number') q.mbs = Number(q.mbs.toPrecision(5));
      return q;
    });
  }
  const order = (m) => [IMPLS.indexOf(m.impl), TESTS.indexOf(m.coll), m.bytes];
  result.medians = summarize(result.runs, Math.min(config.runs, 3), ['impl'], order);
  for (const m of result.medians) if (m.coll === 'bw') m.median_mbs = Number((m.bytes / m.median_us).toPrecision(5));
  result.targets = targets(config, result.medians);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${compactJson(result)}\n`);
  const md = markdown(result);
  if (writeMd) writeBetweenMarkers(join(BENCH, 'P2P.md'), md, { title: 'Point-to-point: latency and bandwidth at 2 ranks' });
  console.log(md);
  for (const t of result.targets) {
    log(`p2p: target: ${t.target}: ${t.met === null ? 'not measured' : t.met ? 'met' : 'NOT met'}`);
  }
  log(`p2p: wrote ${relative(ROOT, out)}${writeMd ? ' and bench/P2P.md' : ''} (the runs took ${result.totalSeconds.toFixed(0)} s)`);
}

// ---------------------------------------------------------------- main
async function main() {
  const o = options(process.argv.slice(2));
  if (o.report) {
    const out = resolve(o.report);
    report(JSON.parse(readFileSync(out, 'utf8')), out, out === o.fullOut);
    return;
  }
  const t0 = performance.now();
  if (!which(MPIRUN)) {
    console.error(`p2p: ${MPIRUN} not found; every implementation but nodempi needs it. On Debian:\n` +
      '  apt-get update && apt-get install -y openmpi-bin libopenmpi-dev python3-mpi4py python3-numpy');
    process.exit(1);
  }
  if (o.impls.some((i) => i.startsWith('nodempi')) && (!existsSync(join(ROOT, 'dist', 'index.js')) || !existsSync(join(ROOT, 'dist', 'cli.js')))) {
    console.error('p2p: dist/ is missing; run `npm run build` first');
    process.exit(1);
  }
  const impls = o.impls.slice();
  let python = null, mpi4py = null;
  if (impls.includes('mpi4py')) {
    const found = findMpi4py(o.python);
    if (!found || found.info.lib !== 'openmpi') {
      log(`p2p: ${found ? `the mpi4py found (${found.exe}) is built against ${found.info.library}, not Open MPI` : 'no python3 with mpi4py and numpy found'}` +
        '; the mpi4py column is skipped (--python to name one). On Debian:\n  apt-get update && apt-get install -y python3-mpi4py python3-numpy');
      impls.splice(impls.indexOf('mpi4py'), 1);
    } else ({ exe: python, info: mpi4py } = found);
  }

  const tmp = mkdtempSync(join(os.tmpdir(), 'nodempi-p2p-'));
  onInterrupt(() => rmSync(tmp, { recursive: true, force: true }));
  const exe = join(tmp, 'osu_p2p');
  if (impls.includes('c')) {
    try {
      execFileSync(MPICC, ['-O2', '-o', exe, join(BENCH, 'ompi', 'osu_p2p.c')], { stdio: ['ignore', 'inherit', 'inherit'] });
    } catch (e) {
      console.error(`p2p: ${MPICC} failed to compile bench/ompi/osu_p2p.c: ${e.message}`);
      rmSync(tmp, { recursive: true, force: true });
      process.exit(1);
    }
  }

  const config = { np: NP, cores: NCPU, runs: o.runs, quick: o.quick, impls, tests: o.p2p.tests, p2p: o.p2p, mpi4py };
  const argv = p2pArgv(o.p2p);
  const expected = (o.p2p.tests.includes('latency') ? o.p2p.latSizes.length : 0) + (o.p2p.tests.includes('bw') ? o.p2p.bwSizes.length : 0);
  log(`p2p: ${o.runs} run(s) of {${impls.join(', ')}} at ${NP} ranks, ${expected} points each`);
  // a launcher's environment may pin Open MPI's single-copy mechanism or nodempi's backend; every job starts from the defaults
  const env = { ...process.env };
  delete env.OMPI_MCA_btl_vader_single_copy_mechanism;
  delete env.NODEMPI_BACKEND;
  const ctx = { exe, python };
  const machineAtStart = machineInfo();
  let rep;
  try {
    rep = await repeatJobs({
      groups: [impls.map((impl) => ({ fields: { impl }, name: impl.padEnd(11) }))], runs: o.runs, quick: o.quick, idleWait: o.idleWait,
      idleWaitS: o.idleWaitS, budgetMin: o.budgetMin, t0,
      start: ({ fields: { impl } }) => {
        const [cmd, args] = jobCommand(impl, argv, ctx);
        return runJob(`p2p: ${impl}`, cmd, args, env, JOB_TIMEOUT_S, { check: (points) => checkPoints(impl, points, expected) });
      },
      keepGoing: (job, e) => {
        console.error(`\n${e.message}\n`);
        return true;
      },
    });
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  const machine = machineInfo();
  if (machineAtStart.addon.built !== machine.addon.built) machine.addonBuiltAtStart = machineAtStart.addon.built ?? null;
  const result = {
    date: new Date().toISOString(),
    totalSeconds: (performance.now() - t0) / 1000,
    machine,
    versions: { openmpi: (tryRun(MPIRUN, ['--version']) ?? '').split('\n')[0] || null },
    config,
    load: loadSummary(rep),
    method: 'bench/P2P.md and the header of bench/ompi/osu_p2p.c. Points: coll is the test (latency or bw); for latency `us` is the ' +
      'half round trip in µs, for bw `us` is rank 0\'s time per message of the timed windows (µs) and `mbs` = bytes / us (MB/s). ' +
      'Medians are over fresh-process runs (clean runs only when there are >= min(R, 3)); a bw median_mbs is bytes / median_us.',
    failures: rep.failures.map(({ error, ...f }) => ({ ...f, error: failureText(error) })),
    medians: null,
    runs: rep.runs,
  };
  report(result, o.out, o.out === o.fullOut);
  if (rep.failures.length) {
    log(`p2p: ${rep.failures.length} job(s) failed: ${rep.failures.map((f) => f.impl).join(', ')}; their columns say so`);
    process.exit(1);
  }
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
