// Baseline (a): the collectives written in plain JavaScript with worker_threads,
// one SharedArrayBuffer and Atomics, the way a Node developer would without
// nodempi.
//
// How it works
// - The main thread allocates one SharedArrayBuffer: a control area and one
//   data slot per rank (big enough for a rank's whole alltoall send buffer),
//   then starts N workers; worker r is rank r. The main thread only relays
//   rank 0's results to stdout.
// - barrier(): a counter and a generation number in an Int32Array. Each rank
//   reads the generation, increments the counter; the last one to arrive
//   resets the counter, bumps the generation and Atomics.notify()s; the others
//   Atomics.wait() on the generation until it changes. With --spin K (the
//   "sab-spin" variant, run only when ranks <= cores) a waiter first polls
//   the generation K times with Atomics.load before it sleeps: the usual fix
//   once one notices that a futex wake-up costs tens of microseconds.
// - Every other collective is "copy in, barrier, copy out, barrier": a rank
//   copies what it contributes into its own slot (TypedArray.set, i.e. a
//   memcpy), a barrier publishes it, each rank copies (or, for reductions,
//   sums with a plain loop, ranks in fixed order 0..N-1 so every rank gets
//   the same bits) what it needs out of the others' slots, and a second
//   barrier keeps anyone from overwriting a slot that is still being read.
//   Rooted collectives use root 0. The data is copied through the SAB (no
//   zero-copy tricks: the caller's buffers are ordinary Float64Arrays).
//
// Run alone: node bench/baseline/sab.mjs --np 2 [--spin K] [sweep flags]
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { parseSweepArgs, runSweep } from '../lib/sweep.mjs';

const COUNT = 0, GEN = 16; // Int32 indices, on different cache lines
const CTRL_BYTES = 128;

export class SabComm {
  constructor(sab, rank, size, slotBytes, spin = 0) {
    this.spin = spin;
    this.rank = rank;
    this.size = size;
    this.sync = true;
    this.ctrl = new Int32Array(sab, 0, CTRL_BYTES / 4);
    this.slots = [];
    for (let r = 0; r < size; r++) this.slots.push(new Float64Array(sab, CTRL_BYTES + r * slotBytes, slotBytes / 8));
    this.barrier = this.barrier.bind(this);
  }

  barrier() {
    const c = this.ctrl;
    const gen = Atomics.load(c, GEN);
    if (Atomics.add(c, COUNT, 1) === this.size - 1) {
      Atomics.store(c, COUNT, 0);
      Atomics.add(c, GEN, 1);
      Atomics.notify(c, GEN);
    } else {
      for (let i = this.spin; i > 0; i--) if (Atomics.load(c, GEN) !== gen) return;
      while (Atomics.load(c, GEN) === gen) Atomics.wait(c, GEN, gen);
    }
  }

  bcast(buf) {
    const n = buf.length;
    if (this.rank === 0) this.slots[0].set(buf);
    this.barrier();
    if (this.rank !== 0) buf.set(this.slots[0].subarray(0, n));
    this.barrier();
  }

  #sumInto(recv, n) {
    recv.set(this.slots[0].subarray(0, n));
    for (let r = 1; r < this.size; r++) {
      const s = this.slots[r];
      for (let i = 0; i < n; i++) recv[i] += s[i];
    }
  }

  reduce(send, recv) {
    this.slots[this.rank].set(send);
    this.barrier();
    if (this.rank === 0) this.#sumInto(recv, send.length);
    this.barrier();
  }

  allreduce(send, recv) {
    this.slots[this.rank].set(send);
    this.barrier();
    this.#sumInto(recv, send.length);
    this.barrier();
  }

  gather(send, recv) {
    const n = send.length;
    if (this.rank !== 0) this.slots[this.rank].set(send);
    this.barrier();
    if (this.rank === 0) {
      recv.set(send, 0);
      for (let r = 1; r < this.size; r++) recv.set(this.slots[r].subarray(0, n), r * n);
    }
    this.barrier();
  }

  scatter(send, recv) {
    const n = recv.length;
    if (this.rank === 0) this.slots[0].set(send.subarray(n));  // blocks 1..N-1 (shifted by one)
    this.barrier();
    if (this.rank === 0) recv.set(send.subarray(0, n));
    else recv.set(this.slots[0].subarray((this.rank - 1) * n, this.rank * n));
    this.barrier();
  }

  allgather(send, recv) {
    const n = send.length;
    this.slots[this.rank].set(send);
    this.barrier();
    for (let r = 0; r < this.size; r++) {
      if (r === this.rank) recv.set(send, r * n);
      else recv.set(this.slots[r].subarray(0, n), r * n);
    }
    this.barrier();
  }

  alltoall(send, recv) {
    const n = send.length / this.size, me = this.rank;
    this.slots[me].set(send);
    this.barrier();
    for (let s = 0; s < this.size; s++) {
      if (s === me) recv.set(send.subarray(me * n, (me + 1) * n), s * n);
      else recv.set(this.slots[s].subarray(me * n, (me + 1) * n), s * n);
    }
    this.barrier();
  }
}

if (isMainThread) {
  const argv = process.argv.slice(2);
  const opts = parseSweepArgs(argv, 'bench/baseline/sab.mjs',
    { np: { type: 'string', default: '2' }, spin: { type: 'string', default: '0' } },
    '  --np N  ranks (default 2)\n  --spin K  Atomics.load polls before Atomics.wait (default 0)\n');
  const np = Number(opts.extra.np);
  const spin = Number(opts.extra.spin);
  const name = spin > 0 ? 'sab-spin' : 'sab';
  const maxBytes = Math.max(8, ...opts.sizes);
  const slotBytes = maxBytes * np;
  const sab = new SharedArrayBuffer(CTRL_BYTES + slotBytes * np);
  let done = 0;
  for (let r = 0; r < np; r++) {
    const w = new Worker(new URL(import.meta.url), { workerData: { sab, rank: r, size: np, slotBytes, spin, argv } });
    w.on('message', (m) => {
      if (m.result) console.log(JSON.stringify({ impl: name, np, ...m.result }));
      if (m.done && ++done === np) process.exit(0);
    });
    w.on('error', (e) => {
      console.error(`${name} baseline, rank ${r}: ${e && e.stack ? e.stack : e}`);
      process.exit(1);
    });
    w.on('exit', (code) => {
      if (code !== 0) { console.error(`${name} baseline: rank ${r} exited with code ${code}`); process.exit(1); }
    });
  }
} else {
  const { sab, rank, size, slotBytes, spin, argv } = workerData;
  const comm = new SabComm(sab, rank, size, slotBytes, spin);
  await runSweep(comm, parseSweepArgs(argv, 'bench/baseline/sab.mjs', { np: { type: 'string' }, spin: { type: 'string' } }), (result) => parentPort.postMessage({ result }), `sab rank ${rank}`);
  parentPort.postMessage({ done: true });
}
