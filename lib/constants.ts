/** Constants of the MPI API (MPI_IN_PLACE, MPI_UNDEFINED, ...). */

/** MPI_IN_PLACE: pass where MPI 4.1 allows it instead of a send (or receive) buffer. */
export const IN_PLACE: unique symbol = Symbol('nodempi.IN_PLACE');
export type InPlace = typeof IN_PLACE;

/** MPI_UNDEFINED: a split color that gives no communicator; a rank outside a group. */
export const UNDEFINED = -32766;
/** MPI_ROOT: the root of a rooted intercommunicator collective. */
export const ROOT = -4;
/** MPI_PROC_NULL: the root group's other members in an intercommunicator collective. */
export const PROC_NULL = -2;

/** Results of comm.compare() and group.compare(). */
export const IDENT = 0;
export const CONGRUENT = 1;
export const SIMILAR = 2;
export const UNEQUAL = 3;

/** comm.splitType() kind: ranks that can share memory. */
export const COMM_TYPE_SHARED = 1;

/** The MPI level whose semantics this package follows. */
export const version = Object.freeze({ major: 4, minor: 1 } as const);
