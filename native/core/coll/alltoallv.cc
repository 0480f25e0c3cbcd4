#include <algorithm>
#include <cstring>

#include "core/coll/coll.h"
#include "core/coll/direct.h"
#include "core/transport/cma.h"

namespace nodempi::coll {

// alltoallv_flat: each rank's half is cut into size() lanes. A rank knows
// only its own counts, so the first phase's header carries the phases this
// rank needs; everyone reads every peer in every phase anyway, and all run
// the largest. Per phase:
//   1. wait until the half is free, copy chunk k of the block for rank r
//      into lane r (state the block's byte count in the first phase), post;
//   2. copy lane `me` of each peer into that peer's receive block, never
//      more than the block holds.
// IN_PLACE (null send) takes the blocks from recv with the receive counts;
// each chunk is in the slot before recv is overwritten.
// alltoallv_direct (direct.h): the first phase's lanes also carry each
// block's address, and when more than one phase would follow every rank
// reads the rest of its blocks from the peers' send buffers itself. Not
// with IN_PLACE, where a peer may still be reading the block this rank
// would overwrite.
void alltoallv(Context& c, const void* send, const size_t* send_bytes, const size_t* send_displs, void* recv,
               const size_t* recv_bytes, const size_t* recv_displs) {
  const uint32_t n = c.size(), me = c.rank();
  auto* out = static_cast<uint8_t*>(recv);
  const uint8_t* in = send ? static_cast<const uint8_t*>(send) : out;
  const size_t* sb = send ? send_bytes : recv_bytes;
  const size_t* sd = send ? send_displs : recv_displs;
  if (n == 1) {
    if (sb[0] > recv_bytes[0]) throw_truncated("alltoallv", me, sb[0], recv_bytes[0]);
    if (send && sb[0]) std::memmove(out + recv_displs[0], in + sd[0], sb[0]);
    return;
  }
  // The first phase's lanes start with the block's byte count and address.
  const size_t lane = c.half_bytes() / n / 8 * 8;
  const size_t head0 = 2 * sizeof(uint64_t);
  const size_t first = lane - head0;
  auto phases_for = [&](size_t bytes) -> uint64_t { return bytes <= first ? 1 : 1 + (bytes - first + lane - 1) / lane; };
  uint64_t phases = 1;
  for (uint32_t r = 0; r < n; ++r) phases = std::max({phases, phases_for(sb[r]), phases_for(recv_bytes[r])});

  uint64_t incoming[transport::kMaxRanks], where[transport::kMaxRanks];
  size_t truncated_from = SIZE_MAX;
  Signature sig;
  sig.kind = ALLTOALLV;
  sig.direct = send && direct_ready(c) ? 1 : 0;
  for (uint64_t k = 0; k < phases; ++k) {
    uint32_t s = k == 0 ? c.open(sig, "alltoallv") : c.next_phase();
    size_t off = k == 0 ? 0 : first + (k - 1) * lane;
    size_t room_here = k == 0 ? first : lane;
    size_t head = k == 0 ? head0 : 0;
    if (k) c.acquire_slot(s, "alltoallv");
    uint8_t* mine = c.slot(me, s);
    if (k == 0) c.header(me, s)->phases = phases;
    for (uint32_t r = 0; r < n; ++r) {
      uint8_t* dst = mine + size_t(r) * lane;
      if (k == 0) {
        uint64_t b[2] = {sb[r], reinterpret_cast<uint64_t>(in + sd[r])};
        std::memcpy(dst, b, sizeof b);
      }
      size_t len = sb[r] > off ? std::min(room_here, sb[r] - off) : 0;
      if (len) std::memcpy(dst + head, in + sd[r] + off, len);
    }
    c.post(s);
    if (k == 0) c.agree(s, "alltoallv");
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t r = (me + i) % n;
      if (r != me) c.wait(r, s, "alltoallv");
      const uint8_t* src = c.slot(r, s) + size_t(me) * lane;
      if (k == 0) {
        if (r != me) phases = std::max<uint64_t>(phases, c.header(r, s)->phases);
        std::memcpy(&incoming[r], src, sizeof(uint64_t));
        std::memcpy(&where[r], src + sizeof(uint64_t), sizeof(uint64_t));
        if (incoming[r] > recv_bytes[r] && truncated_from == SIZE_MAX) truncated_from = r;
      }
      size_t avail = incoming[r] > off ? std::min<uint64_t>(room_here, incoming[r] - off) : 0;
      size_t fits = recv_bytes[r] > off ? std::min(avail, recv_bytes[r] - off) : 0;
      if (fits) std::memcpy(out + recv_displs[r] + off, src + head, fits);
    }
    if (k == 0 && direct_rest(c, s, phases, "alltoallv", [&] {
          for (uint32_t i = 0; i < n; ++i) {
            uint32_t r = (me + i) % n;
            size_t len = std::min<uint64_t>(incoming[r], recv_bytes[r]);
            if (len <= first) continue;
            // cma_read copies with memcpy within this process.
            const auto* from = reinterpret_cast<const uint8_t*>(where[r]) + first;
            if (!transport::cma_read(c.pid(r), out + recv_displs[r] + first, from, len - first)) return false;
          }
          return true;
        })) {
      break;
    }
  }
  if (truncated_from != SIZE_MAX) {
    throw_truncated("alltoallv", uint32_t(truncated_from), incoming[truncated_from], recv_bytes[truncated_from]);
  }
}

}  // namespace nodempi::coll
