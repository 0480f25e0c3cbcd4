/**
 * Starting a job: one shared-memory segment, N ranks (processes, or worker
 * threads of this process), their output relayed, and teardown however the
 * job ends. Used by the `nodempi` command and by programs and tests.
 *
 * Life of a process-mode job:
 *  1. segmentCreate() makes the segment: an anonymous memfd (mode 0600),
 *     which no other process can open by name and which the kernel frees
 *     when the last process holding it ends, even if every one of them is
 *     SIGKILLed; the launcher keeps a close-on-exec duplicate of it.
 *  2. Each rank is spawned in its own session (so its process group can be
 *     signalled as a whole) with the descriptor as fd 3, and this process's
 *     pid as NODEMPI_LAUNCHER_PID.
 *  3. If the launcher dies without saying goodbye (SIGKILL, a crash), its
 *     ranks die with it, twice over:
 *     - a rank that is its child asks the kernel, as it loads nodempi, for
 *       SIGKILL when its parent ends (PR_SET_PDEATHSIG; lib/runtime.ts);
 *       one that finds the launcher already gone ends itself;
 *     - a tiny `sh` watchdog, in a session of its own, is told every rank's
 *       process group; when the launcher's pipe to it closes, it ends those
 *       groups: SIGTERM (and SIGCONT), then SIGKILL a second later. That
 *       covers ranks under `-- CMD` that are not its children, ranks that
 *       never load nodempi, and what ranks start.
 *     (NODEMPI_WATCHDOG=0 turns the watchdog off, for tests.)
 *  4. Each rank's end is written to the segment header (segmentExited), so
 *     ranks waiting on it stop with ERR_PROC_FAILED. The first rank to fail
 *     is named on one line; the others get a grace period to end on their
 *     own, then SIGTERM, then SIGKILL. A rank that called abort() is found
 *     in the header and named instead of the ranks its abort() ended. A
 *     timeout ends the job the same way, naming any rank that is stopped.
 *     Every SIGTERM comes with a SIGCONT, so a stopped rank acts on it.
 *  5. When the last rank has ended, whatever is left in the ranks' process
 *     groups gets SIGTERM, and the relay stops waiting for their output
 *     after DRAIN_MS.
 *
 * Thread mode: the ranks are worker threads of this process, each with its
 * own duplicate of the descriptor; no watchdog (they die with the process).
 * A worker is terminated only after it has had time to leave any blocking
 * collective (THREAD_UNWIND_MS).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, fstatSync, readFileSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { resolve as resolvePath } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { describe, fail } from './errors.js';
import { native } from './native.js';
import { refuseBadSettings } from './settings.js';

export interface LaunchOptions {
  /** Number of ranks. */
  np: number;
  /** The script each rank runs with `node` (or in a worker thread). */
  script?: string | URL;
  /** Arguments after the script (or after `command`). */
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
  /** The first rank that failed (or called abort), or -1. */
  failedRank: number;
  /** True when `timeout` ended the job. */
  timedOut: boolean;
  /** The status a launcher command should exit with. */
  status: number;
}

interface Rank {
  kill(signal: NodeJS.Signals): void;
  readonly pid: number | undefined;
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
}

/** Runs a job and resolves when every rank has ended. */
export function launch(options: LaunchOptions): Promise<LaunchResult> {
  try {
    return new Job(checkOptions(options)).run();
  } catch (err) {
    return Promise.reject(err);
  }
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
  if (o.env !== undefined && (typeof o.env !== 'object' || o.env === null)) {
    fail('ERR_ARG', 'launch', `env must be an object of strings, got ${describe(o.env)}`);
  }
  // Refused here once, not by every rank at its init.
  const env = { ...process.env, ...o.env };
  refuseBadSettings('launch', env, native.settingsErrors(env));
  if (o.timeout !== undefined && !(typeof o.timeout === 'number' && o.timeout > 0 && o.timeout <= 2147483)) {
    fail('ERR_ARG', 'launch', `timeout must be a positive number of seconds, got ${describe(o.timeout)}`);
  }
  if (o.graceMs !== undefined && !(typeof o.graceMs === 'number' && o.graceMs >= 0 && o.graceMs <= 2147483647)) {
    fail('ERR_ARG', 'launch', `graceMs must be a non-negative number, got ${describe(o.graceMs)}`);
  }
  return o;
}

