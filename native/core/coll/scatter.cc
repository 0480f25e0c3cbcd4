#include <algorithm>
#include <cstring>

#include "core/coll/coll.h"
#include "core/coll/direct.h"
#include "core/coll/select.h"
#include "core/transport/cma.h"

namespace nodempi::coll {

// scatter_direct (large blocks, direct.h): every non-root reads its block
// from the root's send buffer.
// scatter_flat: the root's half is cut into size() lanes; for each chunk:
//   1. the root waits until its half is free, copies chunk k of every
//      peer's block into that peer's lane, posts;
//   2. the others post, wait for the root and copy their lane out.
// With NODEMPI_CHECK_SAME=0 a scatter of one phase returns on its root once
// its post is out, as a bcast's does and under the same rule (coll/bcast.cc):
// the others compare their signatures with the root's only, and the root
// runs at most one collective ahead (its next write waits for every peer's
// post of this one).
void scatter(Context& c, const void* send, void* recv, size_t bytes, uint32_t root) {
  Round round(c);
  const uint32_t n = c.size(), me = c.rank();
  auto* in = static_cast<const uint8_t*>(send);
  auto* out = static_cast<uint8_t*>(recv);
  // The root's own block goes last: a scatter that throws ERR_NOT_SAME
  // leaves the receive buffer as it was.
  auto own = [&] {
    if (me == root && recv && bytes) std::memcpy(out, in + size_t(me) * bytes, bytes);
  };
  if (n == 1) return own();
  const size_t lane = c.half_bytes() / n;
  Signature sig;
  sig.kind = SCATTER;
  sig.root = root;
  sig.bytes = bytes;
  sig.check_bytes = 1;
  sig.algo = uint16_t(Algo::FLAT);  // Direct::sign signs the direct algorithm
  Direct d(c, SCATTER, bytes);
  const bool ahead = d.root_alone(bytes, lane);
  if (d.large() && d.sign(sig, send, nullptr, "scatter")) {
    bool ok = me == root || transport::cma_read(d.pid(root), out, d.a(root) + size_t(me) * bytes, bytes);
    if (d.finish(ok, "scatter")) return own();
  }
  size_t off = 0;
  do {
    size_t len = std::min(lane, bytes - off);
    const bool first = off == 0 && !d.signed_();
    uint32_t s = first ? c.open(sig, "scatter") : c.next_phase();
    if (me == root) {
      if (!first) c.acquire_slot(s, "scatter");
      uint8_t* slot = c.slot(root, s);
      for (uint32_t r = 0; r < n && len; ++r) {
        if (r != root) c.publish(slot + size_t(r) * lane, in + size_t(r) * bytes + off, len);
      }
      c.post(s);
      if (first && !ahead) c.agree(s, "scatter");
    } else {
      c.post(s);
      if (first) {
        c.agree(s, "scatter", ahead ? root : Context::kEveryone);
      } else {
        c.wait(root, s, "scatter");
      }
      if (len) std::memcpy(out + off, c.slot(root, s) + size_t(me) * lane, len);
    }
    off += len;
  } while (off < bytes);
  own();
}

}  // namespace nodempi::coll
