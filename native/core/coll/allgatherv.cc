#include <algorithm>
#include <cstring>

#include "core/coll/coll.h"

namespace nodempi::coll {

// allgatherv_flat: every rank knows every count (MPI requires the same
// recvcounts everywhere), so all compute the same number of phases; then as
// allgather: each rank fills its half with its next chunk and posts, and
// copies each peer's chunk into that peer's block. IN_PLACE reads this
// rank's block from recv.
void allgatherv(Context& c, const void* send, size_t send_bytes, void* recv, const size_t* recv_bytes,
                const size_t* recv_displs) {
  const uint32_t n = c.size(), me = c.rank();
  auto* out = static_cast<uint8_t*>(recv);
  const uint8_t* in = send ? static_cast<const uint8_t*>(send) : out + recv_displs[me];
  const size_t mine = send ? send_bytes : recv_bytes[me];
  if (mine > recv_bytes[me]) throw_truncated("allgatherv", me, mine, recv_bytes[me]);
  if (send && mine) std::memcpy(out + recv_displs[me], in, mine);
  if (n == 1) return;
  const size_t chunk = c.half_bytes();
  size_t phases = 1;
  for (uint32_t r = 0; r < n; ++r) phases = std::max(phases, (recv_bytes[r] + chunk - 1) / chunk);
  Signature sig;
  sig.kind = ALLGATHERV;
  for (size_t k = 0; k < phases; ++k) {
    size_t off = k * chunk;
    uint32_t s = k == 0 ? c.open(sig, "allgatherv") : c.next_phase();
    if (k) c.acquire_slot(s, "allgatherv");
    size_t len = mine > off ? std::min(chunk, mine - off) : 0;
    if (len) std::memcpy(c.slot(me, s), in + off, len);
    c.post(s);
    if (k == 0) c.agree(s, "allgatherv");
    for (uint32_t i = 1; i < n; ++i) {
      uint32_t r = (me + i) % n;
      c.wait(r, s, "allgatherv");
      size_t got = recv_bytes[r] > off ? std::min(chunk, recv_bytes[r] - off) : 0;
      if (got) std::memcpy(out + recv_displs[r] + off, c.slot(r, s), got);
    }
  }
}

}  // namespace nodempi::coll
