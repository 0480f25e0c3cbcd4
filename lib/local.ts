/**
 * Local reductions with the collectives' kernels: MPI_Reduce_local and the
 * proposed three-buffer MPI_Reduce_locals.
 */
import { IN_PLACE } from './constants.js';
import { fail } from './errors.js';
import { resolve, stageReduce, takeStaging, type Msg, type Resolved } from './message.js';
import { native } from './native.js';
import { checkOp, Op, userOpSpec, userView } from './op.js';

/** MPI_Reduce_local: `inoutbuf = inbuf op inoutbuf`, elementwise. */
export function reduceLocal(inbuf: Msg, inoutbuf: Msg, op: Op): void {
  const io = resolve('reduceLocal', 'inoutbuf', inoutbuf);
  const a = resolve('reduceLocal', 'inbuf', inbuf);
  matches('reduceLocal', 'inbuf', a, io);
  checkOp(op, io.type, 'reduceLocal');
  combine(a, io, io, op);
}

/**
 * MPI_Reduce_locals (proposed): `inoutbuf = inbuf op argbuf`, elementwise.
 * IN_PLACE for `inbuf` or `argbuf` (or both) reads that operand from
 * `inoutbuf`; `inbuf` and `argbuf` may be the same buffer.
 */
export function reduceLocals(inbuf: Msg | typeof IN_PLACE, argbuf: Msg | typeof IN_PLACE, inoutbuf: Msg, op: Op): void {
  const io = resolve('reduceLocals', 'inoutbuf', inoutbuf);
  const a = inbuf === IN_PLACE ? io : resolve('reduceLocals', 'inbuf', inbuf);
  const b = argbuf === IN_PLACE ? io : resolve('reduceLocals', 'argbuf', argbuf);
  matches('reduceLocals', 'inbuf', a, io);
  matches('reduceLocals', 'argbuf', b, io);
  checkOp(op, io.type, 'reduceLocals');
  combine(a, b, io, op);
}

// out = a op b in the kernels. Predefined types (and user ops on dense
// types) reduce the caller's memory directly, no copy; other derived types
// go through the collectives' staging: a predefined op on each basic
// element in kernel layout, a user op on whole items, and only the type
// map's bytes of the output written back.
function combine(a: Resolved, b: Resolved, io: Resolved, op: Op): void {
  const t = io.type, user = op.id < 0;
  if (user && (t.predefined || t.contiguous) && callUser(a, b, io, op)) return;
  if (t.predefined || (user && t.contiguous)) {
    native.reduceLocals(a.view, b.view, io.view, io.count, t.basic, op.id, userOpSpec(op, t));
    return;
  }
  takeStaging();
  try {
    const ko = stageReduce(io, a === io || b === io ? 'both' : 'recv', user);
    const ka = a === io ? ko : stageReduce(a, 'send', user);
    const kb = b === io ? ko : b === a ? ka : stageReduce(b, 'send', user);
    native.reduceLocals(ka.view, kb.view, ko.view, ko.count, ko.basic, op.id, userOpSpec(op, t));
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
  // that is the output itself must be saved first.
  if (a === io && b !== io) inv = userView(t, bytesOf(a).slice(), bytes)!;
  if (b !== io) bytesOf(io).set(bytesOf(b));
  op.fn!(inv, out, io.count, t);
  return true;
}

function bytesOf(m: Resolved): Uint8Array {
  return new Uint8Array(m.view.buffer, m.view.byteOffset, m.bytes);
}

function matches(call: string, what: string, m: Resolved, io: Resolved): void {
  if (m === io) return;
  if (m.type.basic !== io.type.basic || m.type.category !== io.type.category) {
    fail('ERR_TYPE', call, `${what} datatype ${m.type.name} differs from inoutbuf datatype ${io.type.name}`);
  }
  if (m.count !== io.count) fail('ERR_COUNT', call, `${what} count ${m.count} differs from inoutbuf count ${io.count}`);
  // The kernels allow an operand to be exactly the output, not to overlap it
  // at an offset (a later item would read an already-combined one).
  if (m.view.buffer === io.view.buffer) {
    const a0 = m.view.byteOffset, b0 = io.view.byteOffset;
    if (a0 !== b0 && a0 < b0 + io.bytes && b0 < a0 + m.bytes) {
      fail('ERR_BUFFER', call, `${what} overlaps inoutbuf at a different offset (${a0} vs ${b0}); pass IN_PLACE or separate buffers`);
    }
  }
}
