// The C++ unit tests of the core (kernels, datatype engine), plain and under
// AddressSanitizer/UBSan, counted with the rest of the suite.
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { explain, root, run } from '../helpers/job.js';

describe('native unit tests', () => {
  for (const script of ['build.sh', 'datatype.sh']) {
    it(`test/native/${script} passes (optimised and sanitized)`, async () => {
      const r = await run('bash', [join(root, 'test', 'native', script)]);
      expect(r.status, explain(r)).toBe(0);
    }, 600_000);
  }
});
