import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

import { explain, expectPassed, root, runJob, start, worldSizes } from '../helpers/job.js';

// test/fixtures/p2p/messages.mjs: point-to-point on the public API, exact
// values and statuses (the mpi backend runs it in test/mpi/suite.ts).
describe('point-to-point', () => {
  for (const np of worldSizes) {
    it(`sends, receives and refuses at np=${np}`, async () => {
      expectPassed(await runJob(np, 'p2p/messages.mjs'), { name: 'p2p all', np });
    });
    it(`moves 8 MiB messages at np=${np}`, async () => {
      expectPassed(await runJob(np, 'p2p/messages.mjs', ['large']), { name: 'p2p large', np });
    });
  }
  for (const comm of ['dup', 'split', 'create']) {
    it(`works on a ${comm} communicator at np=3`, async () => {
      expectPassed(await runJob(3, 'p2p/messages.mjs', [], { env: { NODEMPI_TEST_COMM: comm } }), { name: 'p2p all', np: 3 });
    });
  }
  // Ranks as worker threads of one process (mpi.launch's thread mode).
  for (const np of [2, 4]) {
    it(`works with ranks as threads at np=${np}`, async () => {
      const opts = { np, script: '../p2p/messages.mjs', mode: 'thread' };
      const run = await start(process.execPath, [join(root, 'test/fixtures/process/driver.mjs'), JSON.stringify(opts)]).done;
      expect(run.status, explain(run)).toBe(0);
      expect(/^RESULT (.*)$/m.exec(run.stdout)?.[1], explain(run)).toContain(`"exitCodes":[${new Array(np).fill(0).join(',')}]`);
      for (let r = 0; r < np; r++) expect(run.stdout, explain(run)).toMatch(new RegExp(`^p2p all: rank ${r} passed \\d+ checks`, 'm'));
    });
  }
});
