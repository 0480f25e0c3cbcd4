#include <algorithm>
#include <cstring>

#include "core/coll/coll.h"
#include "core/coll/direct.h"
#include "core/coll/select.h"
#include "core/coll/lanes.h"
#include "core/error.h"
#include "core/transport/cma.h"

namespace nodempi::coll {

void throw_truncated(const char* call, uint32_t from, size_t sent, size_t room) {
  throw CoreError(ErrorClass::TRUNCATE, std::string(call) + ": rank " + std::to_string(from) + " sent " +
                                            std::to_string(sent) + " bytes but the receive block holds " +
                                            std::to_string(room));
}

// gatherv_flat: only the root knows every count, so it announces how many
// phases the gather takes in the header of its first post.
//   1. every rank waits until its half is free; non-roots copy their first
//      chunk in and state their byte count; the root states the phase
//      count; all post;
//   2. non-roots learn the phase count from the root;
//   3. in each phase the root copies every peer's chunk into its block
//      (never more than the block holds) and non-roots fill the next chunk.
// gatherv_direct (direct.h): when more than one phase would follow, the
// root's first half lists where each block goes and how much it holds, and
// every non-root writes the rest of its block there itself; a block of the
// single-copy size sends nothing in the first phase (skips_first, direct.h).
void gatherv(Context& c, const void* send, size_t send_bytes, void* recv, const size_t* recv_bytes,
             const size_t* recv_displs, uint32_t root) {
  Round round(c);
  const uint32_t n = c.size(), me = c.rank();
  auto* in = static_cast<const uint8_t*>(send);
  auto* out = static_cast<uint8_t*>(recv);
  const size_t chunk = c.half_bytes();
  if (me == root && send && send_bytes > recv_bytes[me]) throw_truncated("gatherv", me, send_bytes, recv_bytes[me]);
  // The root's own block goes last: a gatherv that throws ERR_NOT_SAME
  // leaves the receive buffer as it was.
  auto own = [&] {
    if (me == root && send && recv_bytes[me]) std::memcpy(out + recv_displs[me], in, send_bytes);
  };
  if (n == 1) return own();

  // Each rank states the phases it needs in its first header and all run
  // the largest, so a rank with nothing to send needs no root (kNoRoot).
  const bool ready = direct_ready(c) && select(c, GATHERV, 0) == Algo::DIRECT;
  const Chunks plain{chunk, chunk};
  const Chunks mine = Chunks{skips_first(c, ready, send_bytes) ? 0 : chunk, chunk};
  uint64_t phases = mine.phases(send_bytes);
  if (me == root) {
    phases = 1;
    for (uint32_t r = 0; r < n; ++r) {
      if (r != root) phases = std::max(phases, plain.phases(recv_bytes[r]));
    }
  }
  // At the root, from the first phase on: what each rank sends, and how.
  uint64_t sent[transport::kMaxRanks];
  Chunks from[transport::kMaxRanks];
  size_t truncated_from = SIZE_MAX;
  Signature sig;
  sig.kind = GATHERV;
  sig.root = root;
  // The root's first half lists (address, room) of every block: 16 bytes a
  // rank, which a half always holds (Geometry gives it 64 a rank).
  sig.direct = ready ? 1 : 0;
  for (uint64_t k = 0; k < phases; ++k) {
    uint32_t s = k == 0 ? c.open(sig, "gatherv") : c.next_phase();
    if (k == 0) c.header(me, s)->phases = phases;
    if (me == root) {
      if (k == 0 && sig.direct) {
        auto* list = reinterpret_cast<uint64_t*>(c.slot(me, s));
        for (uint32_t r = 0; r < n; ++r) {
          list[2 * r] = reinterpret_cast<uint64_t>(out + recv_displs[r]);
          list[2 * r + 1] = recv_bytes[r];
        }
      }
      c.post(s);
      if (k == 0) {
        c.agree(s, "gatherv");
        for (uint32_t r = 0; r < n; ++r) {
          const SlotHeader* h = c.header(r, s);
          phases = std::max<uint64_t>(phases, h->phases);
          if (r == root) continue;
          sent[r] = h->bytes;
          from[r] = Chunks{skips_first(c, h->sig.direct & 1, sent[r]) ? 0 : chunk, chunk};
          if (sent[r] > recv_bytes[r] && truncated_from == SIZE_MAX) truncated_from = r;
        }
      }
      for (uint32_t r = 0; r < n; ++r) {
        if (r == root) continue;
        c.wait(r, s, "gatherv");
        // Never more than the block holds, nor than the rank sent.
        size_t len = from[r].chunk(std::min<uint64_t>(sent[r], recv_bytes[r]), k);
        if (len) std::memcpy(out + recv_displs[r] + from[r].offset(k), c.slot(r, s), len);
      }
    } else {
      if (k) c.acquire_slot(s, "gatherv");
      size_t len = mine.chunk(send_bytes, k);
      if (len) c.publish(c.slot(me, s), in + mine.offset(k), len);
      if (k == 0) c.header(me, s)->bytes = send_bytes;
      c.post(s);
      if (k == 0) {
        c.agree(s, "gatherv");
        for (uint32_t r = 0; r < n; ++r) phases = std::max<uint64_t>(phases, c.header(r, s)->phases);
      }
    }
    if (k == 0 && direct_rest(c, s, phases, "gatherv", [&] {
          if (me == root || root == kNoRoot || send_bytes <= mine.first) return true;
          const auto* list = reinterpret_cast<const uint64_t*>(c.slot(root, s));
          size_t len = std::min<uint64_t>(send_bytes, list[2 * me + 1]);
          if (len <= mine.first) return true;
          auto* to = reinterpret_cast<uint8_t*>(list[2 * me]) + mine.first;
          return transport::cma_write(c.pid(root), in + mine.first, to, len - mine.first);
        })) {
      break;
    }
  }
  own();
  if (truncated_from != SIZE_MAX) throw_truncated("gatherv", uint32_t(truncated_from), sent[truncated_from], recv_bytes[truncated_from]);
}

}  // namespace nodempi::coll
