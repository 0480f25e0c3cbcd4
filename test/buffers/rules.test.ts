/**
 * Which buffers each kind of call takes, in the vitest process (COMM_SELF,
 * the valid calls of test/fixtures/fuzz/model.mjs): a resizable ArrayBuffer
 * is refused with ERR_BUFFER, saying why, by every nonblocking and
 * persistent collective and by blocking ones with a user-defined op, and
 * taken by blocking ones with a predefined op; a growable SharedArrayBuffer
 * works everywhere, grown while a request is pending too. A buffer whose
 * ArrayBuffer was detached before the call (transferred to a worker) is
 * refused with ERR_BUFFER saying so, by every collective, point-to-point
 * call, pack, unpack and reduceLocal, instead of passing for an empty
 * message; an empty view of a live buffer is still an empty message.
 */
import { describe, expect, it } from 'vitest';

import * as mpi from '../../dist/index.js';
import { detach } from '../fixtures/fuzz/common.mjs';
import { build, KINDS, normalise, OP_ARG, opsFor, TYPES } from '../fixtures/fuzz/model.mjs';

const S = mpi.COMM_SELF;
type Plan = Parameters<typeof build>[1];

function plan(kind: string, bufKind: string, userOp = false, spec = 'typed'): Plan {
  const p = normalise({ kind, type: 0, count: 3, root: 0, inPlace: false, spec, bufKind, slack: 0, gaps: false, seed: 5 });
  const ops = opsFor(p.tp);
  return { ...p, op: ops.find((o: { op: { id: number } }) => (o.op.id < 0) === userOp)! } as Plan;
}

const call = (kind: string, form: string, args: unknown[]): unknown => {
  const c = S as unknown as Record<string, (...a: unknown[]) => unknown>;
  return form === 'i' ? c[`i${kind}`]!(...args) : form === 'init' ? c[`${kind}Init`]!(...args) : c[kind]!(...args);
};

describe('resizable ArrayBuffers', () => {
  for (const form of ['i', 'init']) {
    it(`are refused by every ${form === 'i' ? 'nonblocking' : 'persistent'} collective with ERR_BUFFER, saying why`, () => {
      for (const kind of KINDS.filter((k: string) => k !== 'barrier')) {
        const m = build(S, plan(kind, 'resizable'));
        expect(() => call(kind, form, m.args), `${kind}`).toThrow(expect.objectContaining({
          code: 'ERR_BUFFER',
          message: expect.stringMatching(new RegExp(`^${form === 'i' ? `i${kind}` : `${kind}Init`}: the (send |receive )?buffer is a view of a resizable ArrayBuffer, which could shrink`)),
        }));
      }
    });
  }

  it('are refused by blocking collectives with a user-defined op, and taken by those with a predefined op', () => {
    for (const kind of KINDS.filter((k: string) => OP_ARG[k] !== undefined)) {
      const user = build(S, plan(kind, 'resizable', true));
      expect(() => call(kind, 'blocking', user.args), kind).toThrow(expect.objectContaining({ code: 'ERR_BUFFER', message: expect.stringContaining('resizable') }));
    }
    for (const kind of KINDS) {
      const m = build(S, plan(kind, 'resizable'));
      call(kind, 'blocking', m.args);
      m.check(`blocking ${kind} on resizable buffers`);
    }
  });
});

describe('growable SharedArrayBuffers', () => {
  for (const form of ['blocking', 'i', 'init']) {
    it(`work with every ${form} collective`, async () => {
      for (const kind of KINDS) {
        for (const userOp of OP_ARG[kind] !== undefined ? [false, true] : [false]) {
          const m = build(S, plan(kind, 'growable', userOp));
          const r = call(kind, form, m.args) as mpi.PersistentRequest | undefined;
          if (form === 'init') await r!.start();
          else if (form === 'i') await r;
          m.check(`${form} ${kind}${userOp ? ' with a user op' : ''}`);
        }
      }
    });
  }

  it('may grow while a request that uses them is pending', async () => {
    const sab = new SharedArrayBuffer(64, { maxByteLength: 2 << 20 });
    const send = new Float64Array(sab, 0, 4).fill(2), recv = new Float64Array(sab, 32, 4);
    const req = S.iallreduce(send, recv);
    sab.grow(1 << 20);
    await req;
    expect(Array.from(recv)).toEqual([2, 2, 2, 2]);
    // A length-tracking view grows with it, and is taken too.
    const tracking = new Float64Array(sab);
    const p = S.allreduceInit(mpi.IN_PLACE, tracking);
    sab.grow((1 << 20) + 8);
    await p.start();
    p.free();
  });
});

