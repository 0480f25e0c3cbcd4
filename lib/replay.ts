/**
 * Repeated blocking collectives as implicit persistent requests.
 *
 * An iterative program calls the same collective on the same buffers again
 * and again, and at small sizes checking and converting the arguments costs
 * more than moving the data (bench/CORE.md). When a communicator sees a
 * blocking call whose arguments are exactly those of one of its recent calls
 * of that collective, it makes the call a persistent request (the engine's
 * template, as `allreduceInit` would) and from then on runs that template
 * as a blocking call whenever those arguments come again
 * (the backend's runTemplate). The signature exchange, and so the mismatch checks,
 * run every time as on any call.
 *
 * "Exactly" means:
 * - the same buffer objects, whose true byte lengths are the recorded ones:
 *   a detached or shrunk ArrayBuffer reads shorter, and memory never moves
 *   while its buffer is attached;
 * - counts, displacements, roots and datatype lists equal in value (a
 *   program may change an array in place between calls);
 * - only what the addon reads in place: TypedArrays, predefined datatypes
 *   (a freed derived type's handle may be reused) and predefined ops (a user
 *   op's callback runs JavaScript); a call that staged a derived type is
 *   never kept;
 * - buffers up to 1 MiB, since a template keeps its views alive (at most
 *   PER_CALL per collective); above that a repeat saves nothing measurable
 *   anyway;
 * - at most two buffers, as every collective has (stillHeld checks two).
 */
import { backend } from './backends/active.js';
import { IN_PLACE } from './constants.js';
import { Datatype } from './datatype.js';
import { NO_VIEW, stillHeld, trueBuffer, trueBytes } from './message.js';
import { Op } from './op.js';

const MAX_BUFFER = 1 << 20;
// Argument lists kept per collective: a program often alternates a few
// (an allreduce of its gradients, then one of its loss).
const PER_CALL = 4;
// Misses in a row after which a collective's calls go unwatched for a
// pause of MIN_PAUSE calls, doubling up to MAX_PAUSE while misses go on.
const MISSES = 8;
const MIN_PAUSE = 16;
const MAX_PAUSE = 1024;

/** replay(): these arguments have come a second time; make the call a template (kept()). */
export const RECORD = -2;
/** replay(): the call ran from its template. */
export const REPLAYED = -4;
// An entry whose call turned out not to be repeatable (it staged a
// derived type): matched, so as not to make a template again, never run.
const NEVER = -3;

interface Entry {
  // The call's arguments, arrays copied two levels down (a v-spec's counts).
  args: unknown[];
  // Its buffers and their true byte lengths: none, or two (the second
  // NO_VIEW where the call has one).
  views: ArrayBufferView[];
  bytes: number[];
  // The engine's template; -1 until the same call has come twice.
  id: number;
  // alltoallv's and alltoallw's specs, compared together.
  pair: Pair | null;
}

// One collective's argument lists, most recently used last.
interface Calls {
  entries: Entry[];
  // Calls in a row that matched no entry, and how many calls to let pass
  // unwatched after the next MISSES of them (doubling up to MAX_PAUSE).
  misses: number;
  pause: number;
  nextPause: number;
}

/** One communicator's replays: the last few argument lists of each collective. */
export class Replays {
  // By the collective's number (Collective.id): a loop that alternates two
  // collectives (a benchmark's barrier between calls) finds each one's
  // without hashing a name.
  #calls: (Calls | undefined)[] = [];
  // The entry the last replay() matched or added (null: not replayable), for
  // recorded() right after.
  #last: Entry | null = null;
  /** Calls run from a template, for the tests. */
  hits = 0;
  // Only made where the backend runs templates (Comm._replays).
  #runTemplate = backend.requests.runTemplate!;

