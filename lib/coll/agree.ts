/**
 * Mismatch detection for the mpi backend (NODEMPI_CHECK_SAME=1).
 *
 * The shm backend compares every collective's signature as part of its
 * protocol, at no extra cost. An MPI library does not: ranks that disagree
 * on a collective hang, fail with the library's error, or corrupt data.
 * With the check on, every blocking collective first exchanges a
 * signature (one allgather of 40 bytes per rank on the same communicator,
 * or on an intercommunicator's merged one) and every rank throws the same
 * ERR_NOT_SAME, worded as shm's, when any rank differs in what MPI
 * requires to be the same: the collective, the root, the op, the
 * reduction's basic type, or the bytes of one message where every rank
 * sends or receives as many. A v-collective's messages are compared with
 * their receive blocks pair by pair as well (lib/coll/mpi.ts,
 * comparePairs). Nonblocking and persistent calls are not
 * checked: a blocking exchange at their start would make them wait for
 * the other ranks.
 */
import { Datatype } from '../datatype.js';
import { fail } from '../errors.js';
import { Op } from '../op.js';

/** What a rank says about one collective; -1 leaves a field out of the comparison. */
export interface Signature {
  /** The collective, as KINDS names it. */
  kind: string;
  root: number;
  /** Predefined op id, -2 for a user-defined op, -1 none. */
  op: number;
  /** Reductions: the basic type's number + 1, 0 none. */
  type: number;
  bytes: number;
}

/** Doubles per rank on the wire: kind, root, op, type, bytes. */
export const FIELDS = 5;

// Kinds travel as their index in this list (native/core/mpi/mpi.h Coll order).
const KINDS = ['barrier', 'bcast', 'gather', 'gatherv', 'scatter', 'scatterv', 'allgather', 'allgatherv', 'alltoall',
  'alltoallv', 'alltoallw', 'reduce', 'allreduce', 'reduceScatter', 'reduceScatterBlock', 'scan', 'exscan'];

/** This rank's signature as the doubles that travel. */
export function encode(s: Signature, out: Float64Array): void {
  out[0] = KINDS.indexOf(s.kind);
  out[1] = s.root;
  out[2] = s.op;
  out[3] = s.type;
  out[4] = s.bytes;
}

// "ranks 0, 2 and 3", as the shm backend words it.
function rankList(ranks: number[]): string {
  const last = ranks.length - 1;
  return (ranks.length === 1 ? 'rank ' : 'ranks ') + ranks.map((r, i) => (i === 0 ? '' : i === last ? ' and ' : ', ') + r).join('');
}

/**
 * Compares every rank's signature (`all`: FIELDS doubles per rank, in rank
 * order) and throws ERR_NOT_SAME naming the first field that differs and
 * who said what.
 */
export function compare(call: string, all: Float64Array, n: number): void {
  const fields: [name: string, at: number, show: (v: number) => string][] = [
    ['collective', 0, (v) => `called ${KINDS[v] ?? '?'}`],
    ['root', 1, (v) => `passed root ${v}`],
    ['op', 2, (v) => (v === -2 ? 'passed a user-defined op' : Op.predefined[v] ? `passed Op.${Op.predefined[v]!.name}` : `passed op #${v}`)],
    ['datatype', 3, (v) => (basicName(v - 1) ? `passed Datatype.${basicName(v - 1)!}` : `passed basic type #${v - 1}`)],
    ['message size', 4, (v) => `sent or expected ${v} bytes`],
  ];
  for (const [name, at, show] of fields) {
    let first: number | undefined, differs = false;
    for (let r = 0; r < n; r++) {
      const v = all[r * FIELDS + at]!;
      if (v === -1 || (at === 3 && v === 0)) continue;
      if (first === undefined) first = v;
      else if (v !== first) differs = true;
    }
    if (!differs) continue;
    const groups = new Map<number, number[]>();
    for (let r = 0; r < n; r++) {
      const v = all[r * FIELDS + at]!;
      const g = groups.get(v);
      if (g) g.push(r);
      else groups.set(v, [r]);
    }
    const parts = [...groups].map(([v, ranks]) => `${rankList(ranks)} ${show(v)}`);
    fail('ERR_NOT_SAME', call, `ranks disagree on the ${name}: ${parts.join('; ')}`);
  }
}

// The first predefined datatype stored as kernel type `basic`, as the shm
// backend names it (INT and INT32_T are one, and agree): DOUBLE, INT32_T.
let byBasic: Map<number, string> | null = null;
function basicName(basic: number): string | undefined {
  if (!byBasic) {
    byBasic = new Map();
    for (const d of Object.values(Datatype)) {
      if (d instanceof Datatype && d.category !== 'char' && !byBasic.has(d.basic)) byBasic.set(d.basic, d.name);
    }
  }
  return byBasic.get(basic);
}
