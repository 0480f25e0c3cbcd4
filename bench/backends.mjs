#!/usr/bin/env node
// What each backend costs: `node bench/backends.mjs [options]` (bench/BACKENDS.md).
//
// Runs the OSU-style sweep of bench/lib/sweep.mjs (bench/ompi/osu_coll.c in
// C, bench/mpi4py/osu_coll.py in Python) against every MPI library on the
// machine (Open MPI: mpicc.openmpi and mpirun.openmpi; MPICH: mpicc.mpich and
// mpiexec.mpich), side by side:
//   c            osu_coll.c built with that library's mpicc -O2, under its launcher
//   c-funneled   the same initialised at MPI_THREAD_FUNNELED, the level the mpi
//                backend asks for (only when named in --impl)
//   c-huge       the same initialised as c, with --huge 1: its buffers of 4 MiB
//                or more advised huge pages before first touch, as numpy's
//                are (only when named in --impl)
//   mpi4py       osu_coll.py under its launcher, by a python3 whose mpi4py is
//                built against that library (Debian's: Open MPI only)
//   nodempi-mpi  bench/nodempi_job.mjs under the library's launcher with
//                NODEMPI_BACKEND=mpi: the package over that library
//   nodempi-mpi-tuned  the same with README's two settings for the mpi
//                backend: NODEMPI_MPI_THREAD_LEVEL=single (MPI_THREAD_SINGLE,
//                as C's MPI_Init, instead of FUNNELED) and
//                GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (huge pages, which
//                the nodempi launcher sets for shm and numpy asks for itself)
//   nodempi-shm  bench/nodempi_job.mjs under the package's launcher
//                (node dist/cli.js -n N), as bench/run.mjs runs it; it uses no
//                MPI library, so one job per world size serves every table
// The libraries use their default transports (shared memory between ranks
// on one machine); --tcp forces TCP over loopback between their ranks.
// Every job is a fresh process tree; runs, rotation, idle wait, noisy jobs
// and medians are bench/lib/repeat.mjs's, as in bench/run.mjs. A job that
// fails (nodempi-mpi before the backend exists) is reported, not run again,
// and leaves its column empty; the rest of the run goes on, and the script
// exits non-zero at the end.
// A full run writes bench/results/backends.json, backends.svg and the table in
// bench/BACKENDS.md (--tcp: backends-tcp.json, backends-tcp.svg and its own
// section); --quick, --only, --sizes or --mpi write results/backends-partial.json
// (backends-tcp-partial.json) and leave BACKENDS.md alone.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import {
  BENCH, EXT_MAX, NCPU, ROOT, buildOsuColl, findMpi4py, fmtRatio, fmtSize, fmtUs, list, log, machineInfo, onInterrupt, parseOptions, runJob, tryRun,
  usageError, which,
} from './lib/jobs.mjs';
import { latencySvg } from './lib/plot.mjs';
import { TARGETS } from './lib/targets.mjs';
import { compactJson, loadSummary, repeatJobs, roundPoint, summarize, writeBetweenMarkers } from './lib/repeat.mjs';
import { ALL_COLLS, COLLS, SIZES, sweepArgv } from './lib/sweep.mjs';

const NODE = process.execPath;
const IMPLS = ['c', 'c-funneled', 'c-huge', 'mpi4py', 'nodempi-mpi', 'nodempi-mpi-tuned', 'nodempi-shm'];
const DEFAULT_IMPLS = IMPLS.filter((impl) => impl !== 'c-funneled' && impl !== 'c-huge');
const LABELS = { c: 'C', 'c-funneled': 'C funneled', 'c-huge': 'C huge pages', mpi4py: 'mpi4py', 'nodempi-mpi': 'nodempi-mpi', 'nodempi-mpi-tuned': 'nodempi-mpi tuned', 'nodempi-shm': 'nodempi-shm' };
// What the nodempi-mpi jobs add to the ranks' environment.
const NODEMPI_ENV = {
  'nodempi-mpi': { NODEMPI_BACKEND: 'mpi' },
  'nodempi-mpi-tuned': { NODEMPI_BACKEND: 'mpi', NODEMPI_MPI_THREAD_LEVEL: 'single', GLIBC_TUNABLES: 'glibc.malloc.hugetlb=1' },
};
const LIBS = {
  openmpi: {
    name: 'Open MPI', mpicc: 'mpicc.openmpi', launcher: 'mpirun.openmpi', install: 'apt-get install -y openmpi-bin libopenmpi-dev',
    tcp: ['--mca', 'pml', 'ob1', '--mca', 'btl', 'self,tcp', '--mca', 'btl_tcp_if_include', 'lo'],
  },
  mpich: {
    name: 'MPICH', mpicc: 'mpicc.mpich', launcher: 'mpiexec.mpich', install: 'apt-get install -y mpich libmpich-dev',
    tcp: ['-genv', 'MPIR_CVAR_NOLOCAL', '1', '-genv', 'UCX_TLS', 'tcp,self'],
  },
};
// The issue's targets are stated for this library and world size.
const TARGET_LIB = 'openmpi', TARGET_NP = 2;
const JOB_TIMEOUT_S = 600;

