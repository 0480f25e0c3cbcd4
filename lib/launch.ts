/**
 * Starting a job: one shared-memory segment, N ranks (processes, or worker
 * threads of this process), their output relayed, and teardown however the
 * job ends. Used by the `nodempi` command and by programs and tests.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { constants as osConstants } from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { describe, fail } from './errors.js';
import { native } from './native.js';

export interface LaunchOptions {
  /** Number of ranks. */
  np: number;
  /** The script each rank runs with `node` (or in a worker thread). */
  script?: string | URL;
  /** Arguments after the script. */
  args?: string[];
  /** Instead of `node script`, run this command line in every rank (process mode). */
  command?: string[];
  /** Extra environment variables for every rank. */
  env?: Record<string, string>;
  /** 'process' (default): one Node process per rank; 'thread': worker threads of this process. */
  mode?: 'process' | 'thread';
  /** Seconds before the whole job is ended (exit code 124). */
  timeout?: number;
  /** Prefix every output line with `[rank] `. */
  tagOutput?: boolean;
  /** Milliseconds the other ranks get to end on their own after one fails (default 1000). */
  graceMs?: number;
  /** Where the launcher's own messages go (default process.stderr). */
  log?: (line: string) => void;
  /** Give rank 0 this process's stdin (the CLI does). */
  stdin?: boolean;
}

export interface LaunchResult {
  /** Per rank: the exit code, or 128 + signal number for a rank a signal ended. */
  exitCodes: number[];
  /** Per rank: the signal that ended it, or null. */
  signals: (NodeJS.Signals | null)[];
  /** The first rank that failed, or -1. */
  failedRank: number;
  /** True when `timeout` ended the job. */
  timedOut: boolean;
  /** The status a launcher command should exit with. */
  status: number;
}

interface Rank {
  kill(signal: NodeJS.Signals): void;
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
}

/** Runs a job and resolves when every rank has ended. */
export function launch(options: LaunchOptions): Promise<LaunchResult> {
  return new Job(checkOptions(options)).run();
}

function checkOptions(o: LaunchOptions): LaunchOptions {
  if (typeof o !== 'object' || o === null) fail('ERR_ARG', 'launch', `options must be an object, got ${describe(o)}`);
  if (!Number.isInteger(o.np) || o.np < 1 || o.np > 256) fail('ERR_ARG', 'launch', `np must be an integer from 1 to 256, got ${describe(o.np)}`);
  const mode = o.mode ?? 'process';
  if (mode !== 'process' && mode !== 'thread') fail('ERR_ARG', 'launch', `mode must be 'process' or 'thread', got ${describe(o.mode)}`);
  if (o.command !== undefined) {
    if (mode === 'thread') fail('ERR_ARG', 'launch', 'command cannot run in thread mode; give a script');
    if (!Array.isArray(o.command) || o.command.length === 0 || !o.command.every((a) => typeof a === 'string')) {
      fail('ERR_ARG', 'launch', `command must be a non-empty array of strings, got ${describe(o.command)}`);
    }
  } else if (typeof o.script !== 'string' && !(o.script instanceof URL)) {
    fail('ERR_ARG', 'launch', `script must be a path or URL, got ${describe(o.script)}`);
  }
  if (o.args !== undefined && (!Array.isArray(o.args) || !o.args.every((a) => typeof a === 'string'))) {
    fail('ERR_ARG', 'launch', `args must be an array of strings, got ${describe(o.args)}`);
  }
  if (o.timeout !== undefined && !(typeof o.timeout === 'number' && o.timeout > 0)) {
    fail('ERR_ARG', 'launch', `timeout must be a positive number of seconds, got ${describe(o.timeout)}`);
  }
  return o;
}

function signalNumber(sig: NodeJS.Signals): number {
  return (osConstants.signals as Record<string, number>)[sig] ?? 0;
}

