// Unit test of the datatype engine (native/core/datatype): parsing and
// checking descriptions, and pack/unpack against an independent reference.
// Plain C++, no framework: CHECK counts failures, main() exits non-zero if
// any. CTest runs it (CMakeLists.txt, NODEMPI_TESTS), optimised and sanitized.
// `datatype_test --bench` also times a strided pack against memcpy.
//
// What it covers:
//   1. descriptions as lib/datatype.ts writes them for: a vector with a
//      negative stride, indexed with unsorted displacements (as a LIST and as
//      an INDEXED node), a struct of mixed members with padding, 3-D
//      subarrays in C and Fortran order, a resized type with a negative lb,
//      nesting four deep; their size and true bounds (computed by hand);
//   2. pack and unpack of each, for several counts, against expected bytes
//      computed by hand and against a reference that expands the tree
//      naively; unpack leaves every byte outside the type map untouched;
//   3. chunked packing (any stream range) equals the whole;
//   4. counts up to 1e6, including the root loop merged across items;
//      every fixed-size and wide block copy, at strides of both signs;
//   5. errors: buffers too small or an origin that puts data outside them
//      (BUFFER), short streams (TRUNCATE), overflowing counts (COUNT),
//      malformed descriptions (TYPE), unknown handles (TYPE).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/datatype/pack.h"
#include "core/datatype/registry.h"
#include "core/datatype/typemap.h"
#include "core/error.h"

using namespace nodempi;
using namespace nodempi::datatype;

// ---- Check macro ------------------------------------------------------------

static int g_checks = 0;
static int g_failures = 0;
static std::string g_context;

#define CHECK(cond)                                                                          \
  do {                                                                                       \
    ++g_checks;                                                                              \
    if (!(cond)) {                                                                           \
      if (++g_failures <= 40)                                                                \
        std::fprintf(stderr, "%s:%d: CHECK(%s) failed [%s]\n", __FILE__, __LINE__, #cond,    \
                     g_context.c_str());                                                     \
    }                                                                                        \
  } while (0)

// Runs fn, which must throw CoreError of class `cls`.
static void expect_error(ErrorClass cls, const std::function<void()>& fn, const char* what) {
  ++g_checks;
  try {
    fn();
  } catch (const CoreError& e) {
    if (e.error_class() != cls) {
      ++g_failures;
      std::fprintf(stderr, "%s: threw class %d (%s), expected %d [%s]\n", what, int(e.error_class()), e.what(),
                   int(cls), g_context.c_str());
    }
    return;
  }
  ++g_failures;
  std::fprintf(stderr, "%s: did not throw [%s]\n", what, g_context.c_str());
}

// ---- Building descriptions (the wire format of typemap.h) --------------------

class Desc {
 public:
  int block(int64_t off, int64_t len) { return add({1, double(off), double(len)}); }
  int vector(int64_t off, int64_t n, int64_t stride, int child) {
    return add({2, double(off), double(n), double(stride), double(child)});
  }
  int list(int64_t off, const std::vector<std::pair<int64_t, int64_t>>& runs) {
    std::vector<double> w{3, double(off), double(runs.size())};
    for (auto& r : runs) w.insert(w.end(), {double(r.first), double(r.second)});
    return add(w);
  }
  int indexed(int64_t off, int64_t stride, int child, const std::vector<std::pair<int64_t, int64_t>>& runs) {
    std::vector<double> w{4, double(off), double(runs.size()), double(stride), double(child)};
    for (auto& r : runs) w.insert(w.end(), {double(r.first), double(r.second)});
    return add(w);
  }
  int strct(int64_t off, const std::vector<int>& children) {
    std::vector<double> w{5, double(off), double(children.size())};
    for (int c : children) w.push_back(c);
    return add(w);
  }
  // The words, with the header lib/ would write (root = last node).
  std::vector<double> words(int64_t extent, int64_t size, int64_t true_lb, int64_t true_ub) const {
    std::vector<double> w{1, double(nodes_), double(nodes_ - 1), double(extent), double(size), double(true_lb),
                          double(true_ub)};
    w.insert(w.end(), body_.begin(), body_.end());
    return w;
  }
  Typemap make(int64_t extent, int64_t size, int64_t true_lb, int64_t true_ub) const {
    std::vector<double> w = words(extent, size, true_lb, true_ub);
    return Typemap(w.data(), w.size());
  }

 private:
  int add(const std::vector<double>& w) {
    body_.insert(body_.end(), w.begin(), w.end());
    return nodes_++;
  }
  std::vector<double> body_;
  int nodes_ = 0;
};

// ---- The reference: expand the tree into runs, naively ---------------------------

using Runs = std::vector<std::pair<int64_t, int64_t>>;  // (user offset, length), stream order

