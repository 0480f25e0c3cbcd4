/**
 * MPI datatypes: the predefined ones and the derived-type constructors of
 * MPI 4.1 chapter 5. Every type knows its type-map bounds (size, lb/ub, true
 * bounds), the basic type and op category when its elements are all alike,
 * and a hash of its type signature. commit() builds a compact description
 * (a tree of loops over byte blocks, see native/core/datatype/typemap.h) and
 * hands it to the addon once; pack/unpack then run natively by handle.
 */
import { describe, fail } from './errors.js';
import { native } from './native.js';

/** Storage types of the native kernels; numbering shared with native/core/kernels/kernels.h. */
export const enum BasicType {
  I8 = 0, U8, I16, U16, I32, U32, I64, U64,
  F32, F64, F80,
  C32, C64, C80,
  BOOL, LOGICAL, BYTE,
  FLOAT_INT, DOUBLE_INT, LONG_INT, TWO_INT, SHORT_INT, LONG_DOUBLE_INT,
  TWO_FLOAT, TWO_DOUBLE,
  F16, BF16,
  NONE = 255,
}

/**
 * MPI's groups of basic datatypes (MPI 4.1 §6.9.2) that decide which
 * predefined ops apply; `char` and `packed` take none, nor does `derived`
 * (a type whose elements are not all of one basic type).
 */
export type Category =
  | 'cint' | 'fint' | 'float' | 'logical' | 'complex' | 'byte' | 'multi' | 'pair' | 'char' | 'packed' | 'derived';

// ---- Type signatures ---------------------------------------------------------
//
// A signature is the sequence of basic types, whatever the layout. It is
// hashed as a polynomial over a prime field, h(t1..tn) = Σ code(ti)·B^(n-i)
// mod 2^61-1, which composes: h(a‖b) = h(a)·B^|b| + h(b), and k repetitions
// of `a` are a geometric series, so the hash of any type (and of `count`
// items of it) costs O(log count) whatever its counts. Pair types hash as
// their two members, so DOUBLE_INT matches struct { double; int }.

const P = (1n << 61n) - 1n;
const B = 0x1d7c3b5a9e2f4681n % P;

interface Sig {
  readonly n: number;  // basic elements
  readonly h: bigint;
}

const EMPTY_SIG: Sig = { n: 0, h: 0n };

function powMod(base: bigint, e: number): bigint {
  let result = 1n, b = base % P, k = BigInt(e);
  while (k > 0n) {
    if (k & 1n) result = (result * b) % P;
    b = (b * b) % P;
    k >>= 1n;
  }
  return result;
}

function concatSig(a: Sig, b: Sig): Sig {
  if (a.n === 0) return b;
  if (b.n === 0) return a;
  return { n: a.n + b.n, h: (a.h * powMod(B, b.n) + b.h) % P };
}

function repeatSig(a: Sig, k: number): Sig {
  if (k === 0 || a.n === 0) return EMPTY_SIG;
  if (k === 1) return a;
  // Σ_{i<k} X^i with X = B^|a|, by binary expansion of k (Horner form:
  // appending one copy is S·X + 1, doubling is S·(1 + X^m)).
  const x = powMod(B, a.n);
  let sum = 0n, xm = 1n;  // sum of the first m powers, and X^m
  let top = 1;
  while (top * 2 <= k) top *= 2;
  for (let bit = top; bit >= 1; bit /= 2) {
    sum = (sum * (1n + xm)) % P;
    xm = (xm * xm) % P;
    if (Math.floor(k / bit) % 2 === 1) {
      sum = (sum * x + 1n) % P;
      xm = (xm * x) % P;
    }
  }
  return { n: a.n * k, h: (a.h * sum) % P };
}

function basicSig(codes: readonly BasicType[]): Sig {
  let s = EMPTY_SIG;
  for (const c of codes) s = concatSig(s, { n: 1, h: BigInt(c) + 1n });
  return s;
}

// ---- Descriptions ----------------------------------------------------------
//
// The committed form of a type (native/core/datatype/typemap.h has the wire
// format): nodes over byte blocks, offsets relative to the parent's origin,
// `size` the bytes of stream one instance yields. The constructors below
// normalise as they build: empty parts vanish, a loop of one is its body,
// abutting runs merge, a loop over a loop that tiles it becomes one loop,
// regular lists become vectors.

const enum Kind { BLOCK = 1, VECTOR = 2, LIST = 3, INDEXED = 4, STRUCT = 5 }

interface BlockNode { readonly k: Kind.BLOCK; readonly off: number; readonly size: number }
interface VectorNode {
  readonly k: Kind.VECTOR; readonly off: number; readonly size: number;
  readonly n: number; readonly stride: number; readonly child: Node;
}
interface ListNode {
  readonly k: Kind.LIST; readonly off: number; readonly size: number;
  readonly disps: readonly number[]; readonly lens: readonly number[];
}
interface IndexedNode {
  readonly k: Kind.INDEXED; readonly off: number; readonly size: number;
  readonly disps: readonly number[]; readonly counts: readonly number[]; readonly stride: number; readonly child: Node;
}
interface StructNode { readonly k: Kind.STRUCT; readonly off: number; readonly size: number; readonly parts: readonly Node[] }
type Node = BlockNode | VectorNode | ListNode | IndexedNode | StructNode;

function shiftNode(node: Node | null, d: number): Node | null {
  return node === null || d === 0 ? node : { ...node, off: node.off + d };
}

function blockNode(off: number, len: number): Node | null {
  return len > 0 ? { k: Kind.BLOCK, off, size: len } : null;
}

// Arithmetic progression step of `d` (length >= 2), or undefined.
function stepOf(d: readonly number[]): number | undefined {
  const step = d[1]! - d[0]!;
  for (let i = 2; i < d.length; i++) if (d[i]! - d[i - 1]! !== step) return undefined;
  return step;
}

function allEqual(a: readonly number[]): boolean {
  for (let i = 1; i < a.length; i++) if (a[i] !== a[0]) return false;
  return true;
}

