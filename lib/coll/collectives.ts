/**
 * The collectives, one descriptor each: how the public arguments are checked
 * and resolved on an intracommunicator and on an intercommunicator, side by
 * side, before a backend (lib/coll/backend.ts) moves any data. Comm's
 * blocking, i- and Init methods all run the same descriptor (Comm._run);
 * only the Mode differs. Every check here throws before anything is sent.
 */
import { IN_PLACE, PROC_NULL, ROOT } from '../constants.js';
import type { Datatype } from '../datatype.js';
import { describe, fail } from '../errors.js';
import {
  resolve, resolveBlocks, resolveV, resolveW, withCount, type Msg, type Resolved, type ResolvedV, type VMsg, type WMsg,
} from '../message.js';
import { checkOp, Op } from '../op.js';
import type { Mode } from '../request.js';
import type { InterCollectives, InterMembers, InterRoot, IntraCollectives, Members, Started } from './backend.js';

/** A send message, or IN_PLACE where the collective allows it. */
export type SendSpec = Msg | typeof IN_PLACE;

/** The collectives, by method name. */
export type CollectiveName =
  | 'barrier' | 'bcast' | 'gather' | 'scatter' | 'allgather' | 'alltoall' | 'reduce' | 'allreduce'
  | 'gatherv' | 'scatterv' | 'allgatherv' | 'alltoallv' | 'alltoallw' | 'reduceScatter'
  | 'reduceScatterBlock' | 'scan' | 'exscan';

/**
 * One collective: its public arguments `A` (send side, then receive side,
 * then the rest), and how each kind of communicator runs them.
 */
export interface Collective<A extends unknown[]> {
  readonly name: CollectiveName;
  /** Its number, from 0 up: where a communicator keeps its replays (lib/replay.ts). */
  readonly id: number;
  /** How many arguments the public method passes on, defaults included. */
  readonly arity: Required<A>['length'];
  /** The first argument is one buffer both read and written (bcast's). */
  readonly inout?: boolean;
  intra(b: IntraCollectives, c: Members, mode: Mode, ...args: A): Started;
  inter(b: InterCollectives, c: InterMembers, mode: Mode, ...args: A): Started;
}

let defined = 0;

function define<A extends unknown[]>(d: Omit<Collective<A>, 'id'>): Collective<A> {
  return { ...d, id: defined++ };
}

// ---- Checks shared by the descriptors ---------------------------------------

/** @internal A root of a communicator of `c.size` ranks, else ERR_ROOT naming `call`. */
export function checkRoot(c: Pick<Members, 'size'>, call: string, root: unknown): number {
  if (typeof root !== 'number' || !Number.isInteger(root)) {
    fail('ERR_ROOT', call, `root must be an integer rank from 0 to ${c.size - 1} (communicator of size ${c.size}), got ${describe(root)}`);
  }
  if (root < 0 || root >= c.size) fail('ERR_ROOT', call, `root ${root} is out of range for a communicator of size ${c.size}`);
  return root;
}

/** @internal An intercommunicator collective's root argument, as this rank's role, else ERR_ROOT. */
export function interRoot(c: Pick<InterMembers, 'remoteSize'>, call: string, root: unknown): InterRoot {
  if (root === ROOT) return ROLE_ROOT;
  if (root === PROC_NULL) return ROLE_NONE;
  if (typeof root === 'number' && Number.isInteger(root) && root >= 0 && root < c.remoteSize) return { role: 'remote', rank: root };
  fail('ERR_ROOT', call, `root must be mpi.ROOT, mpi.PROC_NULL or a rank of the remote group (size ${c.remoteSize}), got ${describe(root)}`);
}
const ROLE_ROOT: InterRoot = { role: 'root' };
const ROLE_NONE: InterRoot = { role: 'none' };

function notInPlace<T>(call: string, what: string, spec: T | typeof IN_PLACE, where: string): T {
  if (spec === IN_PLACE) fail('ERR_ARG', call, `IN_PLACE for the ${what} is only allowed at ${where}`);
  return spec;
}

/** @internal Bytes a message carries on the wire: its packed stream (a dense type's memory is its stream). */
export function wire(m: Resolved): number {
  return m.count * m.type.size;
}

/** @internal The same for block `r` of a v- or w-message. */
export function wireOf(v: ResolvedV, r: number): number {
  return v.counts[r]! * v.types[r]!.size;
}

