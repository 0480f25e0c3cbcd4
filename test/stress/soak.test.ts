// The soak test in its short form: bench/soak.mjs --scale 0.02 (20,000
// allreduces of 8 B, 200 dup/free cycles, 2,000 nonblocking requests, 4
// ranks under the launcher). Every rank's resident set, open descriptors and
// mappings must grow less than 10 % from the end of the warm-up to the end,
// and every result must be right; no timing is asserted. `npm run soak`
// runs the full counts (bench/SOAK.md).
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { explain, root, run } from '../helpers/job.js';

test('a short soak at np 4 grows no resource by 10 % or more', async () => {
  const r = await run(process.execPath, [join(root, 'bench', 'soak.mjs'), '--scale', '0.02', '--timeout', '300']);
  expect(r.status, explain(r)).toBe(0);
  expect(r.stdout).toContain('soak: passed');
}, 600_000);
