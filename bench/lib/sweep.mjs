// The OSU-style sweep shared by every JavaScript implementation (nodempi, the
// SharedArrayBuffer baseline, the IPC baseline). bench/ompi/osu_coll.c runs
// the same scheme in C against Open MPI, bench/mpi4py/osu_coll.py in Python
// over mpi4py; keep the three in step.
//
// Per (collective, size), on every rank:
//   1. correctness: receive buffers filled with NaN, one call, every element
//      checked against the expected value (a wrong result throws, and the
//      job exits non-zero);
//   2. probe: one more call; rank 0's wall time is broadcast;
//   3. warm-up: batches of 1, 2, 4, ... untimed calls until warmMs has passed
//      on rank 0 (at most maxWarm calls; an untimed bcast after each batch
//      carries rank 0's decision). A fixed OSU-style count (200) is far too
//      short for V8 to optimise the JavaScript call path of a sub-microsecond
//      operation, so the warm-up is timed. The per-call time c (the lower of
//      the probe and the last batch's mean) is broadcast. The first size of
//      each collective warms up for firstWarmMs (default 200 ms) instead: V8
//      tiers a collective's call path up only after many calls (bench/README.md,
//      "Measurements behind the code");
//   4. timed: N = clamp(targetMs / c, minIters, maxIters) calls, run in up to
//      8 batches so that rank 0 can stop early (an untimed bcast after each
//      batch) when the point has taken 4x targetMs already. Each call is
//      timed on its own (performance.now() before and after) and followed by
//      an untimed barrier of the same implementation, as OSU does, so a
//      rooted collective cannot run ahead into the next iteration. barrier
//      itself is timed as one loop of N back-to-back barriers (osu_barrier);
//   5. the receive buffers of the last timed call are checked again;
//   6. each rank's average (sum of timed calls / N), rank 0 gathers them and
//      reports the max over ranks (min and mean are kept too).
// Data: Float64Array, Op.SUM, root 0. `bytes` is the size of one rank's
// message: the whole buffer for bcast/reduce/allreduce/scan/exscan, one
// rank's block for gather/scatter/allgather/alltoall, their v and w forms
// and reduceScatter/reduceScatterBlock (whose send buffer is `size` blocks).
// The v and w forms use equal counts for every rank and explicit
// displacements (packed in rank order), so they move exactly the bytes of
// their plain counterparts and the difference is the price of generality.
import { performance } from 'node:perf_hooks';
import { parseOptions } from './jobs.mjs';

export const COLLS = ['barrier', 'bcast', 'reduce', 'allreduce', 'gather', 'scatter', 'allgather', 'alltoall'];
// Added by the "complete collective API" issue. Kept apart from COLLS so that
// the default run, and the table in bench/README.md, stay comparable with
// earlier runs; bench/run.mjs runs these with --set v.
export const VCOLLS = ['gatherv', 'scatterv', 'allgatherv', 'alltoallv', 'alltoallw', 'reduceScatter', 'reduceScatterBlock',
  'scan', 'exscan'];
export const ALL_COLLS = [...COLLS, ...VCOLLS];
export const SIZES = [8, 64, 1024, 16384, 262144, 1048576, 4194304, 16777216];

const SWEEP_OPTIONS = {
  colls: { type: 'string' }, sizes: { type: 'string' }, 'warm-ms': { type: 'string' }, 'first-warm-ms': { type: 'string' },
  'target-ms': { type: 'string' }, 'max-warm': { type: 'string' }, 'min-iters': { type: 'string' }, 'max-iters': { type: 'string' },
  tight: { type: 'string' },
};
const SWEEP_USAGE = `sweep options (the same as bench/ompi/osu_coll.c's):
  --colls a,b  --sizes 8,1024  --warm-ms W  --first-warm-ms W  --target-ms T  --max-warm N  --min-iters N  --max-iters N
  --tight 1    every collective timed as barrier is: a loop of back-to-back calls, no barrier between them`;

/**
 * Sweep parameters as passed on every job's command line (same flags as
 * osu_coll.c). `extra` adds a job script's own options (parseArgs's table);
 * their values come back in `extra`.
 */
