/**
 * The mpi backend across hosts: two emulated hosts (network, UTS and
 * mount namespaces on a private bridge, test/cluster/up.sh) and a
 * two-node Slurm cluster on them; jobs started every way cluster users
 * start theirs, at np 2 and 4 with ranks on both hosts. Each job checks
 * that splitType(COMM_TYPE_SHARED) gives one communicator per host and
 * processorName() names the host (fixtures/mpi/hosts.mjs), then runs a
 * share of the mpi backend's multi-rank fixtures (test/mpi/suite.ts has
 * them all on one host): blocking, nonblocking and persistent
 * collectives, derived datatypes, intercommunicators and object
 * collectives, each under both MPIs, with the exact results the fixtures
 * check. Needs root and Debian's Slurm and MPIs (.ci/run installs them).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { expectPassed, fixtures } from '../helpers/job.js';
import { down, launchers, missing, runOnCluster, up, type Bed, type ClusterLauncher } from './bed.js';

interface Fixture { script: string; args?: string[]; name: string }
const hosts: Fixture = { script: 'mpi/hosts.mjs', args: ['2'], name: 'hosts' };
const blocking = (c: string): Fixture => ({ script: `coll/${c}.mjs`, name: c });
const nonblocking: Fixture = { script: 'nonblocking/kinds.mjs', args: ['0,7,1500'], name: 'nonblocking kinds' };
const persistent: Fixture = { script: 'nonblocking/persistent.mjs', args: ['50'], name: 'persistent' };
const datatypes: Fixture = { script: 'derived-datatype-coll/move.mjs', args: ['v', '1'], name: 'dtcoll move v x1 main' };
const intercomm: Fixture = { script: 'comm/intercomm.mjs', args: ['block', 'coll'], name: 'intercomm block coll' };
const objects: Fixture = { script: 'objects/collectives.mjs', name: 'objects all' };

// Each launcher runs the hosts check and a share of the rest, so that
// every family runs under each MPI and the file stays within minutes on
// two cores.
const plan: Record<ClusterLauncher, Fixture[]> = {
  'mpirun': [hosts, blocking('bcast'), persistent, datatypes],
  'mpiexec': [hosts, blocking('gather'), nonblocking, intercomm, objects],
  'srun-pmix': [hosts, nonblocking, intercomm, objects],
  'srun-pmi2': [hosts, persistent, datatypes],
  'salloc-mpirun': [hosts, blocking('scatter')],
  'sbatch': [hosts, objects],
};

const why = missing();
// CI installs everything the test bed needs: there, a missing piece fails.
const skip = why !== null && !process.env.CI;

describe.skipIf(skip)('jobs across two emulated hosts', () => {
  let bed: Bed;
  beforeAll(async () => {
    if (why) throw new Error(`the test bed cannot run: ${why}`);
    bed = await up();
    expect(bed.hosts).toHaveLength(2);
  }, 120_000);
  afterAll(async () => {
    const r = await down();
    expect(r.status, r.stderr).toBe(0);
  }, 120_000);

  for (const how of launchers) {
    describe(how, () => {
      for (const np of [2, 4]) {
        for (const f of plan[how]) {
          it(`${f.script} ${(f.args ?? []).join(' ')} at np ${np}`, async () => {
            const r = await runOnCluster(bed, how, np, join(fixtures, f.script), f.args ?? [], { timeoutSec: 150 });
            expectPassed(r, { name: f.name, np });
          });
        }
      }
    });
  }
});
