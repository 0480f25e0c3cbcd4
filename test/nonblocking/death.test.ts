import { describe, expect, it } from 'vitest';
import { explain, runJob, worldSizes } from '../helpers/job.js';

// Item 8: a rank dies while the others wait for a nonblocking collective:
// they get ERR_PROC_FAILED (printed, then exit 0) instead of hanging.
const variants: [string, string][] = [
  ['sigkill', 'await'],
  ['sigkill', 'persistent'],
  ['sigkill', 'test'],
  ['exit0', 'wait'],
];

describe('a rank that dies during a nonblocking collective', () => {
  for (const np of worldSizes.filter((n) => n >= 2)) {
    it(`makes every survivor's request fail with ERR_PROC_FAILED, not hang, at np=${np}`, async () => {
      for (const [die, how] of variants) {
        const t0 = Date.now();
        const r = await runJob(np, 'nonblocking/death.mjs', [die, how], { timeoutSec: 20 });
        const elapsed = Date.now() - t0;
        const what = `rank ${np - 1} dies by ${die}, the others complete by ${how}: ${explain(r)}`;
        expect(r.status, what).not.toBe(124);
        expect(elapsed, what).toBeLessThan(20_000);
        for (let rank = 0; rank < np - 1; rank++) {
          expect(r.stdout, what).toMatch(new RegExp(`^survivor ${rank}: ERR_PROC_FAILED after \\d+ ms`, 'm'));
        }
        // While awaiting, the event loop kept running.
        if (how === 'await' || how === 'persistent') {
          for (const m of r.stdout.matchAll(/^survivor \d+: .*timer ticks (\d+)/gm)) expect(Number(m[1]), what).toBeGreaterThanOrEqual(3);
        }
        if (die === 'sigkill') {
          expect(r.status, what).not.toBe(0);
          expect(r.stdout + r.stderr, what).toMatch(new RegExp(`rank ${np - 1} was killed by signal SIGKILL`));
        }
      }
    });
  }
});
