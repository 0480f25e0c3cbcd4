// Moving items of a derived datatype between their layout in user memory and
// a contiguous stream in type-map order (MPI_Pack / MPI_Unpack, and what
// the collectives use for non-contiguous types).
//
// A user buffer is given as a byte range [data, data + length) and the
// position of the origin of item 0 inside it (`origin`, a byte offset that
// may be anywhere, even outside the range, as long as every byte the items
// touch lies inside). Item i's origin is origin + i * extent.
//
// Every function checks once, from the type's true bounds and the count,
// that all bytes it will touch lie inside the ranges it was given, and
// throws CoreError(BUFFER) otherwise (CoreError(TRUNCATE) when the stream
// is too short), before touching anything.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/datatype/typemap.h"

namespace nodempi::datatype {

struct UserBuffer {
  uint8_t* data;
  size_t length;
  int64_t origin;  // byte offset of item 0's origin from data
};

// Packs stream bytes [first, last) of `count` items into stream[0, last -
// first). Pass first = 0, last = count * size for the whole message; other
// ranges let a caller pack a long message chunk by chunk. Returns last - first.
size_t pack(const Typemap& type, const UserBuffer& user, size_t count, uint8_t* stream, size_t stream_length,
            uint64_t first, uint64_t last);
// The whole message.
size_t pack(const Typemap& type, const UserBuffer& user, size_t count, uint8_t* stream, size_t stream_length);

// The reverse: stream[0, last - first) becomes stream bytes [first, last) of
// `count` items in user memory.
size_t unpack(const Typemap& type, const uint8_t* stream, size_t stream_length, const UserBuffer& user, size_t count,
              uint64_t first, uint64_t last);
size_t unpack(const Typemap& type, const uint8_t* stream, size_t stream_length, const UserBuffer& user, size_t count);

// Bytes of stream `count` items make (count * size); throws
// CoreError(COUNT) on overflow.
uint64_t stream_bytes(const Typemap& type, size_t count);

// The byte range of `user` that `count` items touch, as offsets from
// user.data: [lo, hi), empty (lo == hi) when nothing is touched. Throws
// CoreError(BUFFER) when it is not inside [0, user.length).
void touched(const Typemap& type, const UserBuffer& user, size_t count, int64_t& lo, int64_t& hi);

}  // namespace nodempi::datatype
