// The README's short tour, as a program: `nodempi -n 4 examples/tour.mjs`
// (any number of ranks; the intercommunicator needs two or more).
import * as mpi from 'nodempi';

const world = mpi.COMM_WORLD;             // initialises on first use
const { rank, size } = world;

// Every rank gets the elementwise sum of every rank's vector.
const local = Float64Array.from({ length: 4 }, (_, i) => rank * 10 + i);
const total = new Float64Array(4);
world.allreduce(local, total, mpi.Op.SUM);

// In place, with an explicit count and datatype.
world.allreduce(mpi.IN_PLACE, [local, 2, mpi.Datatype.DOUBLE], mpi.Op.MAX);

// Rooted collectives: root 0 sends block r of its buffer to rank r.
const blocks = rank === 0 ? new Int32Array(size * 3).map((_, i) => i) : null;
const mine = new Int32Array(3);
world.scatter(blocks, mine, 0);
world.gather(mine, rank === 0 ? new Int32Array(size * 3) : null, 0);

world.bcast(new Uint8Array(1 << 20), 0); // any TypedArray, DataView or Buffer
world.barrier();

// Nonblocking: a Request is awaitable; the event loop stays free meanwhile.
await world.iallreduce(local, total, mpi.Op.SUM);
const req = world.ibcast(total, 0);
req.wait();                                // or test(), Request.waitAll([...])

// Persistent: set up once, start many times.
const step = world.allreduceInit(local, total);
for (let i = 0; i < 100; i++) { local[0] = i; await step.start(); }
step.free();

// Sub-communicators, groups and intercommunicators.
const half = world.split(rank % 2, rank);  // ordered by key, then rank
const evens = world.create(world.group().rangeIncl([[0, size - 1, 2]]));
if (size > 1) {
  const inter = half.createIntercomm(0, world, rank % 2 ? 0 : 1, 7);
  const merged = inter.merge(rank % 2 === 1);
  merged.barrier();
}

// Derived datatypes: a matrix column travels as a vector, arrives dense.
const matrix = Float64Array.from({ length: 16 }, (_, i) => rank * 100 + i);   // 4 x 4, row-major
const columns = new Float64Array(4 * size);
const column = mpi.Datatype.vector(4, 1, 4, mpi.Datatype.DOUBLE).commit();
world.allgather([matrix, 1, column], [columns, 4, mpi.Datatype.DOUBLE]);

// User-defined reductions are JavaScript functions; non-commutative ones
// combine in rank order.
const later = mpi.Op.create((invec, inoutvec, len) => { /* keep inoutvec: the later rank's */ }, false);
world.allreduce(local, total, later);
const a = Float64Array.of(1, 5), b = Float64Array.of(4, 2), out = new Float64Array(2);
mpi.reduceLocals(a, b, out, mpi.Op.MAX);   // the proposed MPI_Reduce_locals: out = a op b

if (rank === 0) console.log(`tour done on ${size} ranks: column 0 of each rank`, columns.filter((_, i) => i % 4 === 0).join(' '), 'max', out.join(' '));
