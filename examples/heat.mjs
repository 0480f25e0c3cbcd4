// Heat spreading along a rod cut into one piece per rank: every step, each
// rank swaps its edge cells with its neighbours (past the rod's ends the
// neighbour is mpi.PROC_NULL: nothing is sent or received), then rank 0
// collects the pieces as plain values, in whatever order they arrive.
//   nodempi -n 4 examples/heat.mjs
import * as mpi from 'nodempi';

const world = mpi.COMM_WORLD;
const { rank, size } = world;
const CELLS = 24, STEPS = 20;
const n = CELLS / size, first = rank * n;
if (!Number.isInteger(n)) throw new Error(`${CELLS} cells do not split over ${size} ranks`);

// u[1..n] are this rank's cells; u[0] and u[n + 1] the neighbours' edges.
const u = new Float64Array(n + 2);
for (let i = 1; i <= n; i++) u[i] = (first + i - 1) % 5;
const left = rank > 0 ? rank - 1 : mpi.PROC_NULL;
const right = rank < size - 1 ? rank + 1 : mpi.PROC_NULL;

for (let step = 0; step < STEPS; step++) {
  // At the rod's ends the outside mirrors the edge, so no heat leaves.
  u[0] = u[1];
  u[n + 1] = u[n];
  // My last cell goes right while my left neighbour's arrives.
  world.sendrecv(u.subarray(n, n + 1), right, 0, u.subarray(0, 1), left, 0);
  // The other way, nonblocking: post the receive, send, await it.
  const fromRight = world.irecv(u.subarray(n + 1), right, 1);
  world.send(u.subarray(1, 2), left, 1);
  await fromRight;
  const next = u.map((x, i) => (i === 0 || i > n ? x : x + 0.25 * (u[i - 1] - 2 * x + u[i + 1])));
  u.set(next);
}

if (rank === 0) {
  const rod = new Float64Array(CELLS);
  rod.set(u.subarray(1, n + 1));
  const status = new mpi.Status();
  for (let k = 1; k < size; k++) {
    const piece = world.recvObject(mpi.ANY_SOURCE, 2, status);
    rod.set(piece, status.source * n);
  }
  const total = rod.reduce((a, b) => a + b, 0);
  console.log(`heat after ${STEPS} steps on ${size} ranks: total ${total}, first cells ${[...rod.subarray(0, 4)].map((x) => x.toFixed(4)).join(' ')}`);
} else {
  world.sendObject(u.slice(1, n + 1), 0, 2);
}
