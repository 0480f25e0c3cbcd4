/**
 * Communicators (MPI_Comm) and their blocking collectives. Every argument is
 * checked here, before the native call sends anything.
 */
import { argList, offHeap } from './args.js';
import { COMM_TYPE_SHARED, CONGRUENT, IDENT, IN_PLACE, UNDEFINED, UNEQUAL } from './constants.js';
import { nameArg, type Datatype } from './datatype.js';
import { describe, fail, retitle } from './errors.js';
import {
  beginStaging, fuseMove, releaseStaging, resolve, resolveBlocks, resolveV, resolveW, stageMove, stageMoveV, stageReduce,
  takeStaging, withCount,
  type Msg, type Resolved, type VMsg, type WMsg,
} from './message.js';
import { native } from './native.js';
import { checkOp, Op, userOpSpec } from './op.js';
import { Mode, PersistentRequest, Request, setNextCall, setNextHooks } from './request.js';
import { RECORD, Replays } from './replay.js';
import { hasUserOp, hold } from './hold.js';
import { ensureInit, worldRank } from './runtime.js';
import { compareRanks, Group } from './group.js';

type SendSpec = Msg | typeof IN_PLACE;

/** An intercommunicator (lib/intercomm.ts). */
export interface Intercomm extends Comm {
  readonly remoteSize: number;
  remoteGroup(): Group;
  merge(high: boolean): Comm;
}
type MakeIntercomm = (local: Comm, localLeader: number, peerComm: Comm, remoteLeader: number, tag: number) => Intercomm;
let makeIntercomm: MakeIntercomm | undefined;
/** @internal lib/intercomm.ts registers itself here (it extends Comm, so Comm cannot import it). */
export function registerIntercomm(make: MakeIntercomm): void {
  makeIntercomm = make;
}

/** @internal The collectives, by method name. */
export type CollectiveName =
  | 'barrier' | 'bcast' | 'gather' | 'scatter' | 'allgather' | 'alltoall' | 'reduce' | 'allreduce'
  | 'gatherv' | 'scatterv' | 'allgatherv' | 'alltoallv' | 'alltoallw' | 'reduceScatter'
  | 'reduceScatterBlock' | 'scan' | 'exscan';

// Handles of the predefined communicators.
const WORLD = 0;
const SELF = 1;

/**
 * @internal Thrown on every member when no context is left for a new
 * communicator: the pool holds native/core/transport/segment.h kContexts,
 * COMM_WORLD's included.
 */
export function noContext(call: string): never {
  fail('ERR_OTHER', call, 'no communicator context is free (4095 communicators of several ranks may exist at once besides COMM_WORLD); free() communicators that are no longer needed');
}

/** A communicator: a group of ranks and a private context for their collectives. */
export class Comm {
  #handle: number;
  #rank = -1;
  #size = -1;
  #name: string;
  #group: Group | null;
  #freed = false;
  #replays: Replays | null = null;

  /**
   * @internal `handle` is the addon's context number; `group` lists the
   * members' world ranks (null for the predefined communicators, which
   * learn it at initialisation).
   */
  constructor(handle: number, name: string, group: Group | null = null) {
    this.#handle = handle;
    this.#name = name;
    this.#group = group;
  }

