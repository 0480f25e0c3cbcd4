#include <algorithm>
#include <cstring>

#include "core/coll/coll.h"
#include "core/coll/direct.h"
#include "core/transport/cma.h"

namespace nodempi::coll {

// allgather_direct (large blocks, direct.h): every rank reads each peer's
// block from where that peer keeps it (its send buffer, or its own block of
// its receive buffer when IN_PLACE, which it never overwrites).
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
  Direct d(c, bytes);
  if (d.large() && d.sign(sig, in, nullptr, "allgather")) {
    bool ok = true;
    for (uint32_t i = 1; i < n && ok; ++i) {
      uint32_t r = (me + i) % n;
      ok = transport::cma_read(d.pid(r), out + size_t(r) * bytes, d.a(r), bytes);
    }
    if (d.finish(ok, "allgather")) {
      if (send) std::memcpy(out + size_t(me) * bytes, in, bytes);
      return;
    }
  }
  size_t off = 0;
  do {
    size_t len = std::min(chunk, bytes - off);
    const bool first = off == 0 && !d.signed_();
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
