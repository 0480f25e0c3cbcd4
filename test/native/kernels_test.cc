// Unit test of the predefined reduction kernels (native/core/kernels).
// Plain C++, no framework: CHECK counts failures, main() exits non-zero if
// any. CTest runs it (CMakeLists.txt, NODEMPI_TESTS), optimised and sanitized.
//
// What it covers:
//   1. the op x type table: present exactly where MPI 4.1 defines a reduction;
//   2. NODEMPI_KERNELS and select_isa();
//   3. hand-picked values: wrap-around, -0.0 and NaN, complex products,
//      logical normalisation, MAXLOC/MINLOC ties, long double precision;
//   4. every kernel against an independent reference written here, over
//      many lengths (a million items in the long form), unaligned
//      pointers and the out==a / out==b forms;
//   5. every table this CPU supports, bit for bit against the scalar table;
//   6. FLOAT16 and BFLOAT16 on every one of their 65536 values against the
//      reference, with second operands that make every kind of rounding.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <sys/wait.h>
#include <type_traits>
#include <unistd.h>
#include <vector>

#include "core/kernels/kernels.h"
#include "long_form.h"

using namespace nodempi::kernels;

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the reference assumes little-endian");

// ---- Check macro ------------------------------------------------------------

// The long form (long_form.h: npm run test:asan) adds the million-item
// lengths. The kernels take no path of their own at that size (their
// widest loop step is 4 vectors, 256 items; 1000 items run it several
// times and every tail), and those lengths were most of the short form's
// time, under ASan and under qemu (test/packaging/prebuilds.test.ts) most
// of all.
using nodempi::test::long_form;

static int g_checks = 0;
static int g_failures = 0;
static std::string g_context;  // what is being tested, printed with failures

#define CHECK(cond)                                                                     \
  do {                                                                                  \
    ++g_checks;                                                                         \
    if (!(cond)) {                                                                      \
      if (++g_failures <= 40)                                                           \
        std::fprintf(stderr, "%s:%d: CHECK(%s) failed [%s] (active table %s)\n",        \
                     __FILE__, __LINE__, #cond, g_context.c_str(), active_isa());       \
    }                                                                                   \
  } while (0)

// ---- Names and sizes, written out independently of the library ---------------

constexpr int kOps = static_cast<int>(OpId::COUNT);
constexpr int kTypes = static_cast<int>(TypeId::COUNT);

const char* op_label(OpId op) {
  static const char* const names[] = {"MAX",  "MIN",  "SUM",  "PROD",   "LAND",   "BAND",    "LOR",
                                      "BOR",  "LXOR", "BXOR", "MAXLOC", "MINLOC", "REPLACE", "NO_OP"};
  static_assert(sizeof(names) / sizeof(names[0]) == kOps);
  return names[static_cast<int>(op)];
}

struct TypeInfo {
  const char* name;
  size_t size;
};
const TypeInfo kTypeInfo[] = {
    {"I8", 1},         {"U8", 1},          {"I16", 2},       {"U16", 2},        {"I32", 4},
    {"U32", 4},        {"I64", 8},         {"U64", 8},       {"F32", 4},        {"F64", 8},
    {"F80", 16},       {"C32", 8},         {"C64", 16},      {"C80", 32},       {"BOOL", 1},
    {"LOGICAL", 4},    {"BYTE", 1},        {"FLOAT_INT", 8}, {"DOUBLE_INT", 16}, {"LONG_INT", 16},
    {"TWO_INT", 8},    {"SHORT_INT", 8},   {"LONG_DOUBLE_INT", 32},              {"TWO_FLOAT", 8},
    {"TWO_DOUBLE", 16}, {"F16", 2},         {"BF16", 2},
};
static_assert(sizeof(kTypeInfo) / sizeof(kTypeInfo[0]) == kTypes);

const char* type_label(TypeId t) { return kTypeInfo[static_cast<int>(t)].name; }
size_t size_of(TypeId t) { return kTypeInfo[static_cast<int>(t)].size; }

bool is_integer(TypeId t) { return t <= TypeId::U64; }
bool is_real(TypeId t) { return t >= TypeId::F32 && t <= TypeId::F80; }
bool is_complex(TypeId t) { return t >= TypeId::C32 && t <= TypeId::C80; }
bool is_pair(TypeId t) { return t >= TypeId::FLOAT_INT && t <= TypeId::TWO_DOUBLE; }
bool is_half(TypeId t) { return t == TypeId::F16 || t == TypeId::BF16; }

// The MPI 4.1 table (section 6.9.2), restated.
bool defined(OpId op, TypeId t) {
  switch (op) {
    case OpId::MAX: case OpId::MIN:
      return is_integer(t) || is_real(t) || is_half(t);
    case OpId::SUM: case OpId::PROD:
      return is_integer(t) || is_real(t) || is_complex(t) || is_half(t);
    case OpId::LAND: case OpId::LOR: case OpId::LXOR:
      return is_integer(t) || t == TypeId::BOOL || t == TypeId::LOGICAL;
    case OpId::BAND: case OpId::BOR: case OpId::BXOR:
      return is_integer(t) || t == TypeId::BYTE;
    case OpId::MAXLOC: case OpId::MINLOC:
      return is_pair(t);
    default:
      return false;
  }
}

std::string describe(OpId op, TypeId t) { return std::string(op_label(op)) + " " + type_label(t); }

// ---- Random numbers -----------------------------------------------------------

struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t next() {  // xorshift64*
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1Dull;
  }
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(next() % n); }
};

// ---- Floating-point bit helpers (x86 extended and IEEE) -------------------------

template <class T>
bool is_nan_bits(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v != v;
}

// Bytes of T that carry the value.
template <class T>
constexpr size_t value_bytes() {
  return std::is_same_v<T, long double> && LDBL_MANT_DIG == 64 ? 10 : sizeof(T);
}

// long double is x87 extended (x86) or IEEE quad (aarch64).
constexpr bool kX87 = LDBL_MANT_DIG == 64;
static_assert(kX87 || LDBL_MANT_DIG == 113, "the reference knows x87 extended and IEEE quad");

// Sets the quiet bit of a NaN stored at p: the top fraction bit (for x87
// extended, bit 62 of the explicit 64-bit significand).
template <class T>
void set_quiet_bit(uint8_t* p) {
  if constexpr (sizeof(T) == 4) {
    p[2] |= 0x40;
  } else if constexpr (sizeof(T) == 8) {
    p[6] |= 0x08;
  } else if constexpr (kX87) {
    p[7] |= 0x40;
  } else {
    p[13] |= 0x80;
  }
}

template <class T>
T make_real(Rng& r) {
  switch (r.below(12)) {
    case 0: return 0.0;
    case 1: return -0.0;
    case 2: return r.below(2) ? INFINITY : -INFINITY;
    case 3: {  // NaN with a random payload, sign, quiet or signalling
      uint8_t bytes[sizeof(T)] = {};
      T v = NAN;
      std::memcpy(bytes, &v, value_bytes<T>());
      uint64_t payload = r.next();
      if constexpr (sizeof(T) == 4) {
        uint32_t b = 0x7F800000u | (payload & 0x7FFFFF) | (r.below(2) ? 0x80000000u : 0);
        if ((b & 0x7FFFFF) == 0) b |= 1;
        std::memcpy(bytes, &b, 4);
      } else if constexpr (sizeof(T) == 8) {
        uint64_t b = 0x7FF0000000000000ull | (payload & 0xFFFFFFFFFFFFFull) |
                     (r.below(2) ? 0x8000000000000000ull : 0);
        if ((b & 0xFFFFFFFFFFFFFull) == 0) b |= 1;
        std::memcpy(bytes, &b, 8);
      } else if constexpr (kX87) {
        uint64_t mant = (payload & 0x7FFFFFFFFFFFFFFFull) | 0x8000000000000000ull;
        if ((mant & 0x3FFFFFFFFFFFFFFFull) == 0) mant |= 1;
        uint16_t se = 0x7FFF | (r.below(2) ? 0x8000 : 0);
        std::memcpy(bytes, &mant, 8);
        std::memcpy(bytes + 8, &se, 2);
      } else {  // IEEE quad: 112 fraction bits, then 15 exponent bits and the sign
        uint64_t low = r.next(), high = (payload & 0xFFFFFFFFFFFFull) | 1;
        uint16_t se = 0x7FFF | (r.below(2) ? 0x8000 : 0);
        std::memcpy(bytes, &low, 8);
        std::memcpy(bytes + 8, &high, 6);
        std::memcpy(bytes + 14, &se, 2);
      }
      std::memcpy(&v, bytes, sizeof v);
      return v;
    }
    case 4:  // subnormal
      return static_cast<T>(r.below(1000) + 1) *
             (sizeof(T) == 4 ? FLT_TRUE_MIN : sizeof(T) == 8 ? DBL_TRUE_MIN : LDBL_TRUE_MIN);
    case 5:  // small integers: ties and exact results
      return static_cast<T>(static_cast<int>(r.below(7)) - 3);
    case 6:  // near 1, with bits below double precision for long double
      return 1 + std::ldexp(static_cast<T>(r.below(16)), -(int)r.below(70));
    case 7:  // huge and tiny magnitudes (beyond double's range for long double)
      return std::ldexp(static_cast<T>(r.below(1 << 20)) - (1 << 19),
                        static_cast<int>(r.below(2 * 16000)) - 16000);
    default: {  // ordinary values of any magnitude
      double d = (static_cast<double>(r.next() >> 11) / 9007199254740992.0 - 0.5) *
                 std::ldexp(1.0, static_cast<int>(r.below(200)) - 100);
      return static_cast<T>(d);
    }
  }
}

