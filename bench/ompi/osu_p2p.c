/*
 * Point-to-point latency and bandwidth between 2 ranks against Open MPI's C
 * API, the method of the OSU micro-benchmarks' osu_latency and osu_bw; one
 * JSON line per point on rank 0's stdout. bench/p2p.mjs runs it beside
 * bench/p2p_job.mjs (nodempi) and bench/mpi4py/osu_p2p.py (keep the three
 * in step: same phases, flags, data and JSON fields).
 *
 * latency (osu_latency): ping-pong of `bytes` bytes. Rank 0 sends then
 * receives, rank 1 receives then sends (MPI_Send/MPI_Recv, tag 1). Reported:
 * rank 0's wall time of the timed round trips / (2 x iterations), µs.
 *
 * bw (osu_bw): rank 0 posts a window of W MPI_Isend of `bytes` bytes (tag
 * 100), rank 1 W MPI_Irecv; both MPI_Waitall; then rank 1 sends a 4-byte
 * ack (tag 101) that rank 0 receives. As in osu_bw every send of a window
 * reads one send buffer and every receive writes one receive buffer.
 * Reported: bytes x W x iterations / rank 0's wall time of the timed
 * windows, in MB/s (10^6 bytes/s), and that time per message in µs.
 *
 * Per size, for either test:
 *   1. check round: the receive buffer poisoned (0xff), one untimed round,
 *      then every byte received compared with what the peer sent
 *      (byte i = (i + 37 x sender + bytes) mod 251, never 0xff) and each
 *      receive's status (source, tag, count) with what it must be; a
 *      mismatch prints WRONG RESULT to stderr and MPI_Abort(2)s;
 *   2. warm-up: skip - 1 more rounds (OSU's skip: 100 for latency, 10 for
 *      bw; 10 and 2 above `large` bytes), then batches of 1, 2, 4, ...
 *      rounds until warm ms have passed on rank 0 since the check round (an
 *      untimed MPI_Bcast after each batch carries the decision); the first
 *      size of each test warms up for first-warm ms. OSU's skip alone lasts
 *      well under a millisecond for small messages, too short for V8 to
 *      optimise nodempi's call path (bench/README.md); every implementation
 *      gets the same;
 *   3. MPI_Barrier, then `iters` timed rounds back to back (OSU's: 10000 for
 *      latency, 100 for bw; 1000 and 20 above `large` bytes), timed on rank 0
 *      with MPI_Wtime.
 * Buffers: allocated page-aligned once per test at the largest size and
 * written before the first size (no first-touch page faults in a timed
 * loop); each size uses their first `bytes` bytes.
 *
 * Build and run (bench/p2p.mjs does this in a temp dir):
 *   mpicc.openmpi -O2 -o /tmp/osu_p2p bench/ompi/osu_p2p.c
 *   mpirun.openmpi --allow-run-as-root -n 2 /tmp/osu_p2p [--tests latency,bw]
 *       [--lat-sizes 0,1,2,...] [--bw-sizes 1024,...] [--window 64] [--large 8192]
 *       [--lat-iters 10000] [--lat-iters-large 1000] [--lat-skip 100] [--lat-skip-large 10]
 *       [--bw-iters 100] [--bw-iters-large 20] [--bw-skip 10] [--bw-skip-large 2]
 *       [--warm-ms 50] [--first-warm-ms 200] [--label c]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LAT_TAG = 1, BW_TAG = 100, ACK_TAG = 101, MAX_WINDOW = 1024, MAX_SIZES = 64 };

static int rank;

static unsigned char pattern(int sender, size_t bytes, size_t i) { return (unsigned char)((i + 37u * (size_t)sender + bytes) % 251u); }

static void fill(unsigned char *buf, size_t bytes, int sender) {
  for (size_t i = 0; i < bytes; i++) buf[i] = pattern(sender, bytes, i);
}

static void wrong(const char *test, size_t bytes, const char *what) {
  fprintf(stderr, "osu_p2p: WRONG RESULT: %s %zu B, rank %d: %s\n", test, bytes, rank, what);
  MPI_Abort(MPI_COMM_WORLD, 2);
}

/* The received bytes are what `sender` sent, and the status says so. */
static void check(const char *test, size_t bytes, const unsigned char *buf, int sender, int tag, const MPI_Status *st) {
  char what[160];
  for (size_t i = 0; i < bytes; i++) {
    if (buf[i] != pattern(sender, bytes, i)) {
      snprintf(what, sizeof what, "byte %zu is %u, expected %u", i, buf[i], pattern(sender, bytes, i));
      wrong(test, bytes, what);
    }
  }
  int count;
  MPI_Get_count(st, MPI_BYTE, &count);
  if (st->MPI_SOURCE != sender || st->MPI_TAG != tag || (size_t)count != bytes) {
    snprintf(what, sizeof what, "status source %d tag %d count %d, expected %d %d %zu", st->MPI_SOURCE, st->MPI_TAG, count,
             sender, tag, bytes);
    wrong(test, bytes, what);
  }
}

