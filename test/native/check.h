// What the C++ tests of the transport, the progress lanes and the
// collectives share: a CHECK that counts failures from any thread (and,
// through exit codes, from forked ranks), expect_error for calls that must
// throw CoreError of one class, and the tests' own short/long switch.
#pragma once
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.h"
#include "long_form.h"

namespace nodempi::test {

inline std::atomic<int> g_checks{0};
inline std::atomic<int> g_failures{0};
// What the calling thread is testing, printed with its failures.
inline thread_local std::string g_context;

inline void fail(const char* file, int line, const std::string& what) {
  if (g_failures.fetch_add(1) < 40) {
    std::fprintf(stderr, "%s:%d: %s [%s]\n", file, line, what.c_str(), g_context.c_str());
  }
}

#define CHECK(cond)                                                                 \
  do {                                                                              \
    ::nodempi::test::g_checks.fetch_add(1, std::memory_order_relaxed);              \
    if (!(cond)) ::nodempi::test::fail(__FILE__, __LINE__, "CHECK(" #cond ") failed"); \
  } while (0)

// CHECK(a == b) that prints both values (integers).
#define CHECK_EQ(a, b)                                                                       \
  do {                                                                                       \
    ::nodempi::test::g_checks.fetch_add(1, std::memory_order_relaxed);                       \
    auto check_a_ = (a);                                                                     \
    auto check_b_ = (b);                                                                     \
    if (!(check_a_ == check_b_)) {                                                           \
      ::nodempi::test::fail(__FILE__, __LINE__,                                              \
                            std::string("CHECK_EQ(" #a ", " #b ") failed: ") +               \
                                std::to_string(check_a_) + " != " + std::to_string(check_b_)); \
    }                                                                                        \
  } while (0)

// CHECK(a == b) for strings, printing both.
#define CHECK_STR(a, b)                                                                           \
  do {                                                                                            \
    ::nodempi::test::g_checks.fetch_add(1, std::memory_order_relaxed);                            \
    const std::string check_a_ = (a);                                                             \
    const std::string check_b_ = (b);                                                             \
    if (check_a_ != check_b_) {                                                                   \
      ::nodempi::test::fail(__FILE__, __LINE__,                                                   \
                            std::string("CHECK_STR(" #a ", " #b ") failed:\n  ") + check_a_ + "\n  " + check_b_); \
    }                                                                                             \
  } while (0)

// Runs fn, which must throw CoreError of class `cls` with `needle` in its
// message (when given). Returns the message.
template <class Fn>
std::string expect_error(const char* file, int line, ErrorClass cls, const char* needle, Fn&& fn) {
  g_checks.fetch_add(1, std::memory_order_relaxed);
  try {
    fn();
  } catch (const CoreError& e) {
    if (e.error_class() != cls) {
      fail(file, line, "threw class " + std::to_string(int(e.error_class())) + " (" + e.what() + "), expected " +
                           std::to_string(int(cls)));
    } else if (needle && !std::strstr(e.what(), needle)) {
      fail(file, line, std::string("message \"") + e.what() + "\" lacks \"" + needle + "\"");
    }
    return e.what();
  }
  fail(file, line, "did not throw");
  return {};
}
#define EXPECT_ERROR(cls, needle, ...) \
  ::nodempi::test::expect_error(__FILE__, __LINE__, ::nodempi::ErrorClass::cls, needle, __VA_ARGS__)

// The summary line every test program ends with; its exit code.
inline int summary(const char* program) {
  int f = g_failures.load();
  std::printf("%s: %d checks, %d failures\n", program, g_checks.load(), f);
  return f == 0 ? 0 : 1;
}

}  // namespace nodempi::test
