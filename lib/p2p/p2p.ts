/**
 * Point-to-point messages (API.md, "Point-to-point"), the same on every
 * backend: every argument is checked here before anything is sent, a peer
 * mpi.PROC_NULL completes here at once, and a derived datatype travels as
 * its packed stream (only type signatures need match, as in MPI), so that
 * a backend moves contiguous bytes only (lib/p2p/backend.ts).
 */
import v8 from 'node:v8';

import type { Comm } from '../comm.js';
import { backend } from '../backends/active.js';
import { ANY_SOURCE, ANY_TAG, PROC_NULL, TAG_UB } from '../constants.js';
import { Datatype } from '../datatype.js';
import { describe, fail, MPIError, retitle } from '../errors.js';
import { hold } from '../hold.js';
import { bareType, liveBytes, resolve, type Resolved } from '../message.js';
import { native } from '../native.js';
import { serialize } from '../objects/serialize.js';
import { Request, setNextCall, setNextHooks } from '../request.js';
import type { Peers, PointToPoint } from './backend.js';
import { releaseStatus, Status, takeStatus } from './status.js';

function p2p(): PointToPoint {
  return backend.p2p;
}

// ---- Arguments ------------------------------------------------------------------

function checkPeer(c: Peers, call: string, what: string, r: unknown, any: boolean): number {
  const inter = 'remoteSize' in c;
  const n = inter ? c.remoteSize : c.size;
  if (r === PROC_NULL || (any && r === ANY_SOURCE)) return r;
  if (typeof r !== 'number' || !Number.isInteger(r) || r < 0 || r >= n) {
    fail('ERR_RANK', call, `${what} must be a rank of the ${inter ? 'remote group' : 'communicator'} (0 to ${n - 1})` +
      `${any ? ', mpi.ANY_SOURCE' : ''} or mpi.PROC_NULL, got ${describe(r)}`);
  }
  return r;
}

function checkTag(call: string, what: string, t: unknown, any: boolean): number {
  if (any && t === ANY_TAG) return t;
  if (typeof t !== 'number' || !Number.isInteger(t) || t < 0 || t > TAG_UB) {
    fail('ERR_TAG', call, `${what} must be an integer from 0 to mpi.TAG_UB (${TAG_UB})${any ? ' or mpi.ANY_TAG' : ''}, got ${describe(t)}`);
  }
  return t;
}

function checkStatus(call: string, s: unknown): Status | undefined {
  if (s === undefined || s instanceof Status) return s;
  fail('ERR_ARG', call, `status must be a Status (new mpi.Status()), got ${describe(s)}`);
}

// ---- Wire forms -------------------------------------------------------------------

// The type of a bare TypedArray or DataView of a built-in kind, the usual
// message: its bytes are whole items of it, so resolve() would give back
// the same view and its byte length; skipped, as a small message's whole
// call costs a few hundred nanoseconds (bench/P2P.md).
function bare(buf: unknown): Datatype | undefined {
  return ArrayBuffer.isView(buf) ? bareType(buf) : undefined;
}

// A bare view's bytes. A TypedArray's `length` is read inline by optimized
// code; `byteLength` is a generic property load in Node 20's V8, about as
// long as the rest of the argument checks. (The addon checks the count
// against the view's memory, whatever a subclass's getter says, and
// refuses an empty view of a detached buffer; a DataView's getter throws
// on one, so liveBytes asks first.)
function bareBytes(view: ArrayBufferView, type: Datatype, call: string, what: string): number {
  return view instanceof DataView ? liveBytes(call, what, view) : (view as Uint8Array).length * type.size;
}

// The bytes that travel for message `m`: its memory for a dense type,
// else its packed stream.
function sendView(m: Resolved): ArrayBufferView {
  const t = m.type;
  if (t.contiguous) return m.view;
  const wire = new Uint8Array(m.count * t.size);
  if (wire.length) native.typePack(t.handle, m.count, m.view, 0, wire, 0);
  return wire;
}
const wireBytes = (m: Resolved): number => (m.type.contiguous ? m.bytes : m.count * m.type.size);

// Where a message for `m` is received, and how what arrived gets into `m`.
interface RecvWire {
  readonly view: ArrayBufferView;
  readonly bytes: number;
  /** Unpacks the first `n` bytes received (null for a dense type: they are in place). */
  readonly unpack: ((n: number) => void) | null;
}

