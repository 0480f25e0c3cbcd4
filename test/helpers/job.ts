/**
 * Running rank scripts under the real launcher from a test, and the checks
 * every multi-rank suite shares.
 */
import { execFile, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const cli = join(root, 'dist', 'cli.js');
export const fixtures = join(root, 'test', 'fixtures');

/** World sizes every multi-rank suite runs at. */
export const worldSizes = [1, 2, 3, 4];

export interface JobResult {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `nodempi -n np [launcherArgs] fixture args` and collects its output.
 * A job that outlives `timeoutSec` is ended by the launcher itself (124).
 */
export function runJob(
  np: number,
  fixture: string,
  args: string[] = [],
  opts: { launcherArgs?: string[]; env?: Record<string, string>; timeoutSec?: number } = {},
): Promise<JobResult> {
  const script = fixture.startsWith('/') ? fixture : join(fixtures, fixture);
  const argv = [cli, '-n', String(np), '--timeout', String(opts.timeoutSec ?? 120), ...(opts.launcherArgs ?? []), script, ...args];
  return run(process.execPath, argv, opts.env);
}

/** Runs any command with the given extra environment and collects its output. */
export function run(cmd: string, argv: string[], env?: Record<string, string>): Promise<JobResult> {
  return new Promise((resolve) => {
    const child = spawn(cmd, argv, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '', stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr }));
  });
}

/** A readable summary of a failed job for assertion messages. */
export function explain(r: JobResult): string {
  return `status ${r.status} signal ${r.signal}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;
}

export { execFile };
