#!/usr/bin/env node
// Derived-datatype benchmark: `node bench/datatypes.mjs [--quick] [--runs R]`.
//
// What a hole-y layout costs against the same bytes contiguous, in fresh
// jobs of bench/datatypes_job.mjs (which says how each point is timed):
//   bcast      every other double (Datatype.vector(count, 1, 2, DOUBLE))
//   allgather  each rank's block into a column of a row-major matrix
//              (vector(R, 1, size, DOUBLE) resized to one double's extent)
// at 8 KiB ... 16 MiB of payload, 2 and 4 ranks. Each run is one fresh job
// per world size measuring both layouts, size by size, the order of the two
// swapped from run to run; the report gives the median over runs of each
// layout and the median of the per-run ratios strided / contiguous (paired
// within a job, so load that comes and goes between jobs cancels out).
// Target (the complete-API issue): within 1.5x at 1 MiB and above.
// For reference, bench/ompi/datatypes.c runs the same points in Open MPI's C
// API (compiled with mpicc into a temp dir; a fresh mpirun per job, right
// before or after nodempi's; yielding when ranks outnumber cores, as the
// main table's reference does there); --no-ompi skips it.
// A full run writes bench/results/datatypes.json and bench/DATATYPES.md;
// --quick (or --np / --sizes) writes bench/results/datatypes-partial.json only.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { BENCH, EXT_MAX, NCPU, ROOT, addonInfo, fmtSize, fmtUs, idleWaiter, list, log, machineInfo, median, parseOptions, runJob, usageError,
  which } from './lib/jobs.mjs';

const CASES = ['bcast', 'allgather'];
const SIZES = [8192, 65536, 262144, 1048576, 4194304, 16777216];
const TARGET = 1.5, TARGET_MIN_BYTES = 1048576;

const usage = `usage: node bench/datatypes.mjs [options]
  --quick          smoke test: 8 KiB and 1 MiB, one run, short loops (writes results/datatypes-partial.json)
  --runs R         fresh jobs per world size (default 5); medians reported
  --np 2,4         world sizes (default 2,4)
  --sizes a,b      payload sizes in bytes, multiples of 8 (default 8 KiB ... 16 MiB)
  --no-ompi        skip the Open MPI reference
  --no-idle-wait   start jobs even while other work keeps the CPUs busy`;

const die = (msg) => usageError('datatypes', usage, msg);

function options(argv) {
  const v = parseOptions('datatypes', usage, {
    quick: { type: 'boolean' }, runs: { type: 'string' }, np: { type: 'string' }, sizes: { type: 'string' },
    'no-idle-wait': { type: 'boolean' }, 'no-ompi': { type: 'boolean' },
  }, argv);
  const o = {
    quick: !!v.quick, runs: v.runs === undefined ? null : Number(v.runs), nps: v.np === undefined ? [2, 4] : list(v.np, Number),
    sizes: v.sizes === undefined ? SIZES : list(v.sizes, Number), partial: !!(v.quick || v.np !== undefined || v.sizes !== undefined),
    idleWait: !v['no-idle-wait'], ompi: !v['no-ompi'],
  };
  if (o.quick && !v.seen.has('sizes')) o.sizes = [8192, 1048576];
  for (const n of o.nps) if (!Number.isInteger(n) || n < 1 || n > 64) die(`bad --np value ${n}`);
  for (const s of o.sizes) if (!Number.isInteger(s) || s < 8 || s % 8) die(`sizes must be multiples of 8 bytes, got ${s}`);
  o.runs ??= o.quick ? 1 : 5;
  if (!Number.isInteger(o.runs) || o.runs < 1) die('--runs must be a positive integer');
  o.params = o.quick ? { targetMs: 25, warmMs: 8, firstWarmMs: 60 } : { targetMs: 100, warmMs: 40, firstWarmMs: 200 };
  return o;
}

