// mpi.allocMem's placement (core/memory/buffers.h) in calloc's memory, as
// V8 allocates an ArrayBuffer's: at a page boundary at every size, at a
// huge page boundary from kHugePagesFrom where huge pages are on (the THP
// mode is not "never" and NODEMPI_HUGE_PAGES is not 0), and then, where
// the kernel gives huge pages on request, backed by them
// (/proc/self/smaps); always inside the allocation.
#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "check.h"
#include "core/memory/buffers.h"
#include "core/memory/huge_pages.h"

using namespace nodempi;

namespace {

const size_t kPage = size_t(sysconf(_SC_PAGESIZE));

bool all_zero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i]) return false;
  }
  return true;
}

// The smaps entry of the mapping that starts at `p`: its size and its
// AnonHugePages, in kB (-1, -1 if there is none).
std::pair<long, long> mapping_at(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  char start[32];
  std::snprintf(start, sizeof start, "%lx-", static_cast<unsigned long>(reinterpret_cast<uintptr_t>(p)));
  std::string line;
  bool in = false;
  long size = -1, huge = -1;
  while (std::getline(smaps, line)) {
    if (line.find('-') != std::string::npos && line.find(' ') > line.find('-') && std::isxdigit(line[0]) &&
        line.find(':') > line.find(' ')) {
      if (in) break;
      in = line.rfind(start, 0) == 0;
      continue;
    }
    if (!in) continue;
    if (line.rfind("Size:", 0) == 0) size = std::stol(line.substr(5));
    if (line.rfind("AnonHugePages:", 0) == 0) huge = std::stol(line.substr(14));
  }
  return {size, huge};
}

std::string thp_mode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s;
  std::getline(f, s);
  const size_t a = s.find('['), b = s.find(']');
  return a == std::string::npos || b == std::string::npos ? "absent" : s.substr(a + 1, b - a - 1);
}

void one_size(size_t bytes) {
  nodempi::test::g_context = "place_buffer(" + std::to_string(bytes) + ")";
  const size_t slack = memory::placement_slack(bytes);
  CHECK(slack > 0);
  // What V8 gives an ArrayBuffer: calloc's memory.
  auto* data = static_cast<uint8_t*>(std::calloc(1, bytes + slack));
  CHECK(data != nullptr);
  if (!data) return;
  const size_t offset = memory::place_buffer(data, bytes);
  uint8_t* p = data + offset;
  const bool huge = bytes >= memory::kHugePagesFrom && memory::huge_pages_on();
  const size_t align = huge ? memory::kHugePage : kPage;
  CHECK_EQ(reinterpret_cast<uintptr_t>(p) % align, uintptr_t(0));
  // Inside the allocation, with the whole huge pages it touches.
  const size_t used = huge ? (bytes + align - 1) / align * align : bytes;
  CHECK(offset + used <= bytes + slack);
  CHECK(all_zero(p, bytes));
  for (size_t i = 0; i < bytes; i += kPage) p[i] = uint8_t(i / kPage + 1);
  p[bytes - 1] = 7;
  CHECK_EQ(p[bytes - 1], 7);
  const std::string mode = thp_mode();
  if (huge) {
    // Advised, so a mapping of its own from its start, of whole huge pages.
    auto [size_kb, huge_kb] = mapping_at(p);
    CHECK_EQ(size_kb * 1024, long(used));
    // The kernel may be short of huge pages; it has some for one buffer on
    // any machine these tests run on.
    if (mode == "madvise" || mode == "always") CHECK(huge_kb >= long(memory::kHugePage / 1024));
  }
  std::free(data);
}

}  // namespace

int main() {
  for (size_t bytes : {size_t(1), size_t(100), kPage - 1, kPage, kPage + 1, size_t(1) << 20, (size_t(1) << 20) + 16,
                       memory::kHugePagesFrom - 1, memory::kHugePagesFrom, memory::kHugePagesFrom + 1,
                       size_t(16) << 20}) {
    one_size(bytes);
  }
  // Sizes whose room would overflow size_t: refused.
  nodempi::test::g_context = "placement_slack(SIZE_MAX - 1)";
  if (memory::huge_pages_on()) CHECK_EQ(memory::placement_slack(SIZE_MAX - 1), size_t(0));
  return nodempi::test::summary("memory_test");
}
