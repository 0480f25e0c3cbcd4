// One job of bench/objects.mjs: run as
//   node dist/cli.js -n N bench/objects_job.mjs [--iters K]
// (or under mpirun / mpiexec for the mpi backend). For each kind of value of
// about 1 MiB serialized, times on every rank, K times with a barrier
// before each: bcastObject of it from rank 0; the parts it is made of, each
// alone (v8.serialize at the root, v8.deserialize of those bytes, a bcast
// of that many bytes); and allgatherObject of it. Rank 0 prints one JSON
// line per kind: the median over iterations of the slowest rank's time, µs.
import v8 from 'node:v8';
import { isDeepStrictEqual, parseArgs } from 'node:util';

import * as mpi from '../dist/index.js';

const { values: a } = parseArgs({ options: { iters: { type: 'string', default: '60' } } });
const ITERS = Number(a.iters);
const world = mpi.init();
const { rank, size } = world;

// About 1 MiB serialized each: numbers in a typed array (one copy), and
// many small records (what serialization itself costs).
const kinds = {
  'Float64Array in an object': () => ({ step: 7, data: Float64Array.from({ length: 131072 }, (_, i) => i * 0.5) }),
  'array of 16384 records': () => Array.from({ length: 16384 }, (_, i) => ({ id: i, name: `item-${i}`, tags: ['a', 'b'], score: i / 3, ok: i % 2 === 0 })),
};

const median = (xs) => { const s = [...xs].sort((x, y) => x - y); return s[s.length >> 1]; };
const slowest = new Float64Array(1), mine = new Float64Array(1);

// The median over iterations of the slowest rank's time of fn, µs.
function timed(fn) {
  const per = [];
  for (let i = 0; i < ITERS + 10; i++) {
    world.barrier();
    const t0 = process.hrtime.bigint();
    fn();
    mine[0] = Number(process.hrtime.bigint() - t0) / 1000;
    world.allreduce(mine, slowest, mpi.Op.MAX);
    if (i >= 10) per.push(slowest[0]);  // the first calls warm up
  }
  return median(per);
}

for (const [kind, make] of Object.entries(kinds)) {
  const value = make();
  const bytes = v8.serialize(value);
  const buf = new Uint8Array(bytes.byteLength);
  const result = {
    kind, np: size, backend: mpi.backend, bytes: bytes.byteLength,
    bcastObject: timed(() => world.bcastObject(rank === 0 ? value : null, 0)),
    serialize: timed(() => { if (rank === 0) v8.serialize(value); }),
    deserialize: timed(() => { if (rank !== 0 || size === 1) v8.deserialize(bytes); }),
    bcast: timed(() => world.bcast(buf, 0)),
    allgatherObject: timed(() => world.allgatherObject(value)),
  };
  if (!isDeepStrictEqual(world.bcastObject(rank === 0 ? value : null, 0), value)) {
    console.error(`WRONG RESULT rank ${rank}: ${kind} did not come back equal`);
    mpi.abort(3);
  }
  if (rank === 0) console.log(JSON.stringify(result));
}
mpi.finalize();
