// One job of bench/warmup.mjs: run as
//   node DIST/cli.js -n N bench/warmup_job.mjs [--dist DIST] [--coll allreduce,bcast,barrier] [--sync-dir DIR]
// Times the first 20 000 calls of 8 B collectives in a fresh process (calls
// 1-10 one by one, then decades, then blocks of 500, as spans), back to back as an application
// would make them; rank 0 prints one JSON line
// per collective (per call bucket, max and min over ranks) and the rank's
// start-up cost.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values: a } = parseArgs({
  options: {
    dist: { type: 'string', default: fileURLToPath(new URL('../dist/', import.meta.url)) },
    coll: { type: 'string', default: 'allreduce,bcast,barrier' },
    'sync-dir': { type: 'string', default: join(os.tmpdir(), `nodempi-warmup-${process.env.NODEMPI_LAUNCHER_PID}`) },
  },
});
// The package of the build under test (as bench/nodempi_job.mjs imports the
// repository's own), so one script measures any build.
const tImport = performance.now();
const mpi = await import(pathToFileURL(join(a.dist, 'index.js')).href);
const tInit = performance.now();
const world = mpi.init();
// performance.now() counts from the process's start
const initEnd = performance.now();
const { rank, size } = world;

// Calls 1..10 on their own, then the means of 11-100, 101-1000, 1001-10000
// (bench/warmup.mjs names them in this order), the last from the blocks:
// calls 1001-20000 in blocks of 500, each timed as one span (the issue's
// measure: no block of 500 after the first 1000 calls above 3x steady).
const BUCKETS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, [11, 100], [101, 1000]];
const BLOCK = 500, BLOCKS = 38, FIRST_BLOCK = 1001;
const TENS_OF_K = (10000 - (FIRST_BLOCK - 1)) / BLOCK;  // blocks in calls 1001-10000

const wrong = (msg) => {
  console.error(`WRONG RESULT rank ${rank}: ${msg}`);
  mpi.abort(3);
};

const sleeper = new Int32Array(new SharedArrayBuffer(4));
const sleepMs = (ms) => Atomics.wait(sleeper, 0, 0, ms);

// init() does not wait for the other ranks, whose start-ups differ by
// milliseconds: without this, call 1 would mostly time the slowest rank's
// start-up. MPI cannot line them up without warming what is measured, so
// each rank writes when it got here to a file, and all start at one instant
// of CLOCK_MONOTONIC (hrtime, the same clock in every process) shortly after
// the last arrival. Returns how late this rank started, in µs.
function rendezvous(tag) {
  const dir = a['sync-dir'], mine = join(dir, `${tag}.${rank}`);
  writeFileSync(`${mine}.tmp`, String(process.hrtime.bigint()));
  renameSync(`${mine}.tmp`, mine);
  let names;
  while ((names = readdirSync(dir).filter((n) => n.startsWith(`${tag}.`) && !n.endsWith('.tmp'))).length < size) sleepMs(0.2);
  const last = names.map((n) => BigInt(readFileSync(join(dir, n), 'utf8'))).reduce((x, y) => (x > y ? x : y));
  const go = last + 20_000_000n;  // 20 ms for every rank to see the last file
  while (process.hrtime.bigint() < go - 1_000_000n) sleepMs(0.1);
  let now;
  while ((now = process.hrtime.bigint()) < go) { /* spin the last ms */ }
  return Number(now - go) / 1000;
}

