#include "core/coll/coll.h"

namespace nodempi::coll {

// barrier_flat:
//   1. post the next phase (nothing in the slot);
//   2. wait until every peer has posted it.
void barrier(Context& c) {
  if (c.size() == 1) return;
  uint32_t s = c.next_phase();
  c.post(s);
  c.wait_all(s, "barrier");
}

}  // namespace nodempi::coll
