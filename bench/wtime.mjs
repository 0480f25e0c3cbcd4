#!/usr/bin/env node
// What reading the clock costs a loop that times each call, as OSU's loops
// time each call with MPI_Wtime:
//   node bench/wtime.mjs [--runs 7] [--calls 2000000]
//
// Side by side, each in a process of its own, the set repeated --runs
// times in a rotated order:
//   mpi.wtime         nodempi's MPI_Wtime
//   hrtime.bigint     Number(process.hrtime.bigint() - t0) / 1e9, what
//                     mpi.wtime() was before it read the clock natively
//   performance.now   performance.now() / 1e3
// Each process warms its loop up, then times --calls pairs of readings
// (t1 - t0 summed, as a timing loop would) and counts the young-generation
// collections meanwhile. Prints the median ns per reading and collections
// per million readings.
import { spawnSync } from 'node:child_process';
import { PerformanceObserver, constants, performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

import { median, parseOptions } from './lib/jobs.mjs';

const SELF = fileURLToPath(import.meta.url);
const CLOCKS = ['mpi.wtime', 'hrtime.bigint', 'performance.now'];

async function worker(clock, calls) {
  const mpi = await import(new URL('../dist/index.js', import.meta.url).href);
  const t0 = process.hrtime.bigint();
  const read = {
    'mpi.wtime': mpi.wtime,
    'hrtime.bigint': () => Number(process.hrtime.bigint() - t0) / 1e9,
    'performance.now': () => performance.now() / 1e3,
  }[clock];
  // Called again and again rather than one long loop: V8 compiles it
  // whole, as a program's timing loop would be after its first calls.
  const loop = (n) => {
    let sum = 0;
    for (let i = 0; i < n; i++) {
      const a = read();
      sum += read() - a;
    }
    return sum;
  };
  for (let k = 0; k < 200; k++) loop(1000);
  let scavenges = 0;
  const gc = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) scavenges++;
  });
  gc.observe({ entryTypes: ['gc'] });
  let sum = 0;
  const start = performance.now();
  for (let done = 0; done < calls; done += 1000) sum += loop(1000);
  const ms = performance.now() - start;
  // The observer reports on a later turn of the event loop.
  await new Promise((resolve) => setTimeout(resolve, 10));
  gc.disconnect();
  if (!(sum >= 0)) throw new Error(`${clock} went back in time`);
  console.log(JSON.stringify({ clock, ns: (ms * 1e6) / (2 * calls), scavengesPerMillion: (scavenges * 1e6) / (2 * calls) }));
}

if (process.argv[2] === '--worker') {
  await worker(process.argv[3], Number(process.argv[4]));
} else {
  const usage = 'usage: node bench/wtime.mjs [--runs 7] [--calls 2000000]';
  const v = parseOptions('wtime', usage, { runs: { type: 'string', default: '7' }, calls: { type: 'string', default: '2000000' } });
  const runs = Number(v.runs), calls = Number(v.calls);
  const got = Object.fromEntries(CLOCKS.map((c) => [c, []]));
  for (let r = 0; r < runs; r++) {
    for (let i = 0; i < CLOCKS.length; i++) {
      const clock = CLOCKS[(i + r) % CLOCKS.length];
      const p = spawnSync(process.execPath, [SELF, '--worker', clock, String(calls)], { encoding: 'utf8' });
      if (p.status !== 0) throw new Error(`${clock}: ${p.stderr}`);
      got[clock].push(JSON.parse(p.stdout.trim().split('\n').pop()));
    }
  }
  console.log(`${runs} runs of ${calls} timed pairs each; medians over the runs\n`);
  console.log('| clock | ns per reading | young-generation collections per million readings |');
  console.log('|---|--:|--:|');
  for (const c of CLOCKS) {
    console.log(`| ${c} | ${median(got[c].map((x) => x.ns)).toFixed(1)} | ${median(got[c].map((x) => x.scavengesPerMillion)).toFixed(1)} |`);
  }
}