static void expand(const Typemap& t, int32_t i, int64_t base, Runs& out) {
  const Node& n = t.node(i);
  int64_t p = base + n.off;
  switch (n.kind) {
    case Kind::BLOCK:
      out.emplace_back(p, n.size);
      break;
    case Kind::VECTOR:
      for (int64_t k = 0; k < n.n; ++k) expand(t, n.child, p + k * n.stride, out);
      break;
    case Kind::LIST:
      for (int64_t j = 0; j < n.n; ++j) out.emplace_back(p + t.entry(n.first + j).disp, t.entry(n.first + j).len);
      break;
    case Kind::INDEXED:
      for (int64_t j = 0; j < n.n; ++j) {
        const Entry& e = t.entry(n.first + j);
        for (int64_t k = 0; k < e.len; ++k) expand(t, n.child, p + e.disp + k * n.stride, out);
      }
      break;
    case Kind::STRUCT:
      for (int64_t j = 0; j < n.n; ++j) expand(t, t.entry(n.first + j).child, p, out);
      break;
  }
}

static Runs reference_runs(const Typemap& t, size_t count) {
  Runs runs;
  if (t.empty()) return runs;
  for (size_t i = 0; i < count; ++i) expand(t, int32_t(t.node_count() - 1), int64_t(i) * t.extent(), runs);
  return runs;
}

// A user buffer filled with a byte pattern, exactly `length` bytes long (so
// the sanitizer sees any access past it).
static std::vector<uint8_t> pattern(size_t length, uint8_t salt = 0) {
  std::vector<uint8_t> b(length);
  for (size_t i = 0; i < length; ++i) b[i] = uint8_t(i * 131 + (i >> 8) * 7 + salt + 1);
  return b;
}

// Pack `count` items at `origin` of a buffer of `length` bytes; compare
// with the reference, then unpack into a sentinel-filled buffer and check
// that exactly the type map's bytes changed. Returns the stream.
static std::vector<uint8_t> round_trip(const Typemap& t, size_t count, size_t length, int64_t origin) {
  std::vector<uint8_t> user = pattern(length);
  Runs runs = reference_runs(t, count);
  std::vector<uint8_t> expected;
  for (auto& r : runs)
    for (int64_t k = 0; k < r.second; ++k) expected.push_back(user[size_t(origin + r.first + k)]);
  CHECK(expected.size() == size_t(t.size()) * count);

  std::vector<uint8_t> stream(expected.size());
  size_t n = pack(t, UserBuffer{user.data(), user.size(), origin}, count, stream.data(), stream.size());
  CHECK(n == expected.size());
  CHECK(stream == expected);

  // Unpack into a buffer of sentinels: the type map's bytes take the
  // stream's values (the last write wins where runs overlap), nothing else
  // changes.
  std::vector<uint8_t> back(length, 0xEE), want(length, 0xEE);
  size_t at = 0;
  for (auto& r : runs)
    for (int64_t k = 0; k < r.second; ++k) want[size_t(origin + r.first + k)] = stream[at++];
  size_t m = unpack(t, stream.data(), stream.size(), UserBuffer{back.data(), back.size(), origin}, count);
  CHECK(m == expected.size());
  CHECK(back == want);
  return stream;
}

// Packing and unpacking in chunks of random sizes gives the same bytes.
static void chunked(const Typemap& t, size_t count, size_t length, int64_t origin, unsigned seed) {
  std::vector<uint8_t> user = pattern(length, 3);
  UserBuffer ub{user.data(), user.size(), origin};
  uint64_t total = stream_bytes(t, count);
  std::vector<uint8_t> whole(total);
  pack(t, ub, count, whole.data(), whole.size());
  std::mt19937 rng(seed);
  for (int round = 0; round < 4; ++round) {
    std::vector<uint8_t> pieces;
    std::vector<uint8_t> back(length, 0xEE), ref(length, 0xEE);
    unpack(t, whole.data(), whole.size(), UserBuffer{ref.data(), ref.size(), origin}, count);
    uint64_t first = 0;
    while (first < total) {
      uint64_t maxlen = round == 0 ? 1 : round == 1 ? 7 : total / 3 + 1;
      uint64_t len = std::min<uint64_t>(total - first, 1 + rng() % maxlen);
      std::vector<uint8_t> chunk(len);
      CHECK(pack(t, ub, count, chunk.data(), chunk.size(), first, first + len) == len);
      unpack(t, chunk.data(), chunk.size(), UserBuffer{back.data(), back.size(), origin}, count, first, first + len);
      pieces.insert(pieces.end(), chunk.begin(), chunk.end());
      first += len;
    }
    CHECK(pieces == whole);
    CHECK(back == ref);
  }
}