function signalNumber(sig: NodeJS.Signals): number {
  return (osConstants.signals as Record<string, number>)[sig] ?? 0;
}

/** How long after SIGTERM a rank that has not ended gets SIGKILL. */
const KILL_AFTER_MS = 2000;
/**
 * Thread mode: how long after the job is marked failed the workers are
 * terminated. A worker blocked in a collective leaves it within one
 * liveness slice (~20 ms) once the job is marked failed, or a few hundred
 * ms on a loaded machine; terminating it while it is still inside the addon
 * makes the addon throw into a dying environment, which aborts the whole
 * process ("terminate called after throwing an instance of 'Napi::Error'")
 * unless the addon is built with NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS.
 * Workers that end on their own meanwhile are not waited for.
 */
const THREAD_UNWIND_MS = 250;
/** How long the relay waits for output after the last rank has ended. */
const DRAIN_MS = 2000;
/** A partial line longer than this is relayed without waiting for its newline. */
const MAX_PARTIAL = 64 * 1024;


// The watchdog: reads "+pgid" / "-pgid" lines, "done" when the launcher has
// finished. End of input without "done" means the launcher died: end every
// process group it still lists. Ignores SIGINT/SIGHUP (its own session has
// no terminal anyway).
const WATCHDOG = `trap '' INT HUP PIPE
pids=
while IFS= read -r l; do
  case $l in
    done) exit 0 ;;
    +*) pids="$pids \${l#+}" ;;
    -*) n=; for p in $pids; do [ "$p" = "\${l#-}" ] || n="$n $p"; done; pids=$n ;;
  esac
done
[ -n "$pids" ] || exit 0
for p in $pids; do kill -TERM -$p 2>/dev/null; kill -CONT -$p 2>/dev/null; done
sleep 1
for p in $pids; do kill -KILL -$p 2>/dev/null; done
exit 0`;

/**
 * The ranks' GLIBC_TUNABLES: the launcher's, with glibc.malloc.hugetlb=1
 * added unless it names that tunable already. glibc then asks for
 * transparent huge pages for the large blocks it maps, where V8 keeps
 * large ArrayBuffers (numpy asks for them for its arrays): copying a
 * 16 MiB message in and out of them takes about half the time (bench/README.md,
 * "Measurements behind the code"). glibc reads it only at process start,
 * so the launcher sets it; README "Tuning" says how to turn it off.
 */
export function withHugePages(tunables: string | undefined): string {
  if (tunables === undefined || tunables === '') return 'glibc.malloc.hugetlb=1';
  return /(^|:)glibc\.malloc\.hugetlb=/.test(tunables) ? tunables : `${tunables}:glibc.malloc.hugetlb=1`;
}

