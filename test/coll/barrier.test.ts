import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';

import { expectPassed, runJob } from '../helpers/job.js';
import { collectiveSuite } from './suite.js';

// test/fixtures/coll/barrier.mjs: marker files show that no rank leaves a
// barrier before every rank has entered it, late ranks included.
describe('barrier', () => {
  collectiveSuite('barrier', 'lets no rank out before all are in', {
    args: () => [mkdtempSync(join(tmpdir(), 'nodempi-barrier-'))],
    after: ([dir]) => rmSync(dir!, { recursive: true, force: true }),
  });
  // The barrier that waits for rank 0 alone, forced, on any number of cores.
  it('lets no rank out before all are in with NODEMPI_ALGO=barrier:fan at np=2', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nodempi-barrier-'));
    try {
      expectPassed(await runJob(2, 'coll/barrier.mjs', [dir], { env: { NODEMPI_ALGO: 'barrier:fan' } }), { name: 'barrier', np: 2 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  // With the check off and more ranks than cores (np 3 and 4 on a 2-core
  // machine), the others wait for rank 0 alone (native/core/coll/barrier.cc).
  for (const np of [3, 4]) {
    it(`lets no rank out before all are in with NODEMPI_CHECK_SAME=0 at np=${np}`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'nodempi-barrier-'));
      try {
        expectPassed(await runJob(np, 'coll/barrier.mjs', [dir], { env: { NODEMPI_CHECK_SAME: '0' } }), { name: 'barrier', np });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
