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
 * even a marked buffer on Node 20, so they run under NODEMPI_HOLD=copy,
 * where requests work on private copies.
 */
import { describe, expect, it } from 'vitest';

import { explain, fixtures, run, cli } from '../helpers/job.js';
import { join } from 'node:path';

const fixture = join(fixtures, 'buffers', 'detach.mjs');
const marked = ['structuredClone', 'messageChannel', 'worker', 'transfer', 'resize'];
const all = [...marked, 'byob', 'enqueue'];

function job(np: number, ways: string[], env: Record<string, string> = {}) {
  return run(process.execPath, [cli, '-n', String(np), '--timeout', '150', '--', process.execPath, '--expose-gc', fixture, ...ways], env);
}

function expectPassed(r: Awaited<ReturnType<typeof job>>, np: number): void {
  expect(r.status, explain(r)).toBe(0);
  for (let rank = 0; rank < np; rank++) expect(r.stdout, explain(r)).toMatch(new RegExp(`detach: rank ${rank} passed \\d+ checks`));
}

describe('buffers taken away while a request is pending', () => {
  for (const np of [2, 3, 4]) {
    it(`marked untransferable: transfer lists copy them, resizable ones are refused (np=${np})`, async () => {
      expectPassed(await job(np, marked, { NODEMPI_HOLD: 'mark' }), np);
    });
  }
  for (const np of [2, 4]) {
    it(`NODEMPI_HOLD=copy: every way, web streams included (np=${np})`, async () => {
      expectPassed(await job(np, all, { NODEMPI_HOLD: 'copy' }), np);
    });
  }
});
