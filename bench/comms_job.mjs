// One nodempi job of the communicators benchmark (bench/comms.mjs): run as
//   node dist/cli.js -n N bench/comms_job.mjs [--run I] [--warm-ms W] [--target-ms T]
//       [--min-iters M] [--max-iters X] [--coll-warm-ms W] [--coll-target-ms T]
// Prints one JSON line per result (section "create", "pool" or "latency")
// and a final {"section":"done"} from world rank 0.
//
// Creation: for dup(), split(rank % 2, rank), split(0, -rank) and
// create(world.group()) (in an order rotated by --run), on every rank:
//   1. verify a few times: size, rank, member order (allgather of world
//      ranks) and an allreduce on the new communicator, all exact;
//   2. warm-up: batches of 1, 2, 4, ... create+free pairs until W ms have
//      passed on rank 0 (its decision travels by an untimed bcast);
//   3. "pair": M' = clamp(T / per-pair time, M, X) iterations of
//      [timed: create, free] [untimed world barrier];
//   4. "create" and "free" apart: M' iterations of [timed: create] [barrier]
//      [timed: free] [barrier], so that each starts with the ranks in step;
//   5. per-rank mean, reported as the max over ranks (min and mean kept).
// M defaults to 2000; with the pool-capacity checks before and after, a
// communicator that did not go back to the pool makes the job fail.
// "pool": as many dups held at once as the pool allows (all freed, then one
// more dup), before and after the loops: thousands of create/free cycles
// must leave the capacity unchanged.
//
// Latency: the sweep of bench/lib/sweep.mjs (OSU style, results checked
// exactly) per point on COMM_WORLD, on world.dup(), on world.split(0, rank)
// (same members, same order), on COMM_WORLD again (an A/A pair that shows
// the noise floor), on world.split(rank % 2, rank) for reference (two
// halves running at once; at 2 ranks each half is a single rank), on the
// 2048th of 2048 live dups, and rotating over those 2048 (each call on the
// next one). Variants
// run interleaved per point, in an order rotated by point and by --run, so
// drift in the machine's load spreads over all of them.
import { performance } from 'node:perf_hooks';
import { parseOptions } from './lib/jobs.mjs';
import { runSweep } from './lib/sweep.mjs';

const mpi = await import(new URL('../dist/index.js', import.meta.url).href);
const world = mpi.init();
const { rank, size: n } = world;
const SUM = mpi.Op.SUM;

const USAGE = `usage: node dist/cli.js -n N bench/comms_job.mjs [options]   (bench/comms.mjs runs it)
  --run R  --warm-ms W  --target-ms T  --min-iters N  --max-iters N  --coll-warm-ms W  --coll-target-ms T`;

function parse(argv) {
  const defaults = { run: 0, warmMs: 50, targetMs: 150, minIters: 2000, maxIters: 20000, collWarmMs: 50, collTargetMs: 150 };
  const flag = (key) => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
  const v = parseOptions('comms_job', USAGE, Object.fromEntries(Object.keys(defaults).map((k) => [flag(k), { type: 'string' }])), argv);
  return Object.fromEntries(Object.entries(defaults).map(([k, d]) => [k, v[flag(k)] === undefined ? d : Number(v[flag(k)])]));
}
const opts = parse(process.argv.slice(2));
const emit = (obj) => console.log(JSON.stringify({ impl: 'nodempi', np: n, ...obj }));

const bcastNum = (x) => {
  const a = Float64Array.of(x);
  world.bcast(a, 0);
  return a[0];
};
/** Max, min and mean over the world's ranks of one number per rank; on rank 0 only. */
const overRanks = (x) => {
  const all = rank === 0 ? new Float64Array(n) : null;
  world.gather(Float64Array.of(x), all, 0);
  if (rank !== 0) return null;
  let mx = -Infinity, mn = Infinity, sum = 0;
  for (const v of all) { mx = Math.max(mx, v); mn = Math.min(mn, v); sum += v; }
  return { us: mx, min_us: mn, avg_us: sum / n };
};

