import { describe, it } from 'vitest';
import { expectPassed, job, worldSizes } from './util.js';

// Item 2: every persistent kind, 200 rounds with new data each round,
// startAll, start() on an active request, free().
describe('persistent collectives', () => {
  for (const np of worldSizes) {
    it(`run 200 rounds of every kind with exact results, startAll and free at np=${np}`, async () => {
      expectPassed(await job(np, 'persistent.mjs', ['200']), np, 'persistent');
    });
  }
});