// ---- 16-bit floats, independently of the kernels ----------------------------------
// A format: `fraction` bits after the point, exponent bias `bias`; the
// exponent field is 5 bits (binary16) or 8 (bfloat16). Decoding and the
// rounding go through double and ldexp, not through float and bit tricks
// as the kernels do.

struct HalfFormat {
  int fraction;  // 10 or 7
  int bias;      // 15 or 127
  uint16_t exponent_mask() const { return uint16_t(0x7fff & ~((1u << fraction) - 1)); }
  uint16_t quiet_bit() const { return uint16_t(1u << (fraction - 1)); }
  bool is_nan(uint16_t h) const {
    return (h & exponent_mask()) == exponent_mask() && (h & ((1u << fraction) - 1)) != 0;
  }
};
constexpr HalfFormat kBinary16{10, 15}, kBFloat16{7, 127};
const HalfFormat& format_of(TypeId t) { return t == TypeId::F16 ? kBinary16 : kBFloat16; }

// The value of a non-NaN h, exactly.
double half_value(const HalfFormat& f, uint16_t h) {
  const int e = (h & 0x7fff) >> f.fraction;
  const int m = h & ((1 << f.fraction) - 1);
  const int emax = (1 << (15 - f.fraction)) - 1;
  double v;
  if (e == emax) v = INFINITY;
  else if (e == 0) v = std::ldexp(double(m), 1 - f.bias - f.fraction);
  else v = std::ldexp(double(m + (1 << f.fraction)), e - f.bias - f.fraction);
  return h & 0x8000 ? -v : v;
}

// x (not NaN) rounded to the format, to nearest, ties to even: rint in the
// default rounding mode at the unit of x's binade (or of the subnormals).
uint16_t half_round(const HalfFormat& f, double x) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(x);
  const int emax = (1 << (15 - f.fraction)) - 1;  // the exponent field of inf
  const int top = emax - 1 - f.bias;              // the largest finite binade
  if (a == 0) return sign;
  int e = std::ilogb(a);
  if (e < 1 - f.bias) e = 1 - f.bias;
  if (e > top) return uint16_t(sign | f.exponent_mask());
  // Units of 2^(e - fraction), the implicit bit included; the encoding is
  // the units plus the binade's exponent less one in the exponent field,
  // which holds for subnormals (field 0) too. A carry into the next binade
  // is just one more unit of the encoding, as is a carry into infinity.
  const double units = std::rint(std::ldexp(a, f.fraction - e));
  const long r = long(units) + (long(e + f.bias - 1) << f.fraction);
  return uint16_t(sign | std::min(r, long(f.exponent_mask())));
}

// The NaN the CPU makes for inf - inf, narrowed (x86: negative, aarch64:
// positive), computed at run time.
uint16_t default_nan(const HalfFormat& f) {
  volatile float inf = INFINITY;
  const float n = inf - inf;
  return uint16_t((std::signbit(n) ? 0x8000 : 0) | f.exponent_mask() | f.quiet_bit());
}

// MAX and MIN compare the values; SUM and PROD compute exactly (in double,
// where a FLOAT16 sum and any product are exact, and a BFLOAT16 sum is
// rounded harmlessly, 53 >= 2 * 8 + 2) and round once. NaN: a's, else b's,
// quietened; else the default NaN.
uint16_t ref_half(OpId op, const HalfFormat& f, uint16_t a, uint16_t b) {
  const bool na = f.is_nan(a), nb = f.is_nan(b);
  const double x = na ? NAN : half_value(f, a), y = nb ? NAN : half_value(f, b);
  switch (op) {
    case OpId::MAX: return y > x ? b : a;
    case OpId::MIN: return y < x ? b : a;
    default: break;
  }
  if (na) return uint16_t(a | f.quiet_bit());
  if (nb) return uint16_t(b | f.quiet_bit());
  const double r = op == OpId::SUM ? x + y : x * y;
  if (r != r) return default_nan(f);
  return half_round(f, r);
}

uint16_t make_half(const HalfFormat& f, Rng& r) {
  const uint16_t sign = r.below(2) ? 0x8000 : 0;
  const uint16_t fraction = uint16_t(r.next() & ((1u << f.fraction) - 1));
  switch (r.below(10)) {
    case 0: return sign;                                                      // zeros
    case 1: return uint16_t(sign | f.exponent_mask());                        // infinities
    case 2: return uint16_t(sign | f.exponent_mask() | (fraction ? fraction : 1));  // NaNs, any payload
    case 3: return uint16_t(sign | fraction);                                 // subnormals
    case 4: return uint16_t(sign | (f.exponent_mask() - 1 - (r.below(4) << f.fraction)));  // near the top
    case 5: return half_round(f, double(int(r.below(9)) - 4) / (1 << r.below(3)));       // small, exact values
    default: return uint16_t(r.next());                                       // anything
  }
}

// ---- Random inputs ---------------------------------------------------------------

template <class T>
void put(uint8_t* p, T v) {
  std::memcpy(p, &v, value_bytes<T>());
}

template <class T>
void fill_integer(uint8_t* p, Rng& r) {
  T v;
  switch (r.below(8)) {
    case 0: v = 0; break;
    case 1: v = 1; break;
    case 2: v = static_cast<T>(-1); break;
    case 3: v = std::numeric_limits<T>::max(); break;
    case 4: v = std::numeric_limits<T>::min(); break;
    case 5: v = static_cast<T>(r.below(4)); break;
    default: v = static_cast<T>(r.next()); break;
  }
  std::memcpy(p, &v, sizeof v);
}

// A pair's value: often from a tiny set so that ties are common.
template <class V>
void fill_pair_value(uint8_t* p, Rng& r) {
  if constexpr (std::is_floating_point_v<V>) {
    static const V small[] = {V(0), V(-0.0), V(1), V(2), V(NAN)};
    put<V>(p, r.below(2) ? small[r.below(5)] : make_real<V>(r));
  } else {
    V v = r.below(2) ? static_cast<V>(r.below(3)) : static_cast<V>(r.next());
    std::memcpy(p, &v, sizeof v);
  }
}

template <class V, class I>
void fill_pair(uint8_t* p, size_t index_offset, Rng& r) {
  fill_pair_value<V>(p, r);
  I index = static_cast<I>(r.below(4));
  std::memcpy(p + index_offset, &index, sizeof index);
}

