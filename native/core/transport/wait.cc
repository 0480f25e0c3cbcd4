#include "core/transport/wait.h"

#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "core/tuning.h"

namespace nodempi::transport {
namespace {

bool process_gone(int32_t pid) { return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH; }

// How long a sleeping waiter stays asleep before it looks at liveness again.
constexpr long kSleepSliceNs = 20 * 1000 * 1000;

// A post must not miss a waiter that is going to sleep: the poster stores
// its phase then reads the waiter count, the waiter adds itself then reads
// the phase, and one of them needs a store-load fence between the two. On
// the poster's side that fence waits for the line to come back from the
// core polling it, on every post: a third of what a bcast whose root runs
// ahead costs (bench/CORE.md, "A ring of header lines"). So the waiter pays
// instead, once per sleep (after its spin and yield), with membarrier(2),
// which runs a full barrier on every CPU that runs a process registered
// here: a post whose phase it cannot see yet then sees its count. Where the
// kernel or a seccomp filter refuses, posts keep the fence (and a rank that
// could not register sleeps in slices, kSleepSliceNs, so a wake missed
// between such ranks costs a slice, never a hang).
bool sleepers_fence() {
  static const bool ok = [] {
    long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    return cmds > 0 && (cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) &&
           syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
  }();
  return ok;
}

}  // namespace

// Shared between processes: not FUTEX_PRIVATE.
void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, long timeout_ns) {
  timespec ts{timeout_ns / 1000000000, timeout_ns % 1000000000};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

bool oversubscribed(uint32_t nranks) {
  // Read once per process: sysconf reads a sysfs file, which every new
  // communicator would otherwise pay.
  static const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return cpus > 0 && long(nranks) > cpus;
}

WaitPolicy WaitPolicy::for_job(uint32_t nranks) {
  // Registered before this process's first post, so no sleeper's barrier
  // can pass it by.
  sleepers_fence();
  const Tuning& t = tuning();
  // When ranks outnumber cores, spinning steals the core the peer needs to
  // make progress; go straight to yielding.
  uint32_t spin_default = oversubscribed(nranks) ? 0 : 50;
  WaitPolicy p;
  p.spin_ns = (t.spin_us == Tuning::kByJob ? spin_default : t.spin_us) * 1000;
  p.yield_ns = t.yield_us * 1000;
  return p;
}

void post(CtrlLine* line, uint32_t value) {
  const bool fenced_by_sleepers = sleepers_fence();
  line->seq.store(value, std::memory_order_release);
  // Pairs with the waiter's fetch_add + re-check: either the waiter sees the
  // new value, or we see its waiter count and wake it (sleepers_fence).
  if (fenced_by_sleepers) std::atomic_signal_fence(std::memory_order_seq_cst);
  else std::atomic_thread_fence(std::memory_order_seq_cst);
  if (line->waiters.load(std::memory_order_relaxed) != 0) futex_wake_all(&line->seq);
}

Liveness::Liveness(const Header* header, uint32_t self_world_rank) : header_(header), self_(self_world_rank) {
  launcher_is_parent_ = header && uint32_t(getppid()) == header->launcher_pid;
}

std::string Liveness::failure(uint32_t world_rank) const {
  const Header* h = header_;
  if (h->failed.load(std::memory_order_acquire)) {
    int32_t failed = h->failed_rank.load(std::memory_order_relaxed);
    if (failed < 0) return "the launcher is ending the job (a timeout or a signal)";
    return "the job has failed (rank " + std::to_string(failed) + " ended or aborted)";
  }
  if (h->ranks[self_].leaving.load(std::memory_order_acquire)) {
    return "rank " + std::to_string(self_) + " is leaving the job (finalize or exit) with this operation unfinished";
  }
  const RankInfo& peer = h->ranks[world_rank];
  if (peer.leaving.load(std::memory_order_acquire)) {
    return "rank " + std::to_string(world_rank) + " has left the job (finalize or exit) while rank " +
           std::to_string(self_) + " waits for it";
  }
  if (peer.exited.load(std::memory_order_acquire) != 0 ||
      process_gone(peer.pid.load(std::memory_order_acquire))) {
    return "rank " + std::to_string(world_rank) + " has exited while rank " + std::to_string(self_) +
           " waits for it";
  }
  if (process_gone(int32_t(h->launcher_pid)) || (launcher_is_parent_ && uint32_t(getppid()) != h->launcher_pid)) {
    return "the launcher has exited";
  }
  return {};
}

// Loads one byte of `line` and drops it, so that the line is in this core's
// cache. Its writer may be storing to it meanwhile: the value is never used,
// so the race is harmless (ranks are threads in the C++ tests, where TSan
// would report it).
namespace {
__attribute__((no_sanitize("thread"))) void touch_line(const void* line) {
  (void)*static_cast<const volatile uint8_t*>(line);
}
}  // namespace

uint32_t wait_for(CtrlLine* line, uint32_t target, const WaitPolicy& policy, const Liveness& live,
                  uint32_t peer_world_rank, const char* what, const void* touch) {
  uint32_t v = line->seq.load(std::memory_order_acquire);
  if (seq_reached(v, target)) return v;

  uint64_t start = now_ns();
  // 1. Spin: a peer on another core usually posts within microseconds.
  if (policy.spin_ns) {
    for (uint32_t i = 1;; ++i) {
      cpu_relax();
      if (touch) touch_line(touch);
      if (seq_reached(v = line->seq.load(std::memory_order_acquire), target)) return v;
      if ((i & 63) == 0 && now_ns() - start >= policy.spin_ns) break;
    }
  }
  // 2. Yield: lets an oversubscribed peer run on this core, still without
  //    paying a futex wake-up (tens of microseconds).
  for (uint32_t i = 1;; ++i) {
    sched_yield();
    if (seq_reached(v = line->seq.load(std::memory_order_acquire), target)) return v;
    if ((i & 15) == 0 && now_ns() - start >= uint64_t(policy.spin_ns) + policy.yield_ns) break;
  }
  // 3. Sleep, waking every slice to check that the peer is alive.
  for (;;) {
    std::string failed = live.failure(peer_world_rank);
    if (!failed.empty()) {
      // The peer may have posted just before it exited.
      if (seq_reached(v = line->seq.load(std::memory_order_acquire), target)) return v;
      throw CoreError(ErrorClass::PROC_FAILED, std::string(what) + ": " + failed);
    }
    line->waiters.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_fence()) syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0);
    uint32_t seen = line->seq.load(std::memory_order_seq_cst);
    if (seq_reached(seen, target)) {
      line->waiters.fetch_sub(1, std::memory_order_relaxed);
      return seen;
    }
    futex_wait(&line->seq, seen, kSleepSliceNs);
    line->waiters.fetch_sub(1, std::memory_order_relaxed);
    if (seq_reached(v = line->seq.load(std::memory_order_acquire), target)) return v;
  }
}

}  // namespace nodempi::transport
