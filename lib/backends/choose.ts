/**
 * Which backend a process runs on, and which MPI library to try, decided
 * from its environment alone (no side effects, so tests can ask about any
 * environment).
 *
 * - NODEMPI_BACKEND=shm|mpi forces one.
 * - The nodempi launcher (and mpi.launch) set NODEMPI_SIZE: shm.
 * - An MPI launcher's variables mean mpi: Open MPI's mpirun sets
 *   OMPI_COMM_WORLD_SIZE; MPICH's Hydra (mpiexec) and Slurm's PMI-2 set
 *   PMI_RANK/PMI_SIZE; PMIx (srun --mpi=pmix, prterun) sets PMIX_RANK;
 *   srun itself sets SLURM_PROCID and SLURM_NTASKS.
 * - Otherwise (plain `node app.js`): shm, a world of one.
 */
import { setting } from '../settings.js';

/** The MPI launcher family whose variables a process has. */
export type Launcher = 'openmpi' | 'hydra' | 'pmix' | 'slurm';

export interface Choice {
  backend: 'shm' | 'mpi';
  /** Why, in words for messages ("mpirun (Open MPI) set OMPI_COMM_WORLD_SIZE"). */
  reason: string;
  /** The launcher seen, if any. */
  launcher: Launcher | null;
  /** The world size the launcher announced, when it says (else null). */
  expectedSize: number | null;
}

function positive(v: string | undefined): number | null {
  const n = Number(v);
  return v !== undefined && Number.isInteger(n) && n > 0 ? n : null;
}

/** The MPI launcher that started this process, from its variables. */
export function detectLauncher(env: NodeJS.ProcessEnv): { launcher: Launcher; reason: string; expectedSize: number | null } | null {
  if (env.OMPI_COMM_WORLD_SIZE !== undefined) {
    return { launcher: 'openmpi', reason: 'mpirun (Open MPI) set OMPI_COMM_WORLD_SIZE', expectedSize: positive(env.OMPI_COMM_WORLD_SIZE) };
  }
  if (env.PMI_RANK !== undefined || env.PMI_SIZE !== undefined) {
    const slurm = env.SLURM_PROCID !== undefined;
    return {
      launcher: slurm ? 'slurm' : 'hydra',
      reason: slurm ? 'srun set PMI_RANK (PMI-2)' : 'mpiexec (MPICH Hydra) set PMI_RANK',
      expectedSize: positive(env.PMI_SIZE) ?? positive(env.SLURM_NTASKS),
    };
  }
  if (env.PMIX_RANK !== undefined) {
    return { launcher: 'pmix', reason: 'a PMIx launcher (srun --mpi=pmix, prterun) set PMIX_RANK', expectedSize: positive(env.SLURM_NTASKS) };
  }
  if (env.SLURM_PROCID !== undefined && (positive(env.SLURM_NTASKS) ?? 1) > 1) {
    return { launcher: 'slurm', reason: `srun started ${env.SLURM_NTASKS} tasks (SLURM_NTASKS)`, expectedSize: positive(env.SLURM_NTASKS) };
  }
  return null;
}

/** The backend for a process with environment `env`. Throws ERR_ARG for a bad NODEMPI_BACKEND. */
export function chooseBackend(env: NodeJS.ProcessEnv = process.env): Choice {
  const forced = setting(env, 'NODEMPI_BACKEND');
  const seen = detectLauncher(env);
  if (forced !== undefined) {
    return { backend: forced, reason: `NODEMPI_BACKEND=${forced}`, launcher: seen?.launcher ?? null, expectedSize: seen?.expectedSize ?? null };
  }
  if (env.NODEMPI_SIZE !== undefined) return { backend: 'shm', reason: 'the nodempi launcher set NODEMPI_SIZE', launcher: null, expectedSize: null };
  if (seen) return { backend: 'mpi', ...seen };
  return { backend: 'shm', reason: 'no launcher: a world of one', launcher: null, expectedSize: null };
}

/**
 * The thread level the mpi backend asks MPI_Init_thread for, from
 * NODEMPI_MPI_THREAD_LEVEL: 1, MPI_THREAD_FUNNELED (default: only the
 * thread that opened MPI calls it, while Node's other threads run), or 0,
 * MPI_THREAD_SINGLE with `single` (README "Across machines" says what it
 * saves and what it risks). Throws ERR_ARG for any other value.
 */
export function threadLevel(env: NodeJS.ProcessEnv = process.env): 0 | 1 {
  return setting(env, 'NODEMPI_MPI_THREAD_LEVEL') === 'single' ? 0 : 1;
}

// Library file names by ABI, as the dynamic linker finds them: Open MPI
// 3 to 5; MPICH; Intel MPI and others of MPICH's ABI; the unversioned
// development link last.
const OPEN_MPI = ['libmpi.so.40'];
const MPICH = ['libmpich.so.12', 'libmpi.so.12'];

/**
 * The libraries to try, in order: NODEMPI_MPI_LIB alone when set; else the
 * ABI the launcher belongs to first.
 */
export function libraryCandidates(env: NodeJS.ProcessEnv, launcher: Launcher | null): string[] {
  const named = env.NODEMPI_MPI_LIB;
  if (named) return [named];
  const mpichFirst = launcher === 'hydra' || launcher === 'slurm';
  return [...(mpichFirst ? [...MPICH, ...OPEN_MPI] : [...OPEN_MPI, ...MPICH]), 'libmpi.so'];
}

/**
 * Whether a library of ABI `abi` can serve a process started by
 * `launcher`: Open MPI's mpirun speaks to Open MPI only, Hydra to the
 * MPICH family only. A library of the wrong family would start as a
 * singleton (N worlds of one) or wait for a server that is not there.
 * PMIx and Slurm serve either; the world size decides after init.
 */
export function launcherMismatch(launcher: Launcher | null, abi: string): string | null {
  if (launcher === 'openmpi' && abi !== 'Open MPI') return "Open MPI's mpirun started this process";
  if (launcher === 'hydra' && abi !== 'MPICH') return "MPICH's mpiexec (Hydra) started this process";
  return null;
}

/**
 * What to change when the library sees a world smaller than the one the
 * launcher started (each rank alone): said for the launcher at hand.
 */
export function worldSizeAdvice(env: NodeJS.ProcessEnv, launcher: Launcher | null, abi: string): string {
  if (launcher === 'slurm' && env.PMI_RANK === undefined && env.PMI_SIZE === undefined) {
    return 'srun gave the tasks no PMI to find each other (srun --mpi=none, or MpiDefault=none in slurm.conf): ' +
      'start them with srun --mpi=pmix for Open MPI, or srun --mpi=pmi2 for MPICH (srun --mpi=list shows what this Slurm offers).';
  }
  if (launcher === 'pmix' && abi !== 'Open MPI') {
    return `srun --mpi=pmix (PMIx) started them, which this ${abi} library does not join: ` +
      'start MPICH jobs with srun --mpi=pmi2 (or mpiexec), or set NODEMPI_MPI_LIB to an Open MPI library (libmpi.so.40).';
  }
  return 'the library does not belong to that launcher, or the launcher gave it no way to reach the others ' +
    '(srun needs --mpi=pmix for Open MPI, --mpi=pmi2 for MPICH). Use the launcher of the library, or NODEMPI_MPI_LIB for the library of the launcher.';
}
