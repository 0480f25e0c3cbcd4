// The multi-rank suites on the mpi backend over Open MPI (test/mpi/suite.ts).
import { mpiSuite } from './suite.js';

mpiSuite('openmpi');