const usage = `usage: node bench/backends.mjs [options]
  --impl a,b         implementations (default: ${DEFAULT_IMPLS.join(',')}; also c-funneled, c-huge)
  --mpi a,b          MPI libraries (default: ${Object.keys(LIBS).join(',')}, those installed)
  --np 2,4           world sizes (default 2)
  --only a,b         collectives (default: ${COLLS.join(',')})
  --sizes 8,1024     message sizes in bytes (default: 8 B ... 16 MiB)
  --runs R           fresh-process repetitions per job, median reported (default 5)
  --quick            smoke test: sizes 8 B, 16 KiB, 1 MiB, one run, short loops
  --tcp              TCP over loopback between the ranks of the MPI libraries:
                     Open MPI ${LIBS.openmpi.tcp.join(' ')}
                     MPICH ${LIBS.mpich.tcp.join(' ')}
                     (nodempi-shm keeps its own shared-memory transport)
  --out FILE         results file (default bench/results/backends.json for a full run,
                     bench/results/backends-partial.json with --quick, --only, --sizes or --mpi;
                     backends-tcp*.json with --tcp); only the default full one updates bench/BACKENDS.md
  --target-ms T      timed part of each point, per job (default 150)
  --warm-ms W        warm-up part of each point (default 50)
  --idle-wait-s S    before a job, wait up to S seconds for other work to leave the CPUs idle, and up
                     to 12 S over the run (default 10, as bench/run.mjs; more on a machine others share)
  --no-idle-wait     start jobs even when something else keeps the CPUs busy
  --budget-min M     after the R runs, jobs with fewer than min(R, 3) clean runs (other processes
                     used < ${EXT_MAX} cores meanwhile) run again while the bench is under M minutes (default 20)
  --python EXE       the python3 for mpi4py (default: the first python3 on PATH that imports mpi4py and numpy)
  --report FILE      no run: recompute medians and targets from a results file, rewrite it, its SVG
                     and (for the default full results file) the table in bench/BACKENDS.md`;

const die = (msg) => usageError('backends', usage, msg);

