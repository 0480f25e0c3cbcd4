// Intercommunicators: creation from two groups of COMM_WORLD (uneven
// blocks and interleaved ranks), every collective in both directions in
// every mode, merge, dup, compare, free, errors.
import { describe, expect, it } from 'vitest';
import { explain, runJob } from '../helpers/job.js';

const job = (np: number, layout: string, part: string, timeoutSec = 60, env: Record<string, string> = {}) =>
  runJob(np, 'comm/intercomm.mjs', [layout, part], { timeoutSec, env });

// block: A = [0, floor(n/2)), B = the rest (np=3: 1+2, np=5: 2+3);
// interleaved: A = even ranks, B = odd ranks, local orders reversed.
const layouts: [string, number][] = [
  ['block', 2], ['block', 3], ['block', 4], ['block', 5],
  ['interleaved', 3], ['interleaved', 4], ['interleaved', 5],
];

describe('intercommunicators', () => {
  it('cannot be made in a world of one (argument errors)', async () => {
    const r = await job(1, 'block', 'errors');
    expect(r.status, explain(r)).toBe(0);
  });
  for (const [layout, np] of layouts) {
    it(`every collective, both directions, every root, blocking/nonblocking/persistent: ${layout} np=${np}`, async () => {
      const r = await job(np, layout, 'coll');
      expect(r.status, explain(r)).toBe(0);
    });
  }
  for (const [layout, np] of [['block', 3], ['interleaved', 5]] as [string, number][]) {
    it(`every collective with messages crossing many chunks (8 KiB slots): ${layout} np=${np}`, async () => {
      const r = await job(np, layout, 'coll', 90, { IC_SCALE: '700', NODEMPI_SLOT_KB: '8' });
      expect(r.status, explain(r)).toBe(0);
    });
  }
  for (const [layout, np] of [['block', 2], ['block', 3], ['interleaved', 4]] as [string, number][]) {
    it(`every collective with empty messages (IC_SCALE=0): ${layout} np=${np}`, async () => {
      const r = await job(np, layout, 'coll', 60, { IC_SCALE: '0' });
      expect(r.status, explain(r)).toBe(0);
    });
  }
  for (const [layout, np] of [['block', 2], ['block', 3], ['block', 5], ['interleaved', 4]] as [string, number][]) {
    it(`rooted reduce with a non-commutative user op keeps the remote group's rank order: ${layout} np=${np}`, async () => {
      const r = await job(np, layout, 'userop', 30);
      expect(r.status, explain(r)).toBe(0);
    });
  }
  for (const [layout, np] of [['block', 2], ['block', 3], ['block', 5], ['interleaved', 3], ['interleaved', 4]] as [string, number][]) {
    it(`merge(high) orders the groups; dup and traffic on both: ${layout} np=${np}`, async () => {
      const r = await job(np, layout, 'merge');
      expect(r.status, explain(r)).toBe(0);
    });
  }
  for (const [layout, np] of [['block', 2], ['block', 4], ['interleaved', 3], ['interleaved', 5]] as [string, number][]) {
    it(`two intercommunicators between the same groups, other leaders and tags: ${layout} np=${np}`, async () => {
      const r = await job(np, layout, 'two');
      expect(r.status, explain(r)).toBe(0);
    });
  }
  for (const np of [2, 3]) {
    it(`intercommunicators created concurrently with different tags (np=${np})`, async () => {
      const r = await job(np, 'block', 'pairs', 20);
      expect(r.status, explain(r)).toBe(0);
    });
  }
  for (const [layout, np] of [['block', 2], ['interleaved', 3], ['interleaved', 5]] as [string, number][]) {
    it(`compare() follows MPI for intercommunicators: ${layout} np=${np}`, async () => {
      const r = await job(np, layout, 'compare', 30);
      expect(r.status, explain(r)).toBe(0);
    });
  }
  for (const [layout, np] of [['block', 2], ['block', 3], ['interleaved', 4], ['interleaved', 5]] as [string, number][]) {
    it(`derived datatypes in every kind of intercommunicator collective; holes and padding untouched: ${layout} np=${np}`, async () => {
      const r = await job(np, layout, 'derived', 60);
      expect(r.status, explain(r)).toBe(0);
    });
  }
  it('createIntercomm argument errors (np=3)', async () => {
    const r = await job(3, 'interleaved', 'errors', 30);
    expect(r.status, explain(r)).toBe(0);
  });
  it('createIntercomm with an intercommunicator as the local communicator throws ERR_COMM (np=2)', async () => {
    const r = await job(2, 'block', 'inter-local', 20);
    expect(r.status, explain(r)).toBe(0);
  });
  it('null is not a root: ERR_ROOT before anything is sent (np=2)', async () => {
    const r = await job(2, 'block', 'null-root', 20);
    expect(r.status, explain(r)).toBe(0);
  });
  it('every use of a freed intercommunicator throws ERR_COMM (np=3)', async () => {
    const r = await job(3, 'block', 'freed', 30);
    expect(r.status, explain(r)).toBe(0);
  });
});
