/**
 * Faults: however a job is broken, by one of its ranks or through its
 * launcher, in process mode and (where it applies) in worker-thread mode, at
 * 2 and 8 ranks, the job
 *  - ends within 15 s of the fault, with a non-zero status;
 *  - says why on exactly one launcher line, naming the rank and the cause
 *    (a launcher killed by SIGKILL cannot say anything);
 *  - leaves no rank process (the pids the fixture wrote) and nothing new in
 *    /dev/shm;
 *  - lets the ranks that were waiting in MPI catch ERR_PROC_FAILED, print
 *    it and end normally, where the fault leaves them the time to.
 * Every rank runs test/fixtures/process/fault.mjs, which repeats some work
 * (a collective, a nonblocking or persistent one, communicator management,
 * or JavaScript outside MPI) until the fault stops it.
 *
 * Also elsewhere: how soon the ranks waiting on a dead one notice, and a
 * clean exit0 while they wait (peer-death.test.ts); each way of completing
 * a request when a rank dies (nonblocking/death.test.ts); abort() and what
 * ranks start (leftovers.test.ts); a lone failing rank and --timeout
 * (exit.test.ts); a host process of launch() that dies (launch-api.test.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { type JobResult, cli, explain, start } from '../helpers/job.js';
import { leakedSegments, processFixtures, rankPids, reap, scratch, shmNames, sleep, survivors, until } from './util.js';

const faultScript = join(processFixtures, 'fault.mjs');
/** The bound, from the fault to the end of the job. */
const BOUND_MS = 15_000;
/** How long ranks may take to start and do one round of work (8 ranks on 2 busy cores). */
const READY_MS = 60_000;
/** --timeout for the stopped-rank case: past the 8 ranks' start-up on a busy machine. */
const TIMEOUT_S = 8;

type Work = 'barrier' | 'allreduce' | 'iallreduce' | 'persistent' | 'commops' | 'loop' | 'sleep';
const IN_MPI: Work[] = ['barrier', 'allreduce', 'iallreduce', 'persistent', 'commops'];

interface Case {
  name: string;
  work: Work;
  /** The victim rank at np ranks. */
  victim?: (np: number) => number;
  /** What the victim does to itself (fault.mjs --fault). */
  self?: string;
  /** A signal the test sends to the victim once every rank works. */
  toRank?: NodeJS.Signals;
  /** A signal the test sends to the launcher (or its process group) once every rank works. */
  toLauncher?: NodeJS.Signals;
  group?: boolean;
  /** Run each rank as `sh -c 'node fault.mjs ...; exit $?'`: not the launcher's child. */
  viaSh?: boolean;
  launcherArgs?: string[];
  env?: Record<string, string>;
  /** The expected exit status, or 'SIGKILL' for a launcher killed by it. */
  status: number | 'SIGKILL';
  /** The one launcher line (v: the victim); none when the launcher is killed. */
  line?: (v: number) => RegExp;
  /** Every rank but the victim prints `caught ERR_PROC_FAILED`. */
  caught: boolean;
}

const middle = (np: number) => (np === 2 ? 1 : 5);
const last = (np: number) => np - 1;
const first = () => 0;
const exited = (code: number) => (v: number) => new RegExp(`^nodempi: rank ${v} exited with code ${code}; ending the job$`);
const killedBy = (sig: string) => (v: number) => new RegExp(`^nodempi: rank ${v} was killed by signal ${sig}; ending the job$`);
const received = (sig: string) => () => new RegExp(`^nodempi: received ${sig}; ending the job$`);

