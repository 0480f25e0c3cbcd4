// One nodempi job of the sweep: run as
//   node dist/cli.js -n N bench/nodempi_job.mjs [sweep flags]
// Every rank runs bench/lib/sweep.mjs over COMM_WORLD; rank 0 prints one JSON
// line per point.
import { parseSweepArgs, runSweep } from './lib/sweep.mjs';

const opts = parseSweepArgs(process.argv.slice(2), 'bench/nodempi_job.mjs',
  { specs: { type: 'string', default: 'per-call' } },
  '  --specs per-call|once  v and w specs built at every call (default), or once per point and passed again\n');
if (!['per-call', 'once'].includes(opts.extra.specs)) {
  console.error(`bench/nodempi_job.mjs: --specs takes per-call or once, not ${opts.extra.specs}`);
  process.exit(2);
}

const mpi = await import(new URL('../dist/index.js', import.meta.url).href);
const world = mpi.init();
const SUM = mpi.Op.SUM;
const DOUBLES = new Array(world.size).fill(mpi.Datatype.DOUBLE);

// The C sweep builds no spec: with `--specs once` a spec is made at the
// first call of a point and passed again while its buffer and lists stay
// the same, which separates what the program's own arrays cost from the call.
function madeOnce() {
  let made = null;
  return (buf, counts, displs, types) => {
    if (made === null || made[0] !== buf || made[1] !== counts || made[2] !== displs) {
      made = types ? [buf, counts, displs, types] : [buf, counts, displs];
    }
    return made;
  };
}
const sendSpec = madeOnce(), recvSpec = madeOnce();

const impl = {
  rank: world.rank,
  size: world.size,
  sync: true,
  barrier: () => world.barrier(),
  bcast: (buf) => world.bcast(buf, 0),
  reduce: (send, recv) => world.reduce(send, recv, SUM, 0),
  allreduce: (send, recv) => world.allreduce(send, recv, SUM),
  gather: (send, recv) => world.gather(send, recv, 0),
  scatter: (send, recv) => world.scatter(send, recv, 0),
  allgather: (send, recv) => world.allgather(send, recv),
  alltoall: (send, recv) => world.alltoall(send, recv),
  // The v and w specs are built per call, as application code would write them.
  gatherv: (send, recv, counts, displs) => world.gatherv(send, recv && [recv, counts, displs], 0),
  scatterv: (send, recv, counts, displs) => world.scatterv(send && [send, counts, displs], recv, 0),
  allgatherv: (send, recv, counts, displs) => world.allgatherv(send, [recv, counts, displs]),
  alltoallv: (send, recv, counts, displs) => world.alltoallv([send, counts, displs], [recv, counts, displs]),
  alltoallw: (send, recv, counts, byteDispls) =>
    world.alltoallw([send, counts, byteDispls, DOUBLES], [recv, counts, byteDispls, DOUBLES]),
  reduceScatter: (send, recv, counts) => world.reduceScatter(send, recv, counts, SUM),
  reduceScatterBlock: (send, recv) => world.reduceScatterBlock(send, recv, SUM),
  scan: (send, recv) => world.scan(send, recv, SUM),
  exscan: (send, recv) => world.exscan(send, recv, SUM),
};

// The per-call specs above stay array literals rather than calls of a
// builder shared with these: through a builder the default job read 3-5 ns
// slower at one rank, which would move every table made with it.
if (opts.extra.specs === 'once') {
  Object.assign(impl, {
    gatherv: (send, recv, counts, displs) => world.gatherv(send, recv && recvSpec(recv, counts, displs), 0),
    scatterv: (send, recv, counts, displs) => world.scatterv(send && sendSpec(send, counts, displs), recv, 0),
    allgatherv: (send, recv, counts, displs) => world.allgatherv(send, recvSpec(recv, counts, displs)),
    alltoallv: (send, recv, counts, displs) => world.alltoallv(sendSpec(send, counts, displs), recvSpec(recv, counts, displs)),
    alltoallw: (send, recv, counts, byteDispls) =>
      world.alltoallw(sendSpec(send, counts, byteDispls, DOUBLES), recvSpec(recv, counts, byteDispls, DOUBLES)),
  });
}

try {
  await runSweep(impl, opts,
    (r) => console.log(JSON.stringify({ impl: 'nodempi', np: world.size, ...r })), `nodempi rank ${world.rank}`);
} catch (e) {
  console.error(e && e.stack ? e.stack : String(e));
  mpi.abort(3);
}
mpi.finalize();