function options(argv) {
  const v = parseOptions('backends', usage, {
    impl: { type: 'string' }, mpi: { type: 'string' }, np: { type: 'string' }, only: { type: 'string' }, sizes: { type: 'string' },
    runs: { type: 'string' }, quick: { type: 'boolean' }, tcp: { type: 'boolean' }, out: { type: 'string' },
    'target-ms': { type: 'string' }, 'warm-ms': { type: 'string' }, 'no-idle-wait': { type: 'boolean' }, 'idle-wait-s': { type: 'string' },
    'budget-min': { type: 'string' }, python: { type: 'string' }, report: { type: 'string' },
  }, argv);
  const num = (x) => (x === undefined ? null : Number(x));
  const o = {
    impls: v.impl === undefined ? DEFAULT_IMPLS.slice() : list(v.impl), mpis: v.mpi === undefined ? Object.keys(LIBS) : list(v.mpi),
    nps: v.np === undefined ? [2] : list(v.np, Number), colls: v.only === undefined ? COLLS.slice() : list(v.only),
    sizes: v.sizes === undefined ? SIZES.slice() : list(v.sizes, Number), runs: num(v.runs), quick: !!v.quick, tcp: !!v.tcp,
    targetMs: num(v['target-ms']), warmMs: num(v['warm-ms']), idleWait: !v['no-idle-wait'], idleWaitS: num(v['idle-wait-s']) ?? 10, budgetMin: num(v['budget-min']) ?? 20,
    python: v.python ?? null, report: v.report ?? null,
    partial: !!v.quick || ['only', 'sizes', 'mpi'].some((k) => v.seen.has(k)),
  };
  for (const m of o.impls) if (!IMPLS.includes(m)) die(`unknown implementation ${m} (known: ${IMPLS.join(', ')})`);
  for (const m of o.mpis) if (!LIBS[m]) die(`unknown MPI library ${m} (known: ${Object.keys(LIBS).join(', ')})`);
  for (const c of o.colls) if (!ALL_COLLS.includes(c)) die(`unknown collective ${c} (known: ${ALL_COLLS.join(', ')})`);
  for (const n of o.nps) if (!Number.isInteger(n) || n < 1 || n > 64) die(`bad --np value ${n}`);
  for (const s of o.sizes) if (!Number.isInteger(s) || s < 8 || s % 8) die(`sizes must be multiples of 8 bytes, got ${s}`);
  if (o.quick) {
    if (!v.seen.has('sizes')) o.sizes = [8, 16384, 1048576];
    o.runs ??= 1;
    o.targetMs ??= 25;
    o.warmMs ??= 8;
  }
  o.runs ??= 5;
  o.targetMs ??= 150;
  o.warmMs ??= 50;
  if (!Number.isInteger(o.runs) || o.runs < 1) die('--runs must be a positive integer');
  if (!(o.idleWaitS >= 0)) die('--idle-wait-s must be a number of seconds');
  o.fullOut = defaultOut(o.tcp, false);
  o.out = v.out === undefined ? defaultOut(o.tcp, o.partial) : resolve(v.out);
  return o;
}

const defaultOut = (tcp, partial) => join(BENCH, 'results', `backends${tcp ? '-tcp' : ''}${partial ? '-partial' : ''}.json`);

// ---------------------------------------------------------------- what is installed
const firstLine = (s) => (s ?? '').split('\n').map((l) => l.trim()).find((l) => l) ?? null;

function libraryVersion(lib) {
  if (lib === 'openmpi') {
    const ver = tryRun('mpirun.openmpi', ['--version'])?.match(/\d+\.\d+(\.\d+)?/)?.[0];
    return ver ? `Open MPI ${ver}` : null;
  }
  // mpichversion names the device too (ch4:ucx or ch4:ofi: what UCX_TLS in --tcp means depends on it)
  const info = tryRun('mpichversion', []);
  const ver = info?.match(/MPICH Version:\s*(\S+)/)?.[1] ?? tryRun('mpiexec.mpich', ['--version'])?.match(/Version:\s*(\S+)/)?.[1];
  const dev = info?.match(/MPICH Device:\s*(\S+)/)?.[1];
  return ver ? `MPICH ${ver}${dev ? ` (${dev})` : ''}` : null;
}

// ---------------------------------------------------------------- jobs
/** The library's launcher and its flags for np ranks whose environment gains `env`. */
function launch(lib, np, tcp, env = {}) {
  const vars = Object.entries(env);
  if (lib === 'openmpi') {
    return [LIBS.openmpi.launcher, [
      ...(process.getuid?.() === 0 ? ['--allow-run-as-root'] : []),
      // more ranks than slots (cores) is refused without it
      ...(np > NCPU ? ['--oversubscribe'] : []),
      ...(tcp ? LIBS.openmpi.tcp : []),
      ...vars.flatMap(([k, v]) => ['-x', `${k}=${v}`]),
      '-n', String(np)]];
  }
  return [LIBS.mpich.launcher, [...(tcp ? LIBS.mpich.tcp : []), ...vars.flatMap(([k, v]) => ['-genv', k, v]), '-n', String(np)]];
}