const processCases: Case[] = [
  { name: 'a rank exits non-zero while the others wait in a barrier', work: 'barrier', victim: middle, self: 'exit:3',
    status: 3, line: exited(3), caught: true },
  { name: 'a rank exits non-zero while the others run JavaScript outside MPI', work: 'loop', victim: first, self: 'exit:3',
    status: 3, line: exited(3), caught: false },
  { name: 'SIGKILL to a rank mid-collective (1 MiB allreduce)', work: 'allreduce', victim: middle, toRank: 'SIGKILL',
    status: 137, line: killedBy('SIGKILL'), caught: true },
  { name: 'SIGKILL to a rank while nonblocking requests are pending', work: 'iallreduce', victim: last, toRank: 'SIGKILL',
    status: 137, line: killedBy('SIGKILL'), caught: true },
  { name: 'SIGKILL to a rank while persistent requests are pending', work: 'persistent', victim: middle, toRank: 'SIGKILL',
    status: 137, line: killedBy('SIGKILL'), caught: true },
  { name: 'SIGKILL to a rank during dup/split/free', work: 'commops', victim: first, toRank: 'SIGKILL',
    status: 137, line: killedBy('SIGKILL'), caught: true },
  { name: 'SIGTERM to a rank while the others sleep outside MPI', work: 'sleep', victim: last, toRank: 'SIGTERM',
    status: 143, line: killedBy('SIGTERM'), caught: false },
  { name: 'an uncaught exception in a rank', work: 'allreduce', victim: last, self: 'throw',
    status: 1, line: exited(1), caught: true },
  { name: 'an unhandled promise rejection in a rank with a request of its own pending', work: 'iallreduce', victim: middle,
    self: 'reject', status: 1, line: exited(1), caught: true },
  { name: `a stopped rank (SIGSTOP) with --timeout ${TIMEOUT_S}`, work: 'allreduce', victim: middle, toRank: 'SIGSTOP',
    launcherArgs: ['--timeout', String(TIMEOUT_S)], status: 124,
    line: (v) => new RegExp(`^nodempi: the job ran past its timeout of ${TIMEOUT_S} s \\(rank ${v} is stopped\\); ending it$`),
    caught: true },
  { name: 'SIGKILL to the launcher while the ranks run JavaScript outside MPI', work: 'loop', toLauncher: 'SIGKILL',
    status: 'SIGKILL', caught: false },
  { name: 'SIGKILL to the launcher without its watchdog, ranks sleeping outside MPI', work: 'sleep', toLauncher: 'SIGKILL',
    env: { NODEMPI_WATCHDOG: '0' }, status: 'SIGKILL', caught: false },
  { name: "SIGKILL to the launcher's whole process group, ranks outside MPI", work: 'loop', toLauncher: 'SIGKILL', group: true,
    status: 'SIGKILL', caught: false },
  { name: 'SIGKILL to the launcher of `-- sh -c` ranks (not its children) outside MPI: its watchdog ends them', work: 'loop',
    toLauncher: 'SIGKILL', viaSh: true, status: 'SIGKILL', caught: false },
  { name: 'SIGKILL to the launcher of `-- sh -c` ranks without its watchdog: ranks in a barrier notice', work: 'barrier',
    toLauncher: 'SIGKILL', viaSh: true, env: { NODEMPI_WATCHDOG: '0' }, status: 'SIGKILL', caught: true },
  { name: 'SIGTERM to the launcher while the ranks wait in a barrier', work: 'barrier', toLauncher: 'SIGTERM',
    status: 143, line: received('SIGTERM'), caught: false },
  { name: 'SIGINT to the launcher while the ranks run JavaScript outside MPI', work: 'loop', toLauncher: 'SIGINT',
    status: 130, line: received('SIGINT'), caught: false },
  { name: 'SIGHUP to the launcher while the ranks sleep outside MPI', work: 'sleep', toLauncher: 'SIGHUP',
    status: 129, line: received('SIGHUP'), caught: false },
];

const threadCases: Case[] = [
  { name: 'a rank calls process.exit(3) while the others wait in a barrier', work: 'barrier', victim: middle, self: 'exit:3',
    status: 3, line: exited(3), caught: true },
  { name: 'a rank calls process.exit(3) while the others run JavaScript outside MPI', work: 'loop', victim: first,
    self: 'exit:3', status: 3, line: exited(3), caught: false },
  { name: 'an uncaught exception in a rank with a persistent request of its own pending', work: 'persistent', victim: last,
    self: 'throw', status: 1, line: exited(1), caught: true },
  { name: 'an unhandled promise rejection in a rank with a nonblocking request of its own pending', work: 'iallreduce',
    victim: middle, self: 'reject', status: 1, line: exited(1), caught: true },
  { name: 'SIGTERM to the launcher while the ranks wait in a barrier', work: 'barrier', toLauncher: 'SIGTERM',
    status: 143, line: received('SIGTERM'), caught: false },
  { name: 'SIGINT to the launcher while the ranks run JavaScript outside MPI', work: 'loop', toLauncher: 'SIGINT',
    status: 130, line: received('SIGINT'), caught: false },
  { name: 'SIGKILL to the launcher while nonblocking requests are pending', work: 'iallreduce', toLauncher: 'SIGKILL',
    status: 'SIGKILL', caught: false },
];

/** The launcher's own lines. */
function launcherLines(stderr: string): string[] {
  return stderr.split('\n').filter((l) => l.startsWith('nodempi: '));
}

