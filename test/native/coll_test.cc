// Test of the collectives (native/core/coll) without Node: this process
// creates a segment as the launcher does, and the ranks are
//   threads    threads of this process, each mapping the segment itself
//              through Segment::attach on a dup'd descriptor, as thread
//              mode does (napi/launcher_binding.cc, runtime_binding.cc);
//   processes  forked children attaching to the inherited descriptor.
// Under ThreadSanitizer only the thread ranks run, and TSan sees each
// rank's own threads (several contexts at once share the rank's slot sets),
// not the ranks' synchronisation through the segment: each rank maps it at
// an address of its own.
// As the launcher does, this process records each rank's end in the header
// (and marks the job failed when a rank fails), so waits on a dead rank end.
//
// Usage: coll_test threads|processes [np...]   (default np 2 3 4)
// NODEMPI_SLOT_KB, NODEMPI_CMA and NODEMPI_CMA_MIN choose the paths taken
// (CMakeLists.txt registers the combinations); NODEMPI_TEST_LONG=1 runs
// more rounds and more world sizes.
//
// Every result is compared with exact expected values:
//   1. barrier: nobody leaves before everyone has arrived;
//   2. bcast: every root, sizes around one and several slot halves, a
//      derived (strided) layout whose holes stay untouched;
//   3. allreduce: int64 and double sums, MAX, IN_PLACE, and a
//      non-commutative user op (2x2 matrix product) that shows the order;
//   4. alltoallv: uneven, zero and multi-phase blocks with gaps between
//      them, IN_PLACE, and a truncated receive (TRUNCATE on that rank only);
//   5. reduce_scatter: uneven, zero and multi-phase blocks, IN_PLACE, the
//      matrix product;
//   6. scan and exscan: sums and the matrix product, IN_PLACE, rank 0's
//      exscan buffer untouched;
//   7. gather, scatter, allgather, alltoall, reduce and the v-variants once
//      around a slot half;
//   8. mismatches (collective, root, op, datatype, size): ERR_NOT_SAME on
//      every rank, and the communicator still works;
//   9. several communicator contexts at once, one thread each per rank;
//  10. communicators created and freed one after another, a few alive at
//      once, well past the slot sets a rank takes fresh: sets move between
//      contexts and their number stays put;
//  11. a rank that ends early: the others' next collective fails with
//      PROC_FAILED instead of hanging.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "core/coll/coll.h"
#include "core/coll/fold.h"
#include "core/datatype/typemap.h"
#include "core/kernels/kernels.h"
#include "core/transport/segment.h"
#include "core/transport/slot_sets.h"
#include "core/tuning.h"

using namespace nodempi;
using namespace nodempi::coll;
using nodempi::test::g_context;

namespace {

enum class Mode { THREADS, PROCESSES };

// Memory every rank sees at the same address in every mode.
struct Shared {
  std::atomic<uint32_t> counters[1024];
};

constexpr uint32_t kExtraContexts = 3;

struct Job {
  Mode mode;
  uint32_t n;
  std::unique_ptr<transport::Segment> seg;  // the launcher's mapping
  Shared* shared = nullptr;
  uint32_t contexts[kExtraContexts];        // for the concurrent contexts
};

struct Rank {
  Job& job;
  uint32_t me, n;
  transport::Segment* seg;  // this rank's mapping
  Context& c;               // COMM_WORLD
};

std::vector<uint32_t> world_of(uint32_t n) {
  std::vector<uint32_t> w(n);
  for (uint32_t r = 0; r < n; ++r) w[r] = r;
  return w;
}

// ---- Values ------------------------------------------------------------------

uint8_t byte_of(uint32_t rank, size_t i, uint32_t salt) {
  return uint8_t(rank * 131 + i * 7 + salt * 29 + (i >> 9));
}
int64_t value_of(uint32_t rank, size_t i, uint32_t salt) {
  return int64_t(rank + 1) * 1000003 + int64_t(i) * 7919 + int64_t(salt) * 31;
}

// A 2x2 matrix over uint32 (arithmetic mod 2^32): associative, not
// commutative, so a product shows the order its factors were combined in.
struct Mat {
  uint32_t a, b, c, d;
  bool operator==(const Mat& o) const { return a == o.a && b == o.b && c == o.c && d == o.d; }
};
Mat mul(const Mat& x, const Mat& y) {
  return {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c, x.c * y.b + x.d * y.d};
}
Mat mat_of(uint32_t rank, size_t i, uint32_t salt) {
  return {1 + uint32_t(rank + i) % 3, uint32_t(rank * 7 + i + salt) % 5, uint32_t(rank + 2 * i) % 4, 1 + rank};
}
// The user op: out = a * b, a from the lower rank. out may be b itself.
void mat_op(void*, const void* a, const void* b, void* out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    Mat x, y;
    std::memcpy(&x, static_cast<const uint8_t*>(a) + i * sizeof(Mat), sizeof x);
    std::memcpy(&y, static_cast<const uint8_t*>(b) + i * sizeof(Mat), sizeof y);
    Mat z = mul(x, y);
    std::memcpy(static_cast<uint8_t*>(out) + i * sizeof(Mat), &z, sizeof z);
  }
}

Combiner kernel(kernels::OpId op, kernels::TypeId type) {
  Combiner k;
  k.fn = kernels::lookup(op, type);
  k.item = kernels::type_size(type);
  k.op_id = int32_t(op);
  k.type_id = uint32_t(type) + 1;
  return k;
}
Combiner matrix_product() {
  Combiner k;
  k.user = mat_op;
  k.item = sizeof(Mat);
  k.op_id = -1;
  return k;
}

constexpr uint8_t kUntouched = 0xcd;

