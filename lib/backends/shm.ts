/**
 * The shared-memory backend: nodempi's own transport (the native core), for
 * jobs of one machine started by the `nodempi` launcher, mpi.launch(), or
 * plain `node app.js` (a world of one).
 *
 * A communicator is a context in the job's segment. Making one is
 * collective over its parent: the members agree on their order with an
 * allgather, the first of them takes a context from the pool, and an
 * allgather tells the others which. An intercommunicator's two groups
 * share one context, the "low" group (whose leader has the lower world
 * rank) first.
 */
import { hostname } from 'node:os';

import type { Backend, InterRequest, Made, MadeInter } from '../backend.js';
import { templateRunner } from '../block.js';
import type { InterMembers, Members } from '../coll/backend.js';
import { shm as collectives } from '../coll/shm.js';
import { shmP2P } from '../p2p/shm.js';
import { UNDEFINED } from '../constants.js';
import { fail, MPIError } from '../errors.js';
import { native } from '../native.js';
import { Mode } from '../request.js';

/** @internal The rank, size and segment descriptor the launcher passed, or a singleton. */
export function jobEnvironment(env: NodeJS.ProcessEnv = process.env): { rank: number; size: number; fd: number } {
  const size = env.NODEMPI_SIZE;
  if (size === undefined) return { rank: 0, size: 1, fd: -1 };
  const r = Number(env.NODEMPI_RANK), n = Number(size), fd = Number(env.NODEMPI_FD ?? -1);
  if (!Number.isInteger(r) || !Number.isInteger(n) || n < 1 || r < 0 || r >= n || !Number.isInteger(fd)) {
    throw new MPIError('ERR_INTERN', `init: NODEMPI_RANK=${env.NODEMPI_RANK} NODEMPI_SIZE=${size} do not describe a rank of a job`);
  }
  if (n > 1 && fd < 0) {
    throw new MPIError('ERR_INTERN', 'init: a job of several ranks must be started by the nodempi launcher (NODEMPI_FD is missing)');
  }
  return { rank: r, size: n, fd };
}

/**
 * Thrown on every member when no context is left for a new communicator:
 * the pool holds native/core/transport/segment.h kContexts, COMM_WORLD's
 * included.
 */
function noContext(call: string): never {
  fail('ERR_OTHER', call, 'no communicator context is free (4095 communicators of several ranks may exist at once besides COMM_WORLD); free() communicators that are no longer needed');
}

// The agreement behind dup/split/splitType/create, collective over `c`:
//   1. allgather (color, key): every rank learns its new peers and order;
//   2. the first rank of each new communicator takes a context from the
//      pool; an allgather tells its members which;
//   3. every member builds its side of the new communicator.
function derive(c: Members, world: readonly number[], call: string, color: number, key: number): Made | null {
  const n = c.size, me = c.rank;
  // As doubles: any integer color or key is honoured exactly, never
  // wrapped to 32 bits on some ranks and not on others.
  const pairs = new Float64Array(2 * n);
  native.allgather(c.handle, Float64Array.of(color, key), pairs, 16, 0, 0, 0, 0, Mode.BLOCKING);
  const members: number[] = [];
  if (color !== UNDEFINED) {
    for (let r = 0; r < n; r++) if (pairs[2 * r] === color) members.push(r);
    members.sort((a, b) => pairs[2 * a + 1]! - pairs[2 * b + 1]! || a - b);
  }
  const leader = members[0] === me;
  const id = leader ? native.ctxAlloc(members.length) : 0;
  const ids = new Int32Array(n);
  native.allgather(c.handle, Int32Array.of(id), ids, 4, 0, 0, 0, 0, Mode.BLOCKING);
  if (color === UNDEFINED) return null;
  const ctx = ids[members[0]!]!;
  if (ctx < 0) noContext(call);
  const worldRanks = members.map((r) => world[r]!);
  return { handle: native.commCreate(ctx, members.indexOf(me), Int32Array.from(worldRanks)), world: worldRanks };
}

// Collective over an intercommunicator's merged context: the rank that
// passes members > 0 takes a context; every rank learns it.
function agreeContext(c: InterMembers, call: string, members: number): number {
  const n = c.size + c.remoteSize;
  const id = members > 0 ? native.ctxAlloc(members) : 0;
  const ids = new Int32Array(n);
  native.allgather(c.handle, Int32Array.of(id), ids, 4, 0, 0, 0, 0, Mode.BLOCKING);
  const ctx = Math.max(...ids) > 0 ? Math.max(...ids) : Math.min(...ids);
  if (ctx < 0) noContext(call);
  return ctx;
}

// The context a leader broadcasts when its part of createIntercomm failed.
const LEADER_FAILED = -2;

