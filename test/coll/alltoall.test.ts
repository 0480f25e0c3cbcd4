import { describe } from 'vitest';

import { collectiveSuite } from './suite.js';

// test/fixtures/coll/alltoall.mjs: every buffer kind and explicit datatype,
// lane-sized blocks, over 1 MiB per block, IN_PLACE.
describe('alltoall', () => {
  collectiveSuite('alltoall', 'transposes the blocks of all ranks');
});
