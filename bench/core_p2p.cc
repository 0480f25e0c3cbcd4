// Point-to-point ping-pong through nodempi's core with no JavaScript and no
// N-API in the way: what the shared-memory protocol itself costs per half
// round trip, to set beside Open MPI's osu_latency and nodempi's from
// JavaScript (bench/P2P.md, "Where the 8 B time goes").
//
// Build (CMakeLists.txt's NODEMPI_BENCH targets, the core's flags) and run
// from the repository root:
//   cmake -S . -B build/bench -DNODEMPI_BENCH=ON
//   cmake --build build/bench --target core_p2p && build/bench/core_p2p [bytes] [self]
//
// The process creates a segment as the launcher does and forks two ranks.
// Method of osu_latency (bench/ompi/osu_p2p.c): rank 0 sends then receives,
// rank 1 receives then sends, blocking calls, tag 1; a trial is rank 0's
// wall time over its round trips / (2 x iterations). Prints the median and
// the fastest of 7 trials, in µs, as one JSON line.
//
// With `self`: one rank sends to itself and receives, the time per send +
// receive pair: the core's share of bench/p2p_calls.mjs's one-rank loop
// (no peer to wait for, so only the cost of the calls).
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/p2p/p2p.h"
#include "core/transport/segment.h"

using namespace nodempi;

namespace {

constexpr int kTrials = 7;
constexpr int kIterations = 200000;

double now_ns() {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void run_rank(int fd, uint32_t me, uint32_t n, size_t bytes, double* trials) {
  std::string err;
  transport::Segment* seg = transport::Segment::attach(fd, me, n, &err);
  if (!seg) {
    std::fprintf(stderr, "rank %u: %s\n", me, err.c_str());
    std::_Exit(1);
  }
  p2p::P2P p(seg, me);
  const uint32_t peer = n == 1 ? 0 : 1 - me;
  const uint64_t key = 1;  // one communicator, context 1 of generation 0
  const p2p::Match match{key, int32_t(peer), 1};
  const p2p::Watch watch{&peer, 1};
  std::vector<uint8_t> send(bytes, uint8_t(me + 1)), recv(bytes);
  p2p::Status st;
  auto round = [&] {
    if (n == 1) {
      p.send(key, 0, 1, 0, send.data(), bytes);
      p.recv(match, recv.data(), bytes, watch, st);
    } else if (me == 0) {
      p.send(key, 0, 1, peer, send.data(), bytes);
      p.recv(match, recv.data(), bytes, watch, st);
    } else {
      p.recv(match, recv.data(), bytes, watch, st);
      p.send(key, 1, 1, peer, send.data(), bytes);
    }
  };
  for (int i = 0; i < kIterations; ++i) round();  // warm-up
  for (int t = 0; t < kTrials; ++t) {
    const double t0 = now_ns();
    for (int i = 0; i < kIterations; ++i) round();
    if (me == 0) trials[t] = (now_ns() - t0) / (n == 1 ? kIterations : 2.0 * kIterations);
  }
  if (bytes > 0 && recv[0] != uint8_t(peer + 1)) {
    std::fprintf(stderr, "rank %u: WRONG RESULT\n", me);
    std::_Exit(1);
  }
  std::_Exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  const size_t bytes = argc > 1 ? size_t(std::atoll(argv[1])) : 8;
  const bool self = argc > 2 && std::string(argv[2]) == "self";
  if (bytes > p2p::kMaxPayload || (argc > 2 && !self)) {
    std::fprintf(stderr, "usage: core_p2p [bytes, at most %zu] [self]\n", p2p::kMaxPayload);
    return 2;
  }
  const uint32_t n = self ? 1 : 2;
  std::string err;
  transport::Segment* seg = transport::Segment::create(n, &err);
  if (!seg) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  // Rank 0's trials, on a page shared with the forked ranks.
  void* page = mmap(nullptr, sizeof(double) * kTrials, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return 1;
  auto* trials = static_cast<double*>(page);
  for (uint32_t r = 0; r < n; ++r) {
    if (fork() == 0) run_rank(seg->fd(), r, n, bytes, trials);
  }
  bool ok = true;
  for (int st; wait(&st) > 0;) ok = ok && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  if (!ok) {
    std::fprintf(stderr, "a rank failed\n");
    return 1;
  }
  std::sort(trials, trials + kTrials);
  std::printf("{\"impl\":\"core\",\"test\":\"%s\",\"bytes\":%zu,\"us\":%.4f,\"fastest\":%.4f}\n",
              self ? "self" : "latency", bytes,
              trials[kTrials / 2] / 1000, trials[0] / 1000);
  return 0;
}
