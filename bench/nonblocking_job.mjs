// One job of the nonblocking benchmark (bench/nonblocking.mjs runs it):
//   node dist/cli.js -n N bench/nonblocking_job.mjs [flags]
// Every rank runs three sections over COMM_WORLD; rank 0 prints one JSON line
// per result (`{"section": ...}`), and the driver takes medians across jobs.
//
// 1. latency: allreduce (Float64Array, SUM) at 8 B, 1 KiB, 1 MiB and bcast at
//    8 B, each called in six forms: blocking; i*().wait(); await i*(); a
//    test() polling loop; persistent start().wait(); await start().
//    OSU-style: every call timed on its own, an untimed blocking barrier after
//    it, per-rank mean, max over ranks. The forms of one point run
//    interleaved (rounds of one batch per form, order rotated each round), so
//    load that comes and goes on a shared machine hits them alike and the
//    difference nonblocking - blocking stays meaningful.
// 2. overlap (osu_iallreduce style): a 16 MiB iallreduce awaited alone
//    (t_coll); a pure-JS compute loop sized to about t_coll (t_comp); and the
//    two together (t_both): start the collective, compute in chunks, await it.
//    With and without yielding to the event loop between chunks, and the
//    same with a persistent request. Per rank the median over repetitions.
// 3. late peer: rank 1 sleeps (setTimeout) before joining a collective while
//    the others wait for it; the process's CPU time over the wait tells
//    whether awaiting keeps a core busy.
// Every result is checked element by element (receive buffers poisoned with
// NaN before each batch), so a path that does nothing cannot look fast.
import { readFileSync, readdirSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { parseOptions } from './lib/jobs.mjs';
import { check, makeBuffers, poison } from './lib/sweep.mjs';

const mpi = await import(new URL('../dist/index.js', import.meta.url).href);
const world = mpi.init();
const SUM = mpi.Op.SUM;
const { rank, size: n } = world;

function options(argv) {
  const o = {
    targetMs: 150, warmMs: 50, firstWarmMs: 200, rounds: 8, maxIters: 200000,
    overlapBytes: 16 * 1048576, overlapReps: 20, chunkMs: 2, lateMs: 200, lateReps: 2,
    sections: ['latency', 'overlap', 'late'],
  };
  const numeric = {
    'target-ms': 'targetMs', 'warm-ms': 'warmMs', 'first-warm-ms': 'firstWarmMs', rounds: 'rounds', 'overlap-bytes': 'overlapBytes',
    'overlap-reps': 'overlapReps', 'chunk-ms': 'chunkMs', 'late-ms': 'lateMs', 'late-reps': 'lateReps',
  };
  const v = parseOptions('nonblocking_job', `usage: node dist/cli.js -n N bench/nonblocking_job.mjs [options]   (bench/nonblocking.mjs runs it)
  ${Object.keys(numeric).map((f) => `--${f} N`).join('  ')}  --sections latency,overlap,late`,
  { ...Object.fromEntries(Object.keys(numeric).map((f) => [f, { type: 'string' }])), sections: { type: 'string' } }, argv);
  for (const [f, k] of Object.entries(numeric)) if (v[f] !== undefined) o[k] = Number(v[f]);
  if (v.sections !== undefined) o.sections = v.sections.split(',');
  return o;
}

const emit = (obj) => { if (rank === 0) console.log(JSON.stringify({ np: n, ...obj })); };
const fail = (msg) => { throw new Error(`rank ${rank}: WRONG RESULT: ${msg}`); };

// Decisions and calibrations are rank 0's, so that every rank runs the same
// number of calls (a mismatch would hang the job).
function bcastNum(x) {
  const a = new Float64Array([x]);
  world.bcast(a, 0);
  return a[0];
}
function gatherVec(xs) {
  const recv = rank === 0 ? new Float64Array(xs.length * n) : null;
  world.gather(Float64Array.from(xs), recv, 0);
  if (rank !== 0) return null;
  const rows = [];
  for (let r = 0; r < n; r++) rows.push(Array.from(recv.subarray(r * xs.length, (r + 1) * xs.length)));
  return rows;
}
const stats = (xs) => ({ max: Math.max(...xs), min: Math.min(...xs), mean: xs.reduce((a, b) => a + b, 0) / xs.length });
const median = (xs) => {
  const s = xs.slice().sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const tick = () => new Promise(setImmediate);

// ------------------------------------------------------------------ 1. latency
const FORMS = ['blocking', 'wait', 'await', 'test', 'pstart_wait', 'pstart_await'];
const ASYNC_FORMS = new Set(['await', 'pstart_await']);

function formCalls(coll, b, preq) {
  const blocking = coll === 'bcast' ? () => world.bcast(b.recv, 0) : () => world.allreduce(b.send, b.recv, SUM);
  const start = coll === 'bcast' ? () => world.ibcast(b.recv, 0) : () => world.iallreduce(b.send, b.recv, SUM);
  return {
    blocking,
    wait: () => start().wait(),
    await: () => start(),                 // the async loop awaits the Request
    test: () => { const r = start(); while (!r.test()); },
    pstart_wait: () => preq.start().wait(),
    pstart_await: () => preq.start(),
  };
}

// k calls of one form, each timed alone and followed by an untimed barrier.
// Returns [wall ms, sum of the timed calls in ms].
function loopSync(call, k) {
  let acc = 0;
  const w0 = performance.now();
  for (let i = 0; i < k; i++) {
    const t0 = performance.now();
    call();
    acc += performance.now() - t0;
    world.barrier();
  }
  return [performance.now() - w0, acc];
}
async function loopAsync(call, k) {
  let acc = 0;
  const w0 = performance.now();
  for (let i = 0; i < k; i++) {
    const t0 = performance.now();
    await call();
    acc += performance.now() - t0;
    world.barrier();
  }
  return [performance.now() - w0, acc];
}

async function latencyPoint(o, coll, bytes, first) {
  const count = bytes / 8;
  const b = makeBuffers(coll, count, rank, n);
  const preq = coll === 'bcast' ? world.bcastInit(b.recv, 0) : world.allreduceInit(b.send, b.recv, SUM);
  const calls = formCalls(coll, b, preq);
  const run = (form, k) => (ASYNC_FORMS.has(form) ? loopAsync(calls[form], k) : loopSync(calls[form], k));
  // a batch: poison what the call must write, run it, check what it wrote
  const batch = async (form, k) => {
    poison(coll, b, rank);
    world.barrier();
    const r = await run(form, k);
    const err = check(coll, b, count, rank, n);
    if (err) fail(`${form}: ${err}`);
    return r;
  };

  // warm-up per form: batches of 1, 2, 4, ... calls until warm ms have passed
  // on rank 0; V8 optimises a call path only after many calls
  // (bench/lib/sweep.mjs), hence the longer warm-up of the first point
  const warmMs = first ? o.firstWarmMs : o.warmMs;
  const perCall = {};
  for (const form of FORMS) {
    let k = 1, last = Infinity;
    const tw0 = performance.now();
    for (;;) {
      const [w] = await batch(form, k);
      last = w / k;
      if (!bcastNum(rank === 0 && performance.now() - tw0 < warmMs ? 1 : 0)) break;
      k *= 2;
    }
    perCall[form] = bcastNum(last);
  }

  // timed: `rounds` rounds, each one batch per form sized to targetMs/rounds
  const per = Object.fromEntries(FORMS.map((f) => [f, Math.max(1, Math.min(o.maxIters,
    Math.round(o.targetMs / o.rounds / Math.max(perCall[f], 1e-6))))]));
  const acc = Object.fromEntries(FORMS.map((f) => [f, 0]));
  const iters = Object.fromEntries(FORMS.map((f) => [f, 0]));
  let rounds = 0;
  const t0 = performance.now();
  for (let r = 0; r < o.rounds; r++) {
    for (let j = 0; j < FORMS.length; j++) {
      const form = FORMS[(j + r) % FORMS.length];
      const [, a] = await batch(form, per[form]);
      acc[form] += a;
      iters[form] += per[form];
    }
    rounds++;
    // another job hogging the CPUs would stretch a point without bound
    if (r < o.rounds - 1 && bcastNum(rank === 0 && performance.now() - t0 > 4 * o.targetMs * FORMS.length ? 1 : 0)) break;
  }
  preq.free();
  const rows = gatherVec(FORMS.map((f) => (acc[f] / iters[f]) * 1e3));
  if (rank === 0) {
    FORMS.forEach((form, i) => {
      const s = stats(rows.map((row) => row[i]));
      emit({ section: 'latency', coll, bytes, form, us: s.max, min_us: s.min, avg_us: s.mean, iters: iters[form],
        ...(rounds < o.rounds ? { rounds } : {}) });
    });
  }
}

// ------------------------------------------------------------------ 2. overlap
let sink = 0;
// The compute: an integer LCG, all in registers, so it competes for a core,
// not for memory bandwidth, and V8 cannot drop it (the result is kept).
function spin(k) {
  let x = sink | 1;
  for (let i = 0; i < k; i++) x = (Math.imul(x, 1664525) + 1013904223) | 0;
  return x;
}
function computePlain(total, chunk) {
  for (let done = 0; done < total; done += chunk) sink ^= spin(Math.min(chunk, total - done));
}
async function computeYield(total, chunk) {
  for (let done = 0; done < total;) {
    sink ^= spin(Math.min(chunk, total - done));
    done += chunk;
    if (done < total) await tick();   // lets completions (and anything else) run
  }
}

// An I/O-like wait: timers in chunks, the main thread idle in the event loop.
async function ioWait(ms, chunkMs) {
  const end = performance.now() + ms;
  for (let left = ms; left > 0.05; left = end - performance.now()) {
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Math.min(chunkMs, left))));
  }
}

