import { describe } from 'vitest';

import { collectiveSuite } from './suite.js';

// test/fixtures/coll/bcast.mjs: every buffer kind and explicit datatype,
// every root, 0 items to several MiB, odd-offset views with guard bytes.
describe('bcast', () => {
  collectiveSuite('bcast', 'copies the root buffer exactly to every rank');
});
