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
  for (uint64_t l; (l = out.label.load(std::memory_order_acquire)) != 0;) pause_for(live, uint32_t(l) >> 1, rounds);
  out.count = uint32_t(data.size());
  for (size_t i = 0; i < data.size(); ++i) out.data[i] = data[i];
  out.label.store(outbox_label(peer, tag), std::memory_order_release);

  // 2. Receive: wait for the peer's outbox to hold its message to us with
  //    this tag, copy it, and empty the outbox.
  Outbox& in = h->outboxes[peer];
  const uint64_t mine = outbox_label(self, tag);
  rounds = 0;
  while (in.label.load(std::memory_order_acquire) != mine) pause_for(live, peer, rounds);
  uint32_t count = in.count <= kMaxRanks + 4 ? in.count : 0;
  std::vector<int32_t> got(in.data, in.data + count);
  in.label.store(0, std::memory_order_release);
  return got;
}

}  // namespace nodempi::transport
