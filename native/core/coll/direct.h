// The single-copy path of large messages (transport/cma.h says when it is
// on): each rank copies straight between its buffers and its peers', one
// copy per byte instead of two through the slots, and two phases in all
// however large the message.
//
//   1. Signature phase, with no data: every rank publishes its signature,
//      whether it can copy directly, and its two buffer addresses.
//   2. If every rank can, each does its copies and posts whether they
//      succeeded; once all have posted, every buffer is free again.
//   3. Otherwise (a rank could not, or a copy failed on any rank) every
//      rank alike falls back to the slots for this and every later call on
//      the communicator; the collective's slot algorithm then runs from the
//      next phase, already signed.
//
// bcast, gather, scatter, allgather, alltoall, allgatherv and (up to a size)
// scan take these steps: every rank knows the size that decides. In gatherv,
// scatterv and alltoallv only some ranks know the counts, so the choice
// cannot come first: their first phase runs through the slots and carries
// each rank's readiness (direct_ready) and what peers need to address its
// buffers, and blocks of the single-copy size send nothing in it
// (skips_first); when it shows that more phases would follow and every
// rank is ready (direct_all), the rest of every block moves by direct
// copies and direct_finish() ends the call, or sends every rank back to
// the slots.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/coll/context.h"

namespace nodempi::coll {

// Whether this rank can copy directly on `c` now: Signature::direct bit 0.
inline bool direct_ready(const Context& c) { return c.settings().copies && !c.direct_off(); }
// After the first phase `s` has been agreed: whether every rank is ready.
bool direct_all(const Context& c, uint32_t s);
// Step 2 above; also ends the v-collectives' direct copies.
bool direct_finish(Context& c, bool ok, const char* what);
// How many calls this process ended by direct copies: lets tests see which
// path a call took.
uint64_t single_copies();

// Whether a v-collective's block skips the slots in its first phase: when
// the rank that decides (its sender; scatterv's root) can copy directly
// (its first-phase signature says so) and the block is at least the
// single-copy size. If every rank turns out ready, direct copies move the
// whole block; if not, the slots carry it from phase 1. Both sides compute
// it the same way. skip_bytes(): the smallest such block (UINT64_MAX when
// the decider is not ready), for loops over many blocks of one sender.
inline uint64_t skip_bytes(const Context& c, bool decider_ready) {
  return decider_ready ? std::max<uint64_t>(c.settings().cma_min, 1) : UINT64_MAX;
}
inline bool skips_first(const Context& c, bool decider_ready, uint64_t bytes) {
  return bytes >= skip_bytes(c, decider_ready);
}

// The v-collectives, after their first phase `s` has been agreed: when more
// phases would follow and every rank is ready, runs `copies` (this rank's
// direct copies of the rest of its blocks; returns whether they all
// succeeded) and finishes. True: the call is done; false: go on through the
// slots.
template <class Copies>
bool direct_rest(Context& c, uint32_t s, uint64_t phases, const char* what, Copies copies) {
  return phases > 1 && direct_all(c, s) && direct_finish(c, copies(), what);
}

class Direct {
 public:
  // Decides, before any phase, whether this call of collective `kind`
  // takes the separate signature phase: when the selection table
  // (select.h) picks its direct algorithm for `bytes`. Ranks that decide
  // differently fail the signature check together.
  Direct(Context& c, uint32_t kind, size_t bytes);
  bool large() const { return large_; }

  // Step 1: returns whether every rank can copy directly; then `a(r)`,
  // `b(r)` and `pid(r)` describe peer r's buffers.
  // `bytes` is published too, for peers that must not read past a buffer.
  // `slots`: this rank's buffers are not contiguous this time, so a single
  // copy would need a packed copy on each side of it, where the slot
  // pipeline packs and unpacks straight through the slots with both
  // processes at work at once (layout.h). Then every rank takes the slots
  // for this call only.
  bool sign(const Signature& sig, const void* a, const void* b, const char* what, uint64_t bytes = 0,
            bool slots = false);
  const uint8_t* a(uint32_t r) const { return reinterpret_cast<const uint8_t*>(c_.header(r, s_)->addr[0]); }
  uint8_t* b(uint32_t r) const { return reinterpret_cast<uint8_t*>(c_.header(r, s_)->addr[1]); }
  int32_t pid(uint32_t r) const { return c_.pid(r); }
  uint64_t bytes(uint32_t r) const { return c_.header(r, s_)->bytes; }

  // Step 2, after this rank's copies (ok: all of them succeeded). True when
  // every rank's copies did; false means: run the slot algorithm.
  bool finish(bool ok, const char* what) { return direct_finish(c_, ok, what); }

  // Whether the slot algorithm must skip its own signature phase.
  bool signed_() const { return large_; }

  // NODEMPI_CHECK_SAME=0: whether a rooted call whose slot algorithm moves
  // `bytes` in one phase of at most `per_phase` compares the others with the
  // root alone: a bcast's or scatter's root then returns once its post is
  // out (coll/bcast.cc), a gather's others once they see the root's.
  // Never on the direct path, whose phases every rank takes together.
  bool root_alone(size_t bytes, size_t per_phase) const {
    return !c_.settings().check_same && bytes <= per_phase && !large_;
  }

 private:
  Context& c_;
  bool large_;
  uint32_t s_ = 0;
};

}  // namespace nodempi::coll