// ------------------------------------------------------------------ creation
const worldGroup = world.group();
const KINDS = [
  // expect: [size, rank, world ranks in order] of the communicator this rank lands in
  { kind: 'dup', make: () => world.dup(), expect: () => range(n) },
  {
    kind: 'split(rank%2,rank)', make: () => world.split(rank % 2, rank),
    expect: () => range(n).filter((r) => r % 2 === rank % 2),
  },
  { kind: 'split(0,-rank)', make: () => world.split(0, -rank), expect: () => range(n).reverse() },
  { kind: 'create(group)', make: () => world.create(worldGroup), expect: () => range(n) },
];
function range(k) { return Array.from({ length: k }, (_, i) => i); }

function verify(k) {
  const members = k.expect();
  for (let t = 0; t < 3; t++) {
    const c = k.make();
    const where = `${k.kind}, world rank ${rank}`;
    if (c.size !== members.length || c.rank !== members.indexOf(rank)) {
      throw new Error(`WRONG RESULT: ${where}: size ${c.size} rank ${c.rank}, expected ${members.length} ${members.indexOf(rank)}`);
    }
    const order = new Int32Array(c.size);
    c.allgather(Int32Array.of(rank), order);
    if (order.join() !== members.join()) throw new Error(`WRONG RESULT: ${where}: members ${order.join()}, expected ${members.join()}`);
    const sum = new Float64Array(1);
    c.allreduce(Float64Array.of(rank + 1), sum, SUM);
    const want = members.reduce((a, r) => a + r + 1, 0);
    if (sum[0] !== want) throw new Error(`WRONG RESULT: ${where}: allreduce gave ${sum[0]}, expected ${want}`);
    c.free();
  }
}

// Wall time of k create+free pairs, each followed by an untimed barrier.
function pairs(make, k) {
  let acc = 0;
  for (let i = 0; i < k; i++) {
    const t0 = performance.now();
    make().free();
    acc += performance.now() - t0;
    world.barrier();
  }
  return acc;
}

function timeCreation(k) {
  verify(k);
  // warm-up, timed rather than counted (see bench/lib/sweep.mjs: V8
  // optimises a call path only after many calls)
  world.barrier();
  const tw0 = performance.now();
  let warm = 0, b = 1, per = Infinity;
  for (;;) {
    per = Math.min(per, pairs(k.make, b) / b);
    warm += b;
    const more = rank === 0 && performance.now() - tw0 < opts.warmMs;
    if (!bcastNum(more ? 1 : 0)) break;
    b *= 2;
  }
  per = bcastNum(per);
  const iters = Math.min(opts.maxIters, Math.max(opts.minIters, Math.round(opts.targetMs / Math.max(per, 1e-6))));

  world.barrier();
  const pair = pairs(k.make, iters);

  let tc = 0, tf = 0;
  world.barrier();
  for (let i = 0; i < iters; i++) {
    let t0 = performance.now();
    const c = k.make();
    tc += performance.now() - t0;
    world.barrier();
    t0 = performance.now();
    c.free();
    tf += performance.now() - t0;
    world.barrier();
  }
  for (const [mode, ms] of [['pair', pair], ['create', tc], ['free', tf]]) {
    const r = overRanks(ms / iters * 1e3);
    if (rank === 0) emit({ section: 'create', kind: k.kind, mode, ...r, iters, warmup: warm });
  }
}

// How many communicators can exist at once: measured before and after the
// creation loops, so a context that did not go back to the pool shows as a
// smaller number afterwards (whatever the pool's size).
function poolCapacity() {
  const held = [];
  try {
    for (;;) held.push(world.dup());
  } catch (e) {
    if (e.code !== 'ERR_OTHER') throw e;
  }
  for (const c of held) c.free();
  const again = world.dup();
  again.free();
  return held.length;
}

