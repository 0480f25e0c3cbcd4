import { describe, expect, it } from 'vitest';
import { explain, runJob, worldSizes } from '../helpers/job.js';

describe('collective mismatch detection', () => {
  for (const np of worldSizes) {
    it(`throws ERR_NOT_SAME on every rank and keeps the communicator usable at np=${np}`, async () => {
      const r = await runJob(np, 'mismatch/mismatch.mjs');
      expect(r.status, explain(r)).toBe(0);
    });
  }
});
