#include <algorithm>
#include <cstring>

#include "core/coll/coll.h"
#include "core/coll/direct.h"
#include "core/transport/cma.h"

namespace nodempi::coll {

// scatterv_flat: the root's half is cut into size() lanes. Only the root
// knows every count, so its first post carries the phase count in the slot
// header, and each lane of the first phase starts with its block's size and
// address (for scatterv_direct):
//   1. the root waits until its half is free, writes the phase count and,
//      for each peer, chunk k of its block into that peer's lane; posts;
//   2. the others post, wait for the root, learn the phase count and the
//      size of their block in the first phase, and copy their lane out
//      (never more than their receive buffer holds).
// scatterv_direct (direct.h): when more than one phase would follow, every
// non-root reads the rest of its block from the root's send buffer itself.
void scatterv(Context& c, const void* send, const size_t* send_bytes, const size_t* send_displs, void* recv,
              size_t recv_bytes, uint32_t root) {
  const uint32_t n = c.size(), me = c.rank();
  auto* in = static_cast<const uint8_t*>(send);
  auto* out = static_cast<uint8_t*>(recv);
  if (me == root && recv && send_bytes[me]) {
    if (send_bytes[me] > recv_bytes) throw_truncated("scatterv", me, send_bytes[me], recv_bytes);
    std::memcpy(out, in + send_displs[me], send_bytes[me]);
  }
  if (n == 1) return;
  // The first phase's lanes start with the block's byte count and address.
  const size_t lane = c.half_bytes() / n / 8 * 8;
  const size_t first = lane - 2 * sizeof(uint64_t);

  uint64_t phases = 1;
  if (me == root) {
    for (uint32_t r = 0; r < n; ++r) {
      if (r != root && send_bytes[r] > first) phases = std::max<uint64_t>(phases, 1 + (send_bytes[r] - first + lane - 1) / lane);
    }
  }
  uint64_t incoming = 0, block = 0;
  Signature sig;
  sig.kind = SCATTERV;
  sig.root = root;
  sig.direct = direct_ready(c) ? 1 : 0;
  for (uint64_t k = 0; k < phases; ++k) {
    uint32_t s = k == 0 ? c.open(sig, "scatterv") : c.next_phase();
    // Bytes of a block before phase k, and room for it in phase k.
    size_t off = k == 0 ? 0 : first + (k - 1) * lane;
    size_t room_here = k == 0 ? first : lane;
    size_t head = k == 0 ? 2 * sizeof(uint64_t) : 0;
    if (k == 0) c.header(me, s)->phases = phases;
    if (me == root) {
      if (k) c.acquire_slot(s, "scatterv");
      uint8_t* slot = c.slot(root, s);
      for (uint32_t r = 0; r < n; ++r) {
        if (r == root) continue;
        uint8_t* dst = slot + size_t(r) * lane;
        if (k == 0) {
          uint64_t b[2] = {send_bytes[r], reinterpret_cast<uint64_t>(in + send_displs[r])};
          std::memcpy(dst, b, sizeof b);
        }
        size_t len = send_bytes[r] > off ? std::min(room_here, send_bytes[r] - off) : 0;
        if (len) std::memcpy(dst + head, in + send_displs[r] + off, len);
      }
      c.post(s);
      if (k == 0) c.agree(s, "scatterv");
    } else {
      c.post(s);
      if (k == 0) {
        c.agree(s, "scatterv");
        for (uint32_t r = 0; r < n; ++r) phases = std::max<uint64_t>(phases, c.header(r, s)->phases);
      }
      // A rank that receives nothing (kNoRoot) only keeps in step.
      if (root != kNoRoot) {
        if (k) c.wait(root, s, "scatterv");
        const uint8_t* src = c.slot(root, s) + size_t(me) * lane;
        if (k == 0) {
          std::memcpy(&incoming, src, sizeof incoming);
          std::memcpy(&block, src + sizeof incoming, sizeof block);
        }
        size_t avail = incoming > off ? std::min<uint64_t>(room_here, incoming - off) : 0;
        size_t fits = recv_bytes > off ? std::min(avail, recv_bytes - off) : 0;
        if (fits) std::memcpy(out + off, src + head, fits);
      }
    }
    if (k == 0 && direct_rest(c, s, phases, "scatterv", [&] {
          size_t len = std::min<uint64_t>(incoming, recv_bytes);
          if (me == root || root == kNoRoot || len <= first) return true;
          return transport::cma_read(c.pid(root), out + first, reinterpret_cast<const uint8_t*>(block) + first, len - first);
        })) {
      break;
    }
  }
  if (me != root && incoming > recv_bytes) throw_truncated("scatterv", root, incoming, recv_bytes);
}

}  // namespace nodempi::coll
