/**
 * The MPI backend's collectives: the checked messages of
 * lib/coll/collectives.ts as calls of the system MPI library
 * (native/core/mpi), one MPI collective each, intercommunicators included
 * (MPI has them all).
 *
 * - Data movement: a dense datatype moves as its bytes (MPI_BYTE); any
 *   other as a committed MPI datatype with its layout (built once per
 *   Datatype from the same description the shm backend packs by).
 * - Reductions run on MPI's predefined ops and basic types; a derived
 *   type reduces as its elements in kernel layout (lib/coll/staging.ts,
 *   as on shm), so every op × type nodempi allows works the same on both.
 * - User-defined ops: one MPI_Op per (Op, Datatype) pair, whose function
 *   calls the JavaScript function on items of the datatype's extent.
 *
 * The numeric arguments of a call go through one Int32Array the addon
 * keeps (`block`), the per-rank lists through the off-heap argument lists
 * (lib/args.ts): a call crosses into the addon with its two buffers only.
 */
import { argList } from '../args.js';
import { ROOT, PROC_NULL } from '../constants.js';
import { BasicType, Datatype } from '../datatype.js';
import { fail, MPIError } from '../errors.js';
import { withCount, type Resolved, type ResolvedV } from '../message.js';
import { native } from '../native.js';
import { onOpFree, Op, userOpSpec } from '../op.js';
import { Mode } from '../request.js';
import type { CollectiveBackend, InterCollectives, InterRoot, IntraCollectives, Members, Started } from './backend.js';
import { compare, encode, FIELDS, type Signature } from './agree.js';
import type { InterMembers } from './backend.js';
import { sameTotals, wire, wireOf } from './collectives.js';
import { refreshEachStart, stageMove, stageMoveV, stageReduce, type Side } from './staging.js';

// native/core/mpi/mpi.h Coll.
const enum Coll {
  BARRIER, BCAST, GATHER, GATHERV, SCATTER, SCATTERV, ALLGATHER, ALLGATHERV, ALLTOALL, ALLTOALLV, ALLTOALLW,
  REDUCE, ALLREDUCE, REDUCE_SCATTER, REDUCE_SCATTER_BLOCK, SCAN, EXSCAN,
}
// Slots of the call block (native/napi/mpi_binding.cc Slot).
const enum K { COLL, COMM, SEND_COUNT, SEND_TYPE, RECV_COUNT, RECV_TYPE, OP, ROOT, MODE, FLAGS, LISTS, LIST_LENGTH, SEND_BLOCKS, RECV_BLOCKS, SIZE }
const SEND_IN_PLACE = 1, RECV_IN_PLACE = 2;
// Argument lists (lib/args.ts slots; 0 to 3 hold what resolveV made) and
// their bits in K.LISTS (bit k - FIRST_LIST for slot k).
const FIRST_LIST = 4;
const enum L { SEND_COUNTS = 4, SEND_DISPLS, SEND_TYPES, RECV_COUNTS, RECV_DISPLS, RECV_TYPES }

const block = new Int32Array(K.SIZE);
/** @internal Hands the call block to the addon (lib/backends/mpi.ts, at init). */
export function shareCallBlock(): void {
  native.mpiSetCallBlock(block);
}

const INT_MAX = 0x7fffffff;
const BYTE = BasicType.BYTE;

// ---- Datatypes and ops as the library knows them --------------------------------

// MPI datatypes of derived (and padded predefined) types, made on first
// use and released, as the shm backend's descriptions are, when no
// Datatype refers to them any more (pending operations hold theirs).
const types = new WeakMap<Datatype, number>();
const release = new FinalizationRegistry<number>((h) => native.mpiTypeFree(h));

function mpiType(t: Datatype): number {
  let h = types.get(t);
  if (h === undefined) {
    types.set(t, (h = native.mpiTypeCreate(t.layoutWords())));
    release.register(t, h);
  }
  return h;
}

// An item of `bytes` bytes with no structure: what user ops reduce.
const opaque = new Map<number, number>();
function opaqueType(bytes: number): number {
  let h = opaque.get(bytes);
  if (h === undefined) opaque.set(bytes, (h = native.mpiOpaqueType(bytes)));
  return h;
}

// User ops: an MPI_Op per datatype the op is used with.
const userOps = new Map<Op, Map<Datatype, number>>();
onOpFree((op) => {
  const made = userOps.get(op);
  if (!made) return;
  for (const h of made.values()) native.mpiOpFree(h);
  userOps.delete(op);
});

function mpiOp(op: Op, t: Datatype): number {
  if (op.id >= 0) return op.id;
  let made = userOps.get(op);
  if (!made) userOps.set(op, (made = new Map()));
  let h = made.get(t);
  if (h === undefined) made.set(t, (h = native.mpiOpCreate(userOpSpec(op, t)!, op.commutative)));
  return h;
}

// ---- One call ---------------------------------------------------------------------

function count32(call: string, n: number, what: string): number {
  if (n > INT_MAX) fail('ERR_COUNT', call, `${what} of ${n} exceeds MPI's int counts (2^31 - 1) on the mpi backend`);
  return n;
}

