// comm.split: ordering by key then parent rank (equal, negative, reversed
// keys), several colors, UNDEFINED, nested splits, rank/size/group(), and
// traffic on COMM_WORLD, a dup and a split never mixing.
import { describe, expect, it } from 'vitest';
import { explain, runJob, worldSizes } from '../helpers/job.js';

describe('comm.split', () => {
  for (const np of [...worldSizes, 5]) {
    it(`orders by key then rank, gives null for UNDEFINED, nests, at np=${np}`, async () => {
      const r = await runJob(np, 'comm/split.mjs', ['main'], { timeoutSec: 60 });
      expect(r.status, explain(r)).toBe(0);
    });
    it(`keeps traffic on COMM_WORLD, a dup and a split apart (blocking, nonblocking, persistent) at np=${np}`, async () => {
      const r = await runJob(np, 'comm/split.mjs', ['traffic'], { timeoutSec: 60 });
      expect(r.status, explain(r)).toBe(0);
    });
  }
  // Colors and keys beyond a C int must be rejected (ERR_ARG) or honoured,
  // never wrapped.
  const intCases = ['color 2**31 everywhere', 'color 2**31 on odd ranks', 'keys beyond 2**31', 'color 2**32 + 1 next to color 1'];
  intCases.forEach((label, i) => {
    it(`rejects or honours ${label} (np=3)`, async () => {
      const r = await runJob(3, 'comm/split.mjs', ['int-range', String(i)], { timeoutSec: 30 });
      expect(r.status, explain(r)).toBe(0);
    });
  });
});
