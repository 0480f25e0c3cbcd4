import { describe, it } from 'vitest';
import { expectPassed, runJob, worldSizes } from '../helpers/job.js';

// Item 6: user-defined ops in the nonblocking and persistent reductions,
// and a user op that throws on one rank.
describe('user-defined ops in nonblocking and persistent reductions', () => {
  for (const np of worldSizes) {
    it(`combine in rank order, however completed, and fail together at np=${np}`, async () => {
      expectPassed(await runJob(np, 'nonblocking/userop.mjs'), { name: 'nonblocking user ops', np });
    });
  }
});
