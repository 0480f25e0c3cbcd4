#include <cstring>

#include "core/coll/fold.h"

namespace nodempi::coll {

namespace {

// reduce and allreduce are one algorithm each way; they differ only in who
// keeps the result: the root (`keeper`), or every rank (Context::kEveryone,
// allreduce).

// flat (small): every rank copies its vector into its half and posts, then
// each rank that keeps the result folds all of them into recv itself. Same
// order everywhere, so every rank computes bit-identical results without a
// second phase.
void reduce_flat(Context& c, const Signature& sig, const uint8_t* in, uint8_t* out, size_t count,
                 const Combiner& op, uint32_t keeper) {
  const uint32_t n = c.size(), me = c.rank();
  const char* what = kind_name(sig.kind);
  const size_t bytes = count * op.item;
  uint32_t s = c.open(sig, what);
  const bool streamed = c.publish(c.data(me, s, bytes), in, bytes);
  c.post(s);
  c.agree(s, what);
  if (keeper != Context::kEveryone && keeper != me) return;
  const uint8_t* src[transport::kMaxRanks];
  for (uint32_t r = 0; r < n; ++r) src[r] = c.data(r, s, bytes);
  // A block that went past the cache is folded from where it came, unless
  // that is the output (fold: only the last source may alias it).
  if (streamed && in != out) src[me] = in;
  fold(op, src, n, out, count);
}

// sliced (large): a reduce-scatter, then the slices go to whoever keeps the
// result; per chunk of at most one half:
//   1. every rank copies its chunk into its half and posts;
//   2. every rank folds its slice of the chunk from all halves into its
//      other half and posts;
//   3. each rank that keeps the result copies every slice into recv.
// Every core reduces, and each byte crosses memory about twice.
void reduce_sliced(Context& c, const Signature& sig, const uint8_t* in, uint8_t* out, size_t count,
                   const Combiner& op, uint32_t keeper) {
  const uint32_t n = c.size(), me = c.rank();
  const char* what = kind_name(sig.kind);
  const size_t item = op.item, per_round = c.half_bytes() / item;
  const uint8_t* src[transport::kMaxRanks];
  for (size_t first = 0; first < count; first += per_round) {
    size_t m = std::min(per_round, count - first);
    uint32_t s = first == 0 ? c.open(sig, what) : c.next_phase();
    if (first) c.acquire_slot(s, what);
    const bool streamed = c.publish(c.slot(me, s), in + first * item, m * item);
    c.post(s);
    if (first == 0) {
      c.agree(s, what);
    } else {
      c.wait_all(s, what);
    }

    Slice mine = slice_of(m, n, me);
    for (uint32_t r = 0; r < n; ++r) src[r] = c.slot(r, s) + mine.lo * item;
    // This rank's chunk went past the cache: its slice is folded from where
    // it came (which even IN_PLACE is not written until the chunk's end).
    if (streamed) src[me] = in + (first + mine.lo) * item;
    uint32_t t = c.next_phase();  // peers have posted t-1 = s: the other half is free
    fold(op, src, n, c.slot(me, t), mine.len);
    c.post(t);
    if (keeper != Context::kEveryone && keeper != me) continue;
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t r = (me + i) % n;
      Slice sl = slice_of(m, n, r);
      if (r != me) c.wait(r, t, what);
      if (sl.len) std::memcpy(out + (first + sl.lo) * item, c.slot(r, t), sl.len * item);
    }
  }
}

void reduction(Context& c, const void* send, void* recv, size_t count, const Combiner& op, uint32_t keeper) {
  Round round(c);
  auto* out = static_cast<uint8_t*>(recv);
  auto* in = send ? static_cast<const uint8_t*>(send) : out;
  if (c.size() == 1) {
    if (send && count) std::memcpy(out, in, count * op.item);
    return;
  }
  const bool all = keeper == Context::kEveryone;
  const uint32_t kind = all ? ALLREDUCE : REDUCE, root = all ? 0 : keeper;
  if (select(c, kind, count * op.item) == Algo::FLAT) {
    reduce_flat(c, reduction_sig(kind, root, op, count, Algo::FLAT), in, out, count, op, keeper);
  } else {
    reduce_sliced(c, reduction_sig(kind, root, op, count, Algo::SLICED), in, out, count, op, keeper);
  }
}

}  // namespace

// `root` is a member (the bindings check it), never Context::kEveryone.
void reduce(Context& c, const void* send, void* recv, size_t count, const Combiner& op, uint32_t root) {
  reduction(c, send, recv, count, op, root);
}

void allreduce(Context& c, const void* send, void* recv, size_t count, const Combiner& op) {
  reduction(c, send, recv, count, op, Context::kEveryone);
}

}  // namespace nodempi::coll
