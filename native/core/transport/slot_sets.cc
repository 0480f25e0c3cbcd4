#include "core/transport/slot_sets.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/transport/wait.h"

namespace nodempi::transport {

SlotSets::SlotSets(const Segment* seg) : seg_(seg), entries_(new Entry[kSets]) {}

uint32_t SlotSets::hold(const Owner& owner, uint32_t hint) {
  const uint64_t k = key(owner);
  uint64_t w = k;
  if (hint < kSets && entries_[hint].word.compare_exchange_strong(w, k | kBusy, std::memory_order_acquire)) {
    return hint;
  }
  std::lock_guard<std::mutex> lock(mu_);
  // Another thread may have held it only to look at its readers.
  w = k;
  if (hint < kSets && entries_[hint].word.compare_exchange_strong(w, k | kBusy, std::memory_order_acquire)) {
    return hint;
  }
  return bind(owner);
}

void SlotSets::release(uint32_t set, uint32_t last) {
  Entry& e = entries_[set];
  e.last = last;
  // For LRU order only: an increment two threads race on now and then
  // costs nothing but order, where an atomic add would cost every call.
  uint64_t now = clock_.load(std::memory_order_relaxed) + 1;
  clock_.store(now, std::memory_order_relaxed);
  e.tick.store(now, std::memory_order_relaxed);
  e.word.store(key(e.owner), std::memory_order_release);
}

uint32_t SlotSets::used() const { return fresh_.load(std::memory_order_relaxed); }

uint32_t SlotSets::bind(const Owner& owner) {
  uint32_t fresh = fresh_.load(std::memory_order_relaxed);
  if (fresh < kWarmSets) return take(fresh, owner);
  // Idle sets, least recently held first. A few tries: a set whose readers
  // lag now will likely still lag, and a fresh set costs only memory.
  std::vector<std::pair<uint64_t, uint32_t>> idle;
  for (uint32_t j = 0; j < fresh; ++j) {
    if (!(entries_[j].word.load(std::memory_order_relaxed) & kBusy)) {
      idle.emplace_back(entries_[j].tick.load(std::memory_order_relaxed), j);
    }
  }
  const size_t tries = std::min<size_t>(idle.size(), 8);
  std::partial_sort(idle.begin(), idle.begin() + tries, idle.end());
  for (size_t i = 0; i < tries; ++i) {
    if (steal(idle[i].second, owner)) return idle[i].second;
  }
  if (fresh < kSets) return take(fresh, owner);
  // Every set has been used: try them all. One always qualifies while this
  // rank is in fewer than kSets contexts at once, as it must be.
  for (const auto& candidate : idle) {
    if (steal(candidate.second, owner)) return candidate.second;
  }
  throw CoreError(ErrorClass::OTHER, "no slot set is free: this rank has data in flight on " +
                                         std::to_string(kSets) + " communicators at once");
}

uint32_t SlotSets::take(uint32_t j, const Owner& owner) {
  Entry& e = entries_[j];
  e.owner = owner;
  e.last = 0;
  e.word.store(key(owner) | kBusy, std::memory_order_relaxed);
  if (j == fresh_.load(std::memory_order_relaxed)) fresh_.store(j + 1, std::memory_order_relaxed);
  return j;
}

bool SlotSets::steal(uint32_t j, const Owner& owner) {
  Entry& e = entries_[j];
  uint64_t w = e.word.load(std::memory_order_relaxed);
  // Held busy while we look, so that its owner cannot start a collective
  // in it meanwhile; the owner then waits for the lock and finds it back or
  // gone.
  if ((w & kBusy) || !e.word.compare_exchange_strong(w, w | kBusy, std::memory_order_acquire)) return false;
  if (!readers_done(e.owner, e.last)) {
    e.word.store(w, std::memory_order_release);
    return false;
  }
  take(j, owner);
  return true;
}

bool SlotSets::readers_done(const Owner& o, uint32_t last) const {
  const Header* h = seg_->header();
  if (h->contexts_state[o.context].generation.load(std::memory_order_acquire) != o.generation) return true;
  for (uint32_t m = 0; m < o.members; ++m) {
    if (m == o.member) continue;
    const CtrlLine* line = seg_->ctrl(o.context, m);
    if (!seq_reached(line->seq.load(std::memory_order_acquire), last + 1) &&
        !seq_reached(line->done.load(std::memory_order_acquire), last)) {
      return false;
    }
  }
  return true;
}

}  // namespace nodempi::transport
