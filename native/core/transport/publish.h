// How a rank copies a message into its own slot half for its peers to read.
#pragma once
#include <cstddef>

namespace nodempi::transport {

// With `stream`, from kPublishStreamMin bytes up, non-temporal stores that
// bypass this core's caches, then a store fence so they are visible before
// the post that follows. Plain stores leave the lines in this core's cache,
// and the reader then fetches every one of them from here; where the two
// cores are far apart (the project's VM places its two vCPUs so at times)
// that costs 4x the streamed copy at 16 KiB, while near each other the
// streamed copy is about 0.5 us slower (bench/README.md, "Streaming stores
// into the slots"). Below it, plain memcpy: there the fetch is short either
// way and the fence would dominate. memcpy on other architectures, and
// without `stream`: callers pass false when ranks outnumber cores, where
// the reader may run next on this very core and find the lines there.
// Returns whether the copy streamed (then the lines are not in this core's
// cache: a caller that reads the data back takes it from the source).
inline constexpr size_t kPublishStreamMin = 16384;
bool publish(void* dst, const void* src, size_t n, bool stream);

}  // namespace nodempi::transport
