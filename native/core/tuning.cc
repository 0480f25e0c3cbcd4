#include "core/tuning.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/kernels/kernels.h"

namespace nodempi {

namespace {

// The value as a message quotes it: in double quotes, with quotes,
// backslashes and control bytes escaped.
std::string quoted(const char* v) {
  std::string out = "\"";
  for (const char* p = v; *p; ++p) {
    const unsigned char c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

// A whole decimal number below `limit`: no sign, no spaces, nothing after
// the digits.
bool number(const char* v, uint64_t limit, uint64_t* out) {
  if (!*v) return false;
  uint64_t x = 0;
  for (const char* p = v; *p; ++p) {
    if (*p < '0' || *p > '9') return false;
    uint64_t digit = uint64_t(*p - '0');
    if (x > (limit - 1 - digit) / 10) return false;
    x = x * 10 + digit;
  }
  *out = x;
  return true;
}

// Reads the settings through `get`, noting each value that does not parse.
class Reader {
 public:
  Reader(const std::function<const char*(const char*)>& get, std::string* errors) : get_(get), errors_(errors) {}

  // The value of `name`, or nullptr when unset or empty (the same as unset).
  const char* operator()(const char* name) const {
    const char* v = get_(name);
    return v && *v ? v : nullptr;
  }

  // The index of `name`'s value in `choices` (nullptr-terminated), -1 when
  // unset; an error naming the choices ("\"0\", \"1\" or \"2\"", as
  // lib/settings.ts words them) and -1 when it is none of them.
  int choice(const char* name, const char* const* choices) const {
    const char* v = (*this)(name);
    if (!v) return -1;
    int n = 0;
    for (; choices[n]; ++n) {
      if (std::strcmp(v, choices[n]) == 0) return n;
    }
    std::string expected;
    for (int i = 0; i < n; ++i) expected += (i == 0 ? "" : i + 1 < n ? ", " : " or ") + quoted(choices[i]);
    complain(name, expected, v);
    return -1;
  }

  // A whole number below `limit` at or above `least`, else `fallback`
  // (with an error unless unset).
  uint64_t whole(const char* name, uint64_t least, uint64_t limit, uint64_t fallback, const char* expected) const {
    const char* v = (*this)(name);
    uint64_t x = 0;
    if (!v) return fallback;
    if (number(v, limit, &x) && x >= least) return x;
    complain(name, expected, v);
    return fallback;
  }

  void complain(const char* name, const std::string& expected, const char* v) const {
    if (!errors_->empty()) *errors_ += "; ";
    *errors_ += std::string(name) + " must be " + expected + ", got " + quoted(v);
  }

 private:
  const std::function<const char*(const char*)>& get_;
  std::string* errors_;
};

const char* from_environ(const char* name) { return std::getenv(name); }

Tuning& current() {
  static Tuning t = Tuning::from(from_environ);
  return t;
}

}  // namespace

Tuning Tuning::from(const std::function<const char*(const char*)>& get) {
  Tuning t;
  const Reader env(get, &t.errors);
  static const char* const kCma[] = {"0", "1", "fallback", "refuse", nullptr};
  const int cma = env.choice("NODEMPI_CMA", kCma);
  if (cma >= 0) t.cma = cma;
  t.cma_min = size_t(env.whole("NODEMPI_CMA_MIN", 0, uint64_t(1) << 62, t.cma_min, "a whole number of bytes below 2^62"));
  t.slot_kb = size_t(env.whole("NODEMPI_SLOT_KB", 4, 64 * 1024 + 1, 0, "a whole number of KiB from 4 to 65536"));
  t.spin_us = uint32_t(env.whole("NODEMPI_SPIN_US", 0, 4000000, kByJob, "a whole number of microseconds below 4000000"));
  t.yield_us = uint32_t(env.whole("NODEMPI_YIELD_US", 0, 4000000, t.yield_us, "a whole number of microseconds below 4000000"));
  if (const char* v = env("NODEMPI_KERNELS")) {
    if (!kernels::known_table(v)) {
      env.complain("NODEMPI_KERNELS", std::string("\"auto\" or a kernel table (") + kernels::table_names() + ")", v);
    } else if (std::strcmp(v, "auto") != 0) {
      t.kernels = v;
    }
  }
  static const char* const kOffOn[] = {"0", "1", nullptr};
  t.check_same = env.choice("NODEMPI_CHECK_SAME", kOffOn) != 0;
  t.huge_pages = env.choice("NODEMPI_HUGE_PAGES", kOffOn) != 0;
  static const char* const kPersistent[] = {"emulate", nullptr};
  t.emulate_persistent = env.choice("NODEMPI_MPI_PERSISTENT", kPersistent) == 0;
  std::string algo_errors;
  t.algo = coll::parse_forced_algos(env("NODEMPI_ALGO"), &algo_errors);
  if (!algo_errors.empty()) {
    if (!t.errors.empty()) t.errors += "; ";
    t.errors += "NODEMPI_ALGO: " + algo_errors;
  }
  return t;
}

const Tuning& tuning() { return current(); }

void retune() { current() = Tuning::from(from_environ); }

}  // namespace nodempi
