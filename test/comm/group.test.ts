// Groups. In this process (a world of one): the empty group, COMM_WORLD's
// group of one, identities and every argument error. In rank scripts at
// np=2/4/5: the algebra over several members, against a reference model.
import { describe, expect, it } from 'vitest';
import * as mpi from '../../dist/index.js';
import { explain, runJob } from '../helpers/job.js';

const { Group, IDENT, SIMILAR, UNEQUAL, UNDEFINED, PROC_NULL } = mpi;
type G = InstanceType<typeof Group>;

function expectMPIError(fn: () => unknown, code: string): void {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  expect(err, `expected MPIError ${code}`).toBeInstanceOf(mpi.MPIError);
  const e = err as InstanceType<typeof mpi.MPIError>;
  expect(e.code, e.message).toBe(code);
  expect(e.errorClass).toBe((mpi as unknown as Record<string, number>)[code]);
}

const members = (g: G) => g.translateRanks(Array.from({ length: g.size }, (_, i) => i), mpi.COMM_WORLD.group());

describe('groups in a world of one', () => {
  const world = mpi.COMM_WORLD.group();

  it('COMM_WORLD.group() and COMM_SELF.group() hold this rank', () => {
    expect(world.size).toBe(1);
    expect(world.rank).toBe(0);
    expect(mpi.COMM_SELF.group().compare(world)).toBe(IDENT);
    expect(members(world)).toEqual([0]);
  });

  it('Group.EMPTY has size 0 and no rank here', () => {
    expect(Group.EMPTY.size).toBe(0);
    expect(Group.EMPTY.rank).toBe(UNDEFINED);
    expect(Group.EMPTY.compare(Group.EMPTY)).toBe(IDENT);
    expect(Group.EMPTY.compare(world)).toBe(UNEQUAL);
    expect(world.compare(Group.EMPTY)).toBe(UNEQUAL);
  });

  it('incl/excl/rangeIncl/rangeExcl of the group of one', () => {
    expect(world.incl([0]).compare(world)).toBe(IDENT);
    expect(world.incl([]).compare(Group.EMPTY)).toBe(IDENT);
    expect(world.incl([]).rank).toBe(UNDEFINED);
    expect(world.excl([0]).size).toBe(0);
    expect(world.excl([]).compare(world)).toBe(IDENT);
    expect(world.rangeIncl([[0, 0, 1]]).compare(world)).toBe(IDENT);
    expect(world.rangeIncl([[0, 0, -3]]).compare(world)).toBe(IDENT);
    expect(world.rangeIncl([]).size).toBe(0);
    expect(world.rangeExcl([[0, 0, 7]]).size).toBe(0);
    expect(world.rangeExcl([]).compare(world)).toBe(IDENT);
  });

  it('union, intersection, difference identities', () => {
    for (const a of [world, Group.EMPTY]) {
      expect(Group.union(a, a).compare(a)).toBe(IDENT);
      expect(Group.intersection(a, a).compare(a)).toBe(IDENT);
      expect(Group.difference(a, a).compare(Group.EMPTY)).toBe(IDENT);
      expect(Group.intersection(a, Group.EMPTY).size).toBe(0);
      expect(Group.union(a, Group.EMPTY).compare(a)).toBe(IDENT);
      expect(Group.union(Group.EMPTY, a).compare(a)).toBe(IDENT);
      expect(Group.difference(a, Group.EMPTY).compare(a)).toBe(IDENT);
      expect(Group.difference(Group.EMPTY, a).size).toBe(0);
    }
    expect(Group.union(world, Group.EMPTY).rank).toBe(0);
    expect(Group.difference(world, world).rank).toBe(UNDEFINED);
  });

  it('translateRanks: members, non-members, PROC_NULL', () => {
    expect(world.translateRanks([0], world)).toEqual([0]);
    expect(world.translateRanks([0], Group.EMPTY)).toEqual([UNDEFINED]);
    expect(world.translateRanks([PROC_NULL, 0, PROC_NULL], world)).toEqual([PROC_NULL, 0, PROC_NULL]);
    expect(Group.EMPTY.translateRanks([], world)).toEqual([]);
    expect(Group.EMPTY.translateRanks([PROC_NULL], world)).toEqual([PROC_NULL]);
  });

  it('a communicator created from the group of one, and from EMPTY', () => {
    const c = mpi.COMM_WORLD.create(world)!;
    expect(c.size).toBe(1);
    expect(c.rank).toBe(0);
    expect(c.group().compare(world)).toBe(IDENT);
    expect(mpi.COMM_WORLD.compare(c)).toBe(mpi.CONGRUENT);
    c.free();
    expect(mpi.COMM_WORLD.create(Group.EMPTY)).toBeNull();
  });

  it('ERR_RANK for out-of-range and repeated ranks', () => {
    for (const bad of [[1], [-1], [0, 0], [0.5], [UNDEFINED], [PROC_NULL], [Number.NaN]]) {
      expectMPIError(() => world.incl(bad), 'ERR_RANK');
      expectMPIError(() => world.excl(bad), 'ERR_RANK');
    }
    expectMPIError(() => Group.EMPTY.incl([0]), 'ERR_RANK');
    expectMPIError(() => world.rangeIncl([[0, 1, 1]]), 'ERR_RANK');
    expectMPIError(() => world.rangeIncl([[0, 0, 1], [0, 0, 1]]), 'ERR_RANK');
    expectMPIError(() => world.rangeExcl([[1, 1, 1]]), 'ERR_RANK');
    expectMPIError(() => world.rangeIncl([[0, -1, -1]]), 'ERR_RANK');
    expectMPIError(() => world.translateRanks([1], world), 'ERR_RANK');
    expectMPIError(() => world.translateRanks([-1], world), 'ERR_RANK');
    expectMPIError(() => world.translateRanks([UNDEFINED], world), 'ERR_RANK');
  });

  it('ERR_ARG for stride 0 and malformed ranges or rank lists', () => {
    expectMPIError(() => world.rangeIncl([[0, 0, 0]]), 'ERR_ARG');
    expectMPIError(() => world.rangeExcl([[0, 0, 0]]), 'ERR_ARG');
    expectMPIError(() => world.rangeIncl([[0, 0]] as never), 'ERR_ARG');
    expectMPIError(() => world.rangeIncl([[0, 0, 1, 1]] as never), 'ERR_ARG');
    expectMPIError(() => world.rangeIncl([0, 0, 1] as never), 'ERR_ARG');
    expectMPIError(() => world.rangeIncl([[0, 0.5, 1]]), 'ERR_ARG');
    expectMPIError(() => world.rangeIncl([[0, 0, '1']] as never), 'ERR_ARG');
    expectMPIError(() => world.rangeIncl(null as never), 'ERR_ARG');
    expectMPIError(() => world.rangeExcl('0' as never), 'ERR_ARG');
    expectMPIError(() => world.incl('0' as never), 'ERR_ARG');
    expectMPIError(() => world.excl(undefined as never), 'ERR_ARG');
    expectMPIError(() => world.translateRanks(0 as never, world), 'ERR_ARG');
  });

  it('ERR_GROUP for anything but a Group', () => {
    for (const bad of [{}, null, undefined, [0], 0, mpi.COMM_WORLD, 'group']) {
      const b = bad as never;
      expectMPIError(() => Group.union(world, b), 'ERR_GROUP');
      expectMPIError(() => Group.union(b, world), 'ERR_GROUP');
      expectMPIError(() => Group.intersection(world, b), 'ERR_GROUP');
      expectMPIError(() => Group.intersection(b, world), 'ERR_GROUP');
      expectMPIError(() => Group.difference(world, b), 'ERR_GROUP');
      expectMPIError(() => Group.difference(b, world), 'ERR_GROUP');
      expectMPIError(() => world.compare(b), 'ERR_GROUP');
      expectMPIError(() => world.translateRanks([0], b), 'ERR_GROUP');
      expectMPIError(() => mpi.COMM_WORLD.create(b), 'ERR_GROUP');
    }
  });

  it('groups are immutable values: operations leave their inputs unchanged', () => {
    const a = world.incl([0]);
    Group.union(a, Group.EMPTY);
    a.excl([0]);
    Group.difference(a, a);
    expect(a.size).toBe(1);
    expect(a.compare(world)).toBe(IDENT);
    expect(Group.EMPTY.size).toBe(0);
    expect(SIMILAR).not.toBe(IDENT);
  });
});

describe('group algebra over several ranks', () => {
  for (const np of [2, 4, 5]) {
    it(`incl/excl/ranges/union/intersection/difference/translateRanks/compare and errors at np=${np}`, async () => {
      const r = await runJob(np, 'comm/group.mjs', [], { timeoutSec: 60 });
      expect(r.status, explain(r)).toBe(0);
    });
  }
});