// The send (or receive) side of a data-movement call: count and datatype
// into the block, the view out. `blocks`: how many of them the buffer holds.
// `packed`: the message was staged (stageMove), its view is the packed stream.
function moving(m: Resolved, side: K.SEND_COUNT | K.RECV_COUNT, blocks: number, call: string, packed = false): ArrayBufferView {
  const t = m.type;
  if (!packed && side === K.SEND_COUNT && !t.contiguous && overlapping(m, blocks)) {
    // A send type that reads some bytes more than once travels packed:
    // Open MPI's tree algorithms receive into scratch with the send type,
    // which MPI allows only for types that do not overlap.
    m = stageMove(m, 'send', blocks);
    packed = true;
  }
  if (t.contiguous || packed) {
    block[side] = count32(call, m.bytes, 'a message of bytes');
    block[side + 1] = BYTE;
  } else {
    block[side] = count32(call, m.count, 'a count');
    block[side + 1] = mpiType(t);
  }
  block[side === K.SEND_COUNT ? K.SEND_BLOCKS : K.RECV_BLOCKS] = blocks;
  sig.bytes = packed ? m.bytes : wire(m);
  return m.view;
}

// Kernel items per datatype item: a derived type reduces element by element.
function kernelItems(t: Datatype, op: Op): number {
  return op.id < 0 || t.predefined ? 1 : t.elements;
}

// Whether `blocks` blocks of `m` read some bytes twice (more stream than span).
function overlapping(m: Resolved, blocks: number): boolean {
  const items = m.count * blocks;
  const [lo, hi] = m.type.span(items);
  return items * m.type.size > hi - lo;
}

// A reduction operand (the send side's with side 'send'): its count and
// type in the block, and the op.
function reducing(m: Resolved, side: Side, op: Op, call: string): ArrayBufferView {
  const user = op.id < 0;
  const k = stageReduce(m, side, user);
  const at = side === 'send' ? K.SEND_COUNT : K.RECV_COUNT;
  block[at] = count32(call, k.count, 'a count');
  block[at + 1] = user ? opaqueType(m.type.extent) : k.basic;
  block[K.OP] = mpiOp(op, m.type);
  sig.op = user ? USER_OP : op.id;
  sig.type = user ? 0 : k.basic + 1;
  sig.bytes = wire(m);
  return k.view;
}

// A v- or w-message's lists into the argument slots: counts in items (bytes
// for dense types, and for a message staged as packed bytes, `packed`) and
// displacements in extents, or, with `w`, a datatype per block and byte
// displacements.
function vLists(v: ResolvedV, counts: L, call: string, w: boolean, packed = false): number {
  const n = v.counts.length;
  const c = argList(counts, n), d = argList(counts + 1, n);
  if (v.contiguous || packed) {
    for (let r = 0; r < n; r++) {
      c[r] = count32(call, v.bytes[r]!, 'a block of bytes');
      d[r] = count32(call, v.displs[r]!, 'a displacement');
    }
    return bit(counts) | bit(counts + 1) | (w ? typesList(counts + 2, n, () => BYTE) : 0);
  }
  if (!w) {
    const t = v.types[0]!, ext = t.extent;
    for (let r = 0; r < n; r++) {
      c[r] = count32(call, v.counts[r]!, 'a count');
      d[r] = ext === 0 ? 0 : v.displs[r]! / ext;
    }
    return bit(counts) | bit(counts + 1);
  }
  for (let r = 0; r < n; r++) {
    const t = v.types[r]!;
    c[r] = count32(call, t.contiguous ? v.bytes[r]! : v.counts[r]!, 'a count');
    d[r] = count32(call, v.displs[r]!, 'a displacement');
  }
  return bit(counts) | bit(counts + 1) | typesList(counts + 2, n, (r) => (v.types[r]!.contiguous ? BYTE : mpiType(v.types[r]!)));
}

function bit(slot: number): number {
  return 1 << (slot - FIRST_LIST);
}

function typesList(slot: number, n: number, type: (r: number) => number): number {
  const t = argList(slot, n);
  for (let r = 0; r < n; r++) t[r] = type(r);
  return bit(slot);
}

// The type of a v-message's blocks, for MPI's single-type v-collectives.
function vType(v: ResolvedV): number {
  return v.contiguous ? BYTE : mpiType(v.types[0]!);
}

// On a one-rank communicator, where libraries take shortcuts that get
// displacements wrong (allgatherv and alltoallw below): the block's own
// place as the buffer, and its byte displacement in list `counts + 1` set
// to 0.
function ownBlock(view: ArrayBufferView, counts: L): Uint8Array {
  const displs = argList(counts + 1, 1), at = Math.min(displs[0]!, view.byteLength);
  displs[0] = 0;
  return new Uint8Array(view.buffer, view.byteOffset + at, view.byteLength - at);
}

