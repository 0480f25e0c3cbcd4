/*
 * Open MPI's side of bench/kernels.mjs: MPI_Reduce_local throughput on the
 * same ops, datatypes, sizes, data and trial scheme as the JavaScript side,
 * one JSON line per point on stdout.
 *
 * Same scheme as bench/kernels.mjs (keep them in step):
 *   1. one allocation per buffer for the process (in, inout, a saved copy of
 *      the initial inout), each followed by a guard area that must stay
 *      untouched; malloc, as V8's ArrayBuffers come from the same allocator
 *      and therefore share its alignment (16 bytes, not 64);
 *   2. per point: fill in and inout with the case's pattern, one call,
 *      sample items checked against a scalar reference (a wrong result
 *      prints WRONG RESULT to stderr and exits 3);
 *   3. warm-up: batches of 1, 2, 4, ... calls until warm ms have passed and
 *      at least 2 calls were made; the last batch gives the time per call;
 *   4. trials: reps = trial ms / time per call (at least 1); 9 trials (5
 *      when one call outlasts a trial, 3 when it outlasts 4 trials), the
 *      median time per call reported.
 * The reduction runs in place (inout accumulates in), as MPI_Reduce_local
 * does; the patterns keep values away from subnormals, where time would
 * depend on the data rather than on the kernel.
 *
 * Build and run (kernels.mjs does this in a temp dir, as an MPI singleton):
 *   mpicc -O2 -o build/reduce_local bench/ompi/reduce_local.c
 *   build/reduce_local --sizes 4096,262144 --cases SUM:DOUBLE,MAXLOC:DOUBLE_INT,SUM:DOUBLE:3
 *       [--warm-ms 100] [--trial-ms 20] [--trials 9] [--memcpy] [--overhead]
 * A case OP:TYPE:3 is the three-buffer form out = in op arg, which MPI has
 * no call for: it is timed as memcpy(out, arg) + MPI_Reduce_local(in, out).
 */
#include <complex.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

enum { GUARD = 64, MAX_CASES = 64, MAX_SIZES = 16, MAX_TRIALS = 64 };

/* T_INT16 only as the value of SHORT_INT; T_PAIR is any pair type. */
enum type_id { T_DOUBLE, T_FLOAT, T_INT32, T_INT64, T_INT8, T_UINT64, T_DCOMPLEX, T_LDOUBLE, T_INT16, T_PAIR };
typedef struct {
  const char *name;
  enum type_id id;
  MPI_Datatype dt;
  size_t item; /* bytes per item, padding included */
  size_t lane; /* bytes per scalar lane (a complex item has two) */
  enum type_id value, index; /* a pair's members: value at offset 0, index at koff */
  size_t koff;
} Type;

/* The C structs the pair types describe, so their layout and padding are the compiler's. */
typedef struct { float v; int k; } FloatInt;
typedef struct { double v; int k; } DoubleInt;
typedef struct { long v; int k; } LongInt;
typedef struct { int v; int k; } TwoInt;
typedef struct { short v; int k; } ShortInt;
typedef struct { long double v; int k; } LongDoubleInt;
typedef struct { double v, k; } TwoDouble;
#define PAIR(name, dt, S, value, index) {name, T_PAIR, dt, sizeof(S), sizeof(S), value, index, offsetof(S, k)}

