// The lanes of scatterv and alltoallv: a rank's slot half cut into one lane
// per member (8-byte aligned), lane r carrying the block for member r.
// In the first phase each lane starts with a LaneHead, the block's byte
// count and address (for the single-copy path, direct.h), so a block moves
// first() bytes in phase 0 and width() bytes in every later phase.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/coll/context.h"

namespace nodempi::coll {

struct LaneHead {
  uint64_t bytes;  // the whole block
  uint64_t addr;   // where the sender keeps it
};

class Lanes {
 public:
  explicit Lanes(const Context& c) : width_(c.half_bytes() / c.size() / 8 * 8), first_(width_ - sizeof(LaneHead)) {}

  size_t width() const { return width_; }
  size_t first() const { return first_; }
  // Phases a block of `bytes` takes.
  uint64_t phases(size_t bytes) const { return bytes <= first_ ? 1 : 1 + (bytes - first_ + width_ - 1) / width_; }
  // Bytes of a block moved before phase k.
  size_t offset(uint64_t k) const { return k == 0 ? 0 : first_ + size_t(k - 1) * width_; }
  // Bytes of a `bytes`-long block that phase k moves.
  size_t chunk(size_t bytes, uint64_t k) const {
    size_t off = offset(k);
    return bytes > off ? std::min(k == 0 ? first_ : width_, bytes - off) : 0;
  }

  // Where phase k's data of lane r starts in a half.
  uint8_t* data(uint8_t* half, uint32_t r, uint64_t k) const { return lane(half, r) + (k == 0 ? sizeof(LaneHead) : 0); }
  const uint8_t* data(const uint8_t* half, uint32_t r, uint64_t k) const {
    return lane(half, r) + (k == 0 ? sizeof(LaneHead) : 0);
  }
  // The first phase's head of lane r (the lanes are only 8-byte aligned).
  void put_head(uint8_t* half, uint32_t r, const LaneHead& h) const { std::memcpy(lane(half, r), &h, sizeof h); }
  LaneHead head(const uint8_t* half, uint32_t r) const {
    LaneHead h;
    std::memcpy(&h, lane(half, r), sizeof h);
    return h;
  }

 private:
  uint8_t* lane(uint8_t* half, uint32_t r) const { return half + size_t(r) * width_; }
  const uint8_t* lane(const uint8_t* half, uint32_t r) const { return half + size_t(r) * width_; }

  size_t width_;
  size_t first_;
};

}  // namespace nodempi::coll
