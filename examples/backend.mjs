// Says which backend runs the job, which MPI library, and on which host
// each rank is.
//   mpirun -n 2 node examples/backend.mjs     (or nodempi -n 2 examples/backend.mjs)
import * as mpi from 'nodempi';
const world = mpi.init();
const library = mpi.libraryVersion().split('\n')[0];
console.log(`rank ${world.rank}: ${mpi.backend} backend, ${library}, on ${mpi.processorName()}`);
// rank 0: mpi backend, Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022, on node17
