#include "core/transport/inbox.h"

#include <sched.h>
#include <time.h>

#include <string>

#include "core/error.h"
#include "core/transport/wait.h"

namespace nodempi::transport {
namespace {

// Rare and not latency-critical: yield, then nap, checking the peer.
void pause_for(const Liveness& live, uint32_t peer, unsigned& rounds) {
  if (++rounds < 64) {
    sched_yield();
    return;
  }
  timespec ts{0, 200 * 1000};
  nanosleep(&ts, nullptr);
  if ((rounds & 255) == 0) {
    std::string failed = live.failure(peer);
    if (!failed.empty()) throw CoreError(ErrorClass::PROC_FAILED, "createIntercomm: " + failed);
  }
}

}  // namespace

std::vector<int32_t> exchange(Segment& seg, uint32_t self, uint32_t peer, uint32_t tag,
                              const std::vector<int32_t>& data) {
  Header* h = seg.header();
  Liveness live(h, self);
  if (data.size() > kMaxRanks + 4) throw CoreError(ErrorClass::INTERN, "createIntercomm: message too long");

  // 1. Send: once the previous message from here has been taken, fill our
  //    outbox and mark it full. Its addressee is in an exchange with us (it
  //    sent us what we received), so it will take it.
  Outbox& out = h->outboxes[self];
  unsigned rounds = 0;
  while (out.state.load(std::memory_order_acquire) != 0) pause_for(live, out.to, rounds);
  out.to = peer;
  out.tag = tag;
  out.count = uint32_t(data.size());
  for (size_t i = 0; i < data.size(); ++i) out.data[i] = data[i];
  out.state.store(2, std::memory_order_release);

  // 2. Receive: wait for the peer's outbox to hold its message to us with
  //    this tag, copy it, and empty the outbox.
  Outbox& in = h->outboxes[peer];
  rounds = 0;
  for (;;) {
    if (in.state.load(std::memory_order_acquire) == 2 && in.to == self && in.tag == tag) break;
    pause_for(live, peer, rounds);
  }
  uint32_t count = in.count <= kMaxRanks + 4 ? in.count : 0;
  std::vector<int32_t> got(in.data, in.data + count);
  in.state.store(0, std::memory_order_release);
  return got;
}

}  // namespace nodempi::transport