// The send and receive sides of one rank must carry the same number of bytes.
function sameBytes(call: string, send: number, recv: number): void {
  if (send > recv) fail('ERR_TRUNCATE', call, `send buffer carries ${send} bytes but a receive block holds only ${recv}`);
  if (send < recv) fail('ERR_COUNT', call, `send buffer carries ${send} bytes but a receive block expects ${recv}`);
}

function sameType(a: Datatype, b: Datatype): boolean {
  return a === b || (a.basic === b.basic && a.category === b.category && a.extent === b.extent);
}

// Reductions need the same datatype and count on both sides.
function sameItems(call: string, send: Resolved, recv: Resolved): void {
  if (!sameType(send.type, recv.type)) {
    fail('ERR_TYPE', call, `send datatype ${send.type.name} differs from receive datatype ${recv.type.name}`);
  }
  if (send.count !== recv.count) fail('ERR_COUNT', call, `send count ${send.count} differs from receive count ${recv.count}`);
}

// The intercommunicator form: the same basic type and count.
function sameBasic(call: string, send: Resolved, recv: Resolved): void {
  if (send.type.basic !== recv.type.basic) fail('ERR_TYPE', call, `send datatype ${send.type.name} differs from receive datatype ${recv.type.name}`);
  if (send.count !== recv.count) fail('ERR_COUNT', call, `send count ${send.count} differs from receive count ${recv.count}`);
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

// The other form of a send message: null for IN_PLACE.
function sendOrInPlace(call: string, spec: SendSpec): Resolved | null {
  return spec === IN_PLACE ? null : resolve(call, 'send buffer', spec);
}

/**
 * @internal MPI 4.1 §6.11.1: both groups' recvcounts of an intercommunicator
 * reduceScatter add up to the same total (every vector's length).
 */
export function sameTotals(counts: readonly number[], remoteTotal: number): void {
  let mine = 0;
  for (let k = 0; k < counts.length; k++) mine += counts[k]!;
  if (mine !== remoteTotal) {
    fail('ERR_COUNT', 'reduceScatter', `recvcounts add up to ${mine} in this group but to ${remoteTotal} in the remote group; they must add up to the same total`);
  }
}

// ---- The descriptors ------------------------------------------------------

export const barrier = define<[]>({
  name: 'barrier',
  arity: 0,
  intra: (b, c, mode) => b.barrier(c, mode),
  inter: (b, c, mode) => b.barrier(c, mode),
});

export const bcast = define<[buf: Msg, root?: number]>({
  name: 'bcast',
  arity: 2,
  inout: true,
  intra(b, c, mode, buf, root = 0) {
    checkRoot(c, 'bcast', root);
    return b.bcast(c, resolve('bcast', 'buffer', buf), root, mode);
  },
  inter(b, c, mode, buf, root = 0) {
    const r = interRoot(c, 'bcast', root);
    return b.bcast(c, r.role === 'none' ? null : resolve('bcast', 'buffer', buf), r, mode);
  },
});

export const gather = define<[send: SendSpec, recv: Msg | null, root?: number]>({
  name: 'gather',
  arity: 3,
  intra(b, c, mode, send, recv, root = 0) {
    checkRoot(c, 'gather', root);
    if (c.rank !== root) {
      return b.gather(c, resolve('gather', 'send buffer', notInPlace('gather', 'send buffer', send, 'the root')), null, root, mode);
    }
    const r = resolveBlocks('gather', 'receive buffer', recv, c.size);
    const s = sendOrInPlace('gather', send);
    if (s) sameBytes('gather', wire(s), wire(r));
    return b.gather(c, s, r, root, mode);
  },
  inter(b, c, mode, send, recv, root = 0) {
    const r = interRoot(c, 'gather', root);
    if (r.role === 'root') return b.gather(c, null, resolveBlocks('gather', 'receive buffer', recv, c.remoteSize), r, mode);
    return b.gather(c, r.role === 'none' ? null : resolve('gather', 'send buffer', send), null, r, mode);
  },
});

export const scatter = define<[send: Msg | null, recv: SendSpec, root?: number]>({
  name: 'scatter',
  arity: 3,
  intra(b, c, mode, send, recv, root = 0) {
    checkRoot(c, 'scatter', root);
    if (c.rank !== root) {
      return b.scatter(c, null, resolve('scatter', 'receive buffer', notInPlace('scatter', 'receive buffer', recv, 'the root')), root, mode);
    }
    const s = resolveBlocks('scatter', 'send buffer', send, c.size);
    const r = recv === IN_PLACE ? null : resolve('scatter', 'receive buffer', recv);
    if (r) sameBytes('scatter', wire(s), wire(r));
    return b.scatter(c, s, r, root, mode);
  },
  inter(b, c, mode, send, recv, root = 0) {
    const r = interRoot(c, 'scatter', root);
    if (r.role === 'root') return b.scatter(c, resolveBlocks('scatter', 'send buffer', send, c.remoteSize), null, r, mode);
    return b.scatter(c, null, r.role === 'none' ? null : resolve('scatter', 'receive buffer', recv), r, mode);
  },
});

export const allgather = define<[send: SendSpec, recv: Msg]>({
  name: 'allgather',
  arity: 2,
  intra(b, c, mode, send, recv) {
    const r = resolveBlocks('allgather', 'receive buffer', recv, c.size);
    const s = sendOrInPlace('allgather', send);
    if (s) sameBytes('allgather', wire(s), wire(r));
    return b.allgather(c, s, r, mode);
  },
  inter(b, c, mode, send, recv) {
    const s = resolve('allgather', 'send buffer', send);
    return b.allgather(c, s, resolveBlocks('allgather', 'receive buffer', recv, c.remoteSize), mode);
  },
});

export const alltoall = define<[send: SendSpec, recv: Msg]>({
  name: 'alltoall',
  arity: 2,
  intra(b, c, mode, send, recv) {
    const r = resolveBlocks('alltoall', 'receive buffer', recv, c.size);
    const s = send === IN_PLACE ? null : resolveBlocks('alltoall', 'send buffer', send, c.size);
    if (s) sameBytes('alltoall', wire(s), wire(r));
    return b.alltoall(c, s, r, mode);
  },
  inter(b, c, mode, send, recv) {
    const s = resolveBlocks('alltoall', 'send buffer', send, c.remoteSize);
    return b.alltoall(c, s, resolveBlocks('alltoall', 'receive buffer', recv, c.remoteSize), mode);
  },
});

export const reduce = define<[send: SendSpec, recv: Msg | null, op?: Op, root?: number]>({
  name: 'reduce',
  arity: 4,
  intra(b, c, mode, send, recv, op = Op.SUM, root = 0) {
    checkRoot(c, 'reduce', root);
    if (c.rank !== root) {
      const s = resolve('reduce', 'send buffer', notInPlace('reduce', 'send buffer', send, 'the root'));
      checkOp(op, s.type, 'reduce');
      return b.reduce(c, s, null, op, root, mode);
    }
    const r = resolve('reduce', 'receive buffer', recv);
    const s = sendOrInPlace('reduce', send);
    if (s) sameItems('reduce', s, r);
    checkOp(op, r.type, 'reduce');
    return b.reduce(c, s, r, op, root, mode);
  },
  inter(b, c, mode, send, recv, op = Op.SUM, root = 0) {
    const r = interRoot(c, 'reduce', root);
    if (r.role === 'none') {
      // The datatype is not significant here, so neither is whether the op
      // suits it; but it must be a live op, as everywhere.
      if (!(op instanceof Op)) fail('ERR_OP', 'reduce', `op must be an Op, got ${describe(op)}`);
      if (op.freed) fail('ERR_OP', 'reduce', `op ${op.name} has been freed`);
      return b.reduce(c, null, null, op, r, mode);
    }
    const m = r.role === 'root' ? resolve('reduce', 'receive buffer', recv) : resolve('reduce', 'send buffer', send);
    checkOp(op, m.type, 'reduce');
    return r.role === 'root' ? b.reduce(c, null, m, op, r, mode) : b.reduce(c, m, null, op, r, mode);
  },
});

export const allreduce = define<[send: SendSpec, recv: Msg, op?: Op]>({
  name: 'allreduce',
  arity: 3,
  intra(b, c, mode, send, recv, op = Op.SUM) {
    const r = resolve('allreduce', 'receive buffer', recv);
    const s = sendOrInPlace('allreduce', send);
    if (s) sameItems('allreduce', s, r);
    checkOp(op, r.type, 'allreduce');
    return b.allreduce(c, s, r, op, mode);
  },
  inter(b, c, mode, send, recv, op = Op.SUM) {
    const s = resolve('allreduce', 'send buffer', send), r = resolve('allreduce', 'receive buffer', recv);
    sameBasic('allreduce', s, r);
    checkOp(op, r.type, 'allreduce');
    return b.allreduce(c, s, r, op, mode);
  },
});

export const gatherv = define<[send: SendSpec, recv: VMsg | null, root?: number]>({
  name: 'gatherv',
  arity: 3,
  intra(b, c, mode, send, recv, root = 0) {
    checkRoot(c, 'gatherv', root);
    if (c.rank !== root) {
      return b.gatherv(c, resolve('gatherv', 'send buffer', notInPlace('gatherv', 'send buffer', send, 'the root')), null, root, mode);
    }
    const r = resolveV('gatherv', 'receive spec', recv, c.size, 0);
    const s = sendOrInPlace('gatherv', send);
    if (s) sameBytes('gatherv', wire(s), wireOf(r, root));
    return b.gatherv(c, s, r, root, mode);
  },
  inter(b, c, mode, send, recv, root = 0) {
    const r = interRoot(c, 'gatherv', root);
    if (r.role === 'root') return b.gatherv(c, null, resolveV('gatherv', 'receive spec', recv, c.remoteSize), r, mode);
    return b.gatherv(c, r.role === 'none' ? null : resolve('gatherv', 'send buffer', send), null, r, mode);
  },
});

export const scatterv = define<[send: VMsg | null, recv: SendSpec, root?: number]>({
  name: 'scatterv',
  arity: 3,
  intra(b, c, mode, send, recv, root = 0) {
    checkRoot(c, 'scatterv', root);
    if (c.rank !== root) {
      return b.scatterv(c, null, resolve('scatterv', 'receive buffer', notInPlace('scatterv', 'receive buffer', recv, 'the root')), root, mode);
    }
    const s = resolveV('scatterv', 'send spec', send, c.size, 0);
    const r = recv === IN_PLACE ? null : resolve('scatterv', 'receive buffer', recv);
    if (r) sameBytes('scatterv', wireOf(s, root), wire(r));
    return b.scatterv(c, s, r, root, mode);
  },
  inter(b, c, mode, send, recv, root = 0) {
    const r = interRoot(c, 'scatterv', root);
    if (r.role === 'root') return b.scatterv(c, resolveV('scatterv', 'send spec', send, c.remoteSize), null, r, mode);
    return b.scatterv(c, null, r.role === 'none' ? null : resolve('scatterv', 'receive buffer', recv), r, mode);
  },
});

export const allgatherv = define<[send: SendSpec, recv: VMsg]>({
  name: 'allgatherv',
  arity: 2,
  intra(b, c, mode, send, recv) {
    const r = resolveV('allgatherv', 'receive spec', recv, c.size, 0);
    const s = sendOrInPlace('allgatherv', send);
    if (s) sameBytes('allgatherv', wire(s), wireOf(r, c.rank));
    return b.allgatherv(c, s, r, mode);
  },
  inter(b, c, mode, send, recv) {
    const s = resolve('allgatherv', 'send buffer', send);
    return b.allgatherv(c, s, resolveV('allgatherv', 'receive spec', recv, c.remoteSize), mode);
  },
});

export const alltoallv = define<[send: VMsg | typeof IN_PLACE, recv: VMsg]>({
  name: 'alltoallv',
  arity: 2,
  intra(b, c, mode, send, recv) {
    const r = resolveV('alltoallv', 'receive spec', recv, c.size, 2);
    const s = send === IN_PLACE ? null : resolveV('alltoallv', 'send spec', send, c.size, 0);
    return b.alltoallv(c, s, r, mode);
  },
  inter(b, c, mode, send, recv) {
    const s = resolveV('alltoallv', 'send spec', send, c.remoteSize);
    return b.alltoallv(c, s, resolveV('alltoallv', 'receive spec', recv, c.remoteSize), mode);
  },
});

export const alltoallw = define<[send: WMsg | typeof IN_PLACE, recv: WMsg]>({
  name: 'alltoallw',
  arity: 2,
  intra(b, c, mode, send, recv) {
    const r = resolveW('alltoallw', 'receive spec', recv, c.size, 2);
    const s = send === IN_PLACE ? null : resolveW('alltoallw', 'send spec', send, c.size, 0);
    return b.alltoallw(c, s, r, mode);
  },
  inter(b, c, mode, send, recv) {
    const s = resolveW('alltoallw', 'send spec', send, c.remoteSize);
    return b.alltoallw(c, s, resolveW('alltoallw', 'receive spec', recv, c.remoteSize), mode);
  },
});

export const reduceScatter = define<[send: SendSpec, recv: Msg, recvcounts: readonly number[], op?: Op]>({
  name: 'reduceScatter',
  arity: 4,
  intra(b, c, mode, send, recv, recvcounts, op = Op.SUM) {
    const counts = countList('reduceScatter', recvcounts, c.size);
    let total = 0;
    for (let k = 0; k < counts.length; k++) total += counts[k]!;
    const r = resolve('reduceScatter', 'receive buffer', recv);
    const need = send === IN_PLACE ? total : counts[c.rank]!;
    if (r.count < need) fail('ERR_BUFFER', 'reduceScatter', `receive buffer holds ${r.count} × ${r.type.name}, ${need} needed`);
    const s = sendOrInPlace('reduceScatter', send);
    if (s) {
      if (!sameType(s.type, r.type)) fail('ERR_TYPE', 'reduceScatter', `send datatype ${s.type.name} differs from receive datatype ${r.type.name}`);
      if (s.count !== total) fail('ERR_COUNT', 'reduceScatter', `send buffer holds ${s.count} items but recvcounts add up to ${total}`);
    }
    checkOp(op, r.type, 'reduceScatter');
    return b.reduceScatter(c, s, withCount(r, need), counts, op, mode);
  },
  inter(b, c, mode, send, recv, counts, op = Op.SUM) {
    if (!Array.isArray(counts) || counts.length !== c.size || !counts.every((n) => Number.isSafeInteger(n) && n >= 0)) {
      fail('ERR_COUNT', 'reduceScatter', `recvcounts must list a non-negative count for each of the ${c.size} local ranks, got ${describe(counts)}`);
    }
    const r = resolve('reduceScatter', 'receive buffer', recv);
    const mine = counts[c.rank]!;
    if (r.count < mine) fail('ERR_BUFFER', 'reduceScatter', `receive buffer holds ${r.count} items, ${mine} needed`);
    const s = resolve('reduceScatter', 'send buffer', send);
    if (s.type.basic !== r.type.basic || s.type.extent !== r.type.extent) {
      fail('ERR_TYPE', 'reduceScatter', `send datatype ${s.type.name} differs from receive datatype ${r.type.name}`);
    }
    checkOp(op, r.type, 'reduceScatter');
    return b.reduceScatter(c, s, withCount(r, mine), counts, op, mode);
  },
});

export const reduceScatterBlock = define<[send: SendSpec, recv: Msg, op?: Op]>({
  name: 'reduceScatterBlock',
  arity: 3,
  intra(b, c, mode, send, recv, op = Op.SUM) {
    let r: Resolved, s: Resolved | null = null;
    if (send === IN_PLACE) {
      // A bare buffer holds all blocks and receives this rank's at its start.
      r = resolveBlocks('reduceScatterBlock', 'receive buffer', recv, c.size);
    } else {
      s = resolveBlocks('reduceScatterBlock', 'send buffer', send, c.size);
      r = resolve('reduceScatterBlock', 'receive buffer', recv);
      sameItems('reduceScatterBlock', s, r);
    }
    checkOp(op, r.type, 'reduceScatterBlock');
    return b.reduceScatterBlock(c, s, r, r.count, op, mode);
  },
  inter(b, c, mode, send, recv, op = Op.SUM) {
    // MPI 4.1 §6.11.2: a rank's vector holds recvcount items per rank of
    // its own group, and the two groups' vectors are equally long; the
    // other group's reduced vector is scattered in blocks of recvcount.
    const s = resolveBlocks('reduceScatterBlock', 'send buffer', send, c.size);
    const r = resolve('reduceScatterBlock', 'receive buffer', recv);
    sameBasic('reduceScatterBlock', s, r);
    const total = s.count * c.size;
    if (total % c.remoteSize !== 0) {
      fail('ERR_COUNT', 'reduceScatterBlock', `the vector of ${total} items does not split evenly among the ${c.remoteSize} ranks of the remote group`);
    }
    checkOp(op, r.type, 'reduceScatterBlock');
    return b.reduceScatterBlock(c, s, r, op, mode);
  },
});

function scanIntra(call: 'scan' | 'exscan', exclusive: boolean) {
  return (b: IntraCollectives, c: Members, mode: Mode, send: SendSpec, recv: Msg, op: Op = Op.SUM): Started => {
    const r = resolve(call, 'receive buffer', recv);
    const s = sendOrInPlace(call, send);
    if (s) sameItems(call, s, r);
    checkOp(op, r.type, call);
    return b.scan(c, s, r, op, exclusive, mode);
  };
}

function noScan(call: 'scan' | 'exscan') {
  return (): never => fail('ERR_COMM', call, 'scan and exscan are not defined on intercommunicators');
}

export const scan = define<[send: SendSpec, recv: Msg, op?: Op]>({ name: 'scan', arity: 3, intra: scanIntra('scan', false), inter: noScan('scan') });
export const exscan = define<[send: SendSpec, recv: Msg, op?: Op]>({ name: 'exscan', arity: 3, intra: scanIntra('exscan', true), inter: noScan('exscan') });
