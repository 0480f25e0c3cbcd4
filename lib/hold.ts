/**
 * Holding the caller's buffers while an operation that uses them lets
 * JavaScript run: nonblocking and persistent requests, and blocking
 * collectives with a user-defined op (its function runs mid-collective).
 *
 * The native core keeps raw pointers into the buffers, and N-API has no way
 * to keep an ArrayBuffer's memory alive once JavaScript detaches it (a
 * transfer moves the memory to another ArrayBuffer, which frees it when it
 * is collected) or shrinks it (a resizable ArrayBuffer decommits the pages).
 * So, at initiation (persistent: at Init):
 *
 * - A resizable, non-shared ArrayBuffer is refused with ERR_BUFFER.
 *   Growable SharedArrayBuffers are taken: they never shrink, move or detach.
 * - 'mark': every non-shared ArrayBuffer is marked with
 *   worker_threads.markAsUntransferable(), for good. In a transfer list
 *   (structuredClone, MessagePort and Worker postMessage) Node 20 then
 *   copies it instead of moving it, and Node versions whose
 *   ArrayBuffer.prototype.transfer() honours the mark throw.
 * - 'copy': the operation works on private copies of the buffers, filled at
 *   initiation (and at every start() of a persistent request) and copied
 *   back into the caller's buffers at completion: whatever happens to the
 *   caller's buffers meanwhile, the core never touches their memory. Used
 *   where transfer() ignores the mark (a runtime probe, once), or with
 *   NODEMPI_HOLD=copy; NODEMPI_HOLD=mark forces marking.
 *
 * Some detach paths ignore the mark (on Node 20, a web stream's BYOB read
 * and a byte stream's enqueue): there, in 'mark' mode, the core may write to
 * memory the buffer no longer owns before anything notices, which only
 * 'copy' prevents. In both modes a buffer found detached makes start()
 * throw, or completion fail, with ERR_BUFFER, naming it.
 */
import { markAsUntransferable } from 'node:worker_threads';

import { fail, MPIError } from './errors.js';
import { Op } from './op.js';
import { setting } from './settings.js';

/** How buffers are held: marked untransferable, or worked on as private copies. */
export type HoldMode = 'mark' | 'copy';

/** What hold() made of a call's arguments. */
export interface Held<A extends unknown[] = unknown[]> {
  /** The arguments to run the collective with (private copies in 'copy' mode). */
  readonly args: A;
  /** Before each start() of a persistent request: checks (and copies in). */
  before(): void;
  /** At completion, after any unpacking: checks (and copies back). */
  after(): void;
}

type Getter<T> = (self: unknown) => T;
function getter<T>(proto: object, key: PropertyKey): Getter<T> {
  const get = Object.getOwnPropertyDescriptor(proto, key)?.get;
  return get ? (Function.prototype.call.bind(get) as Getter<T>) : () => undefined as T;
}

// The intrinsic getters: no own or subclass property shadows them.
const TypedArrayProto = Object.getPrototypeOf(Uint8Array.prototype) as object;
const typedTag = getter<string | undefined>(TypedArrayProto, Symbol.toStringTag);
const typedBuffer = getter<ArrayBufferLike>(TypedArrayProto, 'buffer');
const typedBytes = getter<number>(TypedArrayProto, 'byteLength');
const typedOffset = getter<number>(TypedArrayProto, 'byteOffset');
const viewBuffer = getter<ArrayBufferLike>(DataView.prototype, 'buffer');
const dataViewBytes = getter<number>(DataView.prototype, 'byteLength');
const viewOffset = getter<number>(DataView.prototype, 'byteOffset');
const arrayBytes = getter<number>(ArrayBuffer.prototype, 'byteLength');
const resizable = getter<boolean | undefined>(ArrayBuffer.prototype, 'resizable');
const Shared = typeof SharedArrayBuffer === 'function' ? SharedArrayBuffer : null;

