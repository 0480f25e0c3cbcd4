// Where one rank's side of a collective lives: contiguous bytes, or `count`
// items of a derived datatype in a user buffer. Either way the collective
// moves a stream of bytes (for a derived type its packed stream: type-map
// order, holes left out, so only type signatures need match between ranks)
// and reads or writes it a piece at a time at any stream offset. That lets
// a pipeline pack each chunk straight into a slot and unpack it straight
// out of one: a strided message costs the same copies as a contiguous one,
// and no rank ever holds a packed copy of the whole message.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/datatype/pack.h"
#include "core/datatype/typemap.h"

namespace nodempi::coll {

class Layout {
 public:
  // No buffer (IN_PLACE, or a side this rank does not have).
  Layout() = default;
  // Contiguous bytes; null is the same as no buffer.
  explicit Layout(const void* bytes) : data_(static_cast<uint8_t*>(const_cast<void*>(bytes))) {}
  // `count` items of `type` whose first origin is user.origin bytes into
  // user.data. The caller has checked (datatype::touched) that they lie
  // inside the buffer. Holding the type keeps it alive while a nonblocking
  // operation runs, even if its handle is released meanwhile.
  Layout(std::shared_ptr<const datatype::Typemap> type, const datatype::UserBuffer& user, size_t count)
      : data_(user.data), type_(std::move(type)), user_(user), count_(count) {}

  bool absent() const { return !data_; }
  bool contiguous() const { return !type_; }
  // The bytes of a contiguous layout.
  uint8_t* data() const { return data_; }

  // Stream bytes [off, off + len) into dst.
  void read(uint64_t off, size_t len, uint8_t* dst) const;
  // The same into this rank's slot half, for its peers to read
  // (transport::publish; `stream` and the result as there).
  bool publish(uint64_t off, size_t len, uint8_t* slot, bool stream) const;
  // src into stream bytes [off, off + len); a derived type's holes are
  // left as they were.
  void write(uint64_t off, size_t len, const uint8_t* src) const;

 private:
  uint8_t* data_ = nullptr;
  std::shared_ptr<const datatype::Typemap> type_;
  datatype::UserBuffer user_{};
  size_t count_ = 0;
};

// Stream bytes [from_off, from_off + len) of `from` become stream bytes
// [to_off, to_off + len) of `to` (a rank's own block of a gather, say).
void copy(const Layout& from, uint64_t from_off, const Layout& to, uint64_t to_off, size_t len);

}  // namespace nodempi::coll