// Sizes in bytes around the places where the algorithms change: nothing,
// tiny, one slot half (`h` data bytes) and a little more, several halves.
std::vector<size_t> sizes_around(size_t h) { return {0, 1, 8, 16, 17, 1000, h - 1, h, h + 1, 2 * h + 3, 3 * h + 5}; }

// ---- 1. barrier -----------------------------------------------------------------

void test_barrier(Rank& r) {
  g_context = "barrier";
  const uint32_t rounds = test::long_form() ? 200 : 40;
  for (uint32_t k = 0; k < rounds; ++k) {
    r.job.shared->counters[k].fetch_add(1);
    barrier(r.c);
    CHECK_EQ(r.job.shared->counters[k].load(), r.n);
  }
}

// ---- 2. bcast -------------------------------------------------------------------

void test_bcast(Rank& r, uint32_t salt) {
  const size_t h = r.c.half_bytes();
  for (size_t bytes : sizes_around(h)) {
    for (uint32_t root = 0; root < r.n; ++root) {
      // Every root for small messages; one for the large ones.
      if (bytes > 1000 && root != (bytes + salt) % r.n) continue;
      g_context = "bcast " + std::to_string(bytes) + " B from " + std::to_string(root);
      std::vector<uint8_t> buf(bytes + 16, kUntouched);
      if (r.me == root) {
        for (size_t i = 0; i < bytes; ++i) buf[i] = byte_of(root, i, salt);
      }
      bcast(r.c, buf.data(), bytes, root);
      size_t bad = 0;
      for (size_t i = 0; i < bytes; ++i) bad += buf[i] != byte_of(root, i, salt);
      for (size_t i = bytes; i < buf.size(); ++i) bad += buf[i] != kUntouched;
      CHECK_EQ(bad, size_t(0));
    }
  }
}

// A vector of 3 blocks of 8 bytes, 24 bytes apart, resized to an extent of
// 64: 24 bytes of stream per item, holes between the blocks and the items.
std::shared_ptr<const datatype::Typemap> strided_type() {
  const double words[] = {1, 2, 1, 64, 24, 0, 56,  // header: nodes, root, extent, size, true lb/ub
                          1, 0, 8,                 // node 0: BLOCK of 8 bytes
                          2, 0, 3, 24, 0};         // node 1: VECTOR of 3 x node 0, stride 24
  return std::make_shared<const datatype::Typemap>(words, sizeof words / sizeof words[0]);
}

void test_bcast_derived(Rank& r, uint32_t salt) {
  auto type = strided_type();
  const size_t h = r.c.half_bytes();
  for (size_t count : {size_t(1), size_t(5), h / 24 + 1, 2 * h / 24 + 7}) {
    const uint32_t root = uint32_t(count + salt) % r.n;
    g_context = "bcast of " + std::to_string(count) + " strided items from " + std::to_string(root);
    const size_t length = (count - 1) * 64 + 56;
    std::vector<uint8_t> buf(length, kUntouched);
    auto in_type = [](size_t off) { return off % 64 < 56 && off % 64 % 24 < 8; };
    if (r.me == root) {
      for (size_t i = 0; i < length; ++i) buf[i] = byte_of(root, i, salt);
    }
    Layout layout(type, datatype::UserBuffer{buf.data(), buf.size(), 0}, count);
    bcast(r.c, layout, count * 24, root);
    size_t bad = 0;
    for (size_t i = 0; i < length; ++i) {
      uint8_t want = r.me == root || in_type(i) ? byte_of(root, i, salt) : kUntouched;
      bad += buf[i] != want;
    }
    CHECK_EQ(bad, size_t(0));
  }
}

// ---- 3. allreduce -----------------------------------------------------------------

std::vector<size_t> reduce_counts(size_t h, size_t item) {
  return {0, 1, 7, kSmallReduceBytes / item, kSmallReduceBytes / item + 1, h / item - 1, h / item + 3,
          2 * h / item + 5};
}

void test_allreduce(Rank& r, uint32_t salt) {
  const size_t h = r.c.half_bytes();
  const Combiner sum = kernel(kernels::OpId::SUM, kernels::TypeId::I64);
  for (size_t count : reduce_counts(h, 8)) {
    for (bool in_place : {false, true}) {
      g_context = "allreduce int64 sum of " + std::to_string(count) + (in_place ? " in place" : "");
      std::vector<int64_t> send(count), recv(count + 2, -1);
      for (size_t i = 0; i < count; ++i) send[i] = value_of(r.me, i, salt);
      if (in_place) std::copy(send.begin(), send.end(), recv.begin());
      allreduce(r.c, in_place ? nullptr : send.data(), recv.data(), count, sum);
      size_t bad = 0;
      for (size_t i = 0; i < count; ++i) {
        int64_t want = 0;
        for (uint32_t q = 0; q < r.n; ++q) want += value_of(q, i, salt);
        bad += recv[i] != want;
      }
      CHECK_EQ(bad, size_t(0));
      CHECK(recv[count] == -1 && recv[count + 1] == -1);
    }
  }
  {
    const size_t count = 3000;
    g_context = "allreduce double sum and int32 max";
    std::vector<double> send(count), recv(count);
    for (size_t i = 0; i < count; ++i) send[i] = double(value_of(r.me, i, salt));
    allreduce(r.c, send.data(), recv.data(), count, kernel(kernels::OpId::SUM, kernels::TypeId::F64));
    std::vector<int32_t> isend(count), irecv(count);
    for (size_t i = 0; i < count; ++i) isend[i] = int32_t((r.me * 977 + i * 13) % 1001) - 500;
    allreduce(r.c, isend.data(), irecv.data(), count, kernel(kernels::OpId::MAX, kernels::TypeId::I32));
    size_t bad = 0;
    for (size_t i = 0; i < count; ++i) {
      double want = 0;
      int32_t most = INT32_MIN;
      for (uint32_t q = 0; q < r.n; ++q) {
        want += double(value_of(q, i, salt));
        most = std::max(most, int32_t((q * 977 + i * 13) % 1001) - 500);
      }
      bad += recv[i] != want;
      bad += irecv[i] != most;
    }
    CHECK_EQ(bad, size_t(0));
  }
  const Combiner product = matrix_product();
  for (size_t count : {size_t(1), size_t(3), kSmallReduceBytes / sizeof(Mat) + 9, h / sizeof(Mat) + 2}) {
    g_context = "allreduce matrix product of " + std::to_string(count);
    std::vector<Mat> send(count), recv(count);
    for (size_t i = 0; i < count; ++i) send[i] = mat_of(r.me, i, salt);
    allreduce(r.c, send.data(), recv.data(), count, product);
    size_t bad = 0;
    for (size_t i = 0; i < count; ++i) {
      Mat want = mat_of(0, i, salt);
      for (uint32_t q = 1; q < r.n; ++q) want = mul(want, mat_of(q, i, salt));
      bad += !(recv[i] == want);
    }
    CHECK_EQ(bad, size_t(0));
  }
}