static const Type kTypes[] = {
    {"DOUBLE", T_DOUBLE, MPI_DOUBLE, 8, 8},
    {"FLOAT", T_FLOAT, MPI_FLOAT, 4, 4},
    {"INT32_T", T_INT32, MPI_INT32_T, 4, 4},
    {"INT64_T", T_INT64, MPI_INT64_T, 8, 8},
    {"INT8_T", T_INT8, MPI_INT8_T, 1, 1},
    {"UINT64_T", T_UINT64, MPI_UINT64_T, 8, 8},
    {"C_DOUBLE_COMPLEX", T_DCOMPLEX, MPI_C_DOUBLE_COMPLEX, 16, 8},
    {"LONG_DOUBLE", T_LDOUBLE, MPI_LONG_DOUBLE, sizeof(long double), sizeof(long double)},
    PAIR("FLOAT_INT", MPI_FLOAT_INT, FloatInt, T_FLOAT, T_INT32),
    PAIR("DOUBLE_INT", MPI_DOUBLE_INT, DoubleInt, T_DOUBLE, T_INT32),
    PAIR("LONG_INT", MPI_LONG_INT, LongInt, T_INT64, T_INT32),
    PAIR("TWO_INT", MPI_2INT, TwoInt, T_INT32, T_INT32),
    PAIR("SHORT_INT", MPI_SHORT_INT, ShortInt, T_INT16, T_INT32),
    PAIR("LONG_DOUBLE_INT", MPI_LONG_DOUBLE_INT, LongDoubleInt, T_LDOUBLE, T_INT32),
    PAIR("TWO_DOUBLE_PRECISION", MPI_2DOUBLE_PRECISION, TwoDouble, T_DOUBLE, T_DOUBLE),
};

enum op_id { O_SUM, O_PROD, O_MAX, O_MIN, O_BXOR, O_BAND, O_LAND, O_MAXLOC, O_MINLOC };
typedef struct {
  const char *name;
  enum op_id id;
  MPI_Op op;
} Op;

static const Op kOps[] = {
    {"SUM", O_SUM, MPI_SUM},   {"PROD", O_PROD, MPI_PROD}, {"MAX", O_MAX, MPI_MAX},
    {"MIN", O_MIN, MPI_MIN},   {"BXOR", O_BXOR, MPI_BXOR}, {"BAND", O_BAND, MPI_BAND},
    {"LAND", O_LAND, MPI_LAND}, {"MAXLOC", O_MAXLOC, MPI_MAXLOC}, {"MINLOC", O_MINLOC, MPI_MINLOC},
};

typedef struct {
  const Op *op;
  const Type *type;
  int three; /* the three-buffer form */
} Case;

typedef struct {
  double warm_s, trial_s;
  int trials;
} Params;

/* What one timed call works on. */
typedef struct {
  const Case *c;
  void *in, *io, *io0;
  size_t bytes;
  int count;
} Point;

typedef struct {
  double s, min_s;
  long reps, warm_calls;
  int trials;
} Timing;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *msg, const char *arg) {
  fprintf(stderr, "reduce_local: %s%s\n", msg, arg ? arg : "");
  exit(2);
}

/* ------------------------------------------------------------ data
 * The patterns are shared with kernels.mjs, so both sides reduce the same
 * values: small integers for arithmetic (exact in float and double, so a
 * check can compare bits), +-1 for PROD and the units 1, i, -1, -i for a
 * complex PROD (products stay bounded however many times the call repeats),
 * a multiplicative hash for bitwise ops, a mix of zero and non-zero for LAND,
 * and for MAXLOC/MINLOC values equal in every third item, with indices in
 * either order, so the samples a check reads hit the index rule both ways. */
enum pattern { P_ARITH, P_PROD, P_CPROD, P_BITS, P_LOGIC, P_PAIR };

static enum pattern pattern_of(const Case *c) {
  switch (c->op->id) {
    case O_PROD: return c->type->id == T_DCOMPLEX ? P_CPROD : P_PROD;
    case O_BXOR: case O_BAND: return P_BITS;
    case O_LAND: return P_LOGIC;
    case O_MAXLOC: case O_MINLOC: return P_PAIR;
    default: return P_ARITH;
  }
}