function isShared(b: unknown): boolean {
  return Shared !== null && b instanceof Shared;
}

// A view's memory: its buffer, offset and byte length, read with the
// intrinsic getters (a detached view reads 0 bytes).
function bufferOf(v: ArrayBufferView): ArrayBufferLike {
  return typedTag(v) !== undefined ? typedBuffer(v) : viewBuffer(v);
}
/** @internal A view's byte length now, from the intrinsic getters: 0 once detached, or out of bounds after a shrink. */
export function viewBytes(v: ArrayBufferView): number {
  return typedTag(v) !== undefined ? typedBytes(v) : ofLiveDataView(dataViewBytes, v);
}
function offsetOf(v: ArrayBufferView): number {
  return typedTag(v) !== undefined ? typedOffset(v) : ofLiveDataView(viewOffset, v);
}
/**
 * @internal Whether `b` is detached: no view of it can be made then, not
 * even an empty one (Node 20 has no ArrayBuffer.prototype.detached).
 */
export function isDetached(b: ArrayBufferLike): boolean {
  try {
    void new Uint8Array(b, 0, 0);
    return false;
  } catch {
    return true;
  }
}

// A DataView's getters throw once its ArrayBuffer is detached, where a
// TypedArray's read 0: 0 here too.
function ofLiveDataView(get: (v: ArrayBufferView) => number, v: ArrayBufferView): number {
  try {
    return get(v);
  } catch {
    return 0;
  }
}

let chosen: HoldMode | null = null;

/**
 * Whether marking stops ArrayBuffer.prototype.transfer() here: true where
 * there is no transfer() (Node 20) or where it throws for (or copies) a
 * marked buffer.
 */
export function transferHonoursMark(): boolean {
  const transfer = (ArrayBuffer.prototype as { transfer?: () => ArrayBuffer }).transfer;
  if (typeof transfer !== 'function') return true;
  const probe = new ArrayBuffer(8);
  markAsUntransferable(probe);
  try {
    transfer.call(probe);
  } catch {
    return true;
  }
  return arrayBytes(probe) === 8;
}

/** The mode in force: NODEMPI_HOLD, else 'mark' where transfer() honours the mark. */
export function holdMode(): HoldMode {
  if (chosen === null) {
    const forced = setting(process.env, 'NODEMPI_HOLD');
    const honoured = transferHonoursMark();
    chosen = forced ?? (honoured ? 'mark' : 'copy');
    if (forced === 'mark' && !honoured) {
      process.emitWarning(`NODEMPI_HOLD=mark, but ArrayBuffer.prototype.transfer() moves a marked buffer on Node ${process.version}: ` +
        'a pending request\'s buffer transferred that way is freed under the request. Unset NODEMPI_HOLD to work on copies.',
      { code: 'NODEMPI_HOLD_UNSAFE' });
    }
  }
  return chosen;
}

/** Whether a collective's arguments include a user-defined op (its function runs mid-call). */
export function hasUserOp(args: unknown[]): boolean {
  for (let i = 2; i < args.length; i++) {
    const a = args[i];
    if (a instanceof Op && a.id < 0) return true;
  }
  return false;
}

// The buffer of a message spec: the spec itself, or its first element.
function specBuffer(spec: unknown): unknown {
  const b = Array.isArray(spec) ? spec[0] : spec;
  return ArrayBuffer.isView(b) || b instanceof ArrayBuffer || isShared(b) ? b : null;
}

// One buffer the operation holds.
class Entry {
  constructor(
    readonly arg: number,
    /** The caller's view, or null for a bare ArrayBuffer. */
    readonly view: ArrayBufferView | null,
    readonly buffer: ArrayBuffer,
    /** Bytes at initiation: a detached buffer reads fewer (0). */
    readonly bytes: number,
    /** The operation writes it (a receive buffer, bcast's buffer). */
    readonly written: boolean,
    readonly what: string,
  ) {}