// A v-message's buffer copied (read again at every start of a persistent
// request), with the same blocks.
function sendCopy(v: ResolvedV): ResolvedV {
  const src = new Uint8Array(v.view.buffer, v.view.byteOffset, v.view.byteLength);
  const copy = new Uint8Array(src.length);
  refreshEachStart(() => copy.set(src));
  return { ...v, view: copy };
}

function run(coll: Coll, c: Members, send: ArrayBufferView | null, recv: ArrayBufferView | null, mode: Mode,
  flags = 0, lists = 0, n = 0): Started {
  if (CHECK && mode === Mode.BLOCKING && !agreeing) agree(coll, c);
  block[K.COLL] = coll;
  block[K.COMM] = c.handle;
  block[K.MODE] = mode;
  block[K.FLAGS] = flags;
  block[K.LISTS] = lists;
  block[K.LIST_LENGTH] = n;
  const op = block[K.OP]!, userOp = sig.op === USER_OP;
  const id = native.mpiColl(send, recv);
  if (mode === Mode.BLOCKING && userOp && !agreeing) userOpVerdict(coll, c, op);
  return id;
}

// A user op's function that throws fails a blocking collective on every
// rank, as on shm: the ranks agree (one small allreduce) on the lowest rank
// where it threw, which carries the thrown value as the cause.
// Nonblocking and persistent calls fail on the ranks where it threw only.
// sig.op of a call with a user-defined op (lib/coll/agree.ts).
const USER_OP = -2;
function userOpVerdict(coll: Coll, c: Members, op: number): void {
  const failure = native.mpiUserOpFailure(op);
  const saved = block.slice();
  const { h, n, rank } = checkComm(c);
  const verdict = Int32Array.of(failure ? n - rank : 0), all = new Int32Array(1);
  clear();
  block[K.SEND_COUNT] = block[K.RECV_COUNT] = 1;
  block[K.SEND_TYPE] = block[K.RECV_TYPE] = BasicType.I32;
  block[K.OP] = Op.MAX.id;
  agreeing = true;
  try {
    run(Coll.ALLREDUCE, { handle: h, rank, size: n }, verdict, all, Mode.BLOCKING);
  } finally {
    agreeing = false;
    block.set(saved);
  }
  if (all[0] === 0) return;
  // An intercommunicator's ranks are numbered as in its merged groups.
  const culprit = n - all[0]!;
  const text = `${NAMES[coll]}: the user-defined op threw on rank ${culprit}${failure?.message ? `: ${failure.message}` : ''}`;
  throw new MPIError('ERR_OTHER', text, failure ? { cause: failure.error } : undefined);
}

// Every call starts from an empty block: fields a call does not set must
// not carry an earlier call's values (one that failed half way included)
// into the bounds checks.
function clear(): void {
  block[K.SEND_COUNT] = block[K.RECV_COUNT] = 0;
  block[K.SEND_TYPE] = block[K.RECV_TYPE] = BYTE;
  block[K.SEND_BLOCKS] = block[K.RECV_BLOCKS] = 1;
  block[K.OP] = block[K.ROOT] = 0;
  sig.op = -1;
  sig.type = 0;
  sig.bytes = -1;
  pairs = null;
}

// ---- Mismatch detection (lib/coll/agree.ts) ------------------------------------

/** @internal Mismatch detection is on (README "Across machines"). */
export const CHECK = process.env.NODEMPI_CHECK_SAME === '1';
// This call's signature, filled by moving() and reducing().
const sig: Signature = { kind: '', root: -1, op: -1, type: 0, bytes: -1 };
const V_KINDS = new Set([Coll.GATHERV, Coll.SCATTERV, Coll.ALLGATHERV, Coll.ALLTOALLV, Coll.ALLTOALLW, Coll.REDUCE_SCATTER]);
// A checked v-collective's messages pair by pair: the bytes this rank
// sends each rank and the bytes its receive block for each holds (-1: no
// such message). A block too small fails the library's call on its rank
// alone, and Open MPI's and MPICH's algorithms then leave the others
// waiting for the steps it never took, so the sizes are checked before it.
// `exact`: the library forwards blocks through other ranks by their own
// counts (allgatherv), so a block larger than its message is an error too.
// Elsewhere a larger block is fine, but for an empty message: the
// libraries send none, and the block's rank would wait for it forever.
interface Pairs { out: Float64Array; in: Float64Array; exact: boolean }
let pairs: Pairs | null = null;
// An intercommunicator's groups compare signatures over a merged
// communicator, made at its first checked collective.
const merged = new Map<number, number>();
let agreeing = false;