static double lane_value(enum pattern p, int which, size_t j) {
  long k = (long)j, r = k / 2 % 4;
  switch (p) {
    case P_PROD: return which == 0 ? (k % 3 ? 1.0 : -1.0) : (double)(k % 11) - 4.5;
    case P_CPROD: return which == 1 ? (double)(k % 11) - 4.5 : k % 2 != r % 2 ? 0 : r < 2 ? 1 : -1;
    case P_LOGIC: return which == 0 ? (k % 3 == 0 ? 0 : (double)(k % 5 + 1)) : (k % 4 == 0 ? 0 : -7);
    default: return which == 0 ? (double)(k % 13 - 6) : (double)(k % 7 * 3 - 8);
  }
}

/* One lane or pair member of type t at p (aligned for it: malloc'd buffers, C struct offsets). */
static void put(enum type_id t, unsigned char *p, long double v) {
  switch (t) {
    case T_DOUBLE: case T_DCOMPLEX: *(double *)p = (double)v; break;
    case T_FLOAT: *(float *)p = (float)v; break;
    case T_LDOUBLE: *(long double *)p = v; break;
    case T_INT32: *(int32_t *)p = (int32_t)v; break;
    case T_INT64: case T_UINT64: *(int64_t *)p = (int64_t)v; break;
    case T_INT16: *(int16_t *)p = (int16_t)v; break;
    case T_INT8: *(int8_t *)p = (int8_t)v; break;
    case T_PAIR: break;
  }
}

static long double get(enum type_id t, const unsigned char *p) {
  switch (t) {
    case T_DOUBLE: case T_DCOMPLEX: return *(const double *)p;
    case T_FLOAT: return *(const float *)p;
    case T_LDOUBLE: return *(const long double *)p;
    case T_INT32: return *(const int32_t *)p;
    case T_INT64: case T_UINT64: return (long double)*(const int64_t *)p;
    case T_INT16: return *(const int16_t *)p;
    case T_INT8: return *(const int8_t *)p;
    case T_PAIR: break;
  }
  return 0;
}

/* Bytes that carry the value: an x87 long double fills 10 of its 16. */
static size_t value_bytes(enum type_id t) {
  switch (t) {
    case T_INT8: return 1;
    case T_INT16: return 2;
    case T_FLOAT: case T_INT32: return 4;
    case T_LDOUBLE: return 10;
    default: return 8;
  }
}

/* which: 0 fills the input operand, 1 the initial inout. */
static void fill(const Case *c, void *buf, size_t bytes, int which) {
  const Type *t = c->type;
  enum pattern p = pattern_of(c);
  unsigned char *u = buf;
  if (p == P_BITS) {
    uint32_t *w = buf;
    for (size_t k = 0; k < bytes / 4; k++) {
      uint32_t x = (uint32_t)k;
      w[k] = which == 0 ? x * 0x9E3779B1u : (x * 0x85EBCA6Bu) ^ 0x5BD1E995u;
    }
    return;
  }
  memset(buf, 0, bytes); /* the pairs' padding and long double's unused bytes too */
  if (p == P_PAIR) {
    for (size_t i = 0; i < bytes / t->item; i++) {
      long k = (long)i;
      put(t->value, u + i * t->item, which == 1 && k % 3 ? k % 7 - 3 : k % 13 - 6);
      put(t->index, u + i * t->item + t->koff, which == 0 ? k % 17 : (k * 11 + 5) % 19);
    }
  } else {
    for (size_t j = 0; j < bytes / t->lane; j++) put(t->id, u + j * t->lane, lane_value(p, which, j));
  }
}

