// Every collective suite again, over a dup, a split (reversed rank order)
// and a communicator created from a rotated group, as mpi4py binds its
// collective tests to COMM_WORLD and its derivatives.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { derivedComms } from '../helpers/comms.js';
import { explain, fixtures, runJob } from '../helpers/job.js';

const scripts = [
  ...readdirSync(join(fixtures, 'coll')).filter((f) => f.endsWith('.mjs') && f !== 'common.mjs' && f !== 'errors.mjs').map((f) => `coll/${f}`),
  'vcoll/vcoll.mjs',
  'ops/userop.mjs',
  'mismatch/mismatch.mjs',
];

describe.each(derivedComms)('collectives over a %s communicator', (kind) => {
  for (const script of scripts) {
    for (const np of [3, 4]) {
      it(`${script} at np=${np}`, async () => {
        const r = await runJob(np, script, [], { env: { NODEMPI_TEST_COMM: kind } });
        expect(r.status, explain(r)).toBe(0);
      });
    }
  }
});
