#include <cstring>

#include "core/coll/coll.h"

namespace nodempi::coll {

// verdict_flat:
//   1. every rank writes its status word into its half and posts;
//   2. every rank reads all status words; the lowest failing rank wins.
int verdict(Context& c, bool ok) {
  Round round(c);
  if (c.size() == 1) return ok ? -1 : 0;
  uint32_t s = c.next_phase();
  c.acquire_slot(s, "collective");
  uint32_t mine = ok ? 0 : 1;
  std::memcpy(c.slot(c.rank(), s), &mine, sizeof mine);
  c.post(s);
  c.wait_all(s, "collective");
  for (uint32_t r = 0; r < c.size(); ++r) {
    uint32_t status;
    std::memcpy(&status, c.slot(r, s), sizeof status);
    if (status != 0) return int(r);
  }
  return -1;
}

}  // namespace nodempi::coll