/* ------------------------------------------------------------ reference */
static int lane_ok(const Case *c, const unsigned char *a, const unsigned char *b, const unsigned char *got) {
  _Alignas(16) unsigned char want[16];
  enum type_id t = c->type->id;
  if (t == T_DOUBLE || t == T_FLOAT || t == T_DCOMPLEX || t == T_LDOUBLE) {
    /* Long double holds every lane type's values; these are small integers,
     * so each result is exact and converting it to the lane's type rounds nothing. */
    long double x = get(t, a), y = get(t, b), r = 0;
    switch (c->op->id) {
      case O_SUM: r = x + y; break;
      case O_PROD: r = x * y; break;
      case O_MAX: r = x > y ? x : y; break;
      case O_MIN: r = x < y ? x : y; break;
      default: return 0;
    }
    put(t, want, r);
  } else {
    int64_t x = 0, y = 0, r = 0;
    switch (t) {
      case T_INT8: x = (int8_t)a[0], y = (int8_t)b[0]; break;
      case T_INT32: { int32_t u, v; memcpy(&u, a, 4), memcpy(&v, b, 4); x = u, y = v; break; }
      default: memcpy(&x, a, 8), memcpy(&y, b, 8); break;
    }
    switch (c->op->id) {
      case O_SUM: r = (int64_t)((uint64_t)x + (uint64_t)y); break;
      case O_MAX: r = x > y ? x : y; break;
      case O_MIN: r = x < y ? x : y; break;
      case O_BXOR: r = x ^ y; break;
      case O_BAND: r = x & y; break;
      case O_LAND: r = x && y; break;
      default: return 0;
    }
    /* Narrowing keeps the low bytes (little-endian), i.e. wraps. */
    memcpy(want, &r, 8);
  }
  return memcmp(want, got, value_bytes(t)) == 0;
}

static int item_ok(const Case *c, const unsigned char *a, const unsigned char *b, const unsigned char *got) {
  const Type *t = c->type;
  if (t->id == T_PAIR) {
    /* MPI's rule: the larger (MAXLOC) or smaller (MINLOC) value wins; on equal values, the smaller index. */
    long double x = get(t->value, a), y = get(t->value, b);
    long double kx = get(t->index, a + t->koff), ky = get(t->index, b + t->koff);
    const unsigned char *w = (x == y ? kx <= ky : (x > y) == (c->op->id == O_MAXLOC)) ? a : b;
    return memcmp(got, w, value_bytes(t->value)) == 0 &&
           memcmp(got + t->koff, w + t->koff, value_bytes(t->index)) == 0;
  }
  if (t->id == T_DCOMPLEX && c->op->id == O_PROD) {
    double complex x, y, g;
    memcpy(&x, a, sizeof x), memcpy(&y, b, sizeof y), memcpy(&g, got, sizeof g);
    double complex w = x * y; /* exact: one factor is 1, i, -1 or -i */
    return memcmp(&w, &g, sizeof w) == 0;
  }
  for (size_t o = 0; o < t->item; o += t->lane) {
    if (!lane_ok(c, a + o, b + o, got + o)) return 0;
  }
  return 1;
}

/* Ends, middle (where vector loops hand over to their tails) and a stride
 * through the rest; the guard after the buffer must be untouched. */
static void check(const Point *p, const char *what) {
  const Case *c = p->c;
  size_t n = (size_t)p->count, item = c->type->item;
  const unsigned char *in = p->in, *io0 = p->io0, *out = p->io;
  const unsigned char *arg = io0; /* three-buffer form: out = in op io0 */
  size_t idx[24];
  int m = 0;
  for (size_t k = 0; k < 4 && k < n; k++) idx[m++] = k, idx[m++] = n - 1 - k;
  idx[m++] = n / 2, idx[m++] = n / 2 - (n > 1);
  for (size_t k = 1; k <= 10; k++) idx[m++] = (n * k * 7919 / 10) % n;
  for (int s = 0; s < m; s++) {
    size_t i = idx[s];
    if (!item_ok(c, in + i * item, arg + i * item, out + i * item)) {
      fprintf(stderr, "WRONG RESULT: Open MPI %s %s/%s, %zu bytes, item %zu\n", what, c->op->name,
              c->type->name, p->bytes, i);
      exit(3);
    }
  }
  for (size_t g = 0; g < GUARD; g++) {
    if (out[p->bytes + g] != 0xA5) {
      fprintf(stderr, "WRONG RESULT: Open MPI %s %s/%s wrote past the buffer end\n", what, c->op->name, c->type->name);
      exit(3);
    }
  }
}

