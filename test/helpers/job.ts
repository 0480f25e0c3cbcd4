/**
 * Running the real launcher (or a rank script without it) from a test, and
 * the checks every multi-rank test shares. Every test that starts a process
 * goes through here, so a child always has a hard time limit, never
 * inherits a job identity, and a failure always shows its output.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const cli = join(root, 'dist', 'cli.js');
export const fixtures = join(root, 'test', 'fixtures');

/** World sizes every multi-rank suite runs at. */
export const worldSizes = [1, 2, 3, 4];

/**
 * `a` for even `i`, `b` for odd: the world size of entry `i` of a suite
 * that runs each entry at one of two sizes, in turn, so that every kind of
 * entry meets both sizes in half the jobs.
 */
export function alternate(i: number, a: number, b: number): number {
  return i % 2 === 0 ? a : b;
}

/**
 * How a job is started: `nodempi`, the package's launcher (the shm
 * backend), or a system MPI's launcher (the mpi backend over that library).
 */
export type Launcher = 'nodempi' | 'openmpi' | 'mpich' | 'openmpi-sm';
/** The system MPIs the mpi backend's suites run under (CI installs both). */
export const systemMpis = ['openmpi', 'mpich'] as const;
export type SystemMpi = (typeof systemMpis)[number];

/**
 * The command that starts `np` ranks of `node script args` under a system
 * MPI, with the launcher's own time limit. The ranks talk TCP (loopback
 * only) as between machines: Open MPI's ob1 over its tcp btl, MPICH's UCX
 * with TCP alone; 'openmpi-sm' leaves Open MPI its defaults.
 */
export function mpiCommand(mpi: Exclude<Launcher, 'nodempi'>, np: number, timeoutSec: number, argv: string[]):
  { cmd: string; argv: string[]; env: Record<string, string> } {
  if (mpi === 'openmpi-sm') {
    // Open MPI's own choice within one machine, as `mpirun -n 4 node
    // app.js` on one node runs: ob1 over its shared memory (vader).
    return {
      cmd: 'mpirun.openmpi',
      argv: ['--allow-run-as-root', '--oversubscribe', '--timeout', String(timeoutSec), '-n', String(np), ...argv],
      env: {},
    };
  }
  if (mpi === 'openmpi') {
    return {
      cmd: 'mpirun.openmpi',
      argv: ['--allow-run-as-root', '--oversubscribe', '--mca', 'pml', 'ob1', '--mca', 'btl', 'self,tcp',
        '--mca', 'btl_tcp_if_include', 'lo', '--timeout', String(timeoutSec), '-n', String(np), ...argv],
      env: {},
    };
  }
  // MPICH 4.0 over UCX 1.13 with TCP alone hung in MPI_Finalize now and
  // then, C programs too; the mpi backend's finalize avoids it
  // (native/core/mpi/mpi.cc).
  return {
    cmd: 'mpiexec.mpich',
    argv: ['-n', String(np), '-genv', 'MPIR_CVAR_NOLOCAL', '1', '-genv', 'UCX_TLS', 'tcp,self', ...argv],
    env: { MPIEXEC_TIMEOUT: String(timeoutSec) },
  };
}

export interface JobResult {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Milliseconds from spawn to the child's exit. */
  ms: number;
  /** Date.now() at the child's exit. */
  endedAt: number;
  /** True when the hard limit ended it (a hang). */
  hung: boolean;
}

