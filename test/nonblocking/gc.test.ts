import { describe, it } from 'vitest';
import { expectPassed, runJob, worldSizes } from '../helpers/job.js';

// Item 7: buffers referenced only by a request in flight survive garbage
// collection (ranks run as `node --expose-gc`).
describe('buffers of requests in flight', () => {
  for (const np of worldSizes) {
    it(`stay alive through global.gc() with only the request referencing them at np=${np}`, async () => {
      const r = await runJob(np, 'nonblocking/gc.mjs', [], { timeoutSec: 60, launcherArgs: ['--', process.execPath, '--expose-gc'] });
      expectPassed(r, { name: 'gc', np });
    });
  }
});