/* ------------------------------------------------------------ calls */
static void call_reduce(const Point *p) {
  MPI_Reduce_local(p->in, p->io, p->count, p->c->type->dt, p->c->op->op);
}

static void call_three(const Point *p) {
  memcpy(p->io, p->io0, p->bytes);
  MPI_Reduce_local(p->in, p->io, p->count, p->c->type->dt, p->c->op->op);
}

static void call_memcpy(const Point *p) { memcpy(p->io, p->in, p->bytes); }

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static Timing measure(void (*call)(const Point *), const Point *p, const Params *o) {
  Timing t = {0};
  long batch = 1, calls = 0;
  double per_call = 0, t0 = now();
  for (;;) {
    double b0 = now();
    for (long i = 0; i < batch; i++) call(p);
    double b1 = now();
    per_call = (b1 - b0) / (double)batch;
    calls += batch;
    double left = o->warm_s - (b1 - t0);
    if (left <= 0 && calls >= 2) break;
    /* Never overshoot the warm-up by more than one call's worth. */
    long fit = left > 0 ? (long)(left / (per_call > 0 ? per_call : 1e-9)) + 1 : 1;
    batch = batch * 2 < fit ? batch * 2 : fit;
  }
  t.warm_calls = calls;
  t.reps = per_call > 0 ? (long)(o->trial_s / per_call + 0.5) : 1;
  if (t.reps < 1) t.reps = 1;
  t.trials = per_call > 4 * o->trial_s ? 3 : per_call > o->trial_s ? 5 : o->trials;
  if (t.trials > o->trials) t.trials = o->trials;
  double s[MAX_TRIALS];
  for (int k = 0; k < t.trials; k++) {
    double b0 = now();
    for (long i = 0; i < t.reps; i++) call(p);
    s[k] = (now() - b0) / (double)t.reps;
  }
  qsort(s, (size_t)t.trials, sizeof s[0], cmp_double);
  t.s = s[t.trials / 2];
  t.min_s = s[0];
  return t;
}

static void report(const char *impl, const char *api, const char *op, const char *type, size_t bytes, Timing t) {
  printf("{\"impl\":\"%s\",\"api\":\"%s\",\"op\":\"%s\",\"type\":\"%s\",\"bytes\":%zu,\"s\":%.6e,\"min_s\":%.6e,"
         "\"gbps\":%.6g,\"reps\":%ld,\"trials\":%d,\"warm_calls\":%ld}\n",
         impl, api, op, type, bytes, t.s, t.min_s, (double)bytes / t.s / 1e9, t.reps, t.trials, t.warm_calls);
  fflush(stdout);
}

/* ------------------------------------------------------------ options */
static size_t parse_list(const char *s, char out[][64], size_t max) {
  size_t n = 0;
  while (*s && n < max) {
    size_t len = strcspn(s, ",");
    if (len >= 64) die("list item too long: ", s);
    memcpy(out[n], s, len);
    out[n][len] = '\0';
    if (len) n++;
    s += len + (s[len] == ',');
  }
  return n;
}

static Case parse_case(const char *s) {
  Case c = {0};
  char buf[64];
  snprintf(buf, sizeof buf, "%s", s);
  char *type = strchr(buf, ':');
  if (!type) die("a case is OP:TYPE[:3], got ", s);
  *type++ = '\0';
  char *form = strchr(type, ':');
  if (form) *form++ = '\0';
  c.three = form && strcmp(form, "3") == 0;
  for (size_t i = 0; i < sizeof kOps / sizeof kOps[0]; i++)
    if (strcmp(kOps[i].name, buf) == 0) c.op = &kOps[i];
  for (size_t i = 0; i < sizeof kTypes / sizeof kTypes[0]; i++)
    if (strcmp(kTypes[i].name, type) == 0) c.type = &kTypes[i];
  if (!c.op || !c.type) die("unknown case ", s);
  return c;
}

