#include "core/coll/coll.h"

namespace nodempi::coll {

// barrier_flat:
//   1. post the next phase (a signature, no data);
//   2. wait until every peer has posted it.
void barrier(Context& c) {
  Round round(c);
  if (c.size() == 1) return;
  Signature sig;
  sig.kind = BARRIER;
  uint32_t s = c.open(sig, "barrier");
  c.post(s);
  c.agree(s, "barrier");
}

}  // namespace nodempi::coll
