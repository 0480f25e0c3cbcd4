/**
 * The shared-memory backend's point-to-point messages: lib/p2p/backend.ts
 * over the addon's rings (native/core/p2p). The only module that calls the
 * addon's p2p functions.
 *
 * A communicator is a native context over a list of world ranks; an
 * intercommunicator's two groups share one, "low" group first, so a rank
 * of the remote group is found at remoteBase + rank. A message carries the
 * sender's rank in its own group (c.rank), which is what a receiver on the
 * other side matches a source against and reports.
 */
import type { Peers, PointToPoint } from './backend.js';
import { block } from '../block.js';
import { BYTES, COMM, STATUS, statusOut } from './block.js';
import { native } from '../native.js';

/** ANY_SOURCE, as the seam passes it. */
const ANY = -1;

// Where rank `rank` of the group a message goes to (or comes from) stands in
// the context: the remote group on an intercommunicator.
function peer(c: Peers, rank: number): number {
  return 'remoteBase' in c ? c.remoteBase + rank : rank;
}

// The numbers of a call go to the addon through the call block
// (lib/block.ts); this backend's layout of a send's.
const PEER = 2, TAG = 3, SELF = 4;

// A receive's or probe's envelope, written where its status will be (the
// block's, at `at`, or a nonblocking call's own array) for the addon to read:
// the source and tag it matches, and the members whose failure ends its wait
// for a message from `source`: that rank, or, for ANY_SOURCE, every rank that
// could send it (the remote group of an intercommunicator), as the first of
// them and how many; and the communicator into the block, as every call
// with one needs. Returns the array.
function envelope(c: Peers, source: number, tag: number, status: Float64Array, at = 0): Float64Array {
  block[COMM] = c.handle;
  status[at] = source;
  status[at + 1] = tag;
  const inter = 'remoteBase' in c;
  if (source !== ANY) {
    status[at + 2] = peer(c, source);
    status[at + 3] = 1;
  } else {
    status[at + 2] = inter ? c.remoteBase : 0;
    status[at + 3] = inter ? c.remoteSize : c.size;
  }
  return status;
}

function sendBlock(c: Peers, bytes: number, dest: number, tag: number): void {
  block[COMM] = c.handle;
  block[BYTES] = bytes;
  block[PEER] = peer(c, dest);
  block[TAG] = tag;
  block[SELF] = c.rank;
}

const PROBE = 0, IPROBE = 1, MPROBE = 2, IMPROBE = 3;

export const shmP2P: PointToPoint = {
  send(c, view, bytes, dest, tag) {
    sendBlock(c, bytes, dest, tag);
    native.p2pSend(view);
  },

  isend(c, view, bytes, dest, tag) {
    sendBlock(c, bytes, dest, tag);
    return native.p2pIsend(view);
  },

  recv(c, view, bytes, source, tag, status) {
    envelope(c, source, tag, block, STATUS);
    block[BYTES] = bytes;
    try {
      native.p2pRecv(view);
    } finally {
      statusOut(status);
    }
  },

  irecv(c, view, bytes, source, tag, status) {
    envelope(c, source, tag, status);
    block[BYTES] = bytes;
    return native.p2pIrecv(view, status);
  },

  probe(c, source, tag, status) {
    native.p2pProbe(envelope(c, source, tag, status), PROBE);
  },

  iprobe(c, source, tag, status) {
    return native.p2pProbe(envelope(c, source, tag, status), IPROBE) as boolean;
  },

  mprobe(c, source, tag, status) {
    native.p2pProbe(envelope(c, source, tag, status), MPROBE);
  },

  improbe(c, source, tag, status) {
    return native.p2pProbe(envelope(c, source, tag, status), IMPROBE) as number;
  },

  mrecv(message, view, bytes, status) {
    native.p2pMrecv(message, view, bytes, status);
  },
};
