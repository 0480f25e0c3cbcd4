import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { explain, fixtures, run, runJob, worldSizes } from '../helpers/job.js';

describe('pack and unpack of derived datatypes', () => {
  it('work in a singleton started with plain node', async () => {
    const r = await run(process.execPath, [join(fixtures, 'datatype/pack.mjs')]);
    expect(r.status, explain(r)).toBe(0);
    expect(r.stdout).toContain('datatype/pack: rank 0 passed');
  });
  for (const np of worldSizes.filter((n) => n > 1)) {
    it(`assemble a matrix from packed columns at np=${np}`, async () => {
      const r = await runJob(np, 'datatype/pack.mjs');
      expect(r.status, explain(r)).toBe(0);
    });
  }
  it('work in worker-thread ranks, each with its own committed types', async () => {
    const r = await run(process.execPath, [join(fixtures, 'datatype/threads.mjs'), '3']);
    expect(r.status, explain(r)).toBe(0);
  });
});
