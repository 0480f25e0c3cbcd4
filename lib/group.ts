/**
 * Process groups (MPI_Group): ordered sets of ranks, with MPI's algebra.
 * A group lists world ranks; a rank in a group is an index into that list.
 */
import { IDENT, PROC_NULL, SIMILAR, UNDEFINED, UNEQUAL } from './constants.js';
import { describe, fail } from './errors.js';
import { worldRank } from './runtime.js';

/** An ordered set of processes (MPI_Group). */
export class Group {
  readonly #ranks: readonly number[];

  /** @internal `ranks` are world ranks in group order. */
  constructor(ranks: readonly number[]) {
    this.#ranks = Object.freeze(ranks.slice());
  }

  /** The empty group (MPI_GROUP_EMPTY). */
  static readonly EMPTY = new Group([]);

  /** @internal World ranks in group order. */
  get worldRanks(): readonly number[] {
    return this.#ranks;
  }

  /** Number of processes (MPI_Group_size). */
  get size(): number {
    return this.#ranks.length;
  }

  /** This process's rank in the group, or mpi.UNDEFINED when it is not a member (MPI_Group_rank). */
  get rank(): number {
    const i = this.#ranks.indexOf(worldRank());
    return i < 0 ? UNDEFINED : i;
  }

  /** MPI_Group_incl: the listed ranks, in the order listed. */
  incl(ranks: number[]): Group {
    return include(this, checkRanks('Group.incl', ranks, this.size));
  }

  /** MPI_Group_excl: every rank but the listed ones, in group order. */
  excl(ranks: number[]): Group {
    return exclude(this, checkRanks('Group.excl', ranks, this.size));
  }