  /**
   * A blocking call of collective `id` with arguments a0..a(n-1): REPLAYED when it
   * ran from its template, RECORD to make one of this call (then kept()),
   * or -1 to run it as usual. One by one rather than a list, so that a
   * repeat allocates nothing (comm.ts, _blocking).
   */
  replay(which: number, n: number, a0: unknown, a1: unknown, a2: unknown, a3: unknown): number {
    // The loop's case, the same call as last time, is looked at first and
    // apart from the rest (#search): until V8 optimizes, every call costs,
    // and then it compiles whole what it inlines, on a thread that takes a
    // core from the ranks (bench/WARMUP.md).
    const calls = this.#calls[which];
    const e = latest(calls);
    return this.#run(e !== null && same(e, n, a0, a1, a2, a3) ? this.#matched(calls!, e) : this.#search(which, calls, n, a0, a1, a2, a3));
  }

  /**
   * replay() for alltoallv and alltoallw, whose two specs are compared
   * together (Pair). A path of its own: V8 inlines into the caller's loop
   * only so much code, and alltoallv's check with the generic one's beside
   * it went past that, some jobs inlining it and some not (bench/VCOLL.md,
   * "One path per shape").
   */
  replayPair(which: number, a0: unknown, a1: unknown): number {
    const calls = this.#calls[which];
    const e = latest(calls);
    const hit = e !== null && (e.pair !== null ? samePair(e.pair, a0, a1) && sameBytes(e) : same(e, 2, a0, a1, undefined, undefined));
    return this.#run(hit ? this.#matched(calls!, e) : this.#search(which, calls, 2, a0, a1, undefined, undefined));
  }

  // Runs template `id` from replay(): REPLAYED, or `id` itself when it is
  // RECORD or -1, or -1 when the engine no longer has the template (then
  // the call runs as usual).
  #run(id: number): number {
    if (id < 0) return id;
    if (!this.#runTemplate(id)) return -1;
    this.hits++;
    return REPLAYED;
  }

  // The matched entry's template, RECORD or -1 (as #search).
  #matched(calls: Calls, e: Entry): number {
    calls.misses = 0;
    calls.nextPause = MIN_PAUSE;
    this.#last = e;
    return e.id >= 0 ? e.id : e.id === NEVER ? -1 : RECORD;
  }

  // replay() past its most recent entry: the template to run, RECORD or -1.
  #search(which: number, found: Calls | undefined, n: number, a0: unknown, a1: unknown, a2: unknown, a3: unknown): number {
    let calls = found;
    if (calls === undefined) {
      calls = { entries: [], misses: 0, pause: 0, nextPause: MIN_PAUSE };
      this.#calls[which] = calls;
    }
    this.#last = null;
    if (calls.pause > 0) {
      calls.pause--;
      return -1;
    }
    const list = calls.entries;
    for (let i = 0; i < list.length - 1; i++) {
      const e = list[i]!;
      if (!same(e, n, a0, a1, a2, a3)) continue;
      // Most recently used last, without splice()'s array per call.
      list.copyWithin(i, i + 1);
      list[list.length - 1] = e;
      return this.#matched(calls, e);
    }
    // A program that passes new arrays at every call never repeats itself:
    // holding them for nothing keeps their memory alive longer, which slows
    // such calls (bench/README.md, "Measurements behind the code"), so after
    // a run of misses stop watching for a while, longer each time.
    if (++calls.misses >= MISSES) {
      list.forEach(free);
      list.length = 0;
      calls.misses = 0;
      calls.pause = calls.nextPause;
      calls.nextPause = Math.min(2 * calls.nextPause, MAX_PAUSE);
      return -1;
    }
    const fresh = entry(argList(n, a0, a1, a2, a3));
    if (fresh !== null) {
      if (list.length === PER_CALL) free(list.shift()!);
      list.push(fresh);
    }
    this.#last = fresh;
    return -1;
  }

  /**
   * After the RECORD replay() asked for: the template made of the call, or -1
   * when it could not be kept (it staged a derived type).
   */
  kept(id: number): void {
    const e = this.#last;
    if (e === null || id < 0) {
      if (id >= 0) backend.requests.freeTemplate(id);
      if (e !== null) e.id = NEVER;
      return;
    }
    e.id = id;
  }

  /** Frees every template (the communicator is being freed). */
  clear(): void {
    for (const calls of this.#calls) calls?.entries.forEach(free);
    this.#calls = [];
    this.#last = null;
  }
}

