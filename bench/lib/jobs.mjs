// What every script in bench/ shares: option parsing, machine and version
// facts for the results file, the python3 that has mpi4py, a wait for other
// work to leave the CPUs, and one job run in its own process group with a
// measure of how much other work ran meanwhile. One runner, so a fix to how
// jobs are timed or killed reaches every benchmark.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, realpathSync, statSync } from 'node:fs';
import os from 'node:os';
import { delimiter, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

export const BENCH = dirname(dirname(fileURLToPath(import.meta.url)));
export const ROOT = dirname(BENCH);
export const NCPU = os.cpus().length;
/** A job during which other processes used more cores than this is noisy. */
export const EXT_MAX = 0.25;

export const median = (xs) => {
  const s = xs.slice().sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

export const log = (msg) => process.stderr.write(`${msg}\n`);

/**
 * Parses argv with node:util parseArgs. `options` is parseArgs's table
 * (--help/-h is added); a bad option prints `name: problem` and the usage and
 * exits 2, --help prints the usage and exits 0. Returns the values, with
 * `seen`: the options given on the command line, for scripts whose defaults
 * depend on which options were named.
 */
export function parseOptions(name, usage, options, argv = process.argv.slice(2)) {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: { help: { type: 'boolean', short: 'h' }, ...options }, strict: true, tokens: true });
  } catch (e) {
    usageError(name, usage, e.message);
  }
  if (parsed.values.help) { console.log(usage); process.exit(0); }
  const seen = new Set(parsed.tokens.filter((t) => t.kind === 'option').map((t) => t.name));
  return { ...parsed.values, seen };
}

/** Prints `name: msg` and the usage, exits 2. */
export function usageError(name, usage, msg) {
  console.error(`${name}: ${msg}\n${usage}`);
  process.exit(2);
}

/** A comma-separated option value as a list (empty items dropped), each item mapped by f. */
export const list = (v, f = String) => v.split(',').map((x) => x.trim()).filter((x) => x !== '').map(f);

export function tryRun(cmd, args) {
  try { return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], cwd: ROOT }).trim(); } catch { return null; }
}

/**
 * Compiles bench/ompi/osu_coll.c, the C side of every comparison, with
 * `mpicc` -O2 into `exe`; throws an Error that says which compiler failed.
 */
export function buildOsuColl(exe, mpicc = 'mpicc') {
  try {
    execFileSync(mpicc, ['-O2', '-o', exe, join(BENCH, 'ompi', 'osu_coll.c'), '-lm'], { stdio: ['ignore', 'inherit', 'inherit'] });
  } catch (e) {
    throw new Error(`bench: ${mpicc} failed to compile bench/ompi/osu_coll.c: ${e.message}`);
  }
  return exe;
}

export function which(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).status === 0;
}

/** Newest modification time (ms) of the addon's sources: native/ and CMakeLists.txt. */
function newestSource() {
  let newest = statSync(join(ROOT, 'CMakeLists.txt')).mtimeMs;
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else newest = Math.max(newest, statSync(p).mtimeMs);
    }
  };
  walk(join(ROOT, 'native'));
  return newest;
}

/**
 * The addon the jobs load (NODEMPI_ADDON, else build/Release), relative to the
 * repository, and whether it is older than its sources: then the numbers
 * describe some earlier state of native/, not this commit.
 */
export function addonInfo(env = process.env) {
  const path = env.NODEMPI_ADDON ? resolve(ROOT, env.NODEMPI_ADDON) : join(ROOT, 'build', 'Release', 'nodempi.node');
  if (!existsSync(path)) return { path: relative(ROOT, path), missing: true };
  const built = statSync(path).mtimeMs;
  return { path: relative(ROOT, path), built: new Date(built).toISOString(), olderThanSources: built < newestSource() };
}

/** CPU model, uname, memory, Node, Open MPI, git commit: what a reader needs to weigh the numbers. */
export function machineInfo() {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model ?? 'unknown',
    cpuCount: cpus.length,
    uname: tryRun('uname', ['-srvm']) ?? `${os.type()} ${os.release()} ${os.machine()}`,
    totalMemGiB: +(os.totalmem() / 2 ** 30).toFixed(1),
    node: process.version,
    openmpi: which('mpirun') ? (tryRun('mpirun', ['--version']) ?? '').split('\n')[0] || null : null,
    nodempi: JSON.parse(readFileSync(`${ROOT}/package.json`, 'utf8')).version,
    commit: tryRun('git', ['rev-parse', '--short', 'HEAD']),
    dirty: (tryRun('git', ['status', '--porcelain', '--untracked-files=no']) ?? '') !== '',
    addon: addonInfo(),
  };
}

// Without initialising MPI: the library version is all that is asked.
const MPI4PY_PROBE = `import sys, mpi4py, numpy
mpi4py.rc.initialize = False
from mpi4py import MPI
print(mpi4py.__version__); print(numpy.__version__); print(sys.version.split()[0])
print(' '.join(MPI.Get_library_version().strip().splitlines()[0].split(',')[0].split()))`;