// ---- 4. alltoallv -------------------------------------------------------------------

// Bytes rank `from` sends rank `to`; `unit` scales them, some are zero.
size_t pair_bytes(uint32_t from, uint32_t to, uint32_t salt, size_t unit) {
  return size_t((from * 5 + to * 3 + salt) % 7) * unit;
}

void test_alltoallv(Rank& r, uint32_t salt) {
  const uint32_t n = r.n, me = r.me;
  const size_t h = r.c.half_bytes();
  for (size_t unit : {size_t(1), size_t(13), h / 5 + 3}) {
    g_context = "alltoallv, unit " + std::to_string(unit);
    std::vector<size_t> sb(n), sd(n), rb(n), rd(n);
    size_t s_at = 0, r_at = 0;
    for (uint32_t q = 0; q < n; ++q) {
      sb[q] = pair_bytes(me, q, salt, unit);
      rb[q] = pair_bytes(q, me, salt, unit);
      rd[q] = r_at;
      r_at += rb[q] + 3;
    }
    // Send blocks in reverse order, all blocks with 3-byte gaps.
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t q = n - 1 - i;
      sd[q] = s_at;
      s_at += sb[q] + 3;
    }
    std::vector<uint8_t> send(s_at + 1), recv(r_at + 1, kUntouched);
    for (uint32_t q = 0; q < n; ++q) {
      for (size_t i = 0; i < sb[q]; ++i) send[sd[q] + i] = byte_of(me * 16 + q, i, salt);
    }
    alltoallv(r.c, send.data(), sb.data(), sd.data(), recv.data(), rb.data(), rd.data());
    size_t bad = 0;
    for (uint32_t q = 0; q < n; ++q) {
      for (size_t i = 0; i < rb[q]; ++i) bad += recv[rd[q] + i] != byte_of(q * 16 + me, i, salt);
      for (size_t i = 0; i < 3; ++i) bad += recv[rd[q] + rb[q] + i] != kUntouched;
    }
    CHECK_EQ(bad, size_t(0));
  }
  {
    // IN_PLACE: blocks come from recv with the receive counts, which must
    // then be symmetric.
    g_context = "alltoallv in place";
    const size_t unit = h / 7 + 1;
    std::vector<size_t> rb(n), rd(n);
    size_t at = 0;
    for (uint32_t q = 0; q < n; ++q) {
      rb[q] = size_t((me + q + salt) % 5) * unit;
      rd[q] = at;
      at += rb[q] + 1;
    }
    std::vector<uint8_t> recv(at, kUntouched);
    for (uint32_t q = 0; q < n; ++q) {
      for (size_t i = 0; i < rb[q]; ++i) recv[rd[q] + i] = byte_of(me * 16 + q, i, salt);
    }
    alltoallv(r.c, nullptr, nullptr, nullptr, recv.data(), rb.data(), rd.data());
    size_t bad = 0;
    for (uint32_t q = 0; q < n; ++q) {
      for (size_t i = 0; i < rb[q]; ++i) bad += recv[rd[q] + i] != byte_of(q * 16 + me, i, salt);
      bad += recv[rd[q] + rb[q]] != kUntouched;
    }
    CHECK_EQ(bad, size_t(0));
  }
  {
    // Rank 0 has room for one byte less than rank 1 sends it: only rank 0
    // fails, without writing past its block, and the communicator goes on.
    g_context = "alltoallv truncated";
    const size_t bytes = h + 100;
    std::vector<size_t> sb(n, bytes), sd(n), rb(n, bytes), rd(n);
    for (uint32_t q = 0; q < n; ++q) sd[q] = rd[q] = q * (bytes + 8);
    if (me == 0) rb[1] = bytes - 1;
    std::vector<uint8_t> send(n * (bytes + 8), uint8_t(me)), recv(n * (bytes + 8), kUntouched);
    auto call = [&] { alltoallv(r.c, send.data(), sb.data(), sd.data(), recv.data(), rb.data(), rd.data()); };
    if (me == 0) {
      EXPECT_ERROR(TRUNCATE, "alltoallv: rank 1 sent", call);
      CHECK_EQ(recv[rd[1] + bytes - 1], kUntouched);
    } else {
      call();
    }
    barrier(r.c);
  }
}

// ---- 5. reduce_scatter --------------------------------------------------------------