// ---- 1, 2, 3: the shapes ----------------------------------------------------------

// Every block length the packer copies with a fixed-size move (1, 2, 4, 8,
// 12, 16, 24, 32), one it does not (40), at strides that take its wide
// 8-byte paths (16 and 32: masked stores; any stride: four blocks per store)
// and ones that do not, negative included; counts around the widths of
// those paths (their tails), whole and in chunks, single vectors and items
// that continue the root loop.
static void test_block_sizes() {
  for (int64_t len : {1, 2, 4, 8, 12, 16, 24, 32, 40}) {
    for (int64_t gap : {0, 8, 16, 24, 56}) {
      for (int sign : {1, -1}) {
        const int64_t stride = sign * (len + gap);
        for (int64_t n : {1, 2, 3, 4, 5, 7, 8, 9, 33}) {
          g_context = "vector(" + std::to_string(n) + ", block " + std::to_string(len) + ", stride " +
                      std::to_string(stride) + ")";
          Desc d;
          d.vector(0, n, stride, d.block(0, len));
          const int64_t lo = std::min<int64_t>(0, (n - 1) * stride), hi = std::max<int64_t>(0, (n - 1) * stride) + len;
          // extent hi - lo: items follow one another; n * stride: a positive
          // stride lets them continue one vector.
          for (int64_t extent : {hi - lo, sign > 0 ? n * stride : hi - lo}) {
            Typemap t = d.make(extent, n * len, lo, hi);
            for (size_t count : {1, 2, 3}) {
              int64_t span_lo, span_hi;
              t.span(count, span_lo, span_hi);
              round_trip(t, count, size_t(span_hi - span_lo), -span_lo);
            }
            int64_t c_lo, c_hi;
            t.span(3, c_lo, c_hi);
            chunked(t, 3, size_t(c_hi - c_lo), -c_lo, unsigned(n * 131 + len));
          }
        }
      }
    }
  }
}


// Datatype.vector(3, 2, -4, DOUBLE): blocks of 16 bytes at 0, -32, -64.
static void test_negative_stride() {
  g_context = "vector(3, 2, -4, DOUBLE)";
  Desc d;
  d.vector(0, 3, -32, d.block(0, 16));
  Typemap t = d.make(80, 48, -64, 16);
  CHECK(t.size() == 48 && t.true_lb() == -64 && t.true_ub() == 16 && t.extent() == 80);
  // One item at origin 64 of 80 bytes: stream = bytes 64..79, 32..47, 0..15.
  std::vector<uint8_t> s = round_trip(t, 1, 80, 64);
  std::vector<uint8_t> user = pattern(80), want;
  for (int start : {64, 32, 0})
    for (int k = 0; k < 16; ++k) want.push_back(user[size_t(start + k)]);
  CHECK(s == want);
  for (size_t count : {0, 1, 2, 5}) round_trip(t, count, 64 + 80 * count + 16, 64);
  chunked(t, 5, 64 + 400 + 16, 64, 1);
  // The span of 3 items at origin 64 is [0, 240): 239 bytes is one short,
  // origin 63 puts byte -1 in it.
  std::vector<uint8_t> buf(240), out(3 * 48);
  expect_error(ErrorClass::BUFFER, [&] { pack(t, UserBuffer{buf.data(), 239, 64}, 3, out.data(), out.size()); },
               "pack past the end");
  expect_error(ErrorClass::BUFFER, [&] { pack(t, UserBuffer{buf.data(), 240, 63}, 3, out.data(), out.size()); },
               "pack before the start");
  expect_error(ErrorClass::BUFFER,
               [&] { unpack(t, out.data(), out.size(), UserBuffer{buf.data(), 240, 63}, 3); }, "unpack before the start");
}

// Datatype.indexed([2, 1, 3], [5, 0, 2], INT): runs of 8, 4, 12 bytes at 20, 0, 8.
static void test_indexed_unsorted() {
  g_context = "indexed([2, 1, 3], [5, 0, 2], INT)";
  Desc d;
  d.list(0, {{20, 8}, {0, 4}, {8, 12}});
  Typemap t = d.make(28, 24, 0, 28);
  std::vector<uint8_t> s = round_trip(t, 1, 28, 0);
  std::vector<uint8_t> user = pattern(28), want;
  for (auto r : std::vector<std::pair<int, int>>{{20, 8}, {0, 4}, {8, 12}})
    for (int k = 0; k < r.second; ++k) want.push_back(user[size_t(r.first + k)]);
  CHECK(s == want);
  for (size_t count : {2, 7}) round_trip(t, count, 28 * count, 0);
  chunked(t, 7, 28 * 7, 0, 2);

  // Indexed over a non-block child: child = vector(2, 1, 3, INT) (two ints
  // 12 bytes apart, extent 16); Datatype.indexed([2, 1], [3, 0], child):
  // runs of 2 children at 48 and of 1 at 0, children 16 bytes apart.
  g_context = "indexed([2, 1], [3, 0], vector(2, 1, 3, INT))";
  Desc e;
  e.indexed(0, 16, e.vector(0, 2, 12, e.block(0, 4)), {{48, 2}, {0, 1}});
  Typemap u = e.make(80, 24, 0, 80);
  s = round_trip(u, 1, 80, 0);
  user = pattern(80);
  want.clear();
  for (int start : {48, 60, 64, 76, 0, 12})
    for (int k = 0; k < 4; ++k) want.push_back(user[size_t(start + k)]);
  CHECK(s == want);
  round_trip(u, 3, 240, 0);
  chunked(u, 3, 240, 0, 3);
}