// What a transfer to a worker leaves: the same kind of thing, detached.
function detachedLike<T>(b: T): T {
  return detach(b instanceof ArrayBuffer ? new ArrayBuffer(b.byteLength)
    : b instanceof DataView ? new DataView(new ArrayBuffer(b.byteLength))
    : new (b as { constructor: new (n: number) => ArrayBufferView }).constructor((b as unknown as Uint8Array).length)) as T;
}

const isBuf = (b: unknown): boolean => ArrayBuffer.isView(b) || b instanceof ArrayBuffer;

// `args` with the buffer of argument i (bare, or first in a spec) detached; null if it has none.
function withDetached(args: unknown[], i: number): unknown[] | null {
  const a = args[i];
  const d = isBuf(a) ? detachedLike(a) : Array.isArray(a) && isBuf(a[0]) ? [detachedLike(a[0]), ...a.slice(1)] : null;
  if (d === null) return null;
  const out = args.slice();
  out[i] = d;
  return out;
}

const DETACHED = /^\w+: .*ArrayBuffer is detached \(transferred, or handed to a stream\)/;

describe('detached ArrayBuffers', () => {
  for (const form of ['blocking', 'i', 'init']) {
    it(`are refused by every ${form === 'i' ? 'nonblocking' : form} collective with ERR_BUFFER, saying so, for every argument and spec form`, () => {
      let tried = 0;
      for (const kind of KINDS) {
        for (const [spec, bufKind] of [['bare', 'plain'], ['typed', 'plain'], ['counted', 'plain'], ['typed', 'arraybuffer'], ['counted', 'dataview']]) {
          const m = build(S, plan(kind, bufKind!, false, spec));
          for (let i = 0; i < m.args.length; i++) {
            const args = withDetached(m.args, i);
            if (!args) continue;
            tried++;
            expect(() => call(kind, form, args), `${form} ${kind}, ${spec} ${bufKind} argument ${i}`).toThrow(
              expect.objectContaining({ code: 'ERR_BUFFER', message: expect.stringMatching(DETACHED) }));
          }
        }
      }
      expect(tried).toBeGreaterThan(KINDS.length * 5);
    });
  }

  it('are refused by point-to-point calls, pack, unpack and reduceLocal', () => {
    const gone = detachedLike(new Float64Array(4)), live = new Float64Array(4);
    const refused = { code: 'ERR_BUFFER', message: expect.stringMatching(DETACHED) };
    expect(() => S.send(gone, 0, 1)).toThrow(expect.objectContaining(refused));
    expect(() => S.isend(gone, 0, 1)).toThrow(expect.objectContaining(refused));
    expect(() => S.irecv(gone, 0, 1)).toThrow(expect.objectContaining(refused));
    expect(() => S.sendrecv(live, 0, 1, gone, 0, 1)).toThrow(expect.objectContaining(refused));
    expect(() => mpi.pack([gone, mpi.Datatype.DOUBLE], new Uint8Array(32), 0)).toThrow(expect.objectContaining(refused));
    expect(() => mpi.pack(live, detachedLike(new ArrayBuffer(32)), 0)).toThrow(expect.objectContaining(refused));
    expect(() => mpi.unpack(detachedLike(new ArrayBuffer(32)), 0, live)).toThrow(expect.objectContaining(refused));
    expect(() => mpi.reduceLocal(gone, live, mpi.Op.SUM)).toThrow(expect.objectContaining(refused));
    expect(() => mpi.reduceLocal(live, gone, mpi.Op.SUM)).toThrow(expect.objectContaining(refused));
    // Empty either way: the addon's fast path of reduceLocal asks too.
    const empty = new Float64Array(0);
    expect(() => mpi.reduceLocal(detachedLike(empty), empty, mpi.Op.SUM)).toThrow(expect.objectContaining(refused));
    expect(() => mpi.reduceLocals(empty, empty, detachedLike(empty), mpi.Op.SUM)).toThrow(expect.objectContaining(refused));
    // Nothing was left behind: the next message is the next one sent.
    const got = new Float64Array(4);
    S.sendrecv(Float64Array.of(1, 2, 3, 4), 0, 1, got, 0, 1);
    expect(Array.from(got)).toEqual([1, 2, 3, 4]);
  });

  it('an empty view of a live buffer is still an empty message', () => {
    const none = new Float64Array(0);
    S.allreduce(none, new Float64Array(0));
    S.bcast(none, 0);
    S.sendrecv(new Float64Array(0), 0, 3, none, 0, 3);
    expect(mpi.pack(none, new Uint8Array(0), 0)).toBe(0);
  });
});

void TYPES;