void test_reduce_scatter(Rank& r, uint32_t salt) {
  const uint32_t n = r.n, me = r.me;
  const size_t h = r.c.half_bytes();
  const Combiner sum = kernel(kernels::OpId::SUM, kernels::TypeId::I64);
  for (size_t unit : {size_t(1), size_t(5), h / 8 / n + 3}) {
    for (bool in_place : {false, true}) {
      g_context = "reduce_scatter, unit " + std::to_string(unit) + (in_place ? " in place" : "");
      std::vector<size_t> counts(n), first(n);
      size_t total = 0;
      for (uint32_t q = 0; q < n; ++q) {
        counts[q] = size_t((q * 3 + salt) % 4) * unit;
        first[q] = total;
        total += counts[q];
      }
      std::vector<int64_t> send(total), recv(std::max(total, counts[me]) + 1, -1);
      for (size_t i = 0; i < total; ++i) send[i] = value_of(me, i, salt);
      if (in_place) std::copy(send.begin(), send.end(), recv.begin());
      reduce_scatter(r.c, in_place ? nullptr : send.data(), recv.data(), counts.data(), sum);
      size_t bad = 0;
      for (size_t i = 0; i < counts[me]; ++i) {
        int64_t want = 0;
        for (uint32_t q = 0; q < n; ++q) want += value_of(q, first[me] + i, salt);
        bad += recv[i] != want;
      }
      if (!in_place) bad += recv[counts[me]] != -1;
      CHECK_EQ(bad, size_t(0));
    }
  }
  {
    g_context = "reduce_scatter matrix product";
    std::vector<size_t> counts(n);
    size_t total = 0;
    for (uint32_t q = 0; q < n; ++q) total += counts[q] = 2 + q * 50;
    std::vector<Mat> send(total), recv(counts[me]);
    for (size_t i = 0; i < total; ++i) send[i] = mat_of(me, i, salt);
    reduce_scatter(r.c, send.data(), recv.data(), counts.data(), matrix_product());
    size_t at = 0;
    for (uint32_t q = 0; q < me; ++q) at += counts[q];
    size_t bad = 0;
    for (size_t i = 0; i < counts[me]; ++i) {
      Mat want = mat_of(0, at + i, salt);
      for (uint32_t q = 1; q < n; ++q) want = mul(want, mat_of(q, at + i, salt));
      bad += !(recv[i] == want);
    }
    CHECK_EQ(bad, size_t(0));
  }
}

// ---- 6. scan and exscan ---------------------------------------------------------------

void test_scan(Rank& r, uint32_t salt) {
  const uint32_t me = r.me;
  const size_t h = r.c.half_bytes();
  const Combiner sum = kernel(kernels::OpId::SUM, kernels::TypeId::I64);
  for (size_t count : {size_t(0), size_t(1), size_t(5), size_t(1000), h / 8 + 7, 3 * h / 8}) {
    for (bool exclusive : {false, true}) {
      for (bool in_place : {false, true}) {
        g_context = std::string(exclusive ? "exscan" : "scan") + " of " + std::to_string(count) +
                    (in_place ? " in place" : "");
        std::vector<int64_t> send(count), recv(count + 1, -1);
        for (size_t i = 0; i < count; ++i) send[i] = value_of(me, i, salt);
        if (in_place) std::copy(send.begin(), send.end(), recv.begin());
        scan(r.c, in_place ? nullptr : send.data(), recv.data(), count, sum, exclusive);
        size_t bad = 0;
        const uint32_t upto = exclusive ? me : me + 1;
        for (size_t i = 0; i < count; ++i) {
          int64_t want = 0;
          for (uint32_t q = 0; q < upto; ++q) want += value_of(q, i, salt);
          // exscan leaves rank 0's buffer as it was.
          if (upto == 0) want = in_place ? send[i] : -1;
          bad += recv[i] != want;
        }
        bad += recv[count] != -1;
        CHECK_EQ(bad, size_t(0));
      }
    }
  }
  for (size_t count : {size_t(4), h / sizeof(Mat) + 1}) {
    for (bool exclusive : {false, true}) {
      g_context = std::string(exclusive ? "exscan" : "scan") + " matrix product of " + std::to_string(count);
      std::vector<Mat> send(count), recv(count, Mat{7, 7, 7, 7});
      for (size_t i = 0; i < count; ++i) send[i] = mat_of(me, i, salt);
      scan(r.c, send.data(), recv.data(), count, matrix_product(), exclusive);
      const uint32_t upto = exclusive ? me : me + 1;
      size_t bad = 0;
      for (size_t i = 0; i < count; ++i) {
        Mat want = upto ? mat_of(0, i, salt) : Mat{7, 7, 7, 7};
        for (uint32_t q = 1; q < upto; ++q) want = mul(want, mat_of(q, i, salt));
        bad += !(recv[i] == want);
      }
      CHECK_EQ(bad, size_t(0));
    }
  }
}

// ---- 7. The other collectives, once around a slot half ----------------------------

