// The communicator context pool (63 contexts besides COMM_WORLD's): loops
// that would exhaust a leaking pool, then exhaustion itself.
import { describe, expect, it } from 'vitest';
import { explain, runJob } from '../helpers/job.js';

describe('communicator context pool', () => {
  for (const np of [1, 2, 3, 4]) {
    it(`3000 × (dup + allreduce + free), 3000 × (split + free), create, intercomm loops leak nothing at np=${np}`, async () => {
      const r = await runJob(np, 'comm/pool.mjs', ['loops', '3000'], { timeoutSec: 150 });
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
