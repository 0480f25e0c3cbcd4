/**
 * The mpi backend across hosts: two emulated hosts (network, UTS and
 * mount namespaces on a private bridge, test/cluster/up.sh) and a
 * two-node Slurm cluster on them; jobs started every way cluster users
 * start theirs, at np 2 and 4 with ranks on both hosts. Each job checks
 * that splitType(COMM_TYPE_SHARED) gives one communicator per host and
 * processorName() names the host (fixtures/mpi/hosts.mjs), then runs a
 * share of the mpi backend's multi-rank fixtures (test/mpi/suite.ts has
 * them all on one host): blocking, nonblocking and persistent
 * collectives, every predefined op on every type (reduce) and user ops,
 * derived datatypes, split communicators, intercommunicators, object
 * collectives and point-to-point, each under both MPIs, with the exact
 * results the fixtures check. Needs root and Debian's Slurm and MPIs
 * (.ci/run installs them).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { explain, expectPassed, fixtures } from '../helpers/job.js';
import {
  clusterJob, down, launchers, missing, onHostRun, onHostStart, resumeNode, runOnCluster, sbatchLog, setLink, up, type Bed,
  type ClusterLauncher,
} from './bed.js';

interface Fixture { script: string; args?: string[]; name: string }
const hosts: Fixture = { script: 'mpi/hosts.mjs', args: ['2'], name: 'hosts' };
const blocking = (c: string): Fixture => ({ script: `coll/${c}.mjs`, name: c });
const nonblocking: Fixture = { script: 'nonblocking/kinds.mjs', args: ['0,7,1500'], name: 'nonblocking kinds' };
const persistent: Fixture = { script: 'nonblocking/persistent.mjs', args: ['20'], name: 'persistent' };
const datatypes: Fixture = { script: 'derived-datatype-coll/move.mjs', args: ['v', '1'], name: 'dtcoll move v x1 main' };
const intercomm: Fixture = { script: 'comm/intercomm.mjs', args: ['block', 'coll'], name: 'intercomm block coll' };
const objects: Fixture = { script: 'objects/collectives.mjs', name: 'objects all' };
const messages: Fixture = { script: 'p2p/messages.mjs', name: 'p2p all' };
const userop: Fixture = { script: 'ops/userop.mjs', name: 'userop' };
const split: Fixture = { script: 'comm/split.mjs', args: ['main'], name: 'split main' };

// Each launcher runs the hosts check and a share of the rest, so that
// every family runs under each MPI and the file stays within minutes on
// two cores.
const plan: Record<ClusterLauncher, Fixture[]> = {
  'mpirun': [hosts, blocking('bcast'), blocking('reduce'), persistent, datatypes, split, messages],
  'mpiexec': [hosts, blocking('gather'), blocking('reduce'), nonblocking, intercomm, userop, objects],
  'srun-pmix': [hosts, nonblocking, intercomm, userop, objects],
  'srun-pmi2': [hosts, persistent, datatypes, split, messages],
  'salloc-mpirun': [hosts, blocking('scatter')],
  'sbatch': [hosts, objects],
};

// The README's test command installs everything the test bed needs; a
// missing piece fails the file, saying which.
const why = missing();

describe('jobs across two emulated hosts', () => {
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

  // Each rank of these stops with an error (the same on every rank), the
  // job ends, and no rank runs as a world of its own (identity.mjs prints
  // its world after an allreduce).
  describe('wrong combinations end with one error, never worlds of one or a hang', () => {
    const identity = join(fixtures, 'mpi', 'identity.mjs');
    const srun = (mpi: string, ...argv: string[]) => ['srun', '-N', '2', '-n', '2', `--mpi=${mpi}`, '--kill-on-bad-exit=1', '--time=2', ...argv];
    const cases: { name: string; argv: string[]; env?: Record<string, string>; says: string }[] = [
      {
        name: 'srun --mpi=pmix with an MPICH library',
        argv: srun('pmix', process.execPath, identity), env: { NODEMPI_MPI_LIB: 'libmpich.so.12' },
        says: 'srun --mpi=pmix (PMIx) started them, which this MPICH library does not join: start MPICH jobs with srun --mpi=pmi2',
      },
      {
        name: 'srun --mpi=none',
        argv: srun('none', process.execPath, identity),
        says: 'srun gave the tasks no PMI to find each other (srun --mpi=none, or MpiDefault=none in slurm.conf): start them with srun --mpi=pmix',
      },
      {
        // Debian's Open MPI has no PMI-1/PMI-2 component: refused before
        // MPI_Init, whose own message srun often cuts short.
        name: 'srun --mpi=none with Open MPI',
        argv: srun('none', process.execPath, identity), env: { NODEMPI_MPI_LIB: 'libmpi.so.40' },
        says: 'joins a Slurm job through PMIx only, as built here (no PMI-1/PMI-2 component in',
      },
      {
        name: 'Open MPI under srun --mpi=pmi2',
        argv: srun('pmi2', process.execPath, identity), env: { NODEMPI_MPI_LIB: 'libmpi.so.40' },
        says: 'start Open MPI jobs with srun --mpi=pmix, or with mpirun inside salloc or sbatch; srun --mpi=pmi2 is for MPICH',
      },
      {
        // MPICH on the second host, Open MPI on the first: the MPICH rank
        // stops; the Open MPI rank would wait in MPI_Init for it, and
        // srun's --kill-on-bad-exit ends it.
        name: 'a library that differs between hosts',
        argv: srun('pmix', 'sh', '-c', `[ "$(hostname)" = node2 ] && export NODEMPI_MPI_LIB=libmpich.so.12; exec "$0" "$@"`, process.execPath, identity),
        says: 'which this MPICH library does not join',
      },
    ];
    for (const c of cases) {
      it(c.name, async () => {
        const r = await onHostRun(bed, bed.hosts[0]!, c.argv, c.env, 90_000);
        expect(r.hung, explain(r)).toBe(false);
        expect(r.status, explain(r)).not.toBe(0);
        expect(r.stdout.split('\n').filter((l) => l.startsWith('{')), explain(r)).toEqual([]);
        expect(r.stderr.replace(/\s+/g, ' '), explain(r)).toContain(c.says);
      });
    }
  });

  // Faults on the second host while the ranks are inside collectives. The
  // ranks are placed so that rank 1 runs on node2 under every launcher.
  describe('faults across hosts', () => {
    // How each launcher names the rank that died and its host.
    const names: Partial<Record<ClusterLauncher, RegExp>> = {
      'mpirun': /process rank 1 with PID \d+ on node node2 exited on signal 9/,
      // Hydra names the host and the PID, not the rank.
      'mpiexec': /PID \d+ RUNNING AT node2\s+=\s+EXIT CODE: 9/,
      'srun-pmix': /node2: task 1: Killed/,
      'srun-pmi2': /node2: task 1: Killed/,
    };
    for (const [how, says] of Object.entries(names) as [ClusterLauncher, RegExp][]) {
      it(`${how}: rank 1 SIGKILLed on node2 in the middle of allreduces ends the job, naming it`, async () => {
        const r = await runOnCluster(bed, how, 2, join(fixtures, 'mpi', 'die.mjs'), ['kill'], { timeoutSec: 60 });
        expect(r.hung, explain(r)).toBe(false);
        expect(r.status, explain(r)).not.toBe(0);
        // Well before the launcher's own limit (60 s), which would mean a hang.
        expect(r.ms, explain(r)).toBeLessThan(15_000);
        expect(r.stdout + r.stderr, explain(r)).toMatch(says);
      });
    }

    // node2's link goes down while both ranks loop in allreduce (spin.mjs
    // checks every result). Neither MPI notices a silent peer by itself:
    // mpirun's --timeout and MPIEXEC_TIMEOUT end the job (20 s here, room for a slow start);
    // under Slurm, slurmctld declares node2 failed after SlurmdTimeout
    // (30 s, test/cluster/up.sh) and ends the step; inside salloc and
    // sbatch, mpirun's --timeout and MPIEXEC_TIMEOUT come first
    // (test/cluster/README.md has the times measured).
    const cut: [ClusterLauncher, number, RegExp][] = [
      ['mpirun', 20, /--timeout/],
      ['mpiexec', 20, /APPLICATION TIMED OUT, TIMEOUT = 20s/],
      ['srun-pmix', 120, /Node failure on node2/],
      ['srun-pmi2', 120, /Node failure on node2/],
      ['salloc-mpirun', 20, /--timeout/],
      ['sbatch', 20, /APPLICATION TIMED OUT, TIMEOUT = 20s/],
    ];
    for (const [how, timeoutSec, says] of cut) {
      it(`${how}: node2's link down in the middle of allreduces ends the job with an error, no result`, async () => {
        const job = clusterJob(bed, how, 2, timeoutSec, join(fixtures, 'mpi', 'spin.mjs'), ['600']);
        const started = onHostStart(bed, bed.hosts[0]!, job.argv, job.env, (timeoutSec + 60) * 1000);
        // An sbatch job's ranks write to its output file.
        const output = () => (how === 'sbatch' ? sbatchLog(bed, started.stdout()) : started.stdout());
        try {
          for (let i = 0; i < 600 && !output().includes('running on 2 ranks'); i++) await new Promise((f) => setTimeout(f, 100));
          expect(output(), 'the ranks never met').toContain('running on 2 ranks');
          await setLink(bed, 'node2', 'down');
          const r = await started.done;
          if (how === 'sbatch') r.stdout += sbatchLog(bed, r.stdout);
          expect(r.hung, explain(r)).toBe(false);
          expect(r.status, explain(r)).not.toBe(0);
          expect(r.stdout, explain(r)).not.toMatch(/^spin: rank/m);
          expect(r.stdout + r.stderr, explain(r)).toMatch(says);
        } finally {
          await setLink(bed, 'node2', 'up');
          await resumeNode(bed, 'node2');
        }
      });
    }
  });
});