async function main() {
  const o = options(process.argv.slice(2));
  if (!existsSync(join(ROOT, 'dist', 'index.js'))) die('dist/ is missing; run `npm run build` first');
  const addon = addonInfo();
  if (addon.olderThanSources) log(`datatypes: warning: ${addon.path} is older than native/; the numbers describe an earlier build`);
  const t0 = performance.now();
  const impls = ['nodempi'];
  let tmp = null, ompiExe = null;
  if (o.ompi && !(which('mpicc') && which('mpirun'))) {
    log('datatypes: Open MPI not found (mpicc/mpirun); its columns stay empty. To include it:\n' +
      '  apt-get update && apt-get install -y openmpi-bin libopenmpi-dev');
  } else if (o.ompi) {
    tmp = mkdtempSync(join(os.tmpdir(), 'nodempi-datatypes-'));
    ompiExe = join(tmp, 'datatypes');
    try {
      execFileSync('mpicc', ['-O2', '-o', ompiExe, join(BENCH, 'ompi', 'datatypes.c'), '-lm'], { stdio: ['ignore', 'inherit', 'inherit'] });
    } catch (e) {
      die(`mpicc failed to compile bench/ompi/datatypes.c: ${e.message}`);
    }
    impls.push('ompi');
  }
  const loadStart = os.loadavg();
  const waitIdle = idleWaiter(o.quick ? 1 : 10, o.quick ? 5 : 90);
  const jobs = [];
  const total = o.runs * o.nps.length * impls.length;
  log(`datatypes: ${o.runs} run(s) × np ${o.nps.join(',')} × {${impls.join(', ')}}: ${total} jobs, ` +
    `${CASES.length * o.sizes.length * 2} points each`);
  const flags = ['--cases', CASES.join(','), '--sizes', o.sizes.join(','), '--target-ms', String(o.params.targetMs),
    '--warm-ms', String(o.params.warmMs), '--first-warm-ms', String(o.params.firstWarmMs)];
  const command = (impl, np, order) => (impl === 'nodempi'
    ? [process.execPath, [join(ROOT, 'dist', 'cli.js'), '-n', String(np), '--timeout', '600', join(BENCH, 'datatypes_job.mjs'),
      ...flags, '--order', order]]
    // with more ranks than cores a busy-polling Open MPI mostly waits for descheduled peers
    : ['mpirun', ['--allow-run-as-root', '--oversubscribe', '--mca', 'mpi_yield_when_idle', np > NCPU ? '1' : '0',
      '-n', String(np), ompiExe, ...flags, '--order', order]]);
  const env = { ...process.env };
  delete env.OMPI_MCA_btl_vader_single_copy_mechanism;  // Open MPI's default transport, as in bench/run.mjs
  try {
    for (let run = 1; run <= o.runs; run++) {
      for (const np of o.nps) {
        const order = run % 2 ? 'contig' : 'strided';
        for (const impl of run % 2 ? impls : [...impls].reverse()) {
          const idle = o.idleWait ? await waitIdle() : { busyBefore: null, waitedS: 0 };
          const [cmd, args] = command(impl, np, order);
          const res = await runJob(`datatypes ${impl} np=${np}`, cmd, args, env);
          const want = CASES.length * o.sizes.length * 2;
          if (res.points.length !== want) throw new Error(`${impl} np=${np} gave ${res.points.length}/${want} points`);
          const job = { run, np, impl, order, seconds: res.seconds, cpuS: res.cpuS, extCores: res.extCores, ...idle,
            ...(res.extCores !== null && res.extCores > EXT_MAX ? { noisy: true } : {}),
            points: res.points.map(({ np: _, ...p }) => ({ ...p, us: +p.us.toPrecision(5), min_us: +p.min_us.toPrecision(5) })) };
          jobs.push(job);
          log(`  run ${run} np=${np} ${impl.padEnd(7)} (${order} first) ${res.seconds.toFixed(1)} s` +
            `${res.extCores !== null ? `  other work: ${res.extCores.toFixed(2)} cores${job.noisy ? ' (noisy)' : ''}` : ''}`);
        }
      }
    }
  } catch (e) {
    console.error(`datatypes: FAILED: ${e.message}`);
    if (tmp) rmSync(tmp, { recursive: true, force: true });
    process.exit(1);
  }
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  const result = {
    date: new Date().toISOString(),
    totalSeconds: +((performance.now() - t0) / 1000).toFixed(1),
    machine: machineInfo(),
    load1: { start: +loadStart[0].toFixed(2), end: +os.loadavg()[0].toFixed(2) },
    config: { runs: o.runs, nps: o.nps, sizes: o.sizes, cases: CASES, impls, quick: o.quick, ...o.params },
    method: 'per point: correctness check (holes untouched), probe, timed warm-up, ~targetMs of calls each followed by an ' +
      'untimed barrier; per-rank mean, max over ranks; per world size, one fresh job per run measures both layouts ' +
      'size by size (which goes first alternates between runs); medians over runs (clean runs only when there are >= min(R, 3))',
    summary: summarize(o, jobs, impls),
    jobs,
  };
  result.targets = targets(result.summary);
  const out = join(BENCH, 'results', o.partial ? 'datatypes-partial.json' : 'datatypes.json');
  mkdirSync(join(BENCH, 'results'), { recursive: true });
  writeFileSync(out, `${JSON.stringify(result, null, 1)}\n`);
  const md = markdown(result);
  if (!o.partial) writeFileSync(join(BENCH, 'DATATYPES.md'), md);
  console.log(md);
  log(`datatypes: wrote bench/results/${o.partial ? 'datatypes-partial.json' : 'datatypes.json'}${o.partial ? '' : ' and bench/DATATYPES.md'}` +
    ` (${result.totalSeconds.toFixed(0)} s)`);
}