export function parseSweepArgs(argv, name = 'sweep', extra = {}, extraUsage = '') {
  const v = parseOptions(name, `usage: ${name} [options]\n${extraUsage}${SWEEP_USAGE}`, { ...SWEEP_OPTIONS, ...extra }, argv);
  const num = (x, d) => (x === undefined ? d : Number(x));
  const o = {
    colls: v.colls === undefined ? COLLS : v.colls.split(','), sizes: v.sizes === undefined ? SIZES : v.sizes.split(',').map(Number),
    warmMs: num(v['warm-ms'], 50), firstWarmMs: num(v['first-warm-ms'], 200), targetMs: num(v['target-ms'], 150),
    maxWarm: num(v['max-warm'], 1000000), minIters: num(v['min-iters'], 2), maxIters: num(v['max-iters'], 200000),
    tight: v.tight === '1',
  };
  o.extra = Object.fromEntries(Object.keys(extra).map((k) => [k, v[k]]));
  for (const c of o.colls) if (!ALL_COLLS.includes(c)) throw new Error(`unknown collective ${c}`);
  return o;
}

export function sweepArgv(o) {
  return ['--colls', o.colls.join(','), '--sizes', o.sizes.join(','), '--warm-ms', String(o.warmMs), '--first-warm-ms', String(o.firstWarmMs),
    '--target-ms', String(o.targetMs), '--max-warm', String(o.maxWarm), '--min-iters', String(o.minIters),
    '--max-iters', String(o.maxIters), ...(o.tight ? ['--tight', '1'] : [])];
}

// ---- data patterns (small integers, so every SUM is exact in doubles) ----
const val = (r, i) => (r + 1) * 65536 + (i & 65535);
const sumVal = (n, i) => 65536 * (n * (n + 1) / 2) + n * (i & 65535);
const a2aVal = (s, d, n, i) => (s * n + d + 1) * 65536 + (i & 65535);
// block d of the sum over s of a2aVal(s, d, n, i): what rank d gets from reduceScatter
const rsVal = (d, n, i) => 65536 * (n * (n * (n - 1) / 2) + n * (d + 1)) + n * (i & 65535);
// sum over s <= r (scan) and s < r (exscan) of val(s, i)
const scanVal = (r, i) => 65536 * ((r + 1) * (r + 2) / 2) + (r + 1) * (i & 65535);
const exscanVal = (r, i) => 65536 * (r * (r + 1) / 2) + r * (i & 65535);

/** Equal counts and packed displacements, made once per point (a caller would not rebuild them per call). */
function vLayout(b, count, n) {
  b.counts = new Array(n).fill(count);
  b.displs = b.counts.map((_, r) => r * count);
  b.byteDispls = b.displs.map((d) => d * 8);
}

/** Buffers for one point. count = doubles per rank message. */
export function makeBuffers(coll, count, rank, n) {
  const b = { send: null, recv: null };
  switch (coll) {
    case 'barrier': break;
    case 'bcast':
      b.recv = new Float64Array(count); // the one buffer
      break;
    case 'reduce': case 'allreduce': case 'scan': case 'exscan':
      b.send = new Float64Array(count);
      for (let i = 0; i < count; i++) b.send[i] = val(rank, i);
      b.recv = new Float64Array(count);
      break;
    case 'gather': case 'allgather': case 'gatherv': case 'allgatherv':
      b.send = new Float64Array(count);
      for (let i = 0; i < count; i++) b.send[i] = val(rank, i);
      b.recv = new Float64Array(count * n);
      break;
    case 'scatter': case 'scatterv':
      if (rank === 0) {
        b.send = new Float64Array(count * n);
        for (let d = 0; d < n; d++) for (let i = 0; i < count; i++) b.send[d * count + i] = val(d, i);
      }
      b.recv = new Float64Array(count);
      break;
    case 'alltoall': case 'alltoallv': case 'alltoallw':
      b.send = new Float64Array(count * n);
      for (let d = 0; d < n; d++) for (let i = 0; i < count; i++) b.send[d * count + i] = a2aVal(rank, d, n, i);
      b.recv = new Float64Array(count * n);
      break;
    case 'reduceScatter': case 'reduceScatterBlock':
      b.send = new Float64Array(count * n);
      for (let d = 0; d < n; d++) for (let i = 0; i < count; i++) b.send[d * count + i] = a2aVal(rank, d, n, i);
      b.recv = new Float64Array(count);
      break;
    default: throw new Error(coll);
  }
  if (VCOLLS.includes(coll)) vLayout(b, count, n);
  return b;
}

/** Before the correctness call: poison what the collective must overwrite. */
export function poison(coll, b, rank) {
  if (coll === 'bcast') {
    if (rank === 0) { for (let i = 0; i < b.recv.length; i++) b.recv[i] = val(0, i); } else b.recv.fill(NaN);
  } else if (b.recv) b.recv.fill(NaN);
}

