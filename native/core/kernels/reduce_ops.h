// The one source of the predefined reduction kernels. Each kernels_<isa>.cc
// includes it inside its own namespace (nodempi::kernels::isa_<name>) and
// its own `#pragma GCC target` region, so the compiler vectorises the same
// loops for that instruction set.
//
// Why a namespace per ISA: these are templates, and the linker keeps one copy
// of an inline or template function per mangled name. Were the AVX-512
// instantiation of elementwise<Sum, double> named like the baseline one, the
// linker could hand AVX-512 code to a CPU without it. The named namespace
// makes the names distinct; the anonymous one inside it also gives them
// internal linkage, so no copy is visible outside its own object file.
//
// Deliberately no #pragma once and no #include: this text lands inside a
// namespace and a target region. Its dependencies come from table.h, which
// each kernels_<isa>.cc includes first, outside the target region, so that
// standard-library inline functions are compiled for the baseline only.
//
// Rules every kernel keeps:
// - Pointers may be unaligned and out may be a or b exactly: memory is only
//   touched through memcpy-style loads and stores, and every element's inputs
//   are loaded before its output is stored. No __restrict: GCC's runtime
//   overlap check lets out == a (distance 0) take the vector path, and
//   rejects only the partial overlaps the interface rules out anyway.
// - Integer arithmetic wraps (two's complement) and is done in an unsigned
//   type, so there is no signed overflow.
// - Every table must give bit-identical results. Comparisons and selections
//   are exact by nature; for + - * see nan_first() below. Nothing may be
//   contracted into an FMA: the build passes -ffp-contract=off, complex_prod
//   works around a GCC 12 lapse in honouring it, and test/native/build.sh
//   checks that no kernel object holds an FMA instruction.

using Byte = unsigned char;

// ---- Memory access --------------------------------------------------------

template <class T>
inline T load(const Byte* p) {
  T v;
  __builtin_memcpy(&v, p, sizeof(T));
  return v;
}

// Stores the value bytes of v at out; any padding bytes of the slot (long
// double on x86) are copied from the matching slot of operand b. Reading b
// into tmp first keeps this correct when out == b.
template <class T>
inline void store_value(Byte* out, const T& v, const Byte* b) {
  if constexpr (kValueBytes<T> == sizeof(T)) {
    __builtin_memcpy(out, &v, sizeof(T));
  } else {
    Byte tmp[sizeof(T)];
    __builtin_memcpy(tmp, b, sizeof(T));
    __builtin_memcpy(tmp, &v, kValueBytes<T>);
    __builtin_memcpy(out, tmp, sizeof(T));
  }
}

// Copies the T at src (one of the operands) to out with padding from b, byte
// for byte: a selected long double never passes through an x87 register, so
// even unusual encodings come out exactly as they went in.
template <class T>
inline void copy_value(Byte* out, const Byte* src, const Byte* b) {
  Byte tmp[sizeof(T)];
  __builtin_memcpy(tmp, b, sizeof(T));
  __builtin_memcpy(tmp, src, kValueBytes<T>);
  __builtin_memcpy(out, tmp, sizeof(T));
}

// ---- Arithmetic helpers ---------------------------------------------------

// The unsigned type integer arithmetic is done in. At least as wide as
// unsigned int, so promotion cannot turn it back into a signed int
// (uint16 * uint16 promotes to int and could overflow).
template <class T>
using Wrap = std::common_type_t<std::make_unsigned_t<T>, unsigned>;

// y, unless x is NaN, then x. Used as `x op nan_first(x, y)`.
//
// Why: when both operands of + or * are NaN, the hardware returns the payload
// of one of them, and which one depends on operand order (x86 SSE/AVX: the
// first source; x87: the larger significand). The compiler freely swaps the
// operands of commutative operations, differently in scalar and vector code,
// so the plain `x + y` could give different NaN bits in different tables.
// With this guard both operands are x whenever x is NaN, and at most one
// operand is NaN otherwise, so the result is fixed on every ISA:
//   x is NaN           -> x's payload (quietened)
//   else y is NaN      -> y's payload (quietened)
//   else               -> the ordinary IEEE result (inf - inf etc. give the
//                         CPU's default NaN, the same for every table).
template <class T>
inline T nan_first(T x, T y) {
  return x != x ? x : y;
}

