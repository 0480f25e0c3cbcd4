/**
 * The multi-rank bugs the fuzzers found, each as a small deterministic case
 * (test/fixtures/fuzz/found.mjs; the single-process ones are at the end of
 * local.test.ts).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

import { expectPassed, explain, fixtures, runJob } from '../helpers/job.js';

describe('found by fuzzing, on intercommunicators and in messages', () => {
  for (const np of [2, 3, 4]) {
    it(`no hang when idle ranks pass another op or the root truncates, leader failures reach the group, errors name the call (np=${np})`, async () => {
      const r = await runJob(np, join(fixtures, 'fuzz', 'found.mjs'), [], { timeoutSec: 60 });
      expectPassed(r, { name: 'found', np });
    });
  }
});

// Found while fuzzing: intercommunicator reductions exchanged their vectors
// with an alltoallv whose signature carried no op or datatype, so ranks that
// disagreed on them were never told.
describe('intercommunicator reductions compare ops and datatypes', () => {
  for (const np of [2, 3, 4]) {
    it(`ranks that pass different ops or datatypes get ERR_NOT_SAME, idle ranks any op (np=${np})`, async () => {
      const r = await runJob(np, join(fixtures, 'fuzz', 'core-op-mismatch.mjs'), [], { timeoutSec: 30 });
      expect(r.status, explain(r)).toBe(0);
    });
  }
});
