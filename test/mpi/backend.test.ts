/**
 * The mpi backend as a user meets it: which backend and library run, the
 * errors that say what was tried when no library fits (none installed, a
 * wrong NODEMPI_MPI_LIB, a launcher of the other family), and a job whose
 * rank dies or throws under mpirun ending instead of hanging.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

import { explain, fixtures, run, runJob, runSingleton, systemMpis, type JobResult } from '../helpers/job.js';

const script = (name: string) => join(fixtures, 'mpi', name);

interface Identity { backend: string; rank: number; size: number; sum: number; library: string; host: string; threadLevel: number | null }
function identities(r: JobResult): Identity[] {
  return r.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Identity).sort((a, b) => a.rank - b.rank);
}

// Runs `node script` with every MPI library of the machine hidden (bound
// over with /dev/null in a mount namespace of its own), as on a machine
// without MPI.
function withoutMpi(args: string[], env: Record<string, string>): Promise<JobResult> {
  const libs = execFileSync('ldconfig', ['-p'], { encoding: 'utf8' }).split('\n')
    .filter((l) => /\blib(mpi|mpich)\.so(\.\d+)? /.test(l)).map((l) => l.split('=> ')[1]!.trim());
  expect(libs.length, 'MPI libraries to hide (CI installs Open MPI and MPICH)').toBeGreaterThan(0);
  const hide = libs.map((l) => `mount --bind /dev/null '${l}'`).join(' && ');
  return run('unshare', ['-m', '--propagation', 'private', 'sh', '-c', `${hide} && exec "$@"`, 'sh', process.execPath, ...args],
    { env, limitMs: 60_000 });
}

describe('which backend runs', () => {
  for (const mpi of systemMpis) {
    it(`under ${mpi}'s launcher: mpi, one world, the library and the host named`, async () => {
      const r = await runJob(3, script('identity.mjs'), [], { launcher: mpi, timeoutSec: 60 });
      expect(r.status, explain(r)).toBe(0);
      const ids = identities(r);
      expect(ids.map((i) => i.rank), explain(r)).toEqual([0, 1, 2]);
      for (const i of ids) {
        // MPI_THREAD_FUNNELED unless NODEMPI_MPI_THREAD_LEVEL says otherwise.
        expect(i).toMatchObject({ backend: 'mpi', size: 3, sum: 6, threadLevel: 1 });
        expect(i.library).toMatch(mpi === 'openmpi' ? /Open MPI/ : /MPICH/);
        expect(i.host.length).toBeGreaterThan(0);
      }
    });
  }
  for (const mpi of systemMpis) {
    it(`under ${mpi}'s launcher with NODEMPI_MPI_THREAD_LEVEL=single: MPI_THREAD_SINGLE, one world`, async () => {
      const r = await runJob(2, script('identity.mjs'), [], { launcher: mpi, env: { NODEMPI_MPI_THREAD_LEVEL: 'single' }, timeoutSec: 60 });
      expect(r.status, explain(r)).toBe(0);
      expect(identities(r).map((i) => [i.rank, i.sum, i.threadLevel]), explain(r)).toEqual([[0, 3, 0], [1, 3, 0]]);
    });
  }
  it('an unknown NODEMPI_MPI_THREAD_LEVEL is an ERR_ARG that says what is allowed', async () => {
    const r = await runSingleton(script('identity.mjs'), [], { env: { NODEMPI_BACKEND: 'mpi', NODEMPI_MPI_THREAD_LEVEL: 'multiple' } });
    expect(r.status, explain(r)).not.toBe(0);
    expect(r.stderr).toContain("code: 'ERR_ARG'");
    expect(r.stderr).toContain('NODEMPI_MPI_THREAD_LEVEL must be "funneled" or "single", got "multiple"');
  });
  for (const mpi of systemMpis) {
    it(`under ${mpi}'s launcher, a NODEMPI_* value that does not parse: every rank refuses it at init, and the job ends`, async () => {
      const r = await runJob(2, script('identity.mjs'), [], { launcher: mpi, env: { NODEMPI_CHECK_SAME: 'yes' }, timeoutSec: 60 });
      expect(r.hung, explain(r)).toBe(false);
      expect(r.status, explain(r)).not.toBe(0);
      expect(r.stderr, explain(r)).toContain('NODEMPI_CHECK_SAME must be "0" or "1", got "yes"');
      expect(identities(r), explain(r)).toEqual([]);
    });
  }
  it('under the nodempi launcher and as plain node: shm', async () => {
    const r = await runJob(2, script('identity.mjs'), [], { timeoutSec: 60 });
    expect(r.status, explain(r)).toBe(0);
    expect(identities(r).map((i) => [i.backend, i.size, i.sum])).toEqual([['shm', 2, 3], ['shm', 2, 3]]);
    const s = await runSingleton(script('identity.mjs'));
    expect(identities(s).map((i) => [i.backend, i.size])).toEqual([['shm', 1]]);
  });
  it('NODEMPI_BACKEND=mpi makes a plain node process a world of one on the system MPI', async () => {
    const r = await runSingleton(script('identity.mjs'), [], { env: { NODEMPI_BACKEND: 'mpi' } });
    expect(r.status, explain(r)).toBe(0);
    expect(identities(r).map((i) => [i.backend, i.size])).toEqual([['mpi', 1]]);
  });
  it('an unknown NODEMPI_BACKEND is an ERR_ARG that says what is allowed', async () => {
    const r = await runSingleton(script('identity.mjs'), [], { env: { NODEMPI_BACKEND: 'tcp' } });
    expect(r.status, explain(r)).not.toBe(0);
    expect(r.stderr).toContain("code: 'ERR_ARG'");
    expect(r.stderr).toContain('NODEMPI_BACKEND must be "shm" or "mpi", got "tcp"');
  });
});

describe('when no library fits', () => {
  it('no MPI on the machine: one error that says what was tried and how to fix it; shm still works', async () => {
    const r = await withoutMpi([script('identity.mjs')], { NODEMPI_BACKEND: 'mpi' });
    expect(r.status, explain(r)).not.toBe(0);
    expect(r.stderr).toContain('found no MPI library it can load');
    expect(r.stderr).toContain('libmpi.so.40');
    expect(r.stderr).toContain('libmpich.so.12');
    expect(r.stderr).toContain('NODEMPI_MPI_LIB');
    const shm = await withoutMpi([script('identity.mjs')], {});
    expect(shm.status, explain(shm)).toBe(0);
    expect(identities(shm).map((i) => i.backend)).toEqual(['shm']);
  });
  it('a NODEMPI_MPI_LIB that does not exist, or is not MPI, is named with the reason', async () => {
    const missing = await runSingleton(script('identity.mjs'), [], { env: { NODEMPI_BACKEND: 'mpi', NODEMPI_MPI_LIB: '/nonexistent/libmpi.so' } });
    expect(missing.status, explain(missing)).not.toBe(0);
    expect(missing.stderr).toMatch(/\/nonexistent\/libmpi\.so: .*No such file/);
    const notMpi = await runSingleton(script('identity.mjs'), [], { env: { NODEMPI_BACKEND: 'mpi', NODEMPI_MPI_LIB: 'libz.so.1' } });
    expect(notMpi.status, explain(notMpi)).not.toBe(0);
    expect(notMpi.stderr).toContain('libz.so.1: loads, but is not an MPI library');
  });
  for (const [mpi, other, says] of [['openmpi', 'libmpich.so.12', "Open MPI's mpirun"], ['mpich', 'libmpi.so.40', "MPICH's mpiexec"]] as const) {
    it(`${mpi}'s launcher with the other family's library: an error on every rank, no hang, no worlds of one`, async () => {
      const r = await runJob(2, script('identity.mjs'), [], { launcher: mpi, env: { NODEMPI_MPI_LIB: other }, timeoutSec: 60 });
      expect(r.status, explain(r)).not.toBe(0);
      expect(r.hung, explain(r)).toBe(false);
      expect(r.stderr).toContain(says);
      expect(identities(r)).toEqual([]);
    });
  }
  it('srun without PMI (several tasks, no way to reach each other): the size check names srun --mpi', async () => {
    const r = await runSingleton(script('identity.mjs'), [], { env: { SLURM_PROCID: '0', SLURM_NTASKS: '2' } });
    expect(r.status, explain(r)).not.toBe(0);
    expect(r.stderr).toContain('the launcher started 2 processes');
    expect(r.stderr).toContain('--mpi=pmix');
  });
});

describe('a rank that ends the job', () => {
  for (const mpi of systemMpis) {
    for (const how of ['kill', 'throw']) {
      it(`under ${mpi}: rank 1 ${how === 'kill' ? 'SIGKILLed' : 'throwing'} in the middle of collectives ends the job`, async () => {
        const r = await runJob(3, script('die.mjs'), [how], { launcher: mpi, timeoutSec: 60 });
        expect(r.hung, explain(r)).toBe(false);
        expect(r.status, explain(r)).not.toBe(0);
        // The launcher's own limit (60 s) would mean a hang it had to end.
        expect(r.ms, explain(r)).toBeLessThan(30_000);
        if (how === 'throw') expect(r.stderr).toContain('rank 1 gives up in the middle of the job');
      });
    }
  }
});