function recvWire(m: Resolved): RecvWire {
  const t = m.type;
  if (t.contiguous) return { view: m.view, bytes: m.bytes, unpack: null };
  const wire = new Uint8Array(m.count * t.size);
  // Whole items only: the bytes of a partial item have nowhere defined to go.
  const unpack = (n: number) => {
    const items = Math.floor(n / t.size);
    if (items > 0) native.typeUnpack(t.handle, items, wire, 0, m.view, 0);
  };
  return { view: wire, bytes: wire.length, unpack };
}

// A blocking call's status, filled by the backend (one call at a time).
const scratch = new Float64Array(4);

// Runs a backend call; its errors name the public method. (Not on the
// paths a loop of small messages takes: the closure is an allocation a call.)
function run<T>(call: string, f: () => T): T {
  try {
    return f();
  } catch (err) {
    throw retitle(err, call);
  }
}

// A request that completed as it was made (a peer mpi.PROC_NULL).
function doneAtOnce<T>(call: string, status: Status | null): Request<T> {
  setNextCall(call, null);
  return new Request<T>(0, [], false)._completedNow(status);
}

// ---- Messages -----------------------------------------------------------------------

/** @internal comm.send */
export function send(comm: Comm, call: string, buf: unknown, dest: unknown, tag: unknown): void {
  comm._live(call);
  const c = comm._peers();
  const type = bare(buf);
  const m = type ? null : resolve(call, 'send buffer', buf);
  const d = checkPeer(c, call, 'dest', dest, false);
  const t = checkTag(call, 'tag', tag, false);
  if (d === PROC_NULL) return;
  const view = m ? sendView(m) : buf as ArrayBufferView;
  try {
    p2p().send(c, view, m ? wireBytes(m) : bareBytes(view, type!, call, 'send buffer'), d, t);
  } catch (err) {
    throw retitle(err, call);
  }
}

/** @internal comm.recv */
export function recv(comm: Comm, call: string, buf: unknown, source: unknown, tag: unknown): Status {
  comm._live(call);
  const c = comm._peers();
  const type = bare(buf);
  const m = type ? null : resolve(call, 'receive buffer', buf);
  const s = checkPeer(c, call, 'source', source, true);
  const t = checkTag(call, 'tag', tag, true);
  const status = new Status();
  if (s === PROC_NULL) return status._none(PROC_NULL);
  // A bare view is received in place; a spec through its wire form.
  const w = m ? recvWire(m) : null;
  const view = w ? w.view : buf as ArrayBufferView;
  try {
    p2p().recv(c, view, w ? w.bytes : bareBytes(view, type!, call, 'receive buffer'), s, t, scratch);
  } catch (err) {
    // A truncated message fills the buffer with what fits, as MPI does.
    if (w && err instanceof MPIError && err.code === 'ERR_TRUNCATE') w.unpack?.(w.bytes);
    throw retitle(err, call);
  }
  w?.unpack?.(scratch[2]!);
  return status._set(scratch, m ? m.type : type!);
}

/** @internal comm.isend */
export function isend(comm: Comm, call: string, buf: unknown, dest: unknown, tag: unknown): Request {
  comm._live(call);
  const c = comm._peers();
  // The buffer stays the caller's while the message may still be read
  // from it (lib/hold.ts).
  const held = hold(call, false, [buf]);
  const spec = held ? held.args[0] : buf;
  const m = resolve(call, 'send buffer', spec);
  const d = checkPeer(c, call, 'dest', dest, false);
  const t = checkTag(call, 'tag', tag, false);
  if (d === PROC_NULL) return doneAtOnce(call, null);
  const view = sendView(m);
  let id: number;
  try {
    id = p2p().isend(c, view, wireBytes(m), d, t);
  } catch (err) {
    throw retitle(err, call);
  }
  setNextCall(call, held);
  return new Request(id, [view, spec]);
}

