import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';
import { expectPassed, explain, runJob, worldSizes } from '../helpers/job.js';

describe('collective mismatch detection', () => {
  for (const np of worldSizes) {
    it(`throws ERR_NOT_SAME on every rank and keeps the communicator usable at np=${np}`, async () => {
      const r = await runJob(np, 'mismatch/mismatch.mjs');
      expect(r.status, explain(r)).toBe(0);
    });
  }
  // The barrier that waits for rank 0 alone, forced: its verdict in rank 0's
  // header line must make every rank throw alike, on any number of cores.
  it('throws ERR_NOT_SAME on every rank with NODEMPI_ALGO=barrier:fan at np=3', async () => {
    expectPassed(await runJob(3, 'mismatch/mismatch.mjs', [], { env: { NODEMPI_ALGO: 'barrier:fan' } }), { name: 'mismatch', np: 3 });
  });
  // One rank cannot disagree with itself.
  for (const np of worldSizes.filter((np) => np > 1)) {
    it(`writes into no receive buffer when it throws ERR_NOT_SAME, every collective, at np=${np}`, async () => {
      expectPassed(await runJob(np, 'mismatch/untouched.mjs'), { name: 'untouched', np });
    });
  }
  // A receive block smaller than its message: ERR_TRUNCATE where it is,
  // nothing past any block, and one larger: the rest left alone. Small
  // blocks move in one slot phase, 3000 doubles in several, 40000 by a
  // single copy.
  for (const np of worldSizes.filter((np) => np > 1)) {
    it(`fails a v-collective's receive block too small on its rank alone, at np=${np}`, async () => {
      for (const items of ['2', '3000', '40000']) {
        expectPassed(await runJob(np, 'mismatch/vsizes.mjs', [items]), { name: 'v sizes', np });
      }
    });
  }
});

describe('NODEMPI_CHECK_SAME=0', () => {
  for (const np of worldSizes) {
    it(`lets a bcast's root return before the others call it, and the readers still check it, at np=${np}`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'nodempi-ahead-'));
      try {
        const r = await runJob(np, 'mismatch/ahead.mjs', [dir], { env: { NODEMPI_CHECK_SAME: '0' } });
        expect(r.status, explain(r)).toBe(0);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
    // A bcast of 16 bytes or less then runs ahead in the header line and
    // holds no slot set (coll/bcast.cc, coll/context.h):
    // from progress lanes and persistent templates too, between collectives
    // that do, every value exact.
    it(`runs nonblocking and persistent collectives beside bcasts in the header line at np=${np}`, async () => {
      const env = { NODEMPI_CHECK_SAME: '0' };
      expectPassed(await runJob(np, 'nonblocking/kinds.mjs', ['0,1,2,7'], { env }), { name: 'nonblocking kinds', np });
      expectPassed(await runJob(np, 'nonblocking/persistent.mjs', ['200'], { env }), { name: 'persistent', np });
    });
  }
});