/**
 * The python3 that runs the mpi4py programs (bench/mpi4py/): `explicit` (a
 * --python option), else the first python3 along PATH that imports mpi4py
 * and numpy (a pyenv or venv python3 first on PATH usually has neither), and
 * which MPI library its mpi4py is built against: { exe, info: { version,
 * numpy, python, library, lib: 'openmpi' | 'mpich' | null } }, or null.
 */
export function findMpi4py(explicit) {
  const seen = new Set();
  const cands = explicit ? [explicit] : (process.env.PATH ?? '').split(delimiter).filter(Boolean).map((d) => join(d, 'python3'))
    .filter((p) => {
      if (!existsSync(p)) return false;
      const real = realpathSync(p);
      if (seen.has(real)) return false;
      seen.add(real);
      return true;
    });
  for (const exe of cands) {
    const r = spawnSync(exe, ['-c', MPI4PY_PROBE], { encoding: 'utf8', timeout: 30000, stdio: ['ignore', 'pipe', 'ignore'] });
    if (r.status !== 0) continue;
    const [version, numpy, python, library] = r.stdout.trim().split('\n');
    const lib = /Open MPI/i.test(library) ? 'openmpi' : /MPICH/i.test(library) ? 'mpich' : null;
    return { exe, info: { version, numpy, python, library, lib } };
  }
  return null;
}

function cpuTimes() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return { idle: f[3] + (f[4] || 0), total: f.reduce((a, b) => a + b, 0) };
}

async function busyFraction(ms) {
  try {
    const a = cpuTimes();
    await new Promise((r) => setTimeout(r, ms));
    const b = cpuTimes();
    return b.total > a.total ? 1 - (b.idle - a.idle) / (b.total - a.total) : 0;
  } catch { return null; }
}

/**
 * Waits until other work leaves the CPUs mostly idle (busy fraction at most
 * busyMax), at most perJobS per call and totalS over the life of the returned
 * function: on 2 shared cores a number taken under load is worthless, but the
 * run must end.
 */
export function idleWaiter(perJobS, totalS, busyMax = 0.2) {
  let left = totalS;
  return async () => {
    const t0 = Date.now();
    let busy = await busyFraction(250);
    while (busy !== null && busy > busyMax && (Date.now() - t0) / 1000 < Math.min(perJobS, left)) {
      await new Promise((r) => setTimeout(r, 1000));
      busy = await busyFraction(250);
    }
    const waited = (Date.now() - t0) / 1000;
    left = Math.max(0, left - waited);
    return { busyBefore: busy === null ? null : +busy.toFixed(2), waitedS: +waited.toFixed(1) };
  };
}

// Jobs run in their own process group, so a timeout or Ctrl-C ends the whole
// tree. The handlers go in with the first job (or onInterrupt), not at
// import: a script that only borrows a helper from here keeps its own.
const running = new Set();
const cleanups = [];
let handlers = false;
function killOnSignal() {
  if (handlers) return;
  handlers = true;
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(sig, () => {
      for (const c of running) { try { process.kill(-c.pid, 'SIGKILL'); } catch { /* gone */ } }
      for (const f of cleanups) { try { f(); } catch { /* best effort */ } }
      console.error(`\ninterrupted (${sig})`);
      process.exit(130);
    });
  }
}

/** Runs f (e.g. removing a temp dir) if the bench is interrupted. */
export function onInterrupt(f) {
  killOnSignal();
  cleanups.push(f);
}

/** CPU-seconds of the job's process tree, from bash's `times` (its children line). */
function childCpuSeconds(times) {
  const sec = (t) => { const m = /^(\d+)m([\d.]+)s$/.exec(t); return m ? Number(m[1]) * 60 + Number(m[2]) : NaN; };
  const lines = times.trim().split('\n');
  const f = (lines[lines.length - 1] ?? '').trim().split(/\s+/);
  return f.length === 2 && /^\d+m[\d.]+s$/.test(f[0]) ? sec(f[0]) + sec(f[1]) : null;
}

/**
 * Runs `cmd args` in a fresh process group and resolves with its JSON stdout
 * lines; rejects (with its stderr) on a non-zero exit, a timeout, a WRONG
 * RESULT, or when `more.check(points)` names a problem (e.g. missing
 * points). extCores: how many cores other processes kept busy meanwhile (the
 * CPUs' busy time from /proc/stat minus the job's own CPU time, which bash's
 * `times` counts over every reaped descendant and writes to a pipe of its
 * own, fd 3, so the job's stderr stays the job's).
 *
 * more: { check(points) -> string | null; shown: the command as the error
 * message shows it (default `cmd args`); stderr: 'inherit' to let the job
 * write to ours as it runs (then it is not searched for WRONG RESULT);
 * points: how many JSON lines make the job's whole output, and exitS: how
 * long it may take to end after the last of them (default 30 s) before it is
 * killed and counted as hung at exit: its points are kept (each was checked
 * as it ran) and `hungAtExit` is set. MPICH 4.0 over UCX's TCP can hang in
 * MPI_Finalize (README "Across machines"), which would otherwise cost the
 * whole timeout. }
 * Resolves with { points, seconds, cpuS, extCores } rounded to 2 decimals,
 * `exact` with the unrounded seconds and extCores, `stdout`, `stderr` and
 * `hungAtExit`. A rejection carries `points`, `stdout`, `code` and `signal`.
 */