// struct { int a; double b[2] (every other double); short c; } as
// Datatype.struct([1, 2, 1], [0, 8, 40], [INT, resized(DOUBLE, 0, 16), SHORT])
// would be if the middle member were a vector: block(4), vector(2 x 16,
// block(8)) at 8, block(2) at 40; size 22, true extent 42, extent padded to 48.
static void test_struct_padding() {
  g_context = "struct {int; 2 x double, stride 16; short}";
  Desc d;
  int a = d.block(0, 4);
  int b = d.vector(8, 2, 16, d.block(0, 8));
  int c = d.block(40, 2);
  d.strct(0, {a, b, c});
  Typemap t = d.make(48, 22, 0, 42);
  CHECK(t.root().kind == Kind::STRUCT);
  std::vector<uint8_t> s = round_trip(t, 1, 48, 0);
  std::vector<uint8_t> user = pattern(48), want;
  for (auto r : std::vector<std::pair<int, int>>{{0, 4}, {8, 8}, {24, 8}, {40, 2}})
    for (int k = 0; k < r.second; ++k) want.push_back(user[size_t(r.first + k)]);
  CHECK(s == want);
  // Three items: the padding between them (bytes 42..47 of each) is never
  // touched, and the buffer may end right after the last member.
  round_trip(t, 3, 2 * 48 + 42, 0);
  chunked(t, 3, 2 * 48 + 42, 0, 4);

  // struct { char; double } laid out by lib/ as list(0+1, 8+8): size 9,
  // extent 16.
  g_context = "struct {char; double}";
  Desc e;
  e.list(0, {{0, 1}, {8, 8}});
  Typemap u = e.make(16, 9, 0, 16);
  round_trip(u, 4, 64, 0);
}

// Datatype.subarray([4, 5, 6], [2, 3, 4], [1, 1, 2], order, INT).
static void test_subarray(bool c_order) {
  g_context = c_order ? "subarray C" : "subarray F";
  const int64_t sizes[3] = {4, 5, 6}, subs[3] = {2, 3, 4}, starts[3] = {1, 1, 2};
  // Byte stride of each dimension.
  int64_t stride[3];
  if (c_order) {
    stride[2] = 4, stride[1] = 4 * sizes[2], stride[0] = 4 * sizes[2] * sizes[1];
  } else {
    stride[0] = 4, stride[1] = 4 * sizes[0], stride[2] = 4 * sizes[0] * sizes[1];
  }
  // lib/ builds loops from the fastest dimension outwards; the innermost
  // loop of 4-byte blocks 4 bytes apart collapses to one block.
  int fast = c_order ? 2 : 0, mid = 1, slow = c_order ? 0 : 2;
  Desc dd;
  int inner = dd.block(starts[fast] * stride[fast], subs[fast] * 4);
  int n1 = dd.vector(starts[mid] * stride[mid], subs[mid], stride[mid], inner);
  dd.vector(starts[slow] * stride[slow], subs[slow], stride[slow], n1);
  int64_t lo = 0, hi = 0;
  for (int i = 0; i < 3; ++i) {
    lo += starts[i] * stride[i];
    hi += (starts[i] + subs[i] - 1) * stride[i];
  }
  Typemap t = dd.make(4 * 4 * 5 * 6, 4 * 2 * 3 * 4, lo, hi + 4);
  // Expected by the formula, fastest index innermost.
  std::vector<uint8_t> user = pattern(480), want;
  for (int64_t a = 0; a < subs[slow]; ++a)
    for (int64_t b = 0; b < subs[mid]; ++b)
      for (int64_t c = 0; c < subs[fast]; ++c) {
        int64_t off = (starts[slow] + a) * stride[slow] + (starts[mid] + b) * stride[mid] +
                      (starts[fast] + c) * stride[fast];
        for (int k = 0; k < 4; ++k) want.push_back(user[size_t(off + k)]);
      }
  std::vector<uint8_t> s = round_trip(t, 1, 480, 0);
  CHECK(s == want);
  round_trip(t, 3, 3 * 480, 0);
  chunked(t, 3, 3 * 480, 0, c_order ? 5 : 6);
}

