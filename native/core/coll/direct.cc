#include "core/coll/direct.h"

#include "core/transport/cma.h"

namespace nodempi::coll {

Direct::Direct(Context& c, size_t bytes)
    : c_(c),
      large_(c.size() > 1 && c.segment() && transport::cma_mode() != transport::CmaMode::OFF &&
             bytes >= transport::cma_min_bytes()) {}

bool Direct::sign(const Signature& sig, const void* a, const void* b, const char* what) {
  Signature mine = sig;
  // Bit 1: this call took the separate signature phase (compared, so ranks
  // that disagree fail together); bit 0: this rank can copy directly.
  const bool can = transport::cma_mode() == transport::CmaMode::ON && !c_.direct_off();
  mine.direct = 2 | (can ? 1 : 0);
  s_ = c_.open(mine, what);
  SlotHeader* h = c_.header(c_.rank(), s_);
  h->addr[0] = reinterpret_cast<uint64_t>(a);
  h->addr[1] = reinterpret_cast<uint64_t>(b);
  c_.post(s_);
  c_.agree(s_, what);
  for (uint32_t r = 0; r < c_.size(); ++r) {
    if (!(c_.header(r, s_)->sig.direct & 1)) {
      c_.set_direct_off();
      return false;
    }
  }
  return true;
}

bool Direct::finish(bool ok, const char* what) {
  // Every peer has posted s_ (agree waited for it), so the other half is free.
  uint32_t s = c_.next_phase();
  c_.header(c_.rank(), s)->addr[0] = ok ? 1 : 0;
  c_.post(s);
  c_.wait_all(s, what);
  for (uint32_t r = 0; r < c_.size(); ++r) {
    if (c_.header(r, s)->addr[0] != 1) {
      c_.set_direct_off();
      return false;
    }
  }
  return true;
}

}  // namespace nodempi::coll
