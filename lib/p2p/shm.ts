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
import { native } from '../native.js';

/** ANY_SOURCE, as the seam passes it. */
const ANY = -1;

// Where rank `rank` of the group a message goes to (or comes from) stands in
// the context: the remote group on an intercommunicator.
function peer(c: Peers, rank: number): number {
  return 'remoteBase' in c ? c.remoteBase + rank : rank;
}

// The members whose failure ends a wait for a message from `source`: that
// rank, or, for ANY_SOURCE, every rank that could send it (the remote group
// of an intercommunicator), as the first of them and how many. Two numbers
// rather than a pair: a receive must not allocate.
function firstWatched(c: Peers, source: number): number {
  if (source !== ANY) return peer(c, source);
  return 'remoteBase' in c ? c.remoteBase : 0;
}
function watchedCount(c: Peers, source: number): number {
  if (source !== ANY) return 1;
  return 'remoteBase' in c ? c.remoteSize : c.size;
}

const PROBE = 0, IPROBE = 1, MPROBE = 2, IMPROBE = 3;

export const shmP2P: PointToPoint = {
  send(c, view, bytes, dest, tag) {
    native.p2pSend(c.handle, view, bytes, peer(c, dest), tag, c.rank);
  },

  isend(c, view, bytes, dest, tag) {
    return native.p2pIsend(c.handle, view, bytes, peer(c, dest), tag, c.rank);
  },

  recv(c, view, bytes, source, tag, status) {
    native.p2pRecv(c.handle, view, bytes, source, tag, status, firstWatched(c, source), watchedCount(c, source));
  },

  irecv(c, view, bytes, source, tag, status) {
    return native.p2pIrecv(c.handle, view, bytes, source, tag, status, firstWatched(c, source), watchedCount(c, source));
  },

  probe(c, source, tag, status) {
    native.p2pProbe(c.handle, source, tag, status, firstWatched(c, source), watchedCount(c, source), PROBE);
  },

  iprobe(c, source, tag, status) {
    return native.p2pProbe(c.handle, source, tag, status, firstWatched(c, source), watchedCount(c, source), IPROBE) as boolean;
  },

  mprobe(c, source, tag, status) {
    native.p2pProbe(c.handle, source, tag, status, firstWatched(c, source), watchedCount(c, source), MPROBE);
  },

  improbe(c, source, tag, status) {
    return native.p2pProbe(c.handle, source, tag, status, firstWatched(c, source), watchedCount(c, source), IMPROBE) as number;
  },

  mrecv(message, view, bytes, status) {
    native.p2pMrecv(message, view, bytes, status);
  },
};
