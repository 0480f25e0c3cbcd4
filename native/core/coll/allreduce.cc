#include <cstring>

#include "core/coll/fold.h"

namespace nodempi::coll {

namespace {

// allreduce_flat (small): every rank copies its vector into its half and
// posts, then folds all of them into recv itself. Same order everywhere, so
// every rank computes bit-identical results without a second phase.
void allreduce_flat(Context& c, const uint8_t* in, uint8_t* out, size_t count, const Combiner& op) {
  const uint32_t n = c.size(), me = c.rank();
  uint32_t s = c.open(reduction_sig(ALLREDUCE, 0, op, count, Algo::FLAT), "allreduce");
  const size_t bytes = count * op.item;
  if (bytes) std::memcpy(c.data(me, s, bytes), in, bytes);
  c.post(s);
  c.agree(s, "allreduce");
  const uint8_t* src[transport::kMaxRanks];
  for (uint32_t r = 0; r < n; ++r) src[r] = c.data(r, s, bytes);
  fold(op, src, n, out, count);
}

// allreduce_sliced (large): reduce-scatter then allgather, per chunk of at
// most one half:
//   1. every rank copies its chunk into its half and posts;
//   2. every rank folds its slice of the chunk from all halves into its
//      other half and posts;
//   3. every rank copies all slices into recv.
// Every core reduces, and each byte crosses memory about twice.
void allreduce_sliced(Context& c, const uint8_t* in, uint8_t* out, size_t count, const Combiner& op) {
  const uint32_t n = c.size(), me = c.rank();
  const size_t item = op.item, per_round = c.half_bytes() / item;
  const uint8_t* src[transport::kMaxRanks];
  for (size_t first = 0; first < count; first += per_round) {
    size_t m = std::min(per_round, count - first);
    uint32_t s = first == 0 ? c.open(reduction_sig(ALLREDUCE, 0, op, count, Algo::SLICED), "allreduce") : c.next_phase();
    if (first) c.acquire_slot(s, "allreduce");
    std::memcpy(c.slot(me, s), in + first * item, m * item);
    c.post(s);
    if (first == 0) {
      c.agree(s, "allreduce");
    } else {
      c.wait_all(s, "allreduce");
    }

    Slice mine = slice_of(m, n, me);
    for (uint32_t r = 0; r < n; ++r) src[r] = c.slot(r, s) + mine.lo * item;
    uint32_t t = c.next_phase();  // peers have posted t-1 = s: the other half is free
    fold(op, src, n, c.slot(me, t), mine.len);
    c.post(t);
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t r = (me + i) % n;
      Slice sl = slice_of(m, n, r);
      if (r != me) c.wait(r, t, "allreduce");
      if (sl.len) std::memcpy(out + (first + sl.lo) * item, c.slot(r, t), sl.len * item);
    }
  }
}

}  // namespace

void allreduce(Context& c, const void* send, void* recv, size_t count, const Combiner& op) {
  Round round(c);
  auto* out = static_cast<uint8_t*>(recv);
  auto* in = send ? static_cast<const uint8_t*>(send) : out;
  if (c.size() == 1) {
    if (send && count) std::memcpy(out, in, count * op.item);
    return;
  }
  if (select(c, ALLREDUCE, count * op.item) == Algo::FLAT) {
    allreduce_flat(c, in, out, count, op);
  } else {
    allreduce_sliced(c, in, out, count, op);
  }
}

}  // namespace nodempi::coll