// Random bytes first, so padding holds garbage the kernels must not trust.
void fill(TypeId t, uint8_t* p, size_t n, Rng& r) {
  const size_t size = size_of(t);
  for (size_t i = 0; i < n * size; ++i) p[i] = static_cast<uint8_t>(r.next());
  for (size_t i = 0; i < n; ++i) {
    uint8_t* e = p + i * size;
    switch (t) {
      case TypeId::I8: fill_integer<int8_t>(e, r); break;
      case TypeId::U8: fill_integer<uint8_t>(e, r); break;
      case TypeId::I16: fill_integer<int16_t>(e, r); break;
      case TypeId::U16: fill_integer<uint16_t>(e, r); break;
      case TypeId::I32: fill_integer<int32_t>(e, r); break;
      case TypeId::U32: fill_integer<uint32_t>(e, r); break;
      case TypeId::I64: fill_integer<int64_t>(e, r); break;
      case TypeId::U64: fill_integer<uint64_t>(e, r); break;
      case TypeId::F32: put(e, make_real<float>(r)); break;
      case TypeId::F64: put(e, make_real<double>(r)); break;
      case TypeId::F80: put(e, make_real<long double>(r)); break;
      case TypeId::C32: put(e, make_real<float>(r)); put(e + 4, make_real<float>(r)); break;
      case TypeId::C64: put(e, make_real<double>(r)); put(e + 8, make_real<double>(r)); break;
      case TypeId::C80:
        put(e, make_real<long double>(r));
        put(e + 16, make_real<long double>(r));
        break;
      case TypeId::BOOL: e[0] = static_cast<uint8_t>("\x00\x01\x02\xff"[r.below(4)]); break;
      case TypeId::LOGICAL: {
        static const int32_t values[] = {0, 1, -1, 2, 0x100};
        std::memcpy(e, &values[r.below(5)], 4);
        break;
      }
      case TypeId::BYTE: break;
      case TypeId::FLOAT_INT: fill_pair<float, int32_t>(e, 4, r); break;
      case TypeId::DOUBLE_INT: fill_pair<double, int32_t>(e, 8, r); break;
      case TypeId::LONG_INT: fill_pair<int64_t, int32_t>(e, 8, r); break;
      case TypeId::TWO_INT: fill_pair<int32_t, int32_t>(e, 4, r); break;
      case TypeId::SHORT_INT: fill_pair<int16_t, int32_t>(e, 4, r); break;
      case TypeId::LONG_DOUBLE_INT: fill_pair<long double, int32_t>(e, 16, r); break;
      case TypeId::TWO_FLOAT: fill_pair<float, float>(e, 4, r); break;
      case TypeId::TWO_DOUBLE: fill_pair<double, double>(e, 8, r); break;
      case TypeId::F16: case TypeId::BF16: {
        const uint16_t h = make_half(format_of(t), r);
        std::memcpy(e, &h, 2);
        break;
      }
      case TypeId::COUNT: break;
    }
  }
}

// ---- The independent reference ------------------------------------------------------
// One element at a time, on bytes. Output padding (long double) comes from b.

// Integers: widened to 64 bits, computed there, truncated back. Wrap-around
// falls out of the truncation.
template <class T>
void ref_integer(OpId op, const uint8_t* a, const uint8_t* b, uint8_t* out) {
  T x, y;
  std::memcpy(&x, a, sizeof x);
  std::memcpy(&y, b, sizeof y);
  using W = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
  const W wx = x, wy = y;
  uint64_t r = 0;
  switch (op) {
    case OpId::MAX: r = static_cast<uint64_t>(wx < wy ? wy : wx); break;
    case OpId::MIN: r = static_cast<uint64_t>(wy < wx ? wy : wx); break;
    case OpId::SUM: r = static_cast<uint64_t>(wx) + static_cast<uint64_t>(wy); break;
    case OpId::PROD: r = static_cast<uint64_t>(wx) * static_cast<uint64_t>(wy); break;
    default: std::abort();
  }
  std::memcpy(out, &r, sizeof(T));  // the low bytes, little-endian
}

// Logical and bitwise ops straight on the bytes, whatever the type.
void ref_bytes(OpId op, const uint8_t* a, const uint8_t* b, uint8_t* out, size_t size) {
  bool ta = false, tb = false;
  for (size_t i = 0; i < size; ++i) {
    ta |= a[i] != 0;
    tb |= b[i] != 0;
  }
  bool logical = op == OpId::LAND || op == OpId::LOR || op == OpId::LXOR;
  bool truth = op == OpId::LAND ? (ta && tb) : op == OpId::LOR ? (ta || tb) : (ta != tb);
  for (size_t i = 0; i < size; ++i) {
    switch (op) {
      case OpId::BAND: out[i] = a[i] & b[i]; break;
      case OpId::BOR: out[i] = a[i] | b[i]; break;
      case OpId::BXOR: out[i] = a[i] ^ b[i]; break;
      default: out[i] = 0; break;
    }
  }
  if (logical) out[0] = truth ? 1 : 0;
}

// The documented floating-point rule for + - *: if the left operand is NaN
// the result is that NaN, quietened; otherwise the plain hardware result
// (which is the right operand's NaN, quietened, when only that one is NaN).
template <class T>
void ref_arith(char op, const uint8_t* a, const uint8_t* b, uint8_t* out) {
  if (is_nan_bits<T>(a)) {
    std::memcpy(out, a, value_bytes<T>());
    set_quiet_bit<T>(out);
    return;
  }
  T x, y;
  std::memcpy(&x, a, sizeof x);
  std::memcpy(&y, b, sizeof y);
  T r = op == '+' ? x + y : op == '-' ? x - y : x * y;
  std::memcpy(out, &r, value_bytes<T>());
}

template <class T>
void ref_real(OpId op, const uint8_t* a, const uint8_t* b, uint8_t* out) {
  std::memcpy(out, b, sizeof(T));  // padding, if any
  T x, y;
  std::memcpy(&x, a, sizeof x);
  std::memcpy(&y, b, sizeof y);
  switch (op) {
    // MAX(a, b) = (b > a) ? b : a, so NaN in a wins, NaN in b loses, and
    // equal zeros keep a's sign. The chosen operand is copied as bytes.
    case OpId::MAX: std::memcpy(out, y > x ? b : a, value_bytes<T>()); break;
    case OpId::MIN: std::memcpy(out, y < x ? b : a, value_bytes<T>()); break;
    case OpId::SUM: ref_arith<T>('+', a, b, out); break;
    case OpId::PROD: ref_arith<T>('*', a, b, out); break;
    default: std::abort();
  }
}

template <class T>
void ref_complex(OpId op, const uint8_t* a, const uint8_t* b, uint8_t* out) {
  const size_t s = sizeof(T);
  std::memcpy(out, b, 2 * s);  // padding, if any
  if (op == OpId::SUM) {
    ref_arith<T>('+', a, b, out);
    ref_arith<T>('+', a + s, b + s, out + s);
    return;
  }
  // (xr + xi i)(yr + yi i): re = xr yr - xi yi, im = xr yi + xi yr, each
  // operation under the same NaN rule.
  uint8_t p1[sizeof(T)] = {}, p2[sizeof(T)] = {}, p3[sizeof(T)] = {}, p4[sizeof(T)] = {};
  ref_arith<T>('*', a, b, p1);
  ref_arith<T>('*', a + s, b + s, p2);
  ref_arith<T>('*', a, b + s, p3);
  ref_arith<T>('*', a + s, b, p4);
  ref_arith<T>('-', p1, p2, out);
  ref_arith<T>('+', p3, p4, out + s);
}

// MAXLOC/MINLOC: per MPI, the winning value with its index; on equal values
// the smaller index. Anything unordered (NaN) keeps a, as MAX/MIN do.
template <class V, class I>
void ref_loc(OpId op, const uint8_t* a, const uint8_t* b, uint8_t* out, size_t index_offset,
             size_t size) {
  V va, vb;
  I ia, ib;
  std::memcpy(&va, a, sizeof va);
  std::memcpy(&vb, b, sizeof vb);
  std::memcpy(&ia, a + index_offset, sizeof ia);
  std::memcpy(&ib, b + index_offset, sizeof ib);
  bool b_better = op == OpId::MAXLOC ? vb > va : vb < va;
  bool a_better = op == OpId::MAXLOC ? va > vb : va < vb;
  bool take_b;
  if (b_better) {
    take_b = true;
  } else if (a_better) {
    take_b = false;
  } else if (va == vb) {
    take_b = ib < ia;
  } else {
    take_b = false;
  }
  const uint8_t* src = take_b ? b : a;
  std::memcpy(out, b, size);
  std::memcpy(out, src, value_bytes<V>());
  std::memcpy(out + index_offset, src + index_offset, sizeof(I));
}

