#include "core/memory/huge_pages.h"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "core/tuning.h"

namespace nodempi::memory {

namespace {

constexpr size_t kRemembered = 4096;      // buffers whose advice is remembered, then forgotten all at once

#if defined(__linux__) && defined(MADV_HUGEPAGE)
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

// False once the kernel says it has no MADV_COLLAPSE.
std::atomic<bool> g_collapse{true};

// MADV_COLLAPSE on [at, at + n): false where no huge page is to be had
// there now. EINVAL is a kernel before 6.1 (khugepaged may still collapse
// the range later): not tried again anywhere.
bool collapse(void* at, size_t n) {
  if (!g_collapse.load(std::memory_order_relaxed)) return true;
  if (madvise(at, n, MADV_COLLAPSE) == 0) return true;
  if (errno == EINVAL) g_collapse.store(false, std::memory_order_relaxed);
  return errno == EINVAL;
}
#endif

}  // namespace

// Off where the machine's owner turned transparent huge pages off, since
// MADV_COLLAPSE would make some anyway.
bool huge_pages_on() {
  static const bool on = [] {
    if (!tuning().huge_pages) return false;
    std::FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f) return false;
    char mode[128] = {};
    const bool read = std::fgets(mode, sizeof mode, f) != nullptr;
    std::fclose(f);
    return read && std::strstr(mode, "[never]") == nullptr;
  }();
  return on;
}

void prefer_huge_pages(const void* p, size_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (n < kHugePagesFrom || !huge_pages_on()) return;
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(p) + kHugePage - 1) & ~uintptr_t(kHugePage - 1);
  const uintptr_t hi = (reinterpret_cast<uintptr_t>(p) + n) & ~uintptr_t(kHugePage - 1);
  if (hi <= lo) return;
  // Ranges by their start: seen before (with the same length), and whether
  // collapsing failed there. A buffer freed and another mapped at the same
  // place looks the same, so from its second use on a range is collapsed
  // at every use: where it is huge already that costs a walk of its page
  // table (~3 us for 16 MiB), and a new mapping there gets its pages.
  struct Seen {
    uintptr_t bytes = 0;
    bool failed = false;
  };
  static std::mutex mu;
  static std::unordered_map<uintptr_t, Seen> seen;
  void* at = reinterpret_cast<void*>(lo);
  std::lock_guard<std::mutex> lk(mu);
  if (seen.size() >= kRemembered) seen.clear();
  auto [it, fresh] = seen.try_emplace(lo);
  Seen& s = it->second;
  if (fresh || s.bytes != hi - lo) {
    s = Seen{hi - lo, false};
    madvise(at, hi - lo, MADV_HUGEPAGE);
    return;
  }
  // Where no huge page was to be had: not again.
  if (!s.failed) s.failed = !collapse(at, hi - lo);
#else
  (void)p;
  (void)n;
#endif
}

void make_huge_pages(void* p, size_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (!huge_pages_on()) return;
  madvise(p, n, MADV_HUGEPAGE);
  collapse(p, n);  // best effort: pages already there may stay small
#else
  (void)p;
  (void)n;
#endif
}

}  // namespace nodempi::memory
