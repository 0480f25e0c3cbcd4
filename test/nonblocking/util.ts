/**
 * Shared by the nonblocking suites: the rank scripts live in
 * test/fixtures/nonblocking, and every job gets a launcher timeout well
 * under vitest's, so a hang shows as exit status 124 with the output so far.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { expect } from 'vitest';
import { explain, fixtures, runJob, type JobResult } from '../helpers/job.js';

export { explain, worldSizes } from '../helpers/job.js';

export const dir = join(fixtures, 'nonblocking');

/** Runs test/fixtures/nonblocking/<name> under the launcher (timeout 60 s unless given). */
export function job(np: number, name: string, args: string[] = [], opts: { env?: Record<string, string>; timeoutSec?: number } = {}): Promise<JobResult> {
  return runJob(np, join(dir, name), args, { timeoutSec: 60, ...opts });
}

/** Asserts a job ended with status 0 and every rank printed its `done` line. */
export function expectPassed(r: JobResult, np: number, name: string): void {
  expect(r.status, explain(r)).toBe(0);
  for (let rank = 0; rank < np; rank++) {
    expect(r.stdout, explain(r)).toMatch(new RegExp(`${name}: rank ${rank} passed \\d+ checks`));
  }
}

/** Runs `node <fixture> args` as a singleton (no launcher), killed after timeoutMs. */
export function singleton(name: string, args: string[], timeoutMs: number): Promise<JobResult & { killed: boolean }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(dir, name), ...args], { timeout: timeoutMs, killSignal: 'SIGKILL' }, (err, stdout, stderr) => {
      const e = err as (NodeJS.ErrnoException & { code?: number | string; killed?: boolean; signal?: NodeJS.Signals }) | null;
      resolve({
        status: e ? (typeof e.code === 'number' ? e.code : null) : 0,
        signal: e?.signal ?? null,
        stdout,
        stderr,
        killed: Boolean(e?.killed),
      });
    });
  });
}
