// Derived datatypes in the data-moving collectives (test/fixtures/derived-datatype-coll/move.mjs):
// type signatures, not type maps, must match; every root; mixed layouts
// across ranks; in-place forms; zero counts; blocking, nonblocking and
// persistent; guard bytes around every buffer and in every hole.
import { describe, it } from 'vitest';
import { expectPassed, runJob, worldSizes } from '../helpers/job.js';

const groups = ['fixed', 'v', 'inplace'];

describe('derived datatypes in bcast, gather(v), scatter(v), allgather(v), alltoall(v/w)', () => {
  for (const np of worldSizes) {
    for (const group of groups) {
      it(`${group} at np=${np}`, async () => {
        const r = await runJob(np, 'derived-datatype-coll/move.mjs', [group, '1'], { timeoutSec: 60 });
        expectPassed(r, { name: `dtcoll move ${group} x1 main`, np });
      });
      it(`${group} across many chunks (8 KiB slots) at np=${np}`, async () => {
        const r = await runJob(np, 'derived-datatype-coll/move.mjs', [group, '2'], { env: { NODEMPI_SLOT_KB: '8' }, timeoutSec: 60 });
        expectPassed(r, { name: `dtcoll move ${group} x2 main`, np });
      });
    }
  }
});

// struct { double; int } against the predefined DOUBLE_INT: the same
// signature (MPI: a pair type's type map is { (double, 0), (int, 8) }).
describe('struct { double; int } against DOUBLE_INT', () => {
  for (const np of worldSizes) {
    for (const group of groups) {
      it(`${group} at np=${np}`, async () => {
        const r = await runJob(np, 'derived-datatype-coll/move.mjs', [group, '1', 'struct/DOUBLE_INT'], { timeoutSec: 60 });
        expectPassed(r, { name: `dtcoll move ${group} x1 struct/DOUBLE_INT`, np });
      });
    }
  }
});