function vectorNode(off: number, n: number, stride: number, child: Node | null): Node | null {
  if (child === null || n === 0) return null;
  if (n === 1) return shiftNode(child, off);
  if (child.k === Kind.BLOCK && stride === child.size) return blockNode(off + child.off, n * child.size);
  if (child.k === Kind.VECTOR && stride === child.n * child.stride) {
    return vectorNode(off + child.off, n * child.n, child.stride, child.child);
  }
  return { k: Kind.VECTOR, off, size: n * child.size, n, stride, child };
}

function listNode(off: number, disps: readonly number[], lens: readonly number[]): Node | null {
  const d: number[] = [], l: number[] = [];
  let size = 0;
  for (let i = 0; i < disps.length; i++) {
    const len = lens[i]!;
    if (len === 0) continue;
    size += len;
    const j = d.length - 1;
    if (j >= 0 && d[j]! + l[j]! === disps[i]) l[j]! += len;
    else { d.push(disps[i]!); l.push(len); }
  }
  if (d.length === 0) return null;
  if (d.length === 1) return blockNode(off + d[0]!, l[0]!);
  const step = stepOf(d);
  if (step !== undefined && allEqual(l)) return vectorNode(off + d[0]!, d.length, step, blockNode(0, l[0]!));
  return { k: Kind.LIST, off, size, disps: d, lens: l };
}

function indexedNode(off: number, disps: readonly number[], counts: readonly number[], stride: number, child: Node | null): Node | null {
  if (child === null) return null;
  if (child.k === Kind.BLOCK && stride === child.size) {
    return listNode(off + child.off, disps, counts.map((c) => c * child.size));
  }
  const d: number[] = [], c: number[] = [];
  let items = 0;
  for (let i = 0; i < disps.length; i++) {
    if (counts[i] === 0) continue;
    d.push(disps[i]!);
    c.push(counts[i]!);
    items += counts[i]!;
  }
  if (d.length === 0) return null;
  if (d.length === 1) return vectorNode(off + d[0]!, c[0]!, stride, child);
  const step = stepOf(d);
  if (step !== undefined && allEqual(c)) return vectorNode(off + d[0]!, d.length, step, vectorNode(0, c[0]!, stride, child));
  return { k: Kind.INDEXED, off, size: items * child.size, disps: d, counts: c, stride, child };
}

function structNode(off: number, parts: readonly (Node | null)[]): Node | null {
  // Flatten nested structs, then merge each run of consecutive blocks and
  // lists into one list (which merges abutting runs).
  const flat: Node[] = [];
  const add = (p: Node | null, at: number): void => {
    if (p === null) return;
    if (p.k === Kind.STRUCT) for (const q of p.parts) add(q, at + p.off);
    else flat.push(shiftNode(p, at)!);
  };
  for (const p of parts) add(p, 0);
  const out: Node[] = [];
  let runD: number[] = [], runL: number[] = [];
  const flush = (): void => {
    if (runD.length) out.push(listNode(0, runD, runL)!);
    runD = [];
    runL = [];
  };
  for (const p of flat) {
    if (p.k === Kind.BLOCK) {
      runD.push(p.off);
      runL.push(p.size);
    } else if (p.k === Kind.LIST) {
      for (let i = 0; i < p.disps.length; i++) {
        runD.push(p.off + p.disps[i]!);
        runL.push(p.lens[i]!);
      }
    } else {
      flush();
      out.push(p);
    }
  }
  flush();
  if (out.length === 0) return null;
  if (out.length === 1) return shiftNode(out[0]!, off);
  let size = 0;
  for (const p of out) size += p.size;
  return { k: Kind.STRUCT, off, size, parts: out };
}

/** The wire form of a description (native/core/datatype/typemap.h). */
function serialize(root: Node | null, extent: number, size: number, trueLb: number, trueUb: number): Float64Array {
  const words: number[] = [1, 0, -1, extent, size, trueLb, trueUb];
  const ids = new Map<Node, number>();
  let nodes = 0;
  const emit = (node: Node): number => {
    const seen = ids.get(node);
    if (seen !== undefined) return seen;
    switch (node.k) {
      case Kind.BLOCK:
        words.push(Kind.BLOCK, node.off, node.size);
        break;
      case Kind.VECTOR: {
        const c = emit(node.child);
        words.push(Kind.VECTOR, node.off, node.n, node.stride, c);
        break;
      }
      case Kind.LIST:
        words.push(Kind.LIST, node.off, node.disps.length);
        for (let i = 0; i < node.disps.length; i++) words.push(node.disps[i]!, node.lens[i]!);
        break;
      case Kind.INDEXED: {
        const c = emit(node.child);
        words.push(Kind.INDEXED, node.off, node.disps.length, node.stride, c);
        for (let i = 0; i < node.disps.length; i++) words.push(node.disps[i]!, node.counts[i]!);
        break;
      }
      case Kind.STRUCT: {
        const cs = node.parts.map(emit);
        words.push(Kind.STRUCT, node.off, cs.length);
        for (const c of cs) words.push(c);
        break;
      }
    }
    ids.set(node, nodes);
    return nodes++;
  };
  if (root !== null) words[2] = emit(root);
  words[1] = nodes;
  return Float64Array.from(words);
}

function render(node: Node | null): string {
  if (node === null) return 'empty';
  const at = node.off ? `@${node.off}:` : '';
  switch (node.k) {
    case Kind.BLOCK: return `${at}block(${node.size})`;
    case Kind.VECTOR: return `${at}vector(${node.n} x ${node.stride}, ${render(node.child)})`;
    case Kind.LIST: {
      const runs = node.disps.slice(0, 8).map((d, i) => `${d}+${node.lens[i]}`);
      if (node.disps.length > 8) runs.push(`... ${node.disps.length - 8} more`);
      return `${at}list(${runs.join(' ')})`;
    }
    case Kind.INDEXED: return `${at}indexed(${node.disps.length} runs x ${node.stride}, ${render(node.child)})`;
    case Kind.STRUCT: return `${at}struct(${node.parts.map(render).join(', ')})`;
  }
}

