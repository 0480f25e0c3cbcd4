// Small-message latency of the core's collectives with no JavaScript and no
// N-API in the way: what the shared-memory protocol itself costs, to set
// beside Open MPI's figures and nodempi's from JavaScript (bench/VCOLL.md,
// "Where the small-message time goes").
//
// Build (CMakeLists.txt's NODEMPI_BENCH targets, the core's flags) and run
// from the repository root:
//   cmake -S . -B build/bench -DNODEMPI_BENCH=ON
//   cmake --build build/bench --target core_latency && build/bench/core_latency [ranks] [bytes] [tight|spaced] [collective]
//
// The process creates a segment as the launcher does and forks the ranks,
// which attach to it. Timing follows the JavaScript sweep (bench/lib/
// sweep.mjs): each call timed on its own and followed by an untimed
// barrier (barrier itself back to back); a trial's figure is the mean over
// its calls, the max over ranks; the median of 7 trials is printed, in µs
// per call, one JSON line per collective as bench/ompi/osu_coll.c prints
// its points. bench/core_latency.mjs runs it beside Open MPI and nodempi
// from JavaScript. With `tight`, every collective is timed as barrier is: a
// loop of back-to-back calls.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/coll/coll.h"
#include "core/transport/segment.h"

using namespace nodempi;

