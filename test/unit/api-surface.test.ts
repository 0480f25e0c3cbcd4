/**
 * Every name the public contract (API.md) promises is exported with the
 * right kind, so a missing export fails here rather than in a user's code.
 */
import { describe, expect, it } from 'vitest';

import * as mpi from '../../dist/index.js';

const m = mpi as unknown as Record<string, unknown>;

const FUNCTIONS = [
  'init', 'finalize', 'isInitialized', 'isFinalized', 'wtime', 'wtick', 'abort', 'launch',
  'reduceLocal', 'reduceLocals', 'pack', 'unpack', 'packSize', 'allocMem',
];
const CLASSES = ['Comm', 'Intercomm', 'Group', 'Request', 'PersistentRequest', 'Datatype', 'Op', 'MPIError'];
const COLLECTIVES = [
  'barrier', 'bcast', 'gather', 'gatherv', 'scatter', 'scatterv', 'allgather', 'allgatherv', 'alltoall',
  'alltoallv', 'alltoallw', 'reduce', 'allreduce', 'reduceScatter', 'reduceScatterBlock', 'scan', 'exscan',
];
const COMM_METHODS = ['group', 'dup', 'split', 'splitType', 'create', 'free', 'compare', 'createIntercomm'];
const OPS = ['MAX', 'MIN', 'SUM', 'PROD', 'LAND', 'BAND', 'LOR', 'BOR', 'LXOR', 'BXOR', 'MAXLOC', 'MINLOC', 'REPLACE', 'NO_OP'];
const TYPE_CONSTRUCTORS = ['contiguous', 'vector', 'hvector', 'indexed', 'hindexed', 'indexedBlock', 'hindexedBlock', 'struct', 'subarray'];

describe('the public API', () => {
  it('exports every function and class of the contract', () => {
    for (const f of FUNCTIONS) expect(typeof m[f], f).toBe('function');
    for (const c of CLASSES) expect(typeof m[c], c).toBe('function');
  });

  it('gives every collective in blocking, nonblocking and persistent form', () => {
    const world = mpi.COMM_WORLD as unknown as Record<string, unknown>;
    for (const c of COLLECTIVES) {
      for (const name of [c, `i${c}`, `${c}Init`]) expect(typeof world[name], name).toBe('function');
    }
    for (const name of COMM_METHODS) expect(typeof world[name], name).toBe('function');
  });

  it('has every predefined op, the datatype constructors, and the request helpers', () => {
    for (const op of OPS) expect(mpi.Op[op as keyof typeof mpi.Op], op).toBeInstanceOf(mpi.Op);
    // Op.predefined lists them all, indexed by their native numbers.
    expect(mpi.Op.predefined.map((op) => op.name).sort()).toEqual([...OPS].sort());
    mpi.Op.predefined.forEach((op, i) => expect(op.id, op.name).toBe(i));
    expect(Object.isFrozen(mpi.Op.predefined)).toBe(true);
    expect(typeof mpi.Op.create).toBe('function');
    const D = mpi.Datatype as unknown as Record<string, unknown>;
    for (const c of TYPE_CONSTRUCTORS) expect(typeof D[c], c).toBe('function');
    for (const f of ['waitAll', 'testAll', 'waitAny']) expect(typeof (mpi.Request as unknown as Record<string, unknown>)[f], f).toBe('function');
    expect(typeof mpi.PersistentRequest.startAll).toBe('function');
    for (const g of ['union', 'intersection', 'difference']) expect(typeof (mpi.Group as unknown as Record<string, unknown>)[g], g).toBe('function');
    expect(mpi.Group.EMPTY.size).toBe(0);
  });

  it('packs through the package entry point', () => {
    const { DOUBLE } = mpi.Datatype;
    const col = mpi.Datatype.vector(3, 1, 2, DOUBLE).commit();
    const src = Float64Array.from([1, 2, 3, 4, 5, 6]);
    const out = new Uint8Array(mpi.packSize(1, col));
    expect(mpi.pack([src, 1, col], out, 0)).toBe(24);
    expect(Array.from(new Float64Array(out.buffer))).toEqual([1, 3, 5]);
    const back = new Float64Array(6);
    expect(mpi.unpack(out, 0, [back, 1, col])).toBe(24);
    expect(Array.from(back)).toEqual([1, 0, 3, 0, 5, 0]);
    col.free();
  });
});
