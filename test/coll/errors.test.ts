import { describe, it } from 'vitest';

import { expectPassed, runJob, worldSizes } from '../helpers/job.js';

// test/fixtures/coll/errors.mjs, one group of argument errors per job: each
// thrown synchronously with its code on the rank that passed the bad
// argument, before anything is sent, the communicator usable afterwards.
const groups: Record<string, string> = {
  root: 'ERR_ROOT for roots out of range or not integers',
  buffer: 'ERR_BUFFER for non-buffers and buffers too small for the count',
  count: 'ERR_COUNT for bad counts, uneven blocks and mismatched counts',
  op: 'ERR_OP for ops not defined on the datatype',
  type: 'ERR_TYPE for non-datatypes and mismatched reduction types',
  arg: 'ERR_ARG for IN_PLACE where MPI does not allow it and malformed specs',
};

for (const [group, what] of Object.entries(groups)) {
  describe(`argument errors: ${group}`, () => {
    for (const np of worldSizes) {
      it(`${what} at np=${np}`, async () => {
        const r = await runJob(np, 'coll/errors.mjs', [group], { timeoutSec: 60 });
        expectPassed(r, { name: `errors ${group}`, np });
      });
    }
  });
}
