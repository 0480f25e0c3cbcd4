/**
 * The seam between the collective layer and what moves the data.
 *
 * lib/coll/collectives.ts checks and resolves the arguments of every
 * collective, for intra- and intercommunicators, the same way whatever runs
 * underneath; it then hands the checked messages to a backend's collectives,
 * typed below. lib/coll/shm.ts is nodempi's shared-memory transport (the
 * addon); a backend over a system MPI implements the same two interfaces.
 * Every method takes a trailing Mode and returns what the addon does:
 * undefined for a blocking call, a request id (nonblocking) or a template
 * id (persistent).
 */
import type { Resolved, ResolvedV } from '../message.js';
import type { Op } from '../op.js';
import type { Mode } from '../request.js';

/** undefined after a blocking call, else the request or template id. */
export type Started = number | undefined;

/** A communicator as a backend sees it. */
export interface Members {
  /** The backend's handle. */
  readonly handle: number;
  /** This rank in the (local) group. */
  readonly rank: number;
  /** Ranks of the (local) group. */
  readonly size: number;
}

/** An intercommunicator: both groups share one context, "low" group first. */
export interface InterMembers extends Members {
  readonly remoteSize: number;
  /** Rank of local rank 0, and of remote rank 0, in the merged order. */
  readonly localBase: number;
  readonly remoteBase: number;
}

/**
 * Where a rank of an intercommunicator stands in a rooted collective: the
 * root (mpi.ROOT), a rank of the root's group that takes no part
 * (mpi.PROC_NULL), or a rank of the other group, `rank` being the root's
 * rank in the remote group.
 */
export type InterRoot = { readonly role: 'root' } | { readonly role: 'none' } | { readonly role: 'remote'; readonly rank: number };

// Conventions of both interfaces: a null send message is IN_PLACE (or, at
// a rank where a message does not matter, absent); block messages
// (gather's receive side, scatter's send side, alltoall, allgather's
// receive side) carry the count of one block; v-messages carry per-rank
// byte counts and displacements in extent units, as resolveV/resolveW make
// them.

/** Intracommunicator collectives. */
export interface IntraCollectives {
  barrier(c: Members, mode: Mode): Started;
  bcast(c: Members, buf: Resolved, root: number, mode: Mode): Started;
  gather(c: Members, send: Resolved | null, recv: Resolved | null, root: number, mode: Mode): Started;
  scatter(c: Members, send: Resolved | null, recv: Resolved | null, root: number, mode: Mode): Started;
  allgather(c: Members, send: Resolved | null, recv: Resolved, mode: Mode): Started;
  alltoall(c: Members, send: Resolved | null, recv: Resolved, mode: Mode): Started;
  reduce(c: Members, send: Resolved | null, recv: Resolved | null, op: Op, root: number, mode: Mode): Started;
  allreduce(c: Members, send: Resolved | null, recv: Resolved, op: Op, mode: Mode): Started;
  gatherv(c: Members, send: Resolved | null, recv: ResolvedV | null, root: number, mode: Mode): Started;
  scatterv(c: Members, send: ResolvedV | null, recv: Resolved | null, root: number, mode: Mode): Started;
  allgatherv(c: Members, send: Resolved | null, recv: ResolvedV, mode: Mode): Started;
  alltoallv(c: Members, send: ResolvedV | null, recv: ResolvedV, mode: Mode): Started;
  /** A w-message has a datatype per block, and byte displacements. */
  alltoallw(c: Members, send: ResolvedV | null, recv: ResolvedV, mode: Mode): Started;
  /**
   * `recv` holds this rank's `counts[rank]` items (all of them in place);
   * `send` all sum(counts).
   */
  reduceScatter(c: Members, send: Resolved | null, recv: Resolved, counts: readonly number[], op: Op, mode: Mode): Started;
  /** `count` items per rank; `recv` holds count (in place: count × size). */
  reduceScatterBlock(c: Members, send: Resolved | null, recv: Resolved, count: number, op: Op, mode: Mode): Started;
  scan(c: Members, send: Resolved | null, recv: Resolved, op: Op, exclusive: boolean, mode: Mode): Started;
}

/**
 * Intercommunicator collectives (MPI 4.1 §6.2.2): data goes from one group
 * to the other. Block and v-messages have one block per remote rank; no
 * IN_PLACE; a message the rank's role does not use is null.
 */
export interface InterCollectives {
  barrier(c: InterMembers, mode: Mode): Started;
  bcast(c: InterMembers, buf: Resolved | null, root: InterRoot, mode: Mode): Started;
  gather(c: InterMembers, send: Resolved | null, recv: Resolved | null, root: InterRoot, mode: Mode): Started;
  gatherv(c: InterMembers, send: Resolved | null, recv: ResolvedV | null, root: InterRoot, mode: Mode): Started;
  scatter(c: InterMembers, send: Resolved | null, recv: Resolved | null, root: InterRoot, mode: Mode): Started;
  scatterv(c: InterMembers, send: ResolvedV | null, recv: Resolved | null, root: InterRoot, mode: Mode): Started;
  allgather(c: InterMembers, send: Resolved, recv: Resolved, mode: Mode): Started;
  allgatherv(c: InterMembers, send: Resolved, recv: ResolvedV, mode: Mode): Started;
  alltoall(c: InterMembers, send: Resolved, recv: Resolved, mode: Mode): Started;
  alltoallv(c: InterMembers, send: ResolvedV, recv: ResolvedV, mode: Mode): Started;
  alltoallw(c: InterMembers, send: ResolvedV, recv: ResolvedV, mode: Mode): Started;
  /** `op` is checked against the datatype where one matters (not at a PROC_NULL rank). */
  reduce(c: InterMembers, send: Resolved | null, recv: Resolved | null, op: Op, root: InterRoot, mode: Mode): Started;
  allreduce(c: InterMembers, send: Resolved, recv: Resolved, op: Op, mode: Mode): Started;
  /**
   * `send` holds count × size items (one block per rank of the local
   * group), `recv` count; the remote group's vectors are as long, and
   * each remote rank gets total / remoteSize items of this group's result.
   */
  reduceScatterBlock(c: InterMembers, send: Resolved, recv: Resolved, op: Op, mode: Mode): Started;
  /**
   * `counts` has one entry per local rank; `send` must hold what the remote
   * group's counts add up to (the backend learns them, and fails with
   * ERR_COUNT otherwise).
   */
  reduceScatter(c: InterMembers, send: Resolved, recv: Resolved, counts: readonly number[], op: Op, mode: Mode): Started;
}

/** A backend's collectives. */
export interface CollectiveBackend {
  readonly intra: IntraCollectives;
  readonly inter: InterCollectives;
}