class Job {
  readonly #o: LaunchOptions;
  readonly #np: number;
  readonly #log: (line: string) => void;
  #segment = -1;
  /** The launcher's own close-on-exec descriptor of the segment. */
  #fd = -1;
  #ino = -1;
  #dev = -1;
  /** The header layout is the one this file knows (see #abortedBy). */
  #ranks: Rank[] = [];
  #exitCodes: number[];
  #signals: (NodeJS.Signals | null)[];
  #running: number;
  #failedRank = -1;
  /** The rank that called abort(), once the launcher has seen it. */
  #aborter = -1;
  /** The aborting rank, while its exit status is still to be reported. */
  #abortPending = -1;
  #timedOut = false;
  #ending = false;
  #timers: NodeJS.Timeout[] = [];
  #streams = new Set<Readable>();
  #drainTimer: NodeJS.Timeout | undefined;
  #groupsEnded = false;
  #watchdog: ChildProcess | undefined;
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
    const thread = this.#o.mode === 'thread';
    const seg = native.segmentCreate(this.#np);
    this.#segment = seg.handle;
    // Descriptors for the launcher and, in thread mode, one per worker; then
    // the original goes.
    const workerFds: number[] = [];
    try {
      this.#fd = native.segmentDupFd(this.#segment);
      if (thread) for (let r = 0; r < this.#np; r++) workerFds.push(native.segmentDupFd(this.#segment));
    } catch (err) {
      // Out of descriptors: give back what was taken.
      for (const fd of [this.#fd, ...workerFds]) if (fd >= 0) try { closeSync(fd); } catch { /* closed */ }
      native.segmentClose(this.#segment);
      throw err;
    }
    native.segmentCloseFd(this.#segment);
    try {
      const st = fstatSync(this.#fd);
      this.#ino = st.ino;
      this.#dev = st.dev;
    } catch { /* only used to recognise our descriptors and abort() */ }
    if (!thread) this.#startWatchdog();

    try {
      for (let r = 0; r < this.#np; r++) {
        const rank = thread ? this.#startThread(r, workerFds[r]!) : this.#startProcess(r, this.#fd);
        this.#ranks.push(rank);
        this.#relay(r, rank.stdout, process.stdout);
        this.#relay(r, rank.stderr, process.stderr);
      }
    } catch (err) {
      // A rank that could not start fails the job like one that crashed.
      const r0 = this.#ranks.length;
      this.#log(`nodempi: could not start rank ${r0}: ${err instanceof Error ? err.message : String(err)}`);
      for (let r = r0; r < this.#np; r++) {
        this.#exitCodes[r] = 127;
        this.#running--;
        if (thread) this.#closeWorkerFd(workerFds[r]!);
      }
      native.segmentExited(this.#segment, r0, 1 + 127, true);
      this.#fail(r0, false);
    }
    if (this.#o.timeout !== undefined) {
      this.#timers.push(setTimeout(() => this.#onTimeout(), this.#o.timeout * 1000));
    }
    this.#maybeFinish();
    return done;
  }

  #env(r: number, fd: number): Record<string, string> {
    const env = { ...(process.env as Record<string, string>), ...(this.#o.env ?? {}) };
    return {
      ...env,
      GLIBC_TUNABLES: withHugePages(env.GLIBC_TUNABLES),
      NODEMPI_RANK: String(r),
      NODEMPI_SIZE: String(this.#np),
      NODEMPI_FD: String(fd),
      // Ranks die with this process (lib/runtime.ts).
      NODEMPI_LAUNCHER_PID: String(process.pid),
    };
  }

  #startWatchdog(): void {
    if (process.env.NODEMPI_WATCHDOG === '0') return;
    try {
      const w = spawn('/bin/sh', ['-c', WATCHDOG], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
      w.on('error', () => { this.#watchdog = undefined; });
      w.stdin!.on('error', () => { /* the watchdog is gone; nothing to tell it */ });
      w.unref();
      (w.stdin as unknown as { unref?: () => void }).unref?.();
      this.#watchdog = w;
    } catch {
      this.#watchdog = undefined;
    }
  }

  #tellWatchdog(line: string): void {
    const w = this.#watchdog;
    if (w && w.stdin && !w.stdin.destroyed && w.stdin.writable) w.stdin.write(line + '\n');
  }

  #startProcess(r: number, fd: number): Rank {
    const [cmd, ...argv] = this.#o.command ?? [process.execPath, scriptPath(this.#o.script!)];
    argv.push(...(this.#o.args ?? []));
    const out = this.#o.tagOutput ? 'pipe' : 'inherit';
    const child: ChildProcess = spawn(cmd!, argv, {
      env: this.#env(r, 3),
      // fd 3 of every rank is the segment; its own session (and so process
      // group) lets the launcher end a rank together with anything it started.
      stdio: [r === 0 && this.#o.stdin ? 'inherit' : 'ignore', out, out, fd],
      detached: true,
    });
    const pid = child.pid;
    if (pid !== undefined) this.#tellWatchdog(`+${pid}`);
    child.on('error', (err) => {
      // Only a failed spawn ends up here (kill() errors are caught below).
      if (this.#exitCodes[r] !== -1) return;
      const said = !this.#ending;
      if (said) this.#log(`nodempi: rank ${r} could not run ${cmd}: ${err.message}; ending the job`);
      this.#onExit(r, 127, null, said);
    });
    child.on('exit', (code, signal) => {
      if (pid !== undefined) this.#tellWatchdog(`-${pid}`);
      this.#onExit(r, code ?? 0, signal);
    });
    return {
      pid,
      kill: (sig) => {
        if (pid === undefined) return;
        // The whole process group: the rank and whatever it started. A
        // stopped process acts on no signal but SIGKILL until continued.
        try {
          process.kill(-pid, sig);
          if (sig !== 'SIGKILL') process.kill(-pid, 'SIGCONT');
        } catch {
          try { child.kill(sig); } catch { /* already gone */ }
        }
      },
      stdout: child.stdout,
      stderr: child.stderr,
    };
  }

  #startThread(r: number, fd: number): Rank {
    let worker: Worker;
    try {
      worker = new Worker(resolvePath(scriptPath(this.#o.script!)), {
        argv: this.#o.args ?? [],
        env: this.#env(r, fd),
        stdout: !!this.#o.tagOutput,
        stderr: !!this.#o.tagOutput,
      });
    } catch (err) {
      this.#closeWorkerFd(fd);
      throw err;
    }
    let exited = false;
    worker.on('error', (err) => {
      // A worker's uncaught exception is not printed by Node itself; print it
      // where a rank process would have, as that rank's stderr.
      if (this.#ending) return;
      const text = err instanceof Error ? err.stack ?? String(err) : `Uncaught ${String(err)}`;
      const lines = text.split('\n');
      process.stderr.write(lines.map((l) => (this.#o.tagOutput ? `[${r}] ` : '') + l + '\n').join(''));
    });
    worker.on('exit', (code) => {
      exited = true;
      // A worker that never attached still holds its descriptor.
      this.#closeWorkerFd(fd);
      this.#onExit(r, code, null);
    });
    return {
      pid: undefined,
      kill: () => {
        if (!exited) void worker.terminate();
      },
      stdout: this.#o.tagOutput ? worker.stdout : null,
      stderr: this.#o.tagOutput ? worker.stderr : null,
    };
  }

  /** Closes a worker's descriptor if it is still ours (the worker closes it when it attaches). */
  #closeWorkerFd(fd: number): void {
    try {
      const st = fstatSync(fd);
      if (st.ino === this.#ino && st.dev === this.#dev && fd !== this.#fd) closeSync(fd);
    } catch { /* already closed */ }
  }

  // Byte for byte (no decoding, so binary output and split multi-byte
  // characters pass unchanged): every line gets the tag; a partial line waits
  // for its end, or for the stream's end, or until it grows past MAX_PARTIAL.
  #relay(r: number, from: Readable | null, to: Writable): void {
    if (!from) return;
    const tag = Buffer.from(`[${r}] `);
    const newline = Buffer.from('\n');
    let partial: Buffer[] = [];
    let partialBytes = 0;
    this.#streams.add(from);
    from.on('data', (chunk: Buffer) => {
      const out: Buffer[] = [];
      let at = 0;
      for (let nl = chunk.indexOf(10, at); nl >= 0; at = nl + 1, nl = chunk.indexOf(10, at)) {
        out.push(tag, ...partial, chunk.subarray(at, nl + 1));
        partial = [];
        partialBytes = 0;
      }
      if (at < chunk.length) {
        partial.push(chunk.subarray(at));
        partialBytes += chunk.length - at;
        if (partialBytes > MAX_PARTIAL) {
          out.push(tag, ...partial, newline);
          partial = [];
          partialBytes = 0;
        }
      }
      if (out.length) to.write(Buffer.concat(out));
    });
    from.on('error', () => { /* the rank's end of the pipe went away */ });
    from.on('close', () => {
      if (partialBytes) to.write(Buffer.concat([tag, ...partial, newline]));
      partial = [];
      partialBytes = 0;
      this.#streams.delete(from);
      this.#maybeFinish();
    });
  }

  /** The rank that called abort(), read from the segment header, or -1. */
  #abortedBy(): number {
    if (this.#segment < 0) return -1;
    try {
      const [failed, rank] = native.segmentState(this.#segment);
      return failed && rank >= 0 && rank < this.#np ? rank : -1;
    } catch {
      return -1;  // the segment is already closed
    }
  }

  #describeEnd(r: number): string {
    const sig = this.#signals[r];
    return sig ? `was killed by signal ${sig}` : `exited with code ${this.#exitCodes[r]}`;
  }

  #onExit(r: number, code: number, signal: NodeJS.Signals | null, reported = false): void {
    if (this.#exitCodes[r] !== -1) return;
    this.#exitCodes[r] = signal ? 128 + signalNumber(signal) : code;
    this.#signals[r] = signal;
    this.#running--;
    const failed = signal !== null || code !== 0;
    const first = !this.#ending;
    if (first) {
      // Before this rank's end is recorded: did some rank call abort()? Its
      // SIGTERMs (or, in thread mode, the errors it caused) can arrive
      // before its own exit, and in thread mode nothing but the launcher
      // ends the other ranks, even after abort(0).
      const a = this.#abortedBy();
      if (a >= 0) {
        this.#aborter = a;
        this.#fail(a, false);
        if (this.#exitCodes[a] !== -1) this.#reportAbort(a);
        else this.#abortPending = a;
      } else if (failed) {
        if (!reported) this.#log(`nodempi: rank ${r} ${this.#describeEnd(r)}; ending the job`);
        this.#fail(r, true);
      }
    } else if (r === this.#abortPending) {
      this.#reportAbort(r);
    }
    // Ranks waiting on this one stop with ERR_PROC_FAILED; the first failure
    // also marks the whole job failed, so every waiting rank stops.
    native.segmentExited(this.#segment, r, signal ? -signalNumber(signal) : 1 + code, failed && first);
    this.#maybeFinish();
  }

  #reportAbort(a: number): void {
    this.#abortPending = -1;
    this.#log(`nodempi: rank ${a} called abort and ${this.#describeEnd(a)}; ending the job`);
  }

  // Lets the other ranks end on their own (they stop waiting for the failed
  // one at once), then terminates them, then kills what is left. After an
  // abort (grace false) the others are ended at once, but the aborting rank
  // itself, which is on its way out with its own code, gets the full grace.
  #fail(r: number, grace: boolean): void {
    if (this.#ending) return;
    this.#failedRank = r;
    this.#windDown(grace ? -1 : r);
  }

  /**
   * Ends the job: every rank but `spare` gets SIGTERM after the grace period
   * (none when `spare` is given, an aborting rank on its way out), then
   * `spare` too, then SIGKILL for what is left.
   */
  #windDown(spare: number): void {
    this.#ending = true;
    const fullGrace = this.#o.graceMs ?? 1000;
    let graceMs = spare < 0 ? fullGrace : 0;
    if (this.#o.mode === 'thread') graceMs = Math.max(graceMs, THREAD_UNWIND_MS);
    this.#timers.push(setTimeout(() => this.#killAll('SIGTERM', spare), graceMs));
    if (spare >= 0) this.#timers.push(setTimeout(() => this.#killAll('SIGTERM'), Math.max(graceMs, fullGrace)));
    this.#timers.push(setTimeout(() => this.#killAll('SIGKILL'), Math.max(graceMs, fullGrace) + KILL_AFTER_MS));
  }

  #onTimeout(): void {
    // A job already being ended for a failure keeps that failure's status.
    if (this.#running === 0 || this.#ending) return;
    // A stopped rank (SIGSTOP, a debugger) is the likely cause: name it.
    const stopped = this.#stoppedRanks();
    const why = stopped.length === 0 ? ''
      : stopped.length === 1 ? ` (rank ${stopped[0]} is stopped)` : ` (ranks ${stopped.join(', ')} are stopped)`;
    this.#log(`nodempi: the job ran past its timeout of ${this.#o.timeout} s${why}; ending it`);
    this.#timedOut = true;
    // Ranks waiting in MPI stop with ERR_PROC_FAILED and, as after a
    // failure, get the grace period to end on their own.
    native.segmentFail(this.#segment);
    this.#windDown(-1);
  }

  /** Ranks (process mode) whose process is stopped by a signal or a tracer. */
  #stoppedRanks(): number[] {
    const stopped: number[] = [];
    this.#ranks.forEach((rank, r) => {
      if (this.#exitCodes[r] !== -1 || rank.pid === undefined) return;
      try {
        const stat = readFileSync(`/proc/${rank.pid}/stat`, 'utf8');
        const state = stat[stat.lastIndexOf(')') + 2];
        if (state === 'T' || state === 't') stopped.push(r);
      } catch { /* gone, or no /proc */ }
    });
    return stopped;
  }

  /** Marks nothing; sends `signal` now (after the unwind pause in thread mode), SIGKILL later. */
  #endAll(signal: NodeJS.Signals): void {
    if (this.#o.mode === 'thread') this.#timers.push(setTimeout(() => this.#killAll(signal), THREAD_UNWIND_MS));
    else this.#killAll(signal);
    this.#timers.push(setTimeout(() => this.#killAll('SIGKILL'), KILL_AFTER_MS));
  }

  /**
   * Ends every rank with `signal` (the CLI calls this on SIGINT, SIGTERM,
   * SIGHUP, naming what it `received` on one line); a second call kills at
   * once.
   */
  terminate(signal: NodeJS.Signals, received?: NodeJS.Signals): void {
    if (this.#finished) return;
    const again = this.#ending;
    this.#ending = true;
    native.segmentFail(this.#segment);
    if (again) {
      this.#killAll('SIGKILL');
      return;
    }
    if (received) this.#log(`nodempi: received ${received}; ending the job`);
    this.#endAll(signal);
  }

  /** Sends `signal` to every rank still running, but `spare`. */
  #killAll(signal: NodeJS.Signals, spare = -1): void {
    this.#ranks.forEach((rank, r) => {
      if (this.#exitCodes[r] === -1 && r !== spare) rank.kill(signal);
    });
  }

  #maybeFinish(): void {
    if (this.#finished || this.#running > 0) return;
    if (!this.#groupsEnded) {
      // Every rank has ended; what they started in their own process groups
      // (and did not move elsewhere) ends with the job.
      this.#groupsEnded = true;
      for (const rank of this.#ranks) {
        if (rank.pid !== undefined) try { process.kill(-rank.pid, 'SIGTERM'); } catch { /* group already empty */ }
      }
    }
    if (this.#streams.size > 0) {
      // Every rank has ended; a process one of them left behind may still
      // hold the pipe. Take what is there, then stop waiting.
      this.#drainTimer ??= setTimeout(() => {
        for (const s of this.#streams) s.destroy();
      }, DRAIN_MS);
      return;
    }
    this.#finished = true;
    for (const t of this.#timers) clearTimeout(t);
    if (this.#drainTimer) clearTimeout(this.#drainTimer);
    if (this.#watchdog) {
      this.#tellWatchdog('done');
      this.#watchdog.stdin?.end();
      this.#watchdog = undefined;
    }
    native.segmentClose(this.#segment);
    if (this.#fd >= 0) {
      try { closeSync(this.#fd); } catch { /* already closed */ }
      this.#fd = -1;
    }
    let status = 0;
    if (this.#timedOut) status = 124;
    else if (this.#failedRank >= 0) {
      const c = this.#exitCodes[this.#failedRank]!;
      // An aborting rank's code is the job's, as MPI_Abort asks; any other
      // failure is non-zero whatever the rank said.
      status = this.#failedRank === this.#aborter ? Math.max(c, 0) : c > 0 ? c : 1;
    }
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

/** @internal For the CLI: run a job and end its ranks on SIGINT/SIGTERM/SIGHUP. */
export function launchWithSignals(options: LaunchOptions): Promise<LaunchResult> {
  let job: Job;
  try {
    job = new Job(checkOptions(options));
  } catch (err) {
    return Promise.reject(err);
  }
  const onSignal = (sig: NodeJS.Signals) => {
    job.terminate(sig === 'SIGINT' ? 'SIGTERM' : sig, sig);
    process.exitCode = 128 + signalNumber(sig);
  };
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  for (const s of signals) process.on(s, onSignal);
  let running: Promise<LaunchResult>;
  try {
    running = job.run();
  } catch (err) {
    running = Promise.reject(err);
  }
  return running.finally(() => {
    for (const s of signals) process.off(s, onSignal);
  });
}
