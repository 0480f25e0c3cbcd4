// Baseline (b): the collectives written with child processes and Node's IPC
// channel, the way a Node developer would without nodempi.
//
// How it works
// - Rank 0 is the parent process and the hub. It forks ranks 1..N-1 with
//   child_process.fork(..., { serialization: 'advanced' }), so TypedArrays
//   travel as structured clones (V8's serializer over the IPC pipe) instead
//   of JSON. Children talk only to the hub; the channel is FIFO, so messages
//   need no tags: every rank issues the collectives in the same order and
//   each step takes the next message from its peer's queue.
// - barrier: every child sends a token, the hub waits for all of them and
//   answers each. bcast / scatter: the hub sends the data (scatter: each
//   child its own block, sliced so that only that block is serialised).
//   gather / reduce: children send their buffer to the hub, which copies the
//   blocks into place / sums them in rank order. allgather / allreduce:
//   gather / reduce, then the hub sends the result to every child. alltoall:
//   every child sends its whole send buffer; the hub assembles each
//   destination's receive buffer and sends it.
//
// Run alone: node bench/baseline/ipc.mjs --np 2 [sweep flags]
import { fork } from 'node:child_process';
import { parseSweepArgs, runSweep } from '../lib/sweep.mjs';

/** A FIFO of messages from one peer; next() resolves with the next one. */
class Mailbox {
  #queue = [];
  #waiters = [];
  push(m) {
    const w = this.#waiters.shift();
    if (w) w(m); else this.#queue.push(m);
  }
  next() {
    if (this.#queue.length) return Promise.resolve(this.#queue.shift());
    return new Promise((resolve) => this.#waiters.push(resolve));
  }
}

const TOKEN = 1;

/** Rank 0: the hub. */
export class IpcHub {
  constructor(children) {
    this.rank = 0;
    this.size = children.length + 1;
    this.sync = false;
    this.children = children;            // children[r - 1] is rank r
    this.boxes = children.map((c) => {
      const box = new Mailbox();
      c.on('message', (m) => box.push(m));
      return box;
    });
    this.barrier = this.barrier.bind(this);
  }

  async #collect() {
    const out = [];
    for (const box of this.boxes) out.push(await box.next());
    return out;
  }

  #sendAll(m) { for (const c of this.children) c.send(m); }

  async barrier() {
    await this.#collect();
    this.#sendAll(TOKEN);
  }

  async bcast(buf) { this.#sendAll(buf); }

  async reduce(send, recv) {
    recv.set(send);
    for (const box of this.boxes) {
      const m = await box.next();
      for (let i = 0; i < recv.length; i++) recv[i] += m[i];
    }
  }

  async allreduce(send, recv) {
    await this.reduce(send, recv);
    this.#sendAll(recv);
  }

  async gather(send, recv) {
    const n = send.length;
    recv.set(send, 0);
    for (let r = 1; r < this.size; r++) recv.set(await this.boxes[r - 1].next(), r * n);
  }

  async scatter(send, recv) {
    const n = recv.length;
    for (let r = 1; r < this.size; r++) this.children[r - 1].send(send.slice(r * n, (r + 1) * n));
    recv.set(send.subarray(0, n));
  }

  async allgather(send, recv) {
    await this.gather(send, recv);
    this.#sendAll(recv);
  }

  async alltoall(send, recv) {
    const p = this.size, n = send.length / p;
    const sends = [send, ...(await this.#collect())];   // sends[s] is rank s's send buffer
    for (let d = 1; d < p; d++) {
      const out = new Float64Array(n * p);
      for (let s = 0; s < p; s++) out.set(sends[s].subarray(d * n, (d + 1) * n), s * n);
      this.children[d - 1].send(out);
    }
    for (let s = 0; s < p; s++) recv.set(sends[s].subarray(0, n), s * n);
  }
}

/** Ranks 1..N-1. */
export class IpcChild {
  constructor(rank, size) {
    this.rank = rank;
    this.size = size;
    this.sync = false;
    this.box = new Mailbox();
    process.on('message', (m) => this.box.push(m));
    this.barrier = this.barrier.bind(this);
  }

  async barrier() {
    process.send(TOKEN);
    await this.box.next();
  }

  async bcast(buf) { buf.set(await this.box.next()); }
  async reduce(send) { process.send(send); }
  async allreduce(send, recv) {
    process.send(send);
    recv.set(await this.box.next());
  }
  async gather(send) { process.send(send); }
  async scatter(send, recv) { recv.set(await this.box.next()); }
  async allgather(send, recv) {
    process.send(send);
    recv.set(await this.box.next());
  }
  async alltoall(send, recv) {
    process.send(send);
    recv.set(await this.box.next());
  }
}

const argv = process.argv.slice(2);
const opts = parseSweepArgs(argv, 'bench/baseline/ipc.mjs', { np: { type: 'string', default: '2' } }, '  --np N  ranks (default 2)\n');
if (process.env.BENCH_IPC_RANK === undefined) {
  const np = Number(opts.extra.np);
  const children = [];
  let finished = false;
  for (let r = 1; r < np; r++) {
    const c = fork(new URL(import.meta.url), argv, {
      serialization: 'advanced',
      env: { ...process.env, BENCH_IPC_RANK: String(r), BENCH_IPC_SIZE: String(np) },
    });
    c.on('exit', (code, sig) => {
      if (!finished || code !== 0) {
        console.error(`ipc baseline: rank ${r} exited with ${sig || code} before the end`);
        process.exit(1);
      }
    });
    children.push(c);
  }
  const hub = new IpcHub(children);
  try {
    await runSweep(hub, opts, (r) => console.log(JSON.stringify({ impl: 'ipc', np, ...r })), 'ipc rank 0');
  } catch (e) {
    console.error(e && e.stack ? e.stack : String(e));
    process.exit(1);
  }
  finished = true;
  for (const c of children) c.send('bye');
} else {
  const rank = Number(process.env.BENCH_IPC_RANK), size = Number(process.env.BENCH_IPC_SIZE);
  const child = new IpcChild(rank, size);
  process.on('disconnect', () => { if (!child.done) process.exit(1); });
  try {
    await runSweep(child, opts, () => {}, `ipc rank ${rank}`);
  } catch (e) {
    console.error(e && e.stack ? e.stack : String(e));
    process.exit(1);
  }
  await child.box.next();  // 'bye'
  child.done = true;
  process.disconnect();
}
