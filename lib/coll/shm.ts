/**
 * The shared-memory backend's collectives: the checked messages of
 * lib/coll/collectives.ts put in the form the addon takes (derived
 * datatypes packed or laid out for the kernels, lib/coll/staging.ts;
 * per-rank lists in the off-heap slots, lib/args.ts) and handed to it. The
 * only module that calls the addon's collectives.
 *
 * An intercommunicator's two groups share one context, "low" group first;
 * each of its collectives runs as one native v-collective over that merged
 * context with zero counts for the ranks of the sending side's own group,
 * so it is queued and matched like any other.
 */
import { argList, offHeap } from '../args.js';
import { BasicType, Datatype } from '../datatype.js';
import { fail } from '../errors.js';
import { withCount, type Resolved, type ResolvedV } from '../message.js';
import { sameTotals } from './collectives.js';
import { fuseMove, stageMove, stageMoveV, stageReduce, type Side } from './staging.js';
import { native } from '../native.js';
import { Op, userOpSpec } from '../op.js';
import { kernelType } from '../pack.js';
import { Mode } from '../request.js';
import type { CollectiveBackend, InterCollectives, InterMembers, InterRoot, IntraCollectives } from './backend.js';

// Kernel items per item: a derived type reduces element by element.
function kernelItems(t: Datatype, userOp: boolean): number {
  return t.predefined || userOp ? 1 : t.elements;
}

