import { describe, expect, it } from 'vitest';

import { cli, expectPassed, explain, fixtures, run, runJob, worldSizes } from '../helpers/job.js';
import { join } from 'node:path';

// test/fixtures/coll/algorithms.mjs under NODEMPI_ALGO: each run forces one
// algorithm of every collective that has more than one, with 4 KiB slot
// halves so that messages of a few KiB already take many chunks; the
// fixture checks exact values and, from the single-copy counter, that the
// forced algorithm is the one that ran.
const SLOTS = { NODEMPI_SLOT_KB: '4' };
const DIRECT_FAMILY = ['bcast', 'gather', 'scatter', 'allgather', 'alltoall', 'allgatherv', 'scan', 'exscan'];
const V_FAMILY = ['gatherv', 'scatterv', 'alltoallv'];
const forceAll = (algo: (coll: string) => string, colls: string[]) => colls.map((c) => `${c}:${algo(c)}`).join(',');

const RUNS: { what: string; env: Record<string, string> }[] = [
  { what: 'flat reductions', env: { ...SLOTS, NODEMPI_ALGO: 'allreduce:flat,reduce:flat' } },
  { what: 'sliced reductions', env: { ...SLOTS, NODEMPI_ALGO: 'allreduce:sliced,reduce:sliced' } },
  {
    what: 'direct (single copy) algorithms',
    env: { ...SLOTS, NODEMPI_CMA: '1', NODEMPI_ALGO: forceAll(() => 'direct', [...DIRECT_FAMILY, ...V_FAMILY]) },
  },
  {
    // Single copy on, so the automatic choice would copy the large messages directly.
    what: 'slot algorithms with single copy on',
    env: {
      ...SLOTS,
      NODEMPI_CMA: '1',
      NODEMPI_ALGO: forceAll((c) => (c === 'bcast' ? 'pipelined' : 'flat'), [...DIRECT_FAMILY, ...V_FAMILY]),
    },
  },
];

describe('every algorithm, forced by NODEMPI_ALGO', () => {
  for (const { what, env } of RUNS) {
    for (const np of worldSizes) {
      it(`${what} at np=${np}`, async () => {
        expectPassed(await runJob(np, 'coll/algorithms.mjs', [], { env }), { name: 'algorithms', np });
      });
    }
  }

  it('flat reductions with default slots, where the automatic choice slices (np=3)', async () => {
    expectPassed(await runJob(3, 'coll/algorithms.mjs', [], { env: { NODEMPI_ALGO: 'allreduce:flat,reduce:flat' } }), { name: 'algorithms', np: 3 });
  });

  it('ranks forced to different algorithms throw ERR_NOT_SAME on every rank, and go on working (np=3)', async () => {
    const script = join(fixtures, 'coll', 'algorithms.mjs');
    const only1 =
      'export NODEMPI_ALGO=allreduce:flat,reduce:flat; ' +
      'if [ "$NODEMPI_RANK" = 1 ]; then export NODEMPI_ALGO=allreduce:sliced,reduce:sliced; fi; ' +
      `exec "${process.execPath}" "${script}" mismatch`;
    const r = await run(process.execPath, [cli, '-n', '3', '--timeout', '60', '--', 'sh', '-c', only1]);
    expectPassed(r, { name: 'algorithms', np: 3 });
  });
});
