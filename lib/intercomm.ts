/**
 * Intercommunicators: two disjoint groups whose collectives move data from
 * one group to the other (MPI 4.1 §6.2.2). Both groups share one context in
 * the segment, ordered "low" group first (the group whose leader has the
 * lower world rank). Their collectives are the intercommunicator forms of
 * lib/coll/collectives.ts.
 */
import type { InterMembers, Started } from './coll/backend.js';
import type { Collective } from './coll/collectives.js';
import { active as backend } from './coll/active.js';
import { Comm, noContext, registerIntercomm, type Intercomm as IntercommShape } from './comm.js';
import { CONGRUENT, IDENT, IN_PLACE, SIMILAR, UNEQUAL } from './constants.js';
import { describe, fail, MPIError } from './errors.js';
import { Group } from './group.js';
import { native } from './native.js';
import { Mode } from './request.js';
import { worldRank } from './runtime.js';
// The context a leader broadcasts when its part of createIntercomm failed.
const LEADER_FAILED = -2;

/** An intercommunicator (MPI_Comm with a remote group). */
export class Intercomm extends Comm implements IntercommShape {
  readonly #local: Group;
  readonly #remote: Group;
  readonly #low: boolean;
  readonly #lrank: number;
  #view: InterMembers | null = null;

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
   * @internal The intercommunicator form of collective `d`
   * (lib/coll/collectives.ts). No collective takes IN_PLACE here.
   */
  protected override _collective<A extends unknown[]>(d: Collective<A>, mode: Mode, args: A): Started {
    if (args.includes(IN_PLACE)) fail('ERR_ARG', d.name, 'IN_PLACE is not allowed on an intercommunicator');
    return d.inter(backend.inter, this.#interMembers(), mode, ...args);
  }

  // The members as the backends see them; the same object from call to call.
  #interMembers(): InterMembers {
    const m = this._members();
    if (this.#view === null || this.#view.handle !== m.handle) {
      this.#view = {
        handle: m.handle, rank: this.#lrank, size: this.#local.size, remoteSize: this.#remote.size,
        localBase: this.#base(true), remoteBase: this.#base(false),
      };
    }
    return this.#view;
  }

  // Merged rank of local (or remote) rank 0.
  #base(local: boolean): number {
    return local === this.#low ? 0 : (local ? this.#remote.size : this.#local.size);
  }

  #merged(): number[] {
    return this.#low ? [...this.#local.worldRanks, ...this.#remote.worldRanks] : [...this.#remote.worldRanks, ...this.#local.worldRanks];
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