// ------------------------------------------------------------------ latency
const POINTS = [['barrier', 0], ['allreduce', 8], ['allreduce', 1024], ['allreduce', 1048576], ['bcast', 8], ['bcast', 1048576]];

function implOf(c) {
  return {
    rank: c.rank,
    size: c.size,
    sync: true,
    barrier: () => c.barrier(),
    bcast: (buf) => c.bcast(buf, 0),
    allreduce: (send, recv) => c.allreduce(send, recv, SUM),
    gather: (send, recv) => c.gather(send, recv, 0),
  };
}

// Every call on the next of `comms`, in turn: with more communicators than
// a rank keeps slot sets warm for, each call binds one again.
function rotating(comms) {
  let i = 0;
  const next = () => comms[i++ % comms.length];
  return {
    rank, size: n, sync: true,
    barrier: () => world.barrier(),
    bcast: (buf) => next().bcast(buf, 0),
    allreduce: (send, recv) => next().allreduce(send, recv, SUM),
    gather: (send, recv) => next().gather(send, recv, 0),
  };
}

async function latency() {
  const dup = world.dup();
  const same = world.split(0, rank);
  const half = world.split(rank % 2, rank);
  if (same.compare(world) !== mpi.CONGRUENT || dup.compare(world) !== mpi.CONGRUENT) {
    throw new Error('WRONG RESULT: the dup or the split(0, rank) is not congruent with COMM_WORLD');
  }
  // 2047 communicators alive and each used once, then a 2048th.
  const crowd = range(2047).map(() => world.dup());
  for (const c of crowd) c.allreduce(Float64Array.of(1), new Float64Array(1), SUM);
  const late = world.dup();
  crowd.push(late);
  const variants = [
    ['world', world], ['dup', dup], ['split', same], ['world-again', world], ['half', half], ['dup-2048th', late],
    ['rotating', null],
  ];
  const implFor = (variant, c) => (variant === 'rotating' ? rotating(crowd) : implOf(c));
  const sweepOpts = (coll, bytes, warmMs, targetMs) => ({
    colls: [coll], sizes: [bytes], warmMs, firstWarmMs: warmMs, targetMs,
    maxWarm: 1000000, minIters: 2, maxIters: 200000,
  });
  // One untimed pass on COMM_WORLD first, so that whichever variant comes
  // first does not pay for V8 optimising the collectives' call paths.
  for (const [coll, bytes] of POINTS) {
    await runSweep(implOf(world), sweepOpts(coll, bytes, 100, 20), () => {}, `nodempi rank ${rank} (warm-up)`);
  }
  for (let p = 0; p < POINTS.length; p++) {
    const [coll, bytes] = POINTS[p];
    const rot = (p + opts.run) % variants.length;
    for (const [variant, c] of [...variants.slice(rot), ...variants.slice(0, rot)]) {
      world.barrier();
      const extra = variant === 'half' ? { color: rank % 2, commSize: c.size } : { commSize: n };
      await runSweep(implFor(variant, c), sweepOpts(coll, bytes, opts.collWarmMs, opts.collTargetMs),
        (r) => emit({ section: 'latency', variant, ...extra, ...r }), `nodempi rank ${rank} ${variant}`);
    }
  }
  world.barrier();
  for (const c of [dup, same, half, ...crowd]) c.free();
}

try {
  // rotated by --run, so that no kind always pays for being measured first
  const r = opts.run % KINDS.length;
  const before = poolCapacity();
  for (const k of [...KINDS.slice(r), ...KINDS.slice(0, r)]) timeCreation(k);
  const after = poolCapacity();
  if (rank === 0) emit({ section: 'pool', before, after });
  await latency();
  world.barrier();
  if (rank === 0) emit({ section: 'done' });
} catch (e) {
  console.error(e && e.stack ? e.stack : String(e));
  mpi.abort(3);
}
mpi.finalize();
