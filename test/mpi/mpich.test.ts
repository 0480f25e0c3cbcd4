// The multi-rank suites on the mpi backend over MPICH (test/mpi/suite.ts).
import { mpiSuite } from './suite.js';

mpiSuite('mpich');