// resized(struct {double at -8; double at 8}, -8, 24): data at -8 and 8,
// items 24 bytes apart; three items at origin 8 span bytes [0, 72).
static void test_resized_negative_lb() {
  g_context = "resized with lb -8";
  Desc d;
  d.list(0, {{-8, 8}, {8, 8}});
  Typemap t = d.make(24, 16, -8, 16);
  std::vector<uint8_t> s = round_trip(t, 3, 72, 8);
  std::vector<uint8_t> user = pattern(72), want;
  for (int start : {0, 16, 24, 40, 48, 64})
    for (int k = 0; k < 8; ++k) want.push_back(user[size_t(start + k)]);
  CHECK(s == want);
  chunked(t, 3, 72, 8, 7);
  std::vector<uint8_t> buf(72), out(48);
  expect_error(ErrorClass::BUFFER, [&] { pack(t, UserBuffer{buf.data(), 72, 0}, 3, out.data(), 48); },
               "origin 0 puts byte -8 in the span");
  int64_t lo, hi;
  t.span(3, lo, hi);
  CHECK(lo == -8 && hi == 64);
}

// Four levels: vector over indexed over struct over vector.
//   L1 = vector(2 x 6, block(4))                 ints at 0 and 6   (size 8)
//   L2 = struct(block(2), L1 at 4)               short at 0, L1 at 4 (size 10, extent 16)
//   L3 = indexed(stride 16, L2, {(64, 2), (0, 1)})                (size 30)
//   L4 = vector(3 x 100, L3) at 10                                (size 90)
static void test_nesting() {
  g_context = "nesting 4 deep";
  Desc d;
  int l1 = d.vector(4, 2, 6, d.block(0, 4));
  int l2 = d.strct(0, {d.block(0, 2), l1});
  int l3 = d.indexed(0, 16, l2, {{64, 2}, {0, 1}});
  d.vector(10, 3, 100, l3);
  // Bytes: L1 touches [4, 14), L2 [0, 14), L3 [0, 80 + 14), L4 [10, 10 + 200 + 94).
  Typemap t = d.make(320, 90, 10, 304);
  std::vector<uint8_t> user = pattern(320), want;
  for (int v = 0; v < 3; ++v)
    for (int l3off : {64, 80, 0}) {
      int base = 10 + v * 100 + l3off;
      for (auto r : std::vector<std::pair<int, int>>{{0, 2}, {4, 4}, {10, 4}})
        for (int k = 0; k < r.second; ++k) want.push_back(user[size_t(base + r.first + k)]);
    }
  std::vector<uint8_t> s = round_trip(t, 1, 320, 0);
  CHECK(s == want);
  round_trip(t, 4, 4 * 320, 0);
  chunked(t, 4, 4 * 320, 0, 8);
}

// ---- 4: large counts ----------------------------------------------------------------

static void test_large_counts() {
  g_context = "1e6 doubles, stride 2";
  {
    // Datatype.DOUBLE resized to extent 16: block(8), extent 16.
    Desc d;
    d.block(0, 8);
    Typemap t = d.make(16, 8, 0, 8);
    const size_t count = 1000000;
    std::vector<double> src(2 * count);
    for (size_t i = 0; i < src.size(); ++i) src[i] = double(i);
    std::vector<double> out(count);
    UserBuffer ub{reinterpret_cast<uint8_t*>(src.data()), src.size() * 8 - 8, 0};  // the last hole is not needed
    pack(t, ub, count, reinterpret_cast<uint8_t*>(out.data()), out.size() * 8);
    bool ok = true;
    for (size_t i = 0; i < count; ++i) ok &= out[i] == double(2 * i);
    CHECK(ok);
    std::vector<double> back(2 * count - 1, -1.0);
    unpack(t, reinterpret_cast<uint8_t*>(out.data()), out.size() * 8,
           UserBuffer{reinterpret_cast<uint8_t*>(back.data()), back.size() * 8, 0}, count);
    ok = true;
    for (size_t i = 0; i < back.size(); ++i) ok &= back[i] == (i % 2 ? -1.0 : double(i));
    CHECK(ok);
  }
  g_context = "vector tiling its extent, 250000 items";
  {
    // vector(4, 1, 2, DOUBLE) resized to extent 64: the root loop continues
    // across items (one loop of 1e6).
    Desc d;
    d.vector(0, 4, 16, d.block(0, 8));
    Typemap t = d.make(64, 32, 0, 56);
    const size_t count = 250000;
    std::vector<double> src(8 * count);
    for (size_t i = 0; i < src.size(); ++i) src[i] = double(i);
    std::vector<double> out(4 * count);
    pack(t, UserBuffer{reinterpret_cast<uint8_t*>(src.data()), src.size() * 8, 0}, count,
         reinterpret_cast<uint8_t*>(out.data()), out.size() * 8);
    bool ok = true;
    for (size_t i = 0; i < out.size(); ++i) ok &= out[i] == double(2 * i);
    CHECK(ok);
    chunked(t, 1000, 64000, 0, 9);
  }
  g_context = "1e6 dense items";
  {
    Desc d;
    d.block(0, 12);  // e.g. contiguous(3, INT)
    Typemap t = d.make(12, 12, 0, 12);
    round_trip(t, 1000000, 12000000, 0);
  }
  g_context = "1e6 struct items";
  {
    Desc d;
    d.list(0, {{0, 2}, {4, 4}});  // SHORT_INT
    Typemap t = d.make(8, 6, 0, 8);
    round_trip(t, 1000000, 8000000, 0);
  }
}