class Job {
  readonly #o: LaunchOptions;
  readonly #np: number;
  readonly #log: (line: string) => void;
  #segment = -1;
  #ranks: Rank[] = [];
  #exitCodes: number[];
  #signals: (NodeJS.Signals | null)[];
  #running: number;
  #failedRank = -1;
  #timedOut = false;
  #ending = false;
  #timers: NodeJS.Timeout[] = [];
  #pendingStreams = 0;
  #resolve!: (r: LaunchResult) => void;
  #finished = false;

  constructor(o: LaunchOptions) {
    this.#o = o;
    this.#np = o.np;
    this.#log = o.log ?? ((line) => process.stderr.write(line + '\n'));
    this.#exitCodes = new Array(o.np).fill(-1);
    this.#signals = new Array(o.np).fill(null);
    this.#running = o.np;
  }

  run(): Promise<LaunchResult> {
    const done = new Promise<LaunchResult>((resolve) => (this.#resolve = resolve));
    const seg = native.segmentCreate(this.#np);
    this.#segment = seg.handle;
    try {
      for (let r = 0; r < this.#np; r++) {
        const rank = this.#o.mode === 'thread' ? this.#startThread(r) : this.#startProcess(r, seg.fd);
        this.#ranks.push(rank);
        this.#relay(r, rank.stdout, process.stdout);
        this.#relay(r, rank.stderr, process.stderr);
      }
    } catch (err) {
      // A rank that could not start fails the job like one that crashed.
      this.#log(`nodempi: could not start rank ${this.#ranks.length}: ${err instanceof Error ? err.message : String(err)}`);
      for (let r = this.#ranks.length; r < this.#np; r++) {
        this.#exitCodes[r] = 127;
        this.#running--;
      }
      this.#fail(this.#ranks.length, false);
    }
    // Every rank holds the segment now (an inherited descriptor or a
    // mapping), so the name can go: nothing is left in /dev/shm whatever
    // happens next.
    native.segmentUnlink(this.#segment);
    if (this.#o.timeout !== undefined) {
      const t = setTimeout(() => this.#onTimeout(), this.#o.timeout * 1000);
      this.#timers.push(t);
    }
    this.#maybeFinish();
    return done;
  }

  #env(r: number, fd: number): Record<string, string> {
    return {
      ...(process.env as Record<string, string>),
      ...(this.#o.env ?? {}),
      NODEMPI_RANK: String(r),
      NODEMPI_SIZE: String(this.#np),
      NODEMPI_FD: String(fd),
    };
  }

  #startProcess(r: number, fd: number): Rank {
    const [cmd, ...argv] = this.#o.command ?? [process.execPath, scriptPath(this.#o.script!), ...(this.#o.args ?? [])];
    if (this.#o.command) argv.push(...(this.#o.args ?? []));
    const out = this.#o.tagOutput ? 'pipe' : 'inherit';
    const child: ChildProcess = spawn(cmd, argv, {
      env: this.#env(r, 3),
      // fd 3 of every rank is the segment; its own process group lets the
      // launcher end a rank together with anything it started.
      stdio: [r === 0 && this.#o.stdin ? 'inherit' : 'ignore', out, out, fd],
      detached: true,
    });
    child.on('error', (err) => {
      this.#log(`nodempi: rank ${r} could not run ${cmd}: ${err.message}`);
      this.#onExit(r, 127, null);
    });
    child.on('exit', (code, signal) => this.#onExit(r, code ?? 0, signal));
    return {
      kill: (sig) => {
        if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
        try {
          process.kill(-child.pid, sig);
        } catch {
          try { child.kill(sig); } catch { /* already gone */ }
        }
      },
      stdout: child.stdout,
      stderr: child.stderr,
    };
  }

  #startThread(r: number): Rank {
    const worker = new Worker(scriptPath(this.#o.script!), {
      argv: this.#o.args ?? [],
      env: this.#env(r, native.segmentDupFd(this.#segment)),
      stdout: this.#o.tagOutput,
      stderr: this.#o.tagOutput,
    });
    let exited = false;
    worker.on('error', (err) => {
      this.#log(`nodempi: rank ${r} threw: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
    });
    worker.on('exit', (code) => {
      exited = true;
      this.#onExit(r, code, null);
    });
    return {
      kill: () => {
        if (!exited) void worker.terminate();
      },
      stdout: this.#o.tagOutput ? worker.stdout : null,
      stderr: this.#o.tagOutput ? worker.stderr : null,
    };
  }

  #relay(r: number, from: Readable | null, to: Writable): void {
    if (!from) return;
    const tag = `[${r}] `;
    let partial = '';
    this.#pendingStreams++;
    from.setEncoding('utf8');
    from.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop()!;
      if (lines.length) to.write(lines.map((l) => tag + l + '\n').join(''));
    });
    from.on('close', () => {
      if (partial) to.write(tag + partial + '\n');
      partial = '';
      this.#pendingStreams--;
      this.#maybeFinish();
    });
  }

  #onExit(r: number, code: number, signal: NodeJS.Signals | null): void {
    if (this.#exitCodes[r] !== -1) return;
    this.#exitCodes[r] = signal ? 128 + signalNumber(signal) : code;
    this.#signals[r] = signal;
    this.#running--;
    const failed = signal !== null || code !== 0;
    native.segmentExited(this.#segment, r, signal ? -signalNumber(signal) : 1 + code, failed && !this.#ending);
    if (failed && !this.#ending) {
      this.#log(signal
        ? `nodempi: rank ${r} was killed by signal ${signal}; ending the job`
        : `nodempi: rank ${r} exited with code ${code}; ending the job`);
      this.#fail(r, true);
    }
    this.#maybeFinish();
  }

  // Lets the other ranks end on their own (they stop waiting for the failed
  // one at once), then terminates them, then kills what is left.
  #fail(r: number, grace: boolean): void {
    if (this.#ending) return;
    this.#ending = true;
    this.#failedRank = r;
    const graceMs = grace ? this.#o.graceMs ?? 1000 : 0;
    this.#timers.push(setTimeout(() => this.#killAll('SIGTERM'), graceMs));
    this.#timers.push(setTimeout(() => this.#killAll('SIGKILL'), graceMs + 2000));
  }

  #onTimeout(): void {
    if (this.#running === 0) return;
    this.#log(`nodempi: the job ran past its timeout of ${this.#o.timeout} s; ending it`);
    this.#timedOut = true;
    this.#ending = true;
    native.segmentFail(this.#segment);
    this.#killAll('SIGTERM');
    this.#timers.push(setTimeout(() => this.#killAll('SIGKILL'), 2000));
  }

  /** Ends every rank (the CLI calls this on SIGINT/SIGTERM). */
  terminate(signal: NodeJS.Signals): void {
    this.#ending = true;
    if (this.#segment >= 0 && !this.#finished) native.segmentFail(this.#segment);
    this.#killAll(signal);
    this.#timers.push(setTimeout(() => this.#killAll('SIGKILL'), 2000));
  }

  #killAll(signal: NodeJS.Signals): void {
    this.#ranks.forEach((rank, r) => {
      if (this.#exitCodes[r] === -1) rank.kill(signal);
    });
  }

  #maybeFinish(): void {
    if (this.#finished || this.#running > 0 || this.#pendingStreams > 0) return;
    this.#finished = true;
    for (const t of this.#timers) clearTimeout(t);
    native.segmentClose(this.#segment);
    let status = 0;
    if (this.#timedOut) status = 124;
    else if (this.#failedRank >= 0) status = this.#exitCodes[this.#failedRank] || 1;
    this.#resolve({
      exitCodes: this.#exitCodes,
      signals: this.#signals,
      failedRank: this.#failedRank,
      timedOut: this.#timedOut,
      status,
    });
  }
}

function scriptPath(script: string | URL): string {
  return script instanceof URL ? fileURLToPath(script) : script;
}

/** @internal For the CLI: run a job and end its ranks on SIGINT/SIGTERM. */
export function launchWithSignals(options: LaunchOptions): Promise<LaunchResult> {
  const job = new Job(checkOptions(options));
  const onSignal = (sig: NodeJS.Signals) => {
    job.terminate(sig === 'SIGINT' ? 'SIGTERM' : sig);
    process.exitCode = 128 + signalNumber(sig);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return job.run().finally(() => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  });
}
