// One rank of the soak test (bench/soak.mjs runs it under the launcher):
//   node dist/cli.js -n 4 bench/soak_job.mjs [--scale S]
// Runs, at `scale` times these counts (1 for the full soak):
//   1,000,000 blocking allreduces of 8 bytes (one double, SUM) on COMM_WORLD;
//      10,000 dup/free cycles, each dup used by a barrier, every tenth by
//             an awaited iallreduce too (which gives it a progress lane);
//     100,000 nonblocking requests on COMM_WORLD, iallreduce and ibarrier
//             alternating, awaited eight at a time;
// in two equal halves, after a warm-up of 2 % of each (and a pass through
// V8's young generation, see cycleYoungGeneration). It samples its
// resident set (VmRSS), open descriptors (/proc/self/fd) and mappings
// (/proc/self/maps lines) after the warm-up ("start"), between the halves
// ("middle") and at the end, each after a full garbage collection, and
// prints them as one line `SOAK {json}`. Every result is checked.
import { readFileSync, readdirSync } from 'node:fs';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { parseOptions } from './lib/jobs.mjs';

const mpi = await import(new URL('../dist/index.js', import.meta.url).href);
const world = mpi.init();
const { rank, size } = world;

const args = parseOptions('soak_job', `usage: node dist/cli.js -n 4 bench/soak_job.mjs [options]   (bench/soak.mjs runs it)
  --scale S   times the full counts (default 1)
  --only W    one workload alone: allreduce, dupFree or nonblocking`, { scale: { type: 'string', default: '1' }, only: { type: 'string' } });
const scale = Number(args.scale);
const only = args.only ?? null;  // one workload, to tell which one grows
if (!(scale > 0)) throw new Error(`soak_job: --scale must be positive, got ${scale}`);
const counts = {
  allreduce: Math.round(1_000_000 * scale),
  dupFree: Math.round(10_000 * scale),
  nonblocking: Math.round(100_000 * scale),
};
if (only !== null) {
  if (!(only in counts)) throw new Error(`soak_job: --only takes ${Object.keys(counts).join(', ')}, got ${only}`);
  for (const k of Object.keys(counts)) if (k !== only) counts[k] = 0;
}

// gc() without --expose-gc on the command line (the launcher runs plain node).
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc');

function sample(label) {
  gc();
  gc();
  const status = readFileSync('/proc/self/status', 'utf8');
  const rssKiB = Number(/^VmRSS:\s+(\d+)/m.exec(status)[1]);
  return {
    label,
    rssKiB,
    fds: readdirSync('/proc/self/fd').length,
    maps: readFileSync('/proc/self/maps', 'utf8').split('\n').filter(Boolean).length,
    heapKiB: Math.round(process.memoryUsage().heapUsed / 1024),
    // V8's young generation: it grows with the allocation rate (see soak.mjs).
    newSpaceKiB: Math.round(getHeapSpaceStatistics().find((x) => x.space_name === 'new_space').space_size / 1024),
  };
}

// The sum of 1..size plus the round, every rank alike.
const send = new Float64Array(1);
const recv = new Float64Array(1);
const expectSum = (k) => (size * (size + 1)) / 2 + size * k;

function allreduces(n, from) {
  for (let k = from; k < from + n; k++) {
    send[0] = rank + 1 + k;
    world.allreduce(send, recv, mpi.Op.SUM);
    if (recv[0] !== expectSum(k)) throw new Error(`allreduce ${k}: got ${recv[0]}, expected ${expectSum(k)}`);
  }
}

async function dupFrees(n) {
  const one = new Float64Array([1]);
  const got = new Float64Array(1);
  for (let k = 0; k < n; k++) {
    const c = world.dup();
    c.barrier();
    if (k % 10 === 0) {
      await c.iallreduce(one, got, mpi.Op.SUM);
      if (got[0] !== size) throw new Error(`iallreduce on dup ${k}: got ${got[0]}`);
    }
    c.free();
  }
}

async function nonblocking(n, from) {
  const batch = 8;
  const sends = Array.from({ length: batch }, () => new Float64Array(1));
  const recvs = Array.from({ length: batch }, () => new Float64Array(1));
  for (let k = from; k < from + n; k += batch) {
    const reqs = [];
    const m = Math.min(batch, from + n - k);
    for (let j = 0; j < m; j++) {
      if ((k + j) % 2 === 0) {
        sends[j][0] = rank + 1 + k + j;
        reqs.push(world.iallreduce(sends[j], recvs[j], mpi.Op.SUM));
      } else {
        recvs[j][0] = NaN;
        reqs.push(world.ibarrier());
      }
    }
    await Promise.all(reqs);
    for (let j = 0; j < m; j++) {
      if ((k + j) % 2 === 0 && recvs[j][0] !== expectSum(k + j)) {
        throw new Error(`iallreduce ${k + j}: got ${recvs[j][0]}, expected ${expectSum(k + j)}`);
      }
    }
  }
}

async function half(part) {
  const t0 = performance.now();
  allreduces(Math.floor(counts.allreduce * part), 0);
  const t1 = performance.now();
  await dupFrees(Math.floor(counts.dupFree * part));
  const t2 = performance.now();
  await nonblocking(Math.floor(counts.nonblocking * part), 0);
  const t3 = performance.now();
  return { allreduceMs: t1 - t0, dupFreeMs: t2 - t1, nonblockingMs: t3 - t2 };
}

// Touches every page of V8's young generation (bench/soak.mjs fixes its
// size): short-lived garbage of several times its size, so pages V8 has
// reserved but not yet used do not show up as growth later.
function cycleYoungGeneration() {
  const young = getHeapSpaceStatistics().find((x) => x.space_name === 'new_space').space_size;
  let keep = 0;
  for (let bytes = 0; bytes < 4 * young; bytes += 1024) keep ^= new Array(120).fill(bytes).length;
  return keep;
}

const samples = [];
const times = {};
times.warmup = await half(0.02);
cycleYoungGeneration();
world.barrier();
samples.push(sample('start'));
times.first = await half(0.5);
world.barrier();
samples.push(sample('middle'));
times.second = await half(0.5);
world.barrier();
samples.push(sample('end'));
process.stdout.write(`SOAK ${JSON.stringify({ rank, size, counts, samples, times })}\n`);
mpi.finalize();
