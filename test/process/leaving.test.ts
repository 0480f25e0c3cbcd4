// A rank that ends with a request pending which its peers never join: it
// gets out, and ranks that do not wait for it carry on (only waits for the
// leaving rank fail, not the whole job).
import { describe, test } from 'vitest';
import { expectPassed, runJob } from '../helpers/job.js';

describe('a rank that leaves with a request pending', () => {
  for (const mode of ['process', 'thread']) {
    test(`exits, and the others finish their own work (np 3, ${mode} mode)`, async () => {
      const r = await runJob(3, 'process/leaving.mjs', [], { timeoutSec: 30, launcherArgs: mode === 'thread' ? ['--threads'] : [] });
      expectPassed(r, { name: 'leaving', np: 3 });
    });
  }
});
