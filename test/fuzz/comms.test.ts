/**
 * Property-based fuzzing of communicator management under the real
 * launcher (test/fixtures/fuzz/comms.mjs): dup, split, splitType, create,
 * free, compare, createIntercomm, merge, with valid or broken arguments.
 * FUZZ_SEED replays a run, FUZZ_RUNS sets the cases per job (default 1500).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

import { expectPassed, fixtures, runJob, worldSizes } from '../helpers/job.js';

const seed = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const runs = Number(process.env.FUZZ_RUNS ?? 1500);
const script = join(fixtures, 'fuzz', 'comms.mjs');

describe(`fuzzed communicator management (seed ${seed}, ${runs} cases per job)`, () => {
  for (const np of worldSizes) {
    it(`the same documented MPIError on every rank, new communicators as modelled, no context leaked, at np=${np}`, async () => {
      const r = await runJob(np, script, [String(seed), String(runs)], { timeoutSec: 120 });
      const replay = `replay: FUZZ_SEED=${seed} FUZZ_RUNS=${runs} node dist/cli.js -n ${np} ${script} ${seed} ${runs}`;
      expectPassed(r, { name: 'fuzz comms', np, unit: 'cases', count: runs, note: replay });
    });
  }
});
