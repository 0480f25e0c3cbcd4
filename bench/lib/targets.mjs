// Issue 20's ratio targets for nodempi on the mpi backend, at 2 ranks on
// Open MPI: what bench/backends.mjs checks on a run's medians and
// bench/decide.mjs decides from many runs. `bound` is the largest ratio
// nodempi-mpi / ref that meets the target at a point `pick` selects by size.
import { fmtSize } from './jobs.mjs';

export const SMALL = 64 * 1024;

export const TARGETS = [
  { name: `nodempi-mpi at most 2x C, barrier and sizes below ${fmtSize(SMALL)}`, ref: 'c', bound: 2, pick: (bytes) => bytes < SMALL },
  { name: `nodempi-mpi within 5% of C from ${fmtSize(SMALL)} up`, ref: 'c', bound: 1.05, pick: (bytes) => bytes >= SMALL },
  { name: 'nodempi-mpi at or below mpi4py at every point', ref: 'mpi4py', bound: 1, pick: () => true },
];
