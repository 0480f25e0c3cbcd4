/**
 * Local reductions with the collectives' kernels: MPI_Reduce_local and the
 * proposed three-buffer MPI_Reduce_locals.
 */
import { IN_PLACE } from './constants.js';
import { fail } from './errors.js';
import { bytesOf, stageReduce, takeStaging } from './coll/staging.js';
import { bareType, resolve, stillHeld, trueBytes, type Msg, type Resolved } from './message.js';
import { native } from './native.js';
import { viewBytes } from './hold.js';
import { checkOp, Op, opAllows, userOpSpec, userView } from './op.js';

/** MPI_Reduce_local: `inoutbuf = inbuf op inoutbuf`, elementwise. */
export function reduceLocal(inbuf: Msg, inoutbuf: Msg, op: Op): void {
  if (fast(inbuf, inoutbuf, inoutbuf, op, 0)) return;
  const io = resolve('reduceLocal', 'inoutbuf', inoutbuf);
  const a = resolve('reduceLocal', 'inbuf', inbuf);
  matches('reduceLocal', 'inbuf', a, io);
  checkOp(op, io.type, 'reduceLocal');
  combine(a, io, io, op, 'reduceLocal');
}

// The one fast path: whole TypedArrays of one class and length under a
// predefined op, the common call, checked inline. At 4 KiB the fixed cost
// of a call is several times the kernel's (bench/KERNELS.md). False sends
// the call down the general path, which reports every error but an
// overlap: the addon checks that (asking a view for its buffer and offset
// here costs more than the kernel at 4 KiB).
function fast(a: unknown, b: unknown, out: unknown, op: unknown, flags: number): boolean {
  if (!(op instanceof Op) || op.id < 0 || op.freed || !ArrayBuffer.isView(out)) return false;
  const io = out as Uint8Array;
  if (!alike(a, io) || !alike(b, io)) return false;
  const code = codesOf(io)[op.id];
  if (code === undefined || code < 0) return false;
  kernel(a, b, io, io.length, code | flags);
  return true;
}

// out = a op b over `count` items, a predefined op's kernel `code`, on the
// caller's memory (checked by the caller).
function kernel(a: Uint8Array, b: Uint8Array, out: Uint8Array, count: number, code: number): void {
  if (a === lastA && b === lastB && out === lastOut && fresh()) {
    slots[0] = count;
    slots[1] = code;
    native.reduceLast();
    return;
  }
  if (b === out) native.reduceLocal(a, out, count, code);
  else native.reduceLocal(a, b, out, count, code);
  lastGen = slots[2]!;
  if (lastGen < 0) {
    lastA = lastB = lastOut = null;
    return;
  }
  lastA = a, lastB = b, lastOut = out;
  bytesA = slots[3]!, bytesB = slots[4]!, bytesOut = slots[5]!;
}

// The last call's arrays. The addon keeps their addresses, and the same
// arrays again skip unwrapping them, which is most of a small call
// (bench/local_calls.mjs; figures in bench/README.md, "The last call's
// arrays"). The record is trusted only for the very same objects, while
// the generation is the one this module saw recorded (any other
// reduceLocal call, from any copy of this module, makes a new one), and
// while their true byte lengths (stillHeld: the intrinsic getter, which no
// own property shadows) are the recorded ones: a detached or shrunk buffer
// reads shorter, and a buffer never moves once unwrapped (resizable ones
// grow in place). The addon checks the count against the recorded lengths
// again, and records only views of buffers up to 1 MiB, so holding them
// here never keeps much memory alive.
const slots = new Float64Array(native.localSlots());  // count, code | generation, bytes of a, b, out
let lastA: unknown = null, lastB: unknown = null, lastOut: Uint8Array | null = null;
let lastGen = -1, bytesA = 0, bytesB = 0, bytesOut = 0;

