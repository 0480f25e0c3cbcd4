/**
 * nodempi: MPI collective communication for Node.js.
 *
 *   import * as mpi from 'nodempi';
 *   const world = mpi.COMM_WORLD;
 *   world.allreduce(mpi.IN_PLACE, values, mpi.Op.SUM);
 */
export { Comm } from './comm.js';
export { Intercomm } from './intercomm.js';
export { Group } from './group.js';
export { PersistentRequest, Request } from './request.js';
export { Status } from './p2p/status.js';
export { COMM_SELF, COMM_WORLD, abort, init } from './world.js';
export { backend, finalize, isFinalized, isInitialized, libraryVersion, processorName, wtick, wtime } from './runtime.js';
export { Datatype } from './datatype.js';
export { Op } from './op.js';
export type { TypedArray, UserFunction } from './op.js';
export type { Combine } from './objects/combine.js';
export { reduceLocal, reduceLocals } from './local.js';
export { allocMem } from './memory.js';
export { pack, packSize, unpack } from './pack.js';
export { MPIError, ErrorClasses } from './errors.js';
export type { ErrorCode } from './errors.js';
export type { Buf, Msg, VMsg, WMsg } from './message.js';
export type { SendSpec } from './coll/collectives.js';
export { launch, type LaunchOptions, type LaunchResult } from './launch.js';
export {
  ANY_SOURCE, ANY_TAG, COMM_TYPE_SHARED, CONGRUENT, IDENT, IN_PLACE, PROC_NULL, ROOT, SIMILAR, TAG_UB, UNDEFINED, UNEQUAL, version,
} from './constants.js';
export type { InPlace } from './constants.js';

import { ErrorClasses } from './errors.js';
export const {
  ERR_BUFFER, ERR_COUNT, ERR_TYPE, ERR_TAG, ERR_COMM, ERR_RANK, ERR_ROOT, ERR_GROUP, ERR_OP, ERR_ARG,
  ERR_TRUNCATE, ERR_REQUEST, ERR_OTHER, ERR_INTERN, ERR_PROC_FAILED, ERR_NOT_SAME,
} = ErrorClasses;
