// A rank that ends with a request pending which its peers never join: it
// gets out, and ranks that do not wait for it carry on (only waits for the
// leaving rank fail, not the whole job).
import { describe, expect, test } from 'vitest';
import { explain, runJob } from '../helpers/job.js';

describe('a rank that leaves with a request pending', () => {
  for (const mode of ['process', 'thread']) {
    test(`exits, and the others finish their own work (np 3, ${mode} mode)`, async () => {
      const r = await runJob(3, 'process/leaving.mjs', [], { timeoutSec: 30, launcherArgs: mode === 'thread' ? ['--threads'] : [] });
      expect(r.status, explain(r)).toBe(0);
      for (const rank of [0, 1, 2]) expect(r.stdout, explain(r)).toMatch(new RegExp(`^leaving: rank ${rank} passed`, 'm'));
    });
  }
});
