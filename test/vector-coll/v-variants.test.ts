import { describe, it } from 'vitest';
import { expectPassed, runJob, worldSizes } from '../helpers/job.js';

describe('v-variants, reduce-scatter and scans', () => {
  for (const np of worldSizes) {
    it(`give exact results at np=${np}`, async () => {
      const r = await runJob(np, 'vector-coll/v-variants.mjs', ['1']);
      expectPassed(r, { name: 'vcoll', np });
    });
    it(`give exact results across many chunks (8 KiB slots) at np=${np}`, async () => {
      const r = await runJob(np, 'vector-coll/v-variants.mjs', ['20'], { env: { NODEMPI_SLOT_KB: '8' } });
      expectPassed(r, { name: 'vcoll', np });
    });
    it(`move blocks larger than a slot, and truncate them, at np=${np}`, async () => {
      const r = await runJob(np, 'vector-coll/large.mjs', []);
      expectPassed(r, { name: 'vcoll large', np });
    });
    it(`place every block at its non-zero displacement, in every form, at np=${np}`, async () => {
      const r = await runJob(np, 'vector-coll/displacements.mjs', []);
      expectPassed(r, { name: 'vcoll displacements', np });
    });
  }
});
