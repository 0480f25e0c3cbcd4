import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { explain, expectPassed, runJob, runSingleton } from '../helpers/job.js';

// The shared-memory backend's point-to-point seam (lib/p2p/backend.ts),
// called directly by test/fixtures/p2p/seam.mjs under the real launcher:
// order, wildcards, long messages both ways, truncation, probes, and
// messages sent while the receiver is busy in JavaScript (the fixture
// compares every value exactly); then a peer that exits mid-receive.
const sizes = [2, 3, 4];

describe('shm point-to-point seam', () => {
  it('sends to itself, in a singleton and at np=2', async () => {
    const one = await runSingleton('p2p/seam.mjs', ['self']);
    expectPassed(one, { name: 'p2p self', np: 1 });
    const two = await runJob(2, 'p2p/seam.mjs', ['self'], { timeoutSec: 60 });
    expectPassed(two, { name: 'p2p self', np: 2 });
  }, 120_000);

  it('moves messages exactly and in order with ranks as threads (np=3)', async () => {
    const markers = mkdtempSync(join(tmpdir(), 'nodempi-p2p-'));
    try {
      const r = await runJob(3, 'p2p/seam.mjs', ['messages', markers], { launcherArgs: ['--threads', '--oversubscribe'], timeoutSec: 120 });
      expectPassed(r, { name: 'p2p seam', np: 3 });
    } finally {
      rmSync(markers, { recursive: true, force: true });
    }
  }, 200_000);

  // Long messages go by single copy (an RTS the receiver answers after
  // process_vm_readv) where the job allows it, else through the rings.
  // Forced on (from 4 KiB), off, and refused by the kernel (the sender then
  // streams them through the ring after all).
  const transports: [string, Record<string, string>][] = [
    ['single copy from 4 KiB', { NODEMPI_CMA: '1', NODEMPI_CMA_MIN: '4096' }],
    ['rings only', { NODEMPI_CMA: '0' }],
    ['single copy refused', { NODEMPI_CMA: 'refuse', NODEMPI_CMA_MIN: '4096' }],
  ];
  for (const [name, env] of transports) {
    it(`moves messages exactly and in order at np=3, ${name}`, async () => {
      const markers = mkdtempSync(join(tmpdir(), 'nodempi-p2p-'));
      try {
        const r = await runJob(3, 'p2p/seam.mjs', ['messages', markers], { launcherArgs: ['--oversubscribe'], timeoutSec: 120, env });
        expectPassed(r, { name: 'p2p seam', np: 3, note: JSON.stringify(env) });
      } finally {
        rmSync(markers, { recursive: true, force: true });
      }
    }, 200_000);
  }

  for (const np of sizes) {
    it(`moves messages exactly and in order at np=${np}`, async () => {
      const markers = mkdtempSync(join(tmpdir(), 'nodempi-p2p-'));
      try {
        const r = await runJob(np, 'p2p/seam.mjs', ['messages', markers], { launcherArgs: ['--oversubscribe'], timeoutSec: 120 });
        expectPassed(r, { name: 'p2p seam', np });
      } finally {
        rmSync(markers, { recursive: true, force: true });
      }
    }, 200_000);

    it(`fails receives from a peer that exits with ERR_PROC_FAILED at np=${np}`, async () => {
      const r = await runJob(np, 'p2p/seam.mjs', ['exit'], { launcherArgs: ['--oversubscribe'], timeoutSec: 60 });
      expect(r.status, explain(r)).not.toBe(124);
      for (let rank = 0; rank < np - 1; rank++) {
        expect(r.stdout, explain(r)).toMatch(new RegExp(
          `^survivor ${rank}: recv: ERR_PROC_FAILED \\(recv: rank ${np - 1} has exited while rank ${rank} waits for it\\), irecv: ERR_PROC_FAILED after \\d+ ms`, 'm'));
      }
    }, 120_000);
  }
});