  lengthNow(): number {
    return this.view ? viewBytes(this.view) : arrayBytes(this.buffer);
  }

  detached(call: string, when: string, then: string): MPIError {
    return new MPIError('ERR_BUFFER', `${call}: the ${this.what} was detached ${when} (transferred, or handed to a stream): ` +
      `it held ${this.bytes} bytes and now holds ${this.lengthNow()}; ${then}`);
  }
}

const NOT_AGAIN = 'the request cannot run again: free() it and make a new one';

// The ArrayBuffers most recently checked and marked, none over 1 MiB (so
// that keeping them here keeps little memory alive): a program holds the
// same few buffers request after request, and comparing them costs less
// than checking and marking them again (bench/HOLD.md).
const RECENT = 8;
const MAX_RECENT_BYTES = 1 << 20;
const recent: (ArrayBufferLike | null)[] = new Array<ArrayBufferLike | null>(RECENT).fill(null);
let nextRecent = 0;

function markedBefore(b: ArrayBufferLike): boolean {
  for (let i = 0; i < RECENT; i++) if (recent[i] === b) return true;
  return false;
}

/**
 * Checks the buffers of a collective (the method's arguments `args`: the
 * send side first, then the receive side; with `inout`, one buffer read and
 * written, bcast's) and holds them as the mode says. `call` names the public
 * method in messages ('iallreduce', 'allreduceInit', 'allreduce'). Throws
 * ERR_BUFFER for a resizable ArrayBuffer. Null when no buffer needs holding.
 */
export function hold<A extends unknown[]>(call: string, inout: boolean, args: A): Held<A> | null {
  const marking = holdMode() === 'mark';
  let e0: Entry | null = null, e1: Entry | null = null;
  for (let i = 0; i < 2 && i < args.length; i++) {
    const b = specBuffer(args[i]);
    if (b === null) continue;
    const view = ArrayBuffer.isView(b) ? b : null;
    const buffer = view ? bufferOf(view) : b as ArrayBufferLike;
    const what = inout ? 'buffer' : i === 0 ? 'send buffer' : 'receive buffer';
    const bytes = view ? viewBytes(view) : arrayBytes(buffer);
    // Nothing to hold: the call refuses it where it reads it (lib/message.ts),
    // and ignores it where it does not (a non-root's receive buffer).
    if (bytes === 0 && isDetached(buffer)) continue;
    if (!marking || !markedBefore(buffer)) {
      if (isShared(buffer)) continue;
      if (resizable(buffer)) {
        fail('ERR_BUFFER', call, `the ${what} is a view of a resizable ArrayBuffer, which could shrink while the operation ` +
          'holds its memory (it lets JavaScript run before it completes); use a fixed-length ArrayBuffer or a SharedArrayBuffer');
      }
      if (marking) {
        markAsUntransferable(buffer);
        if (arrayBytes(buffer) <= MAX_RECENT_BYTES) {
          recent[nextRecent] = buffer;
          nextRecent = (nextRecent + 1) % RECENT;
        }
      }
    }
    const e = new Entry(i, view, buffer as ArrayBuffer, bytes, i === 1 || inout, what);
    if (i === 0) e0 = e;
    else e1 = e;
  }
  if (e0 === null && e1 === null) return null;
  if (marking) return new Marked(call, args, e0, e1);
  return holdCopies(call, args, [e0, e1].filter((e): e is Entry => e !== null));
}

// 'mark': the buffers are the caller's; they are only checked.
class Marked<A extends unknown[]> implements Held<A> {
  constructor(readonly call: string, readonly args: A, readonly e0: Entry | null, readonly e1: Entry | null) {}

  before(): void {
    for (const e of [this.e0, this.e1]) {
      if (e && e.lengthNow() !== e.bytes) throw e.detached(`PersistentRequest.start: ${this.call}`, 'after the request was made', NOT_AGAIN);
    }
  }

