/**
 * Point-to-point's use of the call block (lib/block.ts): a blocking send's
 * or receive's numbers (the communicator, the byte count, peer, tag; a
 * blocking receive's status). Each backend's module writes its call's
 * numbers just before the call; the layouts are in
 * native/napi/p2p_binding.cc (shm) and mpi_binding.cc (mpi).
 */
import { block } from '../block.js';

/** Slots every call uses: the communicator's handle and the byte count. */
export const COMM = 0, BYTES = 1;

/** Where a blocking receive's status is: block[STATUS .. STATUS + 3]. */
export const STATUS = 4;

/** The block's status to the caller's array (also when a receive throws). */
export function statusOut(status: Float64Array): void {
  status[0] = block[STATUS]!;
  status[1] = block[STATUS + 1]!;
  status[2] = block[STATUS + 2]!;
  status[3] = block[STATUS + 3]!;
}