function free(e: Entry): void {
  if (e.id >= 0) backend.requests.freeTemplate(e.id);
}

// The entry a repeat most likely matches: a collective's most recent, while
// its calls are watched.
function latest(calls: Calls | undefined): Entry | null {
  if (calls === undefined || calls.pause !== 0) return null;
  const list = calls.entries;
  return list.length !== 0 ? list[list.length - 1]! : null;
}

// A value whose meaning never changes, compared by value or identity.
function plain(x: unknown): boolean {
  return typeof x === 'number' || (x instanceof Datatype && x.predefined);
}

// A v- or w-spec [buf, counts, displs?, datatype(s)?] as recorded: the
// argument the v-collectives repeat, compared place by place rather than
// by sameSpec's two-level walk, its counts and displacements in one loop
// (bench/VCOLL.md).
class VSpec {
  // The n counts, then the displacements where they are a list as long.
  readonly nums: readonly unknown[];
  readonly n: number;
  readonly listed: boolean;

  constructor(readonly length: number, readonly view: ArrayBufferView, counts: unknown[],
    readonly displs: unknown, readonly types: unknown) {
    this.n = counts.length;
    this.listed = Array.isArray(displs) && displs.length === counts.length;
    this.nums = this.listed ? counts.concat(displs as unknown[]) : counts;
  }

  // `inner`: the spec's copy as entry() made it.
  static of(inner: unknown[]): VSpec | null {
    const n = inner.length, [view, counts, displs, types] = inner;
    if (n < 2 || n > 4 || !ArrayBuffer.isView(view) || !Array.isArray(counts)) return null;
    if (!(displs === undefined || displs === null || Array.isArray(displs))) return null;
    return new VSpec(n, view, counts, displs, types);
  }

  matches(a: unknown): boolean {
    if (!Array.isArray(a) || a.length !== this.length || a[0] !== this.view) return false;
    const c: unknown = a[1], nums = this.nums, n = this.n;
    // Past the spec's end nothing is read: a read out of bounds costs more.
    const d: unknown = this.length > 2 ? a[2] : undefined;
    if (!Array.isArray(c) || c.length !== n) return false;
    if (this.listed) {
      if (!Array.isArray(d) || d.length !== n) return false;
      for (let k = 0; k < n; k++) if (c[k] !== nums[k] || d[k] !== nums[n + k]) return false;
    } else {
      if (d !== this.displs) return false;
      for (let k = 0; k < n; k++) if (c[k] !== nums[k]) return false;
    }
    return this.length < 4 || this.sameTypes(a[3]);
  }

  // A w-spec's datatypes.
  sameTypes(t: unknown): boolean {
    return t === this.types || (Array.isArray(this.types) && sameList(t, this.types));
  }
}

// The two specs of alltoallv and alltoallw. A program often gives both the
// same count and displacement lists; when it did so at the recorded call
// (`shared`), lists that are again the first spec's need no second look.
interface Pair {
  first: VSpec;
  second: VSpec;
  shared: boolean;
}

function pairOf(args: unknown[], copy: unknown[]): Pair | null {
  const [first, second] = copy;
  if (copy.length !== 2 || !(first instanceof VSpec) || !(second instanceof VSpec)) return null;
  // Both arguments were arrays (VSpec.of).
  const a = args[0] as unknown[], b = args[1] as unknown[];
  return { first, second, shared: a.length === b.length && a[1] === b[1] && (a.length < 3 || a[2] === b[2]) };
}

function samePair(p: Pair, a0: unknown, a1: unknown): boolean {
  if (!p.first.matches(a0)) return false;
  const y = p.second, f = a0 as unknown[];
  if (p.shared && Array.isArray(a1) && a1.length === y.length && a1[0] === y.view && a1[1] === f[1] &&
      (y.length < 3 || a1[2] === f[2])) {
    return y.length < 4 || y.sameTypes(a1[3]);
  }
  return y.matches(a1);
}

