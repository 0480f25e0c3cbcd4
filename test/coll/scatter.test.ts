import { describe, it } from 'vitest';

import { expectPassed, runJob } from '../helpers/job.js';
import { collectiveSuite } from './suite.js';

// test/fixtures/coll/scatter.mjs: every buffer kind and explicit datatype,
// every root, lane-sized blocks, IN_PLACE at the root, non-root IN_PLACE.
describe('scatter', () => {
  collectiveSuite('scatter', 'delivers block r of the root buffer to rank r');
  // Where a root returns before its readers (test/fixtures/mismatch/ahead.mjs).
  it('delivers every block exactly with NODEMPI_CHECK_SAME=0 at np=3', async () => {
    expectPassed(await runJob(3, 'coll/scatter.mjs', [], { env: { NODEMPI_CHECK_SAME: '0' } }), { name: 'scatter', np: 3 });
  });
});
