// Reductions on derived datatypes (test/fixtures/derived-datatype-coll/reduce.mjs): predefined
// ops element by element (SUM, MAX, MIN, BXOR, MAXLOC with ties), ERR_OP for
// heterogeneous structs, user-defined ops seeing items as laid out in memory
// (TypedArrays for one basic type, DataViews otherwise), non-commutative
// results in rank order; every reduction collective, blocking, nonblocking,
// persistent, in place.
import { describe, it } from 'vitest';
import { expectPassed, runJob, worldSizes } from '../helpers/job.js';

const groups = ['predefined', 'userop-contig', 'userop-struct', 'userop-holes'];

describe('reductions on derived datatypes', () => {
  for (const np of worldSizes) {
    for (const group of groups) {
      it(`${group} at np=${np}`, async () => {
        const r = await runJob(np, 'derived-datatype-coll/reduce.mjs', [group, '1'], { timeoutSec: 60 });
        expectPassed(r, { name: `dtcoll reduce ${group} x1`, np });
      });
      it(`${group} across many chunks (8 KiB slots) at np=${np}`, async () => {
        const r = await runJob(np, 'derived-datatype-coll/reduce.mjs', [group, '2'], { env: { NODEMPI_SLOT_KB: '8' }, timeoutSec: 60 });
        expectPassed(r, { name: `dtcoll reduce ${group} x2`, np });
      });
    }
  }
});
