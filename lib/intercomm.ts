/**
 * Intercommunicators: two disjoint groups whose collectives move data from
 * one group to the other (MPI 4.1 §6.2.2). Their collectives are the
 * intercommunicator forms of lib/coll/collectives.ts; the backend makes and
 * runs them (on shm both groups share one context, "low" group first: the
 * group whose leader has the lower world rank).
 */
import type { MadeInter } from './backend.js';
import { backend } from './backends/active.js';
import type { InterMembers, Started } from './coll/backend.js';
import type { Collective } from './coll/collectives.js';
import { Comm, registerIntercomm, type Intercomm as IntercommShape } from './comm.js';
import { CONGRUENT, IDENT, IN_PLACE, SIMILAR, UNEQUAL } from './constants.js';
import { describe, fail, MPIError } from './errors.js';
import { Group } from './group.js';
import type { Mode } from './request.js';
import { worldRank } from './runtime.js';

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
    this._live('merge');
    if (typeof high !== 'boolean') fail('ERR_ARG', 'merge', `high must be a boolean, got ${describe(high)}`);
    const m = backend.comms.merge(this.#interMembers(), this.#local.worldRanks, this.#remote.worldRanks, this.#low, high);
    return new Comm(m.handle, '', new Group(m.world));
  }

  /** MPI_Comm_dup of an intercommunicator: the same groups, a new context. */
  override dup(): Intercomm {
    this._live('dup');
    return made(backend.comms.dupInter(this.#interMembers(), this.#local.worldRanks, this.#remote.worldRanks, this.#low));
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
    return d.inter(backend.collectives.inter, this.#interMembers(), mode, ...args);
  }

  /** @internal Point-to-point names ranks of the remote group. */
  override _peers(): InterMembers {
    return this.#interMembers();
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

}

function made(m: MadeInter): Intercomm {
  return new Intercomm(m.handle, new Group(m.local), new Group(m.remote), m.low);
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
  let peer: { comm: Comm; remoteLeader: number; remoteWorld: number } | null = null;
  let failure: MPIError | null = null;
  if (local.rank === localLeader) {
    // peerComm and remoteLeader matter at the leader only (MPI 4.1 §7.6.2).
    try {
      if (!(peerComm instanceof Comm)) fail('ERR_COMM', call, `peerComm must be a Comm, got ${describe(peerComm)}`);
      if (!Number.isInteger(remoteLeader) || remoteLeader < 0 || remoteLeader >= peerComm.size) {
        fail('ERR_RANK', call, `remoteLeader ${describe(remoteLeader)} is not a rank of peerComm (size ${peerComm.size})`);
      }
      const remoteWorld = peerComm.group().worldRanks[remoteLeader]!;
      if (localWorld.includes(remoteWorld)) fail('ERR_ARG', call, `the remote leader (world rank ${remoteWorld}) is in the local group; the groups must be disjoint`);
      peer = { comm: peerComm, remoteLeader, remoteWorld };
    } catch (err) {
      if (!(err instanceof MPIError)) throw err;
      failure = err;
    }
  }
  // What the leader found wrong goes to the whole local group, which would
  // otherwise wait for the leader forever: class and message, then on.
  const verdict = Int32Array.of(failure ? failure.errorClass : 0, 0);
  const text = failure ? new TextEncoder().encode(failure.message) : new Uint8Array(0);
  verdict[1] = text.length;
  local.bcast(verdict, localLeader);
  if (verdict[0] !== 0) {
    const got = local.rank === localLeader ? text : new Uint8Array(verdict[1]!);
    local.bcast(got, localLeader);
    if (failure) throw failure;
    throw MPIError.fromClass(verdict[0]!, `${call}: at the local leader (rank ${localLeader}): ${new TextDecoder().decode(got).replace(/^createIntercomm: /, '')}`);
  }
  return made(backend.comms.createInter({
    local: local._members(),
    localWorld,
    localLeader,
    peer: peer && { comm: peer.comm._members(), remoteLeader: peer.remoteLeader, remoteWorld: peer.remoteWorld },
    tag,
    bcastLocal: (data, root) => local.bcast(data, root),
  }));
});
