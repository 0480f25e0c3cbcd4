/*
 * The nodempi benchmark sweep against Open MPI's C API: MPI_Barrier, Bcast,
 * Reduce, Allreduce, Gather, Scatter, Allgather and Alltoall, and (asked for
 * by name with --colls) Gatherv, Scatterv, Allgatherv, Alltoallv, Alltoallw,
 * Reduce_scatter, Reduce_scatter_block, Scan and Exscan, on doubles (MPI_SUM,
 * root 0, equal counts and packed displacements for the v and w forms), one
 * JSON line per point on rank 0's stdout.
 *
 * Same scheme as bench/lib/sweep.mjs and bench/mpi4py/osu_coll.py (keep the
 * three in step):
 *   1. correctness: receive buffers poisoned with NaN, one call, every
 *      element checked (a wrong result prints to stderr and MPI_Abort(2)s);
 *   2. probe: one call, rank 0's wall time broadcast;
 *   3. warm-up: batches of 1, 2, 4, ... untimed calls until warm ms have
 *      passed on rank 0 (at most max_warm calls; an untimed bcast after each
 *      batch carries the decision); c = min(probe, last batch mean) broadcast.
 *      The first size of each collective warms up for first_warm ms (200),
 *      as in the JavaScript harness, where V8 needs it to tier up;
 *   4. timed: N = clamp(target / c, min_iters, max_iters) calls in up to 8
 *      batches (rank 0 stops early, by an untimed bcast after a batch, once
 *      the point has taken 4x target), each call timed on its own with
 *      MPI_Wtime and followed by an untimed MPI_Barrier (OSU style); barrier
 *      itself is timed as loops of back-to-back barriers;
 *   5. the last call's output checked again;
 *   6. per-rank mean, gathered at rank 0, reported as the max over ranks.
 * `bytes` is one rank's message: the buffer for bcast/reduce/allreduce/scan/
 * exscan, one rank's block for gather/scatter/allgather/alltoall, their v and
 * w forms and reduce_scatter(_block) (whose send buffer is nranks blocks).
 *
 * Build and run (bench/run.mjs does this in a temp dir):
 *   mpicc -O2 -o /tmp/osu_coll bench/ompi/osu_coll.c
 *   mpirun --allow-run-as-root --oversubscribe -n 2 /tmp/osu_coll \
 *       [--colls a,b] [--sizes 8,64] [--warm-ms 50] [--first-warm-ms 200] [--target-ms 150]
 *       [--max-warm 1000000] [--min-iters 2] [--max-iters 200000] [--label ompi] [--tight 1]
 *       [--thread single|funneled|serialized|multiple] [--huge 1]
 * --thread initialises with MPI_Init_thread at that level instead of
 * MPI_Init: Open MPI takes its internal locks at every level above SINGLE,
 * and nodempi's mpi backend asks for FUNNELED (bench/BACKENDS.md).
 * --huge 1 asks for transparent huge pages on every buffer of 4 MiB or more
 * before its first touch, as numpy does for its arrays (and so mpi4py's
 * buffers get them): whether that is what mpi4py gains at the large points.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>

/* NBASE: the default set (without --colls), as before the v forms existed */
enum { BARRIER, BCAST, REDUCE, ALLREDUCE, GATHER, SCATTER, ALLGATHER, ALLTOALL, NBASE,
       GATHERV = NBASE, SCATTERV, ALLGATHERV, ALLTOALLV, ALLTOALLW, REDUCE_SCATTER, REDUCE_SCATTER_BLOCK, SCAN, EXSCAN,
       NCOLL };
static const char *kNames[NCOLL] = {"barrier",    "bcast",      "reduce",    "allreduce",     "gather",
                                    "scatter",    "allgather",  "alltoall",  "gatherv",       "scatterv",
                                    "allgatherv", "alltoallv",  "alltoallw", "reduceScatter", "reduceScatterBlock",
                                    "scan",       "exscan"};

static int rank, nranks;
/* v and w layouts: equal counts, packed in rank order; rebuilt per point */
static int *counts, *displs, *byte_displs;
static MPI_Datatype *doubles;

