#include <algorithm>
#include <cstring>
#include <vector>

#include "core/coll/direct.h"
#include "core/coll/fold.h"
#include "core/transport/cma.h"

namespace nodempi::coll {

namespace {

// scan_direct / exscan_direct (large messages up to a size, select.cc;
// direct.h): rank r reads the blocks of ranks 0..upto-1 straight from their
// send buffers, piece by piece into scratch that stays in L2 while the
// piece is folded; its own comes from its buffer. exscan's rank 1 reads rank 0's block, its whole
// result, straight into its receive buffer.
bool fold_direct(const Direct& d, uint32_t me, const uint8_t* in, uint8_t* out, size_t count, const Combiner& op,
                 uint32_t upto) {
  const size_t item = op.item;
  if (upto == 0) return true;
  if (upto == 1 && me != 0) return transport::cma_read(d.pid(0), out, d.a(0), count * item);
  // 64 KiB a source, less with more than 16 of them: the scratch is kept
  // between calls (each thread that runs collectives has its own; fresh
  // pages at every call would cost more than the copies) and stays near 1 MiB.
  const size_t budget = std::min<size_t>(size_t(64) << 10, (size_t(1) << 20) / upto);
  const size_t piece = std::min(count, std::max<size_t>(1, budget / item));
  thread_local std::vector<uint8_t> scratch;
  if (scratch.size() < size_t(upto) * piece * item) scratch.resize(size_t(upto) * piece * item);
  const uint8_t* src[transport::kMaxRanks];
  for (size_t done = 0; done < count;) {
    size_t m = std::min(piece, count - done), at = done * item;
    for (uint32_t r = 0; r < upto; ++r) {
      if (r == me) {
        src[r] = in + at;
        continue;
      }
      uint8_t* to = scratch.data() + size_t(r) * piece * item;
      if (!transport::cma_read(d.pid(r), to, d.a(r) + at, m * item)) return false;
      src[r] = to;
    }
    fold(op, src, upto, out + at, m);
    done += m;
  }
  return true;
}

}  // namespace

// scan_flat / exscan_flat: per chunk of at most one half,
//   1. every rank but the last waits until its half is free, copies its
//      chunk in, posts; the last only posts (no rank folds its chunks);
//   2. rank r folds the chunks of ranks 0..r (0..r-1 for exscan), in rank
//      order, into its receive buffer, its own straight from its buffer.
// Rank 0's receive buffer is left untouched by exscan, as MPI says.
// Large messages first try scan_direct above.
void scan(Context& c, const void* send, void* recv, size_t count, const Combiner& op, bool exclusive) {
  Round round(c);
  const uint32_t n = c.size(), me = c.rank();
  const size_t item = op.item;
  auto* out = static_cast<uint8_t*>(recv);
  const uint8_t* in = send ? static_cast<const uint8_t*>(send) : out;
  if (n == 1) {
    if (!exclusive && send && count) std::memcpy(out, in, count * item);
    return;
  }
  const uint32_t upto = exclusive ? me : me + 1;  // how many ranks fold in
  const char* what = exclusive ? "exscan" : "scan";
  // Direct::sign signs the direct algorithm.
  const Signature sig = reduction_sig(exclusive ? EXSCAN : SCAN, 0, op, count, Algo::FLAT);
  Direct d(c, exclusive ? EXSCAN : SCAN, count * item);
  if (d.large() && d.sign(sig, send, nullptr, what)) {
    // Not when a rank whose block others read passes IN_PLACE: it
    // overwrites that block with its result while they read.
    bool in_place_somewhere = false;
    for (uint32_t r = 0; r + 1 < n; ++r) in_place_somewhere = in_place_somewhere || d.a(r) == nullptr;
    if (!in_place_somewhere && d.finish(fold_direct(d, me, in, out, count, op, upto), what)) return;
  }
  const size_t per_round = std::max<size_t>(1, c.half_bytes() / item);
  const uint8_t* src[transport::kMaxRanks];
  size_t done = 0;
  if (count && me + 1 < n) c.hold_slot();
  do {
    size_t m = std::min(per_round, count - done);
    const bool first = done == 0 && !d.signed_();
    uint32_t s = first ? c.open(sig, what) : c.next_phase();
    if (!first) c.acquire_slot(s, what);
    if (m && me + 1 < n) c.publish(c.slot(me, s), in + done * item, m * item);
    c.post(s);
    if (first) c.agree(s, what);
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