function agree(coll: Coll, c: Members): void {
  const inter = 'remoteSize' in c;
  sig.kind = NAMES[coll]!;
  // Rooted intercommunicator collectives name the root by role; sizes of
  // v-collectives differ by design.
  sig.root = inter || !ROOTED.has(coll) ? -1 : block[K.ROOT]!;
  if (inter || V_KINDS.has(coll)) sig.bytes = -1;
  const p = pairs;
  const saved = block.slice();
  const { h, n } = checkComm(c);
  const mine = new Float64Array(FIELDS), all = new Float64Array(FIELDS * n);
  encode(sig, mine);
  clear();
  block[K.SEND_COUNT] = block[K.RECV_COUNT] = 8 * FIELDS;
  block[K.RECV_BLOCKS] = n;
  agreeing = true;
  try {
    run(Coll.ALLGATHER, { handle: h, rank: 0, size: n }, mine, all, Mode.BLOCKING);
    compare(NAMES[coll]!, all, n);
    if (p) comparePairs(NAMES[coll]!, { handle: h, rank: 0, size: n }, p);
  } finally {
    agreeing = false;
    block.set(saved);
  }
}

// Every rank throws ERR_TRUNCATE, naming the first rank with a receive
// block smaller than what is sent to it, when any has one (ERR_NOT_SAME
// for one larger where the sizes must be exact, or waiting for an empty
// message): an alltoall of the sizes sent, then an allgather of each
// rank's first such block. (Otherwise a block larger than its message is
// no error, as on shm.)
function comparePairs(call: string, c: Members, p: Pairs): void {
  const n = c.size, incoming = new Float64Array(n);
  clear();
  block[K.SEND_COUNT] = block[K.RECV_COUNT] = 8;
  block[K.SEND_BLOCKS] = block[K.RECV_BLOCKS] = n;
  run(Coll.ALLTOALL, c, p.out, incoming, Mode.BLOCKING);
  const mine = Float64Array.of(-1, 0, 0), all = new Float64Array(3 * n);
  for (let q = 0; q < n; q++) {
    const sent = incoming[q]!, holds = p.in[q]!;
    if (holds >= 0 && sent >= 0 && (sent > holds || (sent !== holds && (p.exact || sent === 0)))) {
      mine.set([q, sent, holds]);
      break;
    }
  }
  clear();
  block[K.SEND_COUNT] = block[K.RECV_COUNT] = 8 * 3;
  block[K.RECV_BLOCKS] = n;
  run(Coll.ALLGATHER, c, mine, all, Mode.BLOCKING);
  for (let r = 0; r < n; r++) {
    const from = all[3 * r]!, sent = all[3 * r + 1]!, holds = all[3 * r + 2]!;
    if (from < 0) continue;
    const why = sent > holds ? '' : sent === 0 ? ' (the library sends no empty message, so that block would wait for it forever)'
      : ' (its blocks pass through other ranks, which must all count the same)';
    fail(sent > holds ? 'ERR_TRUNCATE' : 'ERR_NOT_SAME', call, `rank ${r}'s receive block for rank ${from} holds ${holds} bytes, ` +
      `but rank ${from} sends it ${sent}${why}`);
  }
}

// Whether this call is checked (a blocking v-collective on an
// intracommunicator must then fill `pairs` through pairsFor).
const checking = (mode: Mode): boolean => CHECK && mode === Mode.BLOCKING;

// A checked v-collective's pairs: the bytes it sends rank q and those its
// block for rank q holds, -1 where there is no such message.
function pairsFor(c: Members, out: (q: number) => number, into: (q: number) => number, exact = false): void {
  const p: Pairs = { out: new Float64Array(c.size), in: new Float64Array(c.size), exact };
  for (let q = 0; q < c.size; q++) {
    p.out[q] = out(q);
    p.in[q] = into(q);
  }
  pairs = p;
}

// The intracommunicator to agree over: `c` itself, or an
// intercommunicator's groups merged (made at its first use, a collective
// every rank reaches at the same call).
function checkComm(c: Members): { h: number; n: number; rank: number } {
  if (!('remoteSize' in c)) return { h: c.handle, n: c.size, rank: c.rank };
  let h = merged.get(c.handle);
  if (h === undefined) merged.set(c.handle, (h = native.mpiIntercommMerge(c.handle, false)));
  return { h, n: c.size + (c as InterMembers).remoteSize, rank: native.mpiCommInfo(h)[0] };
}

/** @internal An intercommunicator is being freed: its merged communicator goes too. */
export function forgetChecks(handle: number): void {
  const h = merged.get(handle);
  if (h === undefined) return;
  merged.delete(handle);
  native.mpiCommFree(h);
}

const NAMES = ['barrier', 'bcast', 'gather', 'gatherv', 'scatter', 'scatterv', 'allgather', 'allgatherv', 'alltoall',
  'alltoallv', 'alltoallw', 'reduce', 'allreduce', 'reduceScatter', 'reduceScatterBlock', 'scan', 'exscan'];
const ROOTED = new Set([Coll.BCAST, Coll.GATHER, Coll.GATHERV, Coll.SCATTER, Coll.SCATTERV, Coll.REDUCE]);
clear();

// ---- Intracommunicators ---------------------------------------------------------

