// The communicator context pool (4095 contexts besides COMM_WORLD's):
// create/free loops, after which the whole pool must be there again (a
// fill counts it: one leaked context shows), then exhaustion itself.
import { describe, expect, it } from 'vitest';
import { explain, runJob } from '../helpers/job.js';

describe('communicator context pool', () => {
  for (const np of [1, 2, 3, 4]) {
    it(`500 × (dup + allreduce + free), 500 × (split + free), create, intercomm loops leak nothing at np=${np}`, async () => {
      const r = await runJob(np, 'comm/pool.mjs', ['loops', '500'], { timeoutSec: 150 });
      expect(r.status, explain(r)).toBe(0);
    });
  }
  for (const np of [1, 2, 3, 4, 5]) {
    it(`running out throws a clear MPIError on every rank, the rest stays usable, freeing recovers, at np=${np}`, async () => {
      const r = await runJob(np, 'comm/pool.mjs', ['exhaust'], { timeoutSec: 60 });
      expect(r.status, explain(r)).toBe(0);
    });
  }
});
