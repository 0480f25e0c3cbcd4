/**
 * Local reductions with the collectives' kernels: MPI_Reduce_local and the
 * proposed three-buffer MPI_Reduce_locals.
 */
import { IN_PLACE } from './constants.js';
import { Datatype } from './datatype.js';
import { fail } from './errors.js';
import { bareType, bytesOf, resolve, stageReduce, takeStaging, trueBytes, type Msg, type Resolved } from './message.js';
import { native } from './native.js';
import { viewBytes } from './hold.js';
import { checkOp, Op, opAllows, userOpSpec, userView } from './op.js';

/** MPI_Reduce_local: `inoutbuf = inbuf op inoutbuf`, elementwise. */
export function reduceLocal(inbuf: Msg, inoutbuf: Msg, op: Op): void {
  if (quick(inbuf, inoutbuf, op)) return;
  const io = resolve('reduceLocal', 'inoutbuf', inoutbuf);
  const a = resolve('reduceLocal', 'inbuf', inbuf);
  matches('reduceLocal', 'inbuf', a, io);
  checkOp(op, io.type, 'reduceLocal');
  combine(a, io, io, op, 'reduceLocal');
}

// The common calls, whole TypedArrays of one kind and a predefined op, with
// the checks of the general path done inline: at 4 KiB the fixed cost of a
// call is several times the kernel's. False sends the call down the general
// path (which also reports every error but an overlap, which the addon
// reports: asking a view for its buffer and offset costs more than the
// kernel at 4 KiB).
function quick(inbuf: unknown, inoutbuf: unknown, op: unknown): boolean {
  if (!(op instanceof Op) || op.freed) return false;
  if (inoutbuf === lastOut && inbuf === lastA && lastB === lastOut && again(op.id)) return true;
  if (!ArrayBuffer.isView(inoutbuf)) return op.id >= 0 && Array.isArray(inoutbuf) && quickSpec(inbuf, inoutbuf, op.id);
  const io = inoutbuf as Uint8Array;
  if (!alike(inbuf, io)) return false;
  const codes = codesOf(io);
  if (op.id < 0) return codes.length > 0 && !overlapsAt(inbuf, inbuf.byteLength, io, io.byteLength) && quickUser(inbuf, io, op);
  const code = codes[op.id];
  if (code === undefined || code < 0) return false;
  kernel(inbuf, io, io, io.length, code, codes);
  return true;
}

// [view, count, datatype] on both sides with one predefined datatype, the
// form of the types no TypedArray implies (complex, long double, the
// MINLOC/MAXLOC pairs), under a predefined op: the general path's checks
// inline, else false and that path reports what is wrong.
function quickSpec(inbuf: unknown, io: unknown[], id: number): boolean {
  if (io.length !== 3 || !Array.isArray(inbuf) || inbuf.length !== 3) return false;
  const v = io[0], count = io[1], t = io[2], a = inbuf[0];
  if (inbuf[2] !== t || inbuf[1] !== count || typeof count !== 'number' || !Number.isSafeInteger(count) || count < 0) {
    return false;
  }
  if (t !== specType && !learn(t)) return false;
  const code = specCodes[id];
  if (code === undefined || code < 0) return false;
  const bytes = count * specExtent;
  if (v === lastOut && a === lastA && lastB === lastOut) {
    // The recorded views: their recorded byte lengths, once fresh() has
    // confirmed them, are the true ones.
    if (!fresh() || bytes > bytesOut || bytes > bytesA) return false;
    last(count, code);
    return true;
  }
  if (!typedView(v) || !typedView(a) || v.byteLength < bytes || a.byteLength < bytes) return false;
  kernel(a, v, v, count, code, NO_CODES);
  return true;
}

// The predefined datatype of the last quickSpec() call, its codes and
// extent (a predefined type never changes).
let specType: unknown = null, specCodes: Int32Array = new Int32Array(0), specExtent = 0;

function learn(t: unknown): boolean {
  if (!(t instanceof Datatype) || !t.predefined) return false;
  specType = t;
  specCodes = kernelCodes.get(t) ?? codesFor(t, t);
  specExtent = t.extent;
  return true;
}

function typedView(v: unknown): v is Uint8Array {
  return ArrayBuffer.isView(v) && typed(v);
}

// A user op on two whole TypedArrays of a predefined type: the function
// gets the caller's own arrays (a copy of the input when it is the output).
function quickUser(a: Uint8Array, io: Uint8Array, op: Op): boolean {
  if (io.length === 0) return true;
  const inv = a.buffer === io.buffer && a.byteOffset === io.byteOffset ? a.slice() : a;
  op.fn!(inv, io, io.length, bareType(io)!);
  return true;
}

