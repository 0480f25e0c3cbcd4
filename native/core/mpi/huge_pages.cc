#include "core/mpi/huge_pages.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace nodempi::mpi {

namespace {

constexpr size_t kHuge = size_t(2) << 20;
constexpr size_t kMin = size_t(4) << 20;  // numpy's threshold
constexpr size_t kRemembered = 4096;      // buffers whose advice is remembered, then forgotten all at once

bool enabled() {
  static const bool on = [] {
    const char* v = std::getenv("NODEMPI_HUGE_PAGES");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  return on;
}

}  // namespace

void prefer_huge_pages(const void* p, size_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (n < kMin || !enabled()) return;
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~uintptr_t(kHuge - 1);
  const uintptr_t hi = (reinterpret_cast<uintptr_t>(p) + n) & ~uintptr_t(kHuge - 1);
  if (hi <= lo) return;
  // How often each range has been advised, by its start: a buffer freed
  // and another allocated at the same place is at worst advised a step
  // late (a different length starts again).
  struct Seen {
    uintptr_t bytes = 0;
    int steps = 0;
  };
  static std::mutex mu;
  static std::unordered_map<uintptr_t, Seen> seen;
  int step;
  {
    std::lock_guard<std::mutex> lk(mu);
    if (seen.size() >= kRemembered) seen.clear();
    Seen& s = seen[lo];
    if (s.bytes != hi - lo) s = Seen{hi - lo, 0};
    if (s.steps >= 2) return;
    step = ++s.steps;
  }
  void* at = reinterpret_cast<void*>(lo);
  if (step == 1) {
    madvise(at, hi - lo, MADV_HUGEPAGE);
  } else {
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
    madvise(at, hi - lo, MADV_COLLAPSE);  // EINVAL before Linux 6.1: left to khugepaged
  }
#else
  (void)p;
  (void)n;
#endif
}

}  // namespace nodempi::mpi