namespace {

bool g_tight = false;  // set before the ranks are forked
const char* g_only = nullptr;  // one collective by name, or all

bool chosen(const char* name) { return !g_only || std::strcmp(g_only, name) == 0; }

double now_ns() {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

constexpr int kTrials = 7;
constexpr int kCalls = 100000;

// Every rank's mean of each trial of each collective, for rank 0 to report.
struct Results {
  double mean[16][transport::kMaxRanks][kTrials];
};

struct Case {
  const char* name;
  std::function<void(coll::Context&)> call;
};

std::vector<Case> cases(uint32_t n, uint32_t me, size_t bytes) {
  // Buffers sized for the largest case (alltoallv: n blocks each way).
  static std::vector<uint8_t> send, recv;
  static std::vector<size_t> counts, displs, items;
  send.assign(n * bytes + 8, uint8_t(me));
  recv.assign(n * bytes + 8, 0);
  counts.assign(n, bytes);
  displs.resize(n);
  items.assign(n, bytes / 8);
  for (uint32_t r = 0; r < n; ++r) displs[r] = r * bytes;
  static coll::Combiner sum;
  sum.fn = kernels::lookup(kernels::OpId::SUM, kernels::TypeId::F64);
  sum.item = 8;
  sum.op_id = int32_t(kernels::OpId::SUM);
  sum.type_id = uint32_t(kernels::TypeId::F64) + 1;
  return {
      {"barrier", [](coll::Context& c) { coll::barrier(c); }},
      {"bcast", [bytes](coll::Context& c) { coll::bcast(c, recv.data(), bytes, 0); }},
      {"allreduce", [bytes](coll::Context& c) { coll::allreduce(c, send.data(), recv.data(), bytes / 8, sum); }},
      {"gather", [bytes](coll::Context& c) { coll::gather(c, send.data(), recv.data(), bytes, 0); }},
      {"scatter", [bytes](coll::Context& c) { coll::scatter(c, send.data(), recv.data(), bytes, 0); }},
      {"allgather",
       [bytes](coll::Context& c) { coll::allgather(c, coll::Layout(send.data()), coll::Layout(recv.data()), bytes); }},
      {"gatherv",
       [bytes](coll::Context& c) { coll::gatherv(c, send.data(), bytes, recv.data(), counts.data(), displs.data(), 0); }},
      {"scatterv",
       [bytes](coll::Context& c) { coll::scatterv(c, send.data(), counts.data(), displs.data(), recv.data(), bytes, 0); }},
      {"allgatherv",
       [bytes](coll::Context& c) { coll::allgatherv(c, send.data(), bytes, recv.data(), counts.data(), displs.data()); }},
      {"alltoall", [bytes](coll::Context& c) { coll::alltoall(c, send.data(), recv.data(), bytes); }},
      {"alltoallv",
       [](coll::Context& c) {
         coll::alltoallv(c, send.data(), counts.data(), displs.data(), recv.data(), counts.data(), displs.data());
       }},
      {"reduceScatter", [](coll::Context& c) { coll::reduce_scatter(c, send.data(), recv.data(), items.data(), sum); }},
      {"scan", [bytes](coll::Context& c) { coll::scan(c, send.data(), recv.data(), bytes / 8, sum, false); }},
      {"exscan", [bytes](coll::Context& c) { coll::scan(c, send.data(), recv.data(), bytes / 8, sum, true); }},
  };
}

void run_rank(int fd, uint32_t me, uint32_t n, size_t bytes, Results* out) {
  std::string err;
  transport::Segment* seg = transport::Segment::attach(fd, me, n, &err);
  if (!seg) {
    std::fprintf(stderr, "rank %u: %s\n", me, err.c_str());
    std::_Exit(1);
  }
  std::vector<uint32_t> world(n);
  for (uint32_t r = 0; r < n; ++r) world[r] = r;
  coll::Context c(seg, 0, me, world);
  std::vector<Case> all = cases(n, me, bytes);
  for (size_t k = 0; k < all.size(); ++k) {
    if (!chosen(all[k].name)) continue;
    auto& call = all[k].call;
    const bool separate = k != 0 && !g_tight;  // case 0 is the barrier
    for (int i = 0; i < kCalls; ++i) {  // warm-up
      call(c);
      if (separate) coll::barrier(c);
    }
    for (int t = 0; t < kTrials; ++t) {
      double sum = 0;
      if (g_tight) {
        const double t0 = now_ns();
        for (int i = 0; i < kCalls; ++i) call(c);
        sum = now_ns() - t0;
      } else {
        for (int i = 0; i < kCalls; ++i) {
          const double t0 = now_ns();
          call(c);
          sum += now_ns() - t0;
          if (separate) coll::barrier(c);
        }
      }
      out->mean[k][me][t] = sum / kCalls;
    }
  }
  std::_Exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  const uint32_t n = argc > 1 ? uint32_t(std::atoi(argv[1])) : 2;
  const size_t bytes = argc > 2 ? size_t(std::atoll(argv[2])) : 8;
  g_tight = argc > 3 && std::strcmp(argv[3], "tight") == 0;
  g_only = argc > 4 ? argv[4] : nullptr;
  if (n < 1 || n > 64 || bytes % 8 != 0 || bytes == 0 || (argc > 3 && !g_tight && std::strcmp(argv[3], "spaced") != 0)) {
    std::fprintf(stderr, "usage: core_latency [ranks 1-64] [bytes, a multiple of 8] [tight|spaced] [collective]\n");
    return 2;
  }
  std::string err;
  transport::Segment* seg = transport::Segment::create(n, &err);
  if (!seg) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  // The results page is shared with the forked ranks.
  void* page = mmap(nullptr, sizeof(Results), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return 1;
  auto* results = new (page) Results{};
  for (uint32_t r = 0; r < n; ++r) {
    if (fork() == 0) run_rank(seg->fd(), r, n, bytes, results);
  }
  bool ok = true;
  for (int st; wait(&st) > 0;) ok = ok && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  if (!ok) {
    std::fprintf(stderr, "a rank failed\n");
    return 1;
  }
  std::vector<Case> all = cases(n, 0, bytes);
  for (size_t k = 0; k < all.size(); ++k) {
    if (!chosen(all[k].name)) continue;
    double trial[kTrials];
    for (int t = 0; t < kTrials; ++t) {
      trial[t] = 0;
      for (uint32_t r = 0; r < n; ++r) trial[t] = std::max(trial[t], results->mean[k][r][t]);
    }
    std::sort(trial, trial + kTrials);
    std::printf("{\"impl\":\"core\",\"np\":%u,\"coll\":\"%s\",\"bytes\":%zu,\"us\":%.4f}\n", n, all[k].name,
                k == 0 ? size_t(0) : bytes, trial[kTrials / 2] / 1000);
  }
  return 0;
}
