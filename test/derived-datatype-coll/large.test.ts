// Large derived types (test/fixtures/derived-datatype-coll/large.mjs): a vector moving
// more than 1 MiB and an indexed type of 100000 unsorted blocks.
import { describe, expect, it } from 'vitest';
import { explain, runJob, worldSizes } from '../helpers/job.js';

describe('large derived datatypes in collectives', () => {
  for (const np of worldSizes) {
    it(`exact at np=${np}`, async () => {
      const r = await runJob(np, 'derived-datatype-coll/large.mjs', [], { timeoutSec: 90 });
      expect(r.status, explain(r)).toBe(0);
    });
    it(`exact across hundreds of chunks (8 KiB slots) at np=${np}`, async () => {
      const r = await runJob(np, 'derived-datatype-coll/large.mjs', [], { env: { NODEMPI_SLOT_KB: '8' }, timeoutSec: 90 });
      expect(r.status, explain(r)).toBe(0);
    });
  }
});
