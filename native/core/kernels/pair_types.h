// Memory layouts of the storage types that are not plain C scalars: the
// MAXLOC/MINLOC pair structs and the padded long double. Private to kernels/.
#pragma once
#include <cfloat>
#include <cstddef>
#include <cstdint>

namespace nodempi::kernels {

// Bytes of a long double that carry its value. On x86 it is the 80-bit x87
// format in 16 bytes of storage: the last 6 bytes are padding, which the
// kernels never read into a decision and always copy from operand b.
// Elsewhere (e.g. aarch64's IEEE quad) every byte is significant.
inline constexpr size_t kLongDoubleValueBytes = LDBL_MANT_DIG == 64 ? 10 : sizeof(long double);

// Bytes of a T that carry its value (all of them, except for long double).
template <class T>
inline constexpr size_t kValueBytes = sizeof(T);
template <>
inline constexpr size_t kValueBytes<long double> = kLongDoubleValueBytes;

// The pair types, declared exactly as C declares them for MPI, so their
// padding matches what a C or JS caller lays out on LP64 Linux.
template <class V, class I>
struct Pair {
  V value;
  I index;
};
using FloatInt = Pair<float, int32_t>;
using DoubleInt = Pair<double, int32_t>;
using LongInt = Pair<int64_t, int32_t>;
using TwoInt = Pair<int32_t, int32_t>;
using ShortInt = Pair<int16_t, int32_t>;
using LongDoubleInt = Pair<long double, int32_t>;
using TwoFloat = Pair<float, float>;
using TwoDouble = Pair<double, double>;

// lib/datatype.ts hard-codes these sizes; fail the build if a platform
// disagrees rather than reduce garbage.
static_assert(sizeof(FloatInt) == 8 && sizeof(TwoInt) == 8 && sizeof(TwoFloat) == 8);
static_assert(sizeof(ShortInt) == 8 && offsetof(ShortInt, index) == 4);
static_assert(sizeof(DoubleInt) == 16 && sizeof(LongInt) == 16 && sizeof(TwoDouble) == 16);
static_assert(sizeof(long double) == 16 && sizeof(LongDoubleInt) == 32 &&
              offsetof(LongDoubleInt, index) == 16);

}  // namespace nodempi::kernels
