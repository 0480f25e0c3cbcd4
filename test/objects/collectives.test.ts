import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

import { explain, expectPassed, nodempi, root, runJob, start, worldSizes } from '../helpers/job.js';

// test/fixtures/objects/collectives.mjs: every object collective, blocking
// and awaited, exact values, errors and intercommunicators.
describe('object collectives', () => {
  for (const np of worldSizes) {
    it(`move, reduce and refuse plain values at np=${np}`, async () => {
      expectPassed(await runJob(np, 'objects/collectives.mjs'), { name: 'objects all', np });
    });
  }
  for (const comm of ['dup', 'split', 'create']) {
    it(`work on a ${comm} communicator at np=3`, async () => {
      expectPassed(await runJob(3, 'objects/collectives.mjs', [], { env: { NODEMPI_TEST_COMM: comm } }), { name: 'objects all', np: 3 });
    });
  }
  it('bcast a 256 MiB value at np=2', async () => {
    expectPassed(await runJob(2, 'objects/collectives.mjs', ['large']), { name: 'objects large', np: 2 });
  });
  // Ranks as worker threads of one process (mpi.launch's thread mode).
  for (const np of worldSizes) {
    it(`work with ranks as threads at np=${np}`, async () => {
      const opts = { np, script: '../objects/collectives.mjs', mode: 'thread' };
      const run = await start(process.execPath, [join(root, 'test/fixtures/process/driver.mjs'), JSON.stringify(opts)]).done;
      expect(run.status, explain(run)).toBe(0);
      expect(/^RESULT (.*)$/m.exec(run.stdout)?.[1], explain(run)).toContain(`"exitCodes":[${new Array(np).fill(0).join(',')}]`);
      for (let r = 0; r < np; r++) expect(run.stdout, explain(run)).toMatch(new RegExp(`^objects all: rank ${r} passed \\d+ checks`, 'm'));
    });
  }

  // The README's example, as a user runs it.
  for (const np of worldSizes) {
    it(`examples/words.mjs counts the same words at np=${np}`, async () => {
      const run = await nodempi(['-n', String(np), join(root, 'examples/words.mjs')]);
      expect(run.status, explain(run)).toBe(0);
      const lines = run.stdout.trim().split('\n');
      expect(lines[0], explain(run)).toBe('7 lines, 29 distinct words; most frequent: the 11, was 10, age 2, all 2');
      expect(lines.slice(1).map((l) => Number(/: (\d+) lines/.exec(l)?.[1])).reduce((a, b) => a + b, 0)).toBe(7);
      expect(lines).toHaveLength(1 + np);
    });
  }
});
