/**
 * What the launcher's process-level tests check beyond a job's output: that
 * a job leaves nothing behind (no /dev/shm segment, no rank process). Jobs
 * themselves run through test/helpers/job.ts.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { fixtures, nodempi, type JobResult, type StartOptions } from '../helpers/job.js';

export const processFixtures = join(fixtures, 'process');
export const rankScript = join(processFixtures, 'rank.mjs');

/** Runs the launcher on the rank fixture at np ranks. */
export function rankJob(np: number, args: string[], opts: StartOptions & { launcher?: string[] } = {}): Promise<JobResult> {
  return nodempi(['-n', String(np), ...(opts.launcher ?? []), rankScript, ...args], opts);
}

/**
 * How soon a job must end once its launcher has cause to end it (an abort,
 * --timeout, a finished job's background leftovers), counted from its
 * start. The ranks these tests leave waiting would run on for 37-60 s, so
 * this still tells "ended" from "ran on", with room for a machine whose
 * two cores other test files keep busy: there, starting three Node
 * processes alone can take seconds.
 */
export const ENDS_WITHIN_MS = 20_000;

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