  /** @internal The addon handle, initialising MPI on first use. */
  get handle(): number {
    if (this.#size < 0) {
      if (this.#freed) fail('ERR_COMM', this.#name || 'comm', 'the communicator has been freed');
      ensureInit();
      [this.#rank, this.#size] = native.commInfo(this.#handle);
    }
    return this.#handle;
  }

  /**
   * @internal The handle for method `call`: once the communicator has been
   * freed, ERR_COMM naming the method.
   */
  _live(call: string): number {
    if (this.#freed) fail('ERR_COMM', call, `the communicator${this.#name ? ` ${this.#name}` : ''} has been freed`);
    return this.handle;
  }

  /** This process's rank in the communicator (MPI_Comm_rank). */
  get rank(): number {
    this._live('rank');
    return this.#rank;
  }

  /** Number of ranks (MPI_Comm_size). */
  get size(): number {
    this._live('size');
    return this.#size;
  }

  /** Always false for an intracommunicator. */
  get isInter(): boolean { return false; }

  get name(): string { return this.#name; }
  set name(value: string) { this.#name = nameArg('Comm.name', value); }

  toString(): string { return `Comm(${this.#name})`; }

  /** MPI_Comm_group: the members, in rank order. */
  group(): Group {
    this._live('group');
    if (!this.#group) {
      const size = this.size;
      this.#group = new Group(this.#handle === WORLD ? Array.from({ length: size }, (_, r) => r) : [worldRank()]);
    }
    return this.#group;
  }

  /** MPI_Comm_dup: a new communicator with the same members and order, and its own context. */
  dup(): Comm {
    this._live('dup');
    return this.#derive('dup', 0, this.rank)!;
  }

  /**
   * MPI_Comm_split: one new communicator per color, ranks ordered by key and
   * then by rank here; color mpi.UNDEFINED gives null.
   */
  split(color: number, key = 0): Comm | null {
    this._live('split');
    if (!Number.isInteger(color) || (color < 0 && color !== UNDEFINED)) {
      fail('ERR_ARG', 'split', `color must be a non-negative integer or mpi.UNDEFINED, got ${describe(color)}`);
    }
    if (!Number.isInteger(key)) fail('ERR_ARG', 'split', `key must be an integer, got ${describe(key)}`);
    return this.#derive('split', color, key);
  }

  /**
   * MPI_Comm_split_type: with mpi.COMM_TYPE_SHARED, the ranks that can share
   * memory (here: all of them, on one machine); mpi.UNDEFINED gives null.
   */
  splitType(type: number = COMM_TYPE_SHARED, key = 0): Comm | null {
    this._live('splitType');
    if (type !== COMM_TYPE_SHARED && type !== UNDEFINED) {
      fail('ERR_ARG', 'splitType', `type must be mpi.COMM_TYPE_SHARED or mpi.UNDEFINED, got ${describe(type)}`);
    }
    if (!Number.isInteger(key)) fail('ERR_ARG', 'splitType', `key must be an integer, got ${describe(key)}`);
    return this.#derive('splitType', type === UNDEFINED ? UNDEFINED : 0, key);
  }

  /**
   * MPI_Comm_create: a communicator of the members of `group` (a subgroup
   * of this one), ranked as in the group; null on the other ranks.
   */
  create(group: Group): Comm | null {
    this._live('create');
    if (!(group instanceof Group)) fail('ERR_GROUP', 'create', `group must be a Group, got ${describe(group)}`);
    const mine = this.group().worldRanks;
    const at = new Map(mine.map((w, r) => [w, r]));
    for (const w of group.worldRanks) {
      if (!at.has(w)) fail('ERR_GROUP', 'create', `the group holds world rank ${w}, which is not in this communicator`);
    }
    const k = group.worldRanks.indexOf(mine[this.rank]!);
    return this.#derive('create', k < 0 ? UNDEFINED : 0, k);
  }

  /**
   * MPI_Intercomm_create: collective over this communicator and, through the
   * two leaders, over the other group's. `localLeader` is a rank here;
   * `remoteLeader` is the other group's leader as a rank of `peerComm`
   * (which must hold both leaders); `tag` tells concurrent creations apart.
   */
  createIntercomm(localLeader: number, peerComm: Comm, remoteLeader: number, tag = 0): Intercomm {
    if (!makeIntercomm) fail('ERR_INTERN', 'createIntercomm', 'intercommunicator support is not loaded');
    return makeIntercomm(this, localLeader, peerComm, remoteLeader, tag);
  }

  /** MPI_Comm_free: collective; waits for this communicator's pending requests, then releases it. */
  free(): void {
    const h = this._live('free');
    if (h === WORLD || h === SELF) fail('ERR_COMM', 'free', `${this.#name} is predefined and cannot be freed`);
    this.#replays?.clear();
    this.#replays = null;
    native.commFree(h);
    this.#freed = true;
    this.#size = -1;
  }

  /** MPI_Comm_compare: IDENT (same object), CONGRUENT (same ranks in order), SIMILAR (same members), UNEQUAL. */
  compare(other: Comm): number {
    if (!(other instanceof Comm)) fail('ERR_COMM', 'compare', `other must be a Comm, got ${describe(other)}`);
    // Both must be live, even when they are the same object.
    this._live('compare');
    other._live('compare');
    if (other === this) return IDENT;
    if (other.isInter) return UNEQUAL;
    const c = compareRanks(this.group().worldRanks, other.group().worldRanks);
    return c === IDENT ? CONGRUENT : c;
  }

  // The agreement behind dup/split/splitType/create, collective over this
  // communicator:
  //   1. allgather (color, key): every rank learns its new peers and order;
  //   2. the first rank of each new communicator takes a context from the
  //      pool; an allgather tells its members which;
  //   3. every member builds its side of the new communicator.
  #derive(call: string, color: number, key: number): Comm | null {
    const h = this._live(call);
    const n = this.#size, me = this.#rank;
    // As doubles: any integer color or key is honoured exactly, never
    // wrapped to 32 bits on some ranks and not on others.
    const pairs = new Float64Array(2 * n);
    native.allgather(h, Float64Array.of(color, key), pairs, 16, 0, 0, 0, 0, Mode.BLOCKING);
    const members: number[] = [];
    if (color !== UNDEFINED) {
      for (let r = 0; r < n; r++) if (pairs[2 * r] === color) members.push(r);
      members.sort((a, b) => pairs[2 * a + 1]! - pairs[2 * b + 1]! || a - b);
    }
    const leader = members[0] === me;
    const id = leader ? native.ctxAlloc(members.length) : 0;
    const ids = new Int32Array(n);
    native.allgather(h, Int32Array.of(id), ids, 4, 0, 0, 0, 0, Mode.BLOCKING);
    if (color === UNDEFINED) return null;
    const ctx = ids[members[0]!]!;
    if (ctx < 0) noContext(call);
    const world = this.group().worldRanks;
    const worldRanks = members.map((r) => world[r]!);
    const handle = native.commCreate(ctx, members.indexOf(me), Int32Array.from(worldRanks));
    return new Comm(handle, '', new Group(worldRanks));
  }

  #barrier(mode: Mode): unknown {
    return native.barrier(this.handle, mode);
  }

  #bcast(mode: Mode, buf: Msg, root = 0): unknown {
    const h = this.handle;
    this.#checkRoot('bcast', root);
    // A derived type is packed by the root and unpacked by the others
    // chunk by chunk, straight to and from the shared-memory slots.
    const m = fuseMove(resolve('bcast', 'buffer', buf));
    return native.bcast(h, m.view, m.bytes, root, m.type, m.count, mode);
  }

  #gather(mode: Mode, send: SendSpec, recv: Msg | null, root = 0): unknown {
    const h = this.handle;
    this.#checkRoot('gather', root);
    if (this.#rank === root) {
      const r = stageMove(resolveBlocks('gather', 'receive buffer', recv, this.#size), send === IN_PLACE ? 'both' : 'recv', this.#size);
      const s = send === IN_PLACE ? null : stageMove(resolve('gather', 'send buffer', send), 'send');
      if (s) sameBytes('gather', s.bytes, r.bytes);
      return native.gather(h, s && s.view, r.view, r.bytes, root, mode);
    } else {
      const s = stageMove(resolve('gather', 'send buffer', notInPlace('gather', 'send buffer', send, 'the root')), 'send');
      return native.gather(h, s.view, null, s.bytes, root, mode);
    }
  }

  #scatter(mode: Mode, send: Msg | null, recv: SendSpec, root = 0): unknown {
    const h = this.handle;
    this.#checkRoot('scatter', root);
    if (this.#rank === root) {
      const s = stageMove(resolveBlocks('scatter', 'send buffer', send, this.#size), 'send', this.#size);
      const r = recv === IN_PLACE ? null : stageMove(resolve('scatter', 'receive buffer', recv), 'recv');
      if (r) sameBytes('scatter', s.bytes, r.bytes);
      return native.scatter(h, s.view, r && r.view, s.bytes, root, mode);
    } else {
      const r = stageMove(resolve('scatter', 'receive buffer', notInPlace('scatter', 'receive buffer', recv, 'the root')), 'recv');
      return native.scatter(h, null, r.view, r.bytes, root, mode);
    }
  }

  #allgather(mode: Mode, send: SendSpec, recv: Msg): unknown {
    const h = this.handle;
    const r = fuseMove(resolveBlocks('allgather', 'receive buffer', recv, this.#size), this.#size);
    const s = send === IN_PLACE ? null : fuseMove(resolve('allgather', 'send buffer', send));
    if (s) sameBytes('allgather', s.bytes, r.bytes);
    return native.allgather(h, s && s.view, r.view, r.bytes, s ? s.type : 0, s ? s.count : 0, r.type, r.count, mode);
  }

  #alltoall(mode: Mode, send: SendSpec, recv: Msg): unknown {
    const h = this.handle;
    const r = stageMove(resolveBlocks('alltoall', 'receive buffer', recv, this.#size), send === IN_PLACE ? 'both' : 'recv', this.#size);
    const s = send === IN_PLACE ? null : stageMove(resolveBlocks('alltoall', 'send buffer', send, this.#size), 'send', this.#size);
    if (s) sameBytes('alltoall', s.bytes, r.bytes);
    return native.alltoall(h, s && s.view, r.view, r.bytes, mode);
  }

  #reduce(mode: Mode, send: SendSpec, recv: Msg | null, op: Op = Op.SUM, root = 0): unknown {
    const h = this.handle;
    this.#checkRoot('reduce', root);
    if (this.#rank === root) {
      const r = resolve('reduce', 'receive buffer', recv);
      const s = send === IN_PLACE ? null : resolve('reduce', 'send buffer', send);
      if (s) sameItems('reduce', s, r);
      checkOp(op, r.type, 'reduce');
      const user = op.id < 0;
      const rr = stageReduce(r, s ? 'recv' : 'both', user), ss = s && stageReduce(s, 'send', user);
      return native.reduce(h, ss && ss.view, rr.view, rr.count, rr.basic, op.id, root, userOpSpec(op, r.type), mode);
    } else {
      const s = resolve('reduce', 'send buffer', notInPlace('reduce', 'send buffer', send, 'the root'));
      checkOp(op, s.type, 'reduce');
      const ss = stageReduce(s, 'send', op.id < 0);
      return native.reduce(h, ss.view, null, ss.count, ss.basic, op.id, root, userOpSpec(op, s.type), mode);
    }
  }

  #allreduce(mode: Mode, send: SendSpec, recv: Msg, op: Op = Op.SUM): unknown {
    const h = this.handle;
    const r = resolve('allreduce', 'receive buffer', recv);
    const s = send === IN_PLACE ? null : resolve('allreduce', 'send buffer', send);
    if (s) sameItems('allreduce', s, r);
    checkOp(op, r.type, 'allreduce');
    const user = op.id < 0;
    const rr = stageReduce(r, s ? 'recv' : 'both', user), ss = s && stageReduce(s, 'send', user);
    return native.allreduce(h, ss && ss.view, rr.view, rr.count, rr.basic, op.id, userOpSpec(op, r.type), mode);
  }

  #gatherv(mode: Mode, send: SendSpec, recv: VMsg | null, root = 0): unknown {
    const h = this.handle;
    this.#checkRoot('gatherv', root);
    if (this.#rank === root) {
      const r = stageMoveV(resolveV('gatherv', 'receive spec', recv, this.#size, 0), send === IN_PLACE ? 'both' : 'recv');
      const s = send === IN_PLACE ? null : stageMove(resolve('gatherv', 'send buffer', send), 'send');
      if (s) sameBytes('gatherv', s.bytes, r.bytes[root]!);
      return native.gatherv(h, s && s.view, s ? s.bytes : 0, r.view, offHeap(0, r.bytes), offHeap(1, r.displs), root, mode);
    } else {
      const s = stageMove(resolve('gatherv', 'send buffer', notInPlace('gatherv', 'send buffer', send, 'the root')), 'send');
      return native.gatherv(h, s.view, s.bytes, null, null, null, root, mode);
    }
  }

  #scatterv(mode: Mode, send: VMsg | null, recv: SendSpec, root = 0): unknown {
    const h = this.handle;
    this.#checkRoot('scatterv', root);
    if (this.#rank === root) {
      const sv = stageMoveV(resolveV('scatterv', 'send spec', send, this.#size, 0), 'send');
      const r = recv === IN_PLACE ? null : stageMove(resolve('scatterv', 'receive buffer', recv), 'recv');
      if (r) sameBytes('scatterv', sv.bytes[root]!, r.bytes);
      return native.scatterv(h, sv.view, offHeap(0, sv.bytes), offHeap(1, sv.displs), r && r.view, r ? r.bytes : 0, root, mode);
    } else {
      const r = stageMove(resolve('scatterv', 'receive buffer', notInPlace('scatterv', 'receive buffer', recv, 'the root')), 'recv');
      return native.scatterv(h, null, null, null, r.view, r.bytes, root, mode);
    }
  }

  #allgatherv(mode: Mode, send: SendSpec, recv: VMsg): unknown {
    const h = this.handle;
    const r = stageMoveV(resolveV('allgatherv', 'receive spec', recv, this.#size, 0), send === IN_PLACE ? 'both' : 'recv');
    const s = send === IN_PLACE ? null : stageMove(resolve('allgatherv', 'send buffer', send), 'send');
    if (s) sameBytes('allgatherv', s.bytes, r.bytes[this.#rank]!);
    return native.allgatherv(h, s && s.view, s ? s.bytes : 0, r.view, offHeap(0, r.bytes), offHeap(1, r.displs), mode);
  }

  #alltoallv(mode: Mode, send: VMsg | typeof IN_PLACE, recv: VMsg): unknown {
    const h = this.handle;
    const r = stageMoveV(resolveV('alltoallv', 'receive spec', recv, this.#size, 2), send === IN_PLACE ? 'both' : 'recv');
    const s = send === IN_PLACE ? null : stageMoveV(resolveV('alltoallv', 'send spec', send, this.#size, 0), 'send');
    return native.alltoallv(h, s && s.view, offHeap(0, s && s.bytes), offHeap(1, s && s.displs), r.view, offHeap(2, r.bytes), offHeap(3, r.displs), mode);
  }

  #alltoallw(mode: Mode, send: WMsg | typeof IN_PLACE, recv: WMsg): unknown {
    const h = this.handle;
    const r = stageMoveV(resolveW('alltoallw', 'receive spec', recv, this.#size, 2), send === IN_PLACE ? 'both' : 'recv');
    const s = send === IN_PLACE ? null : stageMoveV(resolveW('alltoallw', 'send spec', send, this.#size, 0), 'send');
    return native.alltoallv(h, s && s.view, offHeap(0, s && s.bytes), offHeap(1, s && s.displs), r.view, offHeap(2, r.bytes), offHeap(3, r.displs), mode);
  }

  #reduceScatter(mode: Mode, send: SendSpec, recv: Msg, recvcounts: number[], op: Op = Op.SUM): unknown {
    const h = this.handle;
    const counts = countList('reduceScatter', recvcounts, this.#size);
    let total = 0;
    for (let k = 0; k < counts.length; k++) total += counts[k]!;
    const r = resolve('reduceScatter', 'receive buffer', recv);
    const need = send === IN_PLACE ? total : counts[this.#rank]!;
    if (r.count < need) {
      fail('ERR_BUFFER', 'reduceScatter', `receive buffer holds ${r.count} × ${r.type.name}, ${need} needed`);
    }
    const s = send === IN_PLACE ? null : resolve('reduceScatter', 'send buffer', send);
    if (s) {
      if (!sameType(s.type, r.type)) fail('ERR_TYPE', 'reduceScatter', `send datatype ${s.type.name} differs from receive datatype ${r.type.name}`);
      if (s.count !== total) fail('ERR_COUNT', 'reduceScatter', `send buffer holds ${s.count} items but recvcounts add up to ${total}`);
    }
    checkOp(op, r.type, 'reduceScatter');
    const user = op.id < 0;
    // Only the items this rank receives (all of them in place) are staged,
    // so receive items past them stay as they were.
    const rr = stageReduce(withCount(r, need), s ? 'recv' : 'both', user);
    const ss = s && stageReduce(s, 'send', user);
    const per = kernelItems(r.type, user);
    const items = argList(0, counts.length);
    for (let k = 0; k < counts.length; k++) items[k] = counts[k]! * per;
    return native.reduceScatter(h, ss && ss.view, rr.view, offHeap(0, items), rr.basic, op.id, userOpSpec(op, r.type), mode);
  }

  #reduceScatterBlock(mode: Mode, send: SendSpec, recv: Msg, op: Op = Op.SUM): unknown {
    const h = this.handle;
    let count: number, r: Resolved, s: Resolved | null = null;
    if (send === IN_PLACE) {
      r = resolveBlocks('reduceScatterBlock', 'receive buffer', recv, this.#size);
      count = r.count;
    } else {
      s = resolveBlocks('reduceScatterBlock', 'send buffer', send, this.#size);
      r = resolve('reduceScatterBlock', 'receive buffer', recv);
      count = s.count;
      sameItems('reduceScatterBlock', s, r);
    }
    checkOp(op, r.type, 'reduceScatterBlock');
    const user = op.id < 0;
    const total = send === IN_PLACE ? count * this.#size : count;
    const rr = stageReduce(withCount(r, total), s ? 'recv' : 'both', user);
    const ss = s && stageReduce(withCount(s, count * this.#size), 'send', user);
    const counts = argList(0, this.#size).fill(count * kernelItems(r.type, user), 0, this.#size);
    return native.reduceScatter(h, ss && ss.view, rr.view, offHeap(0, counts), rr.basic, op.id, userOpSpec(op, r.type), mode);
  }

  #scan(mode: Mode, send: SendSpec, recv: Msg, op: Op = Op.SUM): unknown {
    return this.#scanImpl(mode, 'scan', send, recv, op, false);
  }

  #exscan(mode: Mode, send: SendSpec, recv: Msg, op: Op = Op.SUM): unknown {
    return this.#scanImpl(mode, 'exscan', send, recv, op, true);
  }

  #scanImpl(mode: Mode, call: string, send: SendSpec, recv: Msg, op: Op, exclusive: boolean): unknown {
    const h = this.handle;
    const r = resolve(call, 'receive buffer', recv);
    const s = send === IN_PLACE ? null : resolve(call, 'send buffer', send);
    if (s) sameItems(call, s, r);
    checkOp(op, r.type, call);
    const user = op.id < 0;
    // exscan leaves rank 0's buffer as it was: stage it both ways.
    const rr = stageReduce(r, s && !exclusive ? 'recv' : 'both', user), ss = s && stageReduce(s, 'send', user);
    return native.scan(h, ss && ss.view, rr.view, rr.count, rr.basic, op.id, exclusive, userOpSpec(op, r.type), mode);
  }

  // Nonblocking (i-prefixed) and persistent (Init-suffixed) forms take the
  // same arguments and return a Request / PersistentRequest; the buffers
  // must not be touched until it completes.

  /** MPI_Barrier: returns once every rank has entered. */
  barrier(): void {
    this._run('barrier', Mode.BLOCKING);
  }
  /** Nonblocking barrier (MPI_Ibarrier): returns at once; await or wait() the Request. */
  ibarrier(): Request {
    return new Request(this._run('barrier', Mode.NONBLOCKING) as number, []);
  }
  /** Persistent barrier: start() runs it, as often as needed. */
  barrierInit(): PersistentRequest {
    return new PersistentRequest(this._run('barrier', Mode.PERSISTENT) as number, []);
  }

  /** MPI_Bcast: `buf` at `root` is copied into `buf` at every other rank. */
  bcast(buf: Msg, root = 0): void {
    this._run('bcast', Mode.BLOCKING, buf, root);
  }
  /** Nonblocking bcast (MPI_Ibcast): returns at once; await or wait() the Request. */
  ibcast(buf: Msg, root = 0): Request {
    return new Request(this._run('bcast', Mode.NONBLOCKING, buf, root) as number, [buf, root]);
  }
  /** Persistent bcast: start() runs it, as often as needed. */
  bcastInit(buf: Msg, root = 0): PersistentRequest {
    return new PersistentRequest(this._run('bcast', Mode.PERSISTENT, buf, root) as number, [buf, root]);
  }

  /**
   * MPI_Gather: every rank's `send` lands in block `rank` of `recv` at the
   * root. `recv` matters only at the root; IN_PLACE is for the root's send.
   */
  gather(send: SendSpec, recv: Msg | null, root = 0): void {
    this._run('gather', Mode.BLOCKING, send, recv, root);
  }
  /** Nonblocking gather (MPI_Igather): returns at once; await or wait() the Request. */
  igather(send: SendSpec, recv: Msg | null, root = 0): Request {
    return new Request(this._run('gather', Mode.NONBLOCKING, send, recv, root) as number, [send, recv, root]);
  }
  /** Persistent gather: start() runs it, as often as needed. */
  gatherInit(send: SendSpec, recv: Msg | null, root = 0): PersistentRequest {
    return new PersistentRequest(this._run('gather', Mode.PERSISTENT, send, recv, root) as number, [send, recv, root]);
  }

  /**
   * MPI_Scatter: block `r` of `send` at the root goes to rank r's `recv`.
   * `send` matters only at the root; IN_PLACE is for the root's recv.
   */
  scatter(send: Msg | null, recv: SendSpec, root = 0): void {
    this._run('scatter', Mode.BLOCKING, send, recv, root);
  }
  /** Nonblocking scatter (MPI_Iscatter): returns at once; await or wait() the Request. */
  iscatter(send: Msg | null, recv: SendSpec, root = 0): Request {
    return new Request(this._run('scatter', Mode.NONBLOCKING, send, recv, root) as number, [send, recv, root]);
  }
  /** Persistent scatter: start() runs it, as often as needed. */
  scatterInit(send: Msg | null, recv: SendSpec, root = 0): PersistentRequest {
    return new PersistentRequest(this._run('scatter', Mode.PERSISTENT, send, recv, root) as number, [send, recv, root]);
  }

  /** MPI_Allgather: every rank gets every rank's `send`, in rank order. */
  allgather(send: SendSpec, recv: Msg): void {
    this._run('allgather', Mode.BLOCKING, send, recv);
  }
  /** Nonblocking allgather (MPI_Iallgather): returns at once; await or wait() the Request. */
  iallgather(send: SendSpec, recv: Msg): Request {
    return new Request(this._run('allgather', Mode.NONBLOCKING, send, recv) as number, [send, recv]);
  }
  /** Persistent allgather: start() runs it, as often as needed. */
  allgatherInit(send: SendSpec, recv: Msg): PersistentRequest {
    return new PersistentRequest(this._run('allgather', Mode.PERSISTENT, send, recv) as number, [send, recv]);
  }

  /** MPI_Alltoall: block j of rank i's `send` becomes block i of rank j's `recv`. */
  alltoall(send: SendSpec, recv: Msg): void {
    this._run('alltoall', Mode.BLOCKING, send, recv);
  }
  /** Nonblocking alltoall (MPI_Ialltoall): returns at once; await or wait() the Request. */
  ialltoall(send: SendSpec, recv: Msg): Request {
    return new Request(this._run('alltoall', Mode.NONBLOCKING, send, recv) as number, [send, recv]);
  }
  /** Persistent alltoall: start() runs it, as often as needed. */
  alltoallInit(send: SendSpec, recv: Msg): PersistentRequest {
    return new PersistentRequest(this._run('alltoall', Mode.PERSISTENT, send, recv) as number, [send, recv]);
  }

  /**
   * MPI_Reduce: combines every rank's `send` with `op` into `recv` at the
   * root. `recv` matters only at the root; IN_PLACE is for the root's send.
   */
  reduce(send: SendSpec, recv: Msg | null, op: Op = Op.SUM, root = 0): void {
    this._run('reduce', Mode.BLOCKING, send, recv, op, root);
  }
  /** Nonblocking reduce (MPI_Ireduce): returns at once; await or wait() the Request. */
  ireduce(send: SendSpec, recv: Msg | null, op: Op = Op.SUM, root = 0): Request {
    return new Request(this._run('reduce', Mode.NONBLOCKING, send, recv, op, root) as number, [send, recv, op, root]);
  }
  /** Persistent reduce: start() runs it, as often as needed. */
  reduceInit(send: SendSpec, recv: Msg | null, op: Op = Op.SUM, root = 0): PersistentRequest {
    return new PersistentRequest(this._run('reduce', Mode.PERSISTENT, send, recv, op, root) as number, [send, recv, op, root]);
  }

  /** MPI_Allreduce: every rank gets all ranks' `send` combined with `op`. */
  allreduce(send: SendSpec, recv: Msg, op: Op = Op.SUM): void {
    this._run('allreduce', Mode.BLOCKING, send, recv, op);
  }
  /** Nonblocking allreduce (MPI_Iallreduce): returns at once; await or wait() the Request. */
  iallreduce(send: SendSpec, recv: Msg, op: Op = Op.SUM): Request {
    return new Request(this._run('allreduce', Mode.NONBLOCKING, send, recv, op) as number, [send, recv, op]);
  }
  /** Persistent allreduce: start() runs it, as often as needed. */
  allreduceInit(send: SendSpec, recv: Msg, op: Op = Op.SUM): PersistentRequest {
    return new PersistentRequest(this._run('allreduce', Mode.PERSISTENT, send, recv, op) as number, [send, recv, op]);
  }

  /**
   * MPI_Gatherv: rank r's `send` lands at `displs[r]` (items; packed in rank
   * order when omitted) of `recv` at the root. `recv` matters only at the root.
   */
  gatherv(send: SendSpec, recv: VMsg | null, root = 0): void {
    this._run('gatherv', Mode.BLOCKING, send, recv, root);
  }
  /** Nonblocking gatherv (MPI_Igatherv): returns at once; await or wait() the Request. */
  igatherv(send: SendSpec, recv: VMsg | null, root = 0): Request {
    return new Request(this._run('gatherv', Mode.NONBLOCKING, send, recv, root) as number, [send, recv, root]);
  }
  /** Persistent gatherv: start() runs it, as often as needed. */
  gathervInit(send: SendSpec, recv: VMsg | null, root = 0): PersistentRequest {
    return new PersistentRequest(this._run('gatherv', Mode.PERSISTENT, send, recv, root) as number, [send, recv, root]);
  }

  /**
   * MPI_Scatterv: the block at `displs[r]` of `send` at the root goes to
   * rank r's `recv`. `send` matters only at the root.
   */
  scatterv(send: VMsg | null, recv: SendSpec, root = 0): void {
    this._run('scatterv', Mode.BLOCKING, send, recv, root);
  }
  /** Nonblocking scatterv (MPI_Iscatterv): returns at once; await or wait() the Request. */
  iscatterv(send: VMsg | null, recv: SendSpec, root = 0): Request {
    return new Request(this._run('scatterv', Mode.NONBLOCKING, send, recv, root) as number, [send, recv, root]);
  }
  /** Persistent scatterv: start() runs it, as often as needed. */
  scattervInit(send: VMsg | null, recv: SendSpec, root = 0): PersistentRequest {
    return new PersistentRequest(this._run('scatterv', Mode.PERSISTENT, send, recv, root) as number, [send, recv, root]);
  }

  /** MPI_Allgatherv: every rank's `send` lands at `displs[r]` of every rank's `recv`. */
  allgatherv(send: SendSpec, recv: VMsg): void {
    this._run('allgatherv', Mode.BLOCKING, send, recv);
  }
  /** Nonblocking allgatherv (MPI_Iallgatherv): returns at once; await or wait() the Request. */
  iallgatherv(send: SendSpec, recv: VMsg): Request {
    return new Request(this._run('allgatherv', Mode.NONBLOCKING, send, recv) as number, [send, recv]);
  }
  /** Persistent allgatherv: start() runs it, as often as needed. */
  allgathervInit(send: SendSpec, recv: VMsg): PersistentRequest {
    return new PersistentRequest(this._run('allgatherv', Mode.PERSISTENT, send, recv) as number, [send, recv]);
  }

  /** MPI_Alltoallv: block j of rank i's `send` becomes block i of rank j's `recv`. */
  alltoallv(send: VMsg | typeof IN_PLACE, recv: VMsg): void {
    this._run('alltoallv', Mode.BLOCKING, send, recv);
  }
  /** Nonblocking alltoallv (MPI_Ialltoallv): returns at once; await or wait() the Request. */
  ialltoallv(send: VMsg | typeof IN_PLACE, recv: VMsg): Request {
    return new Request(this._run('alltoallv', Mode.NONBLOCKING, send, recv) as number, [send, recv]);
  }
  /** Persistent alltoallv: start() runs it, as often as needed. */
  alltoallvInit(send: VMsg | typeof IN_PLACE, recv: VMsg): PersistentRequest {
    return new PersistentRequest(this._run('alltoallv', Mode.PERSISTENT, send, recv) as number, [send, recv]);
  }

  /**
   * MPI_Alltoallw: as alltoallv, with byte displacements and a datatype per
   * block.
   */
  alltoallw(send: WMsg | typeof IN_PLACE, recv: WMsg): void {
    this._run('alltoallw', Mode.BLOCKING, send, recv);
  }
  /** Nonblocking alltoallw (MPI_Ialltoallw): returns at once; await or wait() the Request. */
  ialltoallw(send: WMsg | typeof IN_PLACE, recv: WMsg): Request {
    return new Request(this._run('alltoallw', Mode.NONBLOCKING, send, recv) as number, [send, recv]);
  }
  /** Persistent alltoallw: start() runs it, as often as needed. */
  alltoallwInit(send: WMsg | typeof IN_PLACE, recv: WMsg): PersistentRequest {
    return new PersistentRequest(this._run('alltoallw', Mode.PERSISTENT, send, recv) as number, [send, recv]);
  }

  /**
   * MPI_Reduce_scatter: the vector of sum(recvcounts) items is combined with
   * `op` over all ranks and rank r receives the r-th block of recvcounts[r]
   * items. With IN_PLACE the input is read from `recv`.
   */
  reduceScatter(send: SendSpec, recv: Msg, recvcounts: number[], op: Op = Op.SUM): void {
    this._run('reduceScatter', Mode.BLOCKING, send, recv, recvcounts, op);
  }
  /** Nonblocking reduceScatter (MPI_Ireducescatter): returns at once; await or wait() the Request. */
  ireduceScatter(send: SendSpec, recv: Msg, recvcounts: number[], op: Op = Op.SUM): Request {
    return new Request(this._run('reduceScatter', Mode.NONBLOCKING, send, recv, recvcounts, op) as number, [send, recv, recvcounts, op]);
  }
  /** Persistent reduceScatter: start() runs it, as often as needed. */
  reduceScatterInit(send: SendSpec, recv: Msg, recvcounts: number[], op: Op = Op.SUM): PersistentRequest {
    return new PersistentRequest(this._run('reduceScatter', Mode.PERSISTENT, send, recv, recvcounts, op) as number, [send, recv, recvcounts, op]);
  }

  /**
   * MPI_Reduce_scatter_block: as reduceScatter with every block the same
   * size. A bare send buffer is split evenly into size() blocks; with
   * IN_PLACE, `recv` holds all blocks and receives this rank's at its start.
   */
  reduceScatterBlock(send: SendSpec, recv: Msg, op: Op = Op.SUM): void {
    this._run('reduceScatterBlock', Mode.BLOCKING, send, recv, op);
  }
  /** Nonblocking reduceScatterBlock (MPI_Ireducescatterblock): returns at once; await or wait() the Request. */
  ireduceScatterBlock(send: SendSpec, recv: Msg, op: Op = Op.SUM): Request {
    return new Request(this._run('reduceScatterBlock', Mode.NONBLOCKING, send, recv, op) as number, [send, recv, op]);
  }
  /** Persistent reduceScatterBlock: start() runs it, as often as needed. */
  reduceScatterBlockInit(send: SendSpec, recv: Msg, op: Op = Op.SUM): PersistentRequest {
    return new PersistentRequest(this._run('reduceScatterBlock', Mode.PERSISTENT, send, recv, op) as number, [send, recv, op]);
  }

  /** MPI_Scan: rank r receives the combination of ranks 0..r's `send`. */
  scan(send: SendSpec, recv: Msg, op: Op = Op.SUM): void {
    this._run('scan', Mode.BLOCKING, send, recv, op);
  }
  /** Nonblocking scan (MPI_Iscan): returns at once; await or wait() the Request. */
  iscan(send: SendSpec, recv: Msg, op: Op = Op.SUM): Request {
    return new Request(this._run('scan', Mode.NONBLOCKING, send, recv, op) as number, [send, recv, op]);
  }
  /** Persistent scan: start() runs it, as often as needed. */
  scanInit(send: SendSpec, recv: Msg, op: Op = Op.SUM): PersistentRequest {
    return new PersistentRequest(this._run('scan', Mode.PERSISTENT, send, recv, op) as number, [send, recv, op]);
  }

  /**
   * MPI_Exscan: rank r receives the combination of ranks 0..r-1's `send`;
   * rank 0's `recv` is left untouched.
   */
  exscan(send: SendSpec, recv: Msg, op: Op = Op.SUM): void {
    this._run('exscan', Mode.BLOCKING, send, recv, op);
  }
  /** Nonblocking exscan (MPI_Iexscan): returns at once; await or wait() the Request. */
  iexscan(send: SendSpec, recv: Msg, op: Op = Op.SUM): Request {
    return new Request(this._run('exscan', Mode.NONBLOCKING, send, recv, op) as number, [send, recv, op]);
  }
  /** Persistent exscan: start() runs it, as often as needed. */
  exscanInit(send: SendSpec, recv: Msg, op: Op = Op.SUM): PersistentRequest {
    return new PersistentRequest(this._run('exscan', Mode.PERSISTENT, send, recv, op) as number, [send, recv, op]);
  }

  /**
   * @internal Runs collective `name` in `mode` with the public method's
   * arguments, with the packing and unpacking its datatypes need around it.
   */
  _run(name: CollectiveName, mode: Mode, ...args: unknown[]): unknown {
    // The only way back in while a call runs is a user-defined op's
    // function, and MPI does not let a user function communicate: say so,
    // rather than lose the outer call's staging or deadlock.
    if (running > 0) {
      fail('ERR_OTHER', name, 'called from inside the user-defined op of another collective; a user function must not communicate');
    }
    // A blocking call with the very arguments of a recent one runs as the
    // persistent request made of it (lib/replay.ts).
    if (mode === Mode.BLOCKING) {
      const replays = this._replays();
      if (replays !== null) {
        const id = replays.find(name, args);
        if (id >= 0 && replays.run(id)) return undefined;
        if (id === RECORD && this.#keep(replays, name, args)) return undefined;
      }
    }
    // JavaScript may run while the operation holds the buffers (a request
    // in flight, a user op's function): refuse what could shrink under it,
    // and keep the rest from being taken away (lib/hold.ts).
    const held = mode !== Mode.BLOCKING || hasUserOp(args) ? hold(publicName(name, mode), name, args) : null;
    beginStaging(mode === Mode.BLOCKING);
    let result: unknown;
    running++;
    try {
      result = this._collective(name, mode, held ? held.args : args);
    } catch (err) {
      // Nothing is in flight after a failed call (blocking or not started).
      releaseStaging(takeStaging());
      throw retitle(err, publicName(name, mode));
    } finally {
      running--;
    }
    // Derived datatypes: unpack now, or when the request completes.
    const st = takeStaging();
    if (mode === Mode.BLOCKING) {
      if (st) {
        for (const f of st.after) f();
        releaseStaging(st);
      }
      held?.after();
    } else {
      // The request checks (and copies) the caller's buffers before each
      // start, then packs; at completion it unpacks, then checks (and
      // copies back).
      setNextCall(publicName(name, mode), held);
      if (st) setNextHooks(st);
    }
    return result;
  }

  // The second of two identical blocking calls: made a persistent request
  // and run from it. False when it staged a derived type (then it runs as
  // usual, and is never kept).
  #keep(replays: Replays, name: CollectiveName, args: unknown[]): boolean {
    beginStaging(false);
    let id: unknown;
    running++;
    try {
      id = this._collective(name, Mode.PERSISTENT, args);
    } catch (err) {
      takeStaging();
      throw retitle(err, name);
    } finally {
      running--;
    }
    const staged = takeStaging() !== null;
    if (typeof id !== 'number') return false;
    if (staged) {
      replays.kept(-1);
      native.freeTemplate(id);
      return false;
    }
    replays.kept(id);
    return native.runTemplate(id);
  }

  /**
   * @internal This communicator's replays of repeated blocking calls.
   * Intercomm has none: its collectives make more than one call to the
   * addon, or exchange counts first.
   */
  protected _replays(): Replays | null {
    return (this.#replays ??= new Replays());
  }

  /** @internal The collective itself; Intercomm overrides it with the intercommunicator forms. */
  protected _collective(name: CollectiveName, mode: Mode, args: unknown[]): unknown {
    switch (name) {
      case 'barrier': return this.#barrier(mode, ...(args as Parameters<Comm['barrier']>));
      case 'bcast': return this.#bcast(mode, ...(args as Parameters<Comm['bcast']>));
      case 'gather': return this.#gather(mode, ...(args as Parameters<Comm['gather']>));
      case 'scatter': return this.#scatter(mode, ...(args as Parameters<Comm['scatter']>));
      case 'allgather': return this.#allgather(mode, ...(args as Parameters<Comm['allgather']>));
      case 'alltoall': return this.#alltoall(mode, ...(args as Parameters<Comm['alltoall']>));
      case 'reduce': return this.#reduce(mode, ...(args as Parameters<Comm['reduce']>));
      case 'allreduce': return this.#allreduce(mode, ...(args as Parameters<Comm['allreduce']>));
      case 'gatherv': return this.#gatherv(mode, ...(args as Parameters<Comm['gatherv']>));
      case 'scatterv': return this.#scatterv(mode, ...(args as Parameters<Comm['scatterv']>));
      case 'allgatherv': return this.#allgatherv(mode, ...(args as Parameters<Comm['allgatherv']>));
      case 'alltoallv': return this.#alltoallv(mode, ...(args as Parameters<Comm['alltoallv']>));
      case 'alltoallw': return this.#alltoallw(mode, ...(args as Parameters<Comm['alltoallw']>));
      case 'reduceScatter': return this.#reduceScatter(mode, ...(args as Parameters<Comm['reduceScatter']>));
      case 'reduceScatterBlock': return this.#reduceScatterBlock(mode, ...(args as Parameters<Comm['reduceScatterBlock']>));
      case 'scan': return this.#scan(mode, ...(args as Parameters<Comm['scan']>));
      case 'exscan': return this.#exscan(mode, ...(args as Parameters<Comm['exscan']>));
    }
  }

  #checkRoot(call: string, root: unknown): void {
    if (typeof root !== 'number' || !Number.isInteger(root)) {
      fail('ERR_ROOT', call, `root must be an integer rank from 0 to ${this.#size - 1} (communicator of size ${this.#size}), got ${describe(root)}`);
    }
    if (root < 0 || root >= this.#size) {
      fail('ERR_ROOT', call, `root ${root} is out of range for a communicator of size ${this.#size}`);
    }
  }
}

// Collective calls of this thread in progress (see Comm._run).
let running = 0;

// The method a collective was called through, for messages.
// (Made once per collective: a string per call costs more than the lookup.)
const iNames = new Map<string, string>(), initNames = new Map<string, string>();
function publicName(name: string, mode: Mode): string {
  if (mode === Mode.NONBLOCKING) {
    let s = iNames.get(name);
    if (s === undefined) iNames.set(name, (s = `i${name}`));
    return s;
  }
  if (mode === Mode.PERSISTENT) {
    let s = initNames.get(name);
    if (s === undefined) initNames.set(name, (s = `${name}Init`));
    return s;
  }
  return name;
}


function countList(call: string, list: unknown, n: number): number[] {
  if (!Array.isArray(list) || list.length !== n) {
    fail('ERR_ARG', call, `recvcounts must list one count per rank (${n}), got ${describe(list)}`);
  }
  for (let r = 0; r < n; r++) {
    const v: unknown = list[r];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
      fail('ERR_COUNT', call, `recvcounts[${r}] must be a non-negative integer, got ${describe(v)}`);
    }
  }
  return list as number[];
}

// Kernel items per item: a derived type reduces element by element.
function kernelItems(t: Datatype, userOp: boolean): number {
  return t.predefined || userOp ? 1 : t.elements;
}

function notInPlace<T>(call: string, what: string, spec: T | typeof IN_PLACE, where: string): T {
  if (spec === IN_PLACE) fail('ERR_ARG', call, `IN_PLACE for the ${what} is only allowed at ${where}`);
  return spec;
}

// The send and receive sides of one rank must carry the same number of bytes.
function sameBytes(call: string, send: number, recv: number): void {
  if (send > recv) fail('ERR_TRUNCATE', call, `send buffer carries ${send} bytes but a receive block holds only ${recv}`);
  if (send < recv) fail('ERR_COUNT', call, `send buffer carries ${send} bytes but a receive block expects ${recv}`);
}

// Reductions need the same datatype and count on both sides.
function sameItems(call: string, send: Resolved, recv: Resolved): void {
  if (!sameType(send.type, recv.type)) {
    fail('ERR_TYPE', call, `send datatype ${send.type.name} differs from receive datatype ${recv.type.name}`);
  }
  if (send.count !== recv.count) {
    fail('ERR_COUNT', call, `send count ${send.count} differs from receive count ${recv.count}`);
  }
}

function sameType(a: Datatype, b: Datatype): boolean {
  return a === b || (a.basic === b.basic && a.category === b.category && a.extent === b.extent);
}
