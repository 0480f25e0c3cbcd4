// bcast and allgather of derived types packed and unpacked chunk by chunk
// in the slots (test/fixtures/derived-datatype-coll/fused.mjs): every fast-path block size,
// odd counts, chunk boundaries inside elements, every root, mixed layouts,
// IN_PLACE, all three forms, holes and guards untouched.
import { describe, it } from 'vitest';
import { expectPassed, runJob, worldSizes } from '../helpers/job.js';

describe('derived types in fused bcast and allgather', () => {
  for (const np of worldSizes) {
    it(`small counts at np=${np}`, async () => {
      const r = await runJob(np, 'derived-datatype-coll/fused.mjs', ['small'], { timeoutSec: 90 });
      expectPassed(r, { name: 'fused small', np });
    });
    it(`messages of several chunks (8 KiB slots) at np=${np}`, async () => {
      const r = await runJob(np, 'derived-datatype-coll/fused.mjs', ['chunks'], { env: { NODEMPI_SLOT_KB: '8' }, timeoutSec: 90 });
      expectPassed(r, { name: 'fused chunks', np });
    });
  }
  it('on a split communicator with reversed ranks at np=3', async () => {
    const r = await runJob(3, 'derived-datatype-coll/fused.mjs', ['small'], { env: { NODEMPI_TEST_COMM: 'split' }, timeoutSec: 90 });
    expectPassed(r, { name: 'fused small', np: 3 });
  });
  it('through the single-copy path (NODEMPI_CMA=1) at np=3', async () => {
    const r = await runJob(3, 'derived-datatype-coll/fused.mjs', ['chunks'], {
      env: { NODEMPI_SLOT_KB: '8', NODEMPI_CMA: '1', NODEMPI_CMA_MIN: '4096' },
      timeoutSec: 90,
    });
    expectPassed(r, { name: 'fused chunks', np: 3 });
  });
});
