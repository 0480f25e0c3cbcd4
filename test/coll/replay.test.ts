import { describe, it } from 'vitest';

import { expectPassed, runJob } from '../helpers/job.js';
import { collectiveSuite } from './suite.js';

// test/fixtures/coll/replay.mjs: blocking calls repeated with the same
// arguments, which the communicator replays from the addon's record
// (lib/replay.ts), with changes between calls that must end the replay.
describe('replayed blocking calls', () => {
  collectiveSuite('replay', 'give exact results and notice every change');
  collectiveSuite('no-alloc', 'allocate nothing on the JavaScript heap', { smallSlots: false });
  for (const comm of ['dup', 'split', 'create']) {
    it(`give exact results on a ${comm} communicator at np=3`, async () => {
      const r = await runJob(3, 'coll/replay.mjs', [], { env: { NODEMPI_TEST_COMM: comm } });
      expectPassed(r, { name: 'replay', np: 3 });
    });
  }
});
