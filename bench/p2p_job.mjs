// One nodempi job of bench/p2p.mjs: run as
//   node dist/cli.js -n 2 bench/p2p_job.mjs [options of bench/lib/p2p.mjs]
// (the shm backend), or under mpirun.openmpi -x NODEMPI_BACKEND=mpi -n 2 (the
// mpi backend). osu_latency and osu_bw with the package's point-to-point API
// (API.md, "Point-to-point"): comm.send / comm.recv for the ping-pong,
// comm.isend / comm.irecv and Request.waitAll for the window, on
// COMM_WORLD, Uint8Array views (datatype BYTE). The method, step for step,
// is bench/ompi/osu_p2p.c's (its header); rank 0 prints one JSON line per
// point.
//
// Before anything is timed the job makes sure the API is there (a tree
// without point-to-point stops with a message naming what is missing), and
// the first round of every size is checked: the receive buffer poisoned,
// then every byte compared with what the peer sent and every receive's
// Status (source, tag, byteLength) with what it must be. A transport that
// moves nothing, or the wrong bytes, stops the job with WRONG RESULT
// instead of posting a fast number.
//
// The buffers come from mpi.allocMem (page-aligned, as the C program's
// posix_memalign; huge pages from 4 MiB, as numpy's for mpi4py), or with
// --plain-buffers (this job's own flag) from `new Uint8Array`, whose memory
// is malloc's: bench/P2P.md compares the two.
import { performance } from 'node:perf_hooks';
import {
  ACK_TAG, BW_TAG, LAT_TAG, POISON, fillPattern, parseP2PArgs, patternMismatch,
} from './lib/p2p.mjs';

const NAME = 'bench/p2p_job.mjs';
const args = process.argv.slice(2);
const plain = args.includes('--plain-buffers');
const o = parseP2PArgs(args.filter((a) => a !== '--plain-buffers'), NAME);
const mpi = await import(new URL('../dist/index.js', import.meta.url).href);
const world = mpi.init();
const { rank, size } = world;

function stop(msg, code) {
  console.error(`${NAME}: rank ${rank}: ${msg}`);
  mpi.abort(code);
}

// 0. the API this job is written against, before any timing
const missing = [
  ['comm.send', world.send], ['comm.recv', world.recv], ['comm.isend', world.isend], ['comm.irecv', world.irecv],
  ['Request.waitAll', mpi.Request?.waitAll],
].filter(([, f]) => typeof f !== 'function').map(([n]) => n);
if (missing.length) {
  stop(`this nodempi (dist/) has no ${missing.join(', ')}: point-to-point (API.md, "Point-to-point") is not in this build; ` +
    'build a tree that has it (npm run build)', 3);
}
if (size !== 2) stop(`needs exactly 2 ranks, has ${size}`, 3);

const peer = 1 - rank;
const ack = new Uint8Array(4);

function wrong(test, bytes, what) {
  stop(`WRONG RESULT: ${test} ${bytes} B: ${what}`, 2);
}

/** A receive's Status says it got `bytes` bytes from `source` with `tag`. */
function checkStatus(test, bytes, st, source, tag, which) {
  if (st === null || typeof st !== 'object') wrong(test, bytes, `${which} gave no Status (${st})`);
  if (st.source !== source || st.tag !== tag || st.byteLength !== bytes) {
    wrong(test, bytes, `${which}: status source ${st.source} tag ${st.tag} byteLength ${st.byteLength}, ` +
      `expected ${source} ${tag} ${bytes}`);
  }
}

// ---- one round of each test, as a user would write it ----
function latencyRounds(s, r, k) {
  if (rank === 0) {
    for (let i = 0; i < k; i++) {
      world.send(s, 1, LAT_TAG);
      world.recv(r, 1, LAT_TAG);
    }
  } else {
    for (let i = 0; i < k; i++) {
      world.recv(r, 0, LAT_TAG);
      world.send(s, 0, LAT_TAG);
    }
  }
}