async function overlap(o) {
  const count = o.overlapBytes / 8;
  const b = makeBuffers('allreduce', count, rank, n);
  const preq = world.allreduceInit(b.send, b.recv, SUM);
  const verify = (what) => {
    const err = check('allreduce', b, count, rank, n);
    if (err) fail(`overlap ${what}: ${err}`);
  };

  // compute rate (LCG steps per ms) on this rank: best of a few after JIT warm-up
  for (let i = 0; i < 20; i++) sink ^= spin(100000);
  let best = Infinity;
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    sink ^= spin(2000000);
    best = Math.min(best, performance.now() - t);
  }
  const rate = 2000000 / best;

  // t_coll, first estimate: rank 0's median of a few awaited collectives
  const coll = async () => {
    b.recv.fill(NaN);
    world.barrier();
    const t = performance.now();
    await world.iallreduce(b.send, b.recv, SUM);
    const dt = performance.now() - t;
    verify('alone');
    return dt;
  };
  for (let i = 0; i < 2; i++) await coll();   // first touches of 16 MiB buffers and segments
  const est = [];
  for (let i = 0; i < 5; i++) est.push(await coll());
  const tCollMs = bcastNum(median(est));
  const chunk = Math.max(1, Math.round(o.chunkMs * rate));
  // the best-of rate overestimates a loaded core; one correction from the
  // median of real runs brings t_comp close to t_coll on this rank
  let total = Math.max(1, Math.round(tCollMs * rate));
  const trial = [];
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    computePlain(total, chunk);
    trial.push(performance.now() - t);
  }
  total = Math.max(1, Math.round(total * tCollMs / Math.max(median(trial), 1e-3)));

  // tail: from the end of the compute to completion; near t_coll means the
  // collective made no progress while the main thread computed
  let tail = null;
  const timed = async (what, f) => {
    b.recv.fill(NaN);
    world.barrier();
    const t = performance.now();
    await f();
    const dt = performance.now() - t;
    if (what) verify(what);
    return dt;
  };
  const awaitTail = async (req) => {
    const t = performance.now();
    await req;
    tail = performance.now() - t;
  };
  const kinds = {
    coll: () => coll(),
    comp_plain: () => timed(null, () => computePlain(total, chunk)),
    comp_yield: () => timed(null, () => computeYield(total, chunk)),
    both_yield: () => timed('both_yield', async () => {
      const req = world.iallreduce(b.send, b.recv, SUM);
      await computeYield(total, chunk);
      await awaitTail(req);
    }),
    both_plain: () => timed('both_plain', async () => {
      const req = world.iallreduce(b.send, b.recv, SUM);
      computePlain(total, chunk);
      await awaitTail(req);
    }),
    pboth_yield: () => timed('pboth_yield', async () => {
      preq.start();
      await computeYield(total, chunk);
      await awaitTail(preq);
    }),
    pboth_plain: () => timed('pboth_plain', async () => {
      preq.start();
      computePlain(total, chunk);
      await awaitTail(preq);
    }),
    // Only rank 0 computes: with a core to spare, the progress threads can
    // run the collective while the compute runs.
    comp_half: () => timed(null, () => { if (rank === 0) computePlain(total, chunk); }),
    both_half: () => timed('both_half', async () => {
      const req = world.iallreduce(b.send, b.recv, SUM);
      if (rank === 0) computePlain(total, chunk);
      await awaitTail(req);
    }),
    // Waiting for I/O instead of computing (timers stand in for it).
    io_wait: () => timed(null, () => ioWait(tCollMs, o.chunkMs)),
    both_io: () => timed('both_io', async () => {
      const req = world.iallreduce(b.send, b.recv, SUM);
      await ioWait(tCollMs, o.chunkMs);
      await awaitTail(req);
    }),
  };
  const names = Object.keys(kinds);
  const tails = names.filter((k) => k.includes('both')).map((k) => `${k}_tail`);
  const samples = Object.fromEntries([...names, ...tails].map((k) => [k, []]));
  for (const k of names) await kinds[k]();   // one untimed pass of each
  for (let r = 0; r < o.overlapReps; r++) {
    for (let j = 0; j < names.length; j++) {
      const k = names[(j + r) % names.length];
      tail = null;
      samples[k].push(await kinds[k]());
      if (tail !== null) samples[`${k}_tail`].push(tail);
    }
  }
  preq.free();
  const keys = [...names, ...tails];
  const meds = keys.map((k) => median(samples[k]));
  const rows = gatherVec([...meds, rate, total]);
  if (rank === 0) {
    const perRank = rows.map((row) => Object.fromEntries([...keys, 'rate', 'steps'].map((k, i) => [k, row[i]])));
    const max = Object.fromEntries(keys.map((k, i) => [k, Math.max(...rows.map((row) => row[i]))]));
    emit({ section: 'overlap', bytes: o.overlapBytes, reps: o.overlapReps, chunk_ms: o.chunkMs,
      ms: max, per_rank: perRank, samples_rank0: Object.fromEntries(keys.map((k) => [k, samples[k].map((x) => +x.toFixed(3))])) });
  }
}

