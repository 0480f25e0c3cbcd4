#include <algorithm>
#include <cstring>

#include "core/coll/coll.h"
#include "core/coll/direct.h"
#include "core/coll/select.h"
#include "core/transport/cma.h"

namespace nodempi::coll {

// allgatherv_direct (large blocks, direct.h): every rank reads each peer's
// block from where that peer keeps it, never more than the peer said it
// sends nor more than the block holds.
// allgatherv_flat: as allgather, each rank fills its half with its next
// chunk and posts, and copies each peer's chunk into that peer's block,
// never more than the peer sends nor more than the block holds. MPI
// requires the same recvcounts everywhere, but a rank whose counts differ
// must not make the others lose or invent bytes: each rank states in its
// first header what it sends and the phases its counts need, and all run
// the most any rank needs. IN_PLACE reads this rank's block from recv.
void allgatherv(Context& c, const void* send, size_t send_bytes, void* recv, const size_t* recv_bytes,
                const size_t* recv_displs) {
  Round round(c);
  const uint32_t n = c.size(), me = c.rank();
  auto* out = static_cast<uint8_t*>(recv);
  const uint8_t* in = send ? static_cast<const uint8_t*>(send) : out + recv_displs[me];
  const size_t mine = send ? send_bytes : recv_bytes[me];
  if (mine > recv_bytes[me]) throw_truncated("allgatherv", me, mine, recv_bytes[me]);
  // This rank's own block goes last: on the single-copy path peers read
  // from `in`, so they need not wait behind this copy, and a call that
  // throws ERR_NOT_SAME leaves the receive buffer as it was.
  auto own = [&] {
    if (send && mine) std::memcpy(out + recv_displs[me], in, mine);
  };
  if (n == 1) return own();
  const size_t chunk = c.half_bytes();
  size_t phases = 1, largest = 0;
  for (uint32_t r = 0; r < n; ++r) {
    phases = std::max(phases, (recv_bytes[r] + chunk - 1) / chunk);
    largest = std::max(largest, recv_bytes[r]);
  }
  Signature sig;
  sig.kind = ALLGATHERV;
  // The largest block decides, the same on every rank (MPI requires equal
  // recvcounts everywhere; ranks that differ disagree on the protocol).
  sig.algo = uint16_t(Algo::FLAT);  // Direct::sign signs the direct algorithm
  Direct d(c, ALLGATHERV, largest);
  if (d.large() && d.sign(sig, in, nullptr, "allgatherv", mine)) {
    bool ok = true;
    size_t truncated_from = SIZE_MAX;
    for (uint32_t i = 1; i < n && ok; ++i) {
      uint32_t r = (me + i) % n;
      if (d.bytes(r) > recv_bytes[r] && truncated_from == SIZE_MAX) truncated_from = r;
      size_t len = std::min<uint64_t>(d.bytes(r), recv_bytes[r]);
      ok = transport::cma_read(d.pid(r), out + recv_displs[r], d.a(r), len);
    }
    if (d.finish(ok, "allgatherv")) {
      own();
      if (truncated_from != SIZE_MAX) {
        throw_truncated("allgatherv", uint32_t(truncated_from), d.bytes(uint32_t(truncated_from)), recv_bytes[truncated_from]);
      }
      return;
    }
  }
  if (mine) c.hold_slot();
  uint64_t sent[transport::kMaxRanks];
  size_t truncated_from = SIZE_MAX;
  for (size_t k = 0; k < phases; ++k) {
    size_t off = k * chunk;
    const bool first = k == 0 && !d.signed_();
    uint32_t s = first ? c.open(sig, "allgatherv") : c.next_phase();
    if (!first) c.acquire_slot(s, "allgatherv");
    size_t len = mine > off ? std::min(chunk, mine - off) : 0;
    if (len) c.publish(c.slot(me, s), in + off, len);
    if (k == 0) {
      c.header(me, s)->phases = phases;
      c.header(me, s)->bytes = mine;
    }
    c.post(s);
    if (first) c.agree(s, "allgatherv");
    for (uint32_t i = 1; i < n; ++i) {
      uint32_t r = (me + i) % n;
      c.wait(r, s, "allgatherv");
      if (k == 0) {
        const SlotHeader* h = c.header(r, s);
        phases = std::max<uint64_t>(phases, h->phases);
        sent[r] = h->bytes;
        if (sent[r] > recv_bytes[r] && truncated_from == SIZE_MAX) truncated_from = r;
      }
      const size_t end = std::min<uint64_t>(sent[r], recv_bytes[r]);
      size_t got = end > off ? std::min(chunk, end - off) : 0;
      if (got) std::memcpy(out + recv_displs[r] + off, c.slot(r, s), got);
    }
  }
  own();
  if (truncated_from != SIZE_MAX) throw_truncated("allgatherv", uint32_t(truncated_from), sent[truncated_from], recv_bytes[truncated_from]);
}

}  // namespace nodempi::coll