void test_others(Rank& r, uint32_t salt) {
  const uint32_t n = r.n, me = r.me;
  const size_t h = r.c.half_bytes();
  for (size_t bytes : {size_t(1), size_t(100), h + 3}) {
    const uint32_t root = uint32_t(bytes + salt) % n;
    const std::string at = " of " + std::to_string(bytes) + " B, root " + std::to_string(root);
    std::vector<uint8_t> mine(bytes), all(n * bytes);
    for (size_t i = 0; i < bytes; ++i) mine[i] = byte_of(me, i, salt);
    auto block_ok = [&](const uint8_t* got, uint32_t from) {
      for (size_t i = 0; i < bytes; ++i) {
        if (got[i] != byte_of(from, i, salt)) return false;
      }
      return true;
    };

    g_context = "gather" + at;
    std::vector<uint8_t> recv(n * bytes, kUntouched);
    gather(r.c, mine.data(), me == root ? recv.data() : nullptr, bytes, root);
    if (me == root) {
      for (uint32_t q = 0; q < n; ++q) CHECK(block_ok(recv.data() + q * bytes, q));
    }

    g_context = "scatter" + at;
    for (uint32_t q = 0; q < n; ++q) {
      for (size_t i = 0; i < bytes; ++i) all[q * bytes + i] = byte_of(q, i, salt + root);
    }
    std::vector<uint8_t> got(bytes, kUntouched);
    scatter(r.c, me == root ? all.data() : nullptr, got.data(), bytes, root);
    bool ok = true;
    for (size_t i = 0; i < bytes; ++i) ok = ok && got[i] == byte_of(me, i, salt + root);
    CHECK(ok);

    g_context = "allgather" + at;
    std::fill(recv.begin(), recv.end(), kUntouched);
    allgather(r.c, mine.data(), recv.data(), bytes);
    for (uint32_t q = 0; q < n; ++q) CHECK(block_ok(recv.data() + q * bytes, q));

    g_context = "alltoall" + at;
    for (uint32_t q = 0; q < n; ++q) {
      for (size_t i = 0; i < bytes; ++i) all[q * bytes + i] = byte_of(me * 16 + q, i, salt);
    }
    std::fill(recv.begin(), recv.end(), kUntouched);
    alltoall(r.c, all.data(), recv.data(), bytes);
    ok = true;
    for (uint32_t q = 0; q < n; ++q) {
      for (size_t i = 0; i < bytes; ++i) ok = ok && recv[q * bytes + i] == byte_of(q * 16 + me, i, salt);
    }
    CHECK(ok);

    g_context = "reduce" + at;
    const size_t count = bytes / 8 + 1;
    std::vector<int64_t> vals(count), sums(count, -1);
    for (size_t i = 0; i < count; ++i) vals[i] = value_of(me, i, salt);
    reduce(r.c, vals.data(), sums.data(), count, kernel(kernels::OpId::SUM, kernels::TypeId::I64), root);
    size_t bad = 0;
    for (size_t i = 0; i < count; ++i) {
      int64_t want = -1;
      if (me == root) {
        want = 0;
        for (uint32_t q = 0; q < n; ++q) want += value_of(q, i, salt);
      }
      bad += sums[i] != want;
    }
    CHECK_EQ(bad, size_t(0));

    // v-variants: rank q's block is bytes + q long, placed with gaps.
    std::vector<size_t> vb(n), vd(n);
    size_t total = 0;
    for (uint32_t q = 0; q < n; ++q) {
      vb[q] = bytes + q;
      vd[q] = total;
      total += vb[q] + 2;
    }
    std::vector<uint8_t> vmine(vb[me]);
    for (size_t i = 0; i < vb[me]; ++i) vmine[i] = byte_of(me, i, salt);
    auto v_ok = [&](const std::vector<uint8_t>& buf) {
      for (uint32_t q = 0; q < n; ++q) {
        for (size_t i = 0; i < vb[q]; ++i) {
          if (buf[vd[q] + i] != byte_of(q, i, salt)) return false;
        }
        if (buf[vd[q] + vb[q]] != kUntouched) return false;
      }
      return true;
    };
    g_context = "gatherv" + at;
    std::vector<uint8_t> vrecv(total, kUntouched);
    gatherv(r.c, vmine.data(), vb[me], vrecv.data(), vb.data(), vd.data(), root);
    if (me == root) CHECK(v_ok(vrecv));
    g_context = "allgatherv" + at;
    std::fill(vrecv.begin(), vrecv.end(), kUntouched);
    allgatherv(r.c, vmine.data(), vb[me], vrecv.data(), vb.data(), vd.data());
    CHECK(v_ok(vrecv));
    g_context = "scatterv" + at;
    std::vector<uint8_t> vall(total, kUntouched);
    for (uint32_t q = 0; q < n; ++q) {
      for (size_t i = 0; i < vb[q]; ++i) vall[vd[q] + i] = byte_of(q, i, salt);
    }
    std::vector<uint8_t> vgot(vb[me] + 1, kUntouched);
    scatterv(r.c, vall.data(), vb.data(), vd.data(), vgot.data(), vb[me], root);
    ok = vgot[vb[me]] == kUntouched;
    for (size_t i = 0; i < vb[me]; ++i) ok = ok && vgot[i] == byte_of(me, i, salt);
    CHECK(ok);
  }
}

// ---- 8. Mismatches ----------------------------------------------------------------------

// After a mismatch the communicator must still give right answers.
void still_works(Rank& r, uint32_t salt) {
  int64_t mine[3] = {value_of(r.me, 0, salt), value_of(r.me, 1, salt), value_of(r.me, 2, salt)}, got[3];
  allreduce(r.c, mine, got, 3, kernel(kernels::OpId::SUM, kernels::TypeId::I64));
  for (size_t i = 0; i < 3; ++i) {
    int64_t want = 0;
    for (uint32_t q = 0; q < r.n; ++q) want += value_of(q, i, salt);
    CHECK_EQ(got[i], want);
  }
  barrier(r.c);
}