static unsigned char *sbuf, *rbuf, ack[4];
static MPI_Request reqs[MAX_WINDOW];
static MPI_Status stats[MAX_WINDOW];
static int window = 64;

/* k ping-pong round trips */
static void latency_rounds(size_t bytes, long k, MPI_Status *st) {
  int n = (int)bytes;
  for (long i = 0; i < k; i++) {
    if (rank == 0) {
      MPI_Send(sbuf, n, MPI_BYTE, 1, LAT_TAG, MPI_COMM_WORLD);
      MPI_Recv(rbuf, n, MPI_BYTE, 1, LAT_TAG, MPI_COMM_WORLD, st);
    } else {
      MPI_Recv(rbuf, n, MPI_BYTE, 0, LAT_TAG, MPI_COMM_WORLD, st);
      MPI_Send(sbuf, n, MPI_BYTE, 0, LAT_TAG, MPI_COMM_WORLD);
    }
  }
}

/* k windows, each acknowledged */
static void bw_rounds(size_t bytes, long k) {
  int n = (int)bytes;
  for (long i = 0; i < k; i++) {
    if (rank == 0) {
      for (int j = 0; j < window; j++) MPI_Isend(sbuf, n, MPI_BYTE, 1, BW_TAG, MPI_COMM_WORLD, &reqs[j]);
      MPI_Waitall(window, reqs, stats);
      MPI_Recv(ack, 4, MPI_BYTE, 1, ACK_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      for (int j = 0; j < window; j++) MPI_Irecv(rbuf, n, MPI_BYTE, 0, BW_TAG, MPI_COMM_WORLD, &reqs[j]);
      MPI_Waitall(window, reqs, stats);
      MPI_Send(ack, 4, MPI_BYTE, 0, ACK_TAG, MPI_COMM_WORLD);
    }
  }
}

static int split_sizes(char *s, size_t *out) {
  int n = 0;
  for (char *t = strtok(s, ","); t && n < MAX_SIZES; t = strtok(NULL, ",")) out[n++] = (size_t)strtoull(t, NULL, 10);
  return n;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  size_t lat_sizes[MAX_SIZES], bw_sizes[MAX_SIZES];
  int nlat = 0, nbw = 0;
  lat_sizes[nlat++] = 0;
  for (size_t s = 1; s <= 4194304; s *= 2) lat_sizes[nlat++] = s;
  for (size_t s = 1024; s <= 16777216; s *= 4) bw_sizes[nbw++] = s;
  int do_lat = 1, do_bw = 1;
  size_t large = 8192;
  long lat_iters = 10000, lat_iters_large = 1000, lat_skip = 100, lat_skip_large = 10;
  long bw_iters = 100, bw_iters_large = 20, bw_skip = 10, bw_skip_large = 2;
  double warm_ms = 50, first_warm_ms = 200;
  const char *label = "c";
  for (int i = 1; i < argc; i += 2) {
    const char *a = argv[i];
    char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) {
      if (rank == 0) fprintf(stderr, "osu_p2p: %s needs a value\n", a);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (!strcmp(a, "--tests")) { do_lat = strstr(v, "latency") != NULL; do_bw = strstr(v, "bw") != NULL; }
    else if (!strcmp(a, "--lat-sizes")) nlat = split_sizes(v, lat_sizes);
    else if (!strcmp(a, "--bw-sizes")) nbw = split_sizes(v, bw_sizes);
    else if (!strcmp(a, "--window")) window = atoi(v);
    else if (!strcmp(a, "--large")) large = (size_t)strtoull(v, NULL, 10);
    else if (!strcmp(a, "--lat-iters")) lat_iters = atol(v);
    else if (!strcmp(a, "--lat-iters-large")) lat_iters_large = atol(v);
    else if (!strcmp(a, "--lat-skip")) lat_skip = atol(v);
    else if (!strcmp(a, "--lat-skip-large")) lat_skip_large = atol(v);
    else if (!strcmp(a, "--bw-iters")) bw_iters = atol(v);
    else if (!strcmp(a, "--bw-iters-large")) bw_iters_large = atol(v);
    else if (!strcmp(a, "--bw-skip")) bw_skip = atol(v);
    else if (!strcmp(a, "--bw-skip-large")) bw_skip_large = atol(v);
    else if (!strcmp(a, "--warm-ms")) warm_ms = atof(v);
    else if (!strcmp(a, "--first-warm-ms")) first_warm_ms = atof(v);
    else if (!strcmp(a, "--label")) label = v;
    else {
      if (rank == 0) fprintf(stderr, "osu_p2p: unknown option %s\n", a);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  if (nranks != 2 || window < 1 || window > MAX_WINDOW) {
    if (rank == 0) fprintf(stderr, "osu_p2p: needs exactly 2 ranks (has %d) and a window of 1..%d (has %d)\n", nranks, MAX_WINDOW, window);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  for (int test = 0; test < 2; test++) {
    int is_lat = test == 0;
    if (is_lat ? !do_lat : !do_bw) continue;
    const char *name = is_lat ? "latency" : "bw";
    size_t *sizes = is_lat ? lat_sizes : bw_sizes;
    int nsizes = is_lat ? nlat : nbw;
    size_t max = 1;
    for (int si = 0; si < nsizes; si++) if (sizes[si] > max) max = sizes[si];
    if (posix_memalign((void **)&sbuf, 4096, max) || posix_memalign((void **)&rbuf, 4096, max)) {
      fprintf(stderr, "osu_p2p: cannot allocate 2 x %zu bytes\n", max);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(sbuf, 0, max);
    memset(rbuf, 0, max);
    for (int si = 0; si < nsizes; si++) {
      size_t bytes = sizes[si];
      int big = bytes > large;
      long skip = is_lat ? (big ? lat_skip_large : lat_skip) : (big ? bw_skip_large : bw_skip);
      long iters = is_lat ? (big ? lat_iters_large : lat_iters) : (big ? bw_iters_large : bw_iters);
      MPI_Status st;
      /* 1. check round */
      fill(sbuf, bytes, rank);
      memset(rbuf, 0xff, bytes);
      MPI_Barrier(MPI_COMM_WORLD);
      double tw0 = MPI_Wtime();
      if (is_lat) {
        latency_rounds(bytes, 1, &st);
        check(name, bytes, rbuf, 1 - rank, LAT_TAG, &st);
      } else {
        bw_rounds(bytes, 1);
        if (rank == 1) {
          for (int j = 0; j < window; j++) check(name, bytes, rbuf, 0, BW_TAG, &stats[j]);
        }
      }
      /* 2. warm-up: skip rounds in all, and until warm ms have passed on rank 0 */
      long warm = 1, k = skip - 1, next = 1;
      double wms = si == 0 ? first_warm_ms : warm_ms;
      for (;;) {
        if (k > 0) {
          if (is_lat) latency_rounds(bytes, k, &st);
          else bw_rounds(bytes, k);
          warm += k;
        }
        int more = rank == 0 && (MPI_Wtime() - tw0) * 1e3 < wms;
        MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (!more) break;
        k = next;
        next *= 2;
      }
      /* 3. timed */
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      if (is_lat) latency_rounds(bytes, iters, &st);
      else bw_rounds(bytes, iters);
      double t = MPI_Wtime() - t0;
      if (rank == 0) {
        if (is_lat) {
          printf("{\"impl\":\"%s\",\"np\":%d,\"coll\":\"latency\",\"bytes\":%zu,\"us\":%.6g,\"iters\":%ld,\"warmup\":%ld}\n", label,
                 nranks, bytes, t * 1e6 / (2.0 * (double)iters), iters, warm);
        } else {
          double msgs = (double)iters * window;
          printf("{\"impl\":\"%s\",\"np\":%d,\"coll\":\"bw\",\"bytes\":%zu,\"us\":%.6g,\"mbs\":%.6g,\"window\":%d,\"iters\":%ld,"
                 "\"warmup\":%ld}\n",
                 label, nranks, bytes, t * 1e6 / msgs, (double)bytes * msgs / t / 1e6, window, iters, warm);
        }
        fflush(stdout);
      }
    }
    free(sbuf);
    free(rbuf);
  }
  MPI_Finalize();
  return 0;
}
