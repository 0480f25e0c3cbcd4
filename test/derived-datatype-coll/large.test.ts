// Large derived types (test/fixtures/derived-datatype-coll/large.mjs): a vector moving
// more than 1 MiB and an indexed type of 100000 unsorted blocks.
import { describe, it } from 'vitest';
import { expectPassed, runJob, worldSizes } from '../helpers/job.js';

describe('large derived datatypes in collectives', () => {
  for (const np of worldSizes) {
    it(`exact at np=${np}`, async () => {
      const r = await runJob(np, 'derived-datatype-coll/large.mjs', [], { timeoutSec: 90 });
      expectPassed(r, { name: 'dtcoll large', np });
    });
    it(`exact across hundreds of chunks (8 KiB slots) at np=${np}`, async () => {
      const r = await runJob(np, 'derived-datatype-coll/large.mjs', [], { env: { NODEMPI_SLOT_KB: '8' }, timeoutSec: 90 });
      expectPassed(r, { name: 'dtcoll large', np });
    });
  }
});
