// A gather of one size at 2 ranks, with the send buffer left alone between
// calls (as in the OSU loop) and then rewritten before every call (as a
// real job's would be): bench/README.md, "Streaming stores into the slots".
// bench/gather_probe.mjs is the same in nodempi.
//   mpicc -O2 bench/ompi/gather_probe.c -o gather_probe
//   mpirun -n 2 ./gather_probe [bytes, default 16384]
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const size_t bytes = argc > 1 ? (size_t)atol(argv[1]) : 16384;
  const int iters = 20000, warm = 2000;
  double* send = malloc(bytes);
  double* recv = malloc(bytes * n);
  for (size_t k = 0; k < bytes / 8; ++k) send[k] = (double)k;
  for (int rewrite = 0; rewrite < 2; ++rewrite) {
    double sum = 0;
    for (int i = -warm; i < iters; ++i) {
      if (rewrite) for (size_t k = 0; k < bytes / 8; ++k) send[k] = (double)(i + k);
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      MPI_Gather(send, (int)(bytes / 8), MPI_DOUBLE, recv, (int)(bytes / 8), MPI_DOUBLE, 0, MPI_COMM_WORLD);
      if (i >= 0) sum += MPI_Wtime() - t0;
    }
    double mine = sum / iters * 1e6, most;
    MPI_Reduce(&mine, &most, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (me == 0) printf("C %s %.2f us%s", rewrite ? "rewritten" : "clean", most, rewrite ? "\n" : "  ");
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