/** @internal comm.irecv */
export function irecv(comm: Comm, call: string, buf: unknown, source: unknown, tag: unknown): Request<Status> {
  comm._live(call);
  const c = comm._peers();
  const held = hold(call, false, [null, buf]);
  const spec = held ? held.args[1] : buf;
  const m = resolve(call, 'receive buffer', spec);
  const s = checkPeer(c, call, 'source', source, true);
  const t = checkTag(call, 'tag', tag, true);
  if (s === PROC_NULL) return doneAtOnce(call, new Status()._none(PROC_NULL));
  const w = recvWire(m);
  const raw = takeStatus();
  let id: number;
  try {
    id = p2p().irecv(c, w.view, w.bytes, s, t, raw);
  } catch (err) {
    releaseStatus(raw);
    throw retitle(err, call);
  }
  setNextCall(call, held);
  const unpack = w.unpack;
  if (unpack) setNextHooks({ before: [], after: [() => unpack(raw[2]!)] });
  return new Request<Status>(id, [w.view, spec])._receives(raw, m.type);
}

/** @internal comm.probe */
export function probe(comm: Comm, call: string, source: unknown, tag: unknown): Status {
  comm._live(call);
  const c = comm._peers();
  const s = checkPeer(c, call, 'source', source, true);
  const t = checkTag(call, 'tag', tag, true);
  if (s === PROC_NULL) return new Status()._none(PROC_NULL);
  try {
    p2p().probe(c, s, t, scratch);
  } catch (err) {
    throw retitle(err, call);
  }
  return new Status()._set(scratch, Datatype.BYTE);
}

/** @internal comm.iprobe */
export function iprobe(comm: Comm, call: string, source: unknown, tag: unknown): Status | null {
  comm._live(call);
  const c = comm._peers();
  const s = checkPeer(c, call, 'source', source, true);
  const t = checkTag(call, 'tag', tag, true);
  if (s === PROC_NULL) return new Status()._none(PROC_NULL);
  let found: boolean;
  try {
    found = p2p().iprobe(c, s, t, scratch);
  } catch (err) {
    throw retitle(err, call);
  }
  return found ? new Status()._set(scratch, Datatype.BYTE) : null;
}

/** @internal comm.sendrecv */
export function sendrecv(comm: Comm, call: string, sendBuf: unknown, dest: unknown, sendtag: unknown,
  recvBuf: unknown, source: unknown, recvtag: unknown): Status {
  comm._live(call);
  const c = comm._peers();
  const ms = resolve(call, 'send buffer', sendBuf);
  const d = checkPeer(c, call, 'dest', dest, false);
  const st = checkTag(call, 'sendtag', sendtag, false);
  const mr = resolve(call, 'receive buffer', recvBuf);
  const s = checkPeer(c, call, 'source', source, true);
  const rt = checkTag(call, 'recvtag', recvtag, true);
  const w = s === PROC_NULL ? null : recvWire(mr);
  const status = exchange(call, c, ms, d, st, w, s, rt);
  return status === null ? new Status()._none(PROC_NULL) : status._setType(mr.type);
}

/** @internal comm.sendrecvReplace */
export function sendrecvReplace(comm: Comm, call: string, buf: unknown, dest: unknown, sendtag: unknown,
  source: unknown, recvtag: unknown): Status {
  comm._live(call);
  const c = comm._peers();
  const m = resolve(call, 'buffer', buf);
  const d = checkPeer(c, call, 'dest', dest, false);
  const st = checkTag(call, 'sendtag', sendtag, false);
  const s = checkPeer(c, call, 'source', source, true);
  const rt = checkTag(call, 'recvtag', recvtag, true);
  // What arrives waits in a buffer of its own until the message out has
  // left the caller's.
  let w: RecvWire | null = null;
  if (s !== PROC_NULL) {
    const temp = new Uint8Array(m.count * m.type.size);
    const t = m.type;
    w = {
      view: temp, bytes: temp.length,
      unpack: (n) => {
        if (t.contiguous) new Uint8Array(m.view.buffer, m.view.byteOffset, n).set(temp.subarray(0, n));
        else if (n >= t.size) native.typeUnpack(t.handle, Math.floor(n / t.size), temp, 0, m.view, 0);
      },
    };
  }
  const status = exchange(call, c, m, d, st, w, s, rt);
  return status === null ? new Status()._none(PROC_NULL) : status._setType(m.type);
}

