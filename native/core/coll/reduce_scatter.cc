#include <algorithm>
#include <cstring>

#include "core/coll/fold.h"

namespace nodempi::coll {

// reduce_scatter_flat: each rank's half is cut into size() lanes, lane r
// carrying a chunk of the block that rank r receives. Per phase:
//   1. every rank waits until its half is free, copies chunk k of each
//      block into that block's lane, posts;
//   2. every rank folds lane `me` of all halves, in rank order, straight
//      into its receive buffer.
// One phase per chunk: no rank needs anything but its own block. Every rank
// knows every count (MPI requires the same recvcounts everywhere).
// IN_PLACE reads the blocks from recv; the result overwrites the first
// block's place only after that chunk is in the slot.
void reduce_scatter(Context& c, const void* send, void* recv, const size_t* counts, const Combiner& op) {
  Round round(c);
  const uint32_t n = c.size(), me = c.rank();
  const size_t item = op.item;
  auto* out = static_cast<uint8_t*>(recv);
  const uint8_t* in = send ? static_cast<const uint8_t*>(send) : out;
  if (n == 1) {
    if (send && counts[0]) std::memcpy(out, in, counts[0] * item);
    return;
  }
  size_t first[transport::kMaxRanks];  // item offset of each block in send
  size_t at = 0, most = 0;
  for (uint32_t r = 0; r < n; ++r) {
    first[r] = at;
    at += counts[r];
    most = std::max(most, counts[r]);
  }
  const size_t lane_items = std::max<size_t>(1, c.half_bytes() / n / item);
  const size_t lane = lane_items * item;
  const uint8_t* src[transport::kMaxRanks];
  size_t done = 0;
  size_t total = 0;
  for (uint32_t r = 0; r < n; ++r) total += counts[r];
  c.hold_slot();
  do {
    uint32_t s = done == 0 ? c.open(reduction_sig(REDUCE_SCATTER, 0, op, total), "reduceScatter") : c.next_phase();
    if (done) c.acquire_slot(s, "reduceScatter");
    uint8_t* mine = c.slot(me, s);
    for (uint32_t r = 0; r < n; ++r) {
      size_t m = counts[r] > done ? std::min(lane_items, counts[r] - done) : 0;
      if (m) std::memcpy(mine + size_t(r) * lane, in + (first[r] + done) * item, m * item);
    }
    c.post(s);
    if (done == 0) {
      c.agree(s, "reduceScatter");
    } else {
      c.wait_all(s, "reduceScatter");
    }
    size_t m = counts[me] > done ? std::min(lane_items, counts[me] - done) : 0;
    for (uint32_t r = 0; r < n; ++r) src[r] = c.slot(r, s) + size_t(me) * lane;
    fold(op, src, n, out + done * item, m);
    done += lane_items;
  } while (done < most);
}

}  // namespace nodempi::coll
