#include "core/coll/coll.h"
#include "core/coll/select.h"

namespace nodempi::coll {

// barrier_flat:
//   1. post the next phase (a signature, no data);
//   2. wait until every peer has posted it.
// barrier_fan (by default with NODEMPI_CHECK_SAME=0 and ranks outnumbering
// cores: coll/select.cc), the same phase:
//   1. every rank but 0 posts, then waits for rank 0's post;
//   2. rank 0 waits for every other's post, compares the signatures, says in
//      its header line whether they differ, then posts.
// Both leave after the last arrival. Flat lets every rank see it at once;
// fan lets rank 0, which is on a core when it sees it, leave first while
// the others wait to be scheduled, so a small bcast or scatter from 0 that
// follows is out before most of its readers call. With the check on those
// wait for every rank anyway, and the rank that leaves first only waits
// longer (bench/README.md, "A barrier that rank 0 leaves first").
void barrier(Context& c) {
  Round round(c);
  if (c.size() == 1) return;
  Signature sig;
  sig.kind = BARRIER;
  sig.algo = uint16_t(select(c, BARRIER, 0));
  uint32_t s = c.open(sig, "barrier");
  if (Algo(sig.algo) == Algo::FLAT) {
    c.post(s);
    c.agree(s, "barrier");
    return;
  }
  // Rank 0 says in its header line whether the signatures differ.
  if (c.rank() == 0) {
    bool same = c.matches(s, "barrier");
    c.header(0, s)->addr[0] = same ? 0 : 1;
    c.post(s);
    if (same) return;
  } else {
    c.post(s);
    if (c.matches(s, "barrier", 0) && c.header(0, s)->addr[0] == 0) return;
  }
  // Some rank called something else. Every rank posts this phase whatever
  // it called, so the full comparison sees what rank 0 saw and throws the
  // same error on every rank.
  c.agree(s, "barrier");
}

}  // namespace nodempi::coll
