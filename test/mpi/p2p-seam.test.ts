/**
 * The mpi backend's point-to-point seam (lib/p2p/backend.ts), driven
 * directly by test/fixtures/p2p/mpi-seam.mjs under each system MPI's
 * launcher at every world size: ordering, ANY_SOURCE / ANY_TAG, an 8 MiB
 * message, truncation, probes, matched probes and an intercommunicator,
 * with exact values.
 */
import { describe, it } from 'vitest';

import { expectPassed, runJob, systemMpis, worldSizes } from '../helpers/job.js';

const parts = 'order,any,large,truncate,probe,matched,inter';

describe('p2p seam on the mpi backend', () => {
  for (const mpi of systemMpis) {
    for (const np of worldSizes) {
      it(`under ${mpi} at np=${np}`, async () => {
        const r = await runJob(np, 'p2p/mpi-seam.mjs', [parts], { launcher: mpi, timeoutSec: 120 });
        expectPassed(r, { name: `p2p seam ${parts}`, np });
      });
    }
  }
});
