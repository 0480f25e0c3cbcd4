/**
 * Nothing outlives a job, however it ends: no rank survives an abort(), nor
 * does what the ranks started. The other endings (normal exit, crashes, a
 * timeout, signals to the launcher, a launcher killed by SIGKILL) are
 * checked in exit.test.ts, faults.test.ts and peer-death.test.ts.
 */
import { describe, expect, test } from 'vitest';
import { explain, nodempi } from '../helpers/job.js';
import { ENDS_WITHIN_MS, expectClean, rankJob, rankLines, rankPids, reap, scratch, shmNames, survivors } from './util.js';

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
      // abort() SIGTERMs the others itself; left alone they would sleep 60 s.
      expect(r.ms, explain(r)).toBeLessThan(ENDS_WITHIN_MS);
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
      const r = await nodempi(['-n', '2', '--tag-output', '--', 'sh', '-c', script], { limitMs: 30_000 });
      expect(r.status, explain(r)).toBe(0);
      expect(r.ms, explain(r)).toBeLessThan(ENDS_WITHIN_MS);
      expect(r.stdout.match(/^\[[01]\] started$/gm)).toHaveLength(2);
      expect(rankPids(s.dir).size).toBe(2);
      expect(await survivors(rankPids(s.dir).values(), 3000, 'sleep')).toEqual([]);
    } finally {
      reap(rankPids(s.dir).values(), 'sleep');
      s.remove();
    }
  });
});