// Each collective starts with clear() (above).
const intra: IntraCollectives = {
  barrier(c, mode) {
    clear();
    return run(Coll.BARRIER, c, null, null, mode);
  },

  bcast(c, buf, root, mode) {
    clear();
    const v = moving(buf, K.RECV_COUNT, 1, 'bcast');
    block[K.ROOT] = root;
    return run(Coll.BCAST, c, null, v, mode);
  },

  gather(c, send, recv, root, mode) {
    clear();
    block[K.ROOT] = root;
    const s = send && moving(send, K.SEND_COUNT, 1, 'gather');
    const r = recv && moving(recv, K.RECV_COUNT, c.size, 'gather');
    return run(Coll.GATHER, c, s, r, mode, recv !== null && send === null ? SEND_IN_PLACE : 0);
  },

  scatter(c, send, recv, root, mode) {
    clear();
    block[K.ROOT] = root;
    const s = send && moving(send, K.SEND_COUNT, c.size, 'scatter');
    const r = recv && moving(recv, K.RECV_COUNT, 1, 'scatter');
    return run(Coll.SCATTER, c, s, r, mode, send !== null && recv === null ? RECV_IN_PLACE : 0);
  },

  allgather(c, send, recv, mode) {
    clear();
    const s = send && moving(send, K.SEND_COUNT, 1, 'allgather');
    const r = moving(recv, K.RECV_COUNT, c.size, 'allgather');
    return run(Coll.ALLGATHER, c, s, r, mode, send ? 0 : SEND_IN_PLACE);
  },

  alltoall(c, send, recv, mode) {
    clear();
    const s = send && moving(send, K.SEND_COUNT, c.size, 'alltoall');
    const r = moving(recv, K.RECV_COUNT, c.size, 'alltoall');
    return run(Coll.ALLTOALL, c, s, r, mode, send ? 0 : SEND_IN_PLACE);
  },

  reduce(c, send, recv, op, root, mode) {
    clear();
    block[K.ROOT] = root;
    if (recv === null) {
      // The library checks op against type on every rank, counts of 0 included.
      const s = reducing(send!, 'send', op, 'reduce');
      block[K.RECV_TYPE] = block[K.SEND_TYPE]!;
      return run(Coll.REDUCE, c, s, null, mode);
    }
    const r = reducing(recv, send ? 'recv' : 'both', op, 'reduce');
    if (!send && root !== 0) {
      // The root's operand as a send buffer of its own: MPICH 4.0 crashes
      // on MPI_IN_PLACE at a root other than rank 0.
      const copy = new Uint8Array(r.byteLength), src = new Uint8Array(r.buffer, r.byteOffset, r.byteLength);
      refreshEachStart(() => copy.set(src));
      block[K.SEND_COUNT] = block[K.RECV_COUNT]!;
      block[K.SEND_TYPE] = block[K.RECV_TYPE]!;
      return run(Coll.REDUCE, c, copy, r, mode);
    }
    const s = send && reducing(send, 'send', op, 'reduce');
    return run(Coll.REDUCE, c, s, r, mode, send ? 0 : SEND_IN_PLACE);
  },

  allreduce(c, send, recv, op, mode) {
    clear();
    const r = reducing(recv, send ? 'recv' : 'both', op, 'allreduce');
    const s = send && reducing(send, 'send', op, 'allreduce');
    return run(Coll.ALLREDUCE, c, s, r, mode, send ? 0 : SEND_IN_PLACE);
  },

  gatherv(c, send, recv, root, mode) {
    clear();
    block[K.ROOT] = root;
    if (checking(mode)) {
      pairsFor(c, (q) => (send && q === root ? wire(send) : -1), (q) => (recv && (send || q !== c.rank) ? wireOf(recv, q) : -1));
    }
    const s = send && moving(send, K.SEND_COUNT, 1, 'gatherv');
    if (recv === null) return run(Coll.GATHERV, c, s, null, mode);
    const lists = vLists(recv, L.RECV_COUNTS, 'gatherv', false);
    block[K.RECV_TYPE] = vType(recv);
    return run(Coll.GATHERV, c, s, recv.view, mode, send ? 0 : SEND_IN_PLACE, lists, c.size);
  },

  scatterv(c, send, recv, root, mode) {
    clear();
    block[K.ROOT] = root;
    if (checking(mode)) {
      pairsFor(c, (q) => (send && (recv || q !== c.rank) ? wireOf(send, q) : -1), (q) => (recv && q === root ? wire(recv) : -1));
    }
    const r = recv && moving(recv, K.RECV_COUNT, 1, 'scatterv');
    if (send === null) return run(Coll.SCATTERV, c, null, r, mode);
    const lists = vLists(send, L.SEND_COUNTS, 'scatterv', false);
    block[K.SEND_TYPE] = vType(send);
    return run(Coll.SCATTERV, c, send.view, r, mode, recv ? 0 : RECV_IN_PLACE, lists, c.size);
  },

  allgatherv(c, send, recv, mode) {
    clear();
    if (checking(mode)) {
      // In place, this rank's own block is neither sent nor received.
      const mine = send ? wire(send) : wireOf(recv, c.rank), moves = (q: number) => send !== null || q !== c.rank;
      pairsFor(c, (q) => (moves(q) ? mine : -1), (q) => (moves(q) ? wireOf(recv, q) : -1), true);
    }
    // Always packed bytes: Open MPI 4.1 picks its allgatherv algorithm from
    // the send type's size times the receive counts, so ranks whose send
    // and receive types differ in size (a derived type on one side) pick
    // different algorithms and wait for each other forever.
    const sb = send && stageMove(send, 'send');
    const s = sb && moving(sb, K.SEND_COUNT, 1, 'allgatherv', true);
    const rb = stageMoveV(recv, send ? 'recv' : 'both');
    const lists = vLists(rb, L.RECV_COUNTS, 'allgatherv', false, true);
    block[K.RECV_TYPE] = BYTE;
    // MPICH 4.0's MPI_Allgatherv and MPI_Iallgatherv on one rank write the
    // block at the start of the buffer whatever its displacement.
    const view = c.size === 1 ? ownBlock(rb.view, L.RECV_COUNTS) : rb.view;
    return run(Coll.ALLGATHERV, c, s, view, mode, send ? 0 : SEND_IN_PLACE, lists, c.size);
  },

  // In place, the send side is a copy of the receive buffer laid out the
  // same way: MPICH 4.0's in-place all-to-all-w truncates when ranks use
  // different datatypes, and the copy costs what the library's own
  // in-place algorithms copy anyway.
  alltoallv(c, send, recv, mode) {
    clear();
    const s = send ?? sendCopy(recv);
    if (checking(mode)) pairsFor(c, (q) => wireOf(s, q), (q) => wireOf(recv, q));
    const lists = vLists(recv, L.RECV_COUNTS, 'alltoallv', false) | vLists(s, L.SEND_COUNTS, 'alltoallv', false);
    block[K.RECV_TYPE] = vType(recv);
    block[K.SEND_TYPE] = vType(s);
    return run(Coll.ALLTOALLV, c, s.view, recv.view, mode, 0, lists, c.size);
  },

  alltoallw(c, send, recv, mode) {
    clear();
    const s = send ?? sendCopy(recv);
    if (checking(mode)) pairsFor(c, (q) => wireOf(s, q), (q) => wireOf(recv, q));
    const lists = vLists(recv, L.RECV_COUNTS, 'alltoallw', true) | vLists(s, L.SEND_COUNTS, 'alltoallw', true);
    // Open MPI 4.1's blocking MPI_Alltoallw on one rank (coll/self) scales
    // the byte displacements by the datatype's extent.
    const one = c.size === 1;
    const sv = one ? ownBlock(s.view, L.SEND_COUNTS) : s.view, rv = one ? ownBlock(recv.view, L.RECV_COUNTS) : recv.view;
    return run(Coll.ALLTOALLW, c, sv, rv, mode, 0, lists, c.size);
  },

  reduceScatter(c, send, recv, counts, op, mode) {
    clear();
    const per = kernelItems(recv.type, op);
    const items = argList(L.RECV_COUNTS, counts.length);
    let total = 0;
    for (let k = 0; k < counts.length; k++) total += items[k] = count32('reduceScatter', counts[k]! * per, 'a count');
    const r = reducing(recv, send ? 'recv' : 'both', op, 'reduceScatter');
    const s = send && reducing(send, 'send', op, 'reduceScatter');
    // The bounds checks read the send side's count: all of it.
    block[K.SEND_COUNT] = total;
    if (!send) block[K.RECV_COUNT] = total;
    return run(Coll.REDUCE_SCATTER, c, s, r, mode, send ? 0 : SEND_IN_PLACE, bit(L.RECV_COUNTS), counts.length);
  },

  reduceScatterBlock(c, send, recv, count, op, mode) {
    clear();
    const total = count * c.size, per = kernelItems(recv.type, op);
    const r = reducing(withCount(recv, send ? count : total), send ? 'recv' : 'both', op, 'reduceScatterBlock');
    const s = send && reducing(withCount(send, total), 'send', op, 'reduceScatterBlock');
    // MPI's count is one block's; the bounds checks read whole buffers.
    block[K.RECV_COUNT] = count * per;
    block[K.SEND_COUNT] = total * per;
    block[K.RECV_BLOCKS] = send ? 1 : c.size;
    return run(Coll.REDUCE_SCATTER_BLOCK, c, s, r, mode, send ? 0 : SEND_IN_PLACE);
  },

  scan(c, send, recv, op, exclusive, mode) {
    clear();
    const call = exclusive ? 'exscan' : 'scan';
    // exscan leaves rank 0's buffer as it was: stage it both ways.
    const r = reducing(recv, send && !exclusive ? 'recv' : 'both', op, call);
    const s = send && reducing(send, 'send', op, call);
    return run(exclusive ? Coll.EXSCAN : Coll.SCAN, c, s, r, mode, send ? 0 : SEND_IN_PLACE);
  },
};

