#include <algorithm>
#include <cstring>

#include "core/coll/coll.h"
#include "core/coll/direct.h"
#include "core/coll/select.h"
#include "core/transport/cma.h"

namespace nodempi::coll {

// gather_direct (large blocks, direct.h): every non-root writes its block
// straight into the root's receive buffer, all of them at once.
// gather_flat: for each chunk of every block (one slot half per rank):
//   1. non-roots wait until their half is free, copy their chunk in, post;
//   2. the root posts, then copies each peer's chunk into its block.
// The root's own block is one local copy (none when IN_PLACE).
void gather(Context& c, const void* send, void* recv, size_t bytes, uint32_t root) {
  Round round(c);
  const uint32_t n = c.size(), me = c.rank();
  auto* in = static_cast<const uint8_t*>(send);
  auto* out = static_cast<uint8_t*>(recv);
  // The root's own block goes last: a gather that throws ERR_NOT_SAME
  // leaves the receive buffer as it was.
  auto own = [&] {
    if (me == root && send && bytes) std::memcpy(out + size_t(me) * bytes, in, bytes);
  };
  if (n == 1) return own();
  const size_t chunk = c.half_bytes();
  Signature sig;
  sig.kind = GATHER;
  sig.root = root;
  sig.bytes = bytes;
  sig.check_bytes = 1;
  sig.algo = uint16_t(Algo::FLAT);  // Direct::sign signs the direct algorithm
  Direct d(c, GATHER, bytes);
  // With the check off, a gather of one phase compares each rank with the
  // root alone, as a bcast's readers do: a non-root waits for nobody else.
  const uint32_t with = d.root_alone(bytes, chunk) ? root : Context::kEveryone;
  if (d.large() && d.sign(sig, nullptr, recv, "gather")) {
    bool ok = me == root || transport::cma_write(d.pid(root), in, d.b(root) + size_t(me) * bytes, bytes);
    if (d.finish(ok, "gather")) return own();
  }
  size_t off = 0;
  do {
    size_t len = std::min(chunk, bytes - off);
    const bool first = off == 0 && !d.signed_();
    uint32_t s = first ? c.open(sig, "gather") : c.next_phase();
    if (me != root) {
      if (!first) c.acquire_slot(s, "gather");
      if (len) c.publish(c.data(me, s, bytes), in + off, len);
      c.post(s);
      if (first) c.agree(s, "gather", with);
    } else {
      c.post(s);
      if (first) c.agree(s, "gather");
      for (uint32_t r = 0; r < n; ++r) {
        if (r == root) continue;
        c.wait(r, s, "gather");
        if (len) std::memcpy(out + size_t(r) * bytes + off, c.data(r, s, bytes), len);
      }
    }
    off += len;
  } while (off < bytes);
  own();
}

}  // namespace nodempi::coll
