#include "core/tuning.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace nodempi {

namespace {

// A whole decimal number below `limit`, or `fallback`: no sign, no spaces,
// nothing after the digits.
uint64_t number(const char* v, uint64_t limit, uint64_t fallback) {
  if (!v || !*v) return fallback;
  uint64_t x = 0;
  for (const char* p = v; *p; ++p) {
    if (*p < '0' || *p > '9') return fallback;
    uint64_t digit = uint64_t(*p - '0');
    if (x > (limit - 1 - digit) / 10) return fallback;
    x = x * 10 + digit;
  }
  return x;
}

const char* from_environ(const char* name) { return std::getenv(name); }

Tuning& current() {
  static Tuning t = [] {
    Tuning fresh = Tuning::from(from_environ);
    if (!fresh.algo_errors.empty()) {
      std::fprintf(stderr, "nodempi: NODEMPI_ALGO: %s; ignored\n", fresh.algo_errors.c_str());
    }
    return fresh;
  }();
  return t;
}

}  // namespace

Tuning Tuning::from(const char* (*get)(const char*)) {
  Tuning t;
  if (const char* v = get("NODEMPI_CMA")) {
    if (std::strcmp(v, "0") == 0) t.cma = 0;
    else if (std::strcmp(v, "1") == 0) t.cma = 1;
    else if (std::strcmp(v, "fallback") == 0) t.cma = 2;
    else if (std::strcmp(v, "refuse") == 0) t.cma = 3;
  }
  t.cma_min = size_t(number(get("NODEMPI_CMA_MIN"), uint64_t(1) << 62, t.cma_min));
  uint64_t kb = number(get("NODEMPI_SLOT_KB"), 64 * 1024 + 1, 0);
  t.slot_kb = kb >= 4 ? size_t(kb) : 0;
  t.spin_us = uint32_t(number(get("NODEMPI_SPIN_US"), 4000000, kByJob));
  t.yield_us = uint32_t(number(get("NODEMPI_YIELD_US"), 4000000, t.yield_us));
  if (const char* v = get("NODEMPI_KERNELS")) {
    if (std::strcmp(v, "auto") != 0) t.kernels = v;
  }
  if (const char* v = get("NODEMPI_CHECK_SAME")) t.check_same = std::strcmp(v, "0") != 0;
  t.algo = coll::parse_forced_algos(get("NODEMPI_ALGO"), &t.algo_errors);
  return t;
}

const Tuning& tuning() { return current(); }

void retune() { current() = Tuning::from(from_environ); }

}  // namespace nodempi
