// The C++ tests' short/long switch, for every test program (check.h
// includes it; kernels_test, which has its own CHECK, includes it alone).
#pragma once
#include <cstdlib>
#include <cstring>

namespace nodempi::test {

// NODEMPI_TEST_LONG=1 (npm run test:asan, test:tsan) runs more rounds; the
// default is the short form npm test runs.
inline bool long_form() {
  const char* v = std::getenv("NODEMPI_TEST_LONG");
  return v && *v && std::strcmp(v, "0") != 0;
}

}  // namespace nodempi::test