// A new entry for `args`, or null when they hold anything a replay could
// not vouch for.
function entry(args: unknown[]): Entry | null {
  const views: ArrayBufferView[] = [], bytes: number[] = [];
  const hold = (v: ArrayBufferView): boolean => {
    // DataViews take another byteLength getter; rare in a hot loop.
    if (v instanceof DataView || trueBuffer(v).byteLength > MAX_BUFFER) return false;
    const n = trueBytes(v);
    if (n === 0 || views.length === 2) return false;
    views.push(v);
    bytes.push(n);
    return true;
  };
  const copy: unknown[] = new Array(args.length);
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (ArrayBuffer.isView(a)) {
      if (!hold(a)) return null;
      copy[i] = a;
    } else if (Array.isArray(a)) {
      // A message spec [buf, counts, displs, types] or a list of counts.
      const inner: unknown[] = new Array(a.length);
      for (let j = 0; j < a.length; j++) {
        const b: unknown = a[j];
        if (j === 0 && ArrayBuffer.isView(b)) {
          if (!hold(b)) return null;
          inner[j] = b;
        } else if (Array.isArray(b)) {
          for (let k = 0; k < b.length; k++) if (!plain(b[k])) return null;
          inner[j] = b.slice();
        } else if (b === null || b === undefined || plain(b)) {
          inner[j] = b;
        } else {
          return null;
        }
      }
      copy[i] = VSpec.of(inner) ?? inner;
    } else if (a === null || a === undefined || a === IN_PLACE || typeof a === 'number' || (a instanceof Op && a.id >= 0)) {
      copy[i] = a;
    } else {
      return null;
    }
  }
  // A second view always, for stillHeld (a barrier keeps none).
  if (views.length === 1) {
    views.push(NO_VIEW);
    bytes.push(0);
  }
  return { args: copy, views, bytes, id: -1, pair: pairOf(args, copy) };
}

// The arguments of entry `e` again, buffers intact. A pair's specs compare
// here one by one, as any other argument.
function same(e: Entry, n: number, a0: unknown, a1: unknown, a2: unknown, a3: unknown): boolean {
  const s = e.args;
  if (s.length !== n) return false;
  if (n > 0 && a0 !== s[0] && !sameArg(a0, s[0])) return false;
  if (n > 1 && a1 !== s[1] && !sameArg(a1, s[1])) return false;
  if (n > 2 && a2 !== s[2] && !sameArg(a2, s[2])) return false;
  if (n > 3 && a3 !== s[3] && !sameArg(a3, s[3])) return false;
  return sameBytes(e);
}

// Entry `e`'s buffers still as long as when recorded (not detached, not
// shrunk): none (a barrier), or two (entry()).
function sameBytes(e: Entry): boolean {
  const v = e.views, bytes = e.bytes;
  return v.length === 0 || stillHeld(v[0]!, bytes[0]!, v[1]!, bytes[1]!);
}

// An argument equal to the copy `x` (apart from same(), which most loops
// never need it in).
function sameArg(a: unknown, x: unknown): boolean {
  return x instanceof VSpec ? x.matches(a) : sameSpec(a, x);
}

// A message spec or list of counts equal, two levels down, to the copy `x`.
function sameSpec(a: unknown, x: unknown): boolean {
  if (!Array.isArray(x) || !Array.isArray(a) || a.length !== x.length) return false;
  for (let j = 0; j < x.length; j++) {
    const b: unknown = a[j], y: unknown = x[j];
    if (!Array.isArray(y)) {
      if (b !== y) return false;
      continue;
    }
    if (!sameList(b, y)) return false;
  }
  return true;
}

// A list equal element by element to the copy `y`.
function sameList(b: unknown, y: readonly unknown[]): boolean {
  if (!Array.isArray(b) || b.length !== y.length) return false;
  for (let k = 0; k < y.length; k++) if (b[k] !== y[k]) return false;
  return true;
}

/** @internal The first n of a blocking call's arguments (Comm._blocking, replay()) as a list. */
export function argList(n: number, a0: unknown, a1: unknown, a2: unknown, a3: unknown): unknown[] {
  const all = [a0, a1, a2, a3];
  all.length = n;
  return all;
}
