/**
 * Which buffers each kind of call takes, in the vitest process (COMM_SELF,
 * the valid calls of test/fixtures/fuzz/model.mjs): a resizable ArrayBuffer
 * is refused with ERR_BUFFER, saying why, by every nonblocking and
 * persistent collective and by blocking ones with a user-defined op, and
 * taken by blocking ones with a predefined op; a growable SharedArrayBuffer
 * works everywhere, grown while a request is pending too.
 */
import { describe, expect, it } from 'vitest';

import * as mpi from '../../dist/index.js';
import { build, KINDS, normalise, OP_ARG, opsFor, TYPES } from '../fixtures/fuzz/model.mjs';

const S = mpi.COMM_SELF;
type Plan = Parameters<typeof build>[1];

function plan(kind: string, bufKind: string, userOp = false): Plan {
  const p = normalise({ kind, type: 0, count: 3, root: 0, inPlace: false, spec: 'typed', bufKind, slack: 0, gaps: false, seed: 5 });
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

void TYPES;
