#include <algorithm>

#include "core/coll/coll.h"
#include "core/coll/direct.h"
#include "core/coll/select.h"
#include "core/transport/cma.h"

namespace nodempi::coll {

// bcast_direct (large contiguous messages, direct.h): every other rank
// reads the root's buffer in one copy. A derived type anywhere sends every
// rank down the pipeline, which packs and unpacks through the slots.
// bcast_pipelined: for each chunk of at most one slot half (at least one
// phase, so a zero-byte bcast still matches up):
//   1. the root waits until its half is free, packs the chunk in, posts;
//   2. the others post, wait for the root and unpack the chunk out.
// Readers drain chunk k while the root fills chunk k+1 in the other half.
// `bytes` is the stream: count x size for a derived type.
//
// With NODEMPI_CHECK_SAME=0, a bcast of one phase returns on the root once
// its post is out, as MPI lets a root do: the readers compare their
// signatures with the root's only. How far ahead the root may run is how
// far back its next write reaches: a message that fits the header line
// (16 bytes or less) writes no slot half, only the line, which its readers
// are done with kHeaderLines - 1 phases later (Context::open), so the
// root may post that many such bcasts before it waits for anyone; a larger
// one writes a half, and open() waits for every peer's previous post first,
// so at most one collective ahead. Back to back, a bcast then costs about a
// line transfer to each reader rather than a round trip (bench/CORE.md). A
// root that does not wait cannot throw ERR_NOT_SAME: hence not by default.
void bcast(Context& c, const Layout& buf, size_t bytes, uint32_t root) {
  Round round(c);
  if (c.size() == 1) return;
  const size_t chunk = c.half_bytes();
  Signature sig;
  sig.kind = BCAST;
  sig.root = root;
  sig.bytes = bytes;
  sig.check_bytes = 1;
  sig.algo = uint16_t(Algo::PIPELINED);  // Direct::sign signs the direct algorithm
  Direct d(c, BCAST, bytes);
  const bool ahead = d.root_alone(bytes, chunk);
  // A message that fits the header line writes no slot half on any rank:
  // such a bcast's root need not wait for its readers to free one.
  const bool header_only = ahead && bytes <= sizeof(SlotHeader::addr);
  if (d.large() && d.sign(sig, buf.data(), nullptr, "bcast", 0, !buf.contiguous())) {
    bool ok = c.rank() == root || transport::cma_read(d.pid(root), buf.data(), d.a(root), bytes);
    if (d.finish(ok, "bcast")) return;
  }
  size_t off = 0;
  do {
    size_t len = std::min(chunk, bytes - off);
    const bool first = off == 0 && !d.signed_();
    uint32_t s = first ? c.open(sig, "bcast", header_only) : c.next_phase();
    if (c.rank() == root) {
      if (!first) c.acquire_slot(s, "bcast");
      buf.publish(off, len, c.data(root, s, bytes), !c.crowded());
      c.post(s);
      if (first && !ahead) c.agree(s, "bcast");
    } else {
      c.post(s);
      if (first) {
        c.agree(s, "bcast", ahead ? root : Context::kEveryone);
      } else {
        c.wait(root, s, "bcast");
      }
      buf.write(off, len, c.data(root, s, bytes));
    }
    off += len;
  } while (off < bytes);
}

}  // namespace nodempi::coll
