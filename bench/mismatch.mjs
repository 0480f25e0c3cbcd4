#!/usr/bin/env node
// What always-on mismatch detection costs: `node bench/mismatch.mjs [--quick] [--runs R]`.
//
// Every collective publishes a signature (kind, root, op, datatype signature,
// count) and, once all ranks have arrived, compares them (Context::agree).
// The addon built with -DNODEMPI_BENCH_NO_AGREE=ON keeps the protocol and
// skips the comparison. This script builds that variant, and a reference
// build of the same sources with the option off, into the scratch directory
// build-noagree/ (cmake-js, incremental: quick when nothing changed), then
// runs bench/nodempi_job.mjs (the OSU-style sweep of bench/lib/sweep.mjs)
// for barrier, allreduce and bcast at 8 B and 1 KiB with each addon
// (NODEMPI_ADDON), alternating fresh jobs (A B, B A, ...), at 2 and 4 ranks.
// Reported per point: the median of each variant, and the median of the
// paired differences (the two jobs of one run run back to back, so slow
// drift of the machine's load cancels).
// Building the reference from the same sources matters: build/Release may
// predate the sources (it is whatever was last built there), and then the
// difference would measure that instead. --normal release uses it anyway.
// A full run writes bench/results/mismatch.json and bench/MISMATCH.md;
// --quick (or --np) writes bench/results/mismatch-partial.json only.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join, relative } from 'node:path';
import { BENCH, EXT_MAX, ROOT, fmtSize, fmtUs, idleWaiter, list, log, machineInfo, median, parseOptions, runJob, tryRun,
  usageError } from './lib/jobs.mjs';

const SCRATCH = join(ROOT, 'build-noagree');
const BUILDS = {
  noagree: { dir: SCRATCH, defs: ['--CDNODEMPI_BENCH_NO_AGREE=ON'] },
  // same sources, same flags, comparison on
  normal: { dir: join(SCRATCH, 'ref'), defs: ['--CDNODEMPI_BENCH_NO_AGREE=OFF'] },
};
const POINTS = [['barrier', 0], ['allreduce', 8], ['bcast', 8], ['allreduce', 1024], ['bcast', 1024]];
const VARIANTS = ['normal', 'noagree'];

const usage = `usage: node bench/mismatch.mjs [options]
  --quick          smoke test: one run per variant, short loops (writes results/mismatch-partial.json)
  --runs R         fresh jobs per variant and world size (default 12; at least 5 for a full run)
  --np 2,4         world sizes (default 2,4)
  --normal ref|release   the addon with detection on: a build of the same sources in
                   build-noagree/ref (default), or build/Release as it is
  --no-idle-wait   start jobs even while other work keeps the CPUs busy`;

const die = (msg) => usageError('mismatch', usage, msg);

function options(argv) {
  const v = parseOptions('mismatch', usage, {
    quick: { type: 'boolean' }, runs: { type: 'string' }, np: { type: 'string' }, normal: { type: 'string', default: 'ref' },
    'no-idle-wait': { type: 'boolean' },
  }, argv);
  const o = {
    quick: !!v.quick, runs: v.runs === undefined ? null : Number(v.runs), nps: v.np === undefined ? [2, 4] : list(v.np, Number),
    partial: !!(v.quick || v.np !== undefined), idleWait: !v['no-idle-wait'], normal: v.normal,
  };
  if (!['ref', 'release'].includes(o.normal)) die(`--normal must be ref or release, got ${o.normal}`);
  for (const n of o.nps) if (!Number.isInteger(n) || n < 2 || n > 64) die(`bad --np value ${n}`);
  // the differences sought are tens of nanoseconds: many short jobs beat a few long ones
  o.runs ??= o.quick ? 1 : 12;
  if (!Number.isInteger(o.runs) || o.runs < 1) die('--runs must be a positive integer');
  if (o.runs < 5) o.partial = true;
  o.params = o.quick ? { targetMs: 30, warmMs: 10, firstWarmMs: 60 } : { targetMs: 150, warmMs: 50, firstWarmMs: 200 };
  return o;
}

const rel = (p) => relative(ROOT, p);

