import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';

import { expectPassed, runSingleton } from '../helpers/job.js';

// The same rank scripts started with plain `node script.mjs`, without the
// launcher: an MPI singleton, a world of one.
describe('singleton (plain node, a world of one)', () => {
  for (const script of ['world', 'bcast', 'gather', 'scatter', 'allgather', 'alltoall', 'reduce', 'allreduce']) {
    it(`${script}`, async () => {
      const r = await runSingleton(`coll/${script}.mjs`);
      expectPassed(r, { name: script, np: 1 });
    });
  }
  it('barrier', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nodempi-barrier-'));
    try {
      const r = await runSingleton('coll/barrier.mjs', [dir]);
      expectPassed(r, { name: 'barrier', np: 1 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  for (const group of ['root', 'buffer', 'count', 'op', 'type', 'arg']) {
    it(`argument errors: ${group}`, async () => {
      const r = await runSingleton('coll/errors.mjs', [group]);
      expectPassed(r, { name: `errors ${group}`, np: 1 });
    });
  }
});
