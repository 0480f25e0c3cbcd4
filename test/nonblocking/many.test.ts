import { describe, it } from 'vitest';
import { expectPassed, runJob, worldSizes } from '../helpers/job.js';

// Item 3: hundreds outstanding on one communicator, completed in reverse
// order, a mix of kinds at once.
describe('many outstanding nonblocking collectives', () => {
  for (const np of worldSizes) {
    it(`complete 320 at once in reverse and shuffled order with exact results at np=${np}`, async () => {
      expectPassed(await runJob(np, 'nonblocking/many.mjs', ['320']), { name: 'many outstanding', np });
    });
  }
});