/** Builds (or brings up to date) one variant; returns the .node's absolute path. */
function build(name) {
  const b = BUILDS[name];
  const node = join(b.dir, 'Release', 'nodempi.node');
  log(`mismatch: ${existsSync(node) ? 'updating' : 'building'} the ${name} addon in ${rel(b.dir)}/ (cmake-js)`);
  try {
    execFileSync('npx', ['cmake-js', 'compile', '-O', rel(b.dir), ...b.defs, '--log-level', 'warn'],
      { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  } catch (e) {
    console.error(`mismatch: building the ${name} addon failed: ${e.message}`);
    process.exit(1);
  }
  if (!existsSync(node)) die(`the build left no ${rel(node)}`);
  return node;
}

/** Which nodempi.node a process really loads with NODEMPI_ADDON=addon (from its shared-object list). */
function loaded(addon) {
  const code = `const m = await import(${JSON.stringify(join(ROOT, 'dist', 'index.js'))}); m.init();` +
    'console.log(process.report.getReport().sharedObjects.filter((s) => s.endsWith("nodempi.node")).join("\\n")); m.finalize();';
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', code],
    { cwd: ROOT, env: { ...process.env, NODEMPI_ADDON: addon }, encoding: 'utf8' }).trim();
  return out.split('\n').filter(Boolean);
}

async function main() {
  const o = options(process.argv.slice(2));
  if (!existsSync(join(ROOT, 'dist', 'cli.js'))) die('dist/ is missing; run `npm run build` first');
  const t0 = performance.now();
  const addons = { noagree: build('noagree') };
  if (o.normal === 'ref') addons.normal = build('normal');
  else {
    addons.normal = join(ROOT, 'build', 'Release', 'nodempi.node');
    if (!existsSync(addons.normal)) die('build/Release/nodempi.node is missing; run `npm run build` first');
  }
  for (const v of VARIANTS) {
    const got = loaded(addons[v]);
    if (got.length !== 1 || got[0] !== addons[v]) die(`NODEMPI_ADDON=${rel(addons[v])} loaded ${got.map(rel).join(', ') || 'nothing'}`);
  }
  const addonInfo = Object.fromEntries(VARIANTS.map((v) => [v, { path: rel(addons[v]), built: statSync(addons[v]).mtime.toISOString() }]));
  // uncommitted native changes went into the builds: say which
  addonInfo.uncommittedSources = (tryRun('git', ['status', '--porcelain', '--', 'native', 'CMakeLists.txt']) ?? '')
    .split('\n').filter(Boolean).map((l) => l.slice(3));
  log(`mismatch: normal = ${addonInfo.normal.path}, no comparison = ${addonInfo.noagree.path}`);

  const loadStart = os.loadavg();
  const waitIdle = idleWaiter(o.quick ? 1 : 10, o.quick ? 5 : 90);
  const colls = [...new Set(POINTS.map(([c]) => c))];
  const sizes = [...new Set(POINTS.map(([, b]) => b).filter((b) => b))];
  const want = colls.reduce((n, c) => n + (c === 'barrier' ? 1 : sizes.length), 0);
  const jobs = [];
  log(`mismatch: ${o.runs} run(s) × np ${o.nps.join(',')} × {${VARIANTS.join(', ')}}: ${o.runs * o.nps.length * 2} jobs`);
  for (let run = 1; run <= o.runs; run++) {
    for (const np of o.nps) {
      const order = run % 2 ? VARIANTS : [...VARIANTS].reverse();
      for (const variant of order) {
        const idle = o.idleWait ? await waitIdle() : { busyBefore: null, waitedS: 0 };
        const args = [join(ROOT, 'dist', 'cli.js'), '-n', String(np), '--timeout', '300', join(BENCH, 'nodempi_job.mjs'),
          '--colls', colls.join(','), '--sizes', sizes.join(','), '--target-ms', String(o.params.targetMs),
          '--warm-ms', String(o.params.warmMs), '--first-warm-ms', String(o.params.firstWarmMs)];
        let res;
        try {
          res = await runJob(`mismatch ${variant} np=${np}`, process.execPath, args, { ...process.env, NODEMPI_ADDON: addons[variant] });
        } catch (e) {
          console.error(`mismatch: FAILED: ${e.message}`);
          process.exit(1);
        }
        if (res.points.length !== want) {
          console.error(`mismatch: ${variant} np=${np} gave ${res.points.length}/${want} points`);
          process.exit(1);
        }
        const job = { run, np, variant, seconds: res.seconds, cpuS: res.cpuS, extCores: res.extCores, ...idle,
          ...(res.extCores !== null && res.extCores > EXT_MAX ? { noisy: true } : {}),
          points: res.points.map((p) => ({ coll: p.coll, bytes: p.bytes, us: +p.us.toPrecision(5), min_us: +p.min_us.toPrecision(5), iters: p.iters })) };
        jobs.push(job);
        log(`  run ${run} np=${np} ${variant.padEnd(8)} ${res.seconds.toFixed(1)} s` +
          `${res.extCores !== null ? `  other work: ${res.extCores.toFixed(2)} cores${job.noisy ? ' (noisy)' : ''}` : ''}`);
      }
    }
  }
  const result = {
    date: new Date().toISOString(),
    totalSeconds: +((performance.now() - t0) / 1000).toFixed(1),
    machine: (({ addon: _, ...m }) => m)(machineInfo()),  // the addons are the variable here: see `addons`
    load1: { start: +loadStart[0].toFixed(2), end: +os.loadavg()[0].toFixed(2) },
    config: { runs: o.runs, nps: o.nps, points: POINTS, quick: o.quick, normal: o.normal, ...o.params },
    addons: addonInfo,
    method: 'bench/nodempi_job.mjs (OSU-style: timed warm-up, ~targetMs of calls each followed by an untimed barrier, ' +
      'barrier as a back-to-back loop; per-rank mean, max over ranks) in fresh jobs, the two addons alternating ' +
      '(A B, B A, ...); medians over clean runs when there are >= min(R, 3), paired differences over runs whose two jobs were both clean',
    summary: summarize(o, jobs),
    jobs,
  };
  const out = join(BENCH, 'results', o.partial ? 'mismatch-partial.json' : 'mismatch.json');
  mkdirSync(join(BENCH, 'results'), { recursive: true });
  writeFileSync(out, `${JSON.stringify(result, null, 1)}\n`);
  const md = markdown(result);
  if (!o.partial) writeFileSync(join(BENCH, 'MISMATCH.md'), md);
  console.log(md);
  log(`mismatch: wrote bench/results/${o.partial ? 'mismatch-partial.json' : 'mismatch.json'}${o.partial ? '' : ' and bench/MISMATCH.md'}` +
    ` (${result.totalSeconds.toFixed(0)} s)`);
}

function summarize(o, jobs) {
  const want = Math.min(o.runs, 3);
  const rows = [];
  for (const np of o.nps) {
    const of = (v) => {
      const all = jobs.filter((j) => j.np === np && j.variant === v);
      const clean = all.filter((j) => !j.noisy);
      return clean.length >= want ? clean : all;
    };
    const use = Object.fromEntries(VARIANTS.map((v) => [v, of(v)]));
    for (const [coll, bytes] of POINTS) {
      const us = (j) => j.points.find((p) => p.coll === coll && p.bytes === bytes).us;
      const med = Object.fromEntries(VARIANTS.map((v) => [v, median(use[v].map(us))]));
      // pairs: the two jobs of one run, both in the sets used above
      const diffs = [];
      for (let run = 1; run <= Math.max(...jobs.map((j) => j.run)); run++) {
        const a = use.normal.find((j) => j.run === run), b = use.noagree.find((j) => j.run === run);
        if (a && b) diffs.push((us(a) - us(b)) * 1000);
      }
      rows.push({
        np, coll, bytes, normal_us: med.normal, noagree_us: med.noagree,
        diff_ns: +((med.normal - med.noagree) * 1000).toFixed(1), rel: +(med.normal / med.noagree - 1).toFixed(4),
        paired_diff_ns: diffs.length ? +median(diffs).toFixed(1) : null,
        paired_rel: diffs.length ? +(median(diffs) / 1000 / med.noagree).toFixed(4) : null,
        paired_diffs_ns: diffs.map((d) => +d.toFixed(1)),
        slower_with_detection: diffs.filter((d) => d > 0).length,
        runs: { normal: use.normal.length, noagree: use.noagree.length },
        ...(use.normal.some((j) => j.noisy) || use.noagree.some((j) => j.noisy) ? { noisy: true } : {}),
      });
    }
  }
  return rows;
}

const pct = (x) => (x === null ? '—' : `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} %`);
const ns = (x) => (x === null ? '—' : `${x >= 0 ? '+' : ''}${x.toFixed(0)}`);

function markdown(r) {
  const m = r.machine;
  const L = [];
  L.push('# The cost of always-on mismatch detection');
  L.push('');
  L.push('Written by `node bench/mismatch.mjs` (a full run; `--quick` writes `results/mismatch-partial.json` and');
  L.push('leaves this file alone); every job and point in `results/mismatch.json`.');
  L.push('');
  L.push('Every collective publishes its signature (kind, root, op, datatype signature, count) and compares all');
  L.push('ranks\' signatures once they have arrived. The addon built with `-DNODEMPI_BENCH_NO_AGREE=ON` keeps the');
  L.push('protocol and skips the comparison, so the difference below is what the checking itself costs (not the');
  L.push(r.config.normal === 'ref'
    ? 'arrival step, which the collectives need anyway). Both addons are built by the script from the same'
    : 'arrival step, which the collectives need anyway). The addon with detection is build/Release as it was (it may');
  L.push(r.config.normal === 'ref'
    ? `sources (${r.addons.normal.path}, ${r.addons.noagree.path}; loaded through \`NODEMPI_ADDON\`, checked`
    : `predate the sources of ${r.addons.noagree.path}, built ${r.addons.noagree.built}; loaded through \`NODEMPI_ADDON\`, checked`);
  L.push('in a probe process), and run through `bench/nodempi_job.mjs`, the main sweep\'s job, in fresh jobs that');
  L.push('alternate A B, B A, ... so that each run\'s pair ran back to back. "Paired" is the median over runs of');
  L.push('that pair\'s difference; "medians" is the difference of the two variants\' medians. Latency is the max');
  L.push('over ranks of the per-rank mean, as in bench/README.md.');
  L.push('');
  L.push(`Run of ${r.date} (${(r.totalSeconds / 60).toFixed(1)} min): ${r.config.runs} run(s) per variant and world size, ` +
    `~${r.config.targetMs} ms timed per point. Machine: ${m.cpuCount} × ${m.cpuModel}, ${m.totalMemGiB} GiB, ${m.uname}; ` +
    `Node ${m.node}; nodempi ${m.nodempi} (${m.commit ?? '?'}${m.dirty ? ', uncommitted changes' : ''}). 1-min load average ` +
    `${r.load1.start} at the start, ${r.load1.end} at the end; ${r.jobs.filter((j) => j.noisy).length} of ${r.jobs.length} jobs ` +
    `noisy (other processes used > ${EXT_MAX} cores)${r.summary.some((x) => x.noisy) ? ', and some medians had to include them (marked *)' : ''}.`);
  L.push('');
  if (r.addons.uncommittedSources?.length) {
    L.push(`Both builds include uncommitted changes to: ${r.addons.uncommittedSources.join(', ')}.`);
    L.push('');
  }
  for (const np of r.config.nps) {
    const rows = r.summary.filter((x) => x.np === np && x.paired_diff_ns !== null);
    if (!rows.length) continue;
    const d = rows.map((x) => x.paired_diff_ns), q = rows.map((x) => x.paired_rel);
    L.push(`- ${np} ranks: the comparison adds a median ${Math.min(...d).toFixed(0)} to ${Math.max(...d).toFixed(0)} ns per call ` +
      `(${pct(Math.min(...q))} to ${pct(Math.max(...q))}) across these points; detection was the slower of a pair in ` +
      `${rows.reduce((n, x) => n + x.slower_with_detection, 0)} of ${rows.reduce((n, x) => n + x.paired_diffs_ns.length, 0)} pairs.`);
  }
  L.push('');
  L.push('| ranks | collective | size | with detection (µs) | without (µs) | paired difference (ns) | paired | ' +
    'slower with detection | difference of medians (ns) | medians | paired differences, min … max (ns) |');
  L.push('|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|---|');
  for (const x of r.summary) {
    const d = x.paired_diffs_ns;
    L.push(`| ${x.np}${x.noisy ? '*' : ''} | ${x.coll} | ${fmtSize(x.bytes)} | ${fmtUs(x.normal_us)} | ${fmtUs(x.noagree_us)} | ` +
      `${ns(x.paired_diff_ns)} | ${pct(x.paired_rel)} | ${x.slower_with_detection}/${d.length} | ${ns(x.diff_ns)} | ${pct(x.rel)} | ` +
      `${d.length ? `${Math.min(...d).toFixed(0)} … ${Math.max(...d).toFixed(0)}` : '—'} |`);
  }
  L.push('');
  return L.join('\n');
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
