/** The predefined communicators and init(). */
import { Comm } from './comm.js';
import { describe, fail } from './errors.js';
import { abortJob, ensureInit } from './runtime.js';

/** MPI_COMM_WORLD: every rank of the job. Initialises MPI on first use. */
export const COMM_WORLD = new Comm(0, 'MPI_COMM_WORLD');
/** MPI_COMM_SELF: this rank alone. */
export const COMM_SELF = new Comm(1, 'MPI_COMM_SELF');

/** MPI_Init: idempotent; returns COMM_WORLD. */
export function init(): Comm {
  ensureInit();
  return COMM_WORLD;
}

/** MPI_Abort: ends every rank of the job with exit code `code`. */
export function abort(code = 1, comm: Comm = COMM_WORLD): never {
  if (!(comm instanceof Comm)) fail('ERR_COMM', 'abort', `comm must be a Comm, got ${describe(comm)}`);
  if (!Number.isInteger(code)) fail('ERR_ARG', 'abort', `code must be an integer, got ${describe(code)}`);
  return abortJob(code);
}
