import { describe, it } from 'vitest';
import { expectPassed, runJob, worldSizes } from '../helpers/job.js';

// Item 2: every persistent kind, 200 rounds with new data each round,
// startAll, start() on an active request, free().
describe('persistent collectives', () => {
  for (const np of worldSizes) {
    it(`run 200 rounds of every kind with exact results, startAll and free at np=${np}`, async () => {
      expectPassed(await runJob(np, 'nonblocking/persistent.mjs', ['200']), { name: 'persistent', np });
    });
  }
});
