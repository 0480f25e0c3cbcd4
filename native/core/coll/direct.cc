#include "core/coll/direct.h"

#include <algorithm>
#include <atomic>

#include "core/coll/select.h"
#include "core/transport/cma.h"

namespace nodempi::coll {

namespace {
std::atomic<uint64_t> completed{0};
}  // namespace

bool direct_all(const Context& c, uint32_t s) {
  for (uint32_t r = 0; r < c.size(); ++r) {
    if (!(c.header(r, s)->sig.direct & 1)) return false;
  }
  return true;
}

Direct::Direct(Context& c, uint32_t kind, size_t bytes) : c_(c), large_(select(c, kind, bytes) == Algo::DIRECT) {}

bool Direct::sign(const Signature& sig, const void* a, const void* b, const char* what, uint64_t bytes, bool slots) {
  Signature mine = sig;
  // Bit 1: this call took the separate signature phase (compared, so ranks
  // that disagree fail together); bit 0: this rank can copy directly; bit 2:
  // this rank asks for the slots this time.
  mine.direct = 2 | (direct_ready(c_) ? 1 : 0) | (slots ? 4 : 0);
  mine.algo = uint16_t(Algo::DIRECT);
  s_ = c_.open(mine, what);
  SlotHeader* h = c_.header(c_.rank(), s_);
  h->addr[0] = reinterpret_cast<uint64_t>(a);
  h->addr[1] = reinterpret_cast<uint64_t>(b);
  h->bytes = bytes;
  c_.post(s_);
  c_.agree(s_, what);
  for (uint32_t r = 0; r < c_.size(); ++r) {
    if (c_.header(r, s_)->sig.direct & 4) return false;
  }
  if (direct_all(c_, s_)) return true;
  c_.set_direct_off();
  return false;
}

bool direct_finish(Context& c, bool ok, const char* what) {
  // Every peer has posted the phase before (the caller waited for it), so
  // the other half is free.
  uint32_t s = c.next_phase();
  c.header(c.rank(), s)->addr[0] = ok ? 1 : 0;
  c.post(s);
  c.wait_all(s, what);
  for (uint32_t r = 0; r < c.size(); ++r) {
    if (c.header(r, s)->addr[0] != 1) {
      c.set_direct_off();
      return false;
    }
  }
  completed.fetch_add(1, std::memory_order_relaxed);
  return true;
}

uint64_t single_copies() { return completed.load(std::memory_order_relaxed); }

}  // namespace nodempi::coll
