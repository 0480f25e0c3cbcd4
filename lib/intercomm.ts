/**
 * Intercommunicators: two disjoint groups whose collectives move data from
 * one group to the other (MPI 4.1 §6.2.2). Both groups share one context in
 * the segment, ordered "low" group first (the group whose leader has the
 * lower world rank); each intercommunicator collective runs as one native
 * v-collective over that merged context, with zero counts for the ranks of
 * the sending side's own group, so it is queued and matched like any other.
 */
import { argList } from './args.js';
import { Comm, noContext, registerIntercomm, type CollectiveName, type Intercomm as IntercommShape } from './comm.js';
import { CONGRUENT, IDENT, IN_PLACE, PROC_NULL, ROOT, SIMILAR, UNEQUAL } from './constants.js';
import { BasicType, Datatype } from './datatype.js';
import { describe, fail, MPIError } from './errors.js';
import { Group } from './group.js';
import {
  resolve, resolveBlocks, resolveV, resolveW, stageMove, stageMoveV, stageReduce, withCount, type Resolved, type ResolvedV, type Side,
} from './message.js';
import { native } from './native.js';
import { checkOp, Op, userOpSpec } from './op.js';
import { kernelType } from './pack.js';
import { Mode } from './request.js';
import { worldRank } from './runtime.js';

const EMPTY = new Uint8Array(0);
// What a rank's part in an intercommunicator reduction is (exchangeFold's kind).
const FOLD = { none: 0, reduce: 1, allreduce: 2, reduceScatter: 3 } as const;
// The context a leader broadcasts when its part of createIntercomm failed.
const LEADER_FAILED = -2;

/** An intercommunicator (MPI_Comm with a remote group). */
export class Intercomm extends Comm implements IntercommShape {
  readonly #local: Group;
  readonly #remote: Group;
  readonly #low: boolean;
  readonly #lrank: number;

  /** @internal */
  constructor(handle: number, local: Group, remote: Group, low: boolean) {
    super(handle, '', local);
    this.#local = local;
    this.#remote = remote;
    this.#low = low;
    this.#lrank = local.worldRanks.indexOf(worldRank());
  }

  /** This rank in the local group. */
  override get rank(): number {
    this._live('rank');
    return this.#lrank;
  }

  /** Size of the local group. */
  override get size(): number {
    this._live('size');
    return this.#local.size;
  }

  override get isInter(): boolean {
    return true;
  }

  /** Size of the remote group (MPI_Comm_remote_size). */
  get remoteSize(): number {
    this._live('remoteSize');
    return this.#remote.size;
  }

  /** MPI_Comm_remote_group. */
  remoteGroup(): Group {
    this._live('remoteGroup');
    return this.#remote;
  }

  override group(): Group {
    this._live('group');
    return this.#local;
  }

