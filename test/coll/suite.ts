/**
 * What every multi-rank collective suite does: run a rank script under the
 * real launcher at each world size (and once with small slots, so that
 * messages of a few KiB are already cut into many chunks, at odd lane
 * sizes), and require every rank to exit 0 after printing its summary.
 */
import { join } from 'node:path';
import { expect, it } from 'vitest';

import { explain, fixtures, run, runJob, worldSizes, type JobResult } from '../helpers/job.js';

/** Exit status 0, and every rank's done() line (so no rank quit early). */
export function expectPassed(r: JobResult, name: string, np: number): void {
  expect(r.status, explain(r)).toBe(0);
  for (let rank = 0; rank < np; rank++) {
    expect(r.stdout, `rank ${rank} printed no summary\n${explain(r)}`).toMatch(new RegExp(`^${name}: rank ${rank} passed \\d+ checks$`, 'm'));
  }
}

/** Slot size (KiB) of the small-slot run: 5 KiB halves give odd lanes at np=3. */
export const SMALL_SLOT_KB = '5';

export interface SuiteOptions {
  /** Arguments for the rank script (computed per run, e.g. a fresh directory). */
  args?: () => string[];
  /** Clean-up after a run. */
  after?: (args: string[]) => void;
  /** Summary name printed by done(); defaults to the script name. */
  name?: string;
  /** Also run at np=3 with NODEMPI_SLOT_KB=5. */
  smallSlots?: boolean;
}

/** One `it` per world size (plus the small-slot run) for `coll/<script>.mjs`. */
export function collectiveSuite(script: string, what: string, opts: SuiteOptions = {}): void {
  const name = opts.name ?? script;
  const once = async (np: number, env?: Record<string, string>) => {
    const args = opts.args?.() ?? [];
    try {
      const r = await runJob(np, `coll/${script}.mjs`, args, { env });
      expectPassed(r, name, np);
    } finally {
      opts.after?.(args);
    }
  };
  for (const np of worldSizes) {
    it(`${what} at np=${np}`, () => once(np));
  }
  if (opts.smallSlots ?? true) {
    it(`${what} with ${SMALL_SLOT_KB} KiB slots at np=3`, () => once(3, { NODEMPI_SLOT_KB: SMALL_SLOT_KB }));
  }
}

/** Runs `coll/<script>.mjs` with plain node: a world of one, no launcher. */
export async function runSingleton(script: string, args: string[] = []): Promise<JobResult> {
  const env: Record<string, string> = {};
  return run(process.execPath, [join(fixtures, 'coll', `${script}.mjs`), ...args], env);
}
