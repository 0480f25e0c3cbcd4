import { describe, expect, it } from 'vitest';
import { explain, runJob, worldSizes } from '../helpers/job.js';

describe('v-variants, reduce-scatter and scans', () => {
  for (const np of worldSizes) {
    it(`give exact results at np=${np}`, async () => {
      const r = await runJob(np, 'vector-coll/v-variants.mjs', ['1']);
      expect(r.status, explain(r)).toBe(0);
    });
    it(`give exact results across many chunks (8 KiB slots) at np=${np}`, async () => {
      const r = await runJob(np, 'vector-coll/v-variants.mjs', ['20'], { env: { NODEMPI_SLOT_KB: '8' } });
      expect(r.status, explain(r)).toBe(0);
    });
    it(`move blocks larger than a slot, and truncate them, at np=${np}`, async () => {
      const r = await runJob(np, 'vector-coll/large.mjs', []);
      expect(r.status, explain(r)).toBe(0);
    });
  }
});
