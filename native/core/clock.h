// The monotonic clock and the spin-loop pause, inline: both sit in the
// busy-wait loops of the transport, the point-to-point layer and the engine,
// where an out-of-line call per poll costs (the core is built without LTO).
#pragma once
#include <time.h>

#include <atomic>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace nodempi {

// CLOCK_MONOTONIC in nanoseconds.
inline uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// One pause of a busy-wait: tells the core it spins (a sibling hyperthread
// gets the pipeline, and leaving the loop does not flush it).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#else
  std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

}  // namespace nodempi
