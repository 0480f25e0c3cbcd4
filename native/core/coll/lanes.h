// How the v-collectives cut a block into phases, and the lanes scatterv and
// alltoallv cut a slot half into.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/coll/context.h"

namespace nodempi::coll {

// A block moves `first` bytes in phase 0 and `each` in every later phase.
struct Chunks {
  size_t first, each;

  // Phases a block of `bytes` takes.
  uint64_t phases(uint64_t bytes) const { return bytes <= first ? 1 : 1 + (bytes - first + each - 1) / each; }
  // Bytes of a block moved before phase k.
  size_t offset(uint64_t k) const { return k == 0 ? 0 : first + size_t(k - 1) * each; }
  // Bytes of a `bytes`-long block that phase k moves.
  size_t chunk(uint64_t bytes, uint64_t k) const {
    size_t off = offset(k);
    return bytes > off ? size_t(std::min<uint64_t>(k == 0 ? first : each, bytes - off)) : 0;
  }
};

// The lanes: a rank's slot half cut into one lane per member (8-byte
// aligned), lane r carrying the block for member r. In the first phase each
// lane starts with a LaneHead, the block's byte count and address (for the
// single-copy path, direct.h).
struct LaneHead {
  uint64_t bytes;  // the whole block
  uint64_t addr;   // where the sender keeps it
};

class Lanes {
 public:
  explicit Lanes(const Context& c) : width_(c.half_bytes() / c.size() / 8 * 8), first_(width_ - sizeof(LaneHead)) {}

  size_t width() const { return width_; }
  size_t first() const { return first_; }
  // How a block moves through its lane (skips_first, direct.h).
  Chunks chunks(bool skip_first = false) const { return {skip_first ? 0 : first_, width_}; }

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