export interface StartOptions {
  env?: Record<string, string>;
  /** Hard limit in ms (default 30 s; 0: none): past it the child is SIGKILLed and `hung` is set. */
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

export interface Started {
  child: ChildProcess;
  done: Promise<JobResult>;
  /** What the child has written to stdout so far. */
  stdout(): string;
}

/**
 * Spawns `cmd argv` with its output collected. Resolves once the child has
 * exited and its pipes have closed, or `drainMs` after the exit if
 * something it left behind still holds them (that case is then visible
 * through the pid checks, not as a hanging test).
 */
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
  const done = new Promise<JobResult>((resolve) => {
    let hung = false, ms = -1, endedAt = -1, finished = false;
    let status: number | null = null, signal: NodeJS.Signals | null = null;
    const limitMs = opts.limitMs ?? 30_000;
    const limit = limitMs > 0 ? setTimeout(() => {
      hung = true;
      // A detached child leads its own process group: end all of it.
      if (opts.detached && child.pid) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          child.kill('SIGKILL');
        }
      } else {
        child.kill('SIGKILL');
      }
    }, limitMs) : undefined;
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

/**
 * Runs any command and collects its output. Without `limitMs` there is no
 * limit of its own: the test's timeout ends a slow command (a native
 * build may take most of a 15-minute hook).
 */
export function run(cmd: string, argv: string[], opts: StartOptions = {}): Promise<JobResult> {
  return start(cmd, argv, { limitMs: 0, ...opts }).done;
}

/** Runs the launcher: `nodempi args...`. */
export function nodempi(args: string[], opts: StartOptions = {}): Promise<JobResult> {
  return start(process.execPath, [cli, ...args], opts).done;
}

export interface JobOptions extends StartOptions {
  /** Launcher options before the script, e.g. ['--oversubscribe'] (nodempi only). */
  launcherArgs?: string[];
  /** The launcher's own timeout (default 120 s): a hang shows as exit status 124 with the output so far. */
  timeoutSec?: number;
  /** Which launcher starts the ranks (default nodempi). */
  launcher?: Launcher;
  /** The ranks' node and its flags, e.g. [process.execPath, '--expose-gc'] (default: this node, no flags). */
  node?: string[];
}

/**
 * Runs `fixture args` (relative to test/fixtures) on `np` ranks: `nodempi
 * -n np --timeout T [launcherArgs] fixture args`, or under a system MPI's
 * launcher (mpiCommand), in a process group of its own so that nothing it
 * started outlives the hard limit.
 */
export function runJob(np: number, fixture: string, args: string[] = [], opts: JobOptions = {}): Promise<JobResult> {
  const script = fixture.startsWith('/') ? fixture : join(fixtures, fixture);
  const timeoutSec = opts.timeoutSec ?? 120;
  const launcher = opts.launcher ?? 'nodempi';
  if (launcher !== 'nodempi') {
    const m = mpiCommand(launcher, np, timeoutSec, [...(opts.node ?? [process.execPath]), script, ...args]);
    return start(m.cmd, m.argv, { limitMs: (timeoutSec + 60) * 1000, detached: true, ...opts, env: { ...m.env, ...opts.env } }).done;
  }
  const argv = ['-n', String(np), '--timeout', String(timeoutSec), ...(opts.launcherArgs ?? []),
    ...(opts.node ? ['--', ...opts.node] : []), script, ...args];
  return nodempi(argv, { limitMs: (timeoutSec + 60) * 1000, ...opts });
}

/** Runs a rank script with plain node: a world of one, no launcher (hard limit 120 s unless given). */
export function runSingleton(fixture: string, args: string[] = [], opts: StartOptions = {}): Promise<JobResult> {
  const script = fixture.startsWith('/') ? fixture : join(fixtures, fixture);
  return start(process.execPath, [script, ...args], { limitMs: 120_000, ...opts }).done;
}

/** A readable summary of a job for assertion messages. */
export function explain(r: JobResult): string {
  return `status ${r.status} signal ${r.signal} after ${r.ms} ms${r.hung ? ' (HUNG)' : ''}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;
}

export interface Passed {
  /** The name the rank script's summary line starts with. */
  name: string;
  /** Ranks that must each print it. */
  np: number;
  /** What was counted: 'checks' (default) or e.g. 'cases'. */
  unit?: string;
  /** The exact count each rank must report (default: any). */
  count?: number;
  /** Extra text for the failure message (e.g. how to replay). */
  note?: string;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Exit status 0, and every rank's summary line `<name>: rank <r> passed
 * <n> <unit>` at the start of a line (so no rank quit early). One argument
 * object, so a name and a rank count cannot be passed the wrong way round.
 */
export function expectPassed(r: JobResult, want: Passed): void {
  const why = `${want.note ? `${want.note}\n` : ''}${explain(r)}`;
  expect(r.status, why).toBe(0);
  const count = want.count === undefined ? '\\d+' : String(want.count);
  for (let rank = 0; rank < want.np; rank++) {
    const line = new RegExp(`^${escape(want.name)}: rank ${rank} passed ${count} ${escape(want.unit ?? 'checks')}\\b`, 'm');
    expect(r.stdout, `rank ${rank} printed no summary\n${why}`).toMatch(line);
  }
}