static double val(int r, size_t i) { return (double)(r + 1) * 65536.0 + (double)(i & 65535); }
static double sum_val(int n, size_t i) { return 65536.0 * (n * (n + 1) / 2) + (double)n * (double)(i & 65535); }
static double a2a_val(int s, int d, int n, size_t i) { return (double)(s * n + d + 1) * 65536.0 + (double)(i & 65535); }
static double rs_val(int d, int n, size_t i) {
  return 65536.0 * ((double)n * (n * (n - 1) / 2) + (double)n * (d + 1)) + (double)n * (double)(i & 65535);
}
static double scan_val(int r, size_t i) { return 65536.0 * ((r + 1) * (r + 2) / 2) + (double)(r + 1) * (double)(i & 65535); }
static double exscan_val(int r, size_t i) { return 65536.0 * (r * (r + 1) / 2) + (double)r * (double)(i & 65535); }

typedef struct {
  int coll;
  size_t count;
  double *send, *recv;
} Point;

static void call(const Point *p) {
  int c = (int)p->count;
  switch (p->coll) {
    case BARRIER: MPI_Barrier(MPI_COMM_WORLD); break;
    case BCAST: MPI_Bcast(p->recv, c, MPI_DOUBLE, 0, MPI_COMM_WORLD); break;
    case REDUCE: MPI_Reduce(p->send, p->recv, c, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD); break;
    case ALLREDUCE: MPI_Allreduce(p->send, p->recv, c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); break;
    case GATHER: MPI_Gather(p->send, c, MPI_DOUBLE, p->recv, c, MPI_DOUBLE, 0, MPI_COMM_WORLD); break;
    case SCATTER: MPI_Scatter(p->send, c, MPI_DOUBLE, p->recv, c, MPI_DOUBLE, 0, MPI_COMM_WORLD); break;
    case ALLGATHER: MPI_Allgather(p->send, c, MPI_DOUBLE, p->recv, c, MPI_DOUBLE, MPI_COMM_WORLD); break;
    case ALLTOALL: MPI_Alltoall(p->send, c, MPI_DOUBLE, p->recv, c, MPI_DOUBLE, MPI_COMM_WORLD); break;
    case GATHERV: MPI_Gatherv(p->send, c, MPI_DOUBLE, p->recv, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD); break;
    case SCATTERV: MPI_Scatterv(p->send, counts, displs, MPI_DOUBLE, p->recv, c, MPI_DOUBLE, 0, MPI_COMM_WORLD); break;
    case ALLGATHERV:
      MPI_Allgatherv(p->send, c, MPI_DOUBLE, p->recv, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
      break;
    case ALLTOALLV:
      MPI_Alltoallv(p->send, counts, displs, MPI_DOUBLE, p->recv, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
      break;
    case ALLTOALLW:
      MPI_Alltoallw(p->send, counts, byte_displs, doubles, p->recv, counts, byte_displs, doubles, MPI_COMM_WORLD);
      break;
    case REDUCE_SCATTER: MPI_Reduce_scatter(p->send, p->recv, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); break;
    case REDUCE_SCATTER_BLOCK: MPI_Reduce_scatter_block(p->send, p->recv, c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); break;
    case SCAN: MPI_Scan(p->send, p->recv, c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); break;
    case EXSCAN: MPI_Exscan(p->send, p->recv, c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); break;
  }
}

static int huge = 0; /* --huge 1 */

/* numpy's rule (its alloc.c): an allocation of 4 MiB or more is madvised
 * MADV_HUGEPAGE from its first whole page on, before anything touches it. */
static double *buffer(size_t bytes) {
  double *b = malloc(bytes);
  if (huge && b && bytes >= ((size_t)1 << 22)) {
    const size_t offset = 4096 - (uintptr_t)b % 4096;
    madvise((char *)b + offset, bytes - offset, MADV_HUGEPAGE);
  }
  return b;
}

static void setup(Point *p) {
  size_t n = p->count, P = (size_t)nranks;
  p->send = p->recv = NULL;
  for (int r = 0; r < nranks; r++) {
    counts[r] = (int)n;
    displs[r] = r * (int)n;
    byte_displs[r] = r * (int)n * 8;
  }
  switch (p->coll) {
    case BARRIER: break;
    case BCAST: p->recv = buffer((n ? n : 1) * 8); break;
    case REDUCE: case ALLREDUCE: case SCAN: case EXSCAN:
      p->send = buffer(n * 8); p->recv = buffer(n * 8);
      for (size_t i = 0; i < n; i++) p->send[i] = val(rank, i);
      break;
    case GATHER: case ALLGATHER: case GATHERV: case ALLGATHERV:
      p->send = buffer(n * 8); p->recv = buffer(n * P * 8);
      for (size_t i = 0; i < n; i++) p->send[i] = val(rank, i);
      break;
    case SCATTER: case SCATTERV:
      p->recv = buffer(n * 8);
      p->send = buffer(n * P * 8);  /* only significant at the root */
      if (rank == 0)
        for (size_t d = 0; d < P; d++) for (size_t i = 0; i < n; i++) p->send[d * n + i] = val((int)d, i);
      break;
    case ALLTOALL: case ALLTOALLV: case ALLTOALLW:
      p->send = buffer(n * P * 8); p->recv = buffer(n * P * 8);
      for (size_t d = 0; d < P; d++)
        for (size_t i = 0; i < n; i++) p->send[d * n + i] = a2a_val(rank, (int)d, nranks, i);
      break;
    case REDUCE_SCATTER: case REDUCE_SCATTER_BLOCK:
      p->send = buffer(n * P * 8); p->recv = buffer(n * 8);
      for (size_t d = 0; d < P; d++)
        for (size_t i = 0; i < n; i++) p->send[d * n + i] = a2a_val(rank, (int)d, nranks, i);
      break;
  }
}

static void poison(Point *p) {
  size_t n = p->count, P = (size_t)nranks;
  if (p->coll == BARRIER) return;
  if (p->coll == BCAST) {
    for (size_t i = 0; i < n; i++) p->recv[i] = rank == 0 ? val(0, i) : NAN;
    return;
  }
  int whole = p->coll == GATHER || p->coll == ALLGATHER || p->coll == ALLTOALL || p->coll == GATHERV ||
              p->coll == ALLGATHERV || p->coll == ALLTOALLV || p->coll == ALLTOALLW;
  size_t len = whole ? n * P : n;
  for (size_t i = 0; i < len; i++) p->recv[i] = NAN;
}

static void fail(const Point *p, size_t i, double got, double want, const char *when) {
  fprintf(stderr, "ompi: WRONG RESULT%s: %s %zu B, rank %d: element %zu is %g, expected %g\n", when,
          kNames[p->coll], p->count * 8, rank, i, got, want);
  MPI_Abort(MPI_COMM_WORLD, 2);
}

static void check(const Point *p, const char *when) {
  size_t n = p->count;
  int P = nranks;
  switch (p->coll) {
    case BARRIER: return;
    case BCAST:
      for (size_t i = 0; i < n; i++) if (p->recv[i] != val(0, i)) fail(p, i, p->recv[i], val(0, i), when);
      return;
    case REDUCE:
      if (rank != 0) return;
      /* fall through */
    case ALLREDUCE:
      for (size_t i = 0; i < n; i++) if (p->recv[i] != sum_val(P, i)) fail(p, i, p->recv[i], sum_val(P, i), when);
      return;
    case GATHER: case GATHERV:
      if (rank != 0) return;
      /* fall through */
    case ALLGATHER: case ALLGATHERV:
      for (int r = 0; r < P; r++)
        for (size_t i = 0; i < n; i++)
          if (p->recv[r * n + i] != val(r, i)) fail(p, r * n + i, p->recv[r * n + i], val(r, i), when);
      return;
    case SCATTER: case SCATTERV:
      for (size_t i = 0; i < n; i++) if (p->recv[i] != val(rank, i)) fail(p, i, p->recv[i], val(rank, i), when);
      return;
    case REDUCE_SCATTER: case REDUCE_SCATTER_BLOCK:
      for (size_t i = 0; i < n; i++) if (p->recv[i] != rs_val(rank, P, i)) fail(p, i, p->recv[i], rs_val(rank, P, i), when);
      return;
    case SCAN:
      for (size_t i = 0; i < n; i++) if (p->recv[i] != scan_val(rank, i)) fail(p, i, p->recv[i], scan_val(rank, i), when);
      return;
    case EXSCAN:
      /* rank 0's receive buffer is undefined in MPI */
      if (rank == 0) return;
      for (size_t i = 0; i < n; i++)
        if (p->recv[i] != exscan_val(rank, i)) fail(p, i, p->recv[i], exscan_val(rank, i), when);
      return;
    case ALLTOALL: case ALLTOALLV: case ALLTOALLW:
      for (int s = 0; s < P; s++)
        for (size_t i = 0; i < n; i++) {
          double want = a2a_val(s, rank, P, i);
          if (p->recv[s * n + i] != want) fail(p, s * n + i, p->recv[s * n + i], want, when);
        }
      return;
  }
}

/* k calls; returns the wall time, *acc gets the sum of the timed calls */
static int tight = 0; /* --tight 1: every collective back to back, as barrier */

static double loop(const Point *p, long k, double *acc) {
  double w0 = MPI_Wtime();
  if (p->coll == BARRIER || tight) {
    for (long i = 0; i < k; i++) call(p);
    double t = MPI_Wtime() - w0;
    *acc = t;
    return t;
  }
  double a = 0;
  for (long i = 0; i < k; i++) {
    double t0 = MPI_Wtime();
    call(p);
    a += MPI_Wtime() - t0;
    MPI_Barrier(MPI_COMM_WORLD);
  }
  *acc = a;
  return MPI_Wtime() - w0;
}

static double bcast_num(double x) {
  MPI_Bcast(&x, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return x;
}

static long clampl(double x, long lo, long hi) {
  if (!(x >= (double)lo)) return lo;
  if (x > (double)hi) return hi;
  return (long)x;
}

static int split_list(char *s, const char **out, int max) {
  int n = 0;
  for (char *t = strtok(s, ","); t && n < max; t = strtok(NULL, ",")) out[n++] = t;
  return n;
}

/* The level --thread names, or -1 (MPI_Init) when there is none. Read before
 * MPI_Init, so apart from the other options. */
static int thread_level(int argc, char **argv) {
  static const char *names[] = {"single", "funneled", "serialized", "multiple"};
  const int levels[] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED, MPI_THREAD_MULTIPLE};
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--thread")) continue;
    for (int k = 0; k < 4; k++) if (!strcmp(argv[i + 1], names[k])) return levels[k];
    fprintf(stderr, "ompi: --thread must be single, funneled, serialized or multiple, not %s\n", argv[i + 1]);
    exit(2);
  }
  return -1;
}

int main(int argc, char **argv) {
  const int level = thread_level(argc, argv);
  if (level < 0) {
    MPI_Init(&argc, &argv);
  } else {
    int provided;
    MPI_Init_thread(&argc, &argv, level, &provided);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  const char *colls[NCOLL];
  int ncolls = NBASE;
  for (int i = 0; i < NBASE; i++) colls[i] = kNames[i];
  counts = malloc(sizeof(int) * (size_t)nranks);
  displs = malloc(sizeof(int) * (size_t)nranks);
  byte_displs = malloc(sizeof(int) * (size_t)nranks);
  doubles = malloc(sizeof(MPI_Datatype) * (size_t)nranks);
  for (int r = 0; r < nranks; r++) doubles[r] = MPI_DOUBLE;
  size_t sizes[64] = {8, 64, 1024, 16384, 262144, 1048576, 4194304, 16777216};
  int nsizes = 8;
  double warm_ms = 50, first_warm_ms = 200, target_ms = 150;
  long max_warm = 1000000, min_iters = 2, max_iters = 200000;
  const char *label = "ompi";
  for (int i = 1; i + 1 < argc; i += 2) {
    const char *a = argv[i];
    char *v = argv[i + 1];
    if (!strcmp(a, "--colls")) ncolls = split_list(v, colls, NCOLL);
    else if (!strcmp(a, "--sizes")) {
      const char *tmp[64];
      nsizes = split_list(v, tmp, 64);
      for (int k = 0; k < nsizes; k++) sizes[k] = (size_t)strtoull(tmp[k], NULL, 10);
    } else if (!strcmp(a, "--warm-ms")) warm_ms = atof(v);
    else if (!strcmp(a, "--first-warm-ms")) first_warm_ms = atof(v);
    else if (!strcmp(a, "--target-ms")) target_ms = atof(v);
    else if (!strcmp(a, "--max-warm")) max_warm = atol(v);
    else if (!strcmp(a, "--min-iters")) min_iters = atol(v);
    else if (!strcmp(a, "--max-iters")) max_iters = atol(v);
    else if (!strcmp(a, "--label")) label = v;
    else if (!strcmp(a, "--tight")) tight = atoi(v);
    else if (!strcmp(a, "--huge")) huge = atoi(v);
  }

  double *all = malloc(sizeof(double) * (size_t)nranks);
  for (int ci = 0; ci < ncolls; ci++) {
    int coll = -1;
    for (int k = 0; k < NCOLL; k++) if (!strcmp(colls[ci], kNames[k])) coll = k;
    if (coll < 0) {
      if (rank == 0) fprintf(stderr, "ompi: unknown collective %s\n", colls[ci]);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int npts = coll == BARRIER ? 1 : nsizes;
    for (int si = 0; si < npts; si++) {
      Point p = {coll, coll == BARRIER ? 0 : sizes[si] / 8, NULL, NULL};
      setup(&p);
      double acc;
      /* 1. correctness */
      poison(&p);
      MPI_Barrier(MPI_COMM_WORLD);
      call(&p);
      check(&p, "");
      MPI_Barrier(MPI_COMM_WORLD);
      /* 2. probe */
      double probe = bcast_num(loop(&p, 1, &acc));
      /* 3. warm-up: batches of 1, 2, 4, ... until warm_ms has passed on rank 0 */
      long warm = 0, k = 1;
      double tw = probe;
      MPI_Barrier(MPI_COMM_WORLD);
      double tw0 = MPI_Wtime();
      for (;;) {
        tw = loop(&p, k, &acc) / (double)k;
        warm += k;
        int more = rank == 0 && MPI_Wtime() - tw0 < (si == 0 ? first_warm_ms : warm_ms) / 1e3 && warm < max_warm;
        if (bcast_num(more ? 1.0 : 0.0) == 0.0) break;
        k = 2 * k < max_warm - warm ? 2 * k : max_warm - warm;
      }
      double per = bcast_num(probe < tw ? probe : tw);
      /* 4. timed */
      long planned = clampl(round(target_ms / 1e3 / (per > 1e-9 ? per : 1e-9)), min_iters, max_iters);
      long batch = (planned + 7) / 8, iters = 0;
      int stopped = 0;
      double sum_acc = 0;
      MPI_Barrier(MPI_COMM_WORLD);
      double t_start = MPI_Wtime();
      while (iters < planned) {
        long k = planned - iters < batch ? planned - iters : batch;
        loop(&p, k, &acc);
        sum_acc += acc;
        iters += k;
        if (iters < planned) {
          int over = rank == 0 && MPI_Wtime() - t_start > 4 * target_ms / 1e3 && iters >= min_iters;
          if (bcast_num(over ? 1.0 : 0.0) != 0.0) { stopped = 1; break; }
        }
      }
      acc = sum_acc;
      /* 5. check again */
      check(&p, " after the timed loop");
      /* 6. max over ranks */
      double mine = acc / (double)iters * 1e6;
      MPI_Gather(&mine, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      if (rank == 0) {
        double mx = all[0], mn = all[0], sum = 0;
        for (int r = 0; r < nranks; r++) {
          if (all[r] > mx) mx = all[r];
          if (all[r] < mn) mn = all[r];
          sum += all[r];
        }
        printf("{\"impl\":\"%s\",\"np\":%d,\"coll\":\"%s\",\"bytes\":%zu,\"us\":%.6g,\"min_us\":%.6g,"
               "\"avg_us\":%.6g,\"iters\":%ld,\"warmup\":%ld%s}\n",
               label, nranks, kNames[coll], p.count * 8, mx, mn, sum / nranks, iters, warm + 1,
               stopped ? ",\"stopped\":true" : "");
        fflush(stdout);
      }
      free(p.send);
      free(p.recv);
    }
  }
  free(all);
  free(counts);
  free(displs);
  free(byte_displs);
  free(doubles);
  MPI_Finalize();
  return 0;
}
