/**
 * Nothing outlives a job, however it ends: the segment's name is gone from
 * /dev/shm while the job still runs, and no rank survives a launcher that
 * is SIGKILLed (its watchdog ends them), an abort(), or a timeout. The
 * other endings (normal exit, crashes, SIGTERM/SIGINT to the launcher) are
 * checked in exit.test.ts and peer-death.test.ts.
 */
import { describe, expect, test } from 'vitest';
import {
  alive, cli, expectClean, explain, leakedSegments, nodempi, rankJob, rankLines, rankPids, rankScript, reap, scratch, shmNames,
  start, survivors, until,
} from './util.js';

function startRanks(np: number, dir: string, others: string, env?: Record<string, string>) {
  // Rank 0 hangs outside MPI; the others do `others` (a barrier then waits for rank 0).
  return start(process.execPath, [cli, '-n', String(np), rankScript, '--fail', '0', '--how', 'hang', '--others', others, '--dir', dir],
    { env, drainMs: 100 });
}

describe('SIGKILL of the launcher', () => {
  test.each([
    [2, 'loop'],
    [3, 'sleep'],
    [4, 'barrier'],
  ])('np %i, others %s: the segment name is already gone, and the watchdog ends every rank', async (np, others) => {
    const s = scratch();
    const before = shmNames();
    try {
      const job = startRanks(np, s.dir, others);
      expect(await until(() => rankPids(s.dir).size === np, 10_000)).toBe(true);
      // While the job runs, /dev/shm holds nothing of it.
      expect(await leakedSegments(before)).toEqual([]);
      job.child.kill('SIGKILL');
      const r = await job.done;
      expect(r.signal).toBe('SIGKILL');
      // SIGTERM from the watchdog at once; SIGKILL a second later for any holdout.
      expect(await survivors(rankPids(s.dir).values(), 4000)).toEqual([]);
      expect(await leakedSegments(before)).toEqual([]);
    } finally {
      reap(rankPids(s.dir).values());
      s.remove();
    }
  });

  test('without the watchdog (NODEMPI_WATCHDOG=0), ranks blocked in a barrier notice the launcher is gone', async () => {
    const np = 3;
    const s = scratch();
    const before = shmNames();
    try {
      const job = startRanks(np, s.dir, 'barrier', { NODEMPI_WATCHDOG: '0' });
      expect(await until(() => rankPids(s.dir).size === np, 10_000)).toBe(true);
      await new Promise((r) => setTimeout(r, 200));
      job.child.kill('SIGKILL');
      const pids = rankPids(s.dir);
      // Ranks 1 and 2 wait in a barrier: they throw ERR_PROC_FAILED and exit.
      expect(await survivors([pids.get(1)!, pids.get(2)!], 5000)).toEqual([]);
      // Rank 0 runs no MPI call, so only something outside it can end it:
      // that is the watchdog's job (previous test). Here it lingers.
      expect(alive(pids.get(0)!)).toBe(true);
      reap([pids.get(0)!]);
      const r = await job.done;
      const caught = r.stdout.match(/^caught ERR_PROC_FAILED rank [12] /gm) ?? [];
      expect(caught, explain(r)).toHaveLength(2);
      expect(await leakedSegments(before)).toEqual([]);
    } finally {
      reap(rankPids(s.dir).values());
      s.remove();
    }
  });
});

describe('abort', () => {
  test.each([
    [2, 1, 'barrier'],
    [3, 0, 'sleep'],
    [4, 2, 'loop'],
    [4, 3, 'allreduce'],
  ])('np %i: rank %i calls abort(5) while the others %s -> status 5, others ended promptly, nothing left', async (np, who, others) => {
    const s = scratch();
    const before = shmNames();
    try {
      const r = await rankJob(np, ['--fail', String(who), '--how', 'abort:5', '--others', others, '--delay', '100', '--dir', s.dir]);
      expect(r.status, explain(r)).toBe(5);
      const lines = rankLines(r.stderr);
      expect(lines, explain(r)).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`^nodempi: rank ${who} called abort and exited with code 5\\b`));
      // abort() SIGTERMs the others itself: no grace period to sit out.
      expect(r.ms, explain(r)).toBeLessThan(5000);
      expect(await expectClean(before, s.dir, 1000)).toEqual({ leaked: [], left: [] });
    } finally {
      reap(rankPids(s.dir).values());
      s.remove();
    }
  });
});

describe("what the ranks started", () => {
  test('a background process left in a rank\'s process group is ended with the job, and does not hold the output open', async () => {
    const s = scratch();
    try {
      // Each rank starts `sleep 37` in the background (same process group), records its pid, and exits 0.
      const script = `sleep 37 & echo $! > ${s.dir}/pid.$NODEMPI_RANK; echo started`;
      const r = await nodempi(['-n', '2', '--tag-output', '--', 'sh', '-c', script], { limitMs: 20_000 });
      expect(r.status, explain(r)).toBe(0);
      expect(r.ms, explain(r)).toBeLessThan(10_000);
      expect(r.stdout.match(/^\[[01]\] started$/gm)).toHaveLength(2);
      expect(rankPids(s.dir).size).toBe(2);
      expect(await survivors(rankPids(s.dir).values(), 3000, 'sleep')).toEqual([]);
    } finally {
      reap(rankPids(s.dir).values(), 'sleep');
      s.remove();
    }
  });
});
