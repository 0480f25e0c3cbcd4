// The large-message paths with single copy between ranks forced on
// (NODEMPI_CMA=1): bcast, gather, scatter, allgather and alltoall from the
// default size and from 1 byte, and the v-collectives, whose blocks move by
// direct copies after a first phase through the slots; forced off
// (NODEMPI_CMA=0, the default when ranks outnumber cores); and its fallback
// (NODEMPI_CMA=fallback: every rank takes the single-copy protocol but
// declares its copies refused, so after the signature phase all fall back
// to the slots, the path a kernel without Cross Memory Attach takes), also
// with small slots so the fallback crosses many chunks; and copies that
// fail only when tried (NODEMPI_CMA=refuse: all ranks ready, every copy
// between processes refused), where each call falls back after its copies
// (the v-collectives with blocks that skipped the first phase included). The plain suites in
// test/coll run with the default, which depends on the machine's cores.
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { alternate, expectPassed, explain, fixtures, nodempi, runJob } from '../helpers/job.js';

const modes: [string, Record<string, string>][] = [
  ['single copy', { NODEMPI_CMA: '1' }],
  ['single copy from 1 byte', { NODEMPI_CMA: '1', NODEMPI_CMA_MIN: '1' }],
  ['single copy and 8 KiB slots', { NODEMPI_CMA: '1', NODEMPI_SLOT_KB: '8' }],
  ['single copy off', { NODEMPI_CMA: '0' }],
  ['the single-copy fallback', { NODEMPI_CMA: 'fallback', NODEMPI_CMA_MIN: '1' }],
  ['the single-copy fallback and 8 KiB slots', { NODEMPI_CMA: 'fallback', NODEMPI_CMA_MIN: '1', NODEMPI_SLOT_KB: '8' }],
  ['single copies the kernel refuses', { NODEMPI_CMA: 'refuse', NODEMPI_CMA_MIN: '1' }],
  ['single copies the kernel refuses and 8 KiB slots', { NODEMPI_CMA: 'refuse', NODEMPI_CMA_MIN: '1', NODEMPI_SLOT_KB: '8' }],
];

// Each script at 2 ranks in one mode and 3 in the next, in turn: every
// script and every mode at both sizes, in half the jobs.
describe.each(modes.map(([label, env], m) => [label, env, m] as const))('data movement with %s', (_label, env, m) => {
  for (const [s, script] of ['coll/bcast.mjs', 'coll/gather.mjs', 'coll/scatter.mjs', 'coll/allgather.mjs', 'coll/alltoall.mjs', 'vector-coll/large.mjs'].entries()) {
    const np = alternate(s + m, 2, 3);
    it(`${script} at np=${np}`, async () => {
      const r = await runJob(np, script, [], { env });
      expect(r.status, explain(r)).toBe(0);
    });
  }
  it('mismatch detection when only some ranks pass a large message (np=3)', async () => {
    const r = await runJob(3, 'mismatch/mismatch.mjs', [], { env });
    expect(r.status, explain(r)).toBe(0);
  });
});

describe('derived datatypes with single copy on', () => {
  for (const np of [1, 2, 3, 4]) {
    it(`take the slots for that call only, exact, at np=${np}`, async () => {
      const r = await runJob(np, 'derived-datatype-coll/single-copy.mjs', [], { env: { NODEMPI_CMA: '1' } });
      expect(r.status, explain(r)).toBe(0);
    });
  }
});

describe('ranks that disagree on NODEMPI_CMA', () => {
  it('throw ERR_NOT_SAME on every rank for a large message, and go on working (np=3)', async () => {
    const script = join(fixtures, 'process', 'cma-mismatch.mjs');
    const only1 = `export NODEMPI_CMA=0; if [ "$NODEMPI_RANK" = 1 ]; then export NODEMPI_CMA=1; fi; exec "${process.execPath}" "${script}"`;
    const r = await nodempi(['-n', '3', '--timeout', '30', '--', 'sh', '-c', only1], { limitMs: 90_000 });
    expectPassed(r, { name: 'cma mismatch', np: 3 });
  });
});
