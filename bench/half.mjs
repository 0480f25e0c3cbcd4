#!/usr/bin/env node
// FLOAT16 and BFLOAT16 reduction throughput:
//   node bench/half.mjs [--runs 5] [--items 1048576]
//
// For each type it times, side by side:
//   nodempi         mpi.reduceLocal([a, T], [io, T], Op.SUM), the kernel table
//                   picked at start-up (AVX-512 or AVX2 with F16C here)
//   nodempi avx2    the same with NODEMPI_KERNELS=avx2 (where the CPU has it)
//   nodempi scalar  the same with NODEMPI_KERNELS=scalar (the SSE2 baseline)
//   JS loop         io[i] = narrow(fround(widen(a[i]) + widen(io[i]))) over the
//                   same Uint16Arrays, with bit-level conversions in plain JS
//                   (rounding to nearest even, as the kernels do)
// Every measurement is its own process (the kernel table is chosen once per
// process); the set is repeated --runs times, the order rotated, and the
// median over runs reported, in ns per item and as the speed-up over the JS
// loop. Each worker first checks that its result equals the JS loop's.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const SELF = fileURLToPath(import.meta.url);
const TYPES = ['FLOAT16', 'BFLOAT16'];
const VARIANTS = ['nodempi', 'nodempi avx2', 'nodempi scalar', 'JS loop'];
const TABLE = { 'nodempi avx2': 'avx2', 'nodempi scalar': 'scalar' };

// ---- Plain-JS conversions (the rival) ------------------------------------------

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

function widen16(h) {
  const sign = (h & 0x8000) << 16, em = h & 0x7fff;
  if (em < 0x0400) return (sign ? -em : em) * 2 ** -24;
  u32[0] = em >= 0x7c00 ? sign | 0x7f800000 | ((em & 0x3ff) << 13) : sign | ((em << 13) + 0x38000000);
  return f32[0];
}
function narrow16(x) {
  f32[0] = x;
  const u = u32[0], sign = (u >>> 16) & 0x8000, a = u & 0x7fffffff;
  if (a > 0x7f800000) return sign | 0x7e00 | ((a >>> 13) & 0x3ff);
  if (a >= 0x47800000) return sign | 0x7c00;
  if (a < 0x38800000) {
    f32[0] = Math.abs(x) + 0.5;
    return sign | (u32[0] - 0x3f000000);
  }
  return sign | ((a + 0x0fff + ((a >>> 13) & 1) - 0x38000000) >>> 13);
}
function widenB(h) {
  u32[0] = h << 16;
  return f32[0];
}
function narrowB(x) {
  f32[0] = x;
  const u = u32[0];
  if ((u & 0x7fffffff) > 0x7f800000) return (u >>> 16) | 0x40;
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

function jsSum(type, a, io) {
  if (type === 'FLOAT16') {
    for (let i = 0; i < a.length; i++) io[i] = narrow16(Math.fround(widen16(a[i]) + widen16(io[i])));
  } else {
    for (let i = 0; i < a.length; i++) io[i] = narrowB(Math.fround(widenB(a[i]) + widenB(io[i])));
  }
}

// ---- Worker: one variant, one type --------------------------------------------

async function worker(variant, type, items) {
  const mpi = await import('../dist/index.js');
  const { native } = await import('../dist/native.js');
  const dt = mpi.Datatype[type];
  const narrow = type === 'FLOAT16' ? narrow16 : narrowB;
  // a in [-1, 1], io in [-8, 8]: io stays a random walk of moderate size.
  let s = 1;
  const rnd = () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32) * 2 - 1;
  const a = Uint16Array.from({ length: items }, () => narrow(rnd()));
  const io = Uint16Array.from({ length: items }, () => narrow(8 * rnd()));
  const run = variant === 'JS loop' ? () => jsSum(type, a, io) : () => mpi.reduceLocal([a, dt], [io, dt], mpi.Op.SUM);

  // Same work: one step of each on copies gives the same bits.
  const x = Uint16Array.from(io), y = Uint16Array.from(io);
  jsSum(type, a, x);
  mpi.reduceLocal([a, dt], [y, dt], mpi.Op.SUM);
  if (!x.every((v, i) => v === y[i])) throw new Error(`${type}: reduceLocal and the JS loop disagree`);

  // Warm up for 0.3 s, then time batches for at least 1 s.
  const clock = () => Number(process.hrtime.bigint()) / 1e6;
  for (const t0 = clock(); clock() - t0 < 300;) run();
  let calls = 0;
  const t0 = clock();
  let t = t0;
  while (t - t0 < 1000) {
    for (let k = 0; k < 4; k++) run();
    calls += 4;
    t = clock();
  }
  const ns = ((t - t0) * 1e6) / (calls * items);
  console.log(JSON.stringify({ ns, isa: native.kernelIsa() }));
}

// ---- Driver ---------------------------------------------------------------------

function option(name, fallback) {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

function median(xs) {
  const v = [...xs].sort((p, q) => p - q);
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

function driver() {
  const runs = option('--runs', 5), items = option('--items', 1 << 20);
  const jobs = TYPES.flatMap((type) => VARIANTS.map((variant) => ({ type, variant })));
  const times = new Map(jobs.map((j) => [`${j.type}/${j.variant}`, []]));
  const tables = new Set();
  for (let r = 0; r < runs; r++) {
    for (let k = 0; k < jobs.length; k++) {
      const { type, variant } = jobs[(k + r) % jobs.length];
      const env = { ...process.env, NODEMPI_KERNELS: TABLE[variant] ?? '' };
      const out = spawnSync(process.execPath, [SELF, '--worker', variant, type, String(items)], { env, encoding: 'utf8' });
      if (out.status !== 0) throw new Error(`${type} ${variant}: ${out.stderr}`);
      const { ns, isa } = JSON.parse(out.stdout.trim().split('\n').pop());
      times.get(`${type}/${variant}`).push(ns);
      if (variant === 'nodempi') tables.add(isa);
    }
  }
  console.log(`reduceLocal SUM, ${items} items (Uint16Array), median of ${runs} runs, ns per item (speed-up over the JS loop);`);
  console.log(`nodempi ran the ${[...tables].join(', ')} kernels, node ${process.version}\n`);
  console.log(`| type | ${VARIANTS.join(' | ')} |`);
  console.log(`|---|${VARIANTS.map(() => '---:').join('|')}|`);
  for (const type of TYPES) {
    const js = median(times.get(`${type}/JS loop`));
    const cells = VARIANTS.map((v) => {
      const m = median(times.get(`${type}/${v}`));
      return v === 'JS loop' ? m.toFixed(2) : `${m.toFixed(3)} (${(js / m).toFixed(1)}x)`;
    });
    console.log(`| ${type} | ${cells.join(' | ')} |`);
  }
  console.log(`\nall runs (ns per item): ${JSON.stringify(Object.fromEntries([...times].map(([k, v]) => [k, v.map((x) => +x.toFixed(3))])))}`);
}

if (process.argv[2] === '--worker') await worker(process.argv[3], process.argv[4], Number(process.argv[5]));
else driver();