// The same for the three-buffer form; IN_PLACE stands for inoutbuf.
function quick3(inbuf: unknown, argbuf: unknown, inoutbuf: unknown, op: unknown): boolean {
  if (argbuf === IN_PLACE) return quick(inbuf === IN_PLACE ? inoutbuf : inbuf, inoutbuf, op);
  if (!(op instanceof Op) || op.freed) return false;
  const a = inbuf === IN_PLACE ? inoutbuf : inbuf;
  if (inoutbuf === lastOut && a === lastA && argbuf === lastB && again(op.id, LOCALS)) return true;
  if (!ArrayBuffer.isView(inoutbuf)) return false;
  const io = inoutbuf as Uint8Array;
  if (!alike(a, io) || !alike(argbuf, io)) return false;
  const codes = codesOf(io), code = codes[op.id];
  if (code === undefined || code < 0) return false;
  kernel(a, argbuf, io, io.length, code | LOCALS, codes);
  return true;
}

// Set in a kernel code by reduceLocals, for the addon's error messages.
const LOCALS = 1 << 16;

// An operand the fast paths take: a TypedArray of io's class and length.
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

// The addon keeps the addresses of the last fast call's arrays, and the
// same arrays again skip unwrapping them (two thirds of a 4 KiB call). The
// record is trusted only for the very same objects, while the generation is
// the one this module saw recorded, and while their true byte lengths (the
// intrinsic getter, which no own property shadows) are the recorded ones: a
// detached or shrunk buffer reads shorter, and a buffer never moves once
// unwrapped (resizable ones grow in place). The addon records only views of
// buffers up to 1 MiB, so holding them here never keeps much memory alive.
const slots = new Float64Array(native.localSlots());  // count, code | generation, bytes of a, b, out
// Until a call is recorded the arrays are null, and no codes make sure that
// null arguments (an error for the general path to report) never match.
const NO_CODES: Int32Array = new Int32Array(0);
let lastA: unknown = null, lastB: unknown = null, lastOut: Uint8Array | null = null;
let lastCodes: Int32Array = NO_CODES, lastGen = -1, bytesA = 0, bytesB = 0, bytesOut = 0;

// The recorded arrays again under op `id` (the caller compared them).
function again(id: number, flags = 0): boolean {
  const code = lastCodes[id];
  if (code === undefined || code < 0 || !fresh()) return false;
  last(lastOut!.length, code | flags);
  return true;
}

// The recorded arrays (the caller compared the objects) are as recorded.
function fresh(): boolean {
  return slots[2] === lastGen && trueBytes(lastOut!) === bytesOut && trueBytes(lastA as Uint8Array) === bytesA &&
    (lastB === lastOut || trueBytes(lastB as Uint8Array) === bytesB);
}

function last(count: number, code: number): void {
  slots[0] = count;
  slots[1] = code;
  native.reduceLast();
}

// out = a op b over `count` items of TypedArrays, a predefined op's kernel
// `code`. `codes`, those of out's class, let quick()'s next call on the same
// arrays skip its checks; only quick() itself, whose checks they stand for,
// passes them (others pass NO_CODES).

function kernel(a: Uint8Array, b: Uint8Array, out: Uint8Array, count: number, code: number, codes: Int32Array): void {
  if (a === lastA && b === lastB && out === lastOut && fresh()) return last(count, code);
  if (b === out) native.reduceLocal(a, out, count, code);
  else native.reduceLocal(a, b, out, count, code);
  lastGen = slots[2]!;
  if (lastGen < 0) {
    lastA = lastB = lastOut = null;
    lastCodes = NO_CODES;
    return;
  }
  lastA = a, lastB = b, lastOut = out, lastCodes = codes;
  bytesA = slots[3]!, bytesB = slots[4]!, bytesOut = slots[5]!;
}

function typed(v: ArrayBufferView): v is Uint8Array {
  return !(v instanceof DataView);
}

// Per TypedArray class (the datatype the array implies) and per predefined
// Datatype: the kernel code (basic type | op id << 8) of each predefined op
// on that type, -1 where the op is not defined on it. Empty for classes that
// imply no predefined type.
const kernelCodes = new Map<unknown, Int32Array>();

function codesOf(view: ArrayBufferView): Int32Array {
  return kernelCodes.get(view.constructor) ??
    codesFor(view.constructor, view instanceof DataView ? undefined : bareType(view));
}

function codesFor(key: unknown, t: Datatype | undefined): Int32Array {
  const codes = new Int32Array(t ? Op.predefined.length : 0).fill(-1);
  if (t) for (const op of Op.predefined) codes[op.id] = opAllows(op, t) ? t.basic | op.id << 8 : -1;
  kernelCodes.set(key, codes);
  return codes;
}

/**
 * MPI_Reduce_locals (proposed): `inoutbuf = inbuf op argbuf`, elementwise.
 * IN_PLACE for `inbuf` or `argbuf` (or both) reads that operand from
 * `inoutbuf`; `inbuf` and `argbuf` may be the same buffer.
 */
export function reduceLocals(inbuf: Msg | typeof IN_PLACE, argbuf: Msg | typeof IN_PLACE, inoutbuf: Msg, op: Op): void {
  if (quick3(inbuf, argbuf, inoutbuf, op)) return;
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
    // No codes for quick(): these arrays passed checks of their own (an
    // explicit count or datatype), not alike()'s.
    kernel(a.view, b.view, io.view, io.count, t.basic | op.id << 8 | (call === 'reduceLocals' ? LOCALS : 0), NO_CODES);
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
