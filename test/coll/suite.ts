/**
 * What every multi-rank collective suite does: run a rank script under the
 * real launcher at each world size (and once with small slots, so that
 * messages of a few KiB are already cut into many chunks, at odd lane
 * sizes), and require every rank to exit 0 after printing its summary.
 */
import { it } from 'vitest';

import { expectPassed, runJob, worldSizes } from '../helpers/job.js';

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
      expectPassed(r, { name, np });
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
