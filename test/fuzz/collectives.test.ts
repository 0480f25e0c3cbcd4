/**
 * Property-based fuzzing of every collective under the real launcher at
 * world sizes 1 to 4 (test/fixtures/fuzz/collectives.mjs says what a case
 * is and what it must do). One seed per run of the suite, the same for
 * every job and every rank: FUZZ_SEED replays one, FUZZ_RUNS sets the cases
 * per job (default 3000: about 30 s in all on 2 idle cores, two minutes in a
 * full run on a busy machine) for longer local runs. A failure prints the
 * seed and fast-check's path; FUZZ_PATH replays that case alone.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

import { expectPassed, fixtures, runJob, worldSizes } from '../helpers/job.js';

const seed = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const runs = Number(process.env.FUZZ_RUNS ?? 3000);
const script = join(fixtures, 'fuzz', 'collectives.mjs');

function replay(np: number, env = ''): string {
  return `replay: FUZZ_SEED=${seed} FUZZ_RUNS=${runs} ${env}node dist/cli.js -n ${np} ${script} ${seed} ${runs}`;
}

describe(`fuzzed collectives (seed ${seed}, ${runs} cases per job)`, () => {
  for (const np of worldSizes) {
    it(`every failure a documented MPIError before anything is sent, results exact, at np=${np}`, async () => {
      const r = await runJob(np, script, [String(seed), String(runs)], { timeoutSec: 170 });
      expectPassed(r, { name: 'fuzz collectives', np, unit: 'cases', count: runs, note: replay(np) });
    });
  }
  it('the same with requests on private copies of their buffers (NODEMPI_HOLD=copy), at np=3', async () => {
    const quarter = String(Math.max(1, runs >> 2));
    const r = await runJob(3, script, [String(seed + 1), quarter], { timeoutSec: 170, env: { NODEMPI_HOLD: 'copy' } });
    expectPassed(r, { name: 'fuzz collectives', np: 3, unit: 'cases', count: Number(quarter), note: `${replay(3, 'NODEMPI_HOLD=copy ')} (seed + 1)` });
  });
});