template <class T>
inline T add(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    return x + nan_first(x, y);
  } else {
    return static_cast<T>(static_cast<Wrap<T>>(x) + static_cast<Wrap<T>>(y));
  }
}

template <class T>
inline T sub(T x, T y) {  // floating point only (complex products)
  return x - nan_first(x, y);
}

template <class T>
inline T mul(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    return x * nan_first(x, y);
  } else {
    return static_cast<T>(static_cast<Wrap<T>>(x) * static_cast<Wrap<T>>(y));
  }
}

// ---- Element operations ---------------------------------------------------
// a is the lower rank's operand, b the higher rank's.

// MAX(a, b) = (b > a) ? b : a, evaluated exactly so in every table.
// Consequences for floating point, documented for users in lib/op.ts:
// - a NaN in a propagates (b > NaN is false, so a is kept);
// - a NaN in b is ignored (NaN > a is false, so a is kept);
// - +0.0 and -0.0 compare equal, so the result is a's zero.
// MIN is the mirror image, (b < a) ? b : a, with the same NaN and zero rules.
struct Max {
  template <class T>
  static bool take_b(T a, T b) {
    return b > a;
  }
};
struct Min {
  template <class T>
  static bool take_b(T a, T b) {
    return b < a;
  }
};

struct Sum {
  template <class T>
  static T apply(T a, T b) {
    return add(a, b);
  }
};
struct Prod {
  template <class T>
  static T apply(T a, T b) {
    return mul(a, b);
  }
};

// Logical operations treat any non-zero as true and return exactly 0 or 1.
// `&` and `|` on bools rather than `&&` and `||`, so there is no branch to
// stop vectorisation.
struct LogicalAnd {
  template <class T>
  static T apply(T a, T b) {
    return static_cast<T>((a != 0) & (b != 0));
  }
};
struct LogicalOr {
  template <class T>
  static T apply(T a, T b) {
    return static_cast<T>((a != 0) | (b != 0));
  }
};
struct LogicalXor {
  template <class T>
  static T apply(T a, T b) {
    return static_cast<T>((a != 0) != (b != 0));
  }
};

struct BitAnd {
  template <class T>
  static T apply(T a, T b) {
    return static_cast<T>(a & b);
  }
};
struct BitOr {
  template <class T>
  static T apply(T a, T b) {
    return static_cast<T>(a | b);
  }
};
struct BitXor {
  template <class T>
  static T apply(T a, T b) {
    return static_cast<T>(a ^ b);
  }
};

// ---- Kernels (all with the ReduceFn signature) ----------------------------

// out[i] = Op(a[i], b[i]) over n * K values of T. K = 2 serves complex SUM,
// which is the same operation on the real and imaginary parts.
template <class Op, class T, size_t K = 1>
void elementwise(const void* a, const void* b, void* out, size_t n) {
  const Byte* pa = static_cast<const Byte*>(a);
  const Byte* pb = static_cast<const Byte*>(b);
  Byte* po = static_cast<Byte*>(out);
  const size_t count = n * K;
  for (size_t i = 0; i < count; ++i) {
    const size_t at = i * sizeof(T);
    const T r = Op::apply(load<T>(pa + at), load<T>(pb + at));
    store_value(po + at, r, pb + at);
  }
}

// T at any address: buffers may be unaligned views.
template <class T>
struct Unaligned {
  typedef T type __attribute__((aligned(1)));
};

