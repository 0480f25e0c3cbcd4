#include <algorithm>
#include <cstring>

#include "core/coll/coll.h"
#include "core/coll/direct.h"
#include "core/coll/select.h"
#include "core/transport/cma.h"

namespace nodempi::coll {

// alltoall_direct (large blocks, direct.h): every rank reads block `me` of
// each peer's send buffer. Not IN_PLACE: there a peer's blocks are being
// overwritten while others read them; a rank in place publishes no send
// buffer, which sends every rank to the slots.
// alltoall_flat: every rank's half is cut into size() lanes; for each chunk:
//   1. every rank waits until its half is free, copies chunk k of the block
//      for rank r into lane r, posts;
//   2. every rank copies lane `me` of each peer into that peer's block.
// With IN_PLACE the blocks come from recv; each chunk is in the slot before
// recv is overwritten, so the exchange is safe in place.
void alltoall(Context& c, const void* send, void* recv, size_t bytes) {
  Round round(c);
  const uint32_t n = c.size(), me = c.rank();
  auto* out = static_cast<uint8_t*>(recv);
  auto* in = send ? static_cast<const uint8_t*>(send) : out;
  if (n == 1) {
    if (send && bytes) std::memcpy(out, in, bytes);
    return;
  }
  const size_t lane = c.half_bytes() / n;
  Signature sig;
  sig.kind = ALLTOALL;
  sig.bytes = bytes;
  sig.check_bytes = 1;
  sig.algo = uint16_t(Algo::FLAT);  // Direct::sign signs the direct algorithm
  Direct d(c, ALLTOALL, bytes);
  if (d.large() && d.sign(sig, send, nullptr, "alltoall")) {
    bool in_place_somewhere = false;
    for (uint32_t r = 0; r < n; ++r) in_place_somewhere = in_place_somewhere || d.a(r) == nullptr;
    if (!in_place_somewhere) {
      bool ok = true;
      for (uint32_t i = 1; i < n && ok; ++i) {
        uint32_t r = (me + i) % n;
        ok = transport::cma_read(d.pid(r), out + size_t(r) * bytes, d.a(r) + size_t(me) * bytes, bytes);
      }
      if (d.finish(ok, "alltoall")) {
        std::memcpy(out + size_t(me) * bytes, in + size_t(me) * bytes, bytes);
        return;
      }
    }
  }
  size_t off = 0;
  c.hold_slot();
  do {
    size_t len = std::min(lane, bytes - off);
    const bool first = off == 0 && !d.signed_();
    uint32_t s = first ? c.open(sig, "alltoall") : c.next_phase();
    if (!first) c.acquire_slot(s, "alltoall");
    uint8_t* mine = c.slot(me, s);
    // This rank's own lane is read back right below: plain stores keep it
    // in cache.
    for (uint32_t r = 0; r < n && len; ++r) {
      if (r == me) std::memcpy(mine + size_t(r) * lane, in + size_t(r) * bytes + off, len);
      else c.publish(mine + size_t(r) * lane, in + size_t(r) * bytes + off, len);
    }
    c.post(s);
    if (first) c.agree(s, "alltoall");
    if (len) std::memcpy(out + size_t(me) * bytes + off, mine + size_t(me) * lane, len);
    for (uint32_t i = 1; i < n; ++i) {
      uint32_t r = (me + i) % n;
      c.wait(r, s, "alltoall");
      if (len) std::memcpy(out + size_t(r) * bytes + off, c.slot(r, s) + size_t(me) * lane, len);
    }
    off += len;
  } while (off < bytes);
}

}  // namespace nodempi::coll
