import { describe } from 'vitest';

import { collectiveSuite } from './suite.js';

// test/fixtures/coll/reduce.mjs: every predefined op on every datatype it
// applies to, every root, exact C semantics, 0 items to several MiB,
// IN_PLACE at the root, non-root IN_PLACE is ERR_ARG.
describe('reduce', () => {
  collectiveSuite('reduce', 'combines exactly at every root');
});