// out[i] = Pred::take_b(a[i], b[i]) ? b[i] : a[i]  (MAX, MIN).
template <class Pred, class T>
void choose(const void* a, const void* b, void* out, size_t n) {
  if constexpr (kValueBytes<T> == sizeof(T)) {
    // A select on values through (unaligned) T pointers: the vectoriser
    // turns it into max/min. Through byte copies, as elsewhere here, GCC 12
    // kept a compare-and-blend that loads each operand twice whenever
    // out == b (every in-place reduction), at half the speed.
    using U = typename Unaligned<T>::type;
    const U* pa = static_cast<const U*>(a);
    const U* pb = static_cast<const U*>(b);
    U* po = static_cast<U*>(out);
    for (size_t i = 0; i < n; ++i) {
      const T x = pa[i], y = pb[i];
      po[i] = Pred::take_b(x, y) ? y : x;
    }
  } else {
    const Byte* pa = static_cast<const Byte*>(a);
    const Byte* pb = static_cast<const Byte*>(b);
    Byte* po = static_cast<Byte*>(out);
    for (size_t i = 0; i < n; ++i) {
      const size_t at = i * sizeof(T);
      const T x = load<T>(pa + at);
      const T y = load<T>(pb + at);
      copy_value<T>(po + at, Pred::take_b(x, y) ? pb + at : pa + at, pb + at);
    }
  }
}

// Complex PROD: (xr + xi i)(yr + yi i) = (xr yr - xi yi) + (xr yi + xi yr) i,
// the textbook formula without FMA and without C99 Annex G's inf/NaN
// recovery, so every table computes the same four products and two sums.
//
// Kept out of the vectoriser: GCC 12 recognises this shape as a complex
// multiply and, for AVX-512, emits vfmaddsub even under -ffp-contract=off
// (its VEC_FMADDSUB SLP pattern ignores the flag). The fused result rounds
// once instead of twice and would differ from the other tables.
template <class T>
__attribute__((optimize("no-tree-vectorize"))) void complex_prod(const void* a, const void* b, void* out, size_t n) {
  const Byte* pa = static_cast<const Byte*>(a);
  const Byte* pb = static_cast<const Byte*>(b);
  Byte* po = static_cast<Byte*>(out);
  for (size_t i = 0; i < n; ++i) {
    const size_t re = 2 * i * sizeof(T);
    const size_t im = re + sizeof(T);
    const T xr = load<T>(pa + re), xi = load<T>(pa + im);
    const T yr = load<T>(pb + re), yi = load<T>(pb + im);
    const T rr = sub(mul(xr, yr), mul(xi, yi));
    const T ri = add(mul(xr, yi), mul(xi, yr));
    store_value(po + re, rr, pb + re);
    store_value(po + im, ri, pb + im);
  }
}

// MAXLOC / MINLOC on the pair types P = Pair<V, I>: the whole pair of b is
// taken when its value wins (Pred), or when the values are equal and its
// index is smaller; otherwise a's pair is kept. So ties go to the lower
// index, and NaN values follow the MAX/MIN rules above. Padding bytes of the
// result come from b, and are never looked at.
template <class Pred, class P>
void loc(const void* a, const void* b, void* out, size_t n) {
  using V = decltype(P::value);
  using I = decltype(P::index);
  constexpr size_t kValue = offsetof(P, value);
  constexpr size_t kIndex = offsetof(P, index);
  const Byte* pa = static_cast<const Byte*>(a);
  const Byte* pb = static_cast<const Byte*>(b);
  Byte* po = static_cast<Byte*>(out);
  for (size_t i = 0; i < n; ++i) {
    const Byte* ea = pa + i * sizeof(P);
    const Byte* eb = pb + i * sizeof(P);
    const V va = load<V>(ea + kValue), vb = load<V>(eb + kValue);
    const I ia = load<I>(ea + kIndex), ib = load<I>(eb + kIndex);
    const bool take_b = Pred::take_b(va, vb) || (vb == va && ib < ia);
    const Byte* src = take_b ? eb : ea;
    Byte tmp[sizeof(P)];
    __builtin_memcpy(tmp, eb, sizeof(P));
    __builtin_memcpy(tmp + kValue, src + kValue, kValueBytes<V>);
    __builtin_memcpy(tmp + kIndex, src + kIndex, sizeof(I));
    __builtin_memcpy(po + i * sizeof(P), tmp, sizeof(P));
  }
}

// ---- The table --------------------------------------------------------------