const intra: Omit<IntraCollectives, 'alltoallw'> = {
  barrier(c, mode) {
    return native.barrier(c.handle, mode);
  },

  bcast(c, buf, root, mode) {
    // A derived type is packed by the root and unpacked by the others
    // chunk by chunk, straight to and from the shared-memory slots.
    const m = fuseMove(buf);
    return native.bcast(c.handle, m.view, m.bytes, root, m.type, m.count, mode);
  },

  gather(c, send, recv, root, mode) {
    if (recv !== null) {
      const r = stageMove(recv, send === null ? 'both' : 'recv', c.size);
      const s = send && stageMove(send, 'send');
      return native.gather(c.handle, s && s.view, r.view, r.bytes, root, mode);
    }
    const s = stageMove(send!, 'send');
    return native.gather(c.handle, s.view, null, s.bytes, root, mode);
  },

  scatter(c, send, recv, root, mode) {
    if (send !== null) {
      const s = stageMove(send, 'send', c.size);
      const r = recv && stageMove(recv, 'recv');
      return native.scatter(c.handle, s.view, r && r.view, s.bytes, root, mode);
    }
    const r = stageMove(recv!, 'recv');
    return native.scatter(c.handle, null, r.view, r.bytes, root, mode);
  },

  allgather(c, send, recv, mode) {
    const r = fuseMove(recv, c.size);
    const s = send && fuseMove(send);
    return native.allgather(c.handle, s && s.view, r.view, r.bytes, s ? s.type : 0, s ? s.count : 0, r.type, r.count, mode);
  },

  alltoall(c, send, recv, mode) {
    const r = stageMove(recv, send === null ? 'both' : 'recv', c.size);
    const s = send && stageMove(send, 'send', c.size);
    return native.alltoall(c.handle, s && s.view, r.view, r.bytes, mode);
  },

  reduce(c, send, recv, op, root, mode) {
    const user = op.id < 0;
    if (recv !== null) {
      const rr = stageReduce(recv, send ? 'recv' : 'both', user), ss = send && stageReduce(send, 'send', user);
      return native.reduce(c.handle, ss && ss.view, rr.view, rr.count, rr.basic, op.id, root, userOpSpec(op, recv.type), mode);
    }
    const ss = stageReduce(send!, 'send', user);
    return native.reduce(c.handle, ss.view, null, ss.count, ss.basic, op.id, root, userOpSpec(op, send!.type), mode);
  },

  allreduce(c, send, recv, op, mode) {
    const user = op.id < 0;
    const rr = stageReduce(recv, send ? 'recv' : 'both', user), ss = send && stageReduce(send, 'send', user);
    return native.allreduce(c.handle, ss && ss.view, rr.view, rr.count, rr.basic, op.id, userOpSpec(op, recv.type), mode);
  },

  gatherv(c, send, recv, root, mode) {
    if (recv !== null) {
      const r = stageMoveV(recv, send === null ? 'both' : 'recv');
      const s = send && stageMove(send, 'send');
      return native.gatherv(c.handle, s && s.view, s ? s.bytes : 0, r.view, offHeap(0, r.bytes), offHeap(1, r.displs), root, mode);
    }
    const s = stageMove(send!, 'send');
    return native.gatherv(c.handle, s.view, s.bytes, null, null, null, root, mode);
  },

  scatterv(c, send, recv, root, mode) {
    if (send !== null) {
      const sv = stageMoveV(send, 'send');
      const r = recv && stageMove(recv, 'recv');
      return native.scatterv(c.handle, sv.view, offHeap(0, sv.bytes), offHeap(1, sv.displs), r && r.view, r ? r.bytes : 0, root, mode);
    }
    const r = stageMove(recv!, 'recv');
    return native.scatterv(c.handle, null, null, null, r.view, r.bytes, root, mode);
  },

  allgatherv(c, send, recv, mode) {
    const r = stageMoveV(recv, send === null ? 'both' : 'recv');
    const s = send && stageMove(send, 'send');
    return native.allgatherv(c.handle, s && s.view, s ? s.bytes : 0, r.view, offHeap(0, r.bytes), offHeap(1, r.displs), mode);
  },

  alltoallv(c, send, recv, mode) {
    const r = stageMoveV(recv, send === null ? 'both' : 'recv');
    const s = send && stageMoveV(send, 'send');
    return native.alltoallv(c.handle, s && s.view, offHeap(0, s && s.bytes), offHeap(1, s && s.displs), r.view,
      offHeap(2, r.bytes), offHeap(3, r.displs), mode);
  },

  reduceScatter(c, send, recv, counts, op, mode) {
    const user = op.id < 0;
    // Only the items this rank receives (all of them in place) are staged,
    // so receive items past them stay as they were.
    const rr = stageReduce(recv, send ? 'recv' : 'both', user);
    const ss = send && stageReduce(send, 'send', user);
    const per = kernelItems(recv.type, user);
    const items = argList(0, counts.length);
    for (let k = 0; k < counts.length; k++) items[k] = counts[k]! * per;
    return native.reduceScatter(c.handle, ss && ss.view, rr.view, offHeap(0, items), rr.basic, op.id, userOpSpec(op, recv.type), mode);
  },

  reduceScatterBlock(c, send, recv, count, op, mode) {
    const user = op.id < 0;
    const total = send === null ? count * c.size : count;
    const rr = stageReduce(withCount(recv, total), send ? 'recv' : 'both', user);
    const ss = send && stageReduce(withCount(send, count * c.size), 'send', user);
    const counts = argList(0, c.size).fill(count * kernelItems(recv.type, user), 0, c.size);
    return native.reduceScatter(c.handle, ss && ss.view, rr.view, offHeap(0, counts), rr.basic, op.id, userOpSpec(op, recv.type), mode);
  },

  scan(c, send, recv, op, exclusive, mode) {
    const user = op.id < 0;
    // exscan leaves rank 0's buffer as it was: stage it both ways.
    const rr = stageReduce(recv, send && !exclusive ? 'recv' : 'both', user), ss = send && stageReduce(send, 'send', user);
    return native.scan(c.handle, ss && ss.view, rr.view, rr.count, rr.basic, op.id, exclusive, userOpSpec(op, recv.type), mode);
  },
};

// ---- Intercommunicators -----------------------------------------------------

const EMPTY = new Uint8Array(0);
// What a rank's part in an intercommunicator reduction is (exchangeFold's kind).
const FOLD = { none: 0, reduce: 1, allreduce: 2, reduceScatter: 3 } as const;

