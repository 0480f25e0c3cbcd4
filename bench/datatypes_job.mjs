// One job of bench/datatypes.mjs: run as
//   node dist/cli.js -n N bench/datatypes_job.mjs [--cases bcast,allgather] [--sizes 8192,...]
//       [--order contig|strided] [--target-ms 150] [--warm-ms 50] [--first-warm-ms 200]
// For every case and payload size, the same bytes sent twice: laid out
// contiguously, and through a derived datatype that leaves holes:
//   bcast      Float64Array(count) against [buf, 1, vector(count, 1, 2, DOUBLE)]
//              (every other double of a buffer twice as long)
//   allgather  each rank's block of R doubles into a contiguous buffer, against
//              the same block into column `rank` of an R x size row-major
//              matrix: [matrix, 1, vector(R, 1, size, DOUBLE).resized(0, 8)]
// The size is the payload: the broadcast bytes, one rank's allgather block.
// Per point, the scheme of bench/lib/sweep.mjs: a correctness check (the
// holes must come back untouched), a probe, a timed warm-up, N timed calls
// each followed by an untimed barrier (N from ~targetMs, in up to 8 batches,
// cut short at 4x the budget), the check again, per-rank mean, max over ranks.
// --order says which layout of a size goes first; the driver alternates it
// from run to run so that neither always follows the other.
import { performance } from 'node:perf_hooks';
import { parseOptions } from './lib/jobs.mjs';

const mpi = await import(new URL('../dist/index.js', import.meta.url).href);
const { Datatype } = mpi;
const world = mpi.init();
const { rank, size: n } = world;

const v = parseOptions('datatypes_job', `usage: node dist/cli.js -n N bench/datatypes_job.mjs [options]   (bench/datatypes.mjs runs it)
  --cases a,b  --sizes 8192,1048576  --order contig|derived  --target-ms T  --warm-ms W  --first-warm-ms W`, {
  cases: { type: 'string', default: 'bcast,allgather' }, sizes: { type: 'string', default: '8192,1048576' },
  order: { type: 'string', default: 'contig' }, 'target-ms': { type: 'string', default: '150' },
  'warm-ms': { type: 'string', default: '50' }, 'first-warm-ms': { type: 'string', default: '200' },
});
const opts = {
  cases: v.cases.split(','), sizes: v.sizes.split(',').map(Number), order: v.order, targetMs: Number(v['target-ms']),
  warmMs: Number(v['warm-ms']), firstWarmMs: Number(v['first-warm-ms']),
};
const MIN_ITERS = 2, MAX_ITERS = 200000;

const val = (r, i) => (r + 1) * 65536 + (i & 65535);

/** {call, poison, check, free} for one case, size and layout. */
function point(kind, bytes, strided) {
  const count = bytes / 8;
  if (kind === 'bcast') {
    const stride = strided ? 2 : 1;
    const buf = new Float64Array(count * stride);
    const type = strided ? Datatype.vector(count, 1, 2, Datatype.DOUBLE).commit() : null;
    const msg = strided ? [buf, 1, type] : buf;
    return {
      call: () => world.bcast(msg, 0),
      poison() {
        if (rank === 0) {
          buf.fill(-1);  // the holes: must not travel
          for (let i = 0; i < count; i++) buf[i * stride] = val(0, i);
        } else buf.fill(NaN);
      },
      check() {
        for (let i = 0; i < count; i++) if (buf[i * stride] !== val(0, i)) return `element ${i} is ${buf[i * stride]}, expected ${val(0, i)}`;
        if (strided) {
          const hole = rank === 0 ? -1 : NaN;
          for (let i = 0; i < count; i++) if (!Object.is(buf[2 * i + 1], hole)) return `hole ${i} was written (${buf[2 * i + 1]})`;
        }
        return null;
      },
      free: () => type?.free(),
    };
  }
  if (kind === 'allgather') {
    const send = new Float64Array(count);
    for (let i = 0; i < count; i++) send[i] = val(rank, i);
    const recv = new Float64Array(count * n);
    let type = null;
    if (strided) {
      const col = Datatype.vector(count, 1, n, Datatype.DOUBLE);
      type = col.resized(0, 8).commit();  // block r starts 8 bytes after block r - 1: column r
      col.free();
    }
    const msg = strided ? [recv, 1, type] : recv;
    const at = strided ? (r, i) => i * n + r : (r, i) => r * count + i;
    return {
      call: () => world.allgather(send, msg),
      poison: () => recv.fill(NaN),
      check() {
        for (let r = 0; r < n; r++) {
          for (let i = 0; i < count; i++) {
            if (recv[at(r, i)] !== val(r, i)) return `rank ${r}'s element ${i} is ${recv[at(r, i)]}, expected ${val(r, i)}`;
          }
        }
        return null;
      },
      free: () => type?.free(),
    };
  }
  throw new Error(`datatypes_job: unknown case ${kind}`);
}

