/**
 * MPI's life cycle for this process: choosing the backend, joining the job
 * (or becoming a singleton), finalizing at exit, timers and abort.
 */
import { writeSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';

import { backend as active, setBackend } from './backends/active.js';
import { chooseBackend, detectLauncher } from './backends/choose.js';
import { mpi } from './backends/mpi.js';
import { block, WTIME } from './block.js';
import { MPIError } from './errors.js';
import { native } from './native.js';
import { refuseBadSettings } from './settings.js';

let initialized = false;
let jobRank = 0;
let jobSize = 1;
let finalized = false;

native.setErrorFactory((errorClass, message, cause) => MPIError.fromClass(errorClass, message, cause));

// A rank dies with its launcher from the moment it loads nodempi, whether or
// not it ever calls into MPI (a rank busy in a loop would not notice).
{
  const launcher = Number(process.env.NODEMPI_LAUNCHER_PID);
  if (process.env.NODEMPI_SIZE !== undefined && Number.isInteger(launcher) && launcher > 0) {
    native.watchLauncher(launcher);
    if (isMainThread) process.on('uncaughtExceptionMonitor', stoppedByPeer);
  }
}

// When one rank fails, every other rank's collective throws ERR_PROC_FAILED,
// and left uncaught each would print a stack trace of its own, burying the
// one that matters (the failing rank's, which the launcher reports). A rank
// of the nodempi launcher says it in one line instead, and ends as Node
// would have (status 1). Not where the program handles uncaught exceptions
// itself.
function stoppedByPeer(err: unknown): void {
  if (!(err instanceof MPIError) || err.code !== 'ERR_PROC_FAILED') return;
  if (process.listenerCount('uncaughtException') > 0 || process.hasUncaughtExceptionCaptureCallback()) return;
  writeSync(2, `nodempi: rank ${process.env.NODEMPI_RANK} stopped: ${err.message} (uncaught ${err.code})\n`);
  process.exit(1);
}

/** @internal Initialises on first use; throws after finalize. */
export function ensureInit(): void {
  if (initialized) {
    if (finalized) throw new MPIError('ERR_OTHER', 'MPI has been finalized; no MPI call may follow finalize()');
    return;
  }
  // Every bad setting in one error, NODEMPI_BACKEND's among them.
  refuseBadSettings('init', process.env, native.settingsErrors());
  const choice = chooseBackend();
  if (choice.backend === 'mpi') setBackend(mpi);
  const job = active.runtime.init();
  const seen = choice.backend === 'shm' && process.env.NODEMPI_SIZE === undefined ? detectLauncher(process.env) : null;
  if (seen) {
    // An MPI launcher's processes, each a world of one: hardly what was meant.
    process.emitWarning(`${seen.reason}, but NODEMPI_BACKEND=shm makes this process a world of one. ` +
      'Unset NODEMPI_BACKEND to run over the system MPI.', { code: 'NODEMPI_LAUNCHER_IGNORED' });
  }
  backend = active.name;
  jobRank = job.rank;
  jobSize = job.size;
  initialized = true;
  process.once('exit', atExit);
}

function atExit(code: number): void {
  if (finalized) return;
  finalized = true;
  active.runtime.exit(code);
}

/**
 * Which backend runs this process's communication: 'shm' (nodempi's shared
 * memory, one machine) or 'mpi' (the system's MPI library), as chosen from
 * the environment (lib/backends/choose.ts); fixed once initialised.
 */
export let backend: 'shm' | 'mpi' = (() => {
  try {
    return chooseBackend().backend;
  } catch {
    return 'shm';  // a bad NODEMPI_BACKEND: init() says so
  }
})();

/** MPI_Get_library_version: the library behind the backend. */
export function libraryVersion(): string {
  ensureInit();
  return active.runtime.libraryVersion();
}

/** MPI_Get_processor_name: the host this rank runs on. */
export function processorName(): string {
  ensureInit();
  return active.runtime.processorName();
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
  active.runtime.finalize();
}

/** MPI_Wtime: seconds since an arbitrary point, monotonic, nanosecond resolution. */
export function wtime(): number {
  // Read through the call block: process.hrtime.bigint() made two BigInts
  // a call (bench/CORE.md, "wtime").
  native.wtime();
  return block[WTIME]!;
}

/** MPI_Wtick: the resolution of wtime() in seconds. */
export function wtick(): number {
  return 1e-9;
}

/** @internal Ends this rank and, through the job's shared state, every other. */
export function abortJob(code: number): never {
  if (initialized && !finalized) active.runtime.abort(code);
  process.exit(code);
}
