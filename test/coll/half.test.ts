import { describe } from 'vitest';

import { collectiveSuite } from './suite.js';

// test/fixtures/coll/half.mjs: FLOAT16 and BFLOAT16 through reduceScatterBlock,
// reduceScatter, scan, exscan, iallreduce and iscan with exact expected values,
// and any 16-bit patterns through allreduce, the same bits on every rank.
// (reduce and allreduce cover them with every other type.)
describe('half-precision reductions', () => {
  collectiveSuite('half', 'FLOAT16 and BFLOAT16 reduce exactly and identically on every rank');
});