function fresh(): boolean {
  const out = lastOut!, a = lastA as Uint8Array, b = lastB as Uint8Array;
  if (slots[2] !== lastGen) return false;
  if (b === out) return stillHeld(out, bytesOut, a, bytesA);
  // reduceLocals's third operand: its `length` too before any byte length.
  void b.length;
  return stillHeld(out, bytesOut, a, bytesA) && trueBytes(b) === bytesB;
}

// Set in a kernel code by reduceLocals, for the addon's error messages.
const LOCALS = 1 << 16;

// An operand the fast path takes: a TypedArray of io's class and length.
function alike(m: unknown, io: Uint8Array): m is Uint8Array {
  return m === io || ArrayBuffer.isView(m) && m.constructor === io.constructor && (m as Uint8Array).length === io.length;
}

// The kernels allow an operand to be exactly the output, not to overlap it
// at another offset (a later item would read an already-combined one).
function overlapsAt(m: ArrayBufferView, mBytes: number, io: ArrayBufferView, ioBytes: number): boolean {
  if (m.buffer !== io.buffer) return false;
  const a0 = m.byteOffset, b0 = io.byteOffset;
  return a0 !== b0 && a0 < b0 + ioBytes && b0 < a0 + mBytes;
}

function typed(v: ArrayBufferView): v is Uint8Array {
  return !(v instanceof DataView);
}

// Per TypedArray class (the datatype the array implies): the kernel code
// (basic type | op id << 8) of each predefined op on that type, -1 where
// the op is not defined on it. Empty for classes that imply no predefined
// type.
const kernelCodes = new Map<unknown, Int32Array>();

function codesOf(view: ArrayBufferView): Int32Array {
  let codes = kernelCodes.get(view.constructor);
  if (codes === undefined) {
    const t = view instanceof DataView ? undefined : bareType(view);
    codes = new Int32Array(t ? Op.predefined.length : 0).fill(-1);
    if (t) for (const op of Op.predefined) codes[op.id] = opAllows(op, t) ? t.basic | op.id << 8 : -1;
    kernelCodes.set(view.constructor, codes);
  }
  return codes;
}

/**
 * MPI_Reduce_locals (proposed): `inoutbuf = inbuf op argbuf`, elementwise.
 * IN_PLACE for `inbuf` or `argbuf` (or both) reads that operand from
 * `inoutbuf`; `inbuf` and `argbuf` may be the same buffer.
 */
export function reduceLocals(inbuf: Msg | typeof IN_PLACE, argbuf: Msg | typeof IN_PLACE, inoutbuf: Msg, op: Op): void {
  if (fast(inbuf === IN_PLACE ? inoutbuf : inbuf, argbuf === IN_PLACE ? inoutbuf : argbuf, inoutbuf, op, LOCALS)) return;
  const io = resolve('reduceLocals', 'inoutbuf', inoutbuf);
  const a = inbuf === IN_PLACE ? io : resolve('reduceLocals', 'inbuf', inbuf);
  const b = argbuf === IN_PLACE ? io : resolve('reduceLocals', 'argbuf', argbuf);
  matches('reduceLocals', 'inbuf', a, io);
  matches('reduceLocals', 'argbuf', b, io);
  checkOp(op, io.type, 'reduceLocals');
  combine(a, b, io, op, 'reduceLocals');
}

// out = a op b in the kernels. Predefined types (and user ops on dense
// types) reduce the caller's memory directly, no copy; other derived types
// go through the collectives' staging: a predefined op on each basic
// element in kernel layout, a user op on whole items, and only the type
// map's bytes of the output written back.
function combine(a: Resolved, b: Resolved, io: Resolved, op: Op, call: 'reduceLocal' | 'reduceLocals'): void {
  const t = io.type, user = op.id < 0;
  if (t.predefined && !user && typed(a.view) && typed(b.view) && typed(io.view)) {
    kernel(a.view, b.view, io.view, io.count, t.basic | op.id << 8 | (call === 'reduceLocals' ? LOCALS : 0));
    return;
  }
  apart(call, 'inbuf', a, io);
  apart(call, 'argbuf', b, io);
  if (user && (t.predefined || t.contiguous) && callUser(a, b, io, op)) return;
  if (user && (t.predefined || t.contiguous)) return userInAddon(a, b, io, op, call);
  if (t.predefined) {
    native.reduceLocals(a.view, b.view, io.view, io.count, t.basic | op.id << 8, undefined);
    return;
  }
  takeStaging();
  try {
    const ko = stageReduce(io, a === io || b === io ? 'both' : 'recv', user);
    const ka = a === io ? ko : stageReduce(a, 'send', user);
    const kb = b === io ? ko : b === a ? ka : stageReduce(b, 'send', user);
    native.reduceLocals(ka.view, kb.view, ko.view, ko.count, user ? -1 : ko.basic | op.id << 8, userOpSpec(op, t));
  } catch (err) {
    takeStaging();
    throw err;
  }
  for (const f of takeStaging()?.after ?? []) f();
}

