// Thousands of communicators alive at once: each works, slot memory does
// not grow with their number, and a rank whose peers lag behind on many of
// them never waits for a slot set.
import { describe, expect, it } from 'vitest';
import { explain, runJob, worldSizes } from '../helpers/job.js';

describe('many communicators', () => {
  for (const np of worldSizes) {
    it(`2048 live communicators of every kind work, and slot memory stays bounded, at np=${np}`, async () => {
      const r = await runJob(np, 'comm/many.mjs', ['live'], { timeoutSec: 150 });
      expect(r.status, explain(r)).toBe(0);
    });
  }
  for (const np of [2, 3, 4]) {
    it(`a rank that runs ahead on 192 communicators finds slot sets without waiting, at np=${np}`, async () => {
      const r = await runJob(np, 'comm/many.mjs', ['lagging'], { timeoutSec: 120 });
      expect(r.status, explain(r)).toBe(0);
    });
  }
});
