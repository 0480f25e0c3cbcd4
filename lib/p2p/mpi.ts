/**
 * The MPI backend's point-to-point messages: each call of the seam
 * (lib/p2p/backend.ts) is the library's own, in MPI_BYTEs, on the
 * communicator's handle (native/core/mpi). Matching, ordering and the
 * separation from collective traffic are the library's; nonblocking calls
 * are requests of the backend's table, completed by its poll
 * (lib/backends/mpi.ts) like a collective's.
 *
 * Where the libraries differ the addon evens them out: under MPICH a
 * blocking receive is a matched probe and a receive, so that a truncated
 * message writes the buffer's worth and reports its length as Open MPI's
 * MPI_Recv does (MPICH 4.0's writes nothing and reports 0); a matched
 * probe has no request in MPI, so a pending improbe is tried again at
 * every poll (an irecv posted after it that matches the same message may
 * take it first, since MPI matches posted receives on arrival). Ranks on an intercommunicator are the remote group's, as in
 * MPI.
 */
import { block } from '../block.js';
import { native } from '../native.js';
import type { PointToPoint } from './backend.js';
import { BYTES, COMM, statusOut } from './block.js';

// A blocking send's or receive's numbers in the call block (lib/block.ts;
// this backend's layout in native/napi/mpi_binding.cc): the peer (dest or
// source) and the tag.
const PEER = 2, TAG = 3;

function blockOf(handle: number, bytes: number, peer: number, tag: number): void {
  block[COMM] = handle;
  block[BYTES] = bytes;
  block[PEER] = peer;
  block[TAG] = tag;
}

/** The mpi backend's point-to-point (its `p2p`, lib/backends/mpi.ts). */
export const mpi: PointToPoint = {
  send(c, view, bytes, dest, tag) {
    blockOf(c.handle, bytes, dest, tag);
    native.mpiSend(view);
  },
  isend: (c, view, bytes, dest, tag) => native.mpiIsend(c.handle, view, bytes, dest, tag),
  recv(c, view, bytes, source, tag, status) {
    blockOf(c.handle, bytes, source, tag);
    try {
      native.mpiRecv(view);
    } finally {
      statusOut(status);
    }
  },
  irecv: (c, view, bytes, source, tag, status) => native.mpiIrecv(c.handle, view, bytes, source, tag, status),
  probe: (c, source, tag, status) => native.mpiProbe(c.handle, source, tag, status),
  iprobe: (c, source, tag, status) => native.mpiIprobe(c.handle, source, tag, status),
  mprobe: (c, source, tag, status) => native.mpiMprobe(c.handle, source, tag, status),
  improbe: (c, source, tag, status) => native.mpiImprobe(c.handle, source, tag, status),
  mrecv: (message, view, bytes, status) => native.mpiMrecv(message, view, bytes, status),
};

/**
 * The largest tag the library carries (its MPI_TAG_UB; once initialised):
 * 2^31 - 1 for Open MPI 4.1 over ob1, 2^28 - 1 for MPICH 4.0.
 */
export function tagUb(): number {
  return native.mpiTagUb();
}
