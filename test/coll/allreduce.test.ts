import { describe } from 'vitest';

import { collectiveSuite } from './suite.js';

// test/fixtures/coll/allreduce.mjs: every predefined op on every datatype it
// applies to, exact C semantics, 0 items to several MiB, IN_PLACE, signed
// zeros and NaN, bit-identical results on every rank and run after run.
describe('allreduce', () => {
  collectiveSuite('allreduce', 'combines exactly and identically on every rank');
});