function jobCommand({ mpi: lib, np, impl }, sweep, ctx) {
  switch (impl) {
    case 'c': {
      const [cmd, args] = launch(lib, np, ctx.tcp);
      return [cmd, [...args, ctx.exe[lib], ...sweep, '--label', 'c']];
    }
    case 'c-funneled': {
      const [cmd, args] = launch(lib, np, ctx.tcp);
      return [cmd, [...args, ctx.exe[lib], ...sweep, '--thread', 'funneled', '--label', 'c-funneled']];
    }
    case 'c-huge': {
      const [cmd, args] = launch(lib, np, ctx.tcp);
      return [cmd, [...args, ctx.exe[lib], ...sweep, '--huge', '1', '--label', 'c-huge']];
    }
    case 'mpi4py': {
      const [cmd, args] = launch(lib, np, ctx.tcp);
      return [cmd, [...args, ctx.python, join(BENCH, 'mpi4py', 'osu_coll.py'), ...sweep, '--label', 'mpi4py']];
    }
    case 'nodempi-mpi':
    case 'nodempi-mpi-tuned': {
      const [cmd, args] = launch(lib, np, ctx.tcp, NODEMPI_ENV[impl]);
      return [cmd, [...args, NODE, join(BENCH, 'nodempi_job.mjs'), ...sweep]];
    }
    case 'nodempi-shm':
      // the launcher's own timeout first, so that its diagnostics are the ones shown
      return [NODE, [join(ROOT, 'dist', 'cli.js'), '-n', String(np), '--timeout', String(JOB_TIMEOUT_S - 60),
        join(BENCH, 'nodempi_job.mjs'), ...sweep]];
    default: throw new Error(impl);
  }
}

/** A job's points are all there and come from one world of np ranks (not np worlds of one). */
function checkPoints(points, np, expected) {
  const stray = points.filter((p) => p.np !== np);
  if (stray.length) {
    return `${stray.length} point(s) report np=${stray[0].np}, not ${np}: the ranks did not form one world (each ran on its own?)`;
  }
  return points.length === expected ? null : `${points.length}/${expected} points`;
}

/**
 * A failure as the results file keeps it: the first line of the error and the
 * job's last line of stderr, with no machine paths (the repository becomes
 * ".", other absolute paths their last component).
 */
function failureText(e) {
  const msg = String(e.message ?? e);
  const head = firstLine(msg).replace(/^bench: /, '');
  const err = /--- stderr:\n([\s\S]*?)\n--- stdout/.exec(msg)?.[1] ?? '';
  const tail = err.split('\n').map((l) => l.trim()).filter((l) => l).pop() ?? '';
  const clean = (s) => s.split(ROOT).join('.').replace(/(^|[\s'"(=:])\/(?:[^\s/'"()]+\/)*([^\s/'"()]+)/g, '$1…/$2');
  return clean(tail && !head.includes(tail) ? `${head}; stderr: ${tail}` : head);
}

// ---------------------------------------------------------------- report
const keyOf = (lib, np, impl) => `${impl === 'nodempi-shm' ? null : lib}|${np}|${impl}`;

function lookup(medians) {
  const m = new Map(medians.map((x) => [`${keyOf(x.mpi, x.np, x.impl)}|${x.coll}|${x.bytes}`, x.median_us]));
  return (lib, np, impl, coll, bytes) => m.get(`${keyOf(lib, np, impl)}|${coll}|${bytes}`);
}

const pointsOf = (config) => config.colls.flatMap((coll) => (coll === 'barrier' ? [0] : config.sizes).map((bytes) => [coll, bytes]));

/**
 * Which implementations a library's table shows: the default ones (— where
 * not run) and the others run; mpi4py only where an mpi4py built against it
 * was found.
 */
function implsFor(config, lib) {
  return IMPLS.filter((impl) => (DEFAULT_IMPLS.includes(impl) || config.impls.includes(impl)) &&
    (impl !== 'mpi4py' || config.mpi4py?.lib === lib));
}

/**
 * The issue's targets for nodempi-mpi (2 ranks, Open MPI), against the
 * medians: met true/false, or null (not measured) when no point has both
 * numbers.
 */
