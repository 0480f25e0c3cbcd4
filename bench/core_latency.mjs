#!/usr/bin/env node
// Where the small-message time goes: `node bench/core_latency.mjs [--runs N] [--np N] [--bytes B]`.
//
// Runs, round after round in the same minutes, the same small collectives
// three ways: Open MPI's C API (bench/ompi/osu_coll.c), nodempi's core in C++
// with no JavaScript (bench/core_latency.cc: the shared-memory protocol
// alone) and nodempi from JavaScript (bench/nodempi_job.mjs, as in the
// sweeps). The difference between the last two is what the JavaScript layer
// and the N-API binding add per call. Writes bench/CORE.md and
// results/core-latency.json.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { BENCH, ROOT, buildOsuColl, fmtUs, log, machineInfo, median, parseOptions, runJob, usageError, which } from './lib/jobs.mjs';

const COLLS = ['barrier', 'bcast', 'allreduce', 'gatherv', 'scatterv', 'allgatherv', 'alltoall', 'alltoallv', 'reduceScatter', 'scan', 'exscan'];
const NODE = process.execPath;

const usage = `usage: node bench/core_latency.mjs [options]
  --runs N         rounds of the three implementations, median reported (default 5)
  --np N           world size (default 2)
  --bytes B        message size in bytes, a multiple of 8 (default 8)
  --tight          every collective timed as barrier is, a loop of back-to-back calls (no barrier
                   between calls): its own section of bench/CORE.md and results/core-latency-tight.json`;

function options(argv) {
  const v = parseOptions('core_latency', usage, {
    runs: { type: 'string', default: '5' }, np: { type: 'string', default: '2' }, bytes: { type: 'string', default: '8' },
    tight: { type: 'boolean', default: false },
  }, argv);
  const o = { runs: Number(v.runs), np: Number(v.np), bytes: Number(v.bytes), tight: v.tight };
  if (!(o.runs >= 1 && o.np >= 1 && o.bytes >= 8 && o.bytes % 8 === 0)) usageError('core_latency', usage, 'bad option value');
  return o;
}

function compile(tmp) {
  // CMakeLists.txt's NODEMPI_BENCH target, built into build/bench/
  // (incremental); CMake's output goes to stderr.
  const dir = join(ROOT, 'build', 'bench');
  const toStderr = { cwd: ROOT, stdio: ['ignore', 2, 'inherit'] };
  execFileSync('cmake', ['-S', ROOT, '-B', dir, '-DNODEMPI_BENCH=ON', '--log-level=WARNING'], toStderr);
  execFileSync('cmake', ['--build', dir, '--target', 'core_latency', '--parallel', '2'], toStderr);
  const core = join(dir, 'core_latency');
  let ompi = null;
  if (which('mpicc') && which('mpirun')) {
    ompi = buildOsuColl(join(tmp, 'osu_coll'));
  } else {
    log('core_latency: Open MPI not found (mpicc/mpirun); its column stays empty');
  }
  return { core, ompi };
}

