/**
 * MPI's life cycle for this process: attaching to the launcher's job (or
 * becoming a singleton), finalizing at exit, timers and abort.
 */
import { MPIError } from './errors.js';
import { native } from './native.js';

let initialized = false;
let jobRank = 0;
let jobSize = 1;
let finalized = false;

native.setErrorFactory((errorClass, message, cause) => MPIError.fromClass(errorClass, message, cause));

// A rank dies with its launcher from the moment it loads nodempi, whether or
// not it ever calls into MPI (a rank busy in a loop would not notice).
{
  const launcher = Number(process.env.NODEMPI_LAUNCHER_PID);
  if (process.env.NODEMPI_SIZE !== undefined && Number.isInteger(launcher) && launcher > 0) native.watchLauncher(launcher);
}

/** The rank, size and segment descriptor the launcher passed, or a singleton. */
export function jobEnvironment(env: NodeJS.ProcessEnv = process.env): { rank: number; size: number; fd: number } {
  const size = env.NODEMPI_SIZE;
  if (size === undefined) return { rank: 0, size: 1, fd: -1 };
  const r = Number(env.NODEMPI_RANK), n = Number(size), fd = Number(env.NODEMPI_FD ?? -1);
  if (!Number.isInteger(r) || !Number.isInteger(n) || n < 1 || r < 0 || r >= n || !Number.isInteger(fd)) {
    throw new MPIError('ERR_INTERN', `init: NODEMPI_RANK=${env.NODEMPI_RANK} NODEMPI_SIZE=${size} do not describe a rank of a job`);
  }
  if (n > 1 && fd < 0) {
    throw new MPIError('ERR_INTERN', 'init: a job of several ranks must be started by the nodempi launcher (NODEMPI_FD is missing)');
  }
  return { rank: r, size: n, fd };
}

/** @internal Initialises on first use; throws after finalize. */
export function ensureInit(): void {
  if (initialized) {
    if (finalized) throw new MPIError('ERR_OTHER', 'MPI has been finalized; no MPI call may follow finalize()');
    return;
  }
  const job = jobEnvironment();
  native.init(job.rank, job.size, job.fd);
  jobRank = job.rank;
  jobSize = job.size;
  initialized = true;
  process.once('exit', finalize);
}

/** @internal This process's rank in COMM_WORLD (initialising MPI if needed). */
export function worldRank(): number {
  ensureInit();
  return jobRank;
}

/** @internal The number of ranks in COMM_WORLD. */
export function worldSize(): number {
  ensureInit();
  return jobSize;
}

/** MPI_Initialized. */
export function isInitialized(): boolean {
  return initialized;
}

/** MPI_Finalized. */
export function isFinalized(): boolean {
  return finalized;
}

/** MPI_Finalize: releases the job's shared memory. Also runs at process exit. */
export function finalize(): void {
  if (!initialized || finalized) return;
  finalized = true;
  native.finalize();
}

const t0 = process.hrtime.bigint();

/** MPI_Wtime: seconds since an arbitrary point, monotonic, nanosecond resolution. */
export function wtime(): number {
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

/** MPI_Wtick: the resolution of wtime() in seconds. */
export function wtick(): number {
  return 1e-9;
}

/** @internal Ends this rank and, through the job's shared state, every other. */
export function abortJob(code: number): never {
  if (initialized && !finalized) native.abort();
  process.exit(code);
}