function targets(config, medians) {
  const get = lookup(medians);
  const ran = config.mpis.includes(TARGET_LIB) && config.nps.includes(TARGET_NP);
  return TARGETS.map(({ name: target, ref, bound, pick }) => {
    const ok = (a, r) => a <= bound * r;
    const pts = pointsOf(config).filter(([, b]) => pick(b));
    const rows = pts.map(([coll, bytes]) => {
      const a = get(TARGET_LIB, TARGET_NP, 'nodempi-mpi', coll, bytes), r = get(TARGET_LIB, TARGET_NP, ref, coll, bytes);
      return { coll, bytes, a, r, ok: a && r ? ok(a, r) : null };
    });
    const measured = rows.filter((x) => x.ok !== null);
    const why = !ran ? `${LIBS[TARGET_LIB].name} at ${TARGET_NP} ranks not in this run`
      : !pts.length ? 'no such points in this run'
        : !rows.some((x) => x.a) ? 'no nodempi-mpi numbers' : !rows.some((x) => x.r) ? `no ${LABELS[ref]} numbers` : null;
    return {
      target, met: measured.length ? measured.every((x) => x.ok) : null, checked: measured.length, of: pts.length,
      ...(measured.length ? {} : { notMeasured: why ?? 'no point with both numbers' }),
      failing: measured.filter((x) => !x.ok).map((x) =>
        `${x.coll} ${fmtSize(x.bytes)}: ${fmtRatio(x.a, x.r)}x (nodempi-mpi ${fmtUs(x.a)} vs ${LABELS[ref]} ${fmtUs(x.r)} µs)`),
    };
  });
}

function markdown(result) {
  const { config, machine, versions, medians, load } = result;
  const get = lookup(medians);
  const lines = [];
  const transport = config.tcp
    ? `TCP over loopback between the MPI libraries' ranks (Open MPI \`${LIBS.openmpi.tcp.join(' ')}\`, MPICH ` +
      `\`${LIBS.mpich.tcp.join(' ')}\`; nodempi-shm keeps its shared memory)`
    : 'the libraries\' default transports (shared memory between ranks on one machine)';
  lines.push(`Run of ${result.date} (${(result.totalSeconds / 60).toFixed(1)} min): ${config.runs} fresh-process run(s) per job, ` +
    `median shown; warm-up ~${config.warmMs} ms then ~${config.targetMs} ms timed per point; latency in µs per call, max over ranks; ` +
    `${transport}.`);
  lines.push('');
  const mpi4py = config.mpi4py;
  const libs = config.mpis.map((l) => versions.libraries?.[l] ?? `${LIBS[l].name} (not found)`).join('; ');
  lines.push(`Machine: ${machine.cpuCount} × ${machine.cpuModel}, ${machine.totalMemGiB} GiB, ${machine.uname}; Node ${machine.node}; ${libs}; ` +
    (mpi4py ? `mpi4py ${mpi4py.version} (numpy ${mpi4py.numpy}, Python ${mpi4py.python}), built against ${mpi4py.library}, so run on ` +
      `${LIBS[mpi4py.lib]?.name ?? 'no library here'} only; ` : config.impls.includes('mpi4py') ? 'mpi4py not found; ' : '') +
    `nodempi ${machine.nodempi} (${machine.commit ?? '?'}${machine.dirty ? ', uncommitted changes' : ''}` +
    (config.impls.some((i) => i.startsWith('nodempi')) && machine.addon?.built
      ? `; addon ${machine.addon.path}, built ${machine.addon.built}${machine.addon.olderThanSources ? ', older than native/' : ''}` +
        (machine.addonBuiltAtStart !== undefined ? ` (rebuilt during the run: ${machine.addonBuiltAtStart ?? 'missing'} at its start)` : '')
      : '') + ').');
  lines.push('');
  if (load && load.medianExtCores !== null) {
    const noisyJobs = [...new Set(medians.filter((m) => m.noisy).map((m) => `${m.impl}${m.mpi ? ` (${LIBS[m.mpi].name})` : ''} @${m.np}`))];
    lines.push(`Load: other processes used a median ${load.medianExtCores.toFixed(2)} cores during a job (max ${load.maxExtCores.toFixed(2)}); ` +
      `${load.noisyJobs} of ${result.runs.length} jobs were noisy (others used > ${EXT_MAX} cores); ${load.extraRuns} extra run(s) were added ` +
      `for jobs short of clean runs; ${load.waitedS} s were spent waiting for idle CPUs. A median is taken over the clean runs of a job ` +
      `when it has at least ${Math.min(config.runs, 3)}, else over all of its runs` +
      (noisyJobs.length ? ` (so for: ${noisyJobs.join(', ')})` : ' (no job needed that)') + '.');
    lines.push('');
  }
  if (result.failures?.length) {
    lines.push('Failed jobs (not run again; their cells show —):');
    lines.push('');
    for (const f of result.failures) lines.push(`- ${f.impl}${f.mpi ? ` on ${LIBS[f.mpi].name}` : ''}, ${f.np} ranks, run ${f.run}: ${f.error}`);
    lines.push('');
  }
  lines.push(`| target (${TARGET_NP} ranks, ${LIBS[TARGET_LIB].name}) | met | points checked | failing points |`);
  lines.push('|---|---|---|---|');
  for (const t of result.targets) {
    const met = t.met === null ? 'not measured' : t.met ? 'yes' : '**no**';
    const checked = t.met === null ? `0 of ${t.of} (${t.notMeasured})` : `${t.checked} of ${t.of}`;
    const f = t.failing.length ? `${t.failing.length}: ${t.failing.slice(0, 6).join('; ')}${t.failing.length > 6 ? '; …' : ''}` : '';
    lines.push(`| ${t.target} | ${met} | ${checked} | ${f} |`);
  }
  lines.push('');
  for (const lib of config.mpis) {
    const impls = implsFor(config, lib);
    const ratios = [['nodempi-mpi', 'c'], ['nodempi-mpi', 'c-funneled'], ['c-funneled', 'c'], ['c-huge', 'c'], ['nodempi-mpi-tuned', 'c'], ['mpi4py', 'c-huge'], ['nodempi-mpi', 'mpi4py'], ['mpi4py', 'c'], ['nodempi-shm', 'c']]
      .filter(([a, b]) => impls.includes(a) && impls.includes(b));
    for (const np of config.nps) {
      const notes = [];
      if (config.impls.includes('mpi4py') && !impls.includes('mpi4py')) {
        notes.push(mpi4py ? `no mpi4py: the one found is built against ${mpi4py.library}` : 'no mpi4py found');
      }
      if (np > NCPU) notes.push(`oversubscribed: ${np} ranks on ${NCPU} cores, each library's default waiting policy`);
      lines.push(`**${LIBS[lib].name}, ${np} ranks**${notes.length ? ` (${notes.join('; ')})` : ''}, µs per call:`);
      lines.push('');
      lines.push(`| collective | size | ${impls.map((i) => LABELS[i]).join(' | ')} | ` +
        `${ratios.map(([a, b]) => `${LABELS[a]} / ${LABELS[b]}`).join(' | ')} |`);
      lines.push(`|---|--:|${impls.map(() => '--:').join('|')}|${ratios.map(() => '--:').join('|')}|`);
      for (const [coll, bytes] of pointsOf(config)) {
        const v = (impl) => get(lib, np, impl, coll, bytes);
        lines.push(`| ${coll} | ${fmtSize(bytes)} | ${impls.map((i) => fmtUs(v(i))).join(' | ')} | ` +
          `${ratios.map(([a, b]) => fmtRatio(v(a), v(b))).join(' | ')} |`);
      }
      lines.push('');
    }
  }
  return lines.join('\n');
}

