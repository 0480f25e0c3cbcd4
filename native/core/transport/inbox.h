// Leader-to-leader messages through the segment's outboxes (intercommunicator
// creation). Blocking, with the same liveness checks as collective waits.
#pragma once
#include <cstdint>
#include <vector>

#include "core/transport/segment.h"

namespace nodempi::transport {

// Sends `data` to world rank `peer` and receives the message `peer` sends to
// this rank with the same tag. Both sides send first, so two leaders calling
// this for each other never deadlock.
std::vector<int32_t> exchange(Segment& seg, uint32_t self, uint32_t peer, uint32_t tag,
                              const std::vector<int32_t>& data);

}  // namespace nodempi::transport
