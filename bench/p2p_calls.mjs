#!/usr/bin/env node
// What a small send + receive costs, layer by layer, with no peer to wait
// for: `node bench/p2p_calls.mjs [--runs N] [--bytes B]`.
//
// One rank (a plain `node`, no launcher) sends B bytes to itself and
// receives them, in a loop, four ways: through the public API
// (comm.send/comm.recv), through the addon's entry points as lib/p2p/shm.ts
// calls them (the call block filled by hand), two empty addon calls (the
// N-API floor of two crossings), and the C++ core alone (bench/core_p2p.cc
// `self`, built into build/bench as bench/core_latency.mjs does). The
// differences are what lib/ and the N-API binding add to a call, the part of
// bench/P2P.md's ping-pong latency that C does not pay. Prints one JSON line
// per way: the median and fastest of N timed loops of 1e6 pairs, in µs per
// pair. Needs `npm run build`.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT, log, median, parseOptions, usageError } from './lib/jobs.mjs';

const usage = `usage: node bench/p2p_calls.mjs [options]
  --runs N     timed loops of each way, after two untimed ones (default 7)
  --bytes B    message size (default 8)`;
const v = parseOptions('p2p_calls', usage, { runs: { type: 'string', default: '7' }, bytes: { type: 'string', default: '8' } });
const runs = Number(v.runs), bytes = Number(v.bytes);
if (!(runs >= 1 && Number.isInteger(bytes) && bytes >= 0)) usageError('p2p_calls', usage, 'bad option value');

const dist = (f) => pathToFileURL(join(ROOT, 'dist', f)).href;
const mpi = await import(dist('index.js'));
const { native } = await import(dist('native.js'));
const comm = mpi.init();
const out = new Uint8Array(bytes).fill(7), into = new Uint8Array(bytes);
const N = 1e6;

// The addon as lib/p2p/shm.ts calls it: its own call block (layout in
// native/napi/p2p_binding.cc), which replaces shm.ts's for this process.
const block = new Float64Array(new ArrayBuffer(64));
const handle = comm._peers().handle;

const ways = {
  api() {
    for (let i = 0; i < N; i++) {
      comm.send(out, 0, 1);
      comm.recv(into, 0, 1);
    }
  },
  addon() {
    for (let i = 0; i < N; i++) {
      block[0] = handle; block[1] = bytes; block[2] = 0; block[3] = 1; block[4] = 0;
      native.p2pSend(out);
      block[4] = 0; block[5] = 1; block[6] = 0; block[7] = 1;
      native.p2pRecv(into);
    }
  },
  napi() {
    for (let i = 0; i < N; i++) {
      native.singleCopies();
      native.singleCopies();
    }
  },
};

function time(f) {
  const t0 = process.hrtime.bigint();
  f();
  return Number(process.hrtime.bigint() - t0) / N / 1000;
}

const results = {};
// api first, with shm.ts's block; then the addon loop's own.
for (const name of Object.keys(ways)) {
  if (name === 'addon') native.setCallBlock(block.buffer);
  const f = ways[name];
  f();
  f();
  results[name] = Array.from({ length: runs }, () => time(f));
}
for (const [name, xs] of Object.entries(results)) {
  console.log(JSON.stringify({ way: name, bytes, us: +median(xs).toFixed(4), fastest: +Math.min(...xs).toFixed(4) }));
}

// The core alone, if built.
const core = join(ROOT, 'build', 'bench', 'core_p2p');
try {
  process.stdout.write(execFileSync(core, [String(bytes), 'self'], { encoding: 'utf8' }));
} catch (err) {
  log(`no ${core} (cmake -S . -B build/bench -DNODEMPI_BENCH=ON && cmake --build build/bench --target core_p2p): ${err.message}`);
}
await mpi.finalize();