/** Medians, targets, the JSON file, the SVG next to it and, when asked, the table in bench/BACKENDS.md. */
function report(result, out, writeMd) {
  const { config } = result;
  for (const job of result.runs) job.points = job.points.map(roundPoint);
  const order = (m) => [config.mpis.indexOf(m.mpi), config.nps.indexOf(m.np), IMPLS.indexOf(m.impl), ALL_COLLS.indexOf(m.coll), m.bytes];
  result.medians = summarize(result.runs, Math.min(config.runs, 3), ['mpi', 'np', 'impl'], order);
  result.targets = targets(config, result.medians);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${compactJson(result)}\n`);
  const svgPath = out.replace(/\.json$/, '') + '.svg';
  const plotColls = ['bcast', 'allreduce', 'alltoall'].filter((c) => config.colls.includes(c));
  const columns = config.mpis.flatMap((lib) => config.nps.map((np) => ({
    title: `${LIBS[lib].name}, ${np} ranks`, match: (m) => m.np === np && (m.mpi === lib || m.mpi === null),
  })));
  const plotted = IMPLS.filter((i) => result.medians.some((m) => m.impl === i));
  if (plotColls.length && columns.length) writeFileSync(svgPath, latencySvg(result.medians, plotColls, config.nps, plotted, columns));
  let md = markdown(result);
  if (plotColls.length && columns.length && writeMd) md += `\n![latency against message size: ${plotColls.join(', ')}](${relative(BENCH, svgPath)})\n`;
  if (writeMd) {
    writeBetweenMarkers(join(BENCH, 'BACKENDS.md'), md, config.tcp
      ? { title: 'What each backend costs', heading: 'Results over TCP', start: '<!-- tcp:start -->', end: '<!-- tcp:end -->' }
      : { title: 'What each backend costs' });
  }
  console.log(md);
  for (const t of result.targets) {
    log(`bench: target: ${t.target}: ${t.met === null ? `not measured (${t.notMeasured})` : t.met ? 'met' : `NOT met at ${t.failing.length} point(s)`}`);
  }
  log(`bench: wrote ${relative(ROOT, out)}${plotColls.length ? `, ${relative(ROOT, svgPath)}` : ''}${writeMd ? ' and bench/BACKENDS.md' : ''}` +
    ` (the runs took ${result.totalSeconds.toFixed(0)} s)`);
}

// ---------------------------------------------------------------- main
async function main() {
  const o = options(process.argv.slice(2));
  if (o.report) {
    const out = resolve(o.report);
    const result = JSON.parse(readFileSync(out, 'utf8'));
    report(result, out, out === defaultOut(!!result.config.tcp, false));
    return;
  }
  const t0 = performance.now();
  const nodempi = o.impls.filter((i) => i.startsWith('nodempi'));
  if (nodempi.length && (!existsSync(join(ROOT, 'dist', 'index.js')) || !existsSync(join(ROOT, 'dist', 'cli.js')))) {
    console.error('bench: dist/ is missing; run `npm run build` first');
    process.exit(1);
  }
  const machineAtStart = machineInfo();
  if (nodempi.length && machineAtStart.addon.olderThanSources) {
    log(`bench: warning: ${machineAtStart.addon.path} is older than native/; the numbers describe an earlier build`);
  }

  // the libraries that are installed, and their versions
  const mpis = o.mpis.filter((lib) => {
    const { mpicc, launcher, install, name } = LIBS[lib];
    if (which(mpicc) && which(launcher)) return true;
    log(`bench: ${name} not found (${mpicc}, ${launcher}); its tables are skipped. To include it:\n  apt-get update && ${install}`);
    return false;
  });
  if (!mpis.length) {
    console.error('bench: no MPI library to compare with');
    process.exit(1);
  }
  const libraries = Object.fromEntries(mpis.map((lib) => [lib, libraryVersion(lib) ?? `${LIBS[lib].name} (unknown version)`]));

  let python = null, mpi4py = null;
  if (o.impls.includes('mpi4py')) {
    const found = findMpi4py(o.python);
    if (!found) {
      log('bench: no python3 with mpi4py and numpy found (--python to name one); the mpi4py column is skipped. On Debian:\n' +
        '  apt-get update && apt-get install -y python3-mpi4py python3-numpy');
    } else {
      ({ exe: python, info: mpi4py } = found);
      const where = mpi4py.lib ? LIBS[mpi4py.lib].name : 'an MPI library this script does not know';
      log(`bench: mpi4py ${mpi4py.version} is built against ${mpi4py.library}: it runs on ${where} only` +
        `${mpi4py.lib && !mpis.includes(mpi4py.lib) ? ', which is not in this run' : ''}`);
    }
  }

  const tmp = mkdtempSync(join(os.tmpdir(), 'nodempi-backends-'));
  onInterrupt(() => rmSync(tmp, { recursive: true, force: true }));
  const exe = {};
  if (o.impls.some((impl) => impl.startsWith('c'))) {
    for (const lib of mpis) {
      exe[lib] = join(tmp, `osu_coll_${lib}`);
      try {
        buildOsuColl(exe[lib], LIBS[lib].mpicc);
      } catch (e) {
        console.error(e.message);
        rmSync(tmp, { recursive: true, force: true });
        process.exit(1);
      }
    }
  }

  const sweepOpts = {
    colls: o.colls, sizes: o.sizes, warmMs: o.warmMs, firstWarmMs: 4 * o.warmMs, targetMs: o.targetMs,
    maxWarm: 1000000, minIters: 2, maxIters: 200000,
  };
  // as bench/run.mjs: above the core count the first size warms up for a second
  const sweepOf = (np) => sweepArgv({ ...sweepOpts, firstWarmMs: np > NCPU ? Math.max(1000, sweepOpts.firstWarmMs) : sweepOpts.firstWarmMs });
  const expected = o.colls.reduce((n, c) => n + (c === 'barrier' ? 1 : o.sizes.length), 0);
  const config = {
    ...sweepOpts, nps: o.nps, runs: o.runs, impls: o.impls, mpis, tcp: o.tcp, quick: o.quick, cores: NCPU, mpi4py,
  };

  // one group per world size, rotated from run to run
  const groups = o.nps.map((np) => [
    ...mpis.flatMap((lib) => implsFor(config, lib).filter((impl) => impl !== 'nodempi-shm' && o.impls.includes(impl))
      .filter((impl) => impl !== 'mpi4py' || python)
      .map((impl) => ({ fields: { mpi: lib, np, impl }, name: `np=${np} ${lib.padEnd(7)} ${impl.padEnd(11)}` }))),
    ...(o.impls.includes('nodempi-shm')
      ? [{ fields: { mpi: null, np, impl: 'nodempi-shm' }, name: `np=${np} ${'-'.padEnd(7)} ${'nodempi-shm'.padEnd(11)}` }] : []),
  ]);
  const names = groups.map((g, i) => `np=${o.nps[i]}: ${g.map((j) => `${j.fields.impl}${j.fields.mpi ? `@${j.fields.mpi}` : ''}`).join(', ')}`);
  log(`bench: ${o.runs} run(s) of {${names.join('; ')}}: ${o.runs * groups.flat().length} jobs, ${expected} points each; ` +
    `${o.tcp ? 'TCP between the MPI ranks' : 'default transports'}`);

  // A launcher's environment may pin Open MPI's single-copy mechanism (or the
  // backend, its thread level, malloc's huge pages); every job here starts
  // from the defaults.
  const env = { ...process.env };
  delete env.OMPI_MCA_btl_vader_single_copy_mechanism;
  delete env.NODEMPI_BACKEND;
  delete env.NODEMPI_MPI_THREAD_LEVEL;
  delete env.GLIBC_TUNABLES;
  const ctx = { exe, python, tcp: o.tcp };
  let rep;
  try {
    rep = await repeatJobs({
      groups, runs: o.runs, quick: o.quick, idleWait: o.idleWait, idleWaitS: o.idleWaitS, budgetMin: o.budgetMin, t0,
      start: ({ fields }) => {
        const [cmd, args] = jobCommand(fields, sweepOf(fields.np), ctx);
        return runJob(`bench: ${fields.impl}${fields.mpi ? ` on ${LIBS[fields.mpi].name}` : ''} np=${fields.np}`, cmd, args, env,
          JOB_TIMEOUT_S, { check: (points) => checkPoints(points, fields.np, expected), points: expected });
      },
      keepGoing: (job, e) => {
        console.error(`\n${e.message}\n`);
        return true;
      },
    });
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }

  // the addon may be rebuilt while a long run goes on: then the nodempi jobs
  // are not all of one build, and the results say so
  const machine = machineInfo();
  if (machineAtStart.addon.built !== machine.addon.built) {
    machine.addonBuiltAtStart = machineAtStart.addon.built ?? null;
    if (nodempi.length) log(`bench: warning: ${machine.addon.path} was rebuilt during the run; its jobs are not all of one build`);
  }
  const result = {
    date: new Date().toISOString(),
    totalSeconds: (performance.now() - t0) / 1000,
    machine,
    versions: { libraries },
    config,
    load: loadSummary(rep),
    method: 'bench/README.md, "What is measured, and how": the sweep of bench/lib/sweep.mjs, bench/ompi/osu_coll.c and ' +
      'bench/mpi4py/osu_coll.py; median over fresh-process runs (clean runs only when there are >= min(R, 3)).',
    failures: rep.failures.map(({ error, ...f }) => ({ ...f, error: failureText(error) })),
    medians: null,
    runs: rep.runs,
  };
  report(result, o.out, o.out === o.fullOut);
  if (rep.failures.length) {
    log(`bench: ${rep.failures.length} job(s) failed: ${rep.failures.map((f) => `${f.impl}${f.mpi ? ` on ${LIBS[f.mpi].name}` : ''} np=${f.np}`)
      .join(', ')}; their cells are empty`);
    process.exit(1);
  }
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