// Per-merged-rank lists for the addon, in the off-heap argument slots
// (lib/args.ts): no native call here takes more than four, and each reads
// its lists during the call, so handing the slots out in turn is safe. A
// list is passed by its slot number, which spares the addon unwrapping a
// view.
class Lists {
  readonly #c: InterMembers;
  readonly #n: number;
  #next = 0;

  constructor(c: InterMembers) {
    this.#c = c;
    this.#n = c.size + c.remoteSize;
    // Grown, if they must be, before the first is handed out.
    argList(0, this.#n);
  }

  /** The next slot, zeroed: its number (view(k) is its view). */
  zeros(): number {
    const k = this.#next++ & 3;
    argList(k, this.#n).fill(0, 0, this.#n);
    return k;
  }

  view(k: number): Float64Array {
    return argList(k, this.#n);
  }

  /** Per merged rank: `bytes(i)` to (or from) remote rank i, at `displ(i)`. */
  toRemote(bytes: (i: number) => number, displ: (i: number) => number): [number, number] {
    const kb = this.zeros(), kd = this.zeros();
    const b = this.view(kb), d = this.view(kd);
    const base = this.#c.remoteBase;
    for (let i = 0; i < this.#c.remoteSize; i++) {
      b[base + i] = bytes(i);
      d[base + i] = displ(i);
    }
    return [kb, kd];
  }

  fromV(v: ResolvedV): [number, number] {
    return this.toRemote((i) => v.bytes[i]!, (i) => v.displs[i]!);
  }
}

// The merged rank of a rooted collective's root; -1 where there is none.
function mergedRoot(c: InterMembers, root: InterRoot): number {
  if (root.role === 'root') return c.localBase + c.rank;
  return root.role === 'remote' ? c.remoteBase + root.rank : -1;
}

// A reduction operand in the form the fold works on, with its byte size:
// predefined types and user ops as items, derived types as kernel elements.
function reducible(m: Resolved, side: Side, op: Op): { view: ArrayBufferView; count: number; basic: number; bytes: number } {
  const user = op.id < 0;
  const k = stageReduce(m, side, user);
  const unit = user || m.type.predefined ? m.type.extent : kernelType(m.type)!.extent;
  return { ...k, bytes: k.count * unit };
}

const inter: Omit<InterCollectives, 'alltoallw'> = {
  barrier(c, mode) {
    return native.barrier(c.handle, mode);
  },

  bcast(c, buf, root, mode) {
    const h = c.handle, at = mergedRoot(c, root);
    if (root.role === 'root') {
      const m = stageMove(buf!, 'send'), l = new Lists(c);
      const [b, d] = l.toRemote(() => m.bytes, () => 0);
      return native.scatterv(h, m.view, b, d, EMPTY, 0, at, mode);
    }
    if (root.role === 'none') return native.scatterv(h, null, null, null, EMPTY, 0, -1, mode);
    const m = stageMove(buf!, 'recv');
    return native.scatterv(h, null, null, null, m.view, m.bytes, at, mode);
  },

  gather(c, send, recv, root, mode) {
    if (root.role === 'root') {
      const rv = stageMove(recv!, 'recv', c.remoteSize), l = new Lists(c);
      const [b, d] = l.toRemote(() => rv.bytes, (i) => i * rv.bytes);
      return native.gatherv(c.handle, EMPTY, 0, rv.view, b, d, mergedRoot(c, root), mode);
    }
    return sendToRoot(c, send, root, mode);
  },

  gatherv(c, send, recv, root, mode) {
    if (root.role === 'root') {
      const rv = stageMoveV(recv!, 'recv'), l = new Lists(c);
      const [b, d] = l.fromV(rv);
      return native.gatherv(c.handle, EMPTY, 0, rv.view, b, d, mergedRoot(c, root), mode);
    }
    return sendToRoot(c, send, root, mode);
  },

  scatter(c, send, recv, root, mode) {
    if (root.role === 'root') {
      const sv = stageMove(send!, 'send', c.remoteSize), l = new Lists(c);
      const [b, d] = l.toRemote(() => sv.bytes, (i) => i * sv.bytes);
      return native.scatterv(c.handle, sv.view, b, d, EMPTY, 0, mergedRoot(c, root), mode);
    }
    return receiveFromRoot(c, recv, root, mode);
  },

  scatterv(c, send, recv, root, mode) {
    if (root.role === 'root') {
      const sv = stageMoveV(send!, 'send'), l = new Lists(c);
      const [b, d] = l.fromV(sv);
      return native.scatterv(c.handle, sv.view, b, d, EMPTY, 0, mergedRoot(c, root), mode);
    }
    return receiveFromRoot(c, recv, root, mode);
  },

  allgather(c, send, recv, mode) {
    const s = stageMove(send, 'send'), l = new Lists(c);
    const [sb, sd] = l.toRemote(() => s.bytes, () => 0);
    const rv = stageMove(recv, 'recv', c.remoteSize);
    const [rb, rd] = l.toRemote(() => rv.bytes, (i) => i * rv.bytes);
    return native.alltoallv(c.handle, s.view, sb, sd, rv.view, rb, rd, mode);
  },

  allgatherv(c, send, recv, mode) {
    const s = stageMove(send, 'send'), l = new Lists(c);
    const [sb, sd] = l.toRemote(() => s.bytes, () => 0);
    const rv = stageMoveV(recv, 'recv');
    const [rb, rd] = l.fromV(rv);
    return native.alltoallv(c.handle, s.view, sb, sd, rv.view, rb, rd, mode);
  },

  alltoall(c, send, recv, mode) {
    const s = stageMove(send, 'send', c.remoteSize), rv = stageMove(recv, 'recv', c.remoteSize), l = new Lists(c);
    const [sb, sd] = l.toRemote(() => s.bytes, (i) => i * s.bytes);
    const [rb, rd] = l.toRemote(() => rv.bytes, (i) => i * rv.bytes);
    return native.alltoallv(c.handle, s.view, sb, sd, rv.view, rb, rd, mode);
  },

  alltoallv(c, send, recv, mode) {
    const s = stageMoveV(send, 'send'), rv = stageMoveV(recv, 'recv'), l = new Lists(c);
    const [sb, sd] = l.fromV(s);
    const [rb, rd] = l.fromV(rv);
    return native.alltoallv(c.handle, s.view, sb, sd, rv.view, rb, rd, mode);
  },

  reduce(c, send, recv, op, root, mode) {
    const h = c.handle, l = new Lists(c);
    if (root.role === 'root') {
      const k = reducible(recv!, 'recv', op);
      const [rb] = l.toRemote(() => k.bytes, () => 0);
      return native.exchangeFold(h, EMPTY, l.zeros(), l.zeros(), k.view, rb, k.count, k.basic, op.id, userOpSpec(op, recv!.type), FOLD.reduce, mode);
    }
    if (root.role === 'none') {
      // No data here, but a user op's failure verdict is collective: an
      // idle rank takes part in it too.
      const user = userOpSpec(op, Datatype.BYTE);
      return native.exchangeFold(h, EMPTY, l.zeros(), l.zeros(), null, l.zeros(), 0, BasicType.U8, user ? op.id : Op.SUM.id, user, FOLD.none, mode);
    }
    const k = reducible(send!, 'send', op);
    const sb = l.zeros();
    l.view(sb)[mergedRoot(c, root)] = k.bytes;
    return native.exchangeFold(h, k.view, sb, l.zeros(), null, l.zeros(), k.count, k.basic, op.id, userOpSpec(op, send!.type), FOLD.reduce, mode);
  },

  allreduce(c, send, recv, op, mode) {
    const ks = reducible(send, 'send', op), kr = reducible(recv, 'recv', op), l = new Lists(c);
    const [sb, sd] = l.toRemote(() => ks.bytes, () => 0);
    const [rb] = l.toRemote(() => kr.bytes, () => 0);
    return native.exchangeFold(c.handle, ks.view, sb, sd, kr.view, rb, kr.count, kr.basic, op.id, userOpSpec(op, recv.type), FOLD.allreduce, mode);
  },

  reduceScatterBlock(c, send, recv, op, mode) {
    const ks = reducible(withCount(send, send.count * c.size), 'send', op), kr = reducible(recv, 'recv', op), l = new Lists(c);
    // This group's vector goes to the remote ranks in equal blocks.
    const block = ks.bytes / c.remoteSize;
    const [sb, sd] = l.toRemote(() => block, (i) => i * block);
    const [rb] = l.toRemote(() => kr.bytes, () => 0);
    return native.exchangeFold(c.handle, ks.view, sb, sd, kr.view, rb, kr.count, kr.basic, op.id, userOpSpec(op, recv.type), FOLD.reduceScatter, mode);
  },

  reduceScatter(c, send, recv, counts, op, mode) {
    const h = c.handle, nr = c.remoteSize, l = new Lists(c);
    // Each side learns how the other distributes its result: one small
    // exchange of this rank's count, then the reduction itself.
    const mine = counts[c.rank]!;
    const remoteCounts = new Float64Array(nr);
    const [cb, cd] = l.toRemote(() => 8, () => 0);
    const [crb, crd] = l.toRemote(() => 8, (i) => 8 * i);
    native.alltoallv(h, Float64Array.of(mine), cb, cd, remoteCounts, crb, crd, Mode.BLOCKING);
    const total = remoteCounts.reduce((a, b) => a + b, 0);
    sameTotals(counts, total);
    if (send.count !== total) {
      fail('ERR_COUNT', 'reduceScatter', `send buffer holds ${send.count} items but the remote group's recvcounts add up to ${total}`);
    }
    const ks = reducible(send, 'send', op), kr = reducible(recv, 'recv', op);
    // Bytes of one datatype item in the form the fold works on.
    const item = send.count ? ks.bytes / send.count : kr.count ? kr.bytes / mine : 0;
    let at = 0;
    const offs = Array.from(remoteCounts, (n) => ((at += n), at - n));
    const [sb, sd] = l.toRemote((i) => remoteCounts[i]! * item, (i) => offs[i]! * item);
    const [rb] = l.toRemote(() => kr.bytes, () => 0);
    return native.exchangeFold(h, ks.view, sb, sd, kr.view, rb, kr.count, kr.basic, op.id, userOpSpec(op, recv.type), FOLD.reduceScatter, mode);
  },
};

// gather/gatherv at the ranks that are not the root: the remote group's
// ranks send, the root's other ranks take no part.
function sendToRoot(c: InterMembers, send: Resolved | null, root: InterRoot, mode: Mode): number | undefined {
  if (root.role === 'none') return native.gatherv(c.handle, EMPTY, 0, null, null, null, -1, mode);
  const m = stageMove(send!, 'send');
  return native.gatherv(c.handle, m.view, m.bytes, null, null, null, mergedRoot(c, root), mode);
}

// scatter/scatterv at the ranks that are not the root.
function receiveFromRoot(c: InterMembers, recv: Resolved | null, root: InterRoot, mode: Mode): number | undefined {
  if (root.role === 'none') return native.scatterv(c.handle, null, null, null, EMPTY, 0, -1, mode);
  const m = stageMove(recv!, 'recv');
  return native.scatterv(c.handle, null, null, null, m.view, m.bytes, mergedRoot(c, root), mode);
}

/** The shared-memory transport's collectives (alltoallw is alltoallv: both move byte blocks). */
export const shm: CollectiveBackend = {
  intra: { ...intra, alltoallw: intra.alltoallv },
  inter: { ...inter, alltoallw: inter.alltoallv },
};