void test_mismatch(Rank& r, uint32_t salt) {
  const uint32_t me = r.me, last = r.n - 1;
  const Combiner sum = kernel(kernels::OpId::SUM, kernels::TypeId::I64);
  int64_t one[2] = {1, 2}, out[2];
  std::vector<uint8_t> big(r.c.half_bytes() + 100, 1);

  g_context = "mismatch: collective";
  EXPECT_ERROR(NOT_SAME, "ranks disagree on the collective", [&] {
    if (me == 0) barrier(r.c);
    else allreduce(r.c, one, out, 1, sum);
  });
  still_works(r, salt);

  g_context = "mismatch: root";
  EXPECT_ERROR(NOT_SAME, "ranks disagree on the root", [&] { bcast(r.c, one, 8, me == 0 ? 0 : 1); });
  still_works(r, salt + 1);

  g_context = "mismatch: op";
  EXPECT_ERROR(NOT_SAME, "ranks disagree on the op", [&] {
    allreduce(r.c, one, out, 1, me == last ? kernel(kernels::OpId::MAX, kernels::TypeId::I64) : sum);
  });
  still_works(r, salt + 2);

  g_context = "mismatch: datatype";
  EXPECT_ERROR(NOT_SAME, "ranks disagree on the datatype", [&] {
    allreduce(r.c, one, out, 1, me == 0 ? sum : kernel(kernels::OpId::SUM, kernels::TypeId::U64));
  });
  still_works(r, salt + 3);

  g_context = "mismatch: size, one rank above a slot half";
  EXPECT_ERROR(NOT_SAME, "ranks disagree on the message size", [&] {
    // The last rank's count takes the sliced (or direct) algorithm.
    size_t count = me == last ? big.size() / 8 : 2;
    std::vector<int64_t> in(count, 1), res(count);
    allreduce(r.c, in.data(), res.data(), count, sum);
  });
  still_works(r, salt + 4);

  g_context = "mismatch: bcast size";
  EXPECT_ERROR(NOT_SAME, "ranks disagree on the message size",
               [&] { bcast(r.c, big.data(), me == 0 ? big.size() : 8, 0); });
  still_works(r, salt + 5);
}

// ---- 9. Several contexts at once --------------------------------------------------------

void test_contexts(Rank& r, uint32_t salt) {
  const uint32_t rounds = test::long_form() ? 60 : 12;
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kExtraContexts; ++t) {
    threads.emplace_back([&r, t, salt, rounds] {
      g_context = "context " + std::to_string(r.job.contexts[t]);
      Context c(r.seg, r.job.contexts[t], r.me, world_of(r.n));
      const Combiner sum = kernel(kernels::OpId::SUM, kernels::TypeId::I64);
      const size_t h = c.half_bytes();
      for (uint32_t k = 0; k < rounds; ++k) {
        const uint32_t s = salt + t * 1000 + k;
        // Sizes differ by thread so the contexts run unlike phases at once.
        const size_t count = (t == 0 ? 3 : t == 1 ? h / 8 + 5 : 700) + k;
        std::vector<int64_t> in(count), out(count);
        for (size_t i = 0; i < count; ++i) in[i] = value_of(r.me, i, s);
        allreduce(c, in.data(), out.data(), count, sum);
        size_t bad = 0;
        for (size_t i = 0; i < count; ++i) {
          int64_t want = 0;
          for (uint32_t q = 0; q < r.n; ++q) want += value_of(q, i, s);
          bad += out[i] != want;
        }
        const uint32_t root = k % r.n;
        const size_t bytes = t == 2 ? 2 * h + 1 : 40 + k;
        std::vector<uint8_t> buf(bytes);
        for (size_t i = 0; i < bytes; ++i) buf[i] = r.me == root ? byte_of(root, i, s) : 0;
        bcast(c, buf.data(), bytes, root);
        for (size_t i = 0; i < bytes; ++i) bad += buf[i] != byte_of(root, i, s);
        if (k % 4 == t) barrier(c);
        CHECK_EQ(bad, size_t(0));
      }
    });
  }
  for (auto& t : threads) t.join();
  // Every member releases its contexts; the last returns them to the pool.
  for (uint32_t t = 0; t < kExtraContexts; ++t) r.seg->release_context(r.job.contexts[t]);
}

// ---- 10. Many communicators, one after another ------------------------------------------

// A context for the whole job, as communicator creation takes one: rank 0
// takes it from the pool and tells the others its id through COMM_WORLD.
uint32_t take_context(Rank& r) {
  uint32_t id = 0;
  if (r.me == 0) {
    int got = r.seg->alloc_context(r.n);
    CHECK(got > 0);
    id = uint32_t(got);
  }
  bcast(r.c, &id, sizeof id, 0);
  return id;
}

// As communicator creation and free do: the leader takes a context from the
// pool and tells the others its id through COMM_WORLD; every member frees
// it after its last collective there. A window of contexts stays alive and
// in use while older ones go, far past the sets a rank takes fresh
// (SlotSets::kWarmSets), so sets move from context to context; the rank
// must then keep using about as many as it had.
void test_many_contexts(Rank& r, uint32_t salt) {
  const uint32_t rounds = test::long_form() ? 600 : 150, window = 4;
  const size_t h = r.c.half_bytes();
  const Combiner sum = kernel(kernels::OpId::SUM, kernels::TypeId::I64);
  std::unique_ptr<Context> live[window];
  uint32_t ids[window] = {};
  for (uint32_t k = 0; k < rounds; ++k) {
    g_context = "many contexts, round " + std::to_string(k);
    const uint32_t w = k % window;
    if (live[w]) {
      live[w].reset();
      r.seg->release_context(ids[w]);
    }
    ids[w] = take_context(r);
    live[w] = std::make_unique<Context>(r.seg, ids[w], r.me, world_of(r.n));
    // Every live context once, the new one with a multi-chunk message.
    size_t bad = 0;
    for (uint32_t j = 0; j < window; ++j) {
      if (!live[j]) continue;
      const uint32_t s = salt + k * 16 + j;
      const size_t count = j == w ? h / 8 + 9 : 5 + j;
      std::vector<int64_t> in(count), out(count);
      for (size_t i = 0; i < count; ++i) in[i] = value_of(r.me, i, s);
      allreduce(*live[j], in.data(), out.data(), count, sum);
      for (size_t i = 0; i < count; ++i) {
        int64_t want = 0;
        for (uint32_t q = 0; q < r.n; ++q) want += value_of(q, i, s);
        bad += out[i] != want;
      }
    }
    CHECK_EQ(bad, size_t(0));
  }
  for (uint32_t j = 0; j < window; ++j) {
    live[j].reset();
    r.seg->release_context(ids[j]);
  }
  g_context = "many contexts: slot sets used";
  CHECK(r.seg->sets()->used() <= transport::SlotSets::kWarmSets + 2 * window + kExtraContexts);
  barrier(r.c);
  // Every context is back in the pool.
  if (r.me == 0) {
    for (uint32_t id : ids) CHECK_EQ(r.seg->header()->contexts_state[id].in_use.load(), 0u);
  }
}

