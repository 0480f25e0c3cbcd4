// The reduction suites again with each kernel table forced, so the scalar
// table (and AVX2 on CPUs that pick AVX-512) is exercised through the real
// collectives, not only by the C++ unit tests.
import { describe, expect, it } from 'vitest';
import { explain, runJob } from '../helpers/job.js';

describe.each(['scalar', 'avx2'])('reductions with NODEMPI_KERNELS=%s', (table) => {
  for (const script of ['coll/allreduce.mjs', 'coll/reduce.mjs', 'coll/half.mjs', 'vector-coll/v-variants.mjs']) {
    for (const np of [2, 3]) {
      it(`${script} at np=${np}`, async () => {
        const r = await runJob(np, script, [], { env: { NODEMPI_KERNELS: table } });
        expect(r.status, explain(r)).toBe(0);
        expect(r.stderr, 'the forced table must be supported here (no fallback warning)').not.toMatch(/NODEMPI_KERNELS=.* is not/);
      });
    }
  }
});