/** Per (impl, np, case, size): median µs of each layout and the median per-run ratio. */
function summarize(o, jobs, impls) {
  const want = Math.min(o.runs, 3);
  const rows = [];
  for (const impl of impls) {
    for (const np of o.nps) {
      const mine = jobs.filter((j) => j.np === np && j.impl === impl);
      const clean = mine.filter((j) => !j.noisy);
      const use = clean.length >= want ? clean : mine;
      for (const kind of CASES) {
        for (const bytes of o.sizes) {
          const pick = (j, layout) => j.points.find((p) => p.case === kind && p.bytes === bytes && p.layout === layout).us;
          const contig = use.map((j) => pick(j, 'contig')), strided = use.map((j) => pick(j, 'strided'));
          const ratios = use.map((j) => pick(j, 'strided') / pick(j, 'contig'));
          rows.push({
            impl, np, case: kind, bytes, contig_us: median(contig), strided_us: median(strided), ratio: +median(ratios).toFixed(3),
            ratio_of_medians: +(median(strided) / median(contig)).toFixed(3), ratios: ratios.map((r) => +r.toFixed(3)),
            contig_GBps: +(bytes / median(contig) / 1e3).toFixed(2), strided_GBps: +(bytes / median(strided) / 1e3).toFixed(2),
            runs: use.length, ...(use !== clean ? { noisy: true } : {}),
          });
        }
      }
    }
  }
  return rows;
}

function targets(summary) {
  return CASES.map((kind) => {
    const pts = summary.filter((r) => r.impl === 'nodempi' && r.case === kind && r.bytes >= TARGET_MIN_BYTES);
    const bad = pts.filter((r) => !(r.ratio <= TARGET));
    return {
      target: `${kind}: strided within ${TARGET}x of contiguous at ${fmtSize(TARGET_MIN_BYTES)} and above`,
      met: pts.length > 0 && bad.length === 0, checked: pts.length,
      failing: bad.map((r) => `${fmtSize(r.bytes)} @${r.np}: ${r.ratio.toFixed(2)}x (${fmtUs(r.strided_us)} vs ${fmtUs(r.contig_us)} µs)`),
    };
  }).filter((t) => t.checked);
}