// ---- 10b. Collectives that write no slot hold no slot set ----------------------------

// A barrier, an allreduce of 8 bytes and a bcast of 16 (messages that travel
// in the header line) on more contexts than a rank keeps sets warm: a rank
// binds its slot set at its first write in a collective (Context::slot), so
// none of them takes one. Then one message larger than a header on one of
// them: that context, and only it, takes a set.
void test_headers_hold_no_set(Rank& r, uint32_t salt) {
  const uint32_t count = transport::SlotSets::kWarmSets + 16;
  const Combiner sum = kernel(kernels::OpId::SUM, kernels::TypeId::I64);
  std::vector<uint32_t> ids(count);
  std::vector<std::unique_ptr<Context>> live(count);
  for (uint32_t j = 0; j < count; ++j) {
    ids[j] = take_context(r);
    live[j] = std::make_unique<Context>(r.seg, ids[j], r.me, world_of(r.n));
  }
  const uint32_t before = r.seg->sets()->used();
  size_t bad = 0;
  for (uint32_t j = 0; j < count; ++j) {
    g_context = "header-only collectives, context " + std::to_string(j);
    const uint32_t s = salt + j;
    Context& c = *live[j];
    barrier(c);
    int64_t in = value_of(r.me, 0, s), out = 0, want = 0;
    for (uint32_t q = 0; q < r.n; ++q) want += value_of(q, 0, s);
    allreduce(c, &in, &out, 1, sum);
    bad += out != want;
    const uint32_t root = j % r.n;
    uint8_t buf[16];
    for (size_t i = 0; i < sizeof buf; ++i) buf[i] = r.me == root ? byte_of(root, i, s) : 0;
    bcast(c, buf, sizeof buf, root);
    for (size_t i = 0; i < sizeof buf; ++i) bad += buf[i] != byte_of(root, i, s);
  }
  CHECK_EQ(bad, size_t(0));
  g_context = "header-only collectives: slot sets used";
  CHECK_EQ(r.seg->sets()->used(), before);
  // 17 bytes do not fit the header line: every rank writes its slot half.
  std::vector<int64_t> in(3, value_of(r.me, 1, salt)), out(3);
  allreduce(*live[0], in.data(), out.data(), in.size(), sum);
  int64_t want = 0;
  for (uint32_t q = 0; q < r.n; ++q) want += value_of(q, 1, salt);
  for (int64_t v : out) bad += v != want;
  CHECK_EQ(bad, size_t(0));
  // A set never used: the rank has written fewer than it keeps warm.
  CHECK(before < transport::SlotSets::kWarmSets);
  CHECK_EQ(r.seg->sets()->used(), before + 1);
  for (uint32_t j = 0; j < count; ++j) {
    live[j].reset();
    r.seg->release_context(ids[j]);
  }
  barrier(r.c);
}

// ---- 11. A rank that ends early ---------------------------------------------------------

void test_death(Rank& r) {
  g_context = "a rank ends early";
  barrier(r.c);
  if (r.me == r.n - 1) return;  // the harness records its end, as the launcher does
  int64_t one = 1, out = 0;
  EXPECT_ERROR(PROC_FAILED, "has exited while rank", [&] {
    // Enough calls that one of them waits on the departed rank.
    for (int i = 0; i < 1000; ++i) allreduce(r.c, &one, &out, 1, kernel(kernels::OpId::SUM, kernels::TypeId::I64));
  });
}

// ---- The harness ---------------------------------------------------------------------

// Records a rank's end as the launcher does (napi/launcher_binding.cc):
// status 1 + code or -signal; a failure marks the whole job failed.
void record_end(transport::Header* h, uint32_t rank, int32_t status, bool failed) {
  h->ranks[rank].exited.store(status, std::memory_order_release);
  if (failed && !h->failed.load()) {
    h->failed_rank.store(int32_t(rank));
    h->failed.store(1, std::memory_order_release);
  }
}

