import { describe, it } from 'vitest';

import { expectPassed, runJob } from '../helpers/job.js';
import { collectiveSuite } from './suite.js';

// test/fixtures/coll/gather.mjs: every buffer kind and explicit datatype,
// every root, IN_PLACE at the root, non-root IN_PLACE is ERR_ARG.
describe('gather', () => {
  collectiveSuite('gather', 'puts every rank block in place at the root');
  // Where the non-roots compare with the root alone (test/fixtures/mismatch/ahead.mjs).
  it('puts every block in place with NODEMPI_CHECK_SAME=0 at np=3', async () => {
    expectPassed(await runJob(3, 'coll/gather.mjs', [], { env: { NODEMPI_CHECK_SAME: '0' } }), { name: 'gather', np: 3 });
  });
});