function markdown(r) {
  const m = r.machine;
  const L = [];
  L.push('# Derived datatypes against the same bytes contiguous');
  L.push('');
  L.push('Written by `node bench/datatypes.mjs` (a full run; `--quick` writes `results/datatypes-partial.json` and');
  L.push('leaves this file alone); every job and point in `results/datatypes.json`. One fresh job per world size and');
  L.push('run (`bench/datatypes_job.mjs`) measures both layouts size by size, which one goes first alternating');
  L.push('between runs; timing as in the main sweep (each call followed by an untimed barrier, per-rank mean, max');
  L.push('over ranks). The holes of the strided buffers are checked to come back untouched.');
  L.push('');
  L.push('- **bcast**: `bcast([buf, 1, Datatype.vector(count, 1, 2, DOUBLE)])`, every other double of a buffer');
  L.push('  twice the payload, against `bcast(Float64Array(count))`.');
  L.push('- **allgather**: each rank sends its block contiguously; it lands in column `rank` of a row-major');
  L.push('  matrix (`[matrix, 1, vector(R, 1, size, DOUBLE).resized(0, 8)]`), against a contiguous receive.');
  L.push('');
  L.push('The size is the payload (the broadcast bytes; one rank\'s allgather block). The ratio is the median over');
  L.push('runs of strided / contiguous measured in the same job; GB/s is payload per call.');
  if (r.config.impls.includes('ompi')) {
    L.push('');
    L.push('For reference, Open MPI\'s C API runs the same points (`bench/ompi/datatypes.c`, a fresh `mpirun` next to');
    L.push('each nodempi job; yielding when ranks outnumber cores). Its own strided / contiguous ratio says how much');
    L.push('of the gap an established MPI closes; the last column compares the strided calls of the two.');
  }
  L.push('');
  L.push(`Run of ${r.date} (${(r.totalSeconds / 60).toFixed(1)} min): ${r.config.runs} run(s), ~${r.config.targetMs} ms timed per point. ` +
    `Machine: ${m.cpuCount} × ${m.cpuModel}, ${m.totalMemGiB} GiB, ${m.uname}; Node ${m.node}; ${m.openmpi ?? 'no Open MPI'}; ` +
    `nodempi ${m.nodempi} (${m.commit ?? '?'}${m.dirty ? ', uncommitted changes' : ''}; addon ${m.addon.path}` +
    `${m.addon.olderThanSources ? ', OLDER THAN ITS SOURCES' : ''}). 1-min load average ${r.load1.start} at the start, ` +
    `${r.load1.end} at the end; ${r.jobs.filter((j) => j.noisy).length} of ${r.jobs.length} jobs noisy (other processes used > ${EXT_MAX} cores)` +
    `${r.summary.some((x) => x.noisy) ? ', and some medians had to include them (marked *)' : ''}.`);
  L.push('');
  L.push('| target | met | points | failing |');
  L.push('|---|---|--:|---|');
  for (const t of r.targets) L.push(`| ${t.target} | ${t.met ? 'yes' : '**no**'} | ${t.checked} | ${t.failing.join('; ')} |`);
  L.push('');
  const ompi = r.config.impls.includes('ompi');
  for (const kind of CASES) {
    L.push(`**${kind}**, µs per call:`);
    L.push('');
    L.push('| ranks | payload | contiguous | strided | strided / contiguous | contiguous GB/s | strided GB/s |' +
      (ompi ? ' Open MPI contiguous | Open MPI strided | Open MPI strided / contiguous | nodempi / Open MPI, strided |' : ''));
    L.push(`|--:|--:|--:|--:|--:|--:|--:|${ompi ? '--:|--:|--:|--:|' : ''}`);
    for (const x of r.summary.filter((s) => s.case === kind && s.impl === 'nodempi')) {
      const y = r.summary.find((s) => s.impl === 'ompi' && s.case === kind && s.np === x.np && s.bytes === x.bytes);
      L.push(`| ${x.np}${x.noisy ? '*' : ''} | ${fmtSize(x.bytes)} | ${fmtUs(x.contig_us)} | ${fmtUs(x.strided_us)} | ${x.ratio.toFixed(2)} | ` +
        `${x.contig_GBps.toFixed(2)} | ${x.strided_GBps.toFixed(2)} |` +
        (ompi ? ` ${fmtUs(y?.contig_us)}${y?.noisy ? '*' : ''} | ${fmtUs(y?.strided_us)} | ${y ? y.ratio.toFixed(2) : '—'} | ` +
          `${y ? (x.strided_us / y.strided_us).toFixed(2) : '—'} |` : ''));
    }
    L.push('');
  }
  return L.join('\n');
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
