import { describe } from 'vitest';

import { collectiveSuite } from './suite.js';

// test/fixtures/coll/allgather.mjs: every buffer kind and explicit datatype,
// 0 items to over 1 MiB per block, IN_PLACE.
describe('allgather', () => {
  collectiveSuite('allgather', 'gives every rank all blocks in rank order');
});