  after(): void {
    // A buffer taken away by a path that ignores the mark: what the
    // operation wrote went to memory the buffer no longer owns.
    const e0 = this.e0, e1 = this.e1;
    if (e0 && e0.written && e0.lengthNow() !== e0.bytes) throw e0.detached(this.call, 'while the operation was pending', 'its result is lost');
    if (e1 && e1.written && e1.lengthNow() !== e1.bytes) throw e1.detached(this.call, 'while the operation was pending', 'its result is lost');
  }
}

// The TypedArray class a copy of `v` is made as: its built-in base class
// (a Buffer copies as a Uint8Array), so that the inferred datatype is the same.
// Float16Array too where the runtime has one (it infers FLOAT16).
type ViewKind = { new(b: ArrayBuffer, o: number, n: number): ArrayBufferView; readonly BYTES_PER_ELEMENT: number };
const float16Kind = (globalThis as { Float16Array?: ViewKind }).Float16Array;
const kinds: readonly ViewKind[] = [
  Float64Array, Float32Array, Int32Array, Uint32Array, Int16Array, Uint16Array, Int8Array, Uint8Array, Uint8ClampedArray,
  BigInt64Array, BigUint64Array, ...(typeof float16Kind === 'function' ? [float16Kind] : []),
];

function copyOf(v: ArrayBufferView | null, buffer: ArrayBuffer, bytes: number): { copy: ArrayBufferView | ArrayBuffer; mem: Uint8Array } {
  const mem = new Uint8Array(bytes);
  if (v === null) return { copy: mem.buffer, mem };
  if (typedTag(v) === undefined) return { copy: new DataView(mem.buffer), mem };
  for (const K of kinds) {
    if (v instanceof K) return { copy: new K(mem.buffer, 0, bytes / K.BYTES_PER_ELEMENT), mem };
  }
  return { copy: mem, mem };
}

// The caller's bytes the entry stands for (none when it was empty, or
// detached, at initiation).
function userBytes(e: Entry): Uint8Array {
  return e.bytes === 0 ? new Uint8Array(0) : new Uint8Array(e.buffer, e.view ? offsetOf(e.view) : 0, e.bytes);
}

// 'copy': the operation works on private copies.
function holdCopies<A extends unknown[]>(call: string, args: A, entries: Entry[]): Held<A> {
  // The same arguments with copies for buffers, so of the same type.
  const out = args.slice() as A;
  const copies: Uint8Array[] = [];
  for (let k = 0; k < entries.length; k++) {
    const e = entries[k]!;
    // The same buffer object twice (bcast's, or a send that is the
    // receive) shares one copy, as it shares its memory.
    const twin = entries.findIndex((f) => f.view === e.view && f.buffer === e.buffer);
    let copy: ArrayBufferView | ArrayBuffer;
    if (twin < k) {
      copy = specBuffer(out[entries[twin]!.arg]) as ArrayBufferView | ArrayBuffer;
      copies.push(copies[twin]!);
    } else {
      const c = copyOf(e.view, e.buffer, e.bytes);
      c.mem.set(userBytes(e));
      copy = c.copy;
      copies.push(c.mem);
    }
    const spec = args[e.arg];
    out[e.arg] = Array.isArray(spec) ? [copy, ...spec.slice(1)] : copy;
  }
  const list = entries;
  return {
    args: out,
    before: () => {
      for (const e of list) {
        if (e.lengthNow() !== e.bytes) throw e.detached(`PersistentRequest.start: ${call}`, 'after the request was made', NOT_AGAIN);
      }
      list.forEach((e, k) => copies[k]!.set(userBytes(e)));
    },
    after: () => {
      let first: MPIError | null = null;
      list.forEach((e, k) => {
        if (!e.written) return;
        if (e.lengthNow() !== e.bytes) first ??= e.detached(call, 'while the operation was pending', 'its result is lost');
        else userBytes(e).set(copies[k]!);
      });
      if (first) throw first;
    },
  };
}
