#include <algorithm>
#include <cstring>

#include "core/coll/coll.h"
#include "core/coll/direct.h"
#include "core/coll/select.h"
#include "core/coll/lanes.h"
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
// non-root reads the rest of its block from the root's send buffer itself;
// a block of the single-copy size sends nothing in the first phase
// (skips_first, direct.h).
void scatterv(Context& c, const void* send, const size_t* send_bytes, const size_t* send_displs, void* recv,
              size_t recv_bytes, uint32_t root) {
  Round round(c);
  const uint32_t n = c.size(), me = c.rank();
  auto* in = static_cast<const uint8_t*>(send);
  auto* out = static_cast<uint8_t*>(recv);
  if (me == root && recv && send_bytes[me] > recv_bytes) throw_truncated("scatterv", me, send_bytes[me], recv_bytes);
  // The root's own block goes last: a scatterv that throws ERR_NOT_SAME
  // leaves the receive buffer as it was.
  auto own = [&] {
    if (me == root && recv && send_bytes[me]) std::memcpy(out, in + send_displs[me], send_bytes[me]);
  };
  if (n == 1) return own();
  const Lanes lanes(c);
  const bool ready = direct_ready(c) && select(c, SCATTERV, 0) == Algo::DIRECT;
  // The root decides for each block whether it skips the first phase.
  const uint64_t skip = skip_bytes(c, ready);
  auto chunks_of = [&](uint32_t r) { return lanes.chunks(send_bytes[r] >= skip); };
  uint64_t phases = 1;
  if (me == root) {
    for (uint32_t r = 0; r < n; ++r) {
      if (r != root) phases = std::max(phases, chunks_of(r).phases(send_bytes[r]));
    }
  }
  LaneHead incoming{0, 0};
  Chunks mine = lanes.chunks();  // how this rank's block comes, known after the first phase
  Signature sig;
  sig.kind = SCATTERV;
  sig.root = root;
  sig.direct = ready ? 1 : 0;
  for (uint64_t k = 0; k < phases; ++k) {
    uint32_t s = k == 0 ? c.open(sig, "scatterv") : c.next_phase();
    if (k == 0) c.header(me, s)->phases = phases;
    if (me == root) {
      if (k) c.acquire_slot(s, "scatterv");
      uint8_t* half = c.slot(root, s);
      for (uint32_t r = 0; r < n; ++r) {
        if (r == root) continue;
        if (k == 0) lanes.put_head(half, r, {send_bytes[r], reinterpret_cast<uint64_t>(in + send_displs[r])});
        const Chunks ch = chunks_of(r);
        size_t len = ch.chunk(send_bytes[r], k);
        if (len) c.publish(lanes.data(half, r, k), in + send_displs[r] + ch.offset(k), len);
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
        const uint8_t* half = c.slot(root, s);
        if (k == 0) {
          incoming = lanes.head(half, me);
          mine = lanes.chunks(skips_first(c, c.header(root, s)->sig.direct & 1, incoming.bytes));
        }
        size_t off = mine.offset(k);
        size_t avail = mine.chunk(incoming.bytes, k);
        size_t fits = recv_bytes > off ? std::min(avail, recv_bytes - off) : 0;
        if (fits) std::memcpy(out + off, lanes.data(half, me, k), fits);
      }
    }
    if (k == 0 && direct_rest(c, s, phases, "scatterv", [&] {
          size_t len = std::min<uint64_t>(incoming.bytes, recv_bytes);
          if (me == root || root == kNoRoot || len <= mine.first) return true;
          const auto* from = reinterpret_cast<const uint8_t*>(incoming.addr) + mine.first;
          return transport::cma_read(c.pid(root), out + mine.first, from, len - mine.first);
        })) {
      break;
    }
  }
  own();
  if (me != root && incoming.bytes > recv_bytes) throw_truncated("scatterv", root, incoming.bytes, recv_bytes);
}

}  // namespace nodempi::coll