void reference(OpId op, TypeId t, const uint8_t* a, const uint8_t* b, uint8_t* out, size_t n) {
  const size_t size = size_of(t);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* x = a + i * size;
    const uint8_t* y = b + i * size;
    uint8_t* o = out + i * size;
    if (op >= OpId::LAND && op <= OpId::BXOR) {
      ref_bytes(op, x, y, o, size);
      continue;
    }
    switch (t) {
      case TypeId::I8: ref_integer<int8_t>(op, x, y, o); break;
      case TypeId::U8: ref_integer<uint8_t>(op, x, y, o); break;
      case TypeId::I16: ref_integer<int16_t>(op, x, y, o); break;
      case TypeId::U16: ref_integer<uint16_t>(op, x, y, o); break;
      case TypeId::I32: ref_integer<int32_t>(op, x, y, o); break;
      case TypeId::U32: ref_integer<uint32_t>(op, x, y, o); break;
      case TypeId::I64: ref_integer<int64_t>(op, x, y, o); break;
      case TypeId::U64: ref_integer<uint64_t>(op, x, y, o); break;
      case TypeId::F32: ref_real<float>(op, x, y, o); break;
      case TypeId::F64: ref_real<double>(op, x, y, o); break;
      case TypeId::F80: ref_real<long double>(op, x, y, o); break;
      case TypeId::C32: ref_complex<float>(op, x, y, o); break;
      case TypeId::C64: ref_complex<double>(op, x, y, o); break;
      case TypeId::C80: ref_complex<long double>(op, x, y, o); break;
      case TypeId::FLOAT_INT: ref_loc<float, int32_t>(op, x, y, o, 4, size); break;
      case TypeId::DOUBLE_INT: ref_loc<double, int32_t>(op, x, y, o, 8, size); break;
      case TypeId::LONG_INT: ref_loc<int64_t, int32_t>(op, x, y, o, 8, size); break;
      case TypeId::TWO_INT: ref_loc<int32_t, int32_t>(op, x, y, o, 4, size); break;
      case TypeId::SHORT_INT: ref_loc<int16_t, int32_t>(op, x, y, o, 4, size); break;
      case TypeId::LONG_DOUBLE_INT: ref_loc<long double, int32_t>(op, x, y, o, 16, size); break;
      case TypeId::TWO_FLOAT: ref_loc<float, float>(op, x, y, o, 4, size); break;
      case TypeId::TWO_DOUBLE: ref_loc<double, double>(op, x, y, o, 8, size); break;
      case TypeId::F16: case TypeId::BF16: {
        uint16_t ha, hb;
        std::memcpy(&ha, x, 2);
        std::memcpy(&hb, y, 2);
        const uint16_t r = ref_half(op, format_of(t), ha, hb);
        std::memcpy(o, &r, 2);
        break;
      }
      default: std::abort();
    }
  }
}

// ---- Running a kernel on unaligned, possibly aliased buffers ---------------------------

enum class Alias { kNone, kOutIsA, kOutIsB };
const char* alias_name(Alias m) {
  return m == Alias::kNone ? "out separate" : m == Alias::kOutIsA ? "out==a" : "out==b";
}

constexpr uint8_t kCanary = 0xA5;
constexpr size_t kSlack = 64;  // canary bytes on each side of every buffer

// A byte buffer with canaries before and after a region starting `offset`
// bytes past a 64-byte boundary.
struct Buffer {
  std::vector<uint8_t> bytes;
  size_t offset = 0, length = 0;
  // Canaries around the data; the data itself is the caller's to fill.
  void reset(size_t len, size_t off) {
    length = len;
    offset = off;
    bytes.resize(len + 2 * kSlack + 64);
    uint8_t* p = data();
    std::memset(bytes.data(), kCanary, p - bytes.data());
    std::memset(p + len, kCanary, bytes.data() + bytes.size() - (p + len));
  }
  uint8_t* data() {
    uintptr_t base = reinterpret_cast<uintptr_t>(bytes.data()) + kSlack;
    base = (base + 63) & ~uintptr_t{63};
    return reinterpret_cast<uint8_t*>(base) + offset;
  }
  bool canaries_intact() {
    uint8_t* p = data();
    for (uint8_t* q = bytes.data(); q < p; ++q)
      if (*q != kCanary) return false;
    for (uint8_t* q = p + length; q < bytes.data() + bytes.size(); ++q)
      if (*q != kCanary) return false;
    return true;
  }
};

// Runs fn on copies of a and b (n items) placed `offset` bytes off alignment,
// in the given aliasing form; returns the output bytes, valid until the next
// call (the buffers are reused: allocating tens of MiB per case made the
// test mostly page faults and memset, several times over under ASan). Also
// checks that the kernel wrote nothing outside the output, and left a
// non-output operand alone.
const std::vector<uint8_t>& run(ReduceFn fn, TypeId t, const uint8_t* a, const uint8_t* b, size_t n,
                                size_t offset, Alias mode) {
  const size_t bytes = n * size_of(t);
  static Buffer ba, bb, bo;
  ba.reset(bytes, offset);
  bb.reset(bytes, (offset + 3) % 8);
  bo.reset(bytes, (offset + 5) % 8);
  if (bytes) {
    std::memcpy(ba.data(), a, bytes);
    std::memcpy(bb.data(), b, bytes);
    std::memset(bo.data(), kCanary, bytes);  // no result left from an earlier case
  }
  uint8_t* out = mode == Alias::kOutIsA ? ba.data() : mode == Alias::kOutIsB ? bb.data() : bo.data();
  fn(ba.data(), bb.data(), out, n);
  CHECK(ba.canaries_intact() && bb.canaries_intact() && bo.canaries_intact());
  if (mode != Alias::kOutIsA) CHECK(bytes == 0 || std::memcmp(ba.data(), a, bytes) == 0);
  if (mode != Alias::kOutIsB) CHECK(bytes == 0 || std::memcmp(bb.data(), b, bytes) == 0);
  static std::vector<uint8_t> got;
  got.assign(out, out + bytes);
  return got;
}

// First differing item, for failure messages.
std::string first_difference(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want,
                             size_t size) {
  if (got.size() == want.size() && (got.empty() || std::memcmp(got.data(), want.data(), got.size()) == 0))
    return "";
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    if (got[i] != want[i]) {
      size_t item = i / size;
      char buf[256];
      int len = std::snprintf(buf, sizeof buf, " first difference at item %zu:", item);
      std::string s(buf, len);
      s += " got";
      for (size_t k = 0; k < size; ++k) {
        std::snprintf(buf, sizeof buf, " %02x", got[item * size + k]);
        s += buf;
      }
      s += " want";
      for (size_t k = 0; k < size; ++k) {
        std::snprintf(buf, sizeof buf, " %02x", want[item * size + k]);
        s += buf;
      }
      return s;
    }
  }
  return "";
}

// ---- 1. The table ---------------------------------------------------------------------

void test_table() {
  g_context = "table";
  for (int o = 0; o < kOps; ++o) {
    for (int t = 0; t < kTypes; ++t) {
      OpId op = static_cast<OpId>(o);
      TypeId type = static_cast<TypeId>(t);
      g_context = "table " + describe(op, type);
      CHECK((lookup(op, type) != nullptr) == defined(op, type));
    }
  }
  g_context = "table bounds";
  CHECK(lookup(OpId::COUNT, TypeId::I32) == nullptr);
  CHECK(lookup(OpId::SUM, TypeId::COUNT) == nullptr);
  CHECK(lookup(static_cast<OpId>(200), TypeId::I32) == nullptr);
  CHECK(lookup(OpId::SUM, static_cast<TypeId>(200)) == nullptr);
  for (int t = 0; t < kTypes; ++t) {
    g_context = std::string("type_size ") + type_label(static_cast<TypeId>(t));
    CHECK(type_size(static_cast<TypeId>(t)) == size_of(static_cast<TypeId>(t)));
  }
  CHECK(type_size(TypeId::COUNT) == 0);
  // The names ERR_NOT_SAME messages use: lib/op.ts's, and lib/datatype.ts's
  // first predefined datatype of each storage type.
  g_context = "names";
  for (int o = 0; o < kOps; ++o) CHECK(std::strcmp(op_name(static_cast<OpId>(o)), op_label(static_cast<OpId>(o))) == 0);
  for (int t = 0; t < kTypes; ++t) CHECK(type_name(static_cast<TypeId>(t)) != nullptr);
  CHECK(std::strcmp(type_name(TypeId::F64), "DOUBLE") == 0);
  CHECK(std::strcmp(type_name(TypeId::F32), "FLOAT") == 0);
  CHECK(std::strcmp(type_name(TypeId::I32), "INT") == 0);
  CHECK(std::strcmp(type_name(TypeId::TWO_DOUBLE), "TWO_DOUBLE_PRECISION") == 0);
  CHECK(std::strcmp(type_name(TypeId::F16), "FLOAT16") == 0);
  CHECK(std::strcmp(type_name(TypeId::BF16), "BFLOAT16") == 0);
  CHECK(op_name(OpId::COUNT) == nullptr && type_name(TypeId::COUNT) == nullptr);
}

