/**
 * The seam between point-to-point messages and what moves them.
 *
 * lib/p2p/p2p.ts checks every argument (ranks, tags, buffers, datatypes),
 * handles MPI_PROC_NULL itself and packs derived datatypes, so a backend
 * sees only contiguous bytes, a peer that exists and a valid tag:
 *
 * - ranks are ranks of the communicator, or of its remote group on an
 *   intercommunicator (`'remoteSize' in c`); `source` may be ANY_SOURCE
 *   (-1), `tag` on a receive or probe ANY_TAG (-1);
 * - a `status` is a Float64Array(4) the backend fills when the message is
 *   matched: [source, tag, byteLength, message], `message` being the handle
 *   of a matched probe (mprobe, improbe) and 0 otherwise;
 * - nonblocking calls return a request id of the backend's `requests`
 *   (lib/backend.ts), which completes like a collective's: with null or the
 *   MPIError (ERR_TRUNCATE, ERR_PROC_FAILED);
 * - messages on one communicator between one pair with one tag never
 *   overtake; point-to-point never matches a collective's traffic.
 */
import type { InterMembers, Members } from '../coll/backend.js';

/** A communicator as point-to-point sees it. */
export type Peers = Members | InterMembers;

export interface PointToPoint {
  /** Standard-mode send of the first `bytes` bytes of `view` to `dest`. */
  send(c: Peers, view: ArrayBufferView, bytes: number, dest: number, tag: number): void;
  /** The same, nonblocking: the request id. */
  isend(c: Peers, view: ArrayBufferView, bytes: number, dest: number, tag: number): number;
  /**
   * Receives into the first `bytes` bytes of `view`. A longer message
   * fills status, writes `bytes` of it and throws ERR_TRUNCATE: nothing is
   * written past them.
   */
  recv(c: Peers, view: ArrayBufferView, bytes: number, source: number, tag: number, status: Float64Array): void;
  /** The same, nonblocking: status is filled by completion; truncation fails the request. */
  irecv(c: Peers, view: ArrayBufferView, bytes: number, source: number, tag: number, status: Float64Array): number;
  /** Blocks until a matching message can be received; leaves it to be. */
  probe(c: Peers, source: number, tag: number, status: Float64Array): void;
  /** Whether a matching message can be received now (status filled if so). */
  iprobe(c: Peers, source: number, tag: number, status: Float64Array): boolean;
  /**
   * MPI_Mprobe: blocks until a matching message arrives and takes it out of
   * matching (no receive can take it); status[3] is its handle for mrecv.
   */
  mprobe(c: Peers, source: number, tag: number, status: Float64Array): void;
  /** The same, nonblocking: the request id; status (with the handle) filled by completion. */
  improbe(c: Peers, source: number, tag: number, status: Float64Array): number;
  /**
   * MPI_Mrecv of a message mprobe or improbe matched, into the first
   * `bytes` bytes of `view` (at least the message's length, so never
   * truncated). Returns once the message is there (a large message's
   * sender may still be copying).
   */
  mrecv(message: number, view: ArrayBufferView, bytes: number, status: Float64Array): void;
}