  /**
   * MPI_Intercomm_merge: an intracommunicator of both groups; the group that
   * passes high = false comes first (the low group when both pass the same).
   */
  merge(high: boolean): Comm {
    const h = this._live('merge');
    if (typeof high !== 'boolean') fail('ERR_ARG', 'merge', `high must be a boolean, got ${describe(high)}`);
    const n = this.#local.size + this.#remote.size;
    const flags = new Int32Array(n);
    native.allgather(h, Int32Array.of(high ? 1 : 0), flags, 4, 0, 0, 0, 0, Mode.BLOCKING);
    const localHigh = flags[this.#base(true)] === 1, remoteHigh = flags[this.#base(false)] === 1;
    const localFirst = localHigh === remoteHigh ? this.#low : !localHigh;
    const world = localFirst ? [...this.#local.worldRanks, ...this.#remote.worldRanks] : [...this.#remote.worldRanks, ...this.#local.worldRanks];
    const me = world.indexOf(worldRank());
    const ctx = this.#agreeContext(h, 'merge', me === 0 ? n : 0);
    return new Comm(native.commCreate(ctx, me, Int32Array.from(world)), '', new Group(world));
  }

  /** MPI_Comm_dup of an intercommunicator: the same groups, a new context. */
  override dup(): Intercomm {
    const h = this._live('dup');
    const world = this.#merged();
    const me = this.#base(true) + this.#lrank;
    const ctx = this.#agreeContext(h, 'dup', me === 0 ? world.length : 0);
    return new Intercomm(native.commCreate(ctx, me, Int32Array.from(world)), this.#local, this.#remote, this.#low);
  }

  override split(): Comm | null {
    fail('ERR_COMM', 'split', 'splitting an intercommunicator is not supported; merge() it first');
  }

  override splitType(): Comm | null {
    fail('ERR_COMM', 'splitType', 'splitType of an intercommunicator is not supported; merge() it first');
  }

  override create(): Comm | null {
    fail('ERR_COMM', 'create', 'create on an intercommunicator is not supported; merge() it first');
  }

  /**
   * MPI_Comm_compare for intercommunicators: IDENT for the same one,
   * CONGRUENT when both local and both remote groups are identical, SIMILAR
   * when each pair has the same members, UNEQUAL otherwise or against an
   * intracommunicator (MPI 4.1 §7.6.1).
   */
  override compare(other: Comm): number {
    if (!(other instanceof Comm)) fail('ERR_COMM', 'compare', `other must be a Comm, got ${describe(other)}`);
    this._live('compare');
    other._live('compare');
    if (other === this) return IDENT;
    if (!(other instanceof Intercomm)) return UNEQUAL;
    const l = this.#local.compare(other.#local), r = this.#remote.compare(other.#remote);
    if (l === UNEQUAL || r === UNEQUAL) return UNEQUAL;
    return l === IDENT && r === IDENT ? CONGRUENT : SIMILAR;
  }

  /** @internal No replays (Comm._replays): these collectives make more than one call to the addon, or exchange counts first. */
  protected override _replays(): null {
    return null;
  }

  /**
   * @internal The intercommunicator form of every collective: one native
   * v-collective over the merged context. Derived datatypes travel as their
   * packed streams and reduce in kernel layout, as on intracommunicators
   * (lib/message.ts staging; Comm._run unpacks after completion).
   */
  protected override _collective(name: CollectiveName, mode: Mode, args: unknown[]): unknown {
    const h = this.handle;
    if (name === 'scan' || name === 'exscan') fail('ERR_COMM', name, 'scan and exscan are not defined on intercommunicators');
    if (args.includes(IN_PLACE)) fail('ERR_ARG', name, 'IN_PLACE is not allowed on an intercommunicator');
    const nr = this.#remote.size;
    const size = this.#local.size + nr;
    // Per-merged-rank lists for the addon, in the off-heap argument slots
    // (lib/args.ts): no native call here takes more than four, and each
    // reads its lists during the call, so handing the slots out in turn is
    // safe. Grown, if they must be, before the first is handed out.
    // A list is passed by its slot number, which spares the addon
    // unwrapping a view.
    argList(0, size);
    let next = 0;
    // The next slot, zeroed: its number (argList(k, size) is its view).
    const zeros = (): number => {
      const k = next++ & 3;
      argList(k, size).fill(0, 0, size);
      return k;
    };
    // Per merged rank: `bytes` to (or from) remote rank i, at displs[i].
    const toRemote = (bytes: (i: number) => number, displ: (i: number) => number): [number, number] => {
      const kb = zeros(), kd = zeros();
      const b = argList(kb, size), d = argList(kd, size);
      const base = this.#base(false);
      for (let i = 0; i < nr; i++) {
        b[base + i] = bytes(i);
        d[base + i] = displ(i);
      }
      return [kb, kd];
    };
    const fromV = (v: ResolvedV) => toRemote((i) => v.bytes[i]!, (i) => v.displs[i]!);
    // One message, or one block per remote rank, in its wire form.
    const one = (call: string, what: string, spec: unknown, side: Side) => stageMove(resolve(call, what, spec), side);
    const blocks = (call: string, what: string, spec: unknown, side: Side) => stageMove(resolveBlocks(call, what, spec, nr), side, nr);
    switch (name) {
      case 'barrier':
        return native.barrier(h, mode);
      case 'bcast': {
        const [buf, root] = args as [unknown, number];
        const r = this.#root('bcast', root);
        if (r.role === 'root') {
          const m = one('bcast', 'buffer', buf, 'send');
          const [b, d] = toRemote(() => m.bytes, () => 0);
          return native.scatterv(h, m.view, b, d, EMPTY, 0, r.merged, mode);
        }
        if (r.role === 'none') return native.scatterv(h, null, null, null, EMPTY, 0, -1, mode);
        const m = one('bcast', 'buffer', buf, 'recv');
        return native.scatterv(h, null, null, null, m.view, m.bytes, r.merged, mode);
      }
      case 'gather':
      case 'gatherv': {
        const [send, recv, root] = args as [unknown, unknown, number];
        const r = this.#root(name, root);
        if (r.role === 'root') {
          if (name === 'gather') {
            const rv = blocks(name, 'receive buffer', recv, 'recv');
            const [b, d] = toRemote(() => rv.bytes, (i) => i * rv.bytes);
            return native.gatherv(h, EMPTY, 0, rv.view, b, d, r.merged, mode);
          }
          const rv = stageMoveV(resolveV(name, 'receive spec', recv, nr), 'recv');
          const [b, d] = fromV(rv);
          return native.gatherv(h, EMPTY, 0, rv.view, b, d, r.merged, mode);
        }
        if (r.role === 'none') return native.gatherv(h, EMPTY, 0, null, null, null, -1, mode);
        const m = one(name, 'send buffer', send, 'send');
        return native.gatherv(h, m.view, m.bytes, null, null, null, r.merged, mode);
      }
      case 'scatter':
      case 'scatterv': {
        const [send, recv, root] = args as [unknown, unknown, number];
        const r = this.#root(name, root);
        if (r.role === 'root') {
          if (name === 'scatter') {
            const sv = blocks(name, 'send buffer', send, 'send');
            const [b, d] = toRemote(() => sv.bytes, (i) => i * sv.bytes);
            return native.scatterv(h, sv.view, b, d, EMPTY, 0, r.merged, mode);
          }
          const sv = stageMoveV(resolveV(name, 'send spec', send, nr), 'send');
          const [b, d] = fromV(sv);
          return native.scatterv(h, sv.view, b, d, EMPTY, 0, r.merged, mode);
        }
        if (r.role === 'none') return native.scatterv(h, null, null, null, EMPTY, 0, -1, mode);
        const m = one(name, 'receive buffer', recv, 'recv');
        return native.scatterv(h, null, null, null, m.view, m.bytes, r.merged, mode);
      }
      case 'allgather':
      case 'allgatherv': {
        const [send, recv] = args;
        const s = one(name, 'send buffer', send, 'send');
        const [sb, sd] = toRemote(() => s.bytes, () => 0);
        if (name === 'allgather') {
          const rv = blocks(name, 'receive buffer', recv, 'recv');
          const [rb, rd] = toRemote(() => rv.bytes, (i) => i * rv.bytes);
          return native.alltoallv(h, s.view, sb, sd, rv.view, rb, rd, mode);
        }
        const rv = stageMoveV(resolveV(name, 'receive spec', recv, nr), 'recv');
        const [rb, rd] = fromV(rv);
        return native.alltoallv(h, s.view, sb, sd, rv.view, rb, rd, mode);
      }
      case 'alltoall': {
        const [send, recv] = args;
        const s = blocks(name, 'send buffer', send, 'send'), rv = blocks(name, 'receive buffer', recv, 'recv');
        const [sb, sd] = toRemote(() => s.bytes, (i) => i * s.bytes);
        const [rb, rd] = toRemote(() => rv.bytes, (i) => i * rv.bytes);
        return native.alltoallv(h, s.view, sb, sd, rv.view, rb, rd, mode);
      }
      case 'alltoallv':
      case 'alltoallw': {
        const [send, recv] = args;
        const rs = name === 'alltoallv' ? resolveV : resolveW;
        const s = stageMoveV(rs(name, 'send spec', send, nr), 'send'), rv = stageMoveV(rs(name, 'receive spec', recv, nr), 'recv');
        const [sb, sd] = fromV(s);
        const [rb, rd] = fromV(rv);
        return native.alltoallv(h, s.view, sb, sd, rv.view, rb, rd, mode);
      }
      case 'reduce': {
        const [send, recv, opArg, root] = args as [unknown, unknown, Op | undefined, number | undefined];
        const op = opArg === undefined ? Op.SUM : opArg;
        const r = this.#root('reduce', root === undefined ? 0 : root);
        if (r.role === 'root') {
          const m = resolve('reduce', 'receive buffer', recv);
          checkOp(op, m.type, 'reduce');
          const k = reducible(m, 'recv', op);
          const [rb] = toRemote(() => k.bytes, () => 0);
          return native.exchangeFold(h, EMPTY, zeros(), zeros(), k.view, rb, k.count, k.basic, op.id, userOpSpec(op, m.type), FOLD.reduce, mode);
        }
        if (r.role === 'none') {
          // No data here, but a user op's failure verdict is collective: an
          // idle rank takes part in it too.
          // The datatype is not significant here, so neither is whether
          // the op suits it; but it must be a live op, as everywhere.
          if (!(op instanceof Op)) fail('ERR_OP', 'reduce', `op must be an Op, got ${describe(op)}`);
          if (op.freed) fail('ERR_OP', 'reduce', `op ${op.name} has been freed`);
          const user = userOpSpec(op, Datatype.BYTE);
          return native.exchangeFold(h, EMPTY, zeros(), zeros(), null, zeros(), 0, BasicType.U8, user ? op.id : Op.SUM.id, user, FOLD.none, mode);
        }
        const m = resolve('reduce', 'send buffer', send);
        checkOp(op, m.type, 'reduce');
        const k = reducible(m, 'send', op);
        const sb = zeros();
        argList(sb, size)[r.merged] = k.bytes;
        return native.exchangeFold(h, k.view, sb, zeros(), null, zeros(), k.count, k.basic, op.id, userOpSpec(op, m.type), FOLD.reduce, mode);
      }
      case 'allreduce': {
        const [send, recv, opArg] = args as [unknown, unknown, Op | undefined];
        const op = opArg === undefined ? Op.SUM : opArg;
        const s = resolve('allreduce', 'send buffer', send), m = resolve('allreduce', 'receive buffer', recv);
        this.#sameItems('allreduce', s, m);
        checkOp(op, m.type, 'allreduce');
        const ks = reducible(s, 'send', op), kr = reducible(m, 'recv', op);
        const [sb, sd] = toRemote(() => ks.bytes, () => 0);
        const [rb] = toRemote(() => kr.bytes, () => 0);
        return native.exchangeFold(h, ks.view, sb, sd, kr.view, rb, kr.count, kr.basic, op.id, userOpSpec(op, m.type), FOLD.allreduce, mode);
      }
      case 'reduceScatterBlock': {
        const [send, recv, opArg] = args as [unknown, unknown, Op | undefined];
        const op = opArg === undefined ? Op.SUM : opArg;
        const s = resolveBlocks(name, 'send buffer', send, nr), m = resolve(name, 'receive buffer', recv);
        this.#sameItems(name, s, m);
        checkOp(op, m.type, name);
        const ks = reducible(withCount(s, s.count * nr), 'send', op), kr = reducible(m, 'recv', op);
        const [sb, sd] = toRemote(() => kr.bytes, (i) => i * kr.bytes);
        const [rb] = toRemote(() => kr.bytes, () => 0);
        return native.exchangeFold(h, ks.view, sb, sd, kr.view, rb, kr.count, kr.basic, op.id, userOpSpec(op, m.type), FOLD.reduceScatter, mode);
      }
      case 'reduceScatter': {
        const [send, recv, counts, opArg] = args as [unknown, unknown, number[], Op | undefined];
        const op = opArg === undefined ? Op.SUM : opArg;
        if (!Array.isArray(counts) || counts.length !== this.#local.size || !counts.every((c) => Number.isSafeInteger(c) && c >= 0)) {
          fail('ERR_COUNT', name, `recvcounts must list a non-negative count for each of the ${this.#local.size} local ranks, got ${describe(counts)}`);
        }
        const m = resolve(name, 'receive buffer', recv);
        if (m.count < counts[this.#lrank]!) fail('ERR_BUFFER', name, `receive buffer holds ${m.count} items, ${counts[this.#lrank]} needed`);
        const s = resolve(name, 'send buffer', send);
        if (s.type.basic !== m.type.basic || s.type.extent !== m.type.extent) {
          fail('ERR_TYPE', name, `send datatype ${s.type.name} differs from receive datatype ${m.type.name}`);
        }
        checkOp(op, m.type, name);
        // Each side learns how the other distributes its result: one small
        // exchange of this rank's count, then the reduction itself.
        const mine = counts[this.#lrank]!;
        const remoteCounts = new Float64Array(nr);
        const [cb, cd] = toRemote(() => 8, () => 0);
        const [crb, crd] = toRemote(() => 8, (i) => 8 * i);
        native.alltoallv(h, Float64Array.of(mine), cb, cd, remoteCounts, crb, crd, Mode.BLOCKING);
        const total = remoteCounts.reduce((a, b) => a + b, 0);
        if (s.count !== total) fail('ERR_COUNT', name, `send buffer holds ${s.count} items but the remote group's recvcounts add up to ${total}`);
        const ks = reducible(s, 'send', op), kr = reducible(withCount(m, mine), 'recv', op);
        // Bytes of one datatype item in the form the fold works on.
        const item = s.count ? ks.bytes / s.count : kr.count ? kr.bytes / mine : 0;
        let at = 0;
        const offs = Array.from(remoteCounts, (c) => ((at += c), at - c));
        const [sb, sd] = toRemote((i) => remoteCounts[i]! * item, (i) => offs[i]! * item);
        const [rb] = toRemote(() => kr.bytes, () => 0);
        return native.exchangeFold(h, ks.view, sb, sd, kr.view, rb, kr.count, kr.basic, op.id, userOpSpec(op, m.type), FOLD.reduceScatter, mode);
      }
    }
    fail('ERR_COMM', name, 'not defined on intercommunicators');
  }

  // Merged rank of local (or remote) rank 0.
  #base(local: boolean): number {
    return local === this.#low ? 0 : (local ? this.#remote.size : this.#local.size);
  }

  #merged(): number[] {
    return this.#low ? [...this.#local.worldRanks, ...this.#remote.worldRanks] : [...this.#remote.worldRanks, ...this.#local.worldRanks];
  }

  #root(call: string, root: unknown): { role: 'root' | 'none' | 'remote'; merged: number } {
    if (root === ROOT) return { role: 'root', merged: this.#base(true) + this.#lrank };
    if (root === PROC_NULL) return { role: 'none', merged: -1 };
    if (typeof root === 'number' && Number.isInteger(root) && root >= 0 && root < this.#remote.size) {
      return { role: 'remote', merged: this.#base(false) + root };
    }
    fail('ERR_ROOT', call, `root must be mpi.ROOT, mpi.PROC_NULL or a rank of the remote group (size ${this.#remote.size}), got ${describe(root)}`);
  }

  #sameItems(call: string, s: { type: { basic: number; name: string }; count: number }, r: { type: { basic: number; name: string }; count: number }): void {
    if (s.type.basic !== r.type.basic) fail('ERR_TYPE', call, `send datatype ${s.type.name} differs from receive datatype ${r.type.name}`);
    if (s.count !== r.count) fail('ERR_COUNT', call, `send count ${s.count} differs from receive count ${r.count}`);
  }

  // Collective over the merged context: the rank that passes members > 0
  // takes a context; every rank learns it.
  #agreeContext(h: number, call: string, members: number): number {
    const n = this.#local.size + this.#remote.size;
    const id = members > 0 ? native.ctxAlloc(members) : 0;
    const ids = new Int32Array(n);
    native.allgather(h, Int32Array.of(id), ids, 4, 0, 0, 0, 0, Mode.BLOCKING);
    const ctx = Math.max(...ids) > 0 ? Math.max(...ids) : Math.min(...ids);
    if (ctx < 0) noContext(call);
    return ctx;
  }
}

// MPI_Intercomm_create, run by every rank of `local`.
registerIntercomm((local, localLeader, peerComm, remoteLeader, tag) => {
  const call = 'createIntercomm';
  if (local.isInter) fail('ERR_COMM', call, 'the local communicator must be an intracommunicator, got an intercommunicator');
  if (!Number.isInteger(localLeader) || localLeader < 0 || localLeader >= local.size) {
    fail('ERR_RANK', call, `localLeader ${describe(localLeader)} is not a rank of a communicator of size ${local.size}`);
  }
  if (!Number.isInteger(tag) || tag < 0) fail('ERR_TAG', call, `tag must be a non-negative integer, got ${describe(tag)}`);
  const localWorld = local.group().worldRanks;
  let header = new Int32Array(3);
  let remoteWorld: Int32Array | null = null;
  let failure: MPIError | null = null;
  if (local.rank === localLeader) {
    // peerComm and remoteLeader matter at the leader only (MPI 4.1 §7.6.2).
    // What goes wrong here goes to the whole local group (step 3), which
    // would otherwise wait for the leader's header forever.
    try {
      if (!(peerComm instanceof Comm)) fail('ERR_COMM', call, `peerComm must be a Comm, got ${describe(peerComm)}`);
      if (!Number.isInteger(remoteLeader) || remoteLeader < 0 || remoteLeader >= peerComm.size) {
        fail('ERR_RANK', call, `remoteLeader ${describe(remoteLeader)} is not a rank of peerComm (size ${peerComm.size})`);
      }
      const peerWorld = peerComm.group().worldRanks[remoteLeader]!;
      if (localWorld.includes(peerWorld)) fail('ERR_ARG', call, `the remote leader (world rank ${peerWorld}) is in the local group; the groups must be disjoint`);
      // 1. The leaders swap their groups; 2. the one with the lower world
      //    rank takes a context for both groups and tells the other.
      const got = native.leaderExchange(peerWorld, tag, Int32Array.of(localWorld.length, ...localWorld));
      const theirs = got[0]!;
      remoteWorld = got.slice(1, 1 + theirs);
      const low = worldRank() < peerWorld;
      const mine = low ? native.ctxAlloc(localWorld.length + theirs) : 0;
      const ctx = native.leaderExchange(peerWorld, tag, Int32Array.of(mine))[0]!;
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
  const hdr = header;
  local.bcast(hdr, localLeader);
  const [ctx, , lowFlag] = hdr as unknown as [number, number, number];
  const nRemote = ctx === LEADER_FAILED ? hdr[2]! : hdr[1]!;
  const remote = remoteWorld && local.rank === localLeader ? remoteWorld : new Int32Array(nRemote);
  local.bcast(remote, localLeader);
  if (ctx === LEADER_FAILED) {
    if (failure) throw failure;
    const text = new TextDecoder().decode(Uint8Array.from(remote));
    throw MPIError.fromClass(hdr[1]!, `${call}: at the local leader (rank ${localLeader}): ${text.replace(/^createIntercomm: /, '')}`);
  }
  if (ctx < 0) noContext(call);
  const low = lowFlag === 1;
  const remoteGroup = new Group(Array.from(remote));
  const localGroup = new Group(localWorld);
  const merged = low ? [...localWorld, ...remote] : [...remote, ...localWorld];
  const me = merged.indexOf(worldRank());
  const handle = native.commCreate(ctx, me, Int32Array.from(merged));
  return new Intercomm(handle, localGroup, remoteGroup, low);
});

// A reduction operand in the form the fold works on, with its byte size:
// predefined types and user ops as items, derived types as kernel elements.
function reducible(m: Resolved, side: Side, op: Op): { view: ArrayBufferView; count: number; basic: number; bytes: number } {
  const user = op.id < 0;
  const k = stageReduce(m, side, user);
  const unit = user || m.type.predefined ? m.type.extent : kernelType(m.type)!.extent;
  return { ...k, bytes: k.count * unit };
}