function collective(name) {
  const send = new Float64Array(1), recv = new Float64Array(1), buf = new Float64Array(1);
  const SUM = mpi.Op.SUM;
  const sum = (size * (size + 1)) / 2;
  // prepare(i) and check(i) run outside the timed part; the values change
  // from call to call so that a stale buffer shows.
  switch (name) {
    case 'allreduce': return {
      prepare: (i) => { send[0] = rank + 1 + i; recv[0] = NaN; },
      call: () => world.allreduce(send, recv, SUM),
      check: (i) => { if (recv[0] !== sum + size * i) wrong(`allreduce call ${i + 1}: ${recv[0]}, expected ${sum + size * i}`); },
    };
    case 'bcast': return {
      prepare: (i) => { buf[0] = rank === 0 ? i + 1 : NaN; },
      call: () => world.bcast(buf, 0),
      check: (i) => { if (buf[0] !== i + 1) wrong(`bcast call ${i + 1}: ${buf[0]}, expected ${i + 1}`); },
    };
    case 'barrier': return { prepare: () => {}, call: () => world.barrier(), check: () => {} };
    default: throw new Error(`warmup_job: unknown collective ${name}`);
  }
}

const colls = a.coll.split(',');
mkdirSync(a['sync-dir'], { recursive: true });
const results = [];
for (const name of colls) {
  const c = collective(name);
  // Calls 1-10 are timed one by one; each later bucket as one span, prepare
  // and check included (a few ns a call), so that the clock is read only at
  // its ends: every reading makes a BigInt, and the young-generation
  // collections that garbage brings would be charged to the calls.
  const ns = new Float64Array(10);
  const late = rendezvous(name);
  for (let i = 0; i < 10; i++) {
    c.prepare(i);
    const t0 = process.hrtime.bigint();
    c.call();
    ns[i] = Number(process.hrtime.bigint() - t0);
    c.check(i);
  }
  const spans = [];
  for (const [lo, hi] of BUCKETS.filter(Array.isArray)) {
    const t0 = process.hrtime.bigint();
    for (let i = lo - 1; i < hi; i++) {
      c.prepare(i);
      c.call();
      c.check(i);
    }
    spans.push(Number(process.hrtime.bigint() - t0) / (hi - lo + 1));
  }
  const blocks = [];
  for (let b = 0; b < BLOCKS; b++) {
    const lo = FIRST_BLOCK + b * BLOCK;
    const t0 = process.hrtime.bigint();
    for (let i = lo - 1; i < lo - 1 + BLOCK; i++) {
      c.prepare(i);
      c.call();
      c.check(i);
    }
    blocks.push(Number(process.hrtime.bigint() - t0) / BLOCK);
  }
  results.push([...ns.subarray(0, 10), ...spans, ...blocks].map((x) => x / 1000).concat(late));
}

// [buckets..., blocks..., late] per collective, then importMs, initMs (the init() call), startToInitMs
const K = BUCKETS.length + BLOCKS + 1;
const mineAll = Float64Array.from([...results.flat(), tInit - tImport, initEnd - tInit, initEnd]);
const all = new Float64Array(mineAll.length * size);
world.allgather(mineAll, all);
if (rank === 0) {
  rmSync(a['sync-dir'], { recursive: true, force: true });  // every rank is past its rendezvous
  const at = (r, j) => all[r * mineAll.length + j];
  const over = (f, j) => f(...Array.from({ length: size }, (_, r) => at(r, j)));
  const init = colls.length * K;
  const round = (x) => Number(x.toPrecision(4));
  const nb = BUCKETS.length;
  colls.forEach((coll, k) => {
    const blocks = Array.from({ length: BLOCKS }, (_, b) => over(Math.max, k * K + nb + b));
    const tens = blocks.slice(0, TENS_OF_K).reduce((x, y) => x + y, 0) / TENS_OF_K;
    console.log(JSON.stringify({
      coll, np: size,
      us: [...BUCKETS.map((_, j) => round(over(Math.max, k * K + j))), round(tens)],
      minUs: BUCKETS.map((_, j) => round(over(Math.min, k * K + j))),
      block: BLOCK, firstBlock: FIRST_BLOCK, blocks: blocks.map(round),
      lateUs: round(over(Math.max, k * K + K - 1)),
      importMs: round(over(Math.max, init)), initMs: round(over(Math.max, init + 1)), startToInitMs: round(over(Math.max, init + 2)),
    }));
  });
}
mpi.finalize();