// ---- Intercommunicators ---------------------------------------------------------

// MPI's root argument for a rank of an intercommunicator. A rank of the
// root's group that takes no part (PROC_NULL) passes one byte on both
// sides, never an empty message: with a zero count Open MPI 4.1's
// nonblocking intercommunicator collectives lose step with the other
// ranks and the next one hangs. (MPI ignores these arguments there.)
const IDLE = new Uint8Array(1);
// For the same reason an empty reduction travels as one byte: Open MPI
// 4.1's MPI_Ireduce on an intercommunicator returns at once where the count
// is 0, so a root and senders with nothing to reduce lost step with the
// ranks passing IDLE. The root receives that byte here; what it holds is
// never read.
const SINK = new Uint8Array(1);
function oneByte(side: K.SEND_COUNT | K.RECV_COUNT): void {
  block[side] = 1;
  block[side + 1] = BasicType.I8;
  block[K.OP] = Op.SUM.id;
}
function rootArg(root: InterRoot): number {
  if (root.role === 'none') {
    block[K.SEND_COUNT] = block[K.RECV_COUNT] = 1;
    block[K.SEND_TYPE] = block[K.RECV_TYPE] = BasicType.I8;
    return PROC_NULL;
  }
  return root.role === 'root' ? ROOT : root.rank;
}