  /** MPI_Group_range_incl: ranks from [first, last, stride] triplets, in order. */
  rangeIncl(ranges: [number, number, number][]): Group {
    return include(this, checkRanks('Group.rangeIncl', this.#expand('Group.rangeIncl', ranges), this.size));
  }

  /** MPI_Group_range_excl: every rank but those of the triplets, in group order. */
  rangeExcl(ranges: [number, number, number][]): Group {
    return exclude(this, checkRanks('Group.rangeExcl', this.#expand('Group.rangeExcl', ranges), this.size));
  }

  /**
   * MPI_Group_translate_ranks: the rank in `other` of each listed rank of
   * this group (mpi.UNDEFINED where absent; PROC_NULL stays PROC_NULL).
   */
  translateRanks(ranks: number[], other: Group): number[] {
    checkGroup('Group.translateRanks', other, 'other');
    if (!Array.isArray(ranks)) fail('ERR_ARG', 'Group.translateRanks', `ranks must be an array, got ${describe(ranks)}`);
    return ranks.map((r, i) => {
      if (r === PROC_NULL) return PROC_NULL;
      if (!Number.isInteger(r) || r < 0 || r >= this.size) {
        fail('ERR_RANK', 'Group.translateRanks', `ranks[${i}] = ${describe(r)} is not a rank of a group of size ${this.size}`);
      }
      const j = other.#ranks.indexOf(this.#ranks[r]!);
      return j < 0 ? UNDEFINED : j;
    });
  }

  /** MPI_Group_compare: IDENT (same members, same order), SIMILAR (same members), or UNEQUAL. */
  compare(other: Group): number {
    checkGroup('Group.compare', other, 'other');
    return compareRanks(this.#ranks, other.#ranks);
  }

  /** MPI_Group_union: this group's ranks, then those of `b` not in it. */
  static union(a: Group, b: Group): Group {
    checkGroup('Group.union', a, 'a');
    checkGroup('Group.union', b, 'b');
    const seen = new Set(a.#ranks);
    return new Group([...a.#ranks, ...b.#ranks.filter((r) => !seen.has(r))]);
  }

  /** MPI_Group_intersection: ranks of `a` also in `b`, in `a`'s order. */
  static intersection(a: Group, b: Group): Group {
    checkGroup('Group.intersection', a, 'a');
    checkGroup('Group.intersection', b, 'b');
    const inB = new Set(b.#ranks);
    return new Group(a.#ranks.filter((r) => inB.has(r)));
  }

  /** MPI_Group_difference: ranks of `a` not in `b`, in `a`'s order. */
  static difference(a: Group, b: Group): Group {
    checkGroup('Group.difference', a, 'a');
    checkGroup('Group.difference', b, 'b');
    const inB = new Set(b.#ranks);
    return new Group(a.#ranks.filter((r) => !inB.has(r)));
  }

  toString(): string {
    return `Group(${this.#ranks.length})`;
  }

  #expand(call: string, ranges: unknown): number[] {
    if (!Array.isArray(ranges)) fail('ERR_ARG', call, `ranges must be an array of [first, last, stride], got ${describe(ranges)}`);
    const out: number[] = [];
    ranges.forEach((t, i) => {
      if (!Array.isArray(t) || t.length !== 3 || !t.every((v) => Number.isInteger(v))) {
        fail('ERR_ARG', call, `ranges[${i}] must be [first, last, stride] integers, got ${describe(t)}`);
      }
      const [first, last, stride] = t as [number, number, number];
      if (stride === 0) fail('ERR_ARG', call, `ranges[${i}] has stride 0`);
      if ((stride > 0 && first > last) || (stride < 0 && first < last)) {
        fail('ERR_ARG', call, `ranges[${i}] = [${first}, ${last}, ${stride}] runs the wrong way`);
      }
      // Every rank a triplet gives must be a rank of the group, and no rank
      // may come twice: checked as they come, so that [0, 2^31, 1] stops at
      // the group's end instead of listing 2^31 ranks.
      for (let r = first; stride > 0 ? r <= last : r >= last; r += stride) {
        if (r < 0 || r >= this.size) {
          fail('ERR_RANK', call, `ranges[${i}] = [${first}, ${last}, ${stride}] gives rank ${r}, which is not a rank of a group of size ${this.size}`);
        }
        if (out.length === this.size) fail('ERR_RANK', call, `the ranges give more than the group's ${this.size} ranks, so some rank twice`);
        out.push(r);
      }
    });
    return out;
  }
}

function checkRanks(call: string, ranks: unknown, size: number): number[] {
  if (!Array.isArray(ranks)) fail('ERR_ARG', call, `ranks must be an array of ranks, got ${describe(ranks)}`);
  const seen = new Set<number>();
  ranks.forEach((r, i) => {
    if (typeof r !== 'number' || !Number.isInteger(r) || r < 0 || r >= size) {
      fail('ERR_RANK', call, `ranks[${i}] = ${describe(r)} is not a rank of a group of size ${size}`);
    }
    if (seen.has(r)) fail('ERR_RANK', call, `rank ${r} is listed twice`);
    seen.add(r);
  });
  return ranks as number[];
}

// (Module functions: a private method that names the class makes the
// TypeScript compiler alias the class, and the alias is not yet set when the
// static EMPTY is made.)
function include(g: Group, ranks: readonly number[]): Group {
  const w = g.worldRanks;
  return new Group(ranks.map((r) => w[r]!));
}

function exclude(g: Group, ranks: readonly number[]): Group {
  const out = new Set(ranks);
  return new Group(g.worldRanks.filter((_, i) => !out.has(i)));
}

/** @internal IDENT, SIMILAR or UNEQUAL for two lists of world ranks. */
export function compareRanks(a: readonly number[], b: readonly number[]): number {
  if (a.length !== b.length) return UNEQUAL;
  if (a.every((r, i) => r === b[i])) return IDENT;
  const set = new Set(a);
  return b.every((r) => set.has(r)) ? SIMILAR : UNEQUAL;
}

function checkGroup(call: string, g: unknown, what: string): asserts g is Group {
  if (!(g instanceof Group)) fail('ERR_GROUP', call, `${what} must be a Group, got ${describe(g)}`);
}
