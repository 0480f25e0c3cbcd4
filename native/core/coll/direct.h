// The single-copy path of the large fixed-size collectives (bcast, gather,
// scatter, allgather, alltoall), opt-in (transport/cma.h says why): each
// rank copies straight between its buffers and its peers', one copy per byte
// instead of two through the slots, and two phases in all however large the
// message.
//
//   1. Signature phase, with no data: every rank publishes its signature,
//      whether it can copy directly, and its two buffer addresses.
//   2. If every rank can, each does its copies and posts whether they
//      succeeded; once all have posted, every buffer is free again.
//   3. Otherwise (a rank could not, or a copy failed on any rank) every
//      rank alike falls back to the slots for this and every later call on
//      the communicator; the collective's slot algorithm then runs from the
//      next phase, already signed.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/coll/context.h"

namespace nodempi::coll {

class Direct {
 public:
  // Decides, before any phase, whether this call takes the separate
  // signature phase: messages of at least the single-copy size (the same
  // on every rank, or the signature check fails on all of them).
  Direct(Context& c, size_t bytes);
  bool large() const { return large_; }

  // Step 1: returns whether every rank can copy directly; then `a(r)`,
  // `b(r)` and `pid(r)` describe peer r's buffers.
  bool sign(const Signature& sig, const void* a, const void* b, const char* what);
  const uint8_t* a(uint32_t r) const { return reinterpret_cast<const uint8_t*>(c_.header(r, s_)->addr[0]); }
  uint8_t* b(uint32_t r) const { return reinterpret_cast<uint8_t*>(c_.header(r, s_)->addr[1]); }
  int32_t pid(uint32_t r) const { return c_.pid(r); }

  // Step 2, after this rank's copies (ok: all of them succeeded). True when
  // every rank's copies did; false means: run the slot algorithm.
  bool finish(bool ok, const char* what);

  // Whether the slot algorithm must skip its own signature phase.
  bool signed_() const { return large_; }

 private:
  Context& c_;
  bool large_;
  uint32_t s_ = 0;
};

}  // namespace nodempi::coll