// MPI_Intercomm_create over the segment, run by every rank of the local group.
function createInter(q: InterRequest): MadeInter {
  const call = 'createIntercomm';
  const localWorld = q.localWorld;
  const me = localWorld[q.local.rank]!;
  let header = new Int32Array(3);
  let remoteWorld: Int32Array | null = null;
  let failure: MPIError | null = null;
  if (q.peer) {
    // What goes wrong at the leader goes to the whole local group (step 3),
    // which would otherwise wait for the leader's header forever.
    try {
      // 1. The leaders swap their groups; 2. the one with the lower world
      //    rank takes a context for both groups and tells the other.
      const peerWorld = q.peer.remoteWorld;
      const got = native.leaderExchange(peerWorld, q.tag, Int32Array.of(localWorld.length, ...localWorld));
      const theirs = got[0]!;
      remoteWorld = got.slice(1, 1 + theirs);
      const low = me < peerWorld;
      const mine = low ? native.ctxAlloc(localWorld.length + theirs) : 0;
      const ctx = native.leaderExchange(peerWorld, q.tag, Int32Array.of(mine))[0]!;
      header = Int32Array.of(low ? mine : ctx, theirs, low ? 1 : 0);
    } catch (err) {
      if (!(err instanceof MPIError)) throw err;
      failure = err;
      const text = new TextEncoder().encode(err.message);
      header = Int32Array.of(LEADER_FAILED, err.errorClass, text.length);
      remoteWorld = new Int32Array(text.length);
      remoteWorld.set(text);
    }
  }
  // 3. The leader tells its group the new context and the remote group (or
  //    what failed, as the error's class and message).
  q.bcastLocal(header, q.localLeader);
  const [ctx, , lowFlag] = header as unknown as [number, number, number];
  const nRemote = ctx === LEADER_FAILED ? header[2]! : header[1]!;
  const remote = remoteWorld && q.peer ? remoteWorld : new Int32Array(nRemote);
  q.bcastLocal(remote, q.localLeader);
  if (ctx === LEADER_FAILED) {
    if (failure) throw failure;
    const text = new TextDecoder().decode(Uint8Array.from(remote));
    throw MPIError.fromClass(header[1]!, `${call}: at the local leader (rank ${q.localLeader}): ${text.replace(/^createIntercomm: /, '')}`);
  }
  if (ctx < 0) noContext(call);
  const low = lowFlag === 1;
  const remoteRanks = Array.from(remote);
  const merged = low ? [...localWorld, ...remoteRanks] : [...remoteRanks, ...localWorld];
  const handle = native.commCreate(ctx, merged.indexOf(me), Int32Array.from(merged));
  return { handle, local: localWorld, remote: remoteRanks, low };
}

const backend: Backend = {
  name: 'shm',

  runtime: {
    init() {
      const job = jobEnvironment();
      native.init(job.rank, job.size, job.fd);
      return { rank: job.rank, size: job.size };
    },
    finalize: () => native.finalize(),
    // The launcher notices how a rank ended by itself.
    exit: () => native.finalize(),
    abort: () => native.abort(),
    libraryVersion: () => 'nodempi shared-memory transport (one machine)',
    processorName: () => hostname(),
  },

  comms: {
    info(handle) {
      const [rank, size] = native.commInfo(handle);
      return { rank, size };
    },
    dup: (c, world, call) => derive(c, world, call, 0, c.rank)!,
    split: derive,
    // One machine: every rank shares memory with every other.
    splitShared: (c, world, undefined, key) => derive(c, world, 'splitType', undefined ? UNDEFINED : 0, key),
    free: (handle) => native.commFree(handle),
    createInter,

    merge(c, local, remote, low, high) {
      const n = c.size + c.remoteSize;
      const flags = new Int32Array(n);
      native.allgather(c.handle, Int32Array.of(high ? 1 : 0), flags, 4, 0, 0, 0, 0, Mode.BLOCKING);
      const localHigh = flags[c.localBase] === 1, remoteHigh = flags[c.remoteBase] === 1;
      const localFirst = localHigh === remoteHigh ? low : !localHigh;
      const world = localFirst ? [...local, ...remote] : [...remote, ...local];
      const me = world.indexOf(local[c.rank]!);
      const ctx = agreeContext(c, 'merge', me === 0 ? n : 0);
      return { handle: native.commCreate(ctx, me, Int32Array.from(world)), world };
    },

    dupInter(c, local, remote, low) {
      const world = low ? [...local, ...remote] : [...remote, ...local];
      const me = c.localBase + c.rank;
      const ctx = agreeContext(c, 'dup', me === 0 ? world.length : 0);
      return { handle: native.commCreate(ctx, me, Int32Array.from(world)), local, remote, low };
    },
  },

  requests: {
    test: (id) => native.test(id),
    wait: (id) => native.wait(id),
    waitAny: (ids) => native.waitAny(ids),
    start: (template) => native.start(template),
    freeTemplate: (template) => native.freeTemplate(template),
    watch(deliver) {
      if (!watching) {
        native.setProgressCallback(() => deliver(native.drain()));
        watching = true;
      }
      kickLater();
    },
    drain: () => native.drain(),
    runTemplate: templateRunner(native.runTemplate),
  },

  collectives,
  p2p: shmP2P,
};

let watching = false;

// Small requests are queued without waking their lane's thread (a wait()
// right after runs them on this thread, cheaper than a thread hand-off);
// they are kicked off once the current JavaScript turn ends.
let kickScheduled = false;
function kickLater(): void {
  if (kickScheduled) return;
  kickScheduled = true;
  queueMicrotask(() => {
    kickScheduled = false;
    native.kick();
  });
}

export { backend as shm };