// ------------------------------------------------------------------ 3. late peer
// CPU time of each thread of this process in ms, from /proc (10 ms ticks).
function threadCpu() {
  const out = {};
  try {
    for (const tid of readdirSync('/proc/self/task')) {
      const s = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
      out[tid] = (Number(f[11]) + Number(f[12])) * 10;  // utime + stime, USER_HZ = 100
    }
  } catch { /* no /proc */ }
  return out;
}

async function late(o) {
  const LATE = 1;
  const small = makeBuffers('allreduce', 1, rank, n);
  const big = makeBuffers('allreduce', 131072, rank, n);   // 1 MiB: wakes the progress thread at once
  const scenarios = {
    await_iallreduce_8B: async () => { await world.iallreduce(small.send, small.recv, SUM); return small; },
    await_iallreduce_1MiB: async () => { await world.iallreduce(big.send, big.recv, SUM); return big; },
    await_ibarrier: async () => { await world.ibarrier(); return null; },
    await_pstart_8B: async () => { await small.preq.start(); return small; },
    wait_iallreduce_8B: async () => { world.iallreduce(small.send, small.recv, SUM).wait(); return small; },
    blocking_allreduce_8B: async () => { world.allreduce(small.send, small.recv, SUM); return small; },
  };
  small.preq = world.allreduceInit(small.send, small.recv, SUM);
  // One round: everyone but rank LATE starts waiting at once. With `ticks`,
  // a 1 ms interval counts event-loop turns during the wait (an awaited
  // collective leaves the loop free, a blocking one does not); that timer
  // costs CPU itself, so CPU is measured in the rounds without it.
  const round = async (name, withTicks) => {
    small.recv.fill(NaN);
    big.recv.fill(NaN);
    world.barrier();
    if (rank === LATE) await sleep(o.lateMs);
    let ticks = 0;
    const iv = withTicks ? setInterval(() => { ticks++; }, 1) : null;
    const th0 = threadCpu();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const buf = await scenarios[name]();
    const wall = performance.now() - t0;
    const c = process.cpuUsage(c0);
    const th1 = threadCpu();
    if (iv) clearInterval(iv);
    if (buf) {
      const err = check('allreduce', buf, buf.recv.length, rank, n);
      if (err) fail(`late ${name}: ${err}`);
    }
    const main = (th1[process.pid] ?? 0) - (th0[process.pid] ?? 0);
    let others = 0;
    for (const [tid, v] of Object.entries(th1)) if (Number(tid) !== process.pid) others += v - (th0[tid] ?? 0);
    return [wall, (c.user + c.system) / 1e3, main, others, ticks];
  };
  for (const name of Object.keys(scenarios)) {
    await round(name, false);   // untimed: first use of this path
    const rows = [];
    for (let rep = 0; rep < o.lateReps; rep++) rows.push(gatherVec(await round(name, false)));
    const tickRow = gatherVec(await round(name, true));
    if (rank === 0) {
      // the waiting ranks only; per rank the mean over repetitions
      const waiting = [...Array(n).keys()].filter((r) => r !== LATE);
      const mean = (r, i) => rows.reduce((s, row) => s + row[r][i], 0) / rows.length;
      const per = waiting.map((r) => ({ rank: r, wall_ms: mean(r, 0), cpu_ms: mean(r, 1), main_ms: mean(r, 2),
        other_threads_ms: mean(r, 3), ticks: tickRow[r][4], ticks_wall_ms: tickRow[r][0] }));
      const worst = per.reduce((a, x) => (x.cpu_ms > a.cpu_ms ? x : a));
      emit({ section: 'late', scenario: name, late_ms: o.lateMs, reps: o.lateReps, wall_ms: worst.wall_ms, cpu_ms: worst.cpu_ms,
        main_ms: Math.max(...per.map((x) => x.main_ms)), other_threads_ms: Math.max(...per.map((x) => x.other_threads_ms)),
        ticks: Math.min(...per.map((x) => x.ticks)), per_rank: per });
    }
  }
  small.preq.free();
}

// ------------------------------------------------------------------ main
try {
  const o = options(process.argv.slice(2));
  if (o.sections.includes('latency')) {
    const points = [['allreduce', 8], ['allreduce', 1024], ['allreduce', 1048576], ['bcast', 8]];
    for (let i = 0; i < points.length; i++) await latencyPoint(o, points[i][0], points[i][1], i === 0);
  }
  if (o.sections.includes('overlap')) await overlap(o);
  if (o.sections.includes('late')) await late(o);
  world.barrier();
  if (sink === 0.5) console.error('');   // keeps `sink` observable
} catch (e) {
  console.error(e && e.stack ? e.stack : String(e));
  mpi.abort(3);
}
mpi.finalize();