// ---- 2. Dispatch ---------------------------------------------------------------------------

bool cpu_has(const char* isa) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (std::strcmp(isa, "avx2") == 0) return __builtin_cpu_supports("avx2");
  if (std::strcmp(isa, "avx512") == 0)
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  return std::strcmp(isa, "scalar") == 0;
#elif defined(__aarch64__)
  return std::strcmp(isa, "scalar") == 0 || std::strcmp(isa, "neon") == 0;
#else
  return std::strcmp(isa, "scalar") == 0;
#endif
}

const char* const kIsaNames[] = {"scalar", "avx2", "avx512", "neon"};

const char* best_isa() {
  for (const char* name : {"avx512", "avx2", "neon"})
    if (cpu_has(name)) return name;
  return "scalar";
}

// The choice is made once per process, so each NODEMPI_KERNELS value is
// tried in a fresh copy of this program (see main: --expect-isa), which
// exits 0 if its first lookup used `expected`. Its warning for a bad value
// goes to /dev/null. Under user-mode emulation (the arm64 build run by
// qemu-aarch64 on another machine, test/packaging/prebuilds.test.ts) the
// copy starts through the emulator KERNELS_TEST_RUNNER names.
bool env_choice_is(const char* value, const char* expected) {
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    setenv("NODEMPI_KERNELS", value, 1);
    freopen("/dev/null", "w", stderr);
    if (const char* runner = std::getenv("KERNELS_TEST_RUNNER")) {
      char self[4096];
      ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
      if (n <= 0) _exit(127);
      self[n] = '\0';
      execlp(runner, runner, self, "--expect-isa", expected, static_cast<char*>(nullptr));
      _exit(127);
    }
    execl("/proc/self/exe", "kernels_test", "--expect-isa", expected, static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Runs first in main(), before any lookup: NODEMPI_KERNELS is read at first use.
void test_env_at_first_use() {
  g_context = "NODEMPI_KERNELS=scalar at first use";
  setenv("NODEMPI_KERNELS", "scalar", 1);
  CHECK(std::strcmp(active_isa(), "scalar") == 0);
  unsetenv("NODEMPI_KERNELS");
}

void test_dispatch() {
  g_context = "env auto";
  CHECK(env_choice_is("auto", best_isa()));
  g_context = "env empty";
  CHECK(env_choice_is("", best_isa()));
  g_context = "env unknown name falls back to auto";
  CHECK(env_choice_is("sse9", best_isa()));
  for (const char* name : kIsaNames) {
    g_context = std::string("env ") + name;
    CHECK(env_choice_is(name, cpu_has(name) ? name : best_isa()));
  }

  g_context = "select_isa";
  CHECK(!select_isa(nullptr));
  CHECK(!select_isa("bogus"));
  CHECK(select_isa("auto"));
  CHECK(std::strcmp(active_isa(), best_isa()) == 0);
  ReduceFn fns[4] = {};
  for (int i = 0; i < 4; ++i) {
    g_context = std::string("select_isa ") + kIsaNames[i];
    CHECK(select_isa(kIsaNames[i]) == cpu_has(kIsaNames[i]));
    if (cpu_has(kIsaNames[i])) {
      CHECK(std::strcmp(active_isa(), kIsaNames[i]) == 0);
      fns[i] = lookup(OpId::SUM, TypeId::F64);
    }
  }
  // Each table has its own copy of the code: a linker that merged the
  // per-ISA instantiations would make these equal.
  for (int i = 0; i < 4; ++i)
    for (int j = i + 1; j < 4; ++j)
      if (fns[i] && fns[j]) {
        g_context = std::string("distinct code ") + kIsaNames[i] + " " + kIsaNames[j];
        CHECK(fns[i] != fns[j]);
      }
  select_isa("auto");
}

// ---- 3. Hand-picked values ---------------------------------------------------------------

template <class T>
std::vector<T> apply(OpId op, TypeId type, std::vector<T> a, std::vector<T> b) {
  std::vector<T> out(a.size());
  ReduceFn fn = lookup(op, type);
  CHECK(fn != nullptr);
  CHECK(a.size() == b.size() && a.size() * sizeof(T) % size_of(type) == 0);
  if (fn) fn(a.data(), b.data(), out.data(), a.size() * sizeof(T) / size_of(type));
  return out;
}

template <class T>
bool same_bits(T x, T y) {
  return std::memcmp(&x, &y, value_bytes<T>()) == 0;
}

template <class T>
T nan_with_payload(uint64_t payload) {
  T v;
  if constexpr (sizeof(T) == 4) {
    uint32_t b = 0x7FC00000u | static_cast<uint32_t>(payload);
    std::memcpy(&v, &b, 4);
  } else {
    uint64_t b = 0x7FF8000000000000ull | payload;
    std::memcpy(&v, &b, 8);
  }
  return v;
}

void test_values_for_each_table() {
  // Integers wrap as two's complement.
  g_context = "wrap-around";
  CHECK(apply<int32_t>(OpId::SUM, TypeId::I32, {INT32_MAX}, {1})[0] == INT32_MIN);
  CHECK(apply<int32_t>(OpId::PROD, TypeId::I32, {INT32_MIN}, {-1})[0] == INT32_MIN);
  CHECK(apply<uint8_t>(OpId::PROD, TypeId::U8, {200}, {2})[0] == 144);
  CHECK(apply<uint8_t>(OpId::SUM, TypeId::U8, {200}, {100})[0] == 44);
  CHECK(apply<int8_t>(OpId::SUM, TypeId::I8, {127}, {1})[0] == -128);
  CHECK(apply<int8_t>(OpId::PROD, TypeId::I8, {-128}, {-1})[0] == -128);
  CHECK(apply<uint16_t>(OpId::PROD, TypeId::U16, {65535}, {65535})[0] == 1);
  CHECK(apply<int16_t>(OpId::PROD, TypeId::I16, {300}, {300})[0] == static_cast<int16_t>(90000 - 65536));
  CHECK(apply<int64_t>(OpId::SUM, TypeId::I64, {INT64_MAX}, {1})[0] == INT64_MIN);
  CHECK(apply<uint64_t>(OpId::PROD, TypeId::U64, {1ull << 63}, {2})[0] == 0);
  CHECK(apply<int32_t>(OpId::MAX, TypeId::I32, {-5}, {3})[0] == 3);
  CHECK(apply<uint32_t>(OpId::MAX, TypeId::U32, {0x80000000u}, {3})[0] == 0x80000000u);
  CHECK(apply<int64_t>(OpId::MIN, TypeId::I64, {-5}, {3})[0] == -5);

  // MAX = (b > a) ? b : a: NaN in a wins, NaN in b loses, equal zeros keep a.
  g_context = "MAX/MIN -0.0 and NaN";
  const double nan1 = nan_with_payload<double>(1), nan2 = nan_with_payload<double>(2);
  auto maxd = apply<double>(OpId::MAX, TypeId::F64, {-0.0, 0.0, nan1, 1.0, nan1}, {0.0, -0.0, 1.0, nan2, nan2});
  CHECK(same_bits(maxd[0], -0.0));
  CHECK(same_bits(maxd[1], 0.0));
  CHECK(same_bits(maxd[2], nan1));
  CHECK(same_bits(maxd[3], 1.0));
  CHECK(same_bits(maxd[4], nan1));
  auto minf = apply<float>(OpId::MIN, TypeId::F32, {0.0f, -0.0f, NAN, 1.0f}, {-0.0f, 0.0f, -1.0f, NAN});
  CHECK(same_bits(minf[0], 0.0f));
  CHECK(same_bits(minf[1], -0.0f));
  CHECK(std::isnan(minf[2]));
  CHECK(minf[3] == 1.0f);

  // SUM/PROD: NaN in a gives a's payload; NaN only in b gives b's payload.
  g_context = "SUM/PROD -0.0 and NaN";
  auto sumd = apply<double>(OpId::SUM, TypeId::F64, {-0.0, -0.0, nan1, 1.0, 1.5}, {-0.0, 0.0, nan2, nan2, 2.25});
  CHECK(same_bits(sumd[0], -0.0));
  CHECK(same_bits(sumd[1], 0.0));
  CHECK(same_bits(sumd[2], nan1));
  CHECK(same_bits(sumd[3], nan2));
  CHECK(sumd[4] == 3.75);
  const float fnan1 = nan_with_payload<float>(1), fnan2 = nan_with_payload<float>(2);
  auto prodf = apply<float>(OpId::PROD, TypeId::F32, {-0.0f, fnan1, 2.0f, -3.0f}, {5.0f, fnan2, fnan2, 0.5f});
  CHECK(same_bits(prodf[0], -0.0f));
  CHECK(same_bits(prodf[1], fnan1));
  CHECK(same_bits(prodf[2], fnan2));
  CHECK(prodf[3] == -1.5f);

  // Complex products: (1+2i)(3+4i) = -5+10i.
  g_context = "complex";
  auto c32 = apply<float>(OpId::PROD, TypeId::C32, {1, 2, 0, 1}, {3, 4, 0, 1});
  CHECK(c32[0] == -5 && c32[1] == 10 && c32[2] == -1 && c32[3] == 0);
  auto c64 = apply<double>(OpId::PROD, TypeId::C64, {1, 2}, {3, 4});
  CHECK(c64[0] == -5 && c64[1] == 10);
  auto c80 = apply<long double>(OpId::PROD, TypeId::C80, {1, 2}, {3, 4});
  CHECK(c80[0] == -5 && c80[1] == 10);
  auto s64 = apply<double>(OpId::SUM, TypeId::C64, {1, 2}, {3, 4});
  CHECK(s64[0] == 4 && s64[1] == 6);
  // No FMA: the real part (1+e)(1-e) - 1*1 with e = 2^-30 is 0 when the
  // product is rounded first; a fused multiply-subtract would give -2^-60.
  const double e = std::ldexp(1.0, -30);
  auto nofma = apply<double>(OpId::PROD, TypeId::C64, {1 + e, 1}, {1 - e, 1});
  CHECK(nofma[0] == 0.0 && nofma[1] == 2.0);

  // Logical ops normalise to 0/1.
  g_context = "logical";
  auto land = apply<int32_t>(OpId::LAND, TypeId::I32, {2, 2, 0, -1}, {3, 0, 0, -7});
  CHECK(land[0] == 1 && land[1] == 0 && land[2] == 0 && land[3] == 1);
  auto lor = apply<int8_t>(OpId::LOR, TypeId::I8, {0, 0, 5, -128}, {0, 7, 0, 1});
  CHECK(lor[0] == 0 && lor[1] == 1 && lor[2] == 1 && lor[3] == 1);
  auto lxor = apply<uint64_t>(OpId::LXOR, TypeId::U64, {2, 2, 0, 0}, {3, 0, 9, 0});
  CHECK(lxor[0] == 0 && lxor[1] == 1 && lxor[2] == 1 && lxor[3] == 0);
  auto lbool = apply<uint8_t>(OpId::LAND, TypeId::BOOL, {2, 1, 0}, {255, 1, 1});
  CHECK(lbool[0] == 1 && lbool[1] == 1 && lbool[2] == 0);
  auto llog = apply<int32_t>(OpId::LXOR, TypeId::LOGICAL, {-1, -1, 0}, {1, 0, 0});
  CHECK(llog[0] == 0 && llog[1] == 1 && llog[2] == 0);
  auto bx = apply<uint8_t>(OpId::BXOR, TypeId::BYTE, {0xF0, 0xFF}, {0x3C, 0x0F});
  CHECK(bx[0] == 0xCC && bx[1] == 0xF0);
  auto ba = apply<int16_t>(OpId::BAND, TypeId::I16, {-1, 0x0F0F}, {0x1234, 0x00FF});
  CHECK(ba[0] == 0x1234 && ba[1] == 0x000F);

  // MAXLOC/MINLOC: ties take the lower index, whichever side it is on.
  g_context = "MAXLOC/MINLOC";
  struct DI { double v; int32_t i; };
  auto ml = apply<DI>(OpId::MAXLOC, TypeId::DOUBLE_INT, {{5, 7}, {5, 2}, {1, 0}, {9, 9}, {-0.0, 4}},
                      {{5, 3}, {5, 8}, {2, 5}, {8, 1}, {0.0, 3}});
  CHECK(ml[0].v == 5 && ml[0].i == 3);
  CHECK(ml[1].v == 5 && ml[1].i == 2);
  CHECK(ml[2].v == 2 && ml[2].i == 5);
  CHECK(ml[3].v == 9 && ml[3].i == 9);
  CHECK(same_bits(ml[4].v, 0.0) && ml[4].i == 3);  // -0 == +0: the lower index's pair
  struct SI { int16_t v; int32_t i; };
  auto mn = apply<SI>(OpId::MINLOC, TypeId::SHORT_INT, {{-4, 6}, {-4, 1}, {3, 0}}, {{-4, 2}, {-4, 5}, {-7, 9}});
  CHECK(mn[0].v == -4 && mn[0].i == 2);
  CHECK(mn[1].v == -4 && mn[1].i == 1);
  CHECK(mn[2].v == -7 && mn[2].i == 9);
  struct TF { float v; float i; };
  auto tf = apply<TF>(OpId::MAXLOC, TypeId::TWO_FLOAT, {{1.5f, 4.0f}}, {{1.5f, 2.0f}});
  CHECK(tf[0].v == 1.5f && tf[0].i == 2.0f);

  // long double keeps what double cannot: 1 + 2^-60 and 1e4000.
  g_context = "long double";
  const long double tiny = std::ldexp(1.0L, -60);
  auto ls = apply<long double>(OpId::SUM, TypeId::F80, {1.0L + tiny, 1e4000L}, {tiny, 1e4000L});
  CHECK(ls[0] == 1.0L + 2 * tiny && ls[0] != 1.0L);
  CHECK(ls[1] == 2e4000L);
  auto lm = apply<long double>(OpId::MAX, TypeId::F80, {1.0L + tiny, -1e4000L}, {1.0L, -1e4001L});
  CHECK(lm[0] == 1.0L + tiny);
  CHECK(lm[1] == -1e4000L);
  auto lp = apply<long double>(OpId::PROD, TypeId::F80, {1e3000L}, {1e-2000L});
  CHECK(std::fabs(lp[0] / 1e1000L - 1) < 1e-15L);
  struct LDI { long double v; int32_t i; };
  auto ldl = apply<LDI>(OpId::MINLOC, TypeId::LONG_DOUBLE_INT, {{1.0L + tiny, 2}}, {{1.0L, 1}});
  CHECK(ldl[0].v == 1.0L && ldl[0].i == 1);
}

void test_values() {
  for (const char* name : kIsaNames) {
    if (select_isa(name)) test_values_for_each_table();
  }
  select_isa("auto");

  // Padding of long double and pair outputs comes from b, in every aliasing form.
  g_context = "padding from b";
  for (Alias mode : {Alias::kNone, Alias::kOutIsA, Alias::kOutIsB}) {
    uint8_t a[32], b[32];
    std::memset(a, 0x11, sizeof a);
    std::memset(b, 0x22, sizeof b);
    const size_t vb = value_bytes<long double>();
    long double x = 3.0L, y = 2.0L;
    std::memcpy(a, &x, vb);
    std::memcpy(b, &y, vb);
    auto out = run(lookup(OpId::MAX, TypeId::F80), TypeId::F80, a, b, 1, 1, mode);
    CHECK(std::memcmp(out.data(), a, vb) == 0);
    for (size_t i = vb; i < 16; ++i) CHECK(out[i] == 0x22);

    int32_t ia = 7, ib = 8;
    std::memcpy(a + 16, &ia, 4);
    std::memcpy(b + 16, &ib, 4);
    out = run(lookup(OpId::MAXLOC, TypeId::LONG_DOUBLE_INT), TypeId::LONG_DOUBLE_INT, a, b, 1, 3, mode);
    CHECK(std::memcmp(out.data(), a, vb) == 0 && std::memcmp(out.data() + 16, &ia, 4) == 0);
    for (size_t i = vb; i < 32; ++i)
      if (i < 16 || i >= 20) CHECK(out[i] == 0x22);
  }
}

constexpr size_t kMillionOdd = (1u << 20) + 13;

// ---- 3b. MAXLOC/MINLOC cases, with the expected winner written out ----------------------
// Unlike section 4, no reference computes the answer: each case names the
// side that must win. Every pair type, both ops, every table; ties in both
// index orders and with equal indices, NaN values (and NaN indices for the
// two-real types), signed zeros, the extremes of each type (which a
// comparison on shifted or widened words could get wrong), garbage in the
// padding, the lengths around vector widths plus one long odd length,
// unaligned pointers and both in-place forms.

template <class V, class I>
struct LocCase {
  V va;
  I ia;
  V vb;
  I ib;
  bool want_b;
};

// (lower, higher) pairs of distinct values of T.
template <class T>
std::vector<std::pair<T, T>> ordered_pairs() {
  using L = std::numeric_limits<T>;
  if constexpr (std::is_floating_point_v<T>) {
    return {{T(-1), T(0)},         {T(1), T(1) + L::epsilon()}, {-L::infinity(), L::infinity()},
            {L::lowest(), L::max()}, {L::denorm_min(), 2 * L::denorm_min()}, {-L::min(), L::denorm_min()}};
  } else {
    return {{T(0), T(1)}, {T(-1), T(0)}, {L::min(), L::max()}, {L::min(), T(L::min() + 1)}, {T(L::max() - 1), L::max()}};
  }
}

template <class T>
T nan_of(const char* payload) {
  if constexpr (sizeof(T) == 4) return std::nanf(payload);
  else if constexpr (sizeof(T) == 8) return std::nan(payload);
  else return std::nanl(payload);
}

template <class V, class I>
std::vector<LocCase<V, I>> loc_cases(OpId op) {
  std::vector<LocCase<V, I>> cases;
  const bool max = op == OpId::MAXLOC;
  // Index orders: b lower, a lower, equal.
  std::vector<std::pair<I, I>> index_orders;
  for (auto [lo, hi] : ordered_pairs<I>()) {
    index_orders.push_back({hi, lo});
    index_orders.push_back({lo, hi});
    index_orders.push_back({lo, lo});
  }
  for (auto [lo, hi] : ordered_pairs<V>()) {
    const V good = max ? hi : lo, bad = max ? lo : hi;
    for (auto [ia, ib] : index_orders) {
      cases.push_back({good, ia, bad, ib, false});  // a's value wins, whatever the indices
      cases.push_back({bad, ia, good, ib, true});   // b's value wins, whatever the indices
      cases.push_back({lo, ia, lo, ib, ib < ia});   // ties: the lower index; equal indices: a
      cases.push_back({hi, ia, hi, ib, ib < ia});
    }
  }
  if constexpr (std::is_floating_point_v<V>) {
    const V nan_a = nan_of<V>("1"), nan_b = nan_of<V>("2");
    for (auto [ia, ib] : index_orders) {
      // -0.0 == +0.0: a tie, so the index decides, and with equal indices
      // a's zero is kept, sign bit included.
      cases.push_back({V(-0.0), ia, V(0.0), ib, ib < ia});
      cases.push_back({V(0.0), ia, V(-0.0), ib, ib < ia});
      // NaN compares false both ways, so a is kept, as in MAX/MIN: a NaN in
      // a wins and a NaN in b loses, whatever the indices.
      for (V x : {V(0), V(-1), std::numeric_limits<V>::infinity(), -std::numeric_limits<V>::infinity()}) {
        cases.push_back({nan_a, ia, x, ib, false});
        cases.push_back({x, ia, nan_b, ib, false});
      }
      cases.push_back({nan_a, ia, nan_b, ib, false});
      cases.push_back({nan_a, ia, nan_a, ib, false});
    }
  }
  if constexpr (std::is_floating_point_v<I>) {
    // Two-real types: a NaN index never wins a tie; -0.0 and +0.0 are equal
    // indices, so a's is kept.
    const I nan = nan_of<I>("3");
    for (V v : {V(0), V(5)}) {
      cases.push_back({v, nan, v, I(0), false});
      cases.push_back({v, I(0), v, nan, false});
      cases.push_back({v, nan, v, nan, false});
      cases.push_back({v, I(-0.0), v, I(0.0), false});
      cases.push_back({v, I(0.0), v, I(-0.0), false});
    }
  }
  return cases;
}

template <class V, class I>
void test_loc_type(TypeId type, size_t index_offset, Rng& rng) {
  const size_t size = size_of(type);
  const size_t lengths[] = {0, 1, 7, 15, 31, 63, 127, kMillionOdd};
  for (OpId op : {OpId::MAXLOC, OpId::MINLOC}) {
    const auto cases = loc_cases<V, I>(op);
    for (size_t n : lengths) {
      // Consecutive windows of the case list, so that each case shows up at
      // every position of a short buffer; one window for the long length.
      if (n >= kMillionOdd && !long_form()) continue;
      const size_t windows = n == 0 ? 1 : n >= kMillionOdd ? 1 : (cases.size() + n - 1) / n;
      for (size_t w = 0; w < windows; ++w) {
        std::vector<uint8_t> a(n * size), b(n * size), want(n * size);
        for (size_t i = 0; i < n; ++i) {
          const auto& c = cases[(w * n + i) % cases.size()];
          uint8_t* ea = a.data() + i * size;
          uint8_t* eb = b.data() + i * size;
          for (size_t k = 0; k < size; ++k) {  // padding holds garbage
            ea[k] = static_cast<uint8_t>(rng.next());
            eb[k] = static_cast<uint8_t>(rng.next());
          }
          std::memcpy(ea, &c.va, value_bytes<V>());
          std::memcpy(ea + index_offset, &c.ia, sizeof(I));
          std::memcpy(eb, &c.vb, value_bytes<V>());
          std::memcpy(eb + index_offset, &c.ib, sizeof(I));
          uint8_t* ew = want.data() + i * size;
          std::memcpy(ew, eb, size);
          if (!c.want_b) {
            std::memcpy(ew, ea, value_bytes<V>());
            std::memcpy(ew + index_offset, ea + index_offset, sizeof(I));
          }
        }
        for (const char* isa : kIsaNames) {
          if (!select_isa(isa)) continue;
          for (Alias mode : {Alias::kNone, Alias::kOutIsA, Alias::kOutIsB}) {
            const size_t offset = (w + static_cast<size_t>(mode)) % 8;  // every misalignment in turn
            g_context = describe(op, type) + " cases n=" + std::to_string(n) + " window=" + std::to_string(w) +
                        " offset=" + std::to_string(offset) + " " + alias_name(mode);
            const auto& got = run(lookup(op, type), type, a.data(), b.data(), n, offset, mode);
            g_context += first_difference(got, want, size);
            CHECK(got == want);
          }
        }
      }
    }
  }
  select_isa("auto");
}

void test_loc_cases(Rng& rng) {
  test_loc_type<float, int32_t>(TypeId::FLOAT_INT, 4, rng);
  test_loc_type<double, int32_t>(TypeId::DOUBLE_INT, 8, rng);
  test_loc_type<int64_t, int32_t>(TypeId::LONG_INT, 8, rng);
  test_loc_type<int32_t, int32_t>(TypeId::TWO_INT, 4, rng);
  test_loc_type<int16_t, int32_t>(TypeId::SHORT_INT, 4, rng);
  test_loc_type<long double, int32_t>(TypeId::LONG_DOUBLE_INT, 16, rng);
  test_loc_type<float, float>(TypeId::TWO_FLOAT, 4, rng);
  test_loc_type<double, double>(TypeId::TWO_DOUBLE, 8, rng);
}

// ---- 4. Every kernel against the reference ----------------------------------------------

constexpr size_t kMillion = 1u << 20;
constexpr size_t kLengths[] = {0,  1,  2,   3,   7,   8,   15,   16,       31,           32,           63,
                           64, 65, 127, 128, 255, 256, 1000, kMillion, kMillion + 1, kMillion + 7, kMillion + 63};
constexpr size_t kLargeFirst = 18, kLargeCount = 4;  // the last four are the large ones
static_assert(kLengths[kLargeFirst] == kMillion && sizeof(kLengths) / sizeof(size_t) == kLargeFirst + kLargeCount);

// Every table this CPU supports, every (op, type) pair. Small lengths run in
// every misalignment (0..7) and aliasing form; each pair also gets one of the
// million-item lengths in the long form (rotating through them, and
// through the misalignments and forms) to keep that run short.
void test_against_reference(Rng& rng) {
  size_t rotation = 0;
  std::vector<uint8_t> want;  // reused, as run()'s buffers are
  for (int t = 0; t < kTypes; ++t) {
    const TypeId type = static_cast<TypeId>(t);
    const size_t size = size_of(type);
    // One pool of random items per type; each run takes a slice of it.
    const size_t pool = (long_form() ? kMillion : 1000) + 64 + 1024;
    std::vector<uint8_t> a(pool * size), b(pool * size);
    fill(type, a.data(), pool, rng);
    fill(type, b.data(), pool, rng);
    for (const char* isa : kIsaNames) {
      if (!select_isa(isa)) continue;
      for (int o = 0; o < kOps; ++o) {
        const OpId op = static_cast<OpId>(o);
        if (!defined(op, type)) continue;
        ReduceFn fn = lookup(op, type);
        if (fn == nullptr) continue;  // already reported by test_table
        ++rotation;
        for (size_t n : kLengths) {
          if (n >= kMillion && (!long_form() || n != kLengths[kLargeFirst + rotation % kLargeCount])) continue;
          std::vector<std::pair<size_t, Alias>> forms;
          for (size_t offset = 0; offset < 8; ++offset)
            for (Alias mode : {Alias::kNone, Alias::kOutIsA, Alias::kOutIsB})
              if (n < kMillion || (offset == 1 + rotation % 7 && static_cast<size_t>(mode) == rotation % 3))
                forms.push_back({offset, mode});
          for (auto [offset, mode] : forms) {
            const size_t start = rng.below(1024);
            const uint8_t* sa = a.data() + start * size;
            const uint8_t* sb = b.data() + start * size;
            want.assign(n * size, 0);
            reference(op, type, sa, sb, want.data(), n);
            g_context = describe(op, type) + " n=" + std::to_string(n) + " offset=" + std::to_string(offset) +
                        " " + alias_name(mode);
            const auto& got = run(fn, type, sa, sb, n, offset, mode);
            g_context += first_difference(got, want, size);
            CHECK(got == want);
          }
        }
      }
    }
  }
  select_isa("auto");
}

// ---- 5. Every table bit-identical to the scalar one --------------------------------------

void test_tables_agree(Rng& rng) {
  const size_t lengths[] = {1, 5, 17, 33, 100, 257, 1023, 4099, 65537};
  for (const char* name : kIsaNames) {
    if (std::strcmp(name, "scalar") == 0 || !cpu_has(name)) continue;
    for (int t = 0; t < kTypes; ++t) {
      const TypeId type = static_cast<TypeId>(t);
      const size_t size = size_of(type);
      for (int o = 0; o < kOps; ++o) {
        const OpId op = static_cast<OpId>(o);
        if (!defined(op, type)) continue;
        select_isa("scalar");
        ReduceFn scalar = lookup(op, type);
        select_isa(name);
        ReduceFn wide = lookup(op, type);
        if (!scalar || !wide) continue;
        for (size_t n : lengths) {
          std::vector<uint8_t> a(n * size), b(n * size);
          fill(type, a.data(), n, rng);
          fill(type, b.data(), n, rng);
          const size_t offset = rng.below(8);
          const Alias mode = static_cast<Alias>(rng.below(3));
          g_context = std::string(name) + " vs scalar: " + describe(op, type) + " n=" + std::to_string(n) +
                      " " + alias_name(mode);
          const std::vector<uint8_t> want = run(scalar, type, a.data(), b.data(), n, offset, mode);  // a copy
          const auto& got = run(wide, type, a.data(), b.data(), n, (offset + 1) % 8, mode);
          g_context += first_difference(got, want, size);
          CHECK(got == want);
        }
      }
    }
  }
  select_isa("auto");
}

// ---- 6. 16-bit floats, every value ---------------------------------------------------------

// a = each of the 65536 values, b = one value for all: signed zeros and one
// (the conversions both ways, every subnormal and NaN payload), halving
// (ties in the subnormals), 1.5 and 1 + 2^-fraction times (rounding in
// every binade, into overflow), the smallest subnormal and the largest
// value added (sticky bits, overflow), infinity and a NaN; and random b.
void test_halves(Rng& rng) {
  for (TypeId type : {TypeId::F16, TypeId::BF16}) {
    const HalfFormat& f = format_of(type);
    const double seconds[] = {0.0, -0.0, 1.0, 0.5, 1.5, -1.0 - std::ldexp(1.0, -f.fraction),
                              half_value(f, 0x0001), half_value(f, uint16_t(f.exponent_mask() - 1)), INFINITY};
    std::vector<uint16_t> every(65536);
    for (size_t i = 0; i < every.size(); ++i) every[i] = uint16_t(i);
    std::vector<std::vector<uint16_t>> bs;
    for (double v : seconds) bs.emplace_back(65536, half_round(f, v));
    bs.emplace_back(65536, uint16_t(f.exponent_mask() | 5));  // a signalling NaN
    bs.emplace_back(65536);
    for (uint16_t& h : bs.back()) h = make_half(f, rng);
    for (const char* isa : kIsaNames) {
      if (!select_isa(isa)) continue;
      for (OpId op : {OpId::MAX, OpId::MIN, OpId::SUM, OpId::PROD}) {
        for (size_t k = 0; k < bs.size(); ++k) {
          for (bool swap : {false, true}) {
            const uint8_t* a = reinterpret_cast<const uint8_t*>((swap ? bs[k] : every).data());
            const uint8_t* b = reinterpret_cast<const uint8_t*>((swap ? every : bs[k]).data());
            std::vector<uint8_t> want(2 * 65536);
            reference(op, type, a, b, want.data(), 65536);
            g_context = std::string(isa) + " every value: " + describe(op, type) + " with b[" + std::to_string(k) +
                        "]" + (swap ? " swapped" : "");
            const auto& got = run(lookup(op, type), type, a, b, 65536, k % 8, static_cast<Alias>(k % 3));
            g_context += first_difference(got, want, 2);
            CHECK(got == want);
          }
        }
      }
    }
  }
  select_isa("auto");
  // A few values written out, so the reference itself is checked too.
  g_context = "16-bit values by hand";
  CHECK(half_round(kBinary16, 1.0) == 0x3c00);
  CHECK(half_round(kBinary16, 65504.0) == 0x7bff);
  CHECK(half_round(kBinary16, 65519.99) == 0x7bff);
  CHECK(half_round(kBinary16, 65520.0) == 0x7c00);              // the tie goes up, to infinity
  CHECK(half_round(kBinary16, std::ldexp(1.0, -25)) == 0x0000);  // half the smallest subnormal: tie to even
  CHECK(half_round(kBinary16, std::ldexp(3.0, -25)) == 0x0002);  // 1.5 units: tie to even (2)
  CHECK(half_round(kBinary16, -std::ldexp(1023.5, -24)) == 0x8400);  // into the smallest normal
  CHECK(half_round(kBinary16, 1.0 + std::ldexp(1.0, -11)) == 0x3c00);  // tie at 1, even
  CHECK(half_round(kBinary16, 1.0 + std::ldexp(3.0, -11)) == 0x3c02);  // tie at 1 + 2^-10, even
  CHECK(half_round(kBFloat16, 1.0) == 0x3f80);
  CHECK(half_round(kBFloat16, std::ldexp(1.0, -133)) == 0x0001);
  CHECK(half_round(kBFloat16, std::ldexp(1.0, -134)) == 0x0000);
  CHECK(half_round(kBFloat16, std::ldexp(255.5, 120)) == 0x7f80);   // (2 - 2^-8) 2^127: a tie, to infinity
  CHECK(half_round(kBFloat16, std::ldexp(255.0, 120)) == 0x7f7f);
  CHECK(half_value(kBinary16, 0x0001) == std::ldexp(1.0, -24));
  CHECK(half_value(kBFloat16, 0x8001) == -std::ldexp(1.0, -133));
}

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--expect-isa") == 0) {
    bool ok = lookup(OpId::SUM, TypeId::F64) != nullptr && std::strcmp(active_isa(), argv[2]) == 0;
    return ok ? 0 : 1;
  }
  test_env_at_first_use();
  test_table();
  test_dispatch();
  test_values();
  Rng rng(20240601);
  test_loc_cases(rng);
  test_against_reference(rng);
  test_tables_agree(rng);
  test_halves(rng);
  std::printf("kernels_test: %d checks, %d failures (tables on this CPU:", g_checks, g_failures);
  for (const char* name : kIsaNames)
    if (cpu_has(name)) std::printf(" %s", name);
  std::printf("; auto picks %s)\n", best_isa());
  return g_failures == 0 ? 0 : 1;
}
