// bench/ompi/gather_probe.c in nodempi: a gather of one size, the send
// buffer left alone between calls and then rewritten before every call
// (bench/README.md, "Streaming stores into the slots").
//   node dist/cli.js -n 2 bench/gather_probe.mjs [bytes, default 16384]
import { performance } from 'node:perf_hooks';

const mpi = await import(new URL('../dist/index.js', import.meta.url).href);
const world = mpi.init();
const me = world.rank;
const count = Number(process.argv[2] ?? 16384) / 8, iters = 20000, warm = 2000;
const send = Float64Array.from({ length: count }, (_, k) => k);
const recv = new Float64Array(count * world.size);
let line = '';
for (const rewrite of [false, true]) {
  let sum = 0;
  for (let i = -warm; i < iters; ++i) {
    if (rewrite) for (let k = 0; k < count; ++k) send[k] = i + k;
    world.barrier();
    const t0 = performance.now();
    world.gather(send, me === 0 ? recv : null, 0);
    if (i >= 0) sum += performance.now() - t0;
  }
  const most = new Float64Array(1);
  world.reduce(Float64Array.of((sum / iters) * 1e3), most, mpi.Op.MAX, 0);
  line += `nodempi ${rewrite ? 'rewritten' : 'clean'} ${most[0].toFixed(2)} us  `;
}
if (me === 0) console.log(line.trimEnd());
mpi.finalize();