const o = options(process.argv.slice(2));
const tmp = mkdtempSync(join(os.tmpdir(), 'nodempi-core-'));
try {
  const exe = compile(tmp);
  // As bench/run.mjs runs its sweeps: the first size gets a longer warm-up,
  // which the JIT needs.
  const sweep = ['--colls', COLLS.join(','), '--sizes', String(o.bytes), '--warm-ms', '50', '--first-warm-ms', '200',
    '--target-ms', '150', '--max-warm', '1000000', '--min-iters', '2', '--max-iters', '200000', ...(o.tight ? ['--tight', '1'] : [])];
  const jobs = {
    ompi: exe.ompi && ['mpirun', ['--allow-run-as-root', '--oversubscribe', '-n', String(o.np), exe.ompi, ...sweep, '--label', 'ompi']],
    core: [exe.core, [String(o.np), String(o.bytes), ...(o.tight ? ['tight'] : [])]],
    nodempi: [NODE, [join(ROOT, 'dist', 'cli.js'), '-n', String(o.np), join(BENCH, 'nodempi_job.mjs'), ...sweep]],
  };
  // Tight: also with NODEMPI_CHECK_SAME=0, where a small bcast's root does
  // not wait for its readers (README, "Tuning").
  if (o.tight) jobs.unchecked = [...jobs.nodempi, { NODEMPI_CHECK_SAME: '0' }];
  const us = {};  // impl -> coll -> [µs per run]
  const t0 = performance.now();
  for (let run = 0; run < o.runs; run++) {
    for (const [impl, job] of Object.entries(jobs)) {
      if (!job) continue;
      const { points } = await runJob(`${impl} run ${run + 1}`, job[0], job[1], { ...process.env, ...job[2] });
      for (const p of points) ((us[impl] ??= {})[p.coll] ??= []).push(p.us);
    }
    log(`core_latency: run ${run + 1} of ${o.runs} done`);
  }
  const minutes = (performance.now() - t0) / 60000;
  const med = (impl, coll) => (us[impl]?.[coll] ? median(us[impl][coll]) : undefined);
  const rows = COLLS.map((coll) => {
    const [om, co, js] = [med('ompi', coll), med('core', coll), med('nodempi', coll)];
    return { coll, ompi: om, core: co, nodempi: js, added: js - co, unchecked: med('unchecked', coll) };
  });
  const ratio = (a, b) => (a === undefined || b === undefined ? '—' : (a / b).toFixed(2));
  // CORE.md: the introduction, then one section per timing, each rewritten
  // by its own mode between its markers.
  const intro = [];
  intro.push('# Where the small-message time goes', '');
  intro.push('Written by `node bench/core_latency.mjs` (raw figures in `results/core-latency.json`, with `--tight`',
    '`results/core-latency-tight.json`). The same collectives, 8 B per rank (barrier: none) unless the section',
    'says otherwise, 2 ranks, run three ways round after round in the same minutes:', '');
  intro.push('- **Open MPI**: its C API (`bench/ompi/osu_coll.c`), as in the sweeps.');
  intro.push("- **core**: nodempi's C++ core with no JavaScript and no N-API (`bench/core_latency.cc`): a process",
    '  creates the segment as the launcher does and forks the ranks. This is the shared-memory protocol alone.');
  intro.push('- **nodempi**: the package from JavaScript (`bench/nodempi_job.mjs`), as in the sweeps. The job calls each',
    '  collective again and again with the same arguments, so from the second call on a call runs as the',
    "  persistent request made of it (`lib/replay.ts`).", '');
  intro.push('"JS + binding" is nodempi minus core: what the JavaScript layer (argument checks, message specs) and the',
    'N-API call add. On this project\'s 2-vCPU machines a cross-core cache-line transfer takes anywhere from',
    '~50 to ~300 ns depending on where the host places the vCPUs at the moment, so all three columns move',
    'together from run to run; compare within a run.', '');
  const L = [];
  if (o.tight) {
    L.push('## Tight loop', '', 'Every collective timed as barrier is: one loop of back-to-back calls, no barrier between',
      'them (a rooted collective\'s root may run ahead), mean per call, max over ranks; the table shows the median',
      'over runs. Issue 23\'s bound for barrier, bcast and allreduce: 1.2x Open MPI. Open MPI\'s rooted',
      'collectives (bcast, gatherv, scatterv, scan, exscan at this size) return at a rank once its eager',
      'messages are out, so back to back a rank runs ahead and the calls overlap; every nodempi collective',
      'waits until every rank has arrived (the comparison of signatures that lets every rank throw',
      '`ERR_NOT_SAME`, and the slot a rank writes next), so each costs a round trip between the ranks, as a',
      'barrier does, in the core as much as from JavaScript. "checks off" is nodempi with `NODEMPI_CHECK_SAME=0`,',
      'where a bcast of one phase returns on its root once its message is out and only the readers compare',
      'signatures (with the root\'s); at 16 bytes or less the message travels in the root\'s ring of header lines,',
      'so the root runs up to 15 calls ahead. Every other collective runs as in the nodempi column.', '');
  } else {
    L.push('## Per call', '', 'Timing is the sweeps\' everywhere: each call timed on its own and followed by an untimed barrier',
      '(barrier: back to back), mean per call, max over ranks; the table shows the median over runs.', '');
  }
  const m = machineInfo();
  L.push(`Run of ${new Date().toISOString()} (${minutes.toFixed(1)} min, ${o.runs} run(s), ${o.bytes} B, ${o.np} ranks). Machine: ${m.cpuCount} × ${m.cpuModel}, ${m.uname}; Node ${m.node}; ${m.openmpi ?? "Open MPI not found"}; nodempi ${m.nodempi} (${m.commit}${m.dirty ? ", uncommitted changes" : ""}).`, '');
  // Columns: the checks-off job runs in tight mode only.
  const cols = [['collective', '---', (r) => r.coll], ['Open MPI µs', '--:', (r) => fmtUs(r.ompi)],
    ['core µs', '--:', (r) => fmtUs(r.core)], ['nodempi µs', '--:', (r) => fmtUs(r.nodempi)],
    ['JS + binding µs', '--:', (r) => fmtUs(r.added)], o.tight && ['checks off µs', '--:', (r) => fmtUs(r.unchecked)],
    ['core / Open MPI', '--:', (r) => ratio(r.core, r.ompi)], ['nodempi / Open MPI', '--:', (r) => ratio(r.nodempi, r.ompi)],
    o.tight && ['checks off / Open MPI', '--:', (r) => ratio(r.unchecked, r.ompi)]].filter(Boolean);
  const line = (cells) => `| ${cells.join(' | ')} |`;
  L.push(line(cols.map((c) => c[0])), `|${cols.map((c) => c[1]).join('|')}|`);
  for (const r of rows) L.push(line(cols.map((c) => c[2](r))));
  const file = join(BENCH, 'CORE.md');
  const sections = {};
  const old = existsSync(file) ? readFileSync(file, 'utf8') : '';
  for (const mode of ['per-call', 'tight']) {
    const at = old.match(new RegExp(`<!-- ${mode}:start -->\\n([\\s\\S]*?)<!-- ${mode}:end -->`));
    if (at) sections[mode] = at[1];
  }
  sections[o.tight ? 'tight' : 'per-call'] = `${L.join('\n')}\n`;
  const body = ['per-call', 'tight'].filter((k) => sections[k]).map((k) => `<!-- ${k}:start -->\n${sections[k]}<!-- ${k}:end -->\n`);
  // What follows the sections is written by hand (decisions, notes): kept.
  const lastEnd = old.lastIndexOf(':end -->');
  const notes = lastEnd < 0 ? '' : old.slice(old.indexOf('\n', lastEnd) + 1);
  writeFileSync(file, `${intro.join('\n')}\n${body.join('\n')}${notes}`);
  mkdirSync(join(BENCH, 'results'), { recursive: true });
  writeFileSync(join(BENCH, 'results', o.tight ? 'core-latency-tight.json' : 'core-latency.json'), JSON.stringify({ options: o, us, rows }, null, 1) + '\n');
  console.log(L.slice(-rows.length - 2).join('\n'));
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
