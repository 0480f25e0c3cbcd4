#include <algorithm>
#include <cstring>

#include "core/coll/coll.h"
#include "core/coll/direct.h"
#include "core/coll/select.h"
#include "core/transport/cma.h"

namespace nodempi::coll {

// allgather_direct (large contiguous blocks, direct.h): every rank reads
// each peer's block from where that peer keeps it (its send buffer, or its
// own block of its receive buffer when IN_PLACE, which it never
// overwrites). A derived type anywhere sends every rank down allgather_flat,
// which packs and unpacks through the slots.
// allgather_flat: for each chunk of every block:
//   1. every rank waits until its half is free, packs its chunk in, posts;
//      with a send buffer it also unpacks that chunk into its own block;
//   2. every rank unpacks each peer's chunk into that peer's block.
// IN_PLACE (send absent) reads this rank's block from recv. `bytes` is one
// block's stream; recv holds size() blocks, block r at stream byte r x bytes.
void allgather(Context& c, const Layout& send, const Layout& recv, size_t bytes) {
  Round round(c);
  const uint32_t n = c.size(), me = c.rank();
  const uint64_t mine = uint64_t(me) * bytes;
  if (n == 1) {
    if (!send.absent()) copy(send, 0, recv, 0, bytes);
    return;
  }
  const size_t chunk = c.half_bytes();
  Signature sig;
  sig.kind = ALLGATHER;
  sig.bytes = bytes;
  sig.check_bytes = 1;
  sig.algo = uint16_t(Algo::FLAT);  // Direct::sign signs the direct algorithm
  Direct d(c, ALLGATHER, bytes);
  const bool flat = recv.contiguous() && send.contiguous();
  const uint8_t* in = send.absent() ? recv.data() + mine : send.data();
  if (d.large() && d.sign(sig, in, nullptr, "allgather", 0, !flat)) {
    bool ok = true;
    for (uint32_t i = 1; i < n && ok; ++i) {
      uint32_t r = (me + i) % n;
      ok = transport::cma_read(d.pid(r), recv.data() + size_t(r) * bytes, d.a(r), bytes);
    }
    if (d.finish(ok, "allgather")) {
      if (!send.absent()) std::memcpy(recv.data() + mine, in, bytes);
      return;
    }
  }
  size_t off = 0;
  do {
    size_t len = std::min(chunk, bytes - off);
    const bool first = off == 0 && !d.signed_();
    uint32_t s = first ? c.open(sig, "allgather") : c.next_phase();
    if (!first) c.acquire_slot(s, "allgather");
    uint8_t* slot = c.data(me, s, bytes);
    const bool streamed = send.absent() ? recv.publish(mine + off, len, slot, !c.crowded())
                                        : send.publish(off, len, slot, !c.crowded());
    c.post(s);
    if (first) c.agree(s, "allgather");
    // Our own chunk: from the slot while it is hot in cache, unless it went
    // there past the cache (transport::publish).
    if (!send.absent()) {
      if (streamed) copy(send, off, recv, mine + off, len);
      else recv.write(mine + off, len, slot);
    }
    for (uint32_t i = 1; i < n; ++i) {
      // Start with the next rank so the ranks do not all read one slot at once.
      uint32_t r = (me + i) % n;
      c.wait(r, s, "allgather");
      recv.write(uint64_t(r) * bytes + off, len, c.data(r, s, bytes));
    }
    off += len;
  } while (off < bytes);
}

}  // namespace nodempi::coll
