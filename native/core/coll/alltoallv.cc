#include <algorithm>
#include <cstring>

#include "core/coll/coll.h"
#include "core/coll/direct.h"
#include "core/coll/select.h"
#include "core/coll/lanes.h"
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
// reads the rest of its blocks from the peers' send buffers itself (all of
// a block of the single-copy size, which sends nothing in the first phase:
// skips_first, direct.h). Not with IN_PLACE, where a peer may still be
// reading the block this rank would overwrite.
void alltoallv(Context& c, const void* send, const size_t* send_bytes, const size_t* send_displs, void* recv,
               const size_t* recv_bytes, const size_t* recv_displs, const Signature* as) {
  Round round(c);
  const char* what = as ? kind_name(as->kind) : "alltoallv";
  const uint32_t n = c.size(), me = c.rank();
  auto* out = static_cast<uint8_t*>(recv);
  const uint8_t* in = send ? static_cast<const uint8_t*>(send) : out;
  const size_t* sb = send ? send_bytes : recv_bytes;
  const size_t* sd = send ? send_displs : recv_displs;
  if (n == 1) {
    if (sb[0] > recv_bytes[0]) throw_truncated(what, me, sb[0], recv_bytes[0]);
    if (send && sb[0]) std::memmove(out + recv_displs[0], in + sd[0], sb[0]);
    return;
  }
  const Lanes lanes(c);
  // Not with IN_PLACE: every block must be in the slots before recv is
  // overwritten.
  const bool ready = send && direct_ready(c) && select(c, ALLTOALLV, 0) == Algo::DIRECT;
  // The sender decides for each block whether it skips the first phase.
  const uint64_t skip = skip_bytes(c, ready);
  auto chunks_of = [&](uint32_t r) { return lanes.chunks(sb[r] >= skip); };
  auto head_of = [&](uint32_t r) { return LaneHead{sb[r], reinterpret_cast<uint64_t>(in + sd[r])}; };
  uint64_t phases = 1;
  for (uint32_t r = 0; r < n; ++r) phases = std::max({phases, chunks_of(r).phases(sb[r]), lanes.chunks().phases(recv_bytes[r])});

  LaneHead incoming[transport::kMaxRanks];
  Chunks from[transport::kMaxRanks];
  size_t truncated_from = SIZE_MAX;
  Signature sig = as ? *as : Signature{};
  if (!as) sig.kind = ALLTOALLV;
  sig.direct = ready ? 1 : 0;
  c.hold_slot();
  for (uint64_t k = 0; k < phases; ++k) {
    uint32_t s = k == 0 ? c.open(sig, what) : c.next_phase();
    if (k) c.acquire_slot(s, what);
    uint8_t* mine = c.slot(me, s);
    if (k == 0) c.header(me, s)->phases = phases;
    for (uint32_t r = 0; r < n; ++r) {
      // Peers read their lane's head; this rank knows its own.
      if (k == 0 && r != me) lanes.put_head(mine, r, head_of(r));
      const Chunks ch = chunks_of(r);
      size_t len = ch.chunk(sb[r], k);
      // This rank's own lane is read back below: plain stores keep it in cache.
      if (len && r == me) std::memcpy(lanes.data(mine, r, k), in + sd[r] + ch.offset(k), len);
      else if (len) c.publish(lanes.data(mine, r, k), in + sd[r] + ch.offset(k), len);
    }
    c.post(s);
    if (k == 0) c.agree(s, what);
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t r = (me + i) % n;
      if (r != me) c.wait(r, s, what);
      const uint8_t* half = c.slot(r, s);
      if (k == 0) {
        if (r != me) phases = std::max<uint64_t>(phases, c.header(r, s)->phases);
        incoming[r] = r == me ? head_of(me) : lanes.head(half, me);
        from[r] = lanes.chunks(skips_first(c, c.header(r, s)->sig.direct & 1, incoming[r].bytes));
        if (incoming[r].bytes > recv_bytes[r] && truncated_from == SIZE_MAX) truncated_from = r;
      }
      size_t off = from[r].offset(k);
      size_t avail = from[r].chunk(incoming[r].bytes, k);
      size_t fits = recv_bytes[r] > off ? std::min(avail, recv_bytes[r] - off) : 0;
      if (fits) std::memcpy(out + recv_displs[r] + off, lanes.data(half, me, k), fits);
    }
    if (k == 0 && direct_rest(c, s, phases, what, [&] {
          for (uint32_t i = 0; i < n; ++i) {
            uint32_t r = (me + i) % n;
            size_t len = std::min<uint64_t>(incoming[r].bytes, recv_bytes[r]);
            if (len <= from[r].first) continue;
            // cma_read copies with memcpy within this process.
            const auto* at = reinterpret_cast<const uint8_t*>(incoming[r].addr) + from[r].first;
            if (!transport::cma_read(c.pid(r), out + recv_displs[r] + from[r].first, at, len - from[r].first)) {
              return false;
            }
          }
          return true;
        })) {
      break;
    }
  }
  if (truncated_from != SIZE_MAX) {
    throw_truncated(what, uint32_t(truncated_from), incoming[truncated_from].bytes, recv_bytes[truncated_from]);
  }
}

}  // namespace nodempi::coll
