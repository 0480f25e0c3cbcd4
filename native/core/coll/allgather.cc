#include <algorithm>
#include <cstring>

#include "core/coll/coll.h"

namespace nodempi::coll {

// allgather_flat: for each chunk of every block:
//   1. every rank waits until its half is free, copies its chunk in, posts;
//   2. every rank copies each peer's chunk into that peer's block.
// IN_PLACE reads this rank's block from recv.
void allgather(Context& c, const void* send, void* recv, size_t bytes) {
  const uint32_t n = c.size(), me = c.rank();
  auto* out = static_cast<uint8_t*>(recv);
  auto* in = send ? static_cast<const uint8_t*>(send) : out + size_t(me) * bytes;
  if (n == 1) {
    if (send && bytes) std::memcpy(out, in, bytes);
    return;
  }
  const size_t chunk = c.half_bytes();
  Signature sig;
  sig.kind = ALLGATHER;
  sig.bytes = bytes;
  sig.check_bytes = 1;
  size_t off = 0;
  do {
    size_t len = std::min(chunk, bytes - off);
    const bool first = off == 0;
    uint32_t s = first ? c.open(sig, "allgather") : c.next_phase();
    if (!first) c.acquire_slot(s, "allgather");
    if (len) std::memcpy(c.slot(me, s), in + off, len);
    c.post(s);
    if (first) c.agree(s, "allgather");
    for (uint32_t i = 1; i < n; ++i) {
      // Start with the next rank so the ranks do not all read one slot at once.
      uint32_t r = (me + i) % n;
      c.wait(r, s, "allgather");
      if (len) std::memcpy(out + size_t(r) * bytes + off, c.slot(r, s), len);
    }
    off += len;
  } while (off < bytes);
  if (send && bytes) std::memcpy(out + size_t(me) * bytes, in, bytes);
}

}  // namespace nodempi::coll
