/**
 * MPIError: the one error class the package throws, from TypeScript and from
 * the native addon alike, with MPI's error class as a number and a name.
 */

/** Error class numbers, as `mpi.ERR_*`. Shared with native/core/error.h. */
export const ErrorClasses = {
  ERR_BUFFER: 1,
  ERR_COUNT: 2,
  ERR_TYPE: 3,
  ERR_TAG: 4,
  ERR_COMM: 5,
  ERR_RANK: 6,
  ERR_ROOT: 7,
  ERR_GROUP: 8,
  ERR_OP: 9,
  ERR_ARG: 10,
  ERR_TRUNCATE: 11,
  ERR_REQUEST: 12,
  ERR_OTHER: 13,
  ERR_INTERN: 14,
  ERR_PROC_FAILED: 15,
  ERR_NOT_SAME: 16,
} as const;

export type ErrorCode = keyof typeof ErrorClasses;

const codeByClass = new Map<number, ErrorCode>(
  Object.entries(ErrorClasses).map(([code, n]) => [n, code as ErrorCode]),
);

/** An MPI error: `code` is the class name ('ERR_COUNT'), `errorClass` its number. */
export class MPIError extends Error {
  readonly errorClass: number;
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MPIError';
    this.code = code;
    this.errorClass = ErrorClasses[code];
  }

  /** Builds an MPIError from a class number (used by the native addon). */
  static fromClass(errorClass: number, message: string, cause?: unknown): MPIError {
    const code = codeByClass.get(errorClass) ?? 'ERR_INTERN';
    return cause === undefined ? new MPIError(code, message) : new MPIError(code, message, { cause });
  }
}

/**
 * @internal Makes an MPIError of a collective name `call`, the method the
 * caller called: the addon names the native operation it ran (an
 * intercommunicator allgather runs as an alltoallv, alltoallw as an
 * alltoallv, iallreduce as allreduce). Only a leading "<name>: " that is
 * not `call` already is replaced.
 */
export function retitle(err: unknown, call: string): unknown {
  if (!(err instanceof MPIError)) return err;
  const m = /^([A-Za-z][A-Za-z ]*?): /.exec(err.message);
  if (m && m[1] !== call && !m[1]!.startsWith('PersistentRequest')) err.message = `${call}: ${err.message.slice(m[0].length)}`;
  return err;
}

/** Throws an MPIError; `call` names the MPI call for the message. */
export function fail(code: ErrorCode, call: string, message: string): never {
  throw new MPIError(code, `${call}: ${message}`);
}

/** A short description of a value for error messages. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (typeof value === 'symbol') return value.toString();
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 20 ? value.slice(0, 20) + '…' : value)}`;
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return `${typeof value} ${String(value)}`;
  if (Array.isArray(value)) return `an array of length ${value.length}`;
  if (ArrayBuffer.isView(value)) return `a ${value.constructor.name} of ${value.byteLength} bytes`;
  if (value instanceof ArrayBuffer) return `an ArrayBuffer of ${value.byteLength} bytes`;
  if (typeof SharedArrayBuffer !== 'undefined' && value instanceof SharedArrayBuffer) {
    return `a SharedArrayBuffer of ${value.byteLength} bytes`;
  }
  if (typeof value === 'function') return 'a function';
  return `an object (${(value as object).constructor?.name ?? 'Object'})`;
}