async function runCase(c: Case, np: number, mode: 'process' | 'thread'): Promise<void> {
  const s = scratch();
  const before = shmNames();
  const victim = c.victim ? c.victim(np) : -1;
  const args = ['--work', c.work, '--dir', s.dir];
  if (c.self) args.push('--victim', String(victim), '--fault', c.self);
  const program = c.viaSh
    ? ['--', 'sh', '-c', `"${process.execPath}" "$0" "$@"; exit $?`, faultScript, ...args]
    : [faultScript, ...args];
  const launcherArgs = ['-n', String(np), ...(mode === 'thread' ? ['--threads'] : []), ...(c.launcherArgs ?? [])];
  const job = start(process.execPath, [cli, ...launcherArgs, ...program], {
    env: c.env, detached: c.group, limitMs: READY_MS + 2 * BOUND_MS, drainMs: 5000,
  });
  try {
    let faultAt = -1;
    if (c.toRank || c.toLauncher) {
      if (!(await until(() => readyCount(s.dir) === np, READY_MS))) {
        expect.fail(`not every rank started and did a round of work\n${explain(await endOf(job))}`);
      }
      // The segment's name went as soon as the ranks had it.
      expect(await leakedSegments(before), 'a segment in /dev/shm while the job runs').toEqual([]);
      await sleep(100);
      faultAt = Date.now();
      if (c.toRank) {
        process.kill(rankPids(s.dir).get(victim)!, c.toRank);
      } else if (c.group) {
        process.kill(-job.child.pid!, c.toLauncher!);
      } else {
        job.child.kill(c.toLauncher!);
      }
    }
    const r = await job.done;
    if (faultAt < 0) faultAt = Number(readFileSync(join(s.dir, 'died'), 'utf8'));
    const what = `${c.name} (np ${np}, ${mode})\n${explain(r)}`;
    expect(r.hung, what).toBe(false);

    // The job ends: the launcher at once, and (when the launcher is killed)
    // every rank within the bound.
    const pids = [...rankPids(s.dir).values()];
    expect(pids.length, what).toBe(np);
    const left = await survivors(pids, Math.max(0, faultAt + BOUND_MS - Date.now()));
    const endedAt = Date.now();
    expect(left, `rank processes left ${BOUND_MS} ms after the fault\n${what}`).toEqual([]);
    expect(Math.max(r.endedAt, c.status === 'SIGKILL' ? endedAt : 0) - faultAt, what).toBeLessThan(BOUND_MS);

    if (c.status === 'SIGKILL') expect(r.signal, what).toBe('SIGKILL');
    else expect(r.status, what).toBe(c.status);

    // A worker's uncaught error is printed as a rank process would print it.
    if (c.self === 'throw') expect(r.stderr, what).toContain(`Error: rank ${victim} fails on purpose`);
    if (c.self === 'reject') expect(r.stderr, what).toContain(`Error: rank ${victim} rejects on purpose`);

    const lines = launcherLines(r.stderr);
    if (c.line) {
      expect(lines, what).toHaveLength(1);
      expect(lines[0], what).toMatch(c.line(victim));
    } else {
      expect(lines, what).toEqual([]);
    }

    if (c.caught) {
      // Ranks that outlive the launcher print after it has gone: wait for them.
      const expected = [...Array(np).keys()].filter((k) => k !== victim).map((k) => `caught ERR_PROC_FAILED rank ${k}`);
      if (c.status === 'SIGKILL') await until(() => caughtLines(job.stdout()).length >= expected.length, 5000);
      const out = c.status === 'SIGKILL' ? job.stdout() : r.stdout;
      expect(caughtLines(out).sort(), what).toEqual(expected.sort());
    }

    expect(await leakedSegments(before), what).toEqual([]);
  } finally {
    if (job.child.exitCode === null && job.child.signalCode === null) job.child.kill('SIGKILL');
    reap(rankPids(s.dir).values());
    s.remove();
  }
}

function readyCount(dir: string): number {
  let n = 0;
  for (const name of readdir(dir)) if (name.startsWith('ready.')) n++;
  return n;
}

function readdir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function caughtLines(stdout: string): string[] {
  return stdout.split('\n').filter((l) => l.startsWith('caught '));
}

/** The job's end, killing it first if it still runs (for a failure message). */
async function endOf(job: ReturnType<typeof start>): Promise<JobResult> {
  job.child.kill('SIGKILL');
  return job.done;
}

describe.each([2, 8])('np %i', (np) => {
  describe('process mode', () => {
    test.each(processCases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
      await runCase(c, np, 'process');
    });
  });
  describe('thread mode', () => {
    test.each(threadCases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
      await runCase(c, np, 'thread');
    });
  });
});
