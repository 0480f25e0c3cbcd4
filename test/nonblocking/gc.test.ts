import { join } from 'node:path';
import { describe, it } from 'vitest';
import { cli, run } from '../helpers/job.js';
import { dir, expectPassed, worldSizes } from './util.js';

// Item 7: buffers referenced only by a request in flight survive garbage
// collection (ranks run as `node --expose-gc`).
describe('buffers of requests in flight', () => {
  for (const np of worldSizes) {
    it(`stay alive through global.gc() with only the request referencing them at np=${np}`, async () => {
      const r = await run(process.execPath, [cli, '-n', String(np), '--timeout', '60', '--', process.execPath, '--expose-gc', join(dir, 'gc.mjs')]);
      expectPassed(r, np, 'gc');
    });
  }
});