/** Returns null when right, else a description of the first wrong element. */
export function check(coll, b, count, rank, n) {
  const bad = (i, got, want) => `${coll} ${count * 8} B, rank ${rank}: element ${i} is ${got}, expected ${want}`;
  switch (coll) {
    case 'barrier': return null;
    case 'bcast':
      for (let i = 0; i < count; i++) if (b.recv[i] !== val(0, i)) return bad(i, b.recv[i], val(0, i));
      return null;
    case 'reduce':
      if (rank !== 0) return null;
    // fall through
    case 'allreduce':
      for (let i = 0; i < count; i++) if (b.recv[i] !== sumVal(n, i)) return bad(i, b.recv[i], sumVal(n, i));
      return null;
    case 'gather': case 'gatherv':
      if (rank !== 0) return null;
    // fall through
    case 'allgather': case 'allgatherv':
      for (let r = 0; r < n; r++) {
        for (let i = 0; i < count; i++) {
          const got = b.recv[r * count + i];
          if (got !== val(r, i)) return bad(r * count + i, got, val(r, i));
        }
      }
      return null;
    case 'scatter': case 'scatterv':
      for (let i = 0; i < count; i++) if (b.recv[i] !== val(rank, i)) return bad(i, b.recv[i], val(rank, i));
      return null;
    case 'reduceScatter': case 'reduceScatterBlock':
      for (let i = 0; i < count; i++) if (b.recv[i] !== rsVal(rank, n, i)) return bad(i, b.recv[i], rsVal(rank, n, i));
      return null;
    case 'scan':
      for (let i = 0; i < count; i++) if (b.recv[i] !== scanVal(rank, i)) return bad(i, b.recv[i], scanVal(rank, i));
      return null;
    case 'exscan':
      // rank 0's receive buffer is undefined in MPI; not checked (Open MPI gets the same)
      if (rank === 0) return null;
      for (let i = 0; i < count; i++) if (b.recv[i] !== exscanVal(rank, i)) return bad(i, b.recv[i], exscanVal(rank, i));
      return null;
    case 'alltoall': case 'alltoallv': case 'alltoallw':
      for (let s = 0; s < n; s++) {
        for (let i = 0; i < count; i++) {
          const got = b.recv[s * count + i], want = a2aVal(s, rank, n, i);
          if (got !== want) return bad(s * count + i, got, want);
        }
      }
      return null;
    default: throw new Error(coll);
  }
}

const clamp = (x, lo, hi) => Math.min(hi, Math.max(lo, x));

/**
 * Runs the sweep on one rank. `impl` is {rank, size, sync, barrier, bcast(buf),
 * reduce(send, recv), allreduce(send, recv), gather(send, recv),
 * scatter(send, recv), allgather(send, recv), alltoall(send, recv)}; root 0
 * everywhere; `recv`/`send` may be null where MPI ignores them. With
 * sync=false every method returns a Promise. `emit(obj)` is called on rank 0
 * with one result per point.
 * The collectives of VCOLLS, needed only when asked for: gatherv, scatterv,
 * allgatherv, alltoallv (send, recv, counts, displs), alltoallw(send, recv,
 * counts, byteDispls), reduceScatter(send, recv, counts),
 * reduceScatterBlock, scan, exscan (send, recv); counts and displacements in
 * doubles, the same arrays on every call of a point.
 */
