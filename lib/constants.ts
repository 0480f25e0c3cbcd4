/** Constants of the MPI API (MPI_IN_PLACE, MPI_UNDEFINED, ...). */

/** MPI_IN_PLACE: pass where MPI 4.1 allows it instead of a send (or receive) buffer. */
export const IN_PLACE: unique symbol = Symbol('nodempi.IN_PLACE');
export type InPlace = typeof IN_PLACE;

/** MPI_UNDEFINED: a split color that gives no communicator; a rank outside a group. */
export const UNDEFINED = -32766;
/** MPI_ROOT: the root of a rooted intercommunicator collective. */
export const ROOT = -4;
/** MPI_PROC_NULL: a peer that is no one (a message to or from it completes at once); in intercommunicator collectives, the root group's other members. */
export const PROC_NULL = -2;

/** MPI_ANY_SOURCE: a receive or probe that takes a message from any rank. */
export const ANY_SOURCE = -1;
/** MPI_ANY_TAG: a receive or probe that takes a message with any tag. */
export const ANY_TAG = -1;
/**
 * MPI_TAG_UB: the largest tag a message may carry (tags run from 0). On the
 * shm backend 2^31 - 1; on the mpi backend the library's, known once MPI
 * is initialised (Open MPI 2^31 - 1, MPICH 2^28 - 1; at least 32767).
 */
export let TAG_UB = 2147483647;
/** @internal The mpi backend sets its library's bound at initialisation. */
export function setTagUb(ub: number): void {
  TAG_UB = ub;
}

/** Results of comm.compare() and group.compare(). */
export const IDENT = 0;
export const CONGRUENT = 1;
export const SIMILAR = 2;
export const UNEQUAL = 3;

/** comm.splitType() kind: ranks that can share memory. */
export const COMM_TYPE_SHARED = 1;

/** The MPI level whose semantics this package follows. */
export const version = Object.freeze({ major: 4, minor: 1 } as const);
