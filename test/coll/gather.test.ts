import { describe } from 'vitest';

import { collectiveSuite } from './suite.js';

// test/fixtures/coll/gather.mjs: every buffer kind and explicit datatype,
// every root, IN_PLACE at the root, non-root IN_PLACE is ERR_ARG.
describe('gather', () => {
  collectiveSuite('gather', 'puts every rank block in place at the root');
});
