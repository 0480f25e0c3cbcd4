// A communicator's view of the segment and the phase protocol every
// collective is built from.
//
// A collective is a fixed sequence of phases, the same on every rank (it
// depends only on arguments MPI requires to match). In phase s a rank may
// fill its own slot half (s & 1), then posts s on its control line; peers
// wait for that post and read the slot. A rank reads phase-s data only
// before it posts s+1, so a writer may reuse half (s & 1) for phase s+2 once
// every peer has posted s+1 (acquire_slot). Messages larger than a half are
// cut into chunks, one phase each, which pipelines them: the writer fills
// one half while readers drain the other.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/transport/segment.h"
#include "core/transport/wait.h"

namespace nodempi::coll {

struct SlotHeader {
  uint64_t phases;  // v-collectives: how many phases the writer needs
  uint64_t bytes;   // what the writer sends, for truncation checks
  uint64_t reserved[6];
};
constexpr size_t kHeaderBytes = sizeof(SlotHeader);
static_assert(kHeaderBytes == 64, "one cache line of header per slot half");

class Context {
 public:
  // A communicator of `size` ranks using segment context `id`; member i is
  // world rank world_ranks[i]. A size-1 context needs no segment.
  Context(transport::Segment* seg, uint32_t id, uint32_t rank, std::vector<uint32_t> world_ranks);

  uint32_t id() const { return id_; }
  transport::Segment* segment() const { return seg_; }
  uint32_t rank() const { return rank_; }
  uint32_t size() const { return size_; }
  // Data bytes in one slot half (after its header).
  size_t half_bytes() const { return half_; }

  // The phase the next post will publish.
  uint32_t next_phase() const { return seq_ + 1; }
  // Wait until every peer has posted s-1, so this rank may overwrite its
  // slot half for phase s.
  void acquire_slot(uint32_t s, const char* what);
  void post(uint32_t s);
  void wait(uint32_t peer, uint32_t s, const char* what);
  void wait_all(uint32_t s, const char* what);

  uint8_t* slot(uint32_t member, uint32_t s) const { return slots_[member * 2 + (s & 1)] + kHeaderBytes; }
  // A small header in front of each slot half, written and read under the
  // same rules as the data: how many phases a v-collective takes, and so on.
  SlotHeader* header(uint32_t member, uint32_t s) const {
    return reinterpret_cast<SlotHeader*>(slots_[member * 2 + (s & 1)]);
  }

 private:
  transport::Segment* seg_;
  uint32_t id_;
  uint32_t rank_;
  uint32_t size_;
  size_t half_;
  uint32_t seq_ = 0;
  std::vector<uint32_t> world_ranks_;
  std::vector<transport::CtrlLine*> lines_;
  std::vector<uint8_t*> slots_;
  transport::WaitPolicy policy_{};
  transport::Liveness live_;
};

}  // namespace nodempi::coll