// ---- 5: errors -------------------------------------------------------------------------

static Typemap parse(const std::vector<double>& w) { return Typemap(w.data(), w.size()); }

static void test_errors() {
  g_context = "errors";
  Desc d;
  d.block(0, 8);
  Typemap t = d.make(8, 8, 0, 8);
  std::vector<uint8_t> buf(80), out(80);
  expect_error(ErrorClass::TRUNCATE, [&] { pack(t, UserBuffer{buf.data(), 80, 0}, 10, out.data(), 79); },
               "pack into a short stream");
  expect_error(ErrorClass::TRUNCATE, [&] { unpack(t, out.data(), 79, UserBuffer{buf.data(), 80, 0}, 10); },
               "unpack from a short stream");
  expect_error(ErrorClass::BUFFER, [&] { unpack(t, out.data(), 80, UserBuffer{buf.data(), 79, 0}, 10); },
               "unpack past the end");
  expect_error(ErrorClass::BUFFER, [&] { pack(t, UserBuffer{buf.data(), 80, 1}, 10, out.data(), 80); },
               "origin 1 pushes the last byte out");
  expect_error(ErrorClass::COUNT, [&] { pack(t, UserBuffer{buf.data(), 80, 0}, SIZE_MAX / 4, out.data(), 80); },
               "count overflow");
  expect_error(ErrorClass::ARG, [&] { pack(t, UserBuffer{buf.data(), 80, 0}, 10, out.data(), 80, 5, 81); },
               "range past the stream");
  // Nothing touched: count 0 and empty types need no bytes at all.
  CHECK(pack(t, UserBuffer{buf.data(), 0, 0}, 0, out.data(), 0) == 0);
  Typemap empty = parse({1, 0, -1, 16, 0, 0, 0});
  CHECK(empty.empty() && empty.size() == 0);
  CHECK(pack(empty, UserBuffer{buf.data(), 0, 0}, 1000, out.data(), 0) == 0);

  // Malformed descriptions.
  auto bad = [](std::vector<double> w, const char* what) {
    expect_error(ErrorClass::TYPE, [&] { parse(w); }, what);
  };
  bad({}, "empty");
  bad({2, 1, 0, 8, 8, 0, 8, 1, 0, 8}, "unknown version");
  bad({1, 1, 0, 8, 8, 0, 8, 1, 0, 8, 99}, "trailing words");
  bad({1, 1, 0, 8, 8, 0, 8, 1, 0}, "truncated");
  bad({1, 1, 0, 8, 8, 0, 8, 1, 0, 0}, "zero-length block");
  bad({1, 1, 0, 8, 8, 0, 8, 1, 0, 8.5}, "fractional length");
  bad({1, 1, 0, 8, 8, 0, 8, 1, 0, 1e300}, "huge length");
  bad({1, 1, 0, 8, 9, 0, 8, 1, 0, 8}, "header size disagrees");
  bad({1, 1, 0, 8, 8, -1, 8, 1, 0, 8}, "header true lb disagrees");
  bad({1, 1, 0, 8, 8, 0, 8, 2, 0, 2, 8, 0}, "vector child is itself");
  bad({1, 2, 1, 8, 16, 0, 16, 2, 0, 2, 8, 1, 1, 0, 8}, "vector child comes later");
  bad({1, 1, 0, 8, 8, 0, 8, 7, 0, 8}, "unknown kind");
  bad({1, 1, 0, 8, 0, 0, 0, 3, 0, 0}, "empty list");
  bad({1, 2, 0, 8, 8, 0, 8, 1, 0, 8, 1, 0, 8}, "root not last");
  bad({1, 2, 1, 8, 8, 0, 8, 1, 0, 8, 2, 0, 1e15, 1e15, 0}, "vector bounds overflow");
  bad({1, 0, -1, 8, 1, 0, 0}, "empty with a size");

  // The registry.
  Registry reg;
  uint32_t h1 = reg.add(std::make_shared<const Typemap>(d.make(8, 8, 0, 8)));
  uint32_t h2 = reg.add(std::make_shared<const Typemap>(d.make(16, 8, 0, 8)));
  CHECK(h1 == 1 && h2 == 2 && reg.live() == 2);
  std::shared_ptr<const Typemap> held = reg.get(h2);
  reg.release(h2);
  CHECK(held->extent() == 16);  // still usable by whoever holds it
  expect_error(ErrorClass::TYPE, [&] { reg.get(h2); }, "released handle");
  expect_error(ErrorClass::TYPE, [&] { reg.get(0); }, "handle 0");
  expect_error(ErrorClass::TYPE, [&] { reg.get(77); }, "unknown handle");
  reg.release(77);
  CHECK(reg.add(held) == h2 && reg.live() == 2);
}

