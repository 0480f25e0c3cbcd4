import { describe, it } from 'vitest';

import { expectPassed, runJob } from '../helpers/job.js';
import { collectiveSuite } from './suite.js';

// test/fixtures/coll/bcast.mjs: every buffer kind and explicit datatype,
// every root, 0 items to several MiB, odd-offset views with guard bytes.
describe('bcast', () => {
  collectiveSuite('bcast', 'copies the root buffer exactly to every rank');
  // Where a root returns before its readers (test/fixtures/mismatch/ahead.mjs).
  it('copies the root buffer exactly with NODEMPI_CHECK_SAME=0 at np=3', async () => {
    expectPassed(await runJob(3, 'coll/bcast.mjs', [], { env: { NODEMPI_CHECK_SAME: '0' } }), { name: 'bcast', np: 3 });
  });
});
