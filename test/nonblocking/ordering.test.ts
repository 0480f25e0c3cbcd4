import { describe, it } from 'vitest';
import { expectPassed, runJob, worldSizes } from '../helpers/job.js';

// Item 4: blocking and nonblocking mixed on one communicator; COMM_WORLD
// and COMM_SELF interleaved.
describe('ordering of blocking, nonblocking and persistent collectives', () => {
  for (const np of worldSizes) {
    it(`match in initiation order without deadlock, on COMM_WORLD and COMM_SELF, at np=${np}`, async () => {
      expectPassed(await runJob(np, 'nonblocking/ordering.mjs', [], { timeoutSec: 45 }), { name: 'ordering', np });
    });
  }

  // Two async tasks on one communicator, started in different orders by
  // different ranks: ERR_NOT_SAME that says to dup(); a communicator each works.
  for (const np of worldSizes) {
    it(`concurrent async tasks: ERR_NOT_SAME pointing at comm.dup() on a shared communicator, right values on their own, at np=${np}`, async () => {
      expectPassed(await runJob(np, 'nonblocking/concurrent.mjs'), { name: 'concurrent tasks', np });
    });
  }
});
