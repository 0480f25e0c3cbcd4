/**
 * Which backend a process runs on, and which MPI libraries it tries, from
 * its environment alone (lib/backends/choose.ts): every launcher family,
 * the overrides, and the combinations that cannot work.
 */
import { describe, expect, it } from 'vitest';

import { chooseBackend, detectLauncher, launcherMismatch, libraryCandidates, worldSizeAdvice } from '../../dist/backends/choose.js';

describe('choosing the backend', () => {
  it('plain node is a world of one on shm', () => {
    expect(chooseBackend({})).toMatchObject({ backend: 'shm', launcher: null, expectedSize: null });
  });
  it('the nodempi launcher keeps shm, even with an MPI launcher around it', () => {
    expect(chooseBackend({ NODEMPI_SIZE: '4', NODEMPI_RANK: '1' }).backend).toBe('shm');
    expect(chooseBackend({ NODEMPI_SIZE: '4', OMPI_COMM_WORLD_SIZE: '2' }).backend).toBe('shm');
  });
  it("Open MPI's mpirun means mpi over Open MPI, with the size it announced", () => {
    const c = chooseBackend({ OMPI_COMM_WORLD_SIZE: '8', OMPI_COMM_WORLD_RANK: '3' });
    expect(c).toMatchObject({ backend: 'mpi', launcher: 'openmpi', expectedSize: 8 });
    expect(c.reason).toContain('OMPI_COMM_WORLD_SIZE');
  });
  it("MPICH's Hydra sets PMI_RANK and PMI_SIZE", () => {
    expect(chooseBackend({ PMI_RANK: '0', PMI_SIZE: '3' })).toMatchObject({ backend: 'mpi', launcher: 'hydra', expectedSize: 3 });
  });
  it('srun with PMI-2 is told apart from Hydra by SLURM_PROCID', () => {
    expect(chooseBackend({ PMI_RANK: '1', PMI_SIZE: '4', SLURM_PROCID: '1', SLURM_NTASKS: '4' }))
      .toMatchObject({ backend: 'mpi', launcher: 'slurm', expectedSize: 4 });
  });
  it('PMIx (srun --mpi=pmix, prterun) takes the size from Slurm when it says', () => {
    expect(chooseBackend({ PMIX_RANK: '0', SLURM_NTASKS: '2' })).toMatchObject({ backend: 'mpi', launcher: 'pmix', expectedSize: 2 });
    expect(chooseBackend({ PMIX_RANK: '0' })).toMatchObject({ backend: 'mpi', launcher: 'pmix', expectedSize: null });
  });
  it('srun without PMI still means mpi when it started several tasks, so that the size check can object', () => {
    expect(chooseBackend({ SLURM_PROCID: '0', SLURM_NTASKS: '2' })).toMatchObject({ backend: 'mpi', launcher: 'slurm', expectedSize: 2 });
    expect(chooseBackend({ SLURM_PROCID: '0', SLURM_NTASKS: '1' }).backend).toBe('shm');
  });
  it('NODEMPI_BACKEND forces either, and an unknown value is an ERR_ARG', () => {
    expect(chooseBackend({ NODEMPI_BACKEND: 'mpi' })).toMatchObject({ backend: 'mpi', reason: 'NODEMPI_BACKEND=mpi' });
    expect(chooseBackend({ NODEMPI_BACKEND: 'shm', OMPI_COMM_WORLD_SIZE: '2' }).backend).toBe('shm');
    expect(chooseBackend({ NODEMPI_BACKEND: '' }).backend).toBe('shm');
    expect(() => chooseBackend({ NODEMPI_BACKEND: 'tcp' })).toThrow(/NODEMPI_BACKEND must be "shm" or "mpi", got "tcp"/);
  });
  it('detectLauncher finds nothing in a plain environment', () => {
    expect(detectLauncher({})).toBe(null);
  });
});

describe('choosing the library', () => {
  it('NODEMPI_MPI_LIB alone when set', () => {
    expect(libraryCandidates({ NODEMPI_MPI_LIB: '/opt/mpi/lib/libmpi.so' }, 'openmpi')).toEqual(['/opt/mpi/lib/libmpi.so']);
  });
  it("the launcher's family first", () => {
    expect(libraryCandidates({}, 'openmpi')[0]).toBe('libmpi.so.40');
    expect(libraryCandidates({}, 'hydra')[0]).toBe('libmpich.so.12');
    expect(libraryCandidates({}, 'slurm')[0]).toBe('libmpich.so.12');
    expect(libraryCandidates({}, null)).toEqual(['libmpi.so.40', 'libmpich.so.12', 'libmpi.so.12', 'libmpi.so']);
  });
  it('a library of the other family than the launcher is refused before MPI_Init', () => {
    expect(launcherMismatch('openmpi', 'MPICH')).toMatch(/Open MPI's mpirun/);
    expect(launcherMismatch('hydra', 'Open MPI')).toMatch(/MPICH's mpiexec/);
    expect(launcherMismatch('openmpi', 'Open MPI')).toBe(null);
    expect(launcherMismatch('pmix', 'MPICH')).toBe(null);
    expect(launcherMismatch(null, 'MPICH')).toBe(null);
  });
  it('a world smaller than the launcher started: the advice fits the launcher', () => {
    // srun --mpi=none sets no PMI variable.
    expect(worldSizeAdvice({ SLURM_PROCID: '0', SLURM_NTASKS: '2' }, 'slurm', 'MPICH')).toMatch(/no PMI .*srun --mpi=pmix for Open MPI, or srun --mpi=pmi2 for MPICH/);
    expect(worldSizeAdvice({ PMIX_RANK: '0' }, 'pmix', 'MPICH')).toMatch(/this MPICH library does not join: start MPICH jobs with srun --mpi=pmi2/);
    expect(worldSizeAdvice({ PMI_RANK: '0', SLURM_PROCID: '0' }, 'slurm', 'Open MPI')).toMatch(/srun needs --mpi=pmix for Open MPI/);
  });
});
