/*
 * The derived-datatype benchmark of bench/datatypes.mjs in Open MPI's C API,
 * for reference: how much a strided layout costs an established MPI.
 * Same cases, layouts, checks and timing as bench/datatypes_job.mjs:
 *   bcast      count doubles contiguous, against MPI_Type_vector(count, 1, 2,
 *              MPI_DOUBLE) (every other double; the holes must stay untouched)
 *   allgather  each rank's R doubles into a contiguous buffer, against column
 *              `rank` of an R x size row-major matrix (the vector resized to
 *              one double's extent)
 * per point: correctness check, probe, warm-up batches of 1, 2, 4, ... until
 * warm ms have passed on rank 0, N = target / per-call calls each timed with
 * MPI_Wtime and followed by an untimed barrier (cut short at 4x target), the
 * check again, per-rank mean, max over ranks; one JSON line per point.
 *
 *   mpicc -O2 -o /tmp/ompi_datatypes bench/ompi/datatypes.c
 *   mpirun --allow-run-as-root --oversubscribe -n 2 /tmp/ompi_datatypes \
 *       [--cases bcast,allgather] [--sizes 8192,1048576] [--order contig|strided]
 *       [--target-ms 100] [--warm-ms 40] [--first-warm-ms 200]
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks;
static double val(int r, size_t i) { return (double)(r + 1) * 65536.0 + (double)(i & 65535); }

typedef struct {
  int bcast, strided;
  size_t count;
  double *buf, *send;
  MPI_Datatype type;
} Point;

static void call(const Point *p) {
  if (p->bcast) {
    if (p->strided) MPI_Bcast(p->buf, 1, p->type, 0, MPI_COMM_WORLD);
    else MPI_Bcast(p->buf, (int)p->count, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  } else if (p->strided) {
    MPI_Allgather(p->send, (int)p->count, MPI_DOUBLE, p->buf, 1, p->type, MPI_COMM_WORLD);
  } else {
    MPI_Allgather(p->send, (int)p->count, MPI_DOUBLE, p->buf, (int)p->count, MPI_DOUBLE, MPI_COMM_WORLD);
  }
}

static void setup(Point *p) {
  size_t n = p->count;
  p->send = NULL;
  p->type = MPI_DATATYPE_NULL;
  if (p->bcast) {
    p->buf = malloc(n * (p->strided ? 2 : 1) * 8);
    if (p->strided) {
      MPI_Type_vector((int)n, 1, 2, MPI_DOUBLE, &p->type);
      MPI_Type_commit(&p->type);
    }
  } else {
    p->send = malloc(n * 8);
    for (size_t i = 0; i < n; i++) p->send[i] = val(rank, i);
    p->buf = malloc(n * (size_t)nranks * 8);
    if (p->strided) {
      MPI_Datatype col;
      MPI_Type_vector((int)n, 1, nranks, MPI_DOUBLE, &col);
      MPI_Type_create_resized(col, 0, 8, &p->type);
      MPI_Type_commit(&p->type);
      MPI_Type_free(&col);
    }
  }
}

static void poison(Point *p) {
  size_t n = p->count, s = p->strided ? 2 : 1;
  if (p->bcast) {
    for (size_t i = 0; i < n * s; i++) p->buf[i] = rank == 0 ? -1.0 : NAN;
    if (rank == 0) for (size_t i = 0; i < n; i++) p->buf[i * s] = val(0, i);
  } else {
    for (size_t i = 0; i < n * (size_t)nranks; i++) p->buf[i] = NAN;
  }
}

static void check(const Point *p, const char *when) {
  size_t n = p->count;
  const char *what = p->bcast ? "bcast" : "allgather";
  if (p->bcast) {
    size_t s = p->strided ? 2 : 1;
    for (size_t i = 0; i < n; i++) {
      if (p->buf[i * s] != val(0, i)) {
        fprintf(stderr, "ompi datatypes: WRONG RESULT%s: %s element %zu is %g\n", when, what, i, p->buf[i * s]);
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
      if (p->strided && (rank == 0 ? p->buf[2 * i + 1] != -1.0 : !isnan(p->buf[2 * i + 1]))) {
        fprintf(stderr, "ompi datatypes: WRONG RESULT%s: %s hole %zu was written\n", when, what, i);
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
    }
    return;
  }
  for (int r = 0; r < nranks; r++) {
    for (size_t i = 0; i < n; i++) {
      double got = p->strided ? p->buf[i * (size_t)nranks + (size_t)r] : p->buf[(size_t)r * n + i];
      if (got != val(r, i)) {
        fprintf(stderr, "ompi datatypes: WRONG RESULT%s: %s rank %d element %zu is %g\n", when, what, r, i, got);
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
    }
  }
}

static double loop(const Point *p, long k, double *acc) {
  double w0 = MPI_Wtime(), a = 0;
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

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int cases[2] = {1, 0}, ncases = 2, strided_first = 0;
  size_t sizes[64] = {8192, 1048576};
  int nsizes = 2;
  double target_ms = 100, warm_ms = 40, first_warm_ms = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    const char *a = argv[i];
    char *v = argv[i + 1];
    if (!strcmp(a, "--cases")) {
      ncases = 0;
      for (char *t = strtok(v, ","); t && ncases < 2; t = strtok(NULL, ",")) cases[ncases++] = !strcmp(t, "bcast");
    } else if (!strcmp(a, "--sizes")) {
      nsizes = 0;
      for (char *t = strtok(v, ","); t && nsizes < 64; t = strtok(NULL, ",")) sizes[nsizes++] = strtoull(t, NULL, 10);
    } else if (!strcmp(a, "--order")) strided_first = !strcmp(v, "strided");
    else if (!strcmp(a, "--target-ms")) target_ms = atof(v);
    else if (!strcmp(a, "--warm-ms")) warm_ms = atof(v);
    else if (!strcmp(a, "--first-warm-ms")) first_warm_ms = atof(v);
  }
  double *all = malloc(sizeof(double) * (size_t)nranks);
  for (int ci = 0; ci < ncases; ci++) {
    for (int si = 0; si < nsizes; si++) {
      for (int li = 0; li < 2; li++) {
        Point p = {cases[ci], li == 0 ? strided_first : !strided_first, sizes[si] / 8, NULL, NULL, MPI_DATATYPE_NULL};
        double acc;
        setup(&p);
        poison(&p);
        MPI_Barrier(MPI_COMM_WORLD);
        call(&p);
        check(&p, "");
        double probe = bcast_num(loop(&p, 1, &acc));
        long warm = 0, k = 1;
        double tw = probe;
        MPI_Barrier(MPI_COMM_WORLD);
        double tw0 = MPI_Wtime();
        for (;;) {
          tw = loop(&p, k, &acc) / (double)k;
          warm += k;
          int more = rank == 0 && MPI_Wtime() - tw0 < (si == 0 ? first_warm_ms : warm_ms) / 1e3;
          if (bcast_num(more ? 1.0 : 0.0) == 0.0) break;
          k *= 2;
        }
        double per = bcast_num(probe < tw ? probe : tw);
        double want = round(target_ms / 1e3 / (per > 1e-9 ? per : 1e-9));
        long planned = want < 2 ? 2 : want > 200000 ? 200000 : (long)want;
        long batch = (planned + 7) / 8, iters = 0;
        int stopped = 0;
        double sum = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        double t_start = MPI_Wtime();
        while (iters < planned) {
          long kk = planned - iters < batch ? planned - iters : batch;
          loop(&p, kk, &acc);
          sum += acc;
          iters += kk;
          if (iters < planned) {
            int over = rank == 0 && MPI_Wtime() - t_start > 4 * target_ms / 1e3;
            if (bcast_num(over ? 1.0 : 0.0) != 0.0) { stopped = 1; break; }
          }
        }
        check(&p, " after the timed loop");
        double mine = sum / (double)iters * 1e6;
        MPI_Gather(&mine, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        if (rank == 0) {
          double mx = all[0], mn = all[0];
          for (int r = 1; r < nranks; r++) {
            if (all[r] > mx) mx = all[r];
            if (all[r] < mn) mn = all[r];
          }
          printf("{\"np\":%d,\"case\":\"%s\",\"layout\":\"%s\",\"bytes\":%zu,\"us\":%.6g,\"min_us\":%.6g,\"iters\":%ld,"
                 "\"warmup\":%ld%s}\n",
                 nranks, p.bcast ? "bcast" : "allgather", p.strided ? "strided" : "contig", p.count * 8, mx, mn, iters,
                 warm + 1, stopped ? ",\"stopped\":true" : "");
          fflush(stdout);
        }
        if (p.type != MPI_DATATYPE_NULL) MPI_Type_free(&p.type);
        free(p.buf);
        free(p.send);
      }
    }
  }
  free(all);
  MPI_Finalize();
  return 0;
}
