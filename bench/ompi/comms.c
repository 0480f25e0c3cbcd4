/*
 * Communicator creation cost in Open MPI's C API, for comparison with
 * bench/comms_job.mjs (same scheme; keep the two in step):
 *   MPI_Comm_dup, MPI_Comm_split(rank % 2, rank), MPI_Comm_split(0, -rank)
 *   and MPI_Comm_create(world group), each followed by MPI_Comm_free.
 * Per kind (in an order rotated by --run), on every rank:
 *   1. verify a few times: size, rank, member order (allgather of world
 *      ranks) and an allreduce on the new communicator (a wrong result
 *      prints WRONG RESULT to stderr and MPI_Abort(2)s);
 *   2. warm-up: batches of 1, 2, 4, ... create+free pairs until warm ms have
 *      passed on rank 0 (its decision travels by an untimed bcast);
 *   3. "pair": N = clamp(target / per-pair time, min_iters, max_iters)
 *      iterations of [timed: create, free] [untimed MPI_Barrier];
 *   4. "create" and "free" apart: N iterations of [timed: create] [barrier]
 *      [timed: free] [barrier];
 *   5. per-rank mean, reported on rank 0 as the max over ranks.
 * One JSON line per result on rank 0's stdout.
 *
 * Build and run (bench/comms.mjs does this in a temp dir):
 *   mpicc -O2 -o comms bench/ompi/comms.c
 *   mpirun --allow-run-as-root --oversubscribe -n 2 ./comms \
 *       [--warm-ms 50] [--target-ms 150] [--min-iters 2000] [--max-iters 20000] [--run 0]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { DUP, SPLIT_HALF, SPLIT_REV, CREATE, NKIND };
static const char *kKind[NKIND] = {"dup", "split(rank%2,rank)", "split(0,-rank)", "create(group)"};

static int rank, nranks;
static MPI_Group world_group;

static MPI_Comm make(int kind) {
  MPI_Comm c = MPI_COMM_NULL;
  switch (kind) {
    case DUP: MPI_Comm_dup(MPI_COMM_WORLD, &c); break;
    case SPLIT_HALF: MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &c); break;
    case SPLIT_REV: MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &c); break;
    case CREATE: MPI_Comm_create(MPI_COMM_WORLD, world_group, &c); break;
  }
  return c;
}

/* The world ranks, in order, of the communicator this rank lands in. */
static int expected(int kind, int *members) {
  int m = 0;
  for (int r = 0; r < nranks; r++) {
    if (kind == SPLIT_HALF && r % 2 != rank % 2) continue;
    members[m++] = kind == SPLIT_REV ? nranks - 1 - r : r;
  }
  return m;
}

static void wrong(const char *what, int kind) {
  fprintf(stderr, "ompi rank %d: WRONG RESULT: %s after %s\n", rank, what, kKind[kind]);
  MPI_Abort(MPI_COMM_WORLD, 2);
}

static void verify(int kind) {
  int *members = malloc(sizeof(int) * nranks), *order = malloc(sizeof(int) * nranks);
  int m = expected(kind, members), me = -1;
  for (int i = 0; i < m; i++) if (members[i] == rank) me = i;
  for (int t = 0; t < 3; t++) {
    MPI_Comm c = make(kind);
    int cs, cr;
    MPI_Comm_size(c, &cs);
    MPI_Comm_rank(c, &cr);
    if (cs != m || cr != me) wrong("size or rank", kind);
    MPI_Allgather(&rank, 1, MPI_INT, order, 1, MPI_INT, c);
    if (memcmp(order, members, sizeof(int) * m) != 0) wrong("member order", kind);
    double one = rank + 1, sum = 0, want = 0;
    for (int i = 0; i < m; i++) want += members[i] + 1;
    MPI_Allreduce(&one, &sum, 1, MPI_DOUBLE, MPI_SUM, c);
    if (sum != want) wrong("allreduce", kind);
    MPI_Comm_free(&c);
  }
  free(members);
  free(order);
}

static double pairs(int kind, long k) {
  double acc = 0;
  for (long i = 0; i < k; i++) {
    double t0 = MPI_Wtime();
    MPI_Comm c = make(kind);
    MPI_Comm_free(&c);
    acc += MPI_Wtime() - t0;
    MPI_Barrier(MPI_COMM_WORLD);
  }
  return acc;
}

static void report(int kind, const char *mode, double us, long iters, long warm) {
  double *all = rank == 0 ? malloc(sizeof(double) * nranks) : NULL;
  MPI_Gather(&us, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank != 0) return;
  double mx = all[0], mn = all[0], sum = 0;
  for (int r = 0; r < nranks; r++) {
    if (all[r] > mx) mx = all[r];
    if (all[r] < mn) mn = all[r];
    sum += all[r];
  }
  printf("{\"impl\":\"ompi\",\"np\":%d,\"section\":\"create\",\"kind\":\"%s\",\"mode\":\"%s\",\"us\":%.6g,"
         "\"min_us\":%.6g,\"avg_us\":%.6g,\"iters\":%ld,\"warmup\":%ld}\n",
         nranks, kKind[kind], mode, mx, mn, sum / nranks, iters, warm);
  fflush(stdout);
  free(all);
}

int main(int argc, char **argv) {
  double warm_ms = 50, target_ms = 150;
  long min_iters = 2000, max_iters = 20000, run = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--warm-ms")) warm_ms = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--target-ms")) target_ms = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--min-iters")) min_iters = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--max-iters")) max_iters = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--run")) run = atol(argv[i + 1]);
  }
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);

  /* rotated by --run, so that no kind always pays for being measured first */
  for (int j = 0; j < NKIND; j++) {
    int kind = (int)((j + run) % NKIND);
    verify(kind);
    MPI_Barrier(MPI_COMM_WORLD);
    double tw0 = MPI_Wtime(), per = 1e30;
    long warm = 0, b = 1;
    for (;;) {
      double t = pairs(kind, b) / b;
      if (t < per) per = t;
      warm += b;
      int more = rank == 0 && (MPI_Wtime() - tw0) * 1e3 < warm_ms;
      MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
      if (!more) break;
      b *= 2;
    }
    MPI_Bcast(&per, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    long iters = (long)(target_ms / 1e3 / (per > 1e-9 ? per : 1e-9) + 0.5);
    if (iters < min_iters) iters = min_iters;
    if (iters > max_iters) iters = max_iters;

    MPI_Barrier(MPI_COMM_WORLD);
    double pair = pairs(kind, iters);

    double tc = 0, tf = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (long i = 0; i < iters; i++) {
      double t0 = MPI_Wtime();
      MPI_Comm c = make(kind);
      tc += MPI_Wtime() - t0;
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = MPI_Wtime();
      MPI_Comm_free(&c);
      tf += MPI_Wtime() - t0;
      MPI_Barrier(MPI_COMM_WORLD);
    }
    report(kind, "pair", pair / iters * 1e6, iters, warm);
    report(kind, "create", tc / iters * 1e6, iters, warm);
    report(kind, "free", tf / iters * 1e6, iters, warm);
  }
  MPI_Group_free(&world_group);
  MPI_Finalize();
  return 0;
}
