// dup, create(group), compare, names, free, splitType.
import { describe, expect, it } from 'vitest';
import { explain, runJob, worldSizes } from '../helpers/job.js';

describe('dup, create, compare, free, splitType', () => {
  for (const np of worldSizes) {
    it(`dup/create rank as expected; compare, names, splitType, free at np=${np}`, async () => {
      const r = await runJob(np, 'comm/dupcreate.mjs', ['main'], { timeoutSec: 60 });
      expect(r.status, explain(r)).toBe(0);
    });
    it(`every use of a freed communicator throws ERR_COMM at np=${np}`, async () => {
      const r = await runJob(np, 'comm/dupcreate.mjs', ['freed'], { timeoutSec: 60 });
      expect(r.status, explain(r)).toBe(0);
    });
  }
  for (const np of [1, 2, 4]) {
    it(`free() with a request pending: the request completes and an await settles (np=${np})`, async () => {
      const r = await runJob(np, 'comm/dupcreate.mjs', ['free-pending-await'], { timeoutSec: 20 });
      expect(r.status, explain(r)).toBe(0);
    });
    it(`free() with a request pending, then wait(): the ranks exit (np=${np})`, async () => {
      const r = await runJob(np, 'comm/dupcreate.mjs', ['free-pending-wait'], { timeoutSec: 20 });
      expect(r.status, explain(r)).toBe(0);
    });
  }
});
