// A rank's slot sets (segment.h): which communicator context each one is
// bound to, and handing them from one context to another.
//
// Only the rank writes its own sets, so this bookkeeping lives in the rank's
// process, one per attachment (in thread mode, one per worker). Several
// threads of one rank may run collectives on different contexts at once (a
// progress lane each, and the main thread), hence the atomics and the lock.
//
// A context holds its set from its first write in a collective to the end
// of that collective (coll::Context::slot, coll::Round). Between
// collectives the set stays bound, so a context in steady use never looks
// for one. A context that has none takes, in order:
//   1. a set never used, while fewer than kWarmSets have been;
//   2. the least recently used idle set whose last data every member of its
//      context has read: each has posted a later phase there, or finished
//      the collective (CtrlLine::done), or the context has been freed by
//      all and taken again since (ContextSlot::generation);
//   3. a set never used.
// It never waits for readers, so no collective waits for another one, and
// memory follows how many contexts are busy at once, not how many exist.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "core/transport/segment.h"

namespace nodempi::transport {

class SlotSets {
 public:
  // Sets a rank uses before it starts taking them from idle contexts.
  static constexpr uint32_t kWarmSets = 64;
  static constexpr uint32_t kNone = 0xffffffffu;

  // One use of a context (its id and generation) by this rank, and whom to
  // ask whether they have read its data.
  struct Owner {
    uint32_t context = 0;
    uint32_t generation = 0;
    uint32_t members = 0;
    uint32_t member = 0;  // this rank's place among them
  };

  explicit SlotSets(const Segment* seg);

  // Holds the set bound to `owner` for one collective: `hint`, the set it
  // held last (kNone at first), when it still has it; otherwise another,
  // which the caller must publish before its next post.
  uint32_t hold(const Owner& owner, uint32_t hint);
  // Ends a hold; `last` is the last phase this rank posted in the context.
  void release(uint32_t set, uint32_t last);
  // How many sets this rank has ever written (tests, benchmarks).
  uint32_t used() const;

 private:
  struct alignas(64) Entry {
    // key(owner) | kBusy while held; 0 before first use. Only its holder
    // touches the rest.
    std::atomic<uint64_t> word{0};
    std::atomic<uint64_t> tick{0};  // when last released, for LRU
    Owner owner;
    uint32_t last = 0;
  };
  static constexpr uint64_t kBusy = 1;

  static uint64_t key(const Owner& o) { return uint64_t(o.generation) << 32 | uint64_t(o.context) << 2 | 2; }
  uint32_t bind(const Owner& owner);
  // Takes set j from its idle owner when every reader is done with it.
  bool steal(uint32_t j, const Owner& owner);
  bool readers_done(const Owner& o, uint32_t last) const;
  uint32_t take(uint32_t j, const Owner& owner);

  const Segment* seg_;
  std::unique_ptr<Entry[]> entries_;
  std::mutex mu_;                  // held to bind a set
  std::atomic<uint32_t> fresh_{0};  // sets [0, fresh_) have been used
  std::atomic<uint64_t> clock_{0};
};

}  // namespace nodempi::transport