const inter: InterCollectives = {
  barrier(c, mode) {
    clear();
    return run(Coll.BARRIER, c, null, null, mode);
  },

  bcast(c, buf, root, mode) {
    clear();
    block[K.ROOT] = rootArg(root);
    if (!buf) return run(mode === Mode.BLOCKING ? Coll.BCAST : Coll.SCATTERV, c, IDLE, IDLE, mode);
    if (mode === Mode.BLOCKING) return run(Coll.BCAST, c, null, moving(buf, K.RECV_COUNT, 1, 'bcast'), mode);
    // Nonblocking and persistent: a scatterv of the whole buffer to every
    // remote rank. MPICH 4.0's MPI_Ibcast on an intercommunicator delivers
    // nothing, or fails an assertion, when the root is not rank 0 of its
    // group; its scatterv works, and so does Open MPI's.
    if (root.role === 'root') {
      const view = moving(buf, K.SEND_COUNT, 1, 'bcast');
      const n = c.remoteSize, counts = argList(L.SEND_COUNTS, n), displs = argList(L.SEND_DISPLS, n);
      counts.fill(block[K.SEND_COUNT]!, 0, n);
      displs.fill(0, 0, n);
      return run(Coll.SCATTERV, c, view, IDLE, mode, 0, bit(L.SEND_COUNTS) | bit(L.SEND_DISPLS), n);
    }
    return run(Coll.SCATTERV, c, IDLE, moving(buf, K.RECV_COUNT, 1, 'bcast'), mode);
  },

  gather(c, send, recv, root, mode) {
    clear();
    block[K.ROOT] = rootArg(root);
    if (root.role === 'none') return run(Coll.GATHER, c, IDLE, IDLE, mode);
    const s = send && moving(send, K.SEND_COUNT, 1, 'gather');
    return run(Coll.GATHER, c, s, recv && moving(recv, K.RECV_COUNT, c.remoteSize, 'gather'), mode);
  },

  gatherv(c, send, recv, root, mode) {
    clear();
    block[K.ROOT] = rootArg(root);
    if (root.role === 'none') return run(Coll.GATHERV, c, IDLE, IDLE, mode);
    const s = send && moving(send, K.SEND_COUNT, 1, 'gatherv');
    if (recv === null) return run(Coll.GATHERV, c, s, null, mode);
    const lists = vLists(recv, L.RECV_COUNTS, 'gatherv', false);
    block[K.RECV_TYPE] = vType(recv);
    return run(Coll.GATHERV, c, s, recv.view, mode, 0, lists, c.remoteSize);
  },

  scatter(c, send, recv, root, mode) {
    clear();
    block[K.ROOT] = rootArg(root);
    if (root.role === 'none') return run(Coll.SCATTER, c, IDLE, IDLE, mode);
    const s = send && moving(send, K.SEND_COUNT, c.remoteSize, 'scatter');
    return run(Coll.SCATTER, c, s, recv && moving(recv, K.RECV_COUNT, 1, 'scatter'), mode);
  },

  scatterv(c, send, recv, root, mode) {
    clear();
    block[K.ROOT] = rootArg(root);
    if (root.role === 'none') return run(Coll.SCATTERV, c, IDLE, IDLE, mode);
    const r = recv && moving(recv, K.RECV_COUNT, 1, 'scatterv');
    if (send === null) return run(Coll.SCATTERV, c, null, r, mode);
    const lists = vLists(send, L.SEND_COUNTS, 'scatterv', false);
    block[K.SEND_TYPE] = vType(send);
    return run(Coll.SCATTERV, c, send.view, r, mode, 0, lists, c.remoteSize);
  },

  allgather(c, send, recv, mode) {
    clear();
    const s = moving(send, K.SEND_COUNT, 1, 'allgather');
    return run(Coll.ALLGATHER, c, s, moving(recv, K.RECV_COUNT, c.remoteSize, 'allgather'), mode);
  },

  allgatherv(c, send, recv, mode) {
    clear();
    const s = moving(send, K.SEND_COUNT, 1, 'allgatherv');
    const lists = vLists(recv, L.RECV_COUNTS, 'allgatherv', false);
    block[K.RECV_TYPE] = vType(recv);
    return run(Coll.ALLGATHERV, c, s, recv.view, mode, 0, lists, c.remoteSize);
  },

  alltoall(c, send, recv, mode) {
    clear();
    const s = moving(send, K.SEND_COUNT, c.remoteSize, 'alltoall');
    return run(Coll.ALLTOALL, c, s, moving(recv, K.RECV_COUNT, c.remoteSize, 'alltoall'), mode);
  },

  alltoallv(c, send, recv, mode) {
    clear();
    const lists = vLists(recv, L.RECV_COUNTS, 'alltoallv', false) | vLists(send, L.SEND_COUNTS, 'alltoallv', false);
    block[K.RECV_TYPE] = vType(recv);
    block[K.SEND_TYPE] = vType(send);
    return run(Coll.ALLTOALLV, c, send.view, recv.view, mode, 0, lists, c.remoteSize);
  },

  alltoallw(c, send, recv, mode) {
    clear();
    const lists = vLists(recv, L.RECV_COUNTS, 'alltoallw', true) | vLists(send, L.SEND_COUNTS, 'alltoallw', true);
    return run(Coll.ALLTOALLW, c, send.view, recv.view, mode, 0, lists, c.remoteSize);
  },

  reduce(c, send, recv, op, root, mode) {
    clear();
    block[K.ROOT] = rootArg(root);
    if (root.role === 'none') {
      // Neither buffer, datatype nor op matters here (MPI 4.1 §6.2.2); but
      // whether the op is the user's decides whether the ranks agree on
      // its failure afterwards.
      block[K.OP] = Op.SUM.id;
      sig.op = op.id < 0 ? USER_OP : op.id;
      return run(Coll.REDUCE, c, IDLE, IDLE, mode);
    }
    if (root.role === 'root') {
      const r = reducing(recv!, 'recv', op, 'reduce');
      if (block[K.RECV_COUNT] !== 0) return run(Coll.REDUCE, c, null, r, mode);
      oneByte(K.RECV_COUNT);
      return run(Coll.REDUCE, c, null, SINK, mode);
    }
    const s = reducing(send!, 'send', op, 'reduce');
    const empty = block[K.SEND_COUNT] === 0;
    if (empty) oneByte(K.SEND_COUNT);
    block[K.RECV_TYPE] = block[K.SEND_TYPE]!;
    return run(Coll.REDUCE, c, empty ? IDLE : s, null, mode);
  },

  allreduce(c, send, recv, op, mode) {
    clear();
    const r = reducing(recv, 'recv', op, 'allreduce');
    return run(Coll.ALLREDUCE, c, reducing(send, 'send', op, 'allreduce'), r, mode);
  },

  reduceScatterBlock(c, send, recv, op, mode) {
    clear();
    const per = kernelItems(recv.type, op);
    const r = reducing(recv, 'recv', op, 'reduceScatterBlock');
    const s = reducing(withCount(send, send.count * c.size), 'send', op, 'reduceScatterBlock');
    block[K.RECV_COUNT] = recv.count * per;
    block[K.SEND_COUNT] = send.count * c.size * per;
    return run(Coll.REDUCE_SCATTER_BLOCK, c, s, r, mode);
  },

  reduceScatter(c, send, recv, counts, op, mode) {
    clear();
    // MPI reads as much of the send buffer as the remote group's counts add
    // up to, which this rank cannot see: it learns them first (one small
    // allgather), as the shm backend does.
    const theirs = new Int32Array(c.remoteSize);
    block[K.SEND_COUNT] = 4;
    block[K.RECV_COUNT] = 4;
    block[K.RECV_BLOCKS] = c.remoteSize;
    run(Coll.ALLGATHER, c, Int32Array.of(counts[c.rank]!), theirs, Mode.BLOCKING);
    clear();
    let total = 0;
    for (let i = 0; i < theirs.length; i++) total += theirs[i]!;
    sameTotals(counts, total);
    if (send.count !== total) {
      fail('ERR_COUNT', 'reduceScatter', `send buffer holds ${send.count} items but the remote group's recvcounts add up to ${total}`);
    }
    const per = kernelItems(recv.type, op);
    const items = argList(L.RECV_COUNTS, counts.length);
    for (let k = 0; k < counts.length; k++) items[k] = count32('reduceScatter', counts[k]! * per, 'a count');
    const r = reducing(recv, 'recv', op, 'reduceScatter');
    const s = reducing(send, 'send', op, 'reduceScatter');
    block[K.SEND_COUNT] = total * per;
    return run(Coll.REDUCE_SCATTER, c, s, r, mode, 0, bit(L.RECV_COUNTS), counts.length);
  },
};

/** The MPI library's collectives. */
export const mpi: CollectiveBackend = { intra, inter };