// Runs `body` on every rank of a fresh job; false when a rank failed a check
// or ended abnormally. With `contexts`, the job's extra contexts are taken
// from the pool first, and must be back in it at the end.
bool run_job(Mode mode, uint32_t n, bool contexts, const std::function<void(Rank&)>& body) {
  Job job;
  job.mode = mode;
  job.n = n;
  std::string err;
  job.seg.reset(transport::Segment::create(n, &err));
  if (!job.seg) {
    std::fprintf(stderr, "Segment::create: %s\n", err.c_str());
    return false;
  }
  for (uint32_t t = 0; t < kExtraContexts && contexts; ++t) job.contexts[t] = uint32_t(job.seg->alloc_context(n));
  void* page = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return false;
  job.shared = new (page) Shared{};
  transport::Header* h = job.seg->header();
  const int failures_before = test::g_failures.load();
  bool ok = true;

  auto rank_main = [&](uint32_t me, transport::Segment* seg) {
    Context world(seg, 0, me, world_of(n));
    Rank rank{job, me, n, seg, world};
    try {
      body(rank);
    } catch (const std::exception& e) {
      test::fail(__FILE__, __LINE__, std::string("rank ") + std::to_string(me) + ": unexpected exception: " + e.what());
      return false;
    }
    return true;
  };

  if (mode == Mode::PROCESSES) {
    std::vector<pid_t> pids(n);
    std::fflush(nullptr);
    for (uint32_t r = 0; r < n; ++r) {
      pids[r] = fork();
      if (pids[r] == 0) {
        transport::Segment* seg = transport::Segment::attach(dup(job.seg->fd()), r, n, &err);
        if (!seg) {
          std::fprintf(stderr, "rank %u: attach: %s\n", r, err.c_str());
          _exit(3);
        }
        bool fine = rank_main(r, seg);
        delete seg;
        std::fflush(nullptr);
        std::exit(fine && test::g_failures.load() == failures_before ? 0 : 1);
      }
    }
    for (uint32_t done = 0; done < n; ++done) {
      int status;
      pid_t pid = waitpid(-1, &status, 0);
      uint32_t r = 0;
      while (r < n && pids[r] != pid) ++r;
      if (r == n) continue;
      bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
      if (failed) {
        std::fprintf(stderr, "rank %u (pid %d) %s %d\n", r, int(pid), WIFEXITED(status) ? "exited with" : "was killed by signal",
                     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        ok = false;
      }
      record_end(h, r, WIFEXITED(status) ? 1 + WEXITSTATUS(status) : -WTERMSIG(status), failed);
    }
  } else {
    std::vector<std::thread> threads;
    std::atomic<bool> all_fine{true};
    for (uint32_t r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        std::string e;
        std::unique_ptr<transport::Segment> seg(transport::Segment::attach(dup(job.seg->fd()), r, n, &e));
        if (!seg) {
          test::fail(__FILE__, __LINE__, "attach: " + e);
          record_end(h, r, 1 + 3, true);
          all_fine.store(false);
          return;
        }
        bool fine = rank_main(r, seg.get());
        if (!fine) all_fine.store(false);
        record_end(h, r, fine ? 1 : 2, !fine);
      });
    }
    for (auto& t : threads) t.join();
    ok = all_fine.load();
  }
  for (uint32_t t = 0; t < kExtraContexts && contexts; ++t) {
    CHECK_EQ(h->contexts_state[job.contexts[t]].in_use.load(), 0u);
  }
  munmap(page, sizeof(Shared));
  return ok && test::g_failures.load() == failures_before;
}

const char* mode_name(Mode m) { return m == Mode::THREADS ? "threads" : "processes"; }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: coll_test threads|processes [np...]\n");
    return 2;
  }
  Mode mode;
  if (std::strcmp(argv[1], "threads") == 0) mode = Mode::THREADS;
  else if (std::strcmp(argv[1], "processes") == 0) mode = Mode::PROCESSES;
  else {
    std::fprintf(stderr, "coll_test: unknown mode %s\n", argv[1]);
    return 2;
  }
  std::vector<uint32_t> sizes;
  for (int i = 2; i < argc; ++i) sizes.push_back(uint32_t(std::atoi(argv[i])));
  if (sizes.empty()) sizes = test::long_form() ? std::vector<uint32_t>{2, 3, 4, 5, 8} : std::vector<uint32_t>{2, 3, 4};
  const uint32_t salts = test::long_form() ? 3 : 1;

  for (uint32_t n : sizes) {
    auto t0 = std::chrono::steady_clock::now();
    bool ok = run_job(mode, n, true, [salts](Rank& r) {
      // First, while the rank has written fewer sets than it keeps warm.
      test_headers_hold_no_set(r, 0);
      test_barrier(r);
      for (uint32_t salt = 0; salt < salts; ++salt) {
        test_bcast(r, salt);
        test_bcast_derived(r, salt);
        test_allreduce(r, salt);
        test_alltoallv(r, salt);
        test_reduce_scatter(r, salt);
        test_scan(r, salt);
        test_others(r, salt);
        test_mismatch(r, salt);
      }
      test_contexts(r, 0);
      test_many_contexts(r, 0);
      barrier(r.c);
    });
    // NODEMPI_CHECK_SAME=0: bcast roots that run ahead (at 16 B or less
    // in the header line, holding no slot set, coll/bcast.cc) and scatter
    // roots that run one collective ahead, beside collectives that hold a
    // set, on contexts whose slot sets move from one to the next.
    setenv("NODEMPI_CHECK_SAME", "0", 1);
    nodempi::retune();
    ok = run_job(mode, n, true, [](Rank& r) {
      g_context = "checks off";
      test_headers_hold_no_set(r, 5);
      test_bcast(r, 5);
      test_others(r, 5);
      test_contexts(r, 5);
      test_many_contexts(r, 5);
      barrier(r.c);
    }) && ok;
    unsetenv("NODEMPI_CHECK_SAME");
    nodempi::retune();
    ok = run_job(mode, n, false, test_death) && ok;
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("coll_test %s np=%u: %s (%.1f s)\n", mode_name(mode), n, ok ? "ok" : "FAILED", s);
    std::fflush(stdout);
  }
  return test::summary("coll_test");
}