// Size and true bounds of a description, computed straight from its words
// (independently of the parser), to fill in the header.
static void reference_header(std::vector<double>& w, int64_t extent) {
  std::vector<int64_t> sz, nlo, nhi;
  size_t at = 7;
  auto word = [&](size_t i) { return int64_t(w[at + i]); };
  while (at < w.size()) {
    int64_t kind = word(0), off = word(1), s = 0, l = INT64_MAX, h = INT64_MIN;
    if (kind == 1) {
      s = word(2), l = 0, h = s;
      at += 3;
    } else if (kind == 2) {
      int64_t n = word(2), st = word(3);
      size_t c = size_t(word(4));
      s = n * sz[c];
      l = nlo[c] + std::min<int64_t>(0, (n - 1) * st);
      h = nhi[c] + std::max<int64_t>(0, (n - 1) * st);
      at += 5;
    } else if (kind == 3) {
      int64_t m = word(2);
      for (int64_t j = 0; j < m; ++j) {
        int64_t dd = word(3 + 2 * size_t(j)), ll = word(4 + 2 * size_t(j));
        s += ll, l = std::min(l, dd), h = std::max(h, dd + ll);
      }
      at += 3 + 2 * size_t(m);
    } else if (kind == 4) {
      int64_t m = word(2), st = word(3);
      size_t c = size_t(word(4));
      for (int64_t j = 0; j < m; ++j) {
        int64_t dd = word(5 + 2 * size_t(j)), cnt = word(6 + 2 * size_t(j));
        s += cnt * sz[c];
        l = std::min(l, dd + nlo[c] + std::min<int64_t>(0, (cnt - 1) * st));
        h = std::max(h, dd + nhi[c] + std::max<int64_t>(0, (cnt - 1) * st));
      }
      at += 5 + 2 * size_t(m);
    } else {
      int64_t m = word(2);
      for (int64_t j = 0; j < m; ++j) {
        size_t c = size_t(word(3 + size_t(j)));
        s += sz[c], l = std::min(l, nlo[c]), h = std::max(h, nhi[c]);
      }
      at += 3 + size_t(m);
    }
    sz.push_back(s);
    nlo.push_back(off + l);
    nhi.push_back(off + h);
  }
  w[3] = double(extent);
  w[4] = double(sz.back());
  w[5] = double(nlo.back());
  w[6] = double(nhi.back());
}

