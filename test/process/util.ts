/**
 * Helpers for the launcher's process-level tests: run the real `nodempi`
 * command (or a driver script) as a child process with a hard time limit,
 * and check that a job leaves nothing behind (no /dev/shm segment, no rank
 * process).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const cli = join(root, 'dist', 'cli.js');
export const fixtures = join(root, 'test', 'fixtures', 'process');
export const rankScript = join(fixtures, 'rank.mjs');

export interface Run {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Milliseconds from spawn to the launcher's exit. */
  ms: number;
  /** Date.now() at the launcher's exit. */
  endedAt: number;
  /** True when the hard limit ended it (a hang). */
  hung: boolean;
}

export interface Started {
  child: ChildProcess;
  done: Promise<Run>;
  /** What the child has written to stdout so far. */
  stdout(): string;
}

/**
 * Spawns `cmd argv` with its output collected. `limitMs` is a hard limit:
 * past it the child is SIGKILLed and `hung` is set. Resolves once the
 * child has exited and its pipes have closed, or 3 s after the exit if
 * something it left behind still holds them (that case is then visible
 * through the pid checks, not as a hanging test).
 */
export interface StartOptions {
  env?: Record<string, string>;
  /** Hard limit in ms (default 30 s). */
  limitMs?: number;
  cwd?: string;
  /** How long to wait for the pipes to close after the exit (default 3 s). */
  drainMs?: number;
  /** Written to the child's stdin (default: no stdin). */
  input?: string;
  /** How to decode the output (default utf8). */
  encoding?: BufferEncoding;
  /** Start the child in a process group (and session) of its own. */
  detached?: boolean;
}

export function start(cmd: string, argv: string[], opts: StartOptions = {}): Started {
  const t0 = Date.now();
  // Never pass on a job identity this process may have inherited.
  const env: Record<string, string | undefined> = { ...process.env, ...opts.env };
  for (const k of ['NODEMPI_RANK', 'NODEMPI_SIZE', 'NODEMPI_FD', 'NODEMPI_LAUNCHER_PID']) if (!opts.env?.[k]) delete env[k];
  const child = spawn(cmd, argv, {
    env,
    cwd: opts.cwd,
    stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    detached: opts.detached,
  });
  if (opts.input !== undefined) {
    child.stdin!.on('error', () => {});
    child.stdin!.end(opts.input);
  }
  let stdout = '', stderr = '';
  child.stdout!.setEncoding(opts.encoding ?? 'utf8').on('data', (d: string) => (stdout += d));
  child.stderr!.setEncoding(opts.encoding ?? 'utf8').on('data', (d: string) => (stderr += d));
  const done = new Promise<Run>((resolve) => {
    let hung = false, ms = -1, endedAt = -1, finished = false;
    let status: number | null = null, signal: NodeJS.Signals | null = null;
    const limit = setTimeout(() => {
      hung = true;
      child.kill('SIGKILL');
    }, opts.limitMs ?? 30_000);
    const finish = () => {
      if (finished) return;
      finished = true;
      clearTimeout(limit);
      resolve({ status, signal, stdout, stderr, ms, endedAt, hung });
    };
    child.on('exit', (code, sig) => {
      endedAt = Date.now();
      ms = endedAt - t0;
      status = code;
      signal = sig;
      setTimeout(finish, opts.drainMs ?? 3000).unref();
    });
    child.on('close', finish);
  });
  return { child, done, stdout: () => stdout };
}

/** Runs the launcher: `nodempi launcherArgs...`. */
export function nodempi(args: string[], opts: StartOptions = {}): Promise<Run> {
  return start(process.execPath, [cli, ...args], opts).done;
}

/** Runs the launcher on the rank fixture at np ranks. */
export function rankJob(np: number, args: string[], opts: StartOptions & { launcher?: string[] } = {}): Promise<Run> {
  return nodempi(['-n', String(np), ...(opts.launcher ?? []), rankScript, ...args], opts);
}

/** A readable summary for assertion messages. */
export function explain(r: Run): string {
  return `status ${r.status} signal ${r.signal} after ${r.ms} ms${r.hung ? ' (HUNG)' : ''}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;
}

/** The launcher's own lines naming a rank. */
export function rankLines(stderr: string): string[] {
  return stderr.split('\n').filter((l) => /^nodempi: rank \d+ /.test(l));
}

// ---------------------------------------------------------------- leftovers

/** The nodempi-* names in /dev/shm now. */
export function shmNames(): Set<string> {
  try {
    return new Set(readdirSync('/dev/shm').filter((n) => n.startsWith('nodempi-')));
  } catch {
    return new Set();
  }
}

/**
 * Segments that appeared since `before` and are still there a moment later
 * (another job running at the same time holds its name for microseconds
 * only; a leak stays).
 */
export async function leakedSegments(before: Set<string>): Promise<string[]> {
  const fresh = () => [...shmNames()].filter((n) => !before.has(n));
  if (fresh().length === 0) return [];
  await sleep(300);
  return fresh();
}

/** A per-test scratch folder for pid files. */
export function scratch(): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'nodempi-proc-'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The rank pids the fixture wrote (`pid.<rank>` files), by rank. */
export function rankPids(dir: string): Map<number, number> {
  const pids = new Map<number, number>();
  for (const f of readdirSync(dir)) {
    const m = /^pid\.(\d+)$/.exec(f);
    if (m) pids.set(Number(m[1]), Number(readFileSync(join(dir, f), 'utf8')));
  }
  return pids;
}

/**
 * Whether `pid` is a live (not zombie) process running our fixture. The
 * command-line check guards against a recycled pid; zombies count as gone
 * (an orphan waits for pid 1 to reap it).
 */
export function alive(pid: number, marker?: string): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (state === 'Z' || state === 'X') return false;
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return marker ? cmdline.includes(marker) : cmdline.includes('nodempi-proc-') || cmdline.includes('rank.mjs');
  } catch {
    return false;
  }
}

/** Waits up to `ms` for every pid to be gone; returns those still alive. */
export async function survivors(pids: Iterable<number>, ms = 4000, marker?: string): Promise<number[]> {
  const list = [...pids];
  const end = Date.now() + ms;
  for (;;) {
    const left = list.filter((p) => alive(p, marker));
    if (left.length === 0 || Date.now() >= end) return left;
    await sleep(50);
  }
}

/** SIGKILLs what a failed test left (only pids our fixture wrote). */
export function reap(pids: Iterable<number>, marker?: string): void {
  for (const p of pids) {
    if (alive(p, marker)) {
      try { process.kill(p, 'SIGKILL'); } catch { /* gone */ }
    }
  }
}

/** Polls until fn() is true or `ms` passes. */
export async function until(fn: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!fn()) {
    if (Date.now() >= end) return false;
    await sleep(20);
  }
  return true;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * The full no-leftover check after a job: no new segment, no rank process.
 * `dir` holds the pid files (none: only /dev/shm is checked).
 */
export async function expectClean(before: Set<string>, dir?: string, waitMs = 4000): Promise<{ leaked: string[]; left: number[] }> {
  const pids = dir ? rankPids(dir).values() : [];
  const left = await survivors(pids, waitMs);
  reap(left);
  const leaked = await leakedSegments(before);
  return { leaked, left };
}