// The MPI 4.1 predefined op x storage type table; what is not set stays
// nullptr (REPLACE, NO_OP, CHAR, logical ops on floats, ...).
constexpr Table build_table() {
  Table t{};
  // Each helper sets one op for a family of storage types; `make(T{})`
  // returns the kernel for storage type T.
  auto integers = [&t](OpId op, auto make) {
    t.at(op, TypeId::I8) = make(int8_t{});
    t.at(op, TypeId::U8) = make(uint8_t{});
    t.at(op, TypeId::I16) = make(int16_t{});
    t.at(op, TypeId::U16) = make(uint16_t{});
    t.at(op, TypeId::I32) = make(int32_t{});
    t.at(op, TypeId::U32) = make(uint32_t{});
    t.at(op, TypeId::I64) = make(int64_t{});
    t.at(op, TypeId::U64) = make(uint64_t{});
  };
  auto reals = [&t](OpId op, auto make) {
    t.at(op, TypeId::F32) = make(float{});
    t.at(op, TypeId::F64) = make(double{});
    t.at(op, TypeId::F80) = make(0.0L);
  };
  // make(T{}) here gets the component type of the complex number.
  auto complexes = [&t](OpId op, auto make) {
    t.at(op, TypeId::C32) = make(float{});
    t.at(op, TypeId::C64) = make(double{});
    t.at(op, TypeId::C80) = make(0.0L);
  };
  auto pairs = [&t](OpId op, auto make) {
    t.at(op, TypeId::FLOAT_INT) = make(FloatInt{});
    t.at(op, TypeId::DOUBLE_INT) = make(DoubleInt{});
    t.at(op, TypeId::LONG_INT) = make(LongInt{});
    t.at(op, TypeId::TWO_INT) = make(TwoInt{});
    t.at(op, TypeId::SHORT_INT) = make(ShortInt{});
    t.at(op, TypeId::LONG_DOUBLE_INT) = make(LongDoubleInt{});
    t.at(op, TypeId::TWO_FLOAT) = make(TwoFloat{});
    t.at(op, TypeId::TWO_DOUBLE) = make(TwoDouble{});
  };

  auto max = [](auto v) { return &choose<Max, decltype(v)>; };
  auto min = [](auto v) { return &choose<Min, decltype(v)>; };
  integers(OpId::MAX, max);
  reals(OpId::MAX, max);
  integers(OpId::MIN, min);
  reals(OpId::MIN, min);

  auto sum = [](auto v) { return &elementwise<Sum, decltype(v)>; };
  auto prod = [](auto v) { return &elementwise<Prod, decltype(v)>; };
  integers(OpId::SUM, sum);
  reals(OpId::SUM, sum);
  complexes(OpId::SUM, [](auto v) { return &elementwise<Sum, decltype(v), 2>; });
  integers(OpId::PROD, prod);
  reals(OpId::PROD, prod);
  complexes(OpId::PROD, [](auto v) { return &complex_prod<decltype(v)>; });

  // Logical ops: integers plus C _Bool (1 byte) and Fortran LOGICAL (4
  // bytes), both read as plain integers: a bool byte holding 2 is not UB here.
  auto logical = [&](OpId op, auto make) {
    integers(op, make);
    t.at(op, TypeId::BOOL) = make(uint8_t{});
    t.at(op, TypeId::LOGICAL) = make(int32_t{});
  };
  logical(OpId::LAND, [](auto v) { return &elementwise<LogicalAnd, decltype(v)>; });
  logical(OpId::LOR, [](auto v) { return &elementwise<LogicalOr, decltype(v)>; });
  logical(OpId::LXOR, [](auto v) { return &elementwise<LogicalXor, decltype(v)>; });

  auto bitwise = [&](OpId op, auto make) {
    integers(op, make);
    t.at(op, TypeId::BYTE) = make(uint8_t{});
  };
  bitwise(OpId::BAND, [](auto v) { return &elementwise<BitAnd, decltype(v)>; });
  bitwise(OpId::BOR, [](auto v) { return &elementwise<BitOr, decltype(v)>; });
  bitwise(OpId::BXOR, [](auto v) { return &elementwise<BitXor, decltype(v)>; });

  pairs(OpId::MAXLOC, [](auto v) { return &loc<Max, decltype(v)>; });
  pairs(OpId::MINLOC, [](auto v) { return &loc<Min, decltype(v)>; });
  return t;
}