int main(int argc, char **argv) {
  Params o = {0.1, 0.02, 9};
  char case_names[MAX_CASES][64], size_names[MAX_SIZES][64];
  size_t ncases = 0, nsizes = 0;
  int with_memcpy = 0, with_overhead = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--memcpy") == 0) { with_memcpy = 1; continue; }
    if (strcmp(a, "--overhead") == 0) { with_overhead = 1; continue; }
    if (!v) die("missing value after ", a);
    i++;
    if (strcmp(a, "--sizes") == 0) nsizes = parse_list(v, size_names, MAX_SIZES);
    else if (strcmp(a, "--cases") == 0) ncases = parse_list(v, case_names, MAX_CASES);
    else if (strcmp(a, "--warm-ms") == 0) o.warm_s = atof(v) / 1e3;
    else if (strcmp(a, "--trial-ms") == 0) o.trial_s = atof(v) / 1e3;
    else if (strcmp(a, "--trials") == 0) o.trials = atoi(v);
    else die("unknown option ", a);
  }
  if (o.trials < 1 || o.trials > MAX_TRIALS) die("--trials must be 1..64", NULL);
  Case cases[MAX_CASES];
  for (size_t i = 0; i < ncases; i++) cases[i] = parse_case(case_names[i]);

  MPI_Init(&argc, &argv);
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(lib, &len);
  lib[strcspn(lib, ",\n")] = '\0'; /* "Open MPI v4.1.4" */
  printf("{\"kind\":\"info\",\"library\":\"%s\"}\n", lib);

  if (with_overhead) {
    /* The fixed cost of one call: a single double. */
    static double one_in[1] = {1}, one_io[1 + GUARD / 8];
    Point p = {&(Case){&kOps[O_SUM], &kTypes[T_DOUBLE], 0}, one_in, one_io, NULL, 8, 1};
    report("ompi", "overhead", "SUM", "DOUBLE", 8, measure(call_reduce, &p, &o));
  }

  for (size_t s = 0; s < nsizes; s++) {
    size_t bytes = (size_t)strtoull(size_names[s], NULL, 10);
    if (bytes == 0 || bytes % 32) die("sizes must be positive multiples of 32 bytes, got ", size_names[s]);
    unsigned char *in = malloc(bytes + GUARD), *io = malloc(bytes + GUARD), *io0 = malloc(bytes + GUARD);
    if (!in || !io || !io0) die("out of memory", NULL);
    memset(io + bytes, 0xA5, GUARD);
    if (with_memcpy) {
      memset(in, 1, bytes);
      Point p = {NULL, in, io, NULL, bytes, 0};
      report("ompi", "memcpy", "", "", bytes, measure(call_memcpy, &p, &o));
    }
    for (size_t k = 0; k < ncases; k++) {
      const Case *c = &cases[k];
      Point p = {c, in, io, io0, bytes, (int)(bytes / c->type->item)};
      fill(c, in, bytes, 0);
      fill(c, io0, bytes, 1);
      memcpy(io, io0, bytes);
      if (c->three) {
        call_three(&p);
        check(&p, "memcpy + MPI_Reduce_local");
        report("ompi", "reduceLocals", c->op->name, c->type->name, bytes, measure(call_three, &p, &o));
      } else {
        call_reduce(&p);
        check(&p, "MPI_Reduce_local");
        memcpy(io, io0, bytes);
        report("ompi", "reduceLocal", c->op->name, c->type->name, bytes, measure(call_reduce, &p, &o));
      }
    }
    free(in), free(io), free(io0);
  }

  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("{\"kind\":\"cpu\",\"cpu_s\":%.3f}\n", (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
                                                  (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6);
  MPI_Finalize();
  return 0;
}