export async function runSweep(impl, opts, emit, label) {
  const { rank, size: n } = impl;
  const aw = impl.sync ? (x) => x : async (x) => await x;
  const bcastNum = async (x) => { const a = new Float64Array([x]); await aw(impl.bcast(a)); return a[0]; };
  const gatherNum = async (x) => {
    const r = rank === 0 ? new Float64Array(n) : null;
    await aw(impl.gather(new Float64Array([x]), r));
    return r;
  };
  const callOf = (coll, b) => {
    switch (coll) {
      case 'barrier': return () => impl.barrier();
      case 'bcast': return () => impl.bcast(b.recv);
      case 'scatter': return () => impl.scatter(b.send, b.recv);
      case 'gather': case 'reduce': return () => impl[coll](b.send, rank === 0 ? b.recv : null);
      case 'gatherv': return () => impl.gatherv(b.send, rank === 0 ? b.recv : null, b.counts, b.displs);
      case 'scatterv': return () => impl.scatterv(b.send, b.recv, b.counts, b.displs);
      case 'allgatherv': case 'alltoallv': return () => impl[coll](b.send, b.recv, b.counts, b.displs);
      case 'alltoallw': return () => impl.alltoallw(b.send, b.recv, b.counts, b.byteDispls);
      case 'reduceScatter': return () => impl.reduceScatter(b.send, b.recv, b.counts);
      default: return () => impl[coll](b.send, b.recv);
    }
  };
  // wall time of k calls, each followed by a barrier unless backToBack
  // (barrier itself, and --tight); returns [wall seconds, sum of timed calls
  // in seconds]
  const loopSync = (call, k, backToBack) => {
    const bar = impl.barrier;
    if (backToBack) {
      const t0 = performance.now();
      for (let i = 0; i < k; i++) call();
      const t = performance.now() - t0;
      return [t / 1e3, t / 1e3];
    }
    let acc = 0;
    const w0 = performance.now();
    for (let i = 0; i < k; i++) {
      const t0 = performance.now();
      call();
      acc += performance.now() - t0;
      bar();
    }
    return [(performance.now() - w0) / 1e3, acc / 1e3];
  };
  const loopAsync = async (call, k, backToBack) => {
    if (backToBack) {
      const t0 = performance.now();
      for (let i = 0; i < k; i++) await call();
      const t = performance.now() - t0;
      return [t / 1e3, t / 1e3];
    }
    let acc = 0;
    const w0 = performance.now();
    for (let i = 0; i < k; i++) {
      const t0 = performance.now();
      await call();
      acc += performance.now() - t0;
      await impl.barrier();
    }
    return [(performance.now() - w0) / 1e3, acc / 1e3];
  };
  const loop = impl.sync ? loopSync : loopAsync;

  for (const coll of opts.colls) {
    if (typeof impl[coll] !== 'function') throw new Error(`${label}: this implementation has no ${coll}`);
    const sizes = coll === 'barrier' ? [0] : opts.sizes;
    for (const bytes of sizes) {
      const count = bytes / 8;
      const b = makeBuffers(coll, count, rank, n);
      const call = callOf(coll, b);
      // timed back to back, as barrier always is
      const backToBack = coll === 'barrier' || opts.tight;
      // 1. correctness
      poison(coll, b, rank);
      await aw(impl.barrier());
      await aw(call());
      let err = check(coll, b, count, rank, n);
      if (err) throw new Error(`${label}: WRONG RESULT: ${err}`);
      await aw(impl.barrier());
      // 2. probe
      const [tProbe] = await loop(call, 1, backToBack);
      const probe = await bcastNum(tProbe);
      // 3. warm-up: batches of 1, 2, 4, ... calls until warmMs has passed on
      //    rank 0 (an untimed bcast after each batch carries the decision), so
      //    that a JIT has time to optimise the call path whatever the size;
      //    the last, largest batch gives the per-call time c
      const warmMs = bytes === sizes[0] ? opts.firstWarmMs : opts.warmMs;
      let warm = 0, k = 1, tLast = probe;
      await aw(impl.barrier());
      const tw0 = performance.now();
      for (;;) {
        const [w] = await loop(call, k, backToBack);
        warm += k;
        tLast = w / k;
        const more = rank === 0 && performance.now() - tw0 < warmMs && warm < opts.maxWarm;
        if (!(await bcastNum(more ? 1 : 0))) break;
        k = Math.min(2 * k, opts.maxWarm - warm);
      }
      // min(): one slow outlier in the warm-up must not shrink the timed loop
      const per = await bcastNum(Math.min(tProbe, tLast));
      // 4. timed
      const planned = clamp(Math.round(opts.targetMs / 1e3 / Math.max(per, 1e-9)), opts.minIters, opts.maxIters);
      // in up to 8 batches: if the machine got slower since the calibration
      // (other work), rank 0 stops after the batch that exceeds 4x the budget
      // (an untimed bcast between batches carries the decision)
      const batch = Math.max(1, Math.ceil(planned / 8));
      let iters = 0, acc = 0, stopped = false;
      await aw(impl.barrier());
      const tStart = performance.now();
      while (iters < planned) {
        const k = Math.min(batch, planned - iters);
        const [, a] = await loop(call, k, backToBack);
        acc += a;
        iters += k;
        if (iters < planned) {
          const over = rank === 0 && performance.now() - tStart > 4 * opts.targetMs && iters >= opts.minIters;
          if (await bcastNum(over ? 1 : 0)) { stopped = true; break; }
        }
      }
      // 5. check again
      err = check(coll, b, count, rank, n);
      if (err) throw new Error(`${label}: WRONG RESULT after the timed loop: ${err}`);
      // 6. max over ranks
      const all = await gatherNum(acc / iters * 1e6);
      if (rank === 0) {
        let mx = -Infinity, mn = Infinity, sum = 0;
        for (const v of all) { mx = Math.max(mx, v); mn = Math.min(mn, v); sum += v; }
        emit({ coll, bytes, us: mx, min_us: mn, avg_us: sum / n, iters, warmup: warm + 1, ...(stopped ? { stopped } : {}) });
      }
    }
  }
}
