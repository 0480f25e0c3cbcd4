#include <algorithm>
#include <cstring>

#include "core/coll/fold.h"

namespace nodempi::coll {

// scan_flat / exscan_flat: per chunk of at most one half,
//   1. every rank but the last waits until its half is free, copies its
//      chunk in, posts; the last only posts (no rank folds its chunks);
//   2. rank r folds the chunks of ranks 0..r (0..r-1 for exscan), in rank
//      order, into its receive buffer, its own straight from its buffer.
// Rank 0's receive buffer is left untouched by exscan, as MPI says.
void scan(Context& c, const void* send, void* recv, size_t count, const Combiner& op, bool exclusive) {
  const uint32_t n = c.size(), me = c.rank();
  const size_t item = op.item;
  auto* out = static_cast<uint8_t*>(recv);
  const uint8_t* in = send ? static_cast<const uint8_t*>(send) : out;
  if (n == 1) {
    if (!exclusive && send && count) std::memcpy(out, in, count * item);
    return;
  }
  const uint32_t upto = exclusive ? me : me + 1;  // how many ranks fold in
  const size_t per_round = std::max<size_t>(1, c.half_bytes() / item);
  const uint8_t* src[transport::kMaxRanks];
  size_t done = 0;
  do {
    size_t m = std::min(per_round, count - done);
    const char* what = exclusive ? "exscan" : "scan";
    uint32_t s = done == 0 ? c.open(reduction_sig(exclusive ? EXSCAN : SCAN, 0, op, count), what) : c.next_phase();
    if (done) c.acquire_slot(s, what);
    if (m && me + 1 < n) std::memcpy(c.slot(me, s), in + done * item, m * item);
    c.post(s);
    if (done == 0) c.agree(s, what);
    for (uint32_t r = 0; r < upto; ++r) {
      if (r != me) c.wait(r, s, what);
      // IN_PLACE makes this source the output itself, which the kernels
      // and user ops take (it is the inout operand of fold's first step).
      src[r] = r == me ? in + done * item : c.slot(r, s);
    }
    if (upto > 0) fold(op, src, upto, out + done * item, m);
    done += m;
  } while (done < count);
}

}  // namespace nodempi::coll
