import { describe } from 'vitest';

import { collectiveSuite } from './suite.js';

// test/fixtures/coll/world.mjs: COMM_WORLD and COMM_SELF identity, init and
// finalize, wtime and wtick.
describe('COMM_WORLD, COMM_SELF and the life cycle', () => {
  collectiveSuite('world', 'have the rank, size and names of the job', { smallSlots: false });
});
