/**
 * mpi.allocMem (lib/memory.ts): its buffers carry messages at world sizes
 * 1-4 (test/fixtures/buffers/alloc-mem.mjs; the mpi backend runs it in
 * test/mpi/suite.ts), and their memory goes back as any ArrayBuffer's does,
 * also from a synchronous loop that never yields to the event loop. Where
 * in a page the buffers start is checked natively (test/native/memory_test.cc).
 */
import { describe, expect, it } from 'vitest';

import { expectPassed, runJob } from '../helpers/job.js';

import * as mpi from '../../dist/index.js';

describe('allocMem', () => {
  for (const np of [1, 2, 3, 4]) {
    it(`buffers carry point-to-point and collective messages (np=${np})`, async () => {
      expectPassed(await runJob(np, 'buffers/alloc-mem.mjs', [], { timeoutSec: 120 }), { name: 'alloc-mem', np });
    });
  }

  it('gives memory back without a turn of the event loop', () => {
    // 3 GiB written in all, 32 MiB at a time: kept, it would be 3 GiB resident.
    const before = process.memoryUsage().rss;
    let most = before;
    for (let i = 0; i < 96; i++) {
      const m = mpi.allocMem(32 << 20);
      for (let j = 0; j < m.length; j += 4096) m[j] = 1;
      most = Math.max(most, process.memoryUsage().rss);
    }
    expect(most - before).toBeLessThan(1 << 30);
  });

  it('works before init and is zero-filled at every size', () => {
    expect(mpi.isInitialized()).toBe(false);
    for (const bytes of [1, 4095, 4097, (4 << 20) - 1, 4 << 20, (4 << 20) + 1]) {
      const m = mpi.allocMem(bytes);
      expect(m.byteLength).toBe(bytes);
      expect(m.every((x) => x === 0)).toBe(true);
    }
  });
});
