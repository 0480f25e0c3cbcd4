import { describe, expect, it } from 'vitest';
import { explain, run, runJob, worldSizes, fixtures } from '../helpers/job.js';
import { join } from 'node:path';

describe('user-defined ops', () => {
  for (const np of worldSizes) {
    it(`keep rank order, see typed views and fail together at np=${np}`, async () => {
      const r = await runJob(np, 'ops/userop.mjs');
      expect(r.status, explain(r)).toBe(0);
    });
  }
  it('work in a singleton started with plain node', async () => {
    const r = await run(process.execPath, [join(fixtures, 'ops/userop.mjs')]);
    expect(r.status, explain(r)).toBe(0);
  });
});

describe('reduceLocal and reduceLocals', () => {
  for (const kernels of ['auto', 'scalar']) {
    it(`compute exact results with the ${kernels} kernels`, async () => {
      const r = await run(process.execPath, [join(fixtures, 'ops/local.mjs')], { env: { NODEMPI_KERNELS: kernels } });
      expect(r.status, explain(r)).toBe(0);
    });
  }
});
