import { describe, expect, it } from 'vitest';
import { expectPassed, explain, runJob, worldSizes } from '../helpers/job.js';

// Item 5: the event loop stays free while a rank awaits a collective a
// late rank has not joined; waiting sleeps rather than spins. The CPU
// numbers are printed for the report.
describe('waiting for a late rank', () => {
  for (const np of worldSizes) {
    it(`keeps the event loop free and the CPU mostly idle at np=${np}`, async () => {
      const r = await runJob(np, 'nonblocking/eventloop.mjs', [], { timeoutSec: 30 });
      const lines = r.stdout.split('\n').filter((l) => l.startsWith('cpu '));
      console.log(`eventloop np=${np}:\n${lines.sort().join('\n') || '(no waiting ranks)'}`);
      expectPassed(r, { name: 'event loop', np });
      // Three measured waits on every rank but rank 0.
      expect(lines.length, explain(r)).toBe(3 * (np - 1));
    });
  }
});
