// Every collective suite again, over a dup, a split (reversed rank order)
// and a communicator created from a rotated group, as mpi4py binds its
// collective tests to COMM_WORLD and its derivatives.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { derivedComms } from '../helpers/comms.js';
import { alternate, explain, fixtures, runJob } from '../helpers/job.js';

// [script, args]: every collective suite of the earlier issues, the
// derived-datatype and nonblocking ones in a representative selection of
// their groups (the rest of their cases share the same code paths).
const scripts: [string, string[]][] = [
  // world.mjs is about COMM_WORLD itself (init, finalize); the rest is
  // about collectives.
  ...readdirSync(join(fixtures, 'coll'))
    .filter((f) => f.endsWith('.mjs') && !['common.mjs', 'errors.mjs', 'world.mjs'].includes(f))
    .map((f): [string, string[]] => [`coll/${f}`, []]),
  ['vector-coll/v-variants.mjs', []],
  ['ops/userop.mjs', []],
  ['mismatch/mismatch.mjs', []],
  ['derived-datatype-coll/move.mjs', ['fixed', '1']],
  ['derived-datatype-coll/move.mjs', ['v', '1']],
  ['derived-datatype-coll/move.mjs', ['inplace', '1']],
  ['derived-datatype-coll/reduce.mjs', ['predefined', '1']],
  ['derived-datatype-coll/reduce.mjs', ['userop-struct', '1']],
  ['nonblocking/kinds.mjs', ['0,7,1500']],
  ['nonblocking/persistent.mjs', ['50']],
  ['nonblocking/userop.mjs', []],
  ['nonblocking/many.mjs', ['100']],
];

// Each script at 3 ranks over one kind and 4 over the next, in turn: every
// script at both sizes and every kind at both, in half the jobs (the
// communicator's part is the same at either size; the collectives' own
// suites run every size over COMM_WORLD).
describe.each(derivedComms.map((kind, k) => [kind, k] as const))('collectives over a %s communicator', (kind, k) => {
  for (const [s, [script, args]] of scripts.entries()) {
    const np = alternate(s + k, 3, 4);
    it(`${[script, ...args].join(' ')} at np=${np}`, async () => {
      // barrier.mjs proves its ordering through files in a shared folder.
      const dir = script === 'coll/barrier.mjs' ? mkdtempSync(join(tmpdir(), 'nodempi-barrier-')) : null;
      try {
        const r = await runJob(np, script, dir ? [dir] : args, { env: { NODEMPI_TEST_COMM: kind } });
        expect(r.status, explain(r)).toBe(0);
      } finally {
        if (dir) rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