// A receive posted first, then the send, then the receive waited for: two
// ranks that sendrecv with each other never wait on each other's send.
// Null when the source is mpi.PROC_NULL.
function exchange(call: string, c: Peers, ms: Resolved, d: number, st: number,
  w: RecvWire | null, s: number, rt: number): Status | null {
  const raw = takeStatus();
  let waited = true;
  try {
    return run(call, () => {
      const id = w ? p2p().irecv(c, w.view, w.bytes, s, rt, raw) : 0;
      // A send that fails leaves the receive posted: its status array
      // stays out of the pool.
      waited = !w;
      if (d !== PROC_NULL) p2p().send(c, sendView(ms), wireBytes(ms), d, st);
      if (!w) return null;
      const err = backend.requests.wait(id);
      waited = true;
      if (err && !(err instanceof MPIError && err.code === 'ERR_TRUNCATE')) throw err;
      w.unpack?.(err ? w.bytes : raw[2]!);
      if (err) throw err;
      return new Status()._set(raw, Datatype.BYTE);
    });
  } finally {
    if (waited) releaseStatus(raw);
  }
}

// ---- Values ---------------------------------------------------------------------------

function bytesOf(call: string, value: unknown): Uint8Array {
  const bytes = serialize(value, call, 'value');
  if (bytes instanceof MPIError) throw bytes;
  return bytes;
}

function valueOf(call: string, bytes: Uint8Array, raw: Float64Array): unknown {
  try {
    return v8.deserialize(bytes);
  } catch {
    throw new MPIError('ERR_OTHER', `${call}: the message from rank ${raw[0]} with tag ${raw[1]} (${raw[2]} bytes) does not hold ` +
      'a value: it was not sent with sendObject or isendObject');
  }
}

// Receives the message a matched probe found into a buffer of its size.
function take(call: string, raw: Float64Array): unknown {
  const bytes = new Uint8Array(raw[2]!);
  run(call, () => p2p().mrecv(raw[3]!, bytes, bytes.length, raw));
  return valueOf(call, bytes, raw);
}

/** @internal comm.sendObject */
export function sendObject(comm: Comm, call: string, value: unknown, dest: unknown, tag: unknown): void {
  comm._live(call);
  const c = comm._peers();
  const d = checkPeer(c, call, 'dest', dest, false);
  const t = checkTag(call, 'tag', tag, false);
  if (d === PROC_NULL) return;
  const bytes = bytesOf(call, value);
  run(call, () => p2p().send(c, bytes, bytes.length, d, t));
}

/** @internal comm.recvObject */
export function recvObject(comm: Comm, call: string, source: unknown, tag: unknown, status: unknown): unknown {
  comm._live(call);
  const c = comm._peers();
  const s = checkPeer(c, call, 'source', source, true);
  const t = checkTag(call, 'tag', tag, true);
  const out = checkStatus(call, status);
  if (s === PROC_NULL) {
    out?._none(PROC_NULL);
    return undefined;
  }
  run(call, () => p2p().mprobe(c, s, t, scratch));
  const value = take(call, scratch);
  out?._set(scratch, Datatype.BYTE);
  return value;
}

/** @internal comm.isendObject */
export async function isendObject(comm: Comm, call: string, value: unknown, dest: unknown, tag: unknown): Promise<void> {
  comm._live(call);
  const c = comm._peers();
  const d = checkPeer(c, call, 'dest', dest, false);
  const t = checkTag(call, 'tag', tag, false);
  if (d === PROC_NULL) return;
  const bytes = bytesOf(call, value);
  const id = run(call, () => p2p().isend(c, bytes, bytes.length, d, t));
  setNextCall(call, null);
  await new Request(id, [bytes]);
}

/** @internal comm.irecvObject */
export async function irecvObject(comm: Comm, call: string, source: unknown, tag: unknown): Promise<unknown> {
  comm._live(call);
  const c = comm._peers();
  const s = checkPeer(c, call, 'source', source, true);
  const t = checkTag(call, 'tag', tag, true);
  if (s === PROC_NULL) return undefined;
  const raw = takeStatus();
  let id: number;
  try {
    id = run(call, () => p2p().improbe(c, s, t, raw));
  } catch (err) {
    releaseStatus(raw);
    throw err;
  }
  setNextCall(call, null);
  // Out of the pool until the message is taken: the backend writes the
  // status when the probe matches, and the handle in it names the message.
  try {
    await new Request(id, [raw]);
    return take(call, raw);
  } finally {
    releaseStatus(raw);
  }
}
