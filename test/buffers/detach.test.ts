/**
 * Buffers taken away while a request that uses them is pending
 * (test/fixtures/buffers/detach.mjs): a 4 MiB iallreduce, ibcast and
 * persistent allreduce held pending by a late rank, their buffers
 * transferred every way the runtime offers, the new owner dropped and
 * garbage collected, then completed. Exact results or an MPIError, never a
 * crash; `npm run test:sanitize -- test/buffers` runs this against the
 * AddressSanitizer build, which reports any access to freed memory.
 *
 * In the default mode (buffers marked untransferable) the ways the mark
 * stops are run; web streams (a BYOB read, a byte stream's enqueue) detach
 * even a marked buffer on Node 20 and 22, and ArrayBuffer.prototype.transfer()
 * does on Node 22 (where lib/hold.ts therefore works on copies), so they run
 * under NODEMPI_HOLD=copy, where requests work on private copies.
 */
import { describe, it } from 'vitest';

import { expectPassed, runJob } from '../helpers/job.js';
import { transferHonoursMark } from '../../dist/hold.js';

const marked = ['structuredClone', 'messageChannel', 'worker', ...(transferHonoursMark() ? ['transfer'] : []), 'resize'];
const all = [...marked, 'byob', 'enqueue'];

function job(np: number, ways: string[], env: Record<string, string> = {}) {
  return runJob(np, 'buffers/detach.mjs', ways, { timeoutSec: 150, node: [process.execPath, '--expose-gc'], env });
}

describe('buffers taken away while a request is pending', () => {
  for (const np of [2, 3, 4]) {
    it(`marked untransferable: transfer lists copy them, resizable ones are refused (np=${np})`, async () => {
      expectPassed(await job(np, marked, { NODEMPI_HOLD: 'mark' }), { name: 'detach', np });
    });
  }
  for (const np of [2, 4]) {
    it(`NODEMPI_HOLD=copy: every way, web streams included (np=${np})`, async () => {
      expectPassed(await job(np, all, { NODEMPI_HOLD: 'copy' }), { name: 'detach', np });
    });
  }
});