// Native descriptions are released when no Datatype refers to them any more
// (pending operations hold their Datatype), not at free().
interface NativeType { readonly handle: number }
const releaser = new FinalizationRegistry<number>((handle) => native.typeRelease(handle));

// ---- Type-map bounds --------------------------------------------------------

/** Everything MPI defines from a type map, plus what the addon and ops need. */
interface Shape {
  size: number;
  lb: number;
  ub: number;
  trueLb: number;
  trueUb: number;
  /** lb / ub set by resized (MPI's lb/ub markers): they override the data's bounds in any type built from this one. */
  lbSticky: boolean;
  ubSticky: boolean;
  /** Largest alignment of a basic member (for struct's padding). */
  align: number;
  basic: BasicType;
  category: Category;
  /** Basic elements per item (meaningful when `basic` is not NONE). */
  elements: number;
}

/** Copies of `type` placed between displacements dmin and dmax (bytes). */
interface Group {
  type: Datatype;
  dmin: number;
  dmax: number;
  /** Total copies; 0 means the group contributes nothing. */
  copies: number;
}

/** Bounds and homogeneity of the union of groups (MPI 4.1 §5.1.7 with markers). */
function combine(groups: readonly Group[]): Shape {
  let size = 0, elements = 0, align = 1;
  let lbS = Infinity, ubS = -Infinity, lbN = Infinity, ubN = -Infinity, tlb = Infinity, tub = -Infinity;
  let basic: BasicType | undefined, category: Category | undefined, mixed = false;
  for (const g of groups) {
    const t = g.type;
    align = Math.max(align, t.align);
    if (g.copies === 0) continue;
    size += g.copies * t.size;
    elements += g.copies * t.elements;
    if (t.lbSticky) lbS = Math.min(lbS, g.dmin + t.lb);
    else if (t.size > 0) lbN = Math.min(lbN, g.dmin + t.lb);
    if (t.ubSticky) ubS = Math.max(ubS, g.dmax + t.ub);
    else if (t.size > 0) ubN = Math.max(ubN, g.dmax + t.ub);
    if (t.size > 0) {
      tlb = Math.min(tlb, g.dmin + t.trueLb);
      tub = Math.max(tub, g.dmax + t.trueUb);
      if (basic === undefined) {
        basic = t.basic;
        category = t.category;
      } else if (basic !== t.basic || category !== t.category) {
        mixed = true;
      }
    }
  }
  if (basic === undefined) {
    // No data: the basic type of the (first) element type, so that e.g.
    // contiguous(0, DOUBLE) still reduces like DOUBLE.
    const first = groups[0]?.type;
    basic = first ? first.basic : BasicType.NONE;
    category = first ? first.category : 'derived';
    mixed = groups.some((g) => g.type.basic !== basic || g.type.category !== category);
  }
  if (basic === BasicType.NONE) mixed = true;
  const lbSticky = lbS !== Infinity, ubSticky = ubS !== -Infinity;
  const hasData = tlb !== Infinity;
  return {
    size,
    lb: lbSticky ? lbS : hasData ? lbN : 0,
    ub: ubSticky ? ubS : hasData ? ubN : 0,
    trueLb: hasData ? tlb : 0,
    trueUb: hasData ? tub : 0,
    lbSticky,
    ubSticky,
    align,
    basic: mixed ? BasicType.NONE : basic,
    category: mixed ? 'derived' : category!,
    elements,
  };
}

/** dmin/dmax of copies k*stride for k < n (n >= 1). */
function spread(n: number, stride: number): [number, number] {
  const last = (n - 1) * stride;
  return [Math.min(0, last), Math.max(0, last)];
}

// ---- Argument checks ----------------------------------------------------------

function countArg(call: string, what: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
    fail('ERR_COUNT', call, `${what} must be a non-negative integer, got ${describe(v)}`);
  }
  return v;
}

/** @internal A name to set (MPI_Type_set_name, MPI_Comm_set_name): a string. */
export function nameArg(call: string, v: unknown): string {
  if (typeof v !== 'string') fail('ERR_ARG', call, `the name must be a string, got ${describe(v)}`);
  return v;
}

function intArg(call: string, what: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) fail('ERR_ARG', call, `${what} must be an integer, got ${describe(v)}`);
  return v;
}

function typeArg(call: string, what: string, v: unknown): Datatype {
  if (!(v instanceof Datatype)) fail('ERR_TYPE', call, `${what} must be a Datatype, got ${describe(v)}`);
  if (v.freed) fail('ERR_TYPE', call, `${what} ${v.name} has been freed`);
  return v;
}

function listArg(call: string, what: string, v: unknown): unknown[] {
  if (Array.isArray(v)) return v;
  if (ArrayBuffer.isView(v) && !(v instanceof DataView)) return Array.from(v as unknown as ArrayLike<unknown>);
  fail('ERR_ARG', call, `${what} must be an array, got ${describe(v)}`);
}

function countsArg(call: string, what: string, v: unknown): number[] {
  return listArg(call, what, v).map((x, i) => countArg(call, `${what}[${i}]`, x));
}

function intsArg(call: string, what: string, v: unknown): number[] {
  return listArg(call, what, v).map((x, i) => intArg(call, `${what}[${i}]`, x));
}

function sameLength(call: string, what: string, a: readonly unknown[], other: string, b: readonly unknown[]): void {
  if (a.length !== b.length) {
    fail('ERR_ARG', call, `${what} has ${a.length} entries but ${other} has ${b.length}; they must have the same length`);
  }
}

function safe(call: string, shape: Shape): Shape {
  // The extents too: bounds within 2^53 either side can still be more than
  // 2^53 apart.
  for (const v of [shape.size, shape.lb, shape.ub, shape.trueLb, shape.trueUb, shape.elements, shape.ub - shape.lb, shape.trueUb - shape.trueLb]) {
    if (!Number.isSafeInteger(v)) {
      fail('ERR_ARG', call, `the datatype would span more than 2^53 bytes (size ${shape.size}, bounds ${shape.lb} to ${shape.ub})`);
    }
  }
  return shape;
}

