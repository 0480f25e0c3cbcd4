import { describe } from 'vitest';

import { collectiveSuite } from './suite.js';

// test/fixtures/coll/scatter.mjs: every buffer kind and explicit datatype,
// every root, lane-sized blocks, IN_PLACE at the root, non-root IN_PLACE.
describe('scatter', () => {
  collectiveSuite('scatter', 'delivers block r of the root buffer to rank r');
});
