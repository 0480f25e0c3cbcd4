// Computes π by integrating 4/(1+x²) over [0, 1] with the midpoint rule,
// each rank taking every size-th interval; an allreduce sums the shares.
//   nodempi -n 4 examples/pi.mjs [intervals]
import * as mpi from 'nodempi';

const world = mpi.COMM_WORLD;
const n = Number(process.argv[2] ?? 200_000_000);
const h = 1 / n;

world.barrier();
const t0 = mpi.wtime();
let sum = 0;
for (let i = world.rank; i < n; i += world.size) {
  const x = h * (i + 0.5);
  sum += 4 / (1 + x * x);
}
const share = Float64Array.of(sum * h);
const pi = new Float64Array(1);
world.allreduce(share, pi, mpi.Op.SUM);
const elapsed = mpi.wtime() - t0;

if (world.rank === 0) {
  console.log(`pi ≈ ${pi[0].toFixed(15)} (error ${Math.abs(pi[0] - Math.PI).toExponential(2)}) ` +
    `from ${n} intervals on ${world.size} ranks in ${elapsed.toFixed(3)} s`);
}