export function runJob(label, cmd, args, env, timeoutS = 600, more = {}) {
  killOnSignal();
  const shown = more.shown ?? `${cmd} ${args.join(' ')}`;
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let stat0 = null;
    try { stat0 = cpuTimes(); } catch { /* no /proc */ }
    const child = spawn('bash', ['-c', '"$@" 3>&-; rc=$?; times >&3; exit $rc', 'bash', cmd, ...args],
      { cwd: ROOT, env, stdio: ['ignore', 'pipe', more.stderr === 'inherit' ? 'inherit' : 'pipe', 'pipe'], detached: true });
    running.add(child);
    let out = '', err = '', times = '';
    let exitLimit = null, hungAtExit = false;
    child.stdout.on('data', (d) => {
      out += d;
      if (more.points === undefined || exitLimit) return;
      if (out.split('\n').filter((l) => l.startsWith('{') && l.endsWith('}')).length < more.points) return;
      exitLimit = setTimeout(() => {
        hungAtExit = true;
        try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
      }, (more.exitS ?? 30) * 1000);
    });
    child.stderr?.on('data', (d) => { err += d; });
    child.stdio[3].on('data', (d) => { times += d; });
    let timedOut = '';
    const limit = setTimeout(() => {
      timedOut = `${label}: took longer than ${timeoutS} s; killed`;
      try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
    }, timeoutS * 1000);
    child.on('error', (e) => { clearTimeout(limit); running.delete(child); reject(new Error(`${label}: cannot start ${cmd}: ${e.message}`)); });
    child.on('close', (code, signal) => {
      clearTimeout(limit);
      clearTimeout(exitLimit);
      running.delete(child);
      const seconds = (performance.now() - t0) / 1000;
      const cpu = childCpuSeconds(times);
      let extCores = null;
      try {
        const stat1 = cpuTimes();
        if (stat0 && cpu !== null && stat1.total > stat0.total) {
          const busyCpuS = (1 - (stat1.idle - stat0.idle) / (stat1.total - stat0.total)) * NCPU * seconds;
          extCores = Math.max(0, busyCpuS - cpu) / seconds;
        }
      } catch { /* no /proc */ }
      const points = [];
      for (const line of out.split('\n')) {
        if (!line.startsWith('{')) continue;
        try { points.push(JSON.parse(line)); } catch { /* not ours */ }
      }
      if (timedOut) err += `\n${timedOut}\n`;
      if (hungAtExit) log(`${label}: every point printed, then no exit within ${more.exitS ?? 30} s; killed, its points kept`);
      const wrong = /WRONG RESULT/.test(err);
      const problem = more.check?.(points) ?? null;
      if (((code !== 0 || signal) && !hungAtExit) || wrong || problem) {
        const e = new Error(`${label} failed (exit ${signal || code})${wrong ? ': a WRONG RESULT' : ''}${problem ? `: ${problem}` : ''}\n` +
          `--- command: ${shown}\n--- stderr:\n${err.trim()}\n--- stdout (last lines):\n${out.trim().split('\n').slice(-5).join('\n')}`);
        // not enumerable, so an uncaught failure prints its message, not the job's whole output
        for (const [k, v] of Object.entries({ points, stdout: out, code, signal })) Object.defineProperty(e, k, { value: v });
        reject(e);
        return;
      }
      resolve({ points, seconds: +seconds.toFixed(2), cpuS: cpu, extCores: extCores === null ? null : +extCores.toFixed(2),
        exact: { seconds, extCores }, stdout: out, stderr: err.trim(), hungAtExit });
    });
  });
}

export function fmtSize(b) {
  if (b === 0) return '—';
  if (b >= 1048576) return `${b / 1048576} MiB`;
  if (b >= 1024) return `${b / 1024} KiB`;
  return `${b} B`;
}

export function fmtUs(x) {
  if (x === undefined || x === null || Number.isNaN(x)) return '—';
  if (Math.abs(x) >= 1000) return x.toFixed(0);
  if (Math.abs(x) >= 100) return x.toFixed(1);
  if (Math.abs(x) >= 10) return x.toFixed(2);
  return x.toFixed(3);
}

/** a / b for a table: '—' when either is missing. */
export function fmtRatio(a, b) {
  if (a === undefined || b === undefined || a === null || b === null || !(b > 0)) return '—';
  const r = a / b;
  return r >= 100 ? r.toFixed(0) : r >= 10 ? r.toFixed(1) : r.toFixed(2);
}
