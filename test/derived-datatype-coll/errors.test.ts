// Errors and edge rules of derived datatypes in collectives
// (test/fixtures/derived-datatype-coll/errors.mjs, edge.mjs): uncommitted types, freed types
// still referenced, buffers against the span of the type map, overlapping
// send types, mismatched signatures; and one job per edge rule.
import { describe, it } from 'vitest';
import { expectPassed, runJob, worldSizes } from '../helpers/job.js';

describe('derived datatype errors in collectives', () => {
  for (const np of worldSizes) {
    it(`ERR_TYPE, freed types, ERR_BUFFER, overlap, ERR_NOT_SAME at np=${np}`, async () => {
      const r = await runJob(np, 'derived-datatype-coll/errors.mjs', [], { timeoutSec: 60 });
      expectPassed(r, { name: 'dtcoll errors', np });
    });
    it(`the same with 8 KiB slots at np=${np}`, async () => {
      const r = await runJob(np, 'derived-datatype-coll/errors.mjs', [], { env: { NODEMPI_SLOT_KB: '8' }, timeoutSec: 60 });
      expectPassed(r, { name: 'dtcoll errors', np });
    });
  }
});

const edges: [string, string][] = [
  ['negative-true-lb', 'a type with data before its origin, placed by v/w displacements'],
  ['reduce-scatter-extra', 'reduceScatter leaves receive items past recvcounts[rank] alone'],
  ['pair-padding', 'DOUBLE_INT receives leave the padding after each pair alone'],
  ['pair-signature', 'struct { double; int } and DOUBLE_INT match'],
  ['requests-keep-lists', 'nonblocking and persistent v-collectives on derived types keep their own lists'],
];

describe('derived datatype edge rules', () => {
  for (const [name, what] of edges) {
    for (const np of [1, 2, 3, 4]) {
      it(`${what} at np=${np}`, async () => {
        const r = await runJob(np, 'derived-datatype-coll/edge.mjs', [name], { timeoutSec: 60 });
        expectPassed(r, { name: `dtcoll edge ${name}`, np });
      });
    }
  }
});
