#include "core/memory/buffers.h"

#include <unistd.h>

#include <cstdint>

#include "core/memory/huge_pages.h"

namespace nodempi::memory {

namespace {

size_t page_size() {
  static const size_t page = size_t(sysconf(_SC_PAGESIZE));
  return page;
}

bool wants_huge(size_t bytes) { return bytes >= kHugePagesFrom && huge_pages_on(); }

uintptr_t round_up(uintptr_t n, uintptr_t to) { return (n + to - 1) / to * to; }

}  // namespace

size_t placement_slack(size_t bytes) {
  if (!wants_huge(bytes)) return page_size();
  // Room to align the start, and to round the end up to a whole huge page
  // (so that the last one can be huge too).
  if (bytes > SIZE_MAX - 2 * kHugePage) return 0;
  return kHugePage + (round_up(bytes, kHugePage) - bytes);
}

size_t place_buffer(void* data, size_t bytes) {
  const bool huge = wants_huge(bytes);
  const uintptr_t lo = reinterpret_cast<uintptr_t>(data);
  const uintptr_t at = round_up(lo, huge ? kHugePage : page_size());
  if (huge) make_huge_pages(reinterpret_cast<void*>(at), round_up(bytes, kHugePage));
  return size_t(at - lo);
}

}  // namespace nodempi::memory