const ctl = new Float64Array(1);
const bcastNum = (x) => { ctl[0] = x; world.bcast(ctl, 0); return ctl[0]; };

/** k calls, each followed by an untimed barrier; [wall s, sum of the timed calls s]. */
function loop(call, k) {
  let acc = 0;
  const w0 = performance.now();
  for (let i = 0; i < k; i++) {
    const t0 = performance.now();
    call();
    acc += performance.now() - t0;
    world.barrier();
  }
  return [(performance.now() - w0) / 1e3, acc / 1e3];
}

/** Per-rank mean of the timed calls in µs, and the counts, after probe and warm-up. */
function measure(call, warmMs) {
  const [tProbe] = loop(call, 1);
  const probe = bcastNum(tProbe);
  let warm = 0, k = 1, tLast = probe;
  world.barrier();
  const tw0 = performance.now();
  for (;;) {
    const [w] = loop(call, k);
    warm += k;
    tLast = w / k;
    if (!bcastNum(rank === 0 && performance.now() - tw0 < warmMs ? 1 : 0)) break;
    k *= 2;
  }
  const per = bcastNum(Math.min(probe, tLast));
  const planned = Math.min(MAX_ITERS, Math.max(MIN_ITERS, Math.round(opts.targetMs / 1e3 / Math.max(per, 1e-9))));
  const batch = Math.max(1, Math.ceil(planned / 8));
  let iters = 0, acc = 0, stopped = false;
  world.barrier();
  const tStart = performance.now();
  while (iters < planned) {
    const kk = Math.min(batch, planned - iters);
    acc += loop(call, kk)[1];
    iters += kk;
    if (iters < planned && bcastNum(rank === 0 && performance.now() - tStart > 4 * opts.targetMs ? 1 : 0)) { stopped = true; break; }
  }
  return { us: (acc / iters) * 1e6, iters, warmup: warm + 1, stopped };
}

try {
  for (const kind of opts.cases) {
    opts.sizes.forEach((bytes, si) => {
      const layouts = opts.order === 'strided' ? [true, false] : [false, true];
      for (const strided of layouts) {
        const p = point(kind, bytes, strided);
        const label = `${kind} ${bytes} B ${strided ? 'strided' : 'contiguous'}, rank ${rank}`;
        p.poison();
        world.barrier();
        p.call();
        let err = p.check();
        if (err) throw new Error(`datatypes: WRONG RESULT: ${label}: ${err}`);
        // V8 tiers a call path up only after many calls (bench/lib/sweep.mjs); the first point of each layout waits for it
        const m = measure(p.call, si === 0 ? opts.firstWarmMs : opts.warmMs);
        err = p.check();
        if (err) throw new Error(`datatypes: WRONG RESULT after the timed loop: ${label}: ${err}`);
        const all = rank === 0 ? new Float64Array(n) : null;
        world.gather(new Float64Array([m.us]), all, 0);
        if (rank === 0) {
          console.log(JSON.stringify({
            np: n, case: kind, layout: strided ? 'strided' : 'contig', bytes, us: Math.max(...all), min_us: Math.min(...all),
            iters: m.iters, warmup: m.warmup, ...(m.stopped ? { stopped: true } : {}),
          }));
        }
        p.free();
      }
    });
  }
} catch (e) {
  console.error(e && e.stack ? e.stack : String(e));
  mpi.abort(3);
}
mpi.finalize();
