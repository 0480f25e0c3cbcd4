// Combining the contributions of a communicator's ranks in a fixed order, so
// every rank that folds the same items gets bit-identical results.
#pragma once
#include <algorithm>
#include <cstring>

#include "core/coll/coll.h"
#include "core/coll/select.h"

namespace nodempi::coll {

// out = src[0] op src[1] op ... op src[n-1] over `count` items, evaluated
// right to left (x0 op (x1 op (... op x_{n-1}))): each step is MPI's
// inoutvec = invec op inoutvec with the lower rank as invec, which is also
// what a non-commutative user op needs. The items are processed in blocks
// that stay in L1 while all n-1 steps run over them. `out` must not alias
// any source but the last, which it may be exactly (the inout operand of
// the first step).
inline void fold(const Combiner& op, const uint8_t* const* src, uint32_t n, uint8_t* out, size_t count) {
  const size_t item = op.item;
  if (n == 1) {
    if (count && out != src[0]) std::memcpy(out, src[0], count * item);
    return;
  }
  const size_t block = op.block_items();
  for (size_t i = 0; i < count; i += block) {
    size_t m = std::min(block, count - i), at = i * item;
    op.apply(src[n - 2] + at, src[n - 1] + at, out + at, m);
    for (uint32_t r = n - 2; r-- > 0;) op.apply(src[r] + at, out + at, out + at, m);
  }
}

// The items [lo, lo+len) of a chunk of `count` items that rank r reduces
// when the ranks share the work of one chunk.
struct Slice {
  size_t lo, len;
};
inline Slice slice_of(size_t count, uint32_t n, uint32_t r) {
  size_t base = count / n, rem = count % n;
  return {r * base + std::min<size_t>(r, rem), base + (r < rem ? 1 : 0)};
}

// The signature of a reduction: everyone must pass the same op, basic type
// and count, and (given a choice) takes the same algorithm.
inline Signature reduction_sig(uint32_t kind, uint32_t root, const Combiner& op, size_t count,
                               Algo algo = Algo::AUTO) {
  Signature sig;
  sig.kind = kind;
  sig.root = root;
  sig.op = op.op_id;
  sig.type = op.type_id;
  sig.bytes = count * op.item;
  sig.check_bytes = 1;
  sig.algo = uint16_t(algo);
  return sig;
}

}  // namespace nodempi::coll
