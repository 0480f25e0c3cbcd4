// What the fresh-process drivers bench/datatypes.mjs and bench/mismatch.mjs
// share: machine and version facts for the results file, a wait for other
// work to leave the CPUs, and one job run in its own process group with a
// measure of how much other work ran meanwhile. (bench/run.mjs predates this
// file and keeps its own copy, so its default run stays exactly as it was.)
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

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

export function tryRun(cmd, args) {
  try { return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], cwd: ROOT }).trim(); } catch { return null; }
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
 * Waits until other work leaves the CPUs mostly idle, at most perJobS per
 * call and totalS over the life of the returned function: on 2 shared cores
 * a number taken under load is worthless, but the run must end.
 */
export function idleWaiter(perJobS, totalS) {
  let left = totalS;
  return async () => {
    const t0 = Date.now();
    let busy = await busyFraction(250);
    while (busy !== null && busy > 0.2 && (Date.now() - t0) / 1000 < Math.min(perJobS, left)) {
      await new Promise((r) => setTimeout(r, 1000));
      busy = await busyFraction(250);
    }
    const waited = (Date.now() - t0) / 1000;
    left = Math.max(0, left - waited);
    return { busyBefore: busy === null ? null : +busy.toFixed(2), waitedS: +waited.toFixed(1) };
  };
}

// Jobs run in their own process group, so a timeout or Ctrl-C ends the whole
// tree. The handlers go in with the first job, not at import: a script that
// only borrows a helper from here keeps its own handlers.
const running = new Set();
let handlers = false;
function killOnSignal() {
  if (handlers) return;
  handlers = true;
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(sig, () => {
      for (const c of running) { try { process.kill(-c.pid, 'SIGKILL'); } catch { /* gone */ } }
      console.error(`\ninterrupted (${sig})`);
      process.exit(130);
    });
  }
}

/** CPU-seconds of the job's process tree, from bash's `times` (children line) at the end of stderr. */
function childCpuSeconds(err) {
  const sec = (t) => { const m = /^(\d+)m([\d.]+)s$/.exec(t); return m ? Number(m[1]) * 60 + Number(m[2]) : NaN; };
  const lines = err.trimEnd().split('\n');
  const f = (lines[lines.length - 1] ?? '').trim().split(/\s+/);
  if (f.length !== 2 || !/^\d+m[\d.]+s$/.test(f[0])) return { cpu: null, err };
  return { cpu: sec(f[0]) + sec(f[1]), err: lines.slice(0, -2).join('\n') };
}

/**
 * Runs `cmd args` in a fresh process group and resolves with its JSON stdout
 * lines; rejects (with its stderr) on a non-zero exit, a timeout or a WRONG
 * RESULT. extCores: how many cores other processes kept busy meanwhile (the
 * CPUs' busy time from /proc/stat minus the job's own CPU time).
 */
export function runJob(label, cmd, args, env, timeoutS = 600) {
  killOnSignal();
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let stat0 = null;
    try { stat0 = cpuTimes(); } catch { /* no /proc */ }
    const child = spawn('bash', ['-c', '"$@"; rc=$?; times >&2; exit $rc', 'bash', cmd, ...args],
      { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    running.add(child);
    let out = '', err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    const limit = setTimeout(() => {
      err += `\n${label}: took longer than ${timeoutS} s; killed\n`;
      try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
    }, timeoutS * 1000);
    child.on('error', (e) => { clearTimeout(limit); running.delete(child); reject(new Error(`${label}: cannot start ${cmd}: ${e.message}`)); });
    child.on('close', (code, signal) => {
      clearTimeout(limit);
      running.delete(child);
      const seconds = (performance.now() - t0) / 1000;
      const own = childCpuSeconds(err);
      err = own.err;
      let extCores = null;
      try {
        const stat1 = cpuTimes();
        if (stat0 && own.cpu !== null && stat1.total > stat0.total) {
          const busyCpuS = (1 - (stat1.idle - stat0.idle) / (stat1.total - stat0.total)) * NCPU * seconds;
          extCores = Math.max(0, busyCpuS - own.cpu) / seconds;
        }
      } catch { /* no /proc */ }
      const points = [];
      for (const line of out.split('\n')) {
        if (!line.startsWith('{')) continue;
        try { points.push(JSON.parse(line)); } catch { /* not ours */ }
      }
      if (code !== 0 || signal || /WRONG RESULT/.test(err)) {
        reject(new Error(`${label} failed (exit ${signal || code})\n--- stderr:\n${err.trim()}`));
        return;
      }
      resolve({ points, seconds: +seconds.toFixed(2), cpuS: own.cpu, extCores: extCores === null ? null : +extCores.toFixed(2) });
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