/** k windows, each acknowledged; returns the last window's requests. */
function bwRounds(s, r, k) {
  let reqs = null;
  for (let i = 0; i < k; i++) {
    reqs = [];
    if (rank === 0) {
      for (let j = 0; j < o.window; j++) reqs.push(world.isend(s, 1, BW_TAG));
      mpi.Request.waitAll(reqs);
      world.recv(ack, 1, ACK_TAG);
    } else {
      for (let j = 0; j < o.window; j++) reqs.push(world.irecv(r, 0, BW_TAG));
      mpi.Request.waitAll(reqs);
      world.send(ack, 0, ACK_TAG);
    }
  }
  return reqs;
}

/** The first round of a size, untimed, and what it delivered checked. */
function checkRound(test, s, r) {
  const bytes = s.length;
  fillPattern(s, rank);
  r.fill(POISON);
  if (test === 'latency') {
    let st;
    if (rank === 0) {
      world.send(s, 1, LAT_TAG);
      st = world.recv(r, 1, LAT_TAG);
    } else {
      st = world.recv(r, 0, LAT_TAG);
      world.send(s, 0, LAT_TAG);
    }
    const bad = patternMismatch(r, peer);
    if (bad) wrong(test, bytes, bad);
    checkStatus(test, bytes, st, peer, LAT_TAG, 'recv');
  } else {
    const reqs = bwRounds(s, r, 1);
    if (rank === 1) {
      const bad = patternMismatch(r, 0);
      if (bad) wrong(test, bytes, bad);
      reqs.forEach((q, j) => checkStatus(test, bytes, q.status, 0, BW_TAG, `irecv ${j} of the window (request.status)`));
    }
  }
}

const decide = new Int32Array(1);
/** rank 0's decision, to both ranks (an untimed bcast). */
function agree(yes) {
  decide[0] = rank === 0 && yes ? 1 : 0;
  world.bcast(decide, 0);
  return decide[0] === 1;
}

try {
  for (const test of ['latency', 'bw']) {
    if (!o.tests.includes(test)) continue;
    const isLat = test === 'latency';
    const sizes = isLat ? o.latSizes : o.bwSizes;
    // once per test at the largest size, written through, as the C program
    const max = Math.max(1, ...sizes);
    const buffer = () => (plain || !mpi.allocMem ? new Uint8Array(max) : mpi.allocMem(max));
    const sbuf = buffer(), rbuf = buffer();
    sizes.forEach((bytes, si) => {
      const big = bytes > o.large;
      const skip = isLat ? (big ? o.latSkipLarge : o.latSkip) : (big ? o.bwSkipLarge : o.bwSkip);
      const iters = isLat ? (big ? o.latItersLarge : o.latIters) : (big ? o.bwItersLarge : o.bwIters);
      const s = sbuf.subarray(0, bytes), r = rbuf.subarray(0, bytes);
      const rounds = isLat ? (k) => latencyRounds(s, r, k) : (k) => { bwRounds(s, r, k); };
      // 1. check round
      world.barrier();
      const tw0 = performance.now();
      checkRound(test, s, r);
      // 2. warm-up: skip rounds in all, and until warm ms have passed on rank 0
      const warmMs = si === 0 ? o.firstWarmMs : o.warmMs;
      let warm = 1, k = skip - 1, next = 1;
      for (;;) {
        if (k > 0) {
          rounds(k);
          warm += k;
        }
        if (!agree(performance.now() - tw0 < warmMs)) break;
        k = next;
        next *= 2;
      }
      // 3. timed
      world.barrier();
      const t0 = performance.now();
      rounds(iters);
      const t = (performance.now() - t0) / 1e3;
      if (rank === 0) {
        const common = { impl: o.label, backend: mpi.backend, np: size, coll: test, bytes };
        const msgs = iters * o.window;
        console.log(JSON.stringify(isLat
          ? { ...common, us: t * 1e6 / (2 * iters), iters, warmup: warm }
          : { ...common, us: t * 1e6 / msgs, mbs: bytes * msgs / t / 1e6, window: o.window, iters, warmup: warm }));
      }
    });
  }
} catch (e) {
  stop(e && e.stack ? e.stack : String(e), 3);
}
mpi.finalize();