/** Runs `compute` on `root` and the descendants it needs, children first, without recursion. */
function bottomUp<T>(root: T, children: (t: T) => readonly T[], done: (t: T) => boolean, compute: (t: T) => void): void {
  const stack: [T, number][] = [[root, 0]];
  while (stack.length) {
    const top = stack[stack.length - 1]!;
    const kids = children(top[0]);
    if (top[1] < kids.length) {
      const c = kids[top[1]++]!;
      if (!done(c)) stack.push([c, 0]);
    } else {
      if (!done(top[0])) compute(top[0]);
      stack.pop();
    }
  }
}

/** A type's name inside another's default name, kept short. */
function short(name: string): string {
  return name.length <= 60 ? name : `${name.slice(0, 57)}...`;
}

function listName(a: readonly unknown[]): string {
  return a.length <= 4 ? `[${a.join(', ')}]` : `[${a.slice(0, 3).join(', ')}, ... ${a.length} entries]`;
}

// ---- Datatype ---------------------------------------------------------------------

/** Byte runs of a predefined type's members: [offset, length, basic type for the signature]. */
type Members = readonly (readonly [number, number, BasicType])[];

/** An MPI datatype (MPI_Datatype). */
export class Datatype {
  /**
   * @internal The basic type of every element of the type map, or NONE when
   * they differ (a vector of DOUBLE is F64).
   */
  readonly basic: BasicType;
  /** @internal The op category of that basic type; 'derived' when heterogeneous. */
  readonly category: Category;
  #name: string;
  readonly #shape: Shape;
  #committed: boolean;
  #freed = false;
  readonly #predefined: boolean;
  // The types this one was built from, and how to build its description and
  // signature from theirs (computed on demand, children first: bottomUp).
  readonly #children: readonly Datatype[];
  readonly #build: () => Node | null;
  #node: Node | null | undefined;
  readonly #sigOf: () => Sig;
  #sig: Sig | undefined;
  #native: NativeType | undefined;
  #lastSig: [count: number, hash: bigint] | undefined;
  #contiguous: boolean | undefined;

  private constructor(name: string, shape: Shape, predefined: boolean, children: readonly Datatype[],
    build: () => Node | null, sig: () => Sig, nativeType?: NativeType) {
    this.#name = name;
    this.#shape = shape;
    this.basic = shape.basic;
    this.category = shape.category;
    this.#committed = predefined || nativeType !== undefined;
    this.#predefined = predefined;
    this.#children = children;
    this.#build = build;
    this.#sigOf = sig;
    this.#native = nativeType;
  }

