// Throughput of the double SUM kernel in each table this CPU supports,
// against memcpy of the same number of bytes, at 4 KiB, 256 KiB and 16 MiB
// per operand (L1, L2, main memory on most machines).
//
// Build (CMakeLists.txt's NODEMPI_BENCH targets, the core's flags) and run
// from the repository root:
//   cmake -S . -B build/bench -DNODEMPI_BENCH=ON
//   cmake --build build/bench --target kernels_native && build/bench/kernels_native
//
// GB/s counts the bytes of one operand per second (n * 8 / time), for the
// kernel and for memcpy alike. The kernel moves three streams (reads a and
// b, writes out) where memcpy moves two, so at memory-bound sizes ~2/3 of
// memcpy's figure is the ceiling. "in place" is out == b, the form the
// collectives use when accumulating into a buffer.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "core/kernels/kernels.h"

using namespace nodempi::kernels;
using Clock = std::chrono::steady_clock;

namespace {

// Median over trials of the time of one call, each trial repeating the call
// enough times to last about 20 ms.
template <class F>
double seconds_per_call(F&& call) {
  size_t reps = 1;
  for (;;) {  // calibrate
    auto t0 = Clock::now();
    for (size_t i = 0; i < reps; ++i) call();
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s > 0.02) break;
    reps *= 2;
  }
  std::vector<double> trials;
  for (int t = 0; t < 9; ++t) {
    auto t0 = Clock::now();
    for (size_t i = 0; i < reps; ++i) call();
    trials.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / reps);
  }
  std::sort(trials.begin(), trials.end());
  return trials[trials.size() / 2];
}

// Keeps the compiler from deleting a memcpy whose result is never read.
void clobber(void* p) { asm volatile("" : : "r"(p) : "memory"); }

}  // namespace

int main() {
  const size_t sizes[] = {4 << 10, 256 << 10, 16 << 20};
  const char* const isas[] = {"scalar", "avx2", "avx512", "neon"};
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> dist(1.0, 2.0);  // no subnormals, no NaN

  std::printf("%-10s %-18s %8s %12s\n", "size", "table", "GB/s", "ns/call");
  for (size_t bytes : sizes) {
    const size_t n = bytes / sizeof(double);
    std::vector<double> a(n), b(n), out(n);
    for (size_t i = 0; i < n; ++i) {
      a[i] = dist(rng);
      b[i] = dist(rng);
    }
    char label[32];
    std::snprintf(label, sizeof label, "%zu KiB", bytes >> 10);
    auto report = [&](const char* what, double s) {
      std::printf("%-10s %-18s %8.2f %12.1f\n", label, what, bytes / s / 1e9, s * 1e9);
    };

    report("memcpy", seconds_per_call([&] {
             std::memcpy(out.data(), a.data(), bytes);
             clobber(out.data());
           }));
    for (const char* isa : isas) {
      if (!select_isa(isa)) continue;
      ReduceFn sum = lookup(OpId::SUM, TypeId::F64);
      char what[40];
      std::snprintf(what, sizeof what, "%s", isa);
      report(what, seconds_per_call([&] { sum(a.data(), b.data(), out.data(), n); }));
      // In place: b accumulates a; values stay bounded since a is in [1, 2)
      // and each run adds at most a few million times.
      std::vector<double> acc = b;
      std::snprintf(what, sizeof what, "%s in place", isa);
      report(what, seconds_per_call([&] { sum(a.data(), acc.data(), acc.data(), n); }));
    }
    select_isa("auto");
  }
  return 0;
}