// A user op on dense items: the function gets views of the caller's own
// memory, called right here (no trip through the addon, no copy but b's
// items into the output). False when a view cannot be made (memory not
// aligned for the TypedArray); the addon path copies then.
function callUser(a: Resolved, b: Resolved, io: Resolved, op: Op): boolean {
  const t = io.type, bytes = io.bytes;
  const out = userView(t, io.view, bytes);
  let inv = userView(t, a.view, bytes);
  if (!out || !inv) return false;
  if (io.count === 0) return true;
  // The function combines into the output after b is copied there: an input
  // that is the output itself (IN_PLACE, or the same memory given again)
  // must be saved first.
  const aOut = isOutput(a, io), bOut = isOutput(b, io);
  if (aOut && !bOut) inv = userView(t, bytesOf(a.view, 0, bytes).slice(), bytes)!;
  if (!bOut) bytesOf(io.view, 0, bytes).set(bytesOf(b.view, 0, bytes));
  op.fn!(inv, out, io.count, t);
  return true;
}

// A user op on dense items the function cannot view in place (memory not
// aligned for its TypedArray): the addon copies both inputs to scratch
// arrays, calls the function on them, and copies the result out. The
// function may detach or shrink the output's buffer meanwhile (it is
// JavaScript), so the result goes to a private array first and then into
// the output, if that still holds it.
function userInAddon(a: Resolved, b: Resolved, io: Resolved, op: Op, call: string): void {
  const t = io.type, out = new Uint8Array(io.bytes);
  native.reduceLocals(a.view, b.view, out, io.count, -1, userOpSpec(op, t));
  const now = viewBytes(io.view);
  if (now < io.bytes) {
    fail('ERR_BUFFER', call, `the user function detached or shrank the buffer of inoutbuf (${io.bytes} bytes before, ${now} after); the result is lost`);
  }
  if (io.bytes) bytesOf(io.view, 0, io.bytes).set(out);
}

// Operand `m` is the output: the same spec, or a view of the same memory
// (apart() has refused overlaps at other offsets).
function isOutput(m: Resolved, io: Resolved): boolean {
  return m === io || (m.view.buffer === io.view.buffer && m.view.byteOffset === io.view.byteOffset);
}

function matches(call: string, what: string, m: Resolved, io: Resolved): void {
  if (m === io) return;
  if (m.type.basic !== io.type.basic || m.type.category !== io.type.category) {
    fail('ERR_TYPE', call, `${what} datatype ${m.type.name} differs from inoutbuf datatype ${io.type.name}`);
  }
  if (m.count !== io.count) fail('ERR_COUNT', call, `${what} count ${m.count} differs from inoutbuf count ${io.count}`);
}

// The overlap check of the paths that do not reach the addon's fast entry
// (which makes its own, for nothing).
function apart(call: string, what: string, m: Resolved, io: Resolved): void {
  if (m !== io && overlapsAt(m.view, m.bytes, io.view, io.bytes)) {
    fail('ERR_BUFFER', call, `${what} overlaps inoutbuf at a different offset (${m.view.byteOffset} vs ${io.view.byteOffset}); pass IN_PLACE or separate buffers`);
  }
}
