/*
 * What a C MPI does when the ranks of a bcast disagree on the root: every
 * rank names itself. With MPI_ERRORS_RETURN, Open MPI 4.1 and MPICH 4.0 both
 * return MPI_SUCCESS on every rank (each root sent eagerly and left; what a
 * rank holds afterwards is its own value or a stray peer's). nodempi throws
 * ERR_NOT_SAME on every rank instead (test/fixtures/mismatch/mismatch.mjs),
 * which needs the root to hear from the others before it returns:
 * bench/README.md, "Why the rooted calls keep their round trip".
 *
 *   mpicc -o /tmp/root_mismatch bench/ompi/root_mismatch.c
 *   mpirun -n 2 /tmp/root_mismatch
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  double x = rank + 1;
  int rc = MPI_Bcast(&x, 1, MPI_DOUBLE, rank, MPI_COMM_WORLD);
  printf("rank %d: MPI_Bcast with root %d returned %d, x = %g\n", rank, rank, rc, x);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
