#include "core/coll/layout.h"

#include <algorithm>
#include <cstring>

#include "core/transport/publish.h"

namespace nodempi::coll {

void Layout::read(uint64_t off, size_t len, uint8_t* dst) const {
  if (!len) return;
  if (!type_) {
    std::memcpy(dst, data_ + off, len);
    return;
  }
  datatype::pack(*type_, user_, count_, dst, len, off, off + len);
}

bool Layout::publish(uint64_t off, size_t len, uint8_t* slot, bool stream) const {
  if (!type_) return transport::publish(slot, data_ + off, len, stream);
  read(off, len, slot);
  return false;
}

void Layout::write(uint64_t off, size_t len, const uint8_t* src) const {
  if (!len) return;
  if (!type_) {
    std::memcpy(data_ + off, src, len);
    return;
  }
  datatype::unpack(*type_, src, len, user_, count_, off, off + len);
}

void copy(const Layout& from, uint64_t from_off, const Layout& to, uint64_t to_off, size_t len) {
  if (from.contiguous()) return to.write(to_off, len, from.data() + from_off);
  if (to.contiguous()) return from.read(from_off, len, to.data() + to_off);
  // Both derived: through a buffer small enough to stay in L1.
  uint8_t buf[16384];
  for (size_t done = 0; done < len;) {
    size_t n = std::min(sizeof buf, len - done);
    from.read(from_off + done, n, buf);
    to.write(to_off + done, n, buf);
    done += n;
  }
}

}  // namespace nodempi::coll