// Random trees of every node kind (overlapping, negative and zero strides
// included), against the reference.
static void test_random_trees() {
  std::mt19937 rng(12345);
  for (int round = 0; round < 300; ++round) {
    g_context = "random tree " + std::to_string(round);
    Desc d;
    std::function<int(int)> make = [&](int depth) -> int {
      int kind = depth == 0 ? 1 : 1 + int(rng() % 5);
      int64_t off = int64_t(rng() % 9) - 4;
      switch (kind) {
        case 1: return d.block(off, 1 + rng() % 12);
        case 2: {
          int c = make(depth - 1);
          return d.vector(off, 1 + rng() % 4, int64_t(rng() % 61) - 30, c);
        }
        case 3: {
          Runs runs;
          for (int j = 0, m = 1 + int(rng() % 4); j < m; ++j) runs.emplace_back(int64_t(rng() % 41) - 20, 1 + rng() % 6);
          return d.list(off, runs);
        }
        case 4: {
          int c = make(depth - 1);
          Runs runs;
          for (int j = 0, m = 1 + int(rng() % 3); j < m; ++j) runs.emplace_back(int64_t(rng() % 81) - 40, 1 + rng() % 3);
          return d.indexed(off, int64_t(rng() % 41) - 20, c, runs);
        }
        default: {
          std::vector<int> cs;
          for (int j = 0, m = 1 + int(rng() % 3); j < m; ++j) cs.push_back(make(depth - 1));
          return d.strct(off, cs);
        }
      }
    };
    make(1 + int(rng() % 4));
    std::vector<double> w = d.words(0, 0, 0, 0);
    reference_header(w, int64_t(rng() % 50) - 10);
    Typemap t(w.data(), w.size());
    // The parser agrees with the reference runs too.
    Runs runs = reference_runs(t, 1);
    int64_t size = 0, lo = INT64_MAX, hi = INT64_MIN;
    for (auto& r : runs) size += r.second, lo = std::min(lo, r.first), hi = std::max(hi, r.first + r.second);
    CHECK(t.size() == size && t.true_lb() == lo && t.true_ub() == hi);

    size_t count = 1 + rng() % 5;
    int64_t slo, shi;
    t.span(count, slo, shi);
    int64_t origin = -slo;
    size_t length = size_t(shi - slo);
    round_trip(t, count, length, origin);
    chunked(t, count, length, origin, unsigned(round));
    // One byte less at either end is refused.
    std::vector<uint8_t> buf(length), out(size_t(t.size()) * count);
    expect_error(ErrorClass::BUFFER,
                 [&] { pack(t, UserBuffer{buf.data(), length - 1, origin}, count, out.data(), out.size()); },
                 "random: one byte short at the end");
    expect_error(ErrorClass::BUFFER,
                 [&] { pack(t, UserBuffer{buf.data(), length, origin - 1}, count, out.data(), out.size()); },
                 "random: one byte short at the start");
  }
}

// ---- Benchmark --------------------------------------------------------------------------

static double best_seconds(const std::function<void()>& fn, int reps) {
  double best = 1e9;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

static void bench() {
  // `kib` KiB of doubles picked with stride 2 from an array twice that size
  // (vector(n, 1, 2, DOUBLE)), against memcpy of the same bytes. The vector
  // reads every cache line of its span, so memcpy of the whole span (into
  // the same output, twice) is also shown: what the memory traffic costs.
  for (size_t kib : {64, 1024}) {
    const size_t n = kib * 1024 / 8;
    std::vector<double> src(2 * n, 1.5), dst(n), back(2 * n);
    Desc d;
    d.vector(0, int64_t(n), 16, d.block(0, 8));
    Typemap t = d.make(int64_t(16 * n - 8), int64_t(8 * n), 0, int64_t(16 * n - 8));
    UserBuffer ub{reinterpret_cast<uint8_t*>(src.data()), src.size() * 8, 0};
    UserBuffer bb{reinterpret_cast<uint8_t*>(back.data()), back.size() * 8, 0};
    uint8_t* out = reinterpret_cast<uint8_t*>(dst.data());
    int reps = kib < 1024 ? 2000 : 200;
    double tp = best_seconds([&] { pack(t, ub, 1, out, n * 8); }, reps);
    double tu = best_seconds([&] { unpack(t, out, n * 8, bb, 1); }, reps);
    double tm = best_seconds([&] { std::memcpy(out, src.data(), n * 8); asm volatile("" ::: "memory"); }, reps);
    double ts = best_seconds(
        [&] {
          std::memcpy(out, src.data(), n * 8);
          std::memcpy(out, src.data() + n, n * 8);
          asm volatile("" ::: "memory");
        },
        reps);
    double gib = double(kib) / 1024 / 1024;
    std::printf("bench: %zu KiB of doubles, stride 2: pack %.1f us (%.1f GiB/s), unpack %.1f us (%.1f GiB/s); "
                "memcpy of the %zu KiB %.1f us (%.1f GiB/s); memcpy of the %zu KiB span %.1f us\n",
                kib, tp * 1e6, gib / tp, tu * 1e6, gib / tu, kib, tm * 1e6, gib / tm, 2 * kib, ts * 1e6);
  }
}

int main(int argc, char** argv) try {
  test_block_sizes();
  test_negative_stride();
  test_indexed_unsorted();
  test_struct_padding();
  test_subarray(true);
  test_subarray(false);
  test_resized_negative_lb();
  test_nesting();
  test_large_counts();
  test_errors();
  test_random_trees();
  if (argc > 1 && std::strcmp(argv[1], "--bench") == 0) bench();
  if (g_failures) {
    std::fprintf(stderr, "datatype_test: %d of %d checks failed\n", g_failures, g_checks);
    return 1;
  }
  std::printf("datatype_test: %d checks passed\n", g_checks);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "datatype_test: unexpected exception [%s]: %s\n", g_context.c_str(), e.what());
  return 1;
}