  /** Bytes of data in one item, padding excluded (MPI_Type_size). */
  get size(): number { return this.#shape.size; }
  /** Distance between consecutive items: ub - lb (MPI_Type_get_extent). */
  get extent(): number { return this.#shape.ub - this.#shape.lb; }
  /** Lower bound (MPI_Type_get_extent). */
  get lb(): number { return this.#shape.lb; }
  /** Upper bound: lb + extent. */
  get ub(): number { return this.#shape.ub; }
  /** Displacement of the first byte of data (MPI_Type_get_true_extent); 0 for a type without data. */
  get trueLb(): number { return this.#shape.trueLb; }
  /** Bytes from the first to the last byte of data (MPI_Type_get_true_extent). */
  get trueExtent(): number { return this.#shape.trueUb - this.#shape.trueLb; }
  /** MPI_Type_get_name / MPI_Type_set_name. */
  get name(): string { return this.#name; }
  set name(value: string) { this.#name = nameArg('Datatype.name', value); }
  /** True once committed (predefined types always are). */
  get committed(): boolean { return this.#committed; }
  /** True for the predefined datatypes (Datatype.INT, ...), which cannot be freed. */
  get predefined(): boolean { return this.#predefined; }
  /** True once freed; a freed datatype cannot be used. */
  get freed(): boolean { return this.#freed; }

  /** @internal trueLb + trueExtent. */
  get trueUb(): number { return this.#shape.trueUb; }
  /** @internal Largest alignment of a basic member. */
  get align(): number { return this.#shape.align; }
  /** @internal lb was set by resized (MPI's lb marker) and wins over the data's bounds in enclosing types. */
  get lbSticky(): boolean { return this.#shape.lbSticky; }
  /** @internal Likewise for ub. */
  get ubSticky(): boolean { return this.#shape.ubSticky; }
  /** @internal Basic elements per item (of type `basic` when it is not NONE). */
  get elements(): number { return this.#shape.elements; }

  /**
   * @internal True when `count` items are exactly count × size dense bytes
   * starting at the buffer position, in type-map order (size === extent,
   * lb === 0, no holes, no reordering): such a message moves as plain bytes.
   */
  get contiguous(): boolean {
    // Asked at every collective call; a type never changes once made.
    return (this.#contiguous ??= this.#isContiguous());
  }

  #isContiguous(): boolean {
    const s = this.#shape;
    if (s.lb !== 0 || s.ub !== s.size) return false;
    if (s.size === 0) return true;
    const node = this.#description();
    return node !== null && node.k === Kind.BLOCK && node.off === 0 && node.size === s.size;
  }

  /**
   * @internal The addon's handle of this committed type's description, for
   * typePack/typeUnpack (predefined types register on first use). It stays
   * valid after free() while this object is alive.
   */
  get handle(): number {
    if (!this.#committed) fail('ERR_TYPE', 'Datatype.handle', `datatype ${this.#name} is not committed (call commit() first)`);
    return (this.#native ??= this.#register()).handle;
  }

  /**
   * @internal Hash of the type signature of one item (the sequence of basic
   * types, layout ignored): a vector of 5 DOUBLE, contiguous(5, DOUBLE) and
   * 5 × DOUBLE hash the same. A value below 2^61.
   */
  get signature(): bigint { return this.#signature().h; }

  /** @internal Hash of the signature of `count` consecutive items. */
  signatureOf(count: number): bigint {
    if (this.#lastSig && this.#lastSig[0] === count) return this.#lastSig[1];
    const h = repeatSig(this.#signature(), count).h;
    this.#lastSig = [count, h];
    return h;
  }

  /**
   * @internal The bytes `count` consecutive items touch, relative to the
   * buffer position (the origin of item 0): [lo, hi), [0, 0] when none.
   */
  span(count: number): [lo: number, hi: number] {
    const s = this.#shape;
    if (count === 0 || s.size === 0) return [0, 0];
    const [dmin, dmax] = spread(count, this.extent);
    return [s.trueLb + dmin, s.trueUb + dmax];
  }

  /**
   * @internal The committed description in its wire form
   * (native/core/datatype/typemap.h), for a backend that builds its own
   * datatype from it.
   */
  layoutWords(): Float64Array {
    const s = this.#shape;
    return serialize(this.#description(), this.extent, s.size, s.trueLb, s.trueUb);
  }

  /** @internal The committed description as text (tests, debugging). */
  describeLayout(): string { return render(this.#description()); }

  /** MPI_Type_commit; required before use in communication. */
  commit(): this {
    if (this.#freed) fail('ERR_TYPE', 'Datatype.commit', `datatype ${this.#name} has been freed`);
    if (!this.#committed) {
      this.#native = this.#register();
      this.#committed = true;
    }
    return this;
  }

  /**
   * MPI_Type_free. Predefined datatypes cannot be freed. Types built from
   * this one, and operations still using it, keep working.
   */
  free(): void {
    if (this.#predefined) fail('ERR_TYPE', 'Datatype.free', `predefined datatype ${this.#name} cannot be freed`);
    if (this.#freed) fail('ERR_TYPE', 'Datatype.free', `datatype ${this.#name} has already been freed`);
    this.#freed = true;
  }

  /** MPI_Type_dup: the same type map, committed if this one is. */
  dup(): Datatype {
    typeArg('Datatype.dup', 'datatype', this);
    return new Datatype(`dup(${short(this.#name)})`, this.#shape, false, [this], () => this.#description(), () => this.#signature(),
      this.#committed ? (this.#native ??= this.#register()) : undefined);
  }

  /** MPI_Type_create_resized: the same data with lower bound `lb` and extent `extent` (bytes). */
  resized(lb: number, extent: number): Datatype {
    const call = 'Datatype.resized';
    typeArg(call, 'datatype', this);
    intArg(call, 'lb', lb);
    intArg(call, 'extent', extent);
    const shape = safe(call, { ...this.#shape, lb, ub: lb + extent, lbSticky: true, ubSticky: true });
    return new Datatype(`resized(${short(this.#name)}, ${lb}, ${extent})`, shape, false, [this], () => this.#description(),
      () => this.#signature());
  }

  toString(): string { return `Datatype(${this.#name})`; }

  // Both are built from the children's, which must exist first: walking the
  // tree of types with an explicit stack keeps any nesting depth off the
  // call stack.
  #description(): Node | null {
    if (this.#node === undefined) {
      bottomUp<Datatype>(this, (t) => t.#children, (t) => t.#node !== undefined, (t) => { t.#node = t.#build(); });
    }
    return this.#node as Node | null;
  }

  #signature(): Sig {
    if (this.#sig === undefined) {
      bottomUp<Datatype>(this, (t) => t.#children, (t) => t.#sig !== undefined, (t) => { t.#sig = t.#sigOf(); });
    }
    return this.#sig!;
  }

  #register(): NativeType {
    const handle = native.typeCommit(this.layoutWords());
    const holder: NativeType = { handle };
    releaser.register(holder, handle);
    return holder;
  }

  // ---- Constructors --------------------------------------------------------------

  /** MPI_Type_contiguous: `count` copies of `old`, one after another. */
  static contiguous(count: number, old: Datatype): Datatype {
    const call = 'Datatype.contiguous';
    countArg(call, 'count', count);
    typeArg(call, 'old type', old);
    return Datatype.#repeat(call, `contiguous(${count}, ${short(old.name)})`, count, 1, old.extent, old);
  }

  /**
   * MPI_Type_vector: `count` blocks of `blocklength` copies of `old`, block
   * starts `stride` extents of `old` apart (negative strides allowed).
   */
  static vector(count: number, blocklength: number, stride: number, old: Datatype): Datatype {
    const call = 'Datatype.vector';
    countArg(call, 'count', count);
    countArg(call, 'blocklength', blocklength);
    intArg(call, 'stride', stride);
    typeArg(call, 'old type', old);
    return Datatype.#repeat(call, `vector(${count}, ${blocklength}, ${stride}, ${short(old.name)})`, count, blocklength,
      stride * old.extent, old);
  }

  /** MPI_Type_create_hvector: as vector, with the stride in bytes. */
  static hvector(count: number, blocklength: number, byteStride: number, old: Datatype): Datatype {
    const call = 'Datatype.hvector';
    countArg(call, 'count', count);
    countArg(call, 'blocklength', blocklength);
    intArg(call, 'byteStride', byteStride);
    typeArg(call, 'old type', old);
    return Datatype.#repeat(call, `hvector(${count}, ${blocklength}, ${byteStride}, ${short(old.name)})`, count, blocklength,
      byteStride, old);
  }

  /**
   * MPI_Type_indexed: block i is `blocklengths[i]` copies of `old` starting
   * `displs[i]` extents of `old` from the origin (any order, negative allowed).
   */
  static indexed(blocklengths: number[], displs: number[], old: Datatype): Datatype {
    const call = 'Datatype.indexed';
    const bl = countsArg(call, 'blocklengths', blocklengths);
    const d = intsArg(call, 'displs', displs);
    sameLength(call, 'blocklengths', bl, 'displs', d);
    typeArg(call, 'old type', old);
    return Datatype.#blocks(call, `indexed(${listName(bl)}, ${listName(d)}, ${short(old.name)})`, bl,
      d.map((x) => x * old.extent), old);
  }

  /** MPI_Type_create_hindexed: as indexed, with displacements in bytes. */
  static hindexed(blocklengths: number[], byteDispls: number[], old: Datatype): Datatype {
    const call = 'Datatype.hindexed';
    const bl = countsArg(call, 'blocklengths', blocklengths);
    const d = intsArg(call, 'byteDispls', byteDispls);
    sameLength(call, 'blocklengths', bl, 'byteDispls', d);
    typeArg(call, 'old type', old);
    return Datatype.#blocks(call, `hindexed(${listName(bl)}, ${listName(d)}, ${short(old.name)})`, bl, d, old);
  }

  /** MPI_Type_create_indexed_block: indexed with one blocklength for every block. */
  static indexedBlock(blocklength: number, displs: number[], old: Datatype): Datatype {
    const call = 'Datatype.indexedBlock';
    countArg(call, 'blocklength', blocklength);
    const d = intsArg(call, 'displs', displs);
    typeArg(call, 'old type', old);
    return Datatype.#blocks(call, `indexedBlock(${blocklength}, ${listName(d)}, ${short(old.name)})`,
      d.map(() => blocklength), d.map((x) => x * old.extent), old);
  }

  /** MPI_Type_create_hindexed_block: hindexed with one blocklength for every block. */
  static hindexedBlock(blocklength: number, byteDispls: number[], old: Datatype): Datatype {
    const call = 'Datatype.hindexedBlock';
    countArg(call, 'blocklength', blocklength);
    const d = intsArg(call, 'byteDispls', byteDispls);
    typeArg(call, 'old type', old);
    return Datatype.#blocks(call, `hindexedBlock(${blocklength}, ${listName(d)}, ${short(old.name)})`,
      d.map(() => blocklength), d, old);
  }

  /**
   * MPI_Type_create_struct: block i is `blocklengths[i]` copies of
   * `types[i]` at byte displacement `byteDispls[i]`. Unless a member was
   * resized, the extent is padded to the largest member alignment, as a C
   * compiler pads a struct.
   */
  static struct(blocklengths: number[], byteDispls: number[], types: Datatype[]): Datatype {
    const call = 'Datatype.struct';
    const bl = countsArg(call, 'blocklengths', blocklengths);
    const d = intsArg(call, 'byteDispls', byteDispls);
    const ts = listArg(call, 'types', types).map((t, i) => typeArg(call, `types[${i}]`, t));
    sameLength(call, 'blocklengths', bl, 'byteDispls', d);
    sameLength(call, 'blocklengths', bl, 'types', ts);
    const groups = ts.map((t, i): Group => {
      const [lo, hi] = bl[i]! > 0 ? spread(bl[i]!, t.extent) : [0, 0];
      return { type: t, dmin: d[i]! + lo, dmax: d[i]! + hi, copies: bl[i]! };
    });
    const shape = combine(groups);
    const extent = shape.ub - shape.lb;
    if (!shape.ubSticky && extent > 0 && extent % shape.align !== 0) shape.ub += shape.align - (extent % shape.align);
    return new Datatype(`struct(${listName(bl)}, ${listName(d)}, ${listName(ts.map((t) => short(t.name)))})`, safe(call, shape),
      false, ts,
      () => structNode(0, ts.map((t, i) => shiftNode(vectorNode(0, bl[i]!, t.extent, t.#description()), d[i]!))),
      () => ts.reduce((s, t, i) => concatSig(s, repeatSig(t.#signature(), bl[i]!)), EMPTY_SIG));
  }

  /**
   * MPI_Type_create_subarray: the `subsizes` block starting at `starts` of
   * an array of `sizes` elements of `old`, in row-major ('C') or
   * column-major ('F') order. Its extent is the whole array, lb 0.
   */
  static subarray(sizes: number[], subsizes: number[], starts: number[], order: 'C' | 'F', old: Datatype): Datatype {
    const call = 'Datatype.subarray';
    const sz = intsArg(call, 'sizes', sizes), sub = intsArg(call, 'subsizes', subsizes), st = intsArg(call, 'starts', starts);
    sameLength(call, 'sizes', sz, 'subsizes', sub);
    sameLength(call, 'sizes', sz, 'starts', st);
    if (sz.length === 0) fail('ERR_ARG', call, 'sizes must have at least one dimension, got an empty array');
    if (order !== 'C' && order !== 'F') fail('ERR_ARG', call, `order must be 'C' or 'F', got ${describe(order)}`);
    for (let i = 0; i < sz.length; i++) {
      if (sz[i]! < 1) fail('ERR_ARG', call, `sizes[${i}] must be at least 1, got ${sz[i]}`);
      if (sub[i]! < 1 || sub[i]! > sz[i]!) fail('ERR_ARG', call, `subsizes[${i}] must be between 1 and sizes[${i}] = ${sz[i]}, got ${sub[i]}`);
      if (st[i]! < 0 || st[i]! > sz[i]! - sub[i]!) {
        fail('ERR_ARG', call, `starts[${i}] must be between 0 and sizes[${i}] - subsizes[${i}] = ${sz[i]! - sub[i]!}, got ${st[i]}`);
      }
    }
    typeArg(call, 'old type', old);
    // Dimensions from the fastest-varying outwards, with their byte strides.
    const dims = sz.map((_, i) => i);
    if (order === 'C') dims.reverse();
    const ext = old.extent;
    let stride = ext, dmin = 0, dmax = 0, copies = 1;
    const loops: [n: number, stride: number, start: number][] = [];
    for (const i of dims) {
      loops.push([sub[i]!, stride, st[i]! * stride]);
      dmin += Math.min(st[i]! * stride, (st[i]! + sub[i]! - 1) * stride);
      dmax += Math.max(st[i]! * stride, (st[i]! + sub[i]! - 1) * stride);
      copies *= sub[i]!;
      stride *= sz[i]!;
    }
    const data = combine([{ type: old, dmin, dmax, copies }]);
    const shape = safe(call, { ...data, lb: 0, ub: stride, lbSticky: true, ubSticky: true });
    return new Datatype(`subarray(${listName(sz)}, ${listName(sub)}, ${listName(st)}, ${order}, ${short(old.name)})`, shape, false, [old],
      () => loops.reduce<Node | null>((child, [n, s, start]) => vectorNode(start, n, s, child), old.#description()),
      () => repeatSig(old.#signature(), copies));
  }

  // count blocks, `stride` bytes apart, of `blocklength` copies of `old` (extent apart).
  static #repeat(call: string, name: string, count: number, blocklength: number, stride: number, old: Datatype): Datatype {
    const copies = count * blocklength;
    const [bmin, bmax] = copies > 0 ? spread(blocklength, old.extent) : [0, 0];
    const [cmin, cmax] = copies > 0 ? spread(count, stride) : [0, 0];
    const shape = combine([{ type: old, dmin: cmin + bmin, dmax: cmax + bmax, copies }]);
    return new Datatype(name, safe(call, shape), false, [old],
      () => vectorNode(0, count, stride, vectorNode(0, blocklength, old.extent, old.#description())),
      () => repeatSig(old.#signature(), copies));
  }

  // Blocks of blocklengths[i] copies of `old` at byte displacements displs[i].
  static #blocks(call: string, name: string, blocklengths: number[], displs: number[], old: Datatype): Datatype {
    let dmin = Infinity, dmax = -Infinity, copies = 0;
    for (let i = 0; i < blocklengths.length; i++) {
      if (blocklengths[i] === 0) continue;
      const [lo, hi] = spread(blocklengths[i]!, old.extent);
      dmin = Math.min(dmin, displs[i]! + lo);
      dmax = Math.max(dmax, displs[i]! + hi);
      copies += blocklengths[i]!;
    }
    const shape = combine([{ type: old, dmin: copies ? dmin : 0, dmax: copies ? dmax : 0, copies }]);
    return new Datatype(name, safe(call, shape), false, [old],
      () => indexedNode(0, displs, blocklengths, old.extent, old.#description()),
      () => repeatSig(old.#signature(), copies));
  }

  static #predef(name: string, size: number, basic: BasicType, category: Category, align: number,
    members: Members = [[0, size, basic]], extent = size): Datatype {
    const last = members[members.length - 1]!;
    const shape: Shape = {
      size, lb: 0, ub: extent, trueLb: 0, trueUb: last[0] + last[1], lbSticky: false, ubSticky: false,
      align, basic, category, elements: 1,
    };
    return new Datatype(name, shape, true, [], () => listNode(0, members.map((m) => m[0]), members.map((m) => m[1])),
      () => basicSig(members.map((m) => m[2])));
  }

  // Predefined datatypes, sizes and alignments as on LP64 Linux.
  static readonly CHAR = Datatype.#predef('CHAR', 1, BasicType.I8, 'char', 1);
  static readonly SIGNED_CHAR = Datatype.#predef('SIGNED_CHAR', 1, BasicType.I8, 'cint', 1);
  static readonly UNSIGNED_CHAR = Datatype.#predef('UNSIGNED_CHAR', 1, BasicType.U8, 'cint', 1);
  static readonly SHORT = Datatype.#predef('SHORT', 2, BasicType.I16, 'cint', 2);
  static readonly UNSIGNED_SHORT = Datatype.#predef('UNSIGNED_SHORT', 2, BasicType.U16, 'cint', 2);
  static readonly INT = Datatype.#predef('INT', 4, BasicType.I32, 'cint', 4);
  static readonly UNSIGNED = Datatype.#predef('UNSIGNED', 4, BasicType.U32, 'cint', 4);
  static readonly LONG = Datatype.#predef('LONG', 8, BasicType.I64, 'cint', 8);
  static readonly UNSIGNED_LONG = Datatype.#predef('UNSIGNED_LONG', 8, BasicType.U64, 'cint', 8);
  static readonly LONG_LONG_INT = Datatype.#predef('LONG_LONG_INT', 8, BasicType.I64, 'cint', 8);
  static readonly LONG_LONG = Datatype.#predef('LONG_LONG', 8, BasicType.I64, 'cint', 8);
  static readonly UNSIGNED_LONG_LONG = Datatype.#predef('UNSIGNED_LONG_LONG', 8, BasicType.U64, 'cint', 8);
  static readonly FLOAT = Datatype.#predef('FLOAT', 4, BasicType.F32, 'float', 4);
  static readonly DOUBLE = Datatype.#predef('DOUBLE', 8, BasicType.F64, 'float', 8);
  static readonly LONG_DOUBLE = Datatype.#predef('LONG_DOUBLE', 16, BasicType.F80, 'float', 16);
  static readonly WCHAR = Datatype.#predef('WCHAR', 4, BasicType.I32, 'char', 4);
  static readonly C_BOOL = Datatype.#predef('C_BOOL', 1, BasicType.BOOL, 'logical', 1);
  static readonly INT8_T = Datatype.#predef('INT8_T', 1, BasicType.I8, 'cint', 1);
  static readonly INT16_T = Datatype.#predef('INT16_T', 2, BasicType.I16, 'cint', 2);
  static readonly INT32_T = Datatype.#predef('INT32_T', 4, BasicType.I32, 'cint', 4);
  static readonly INT64_T = Datatype.#predef('INT64_T', 8, BasicType.I64, 'cint', 8);
  static readonly UINT8_T = Datatype.#predef('UINT8_T', 1, BasicType.U8, 'cint', 1);
  static readonly UINT16_T = Datatype.#predef('UINT16_T', 2, BasicType.U16, 'cint', 2);
  static readonly UINT32_T = Datatype.#predef('UINT32_T', 4, BasicType.U32, 'cint', 4);
  static readonly UINT64_T = Datatype.#predef('UINT64_T', 8, BasicType.U64, 'cint', 8);
  static readonly AINT = Datatype.#predef('AINT', 8, BasicType.I64, 'multi', 8);
  static readonly OFFSET = Datatype.#predef('OFFSET', 8, BasicType.I64, 'multi', 8);
  static readonly COUNT = Datatype.#predef('COUNT', 8, BasicType.I64, 'multi', 8);
  static readonly BYTE = Datatype.#predef('BYTE', 1, BasicType.BYTE, 'byte', 1);
  static readonly PACKED = Datatype.#predef('PACKED', 1, BasicType.BYTE, 'packed', 1);
  static readonly C_COMPLEX = Datatype.#predef('C_COMPLEX', 8, BasicType.C32, 'complex', 4);
  static readonly C_FLOAT_COMPLEX = Datatype.#predef('C_FLOAT_COMPLEX', 8, BasicType.C32, 'complex', 4);
  static readonly C_DOUBLE_COMPLEX = Datatype.#predef('C_DOUBLE_COMPLEX', 16, BasicType.C64, 'complex', 8);
  static readonly C_LONG_DOUBLE_COMPLEX = Datatype.#predef('C_LONG_DOUBLE_COMPLEX', 32, BasicType.C80, 'complex', 16);
  static readonly INTEGER = Datatype.#predef('INTEGER', 4, BasicType.I32, 'fint', 4);
  static readonly REAL = Datatype.#predef('REAL', 4, BasicType.F32, 'float', 4);
  static readonly DOUBLE_PRECISION = Datatype.#predef('DOUBLE_PRECISION', 8, BasicType.F64, 'float', 8);
  static readonly LOGICAL = Datatype.#predef('LOGICAL', 4, BasicType.LOGICAL, 'logical', 4);
  static readonly COMPLEX = Datatype.#predef('COMPLEX', 8, BasicType.C32, 'complex', 4);
  static readonly DOUBLE_COMPLEX = Datatype.#predef('DOUBLE_COMPLEX', 16, BasicType.C64, 'complex', 8);
  /**
   * IEEE 754 binary16, 2 bytes (C's `_Float16`; not in MPI 4.1, MPICH's
   * MPIX_C_FLOAT16). Buffers are Uint16Array (the bits) or, where the
   * runtime has one, Float16Array. MAX, MIN, SUM and PROD compute in
   * binary32 and round to nearest, ties to even: the same bits on every rank.
   */
  static readonly FLOAT16 = Datatype.#predef('FLOAT16', 2, BasicType.F16, 'float', 2);
  /**
   * bfloat16, 2 bytes: the top half of an IEEE binary32 (not in MPI 4.1).
   * Buffers are Uint16Array (the bits). Ops as for FLOAT16; subnormals
   * are kept, never flushed to zero.
   */
  static readonly BFLOAT16 = Datatype.#predef('BFLOAT16', 2, BasicType.BF16, 'float', 2);
  // Pair types for MAXLOC/MINLOC, laid out as the C struct: size counts the
  // two members, extent includes the padding; they hash as their members.
  static readonly FLOAT_INT = Datatype.#predef('FLOAT_INT', 8, BasicType.FLOAT_INT, 'pair', 4,
    [[0, 4, BasicType.F32], [4, 4, BasicType.I32]], 8);
  static readonly DOUBLE_INT = Datatype.#predef('DOUBLE_INT', 12, BasicType.DOUBLE_INT, 'pair', 8,
    [[0, 8, BasicType.F64], [8, 4, BasicType.I32]], 16);
  static readonly LONG_INT = Datatype.#predef('LONG_INT', 12, BasicType.LONG_INT, 'pair', 8,
    [[0, 8, BasicType.I64], [8, 4, BasicType.I32]], 16);
  static readonly TWO_INT = Datatype.#predef('TWO_INT', 8, BasicType.TWO_INT, 'pair', 4,
    [[0, 4, BasicType.I32], [4, 4, BasicType.I32]], 8);
  static readonly SHORT_INT = Datatype.#predef('SHORT_INT', 6, BasicType.SHORT_INT, 'pair', 4,
    [[0, 2, BasicType.I16], [4, 4, BasicType.I32]], 8);
  static readonly LONG_DOUBLE_INT = Datatype.#predef('LONG_DOUBLE_INT', 20, BasicType.LONG_DOUBLE_INT, 'pair', 16,
    [[0, 16, BasicType.F80], [16, 4, BasicType.I32]], 32);
  static readonly TWO_REAL = Datatype.#predef('TWO_REAL', 8, BasicType.TWO_FLOAT, 'pair', 4,
    [[0, 4, BasicType.F32], [4, 4, BasicType.F32]], 8);
  static readonly TWO_DOUBLE_PRECISION = Datatype.#predef('TWO_DOUBLE_PRECISION', 16, BasicType.TWO_DOUBLE, 'pair', 8,
    [[0, 8, BasicType.F64], [8, 8, BasicType.F64]], 16);
  static readonly TWO_INTEGER = Datatype.#predef('TWO_INTEGER', 8, BasicType.TWO_INT, 'pair', 4,
    [[0, 4, BasicType.I32], [4, 4, BasicType.I32]], 8);
}


/** Checks that `dt` is a usable datatype for communication in `call`. */
export function checkDatatype(dt: unknown, call: string, what: string, whatMore = ''): Datatype {
  // `what` + `whatMore` names it: joined only for an error, as this runs at every call.
  if (!(dt instanceof Datatype)) fail('ERR_TYPE', call, `${what}${whatMore} must be a Datatype, got ${describe(dt)}`);
  if (dt.freed) fail('ERR_TYPE', call, `${what}${whatMore} ${dt.name} has been freed`);
  if (!dt.committed) fail('ERR_TYPE', call, `${what}${whatMore} ${dt.name} is not committed (call commit() first)`);
  return dt;
}
