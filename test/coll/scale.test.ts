import { describe, it } from 'vitest';

import { expectPassed, runJob } from '../helpers/job.js';

// test/fixtures/coll/scale.mjs: every collective in every form at a world
// size far beyond the cores (64 ranks on CI's 2 cores): slower, but
// correct, and nothing times out.
describe('every collective at a large world size', () => {
  it('is correct at np=64 on COMM_WORLD, a dup and a split', async () => {
    const r = await runJob(64, 'coll/scale.mjs', [], { timeoutSec: 240 });
    expectPassed(r, { name: 'scale', np: 64 });
  }, 300_000);
  it('is correct at np=5 and np=8', async () => {
    for (const np of [5, 8]) expectPassed(await runJob(np, 'coll/scale.mjs', [], { timeoutSec: 120 }), { name: 'scale', np });
  });
});
