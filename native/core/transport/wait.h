// Waiting for a peer's control line: spin briefly, then yield, then sleep on
// a futex, checking now and then that the peer is still alive.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

#include "core/clock.h"
#include "core/transport/segment.h"

namespace nodempi::transport {

// Serial-number comparison: sequence numbers wrap, differences never reach 2^31.
inline bool seq_reached(uint32_t value, uint32_t target) { return int32_t(value - target) >= 0; }

// Whether a job of `nranks` ranks has more ranks than online CPUs: then a
// rank that spins, or copies on its peers' behalf, takes a core a peer needs.
bool oversubscribed(uint32_t nranks);

struct WaitPolicy {
  uint32_t spin_ns;   // busy-poll this long first (0 when ranks outnumber cores)
  uint32_t yield_ns;  // then sched_yield() this long, then futex sleeps
  // From the job size, the number of online CPUs and the environment
  // (NODEMPI_SPIN_US, NODEMPI_YIELD_US).
  static WaitPolicy for_job(uint32_t nranks);
};

// Sleep while *word == expected, at most timeout_ns (the word lives in
// shared memory, so the futex is not process-private); wake every sleeper.
// Every waker wakes all: several ranks often wait on one word.
void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, long timeout_ns);
void futex_wake_all(std::atomic<uint32_t>* word);

// Publish `value` on `line` and wake sleepers, if any.
void post(CtrlLine* line, uint32_t value);

// Liveness of the ranks a wait depends on. The header says what the launcher
// saw; kill(pid, 0) covers the window before the launcher reaps a rank.
class Liveness {
 public:
  Liveness(const Header* header, uint32_t self_world_rank);
  // Empty when `world_rank`, the launcher and the job are all alive;
  // otherwise what has failed, for a PROC_FAILED message.
  std::string failure(uint32_t world_rank) const;

 private:
  const Header* header_;
  uint32_t self_;
  // The launcher is our parent when it started us directly (not through
  // `-- CMD`): then a changed getppid() tells at once that it died, even
  // while it lingers as a zombie that kill(pid, 0) still finds.
  bool launcher_is_parent_ = false;
};

// Block until line->seq reaches `target`. `peer_world_rank` is the rank that
// will post it, used for the liveness check; `what` names the operation for
// error messages. `touch`, when not null, is a line of the peer's that the
// caller reads right after the post: the spin reads it too, so that the
// line the peer wrote before posting is usually here when the post is.
// Returns the phase seen posted, `target` or later.
uint32_t wait_for(CtrlLine* line, uint32_t target, const WaitPolicy& policy, const Liveness& live,
                  uint32_t peer_world_rank, const char* what, const void* touch = nullptr);

}  // namespace nodempi::transport
