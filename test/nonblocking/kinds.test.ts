import { describe, expect, it } from 'vitest';
import { type JobResult, expectPassed, explain, runJob, runSingleton, worldSizes } from '../helpers/job.js';

// Item 1: every nonblocking kind, exact results, completed by await, wait()
// and a test() loop; Request lists; a process exits by itself afterwards.
describe('nonblocking collectives', () => {
  for (const np of worldSizes) {
    it(`give exact results for every kind, root and in-place form, however completed, at np=${np}`, async () => {
      expectPassed(await runJob(np, 'nonblocking/kinds.mjs', ['0,7,1500']), { name: 'nonblocking kinds', np });
    });
    it(`give exact results across many pipeline phases (8 KiB slots) at np=${np}`, async () => {
      expectPassed(await runJob(np, 'nonblocking/kinds.mjs', ['2000'], { env: { NODEMPI_SLOT_KB: '8' } }), { name: 'nonblocking kinds', np });
    });
    it(`complete through Request.waitAll, testAll, waitAny and Promise.all at np=${np}`, async () => {
      expectPassed(await runJob(np, 'nonblocking/requests.mjs'), { name: 'request lists', np });
    });
  }
});

const exitModes = ['wait', 'test', 'await', 'waitAll', 'testAll', 'waitAny', 'persistent', 'persistent-free'];
// Under the launcher, the ways that do not go through the event loop.
const launcherExitModes = ['wait', 'test', 'waitAny', 'persistent'];

describe('a process whose last call completes a request', () => {
  for (const np of worldSizes) {
    it(`exits by itself, however the request was completed, at np=${np}`, async () => {
      const results: [string, JobResult][] = [];
      // Two jobs at a time; a process that does not exit ends with the launcher's 124.
      for (let i = 0; i < launcherExitModes.length; i += 2) {
        const batch = launcherExitModes.slice(i, i + 2);
        const rs = await Promise.all(batch.map((how) => runJob(np, 'nonblocking/exit.mjs', [how], { timeoutSec: 15 })));
        batch.forEach((how, k) => results.push([how, rs[k]!]));
      }
      for (const [how, r] of results) {
        expectPassed(r, { name: `exit after ${how}`, np, note: `completed by ${how}` });
      }
    });
  }
  it('exits by itself in a singleton started with plain node', async () => {
    for (const how of exitModes) {
      const r = await runSingleton('nonblocking/exit.mjs', [how], { limitMs: 15_000 });
      expect(r.hung, `completed by ${how}: still running after 15 s\n${explain(r)}`).toBe(false);
      expect(r.status, `completed by ${how}: ${explain(r)}`).toBe(0);
    }
  });
});
