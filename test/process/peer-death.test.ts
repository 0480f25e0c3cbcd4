/**
 * A rank that dies while the others wait for it in a collective makes them
 * throw MPIError ERR_PROC_FAILED instead of hanging. The rank fixture
 * measures, in each survivor, the time from the death (a timestamp the
 * dying rank writes just before it goes) to the error, and prints it. The
 * design target is about a second (peers look at liveness every ~20 ms
 * once asleep); the bound here is loose so a slow CI machine does not flake.
 */
import { describe, expect, test } from 'vitest';
import { explain } from '../helpers/job.js';
import { expectClean, rankJob, rankLines, rankPids, reap, scratch, shmNames } from './util.js';

const cases: [number, string, string][] = [];
for (const np of [2, 3, 4]) {
  for (const how of ['sigkill', 'exit0']) {
    for (const coll of ['barrier', 'allreduce']) cases.push([np, how, coll]);
  }
}
cases.push([3, 'exit:9', 'bcast'], [4, 'throw', 'allreduce']);

describe('peer death', () => {
  test.each(cases)('np %i: a rank that ends by %s while the others wait in %s', async (np, how, coll) => {
    // The last rank dies at np 2 and 4, the first at np 3 (it is the root of
    // bcast there, so every survivor waits on it directly).
    const dead = np === 3 ? 0 : np - 1;
    const s = scratch();
    const before = shmNames();
    try {
      const r = await rankJob(np, ['--fail', String(dead), '--how', how, '--others', coll, '--delay', '150', '--dir', s.dir]);
      expect(r.hung, explain(r)).toBe(false);
      const caught = [...r.stdout.matchAll(/^caught (\w+) rank (\d+) after (-?\d+) ms since the peer died$/gm)];
      // Every survivor caught it, as an MPIError with the right code.
      expect(caught.map((m) => Number(m[2])).sort(), explain(r)).toEqual([...Array(np).keys()].filter((k) => k !== dead));
      for (const m of caught) {
        expect(m[1], explain(r)).toBe('ERR_PROC_FAILED');
        expect(Number(m[3]), explain(r)).toBeLessThan(5000);
      }
      // Survivors caught the error and exited 0, so the job's status is the
      // dead rank's: 0 for exit0 (a clean exit is not a failure), else its
      // code or 128 + signal, named on one line.
      const status = how === 'sigkill' ? 137 : how === 'exit0' ? 0 : how === 'throw' ? 1 : 9;
      expect(r.status, explain(r)).toBe(status);
      expect(rankLines(r.stderr), explain(r)).toHaveLength(status === 0 ? 0 : 1);
      if (status) expect(rankLines(r.stderr)[0]).toContain(`rank ${dead} `);
      expect(await expectClean(before, s.dir, 1000)).toEqual({ leaked: [], left: [] });
    } finally {
      reap(rankPids(s.dir).values());
      s.remove();
    }
  });
});
