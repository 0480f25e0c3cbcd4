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

// T at any address: buffers may be unaligned views.
template <class T>
struct Unaligned {
  typedef T type __attribute__((aligned(1)));
};

template <class T>
inline T load(const Byte* p) {
  if constexpr (kValueBytes<T> == sizeof(T)) {
    T v;
    __builtin_memcpy(&v, p, sizeof(T));
    return v;
  } else {
    // Long double: one x87 load from the slot. Copied through a local
    // first, the 10-byte load would follow a 16-byte store it cannot take
    // its data from (a store-forwarding stall per element; bench/README.md,
    // "Measurements behind the code").
    return *reinterpret_cast<const typename Unaligned<T>::type*>(p);
  }
}

// Stores the value bytes of v at out; any padding bytes of the slot (long
// double on x86) are copied from the matching slot of operand b. Reading b
// into tmp first keeps this correct when out == b.
template <class T>
inline void store_value(Byte* out, const T& v, const Byte* b) {
  if constexpr (kValueBytes<T> == sizeof(T)) {
    __builtin_memcpy(out, &v, sizeof(T));
  } else {
    // The value with one x87 store, which writes its 10 bytes only, and
    // the padding by itself: a slot assembled in a local from both would
    // stall store forwarding as load() explains.
    Byte pad[sizeof(T) - kValueBytes<T>];
    __builtin_memcpy(pad, b + kValueBytes<T>, sizeof pad);
    *reinterpret_cast<typename Unaligned<T>::type*>(out) = v;
    __builtin_memcpy(out + kValueBytes<T>, pad, sizeof pad);
  }
}

// Copies the T at src (one of the operands) to out with padding from b, byte
// for byte: a selected long double never passes through an x87 register, so
// even unusual encodings come out exactly as they went in.
template <class T>
inline void copy_value(Byte* out, const Byte* src, const Byte* b) {
  Byte value[kValueBytes<T>], pad[sizeof(T) - kValueBytes<T>];
  __builtin_memcpy(value, src, sizeof value);
  __builtin_memcpy(pad, b + kValueBytes<T>, sizeof pad);
  __builtin_memcpy(out, value, sizeof value);
  __builtin_memcpy(out + kValueBytes<T>, pad, sizeof pad);
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
  // The same on whole vectors: a lane of -1 where b is taken, else 0.
  template <class V>
  static auto take_b_lanes(V a, V b) {
    return b > a;
  }
};
struct Min {
  template <class T>
  static bool take_b(T a, T b) {
    return b < a;
  }
  template <class V>
  static auto take_b_lanes(V a, V b) {
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

// ---- + and * on whole vectors (the AVX2 and AVX-512 tables) --------------
//
// x86's vector add and multiply return their first source's NaN when both
// sources are NaN, and the NaN source otherwise: with a as the first source
// that is `a op nan_first(a, b)` in one instruction. The compiler cannot be
// told so (it may swap the operands of + and *), and vectorising the guard
// costs a compare and a blend per vector, which in L1 slows the commonest
// reductions a lot (bench/README.md, "Measurements behind the code"). So
// the instruction is written out. kernels_<isa>.cc defines
// NODEMPI_VECTOR_BYTES for the tables this applies to.
#if defined(NODEMPI_VECTOR_BYTES)
template <class T>
struct Vector {
  typedef T type __attribute__((vector_size(NODEMPI_VECTOR_BYTES)));
};

template <class Op, class T>
inline constexpr bool kOrdered =
    (std::is_same_v<Op, Sum> || std::is_same_v<Op, Prod>) && (std::is_same_v<T, float> || std::is_same_v<T, double>);

template <class Op, class T>
inline typename Vector<T>::type ordered(typename Vector<T>::type x, typename Vector<T>::type y) {
  typename Vector<T>::type r;
  // AT&T order: second source, first source, destination.
  if constexpr (std::is_same_v<Op, Sum> && std::is_same_v<T, double>) {
    asm("vaddpd %2, %1, %0" : "=v"(r) : "v"(x), "v"(y));
  } else if constexpr (std::is_same_v<Op, Sum>) {
    asm("vaddps %2, %1, %0" : "=v"(r) : "v"(x), "v"(y));
  } else if constexpr (std::is_same_v<T, double>) {
    asm("vmulpd %2, %1, %0" : "=v"(r) : "v"(x), "v"(y));
  } else {
    asm("vmulps %2, %1, %0" : "=v"(r) : "v"(x), "v"(y));
  }
  return r;
}

// The vector at element i of p, and stores one there. Functions, not
// lambdas: g++ compiles a lambda for the baseline target whatever #pragma
// GCC target surrounds it.
template <class T>
inline typename Vector<T>::type vector_at(const Byte* p, size_t i) {
  typename Vector<T>::type v;
  __builtin_memcpy(&v, p + i * sizeof(T), sizeof v);
  return v;
}
template <class T>
inline void vector_put(Byte* p, size_t i, typename Vector<T>::type v) {
  __builtin_memcpy(p + i * sizeof(T), &v, sizeof v);
}

// The whole vectors of a count-element kernel, four per step while four
// remain; returns how many elements it did. Each step loads all its inputs
// before it stores, so out may be a or b.
template <class Op, class T>
size_t ordered_vectors(const Byte* a, const Byte* b, Byte* out, size_t count) {
  using V = typename Vector<T>::type;
  constexpr size_t kLanes = sizeof(V) / sizeof(T);
  constexpr auto at = vector_at<T>;
  constexpr auto put = vector_put<T>;
  size_t i = 0;
  for (; i + 4 * kLanes <= count; i += 4 * kLanes) {
    V x0 = at(a, i), x1 = at(a, i + kLanes), x2 = at(a, i + 2 * kLanes), x3 = at(a, i + 3 * kLanes);
    V y0 = at(b, i), y1 = at(b, i + kLanes), y2 = at(b, i + 2 * kLanes), y3 = at(b, i + 3 * kLanes);
    put(out, i, ordered<Op, T>(x0, y0));
    put(out, i + kLanes, ordered<Op, T>(x1, y1));
    put(out, i + 2 * kLanes, ordered<Op, T>(x2, y2));
    put(out, i + 3 * kLanes, ordered<Op, T>(x3, y3));
  }
  for (; i + kLanes <= count; i += kLanes) put(out, i, ordered<Op, T>(at(a, i), at(b, i)));
  return i;
}
#endif

// ---- Kernels (all with the ReduceFn signature) ----------------------------

// out[i] = Op(a[i], b[i]) over n * K values of T. K = 2 serves complex SUM,
// which is the same operation on the real and imaginary parts.
template <class Op, class T, size_t K = 1>
void elementwise(const void* a, const void* b, void* out, size_t n) {
  const Byte* pa = static_cast<const Byte*>(a);
  const Byte* pb = static_cast<const Byte*>(b);
  Byte* po = static_cast<Byte*>(out);
  const size_t count = n * K;
  size_t i = 0;
#if defined(NODEMPI_VECTOR_BYTES)
  if constexpr (kOrdered<Op, T>) i = ordered_vectors<Op, T>(pa, pb, po, count);
#endif
  for (; i < count; ++i) {
    const size_t at = i * sizeof(T);
    const T r = Op::apply(load<T>(pa + at), load<T>(pb + at));
    store_value(po + at, r, pb + at);
  }
}

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
    T rr = xr * yr - xi * yi;
    T ri = xr * yi + xi * yr;
    // A NaN operand makes rr NaN, and with none nan_first() changes
    // nothing: so the plain formula is the guarded one unless a result is
    // NaN, and only then is the guarded one worth its six selects.
    if (rr != rr || ri != ri) {
      rr = sub(mul(xr, yr), mul(xi, yi));
      ri = add(mul(xr, yi), mul(xi, yr));
    }
    store_value(po + re, rr, pb + re);
    store_value(po + im, ri, pb + im);
  }
}

// MAXLOC / MINLOC on the pair types P = Pair<V, I>: the whole pair of b is
// taken when its value wins (Pred), or when the values are equal and its
// index is smaller; otherwise a's pair is kept. So ties go to the lower
// index, and NaN values follow the MAX/MIN rules above. Padding bytes of the
// result come from b, and are never looked at.

// The pairs of 8 and 16 bytes are two words W of half the pair's size: the
// value in the low bytes of the first (SHORT_INT: int16 + 2 padding bytes),
// the index in the low bytes of the second (DOUBLE_INT, LONG_INT: int32 + 4
// padding bytes). Lanes of one width are what the vectoriser handles best:
// compares on words of the pair's own word width, no narrowing conversions
// in the loop, and a single mask that selects both words of a pair.
template <class P>
inline constexpr bool kTwoWords = (sizeof(P) == 8 || sizeof(P) == 16) &&
                                  offsetof(P, value) == 0 && offsetof(P, index) == sizeof(P) / 2;

template <class P>
using PairWord = std::conditional_t<sizeof(P) == 8, uint32_t, uint64_t>;

// A key that orders and compares like the T held in the low bytes of word w.
// A narrower signed integer is shifted to the top of the word and read as a
// signed word: the same order and equality, and the padding bytes drop out.
// Floating point is the word's bits read back as T, so NaN and -0.0 behave
// exactly as in MAX/MIN.
template <class T, class W>
inline auto key(W w) {
  if constexpr (std::is_floating_point_v<T>) {
    static_assert(sizeof(T) == sizeof(W));
    T v;
    __builtin_memcpy(&v, &w, sizeof v);
    return v;
  } else {
    static_assert(std::is_signed_v<T> && sizeof(T) <= sizeof(W));
    return static_cast<std::make_signed_t<W>>(w << (8 * (sizeof(W) - sizeof(T))));
  }
}

// Ones over the bytes of a word that carry a T, zeros over its padding.
template <class T, class W>
inline constexpr W kBytesOf = sizeof(T) == sizeof(W) ? ~W{0} : (W{1} << (8 * sizeof(T))) - 1;

// For each 8-byte word of a pair P: ones over the bytes that hold the value
// or the index, zeros over padding (little-endian byte order).
template <class P>
struct PairByteMasks {
  uint64_t word[sizeof(P) / 8];
};
template <class P>
constexpr PairByteMasks<P> pair_byte_masks() {
  PairByteMasks<P> m{};
  auto mark = [&m](size_t from, size_t count) {
    for (size_t byte = from; byte < from + count; ++byte) m.word[byte / 8] |= uint64_t{0xFF} << (8 * (byte % 8));
  };
  mark(offsetof(P, value), kValueBytes<decltype(P::value)>);
  mark(offsetof(P, index), sizeof(P::index));
  return m;
}
template <class P>
inline constexpr PairByteMasks<P> kPairBytes = pair_byte_masks<P>();

// 256-bit vectors at most for the pair loops, even in the AVX-512 table:
// with operands in memory the zmm form of these loops ran well below the
// ymm form, and below Open MPI's scalar loop; in L2 zmm was faster, but ymm
// already beats Open MPI there (bench/README.md, "Measurements behind the
// code"). Both
// loc_words and loc carry it: loc_words is inlined, and the loop is
// vectorised with its caller's options. On x86 only, where the option
// exists; it changes nothing for the SSE2 and AVX2 tables. (Not keyed on
// __AVX512F__: g++ does not define that macro after #pragma GCC target.)
#if defined(__x86_64__)
#define NODEMPI_LOC_YMM __attribute__((target("prefer-vector-width=256")))
#else
#define NODEMPI_LOC_YMM
#endif

// The loop over the pairs of 8 and 16 bytes.
template <class Pred, class P>
NODEMPI_LOC_YMM void loc_words(const Byte* a, const Byte* b, Byte* out, size_t n) {
  using V = decltype(P::value);
  using I = decltype(P::index);
  using W = PairWord<P>;
  using U = typename Unaligned<W>::type;
  constexpr W kValue = kBytesOf<V, W>, kIndex = kBytesOf<I, W>;
  const U* pa = reinterpret_cast<const U*>(a);
  const U* pb = reinterpret_cast<const U*>(b);
  U* po = reinterpret_cast<U*>(out);
  for (size_t i = 0; i < n; ++i) {
    const W va = pa[2 * i], ia = pa[2 * i + 1];
    const W vb = pb[2 * i], ib = pb[2 * i + 1];
    const auto ka = key<V>(va), kb = key<V>(vb);
    // & and |, not && and ||: no branch for the vectoriser to trip on.
    const bool take_b = Pred::take_b(ka, kb) | ((kb == ka) & (key<I>(ib) < key<I>(ia)));
    po[2 * i] = take_b ? vb : (va & kValue) | (vb & ~kValue);
    po[2 * i + 1] = take_b ? ib : (ia & kIndex) | (ib & ~kIndex);
  }
}

template <class Pred, class P>
NODEMPI_LOC_YMM void loc(const void* a, const void* b, void* out, size_t n) {
  const Byte* pa = static_cast<const Byte*>(a);
  const Byte* pb = static_cast<const Byte*>(b);
  Byte* po = static_cast<Byte*>(out);
  if constexpr (kTwoWords<P>) {
    // The vectoriser does not peel for alignment here (the loop reads
    // pairs of words), and large buffers from malloc sit 16 bytes off a
    // cache line, so half the 32-byte stores would straddle two lines,
    // which slows DOUBLE_INT in L2 (bench/README.md, "Measurements behind
    // the code"). So the first
    // few pairs go first, on their own, and the bulk then stores on line
    // boundaries whenever out is pair-aligned; in place (out == b) that
    // aligns b as well.
    size_t head = (-reinterpret_cast<uintptr_t>(po) & 63) / sizeof(P);
    head = head < n ? head : n;
    loc_words<Pred, P>(pa, pb, po, head);
    const size_t at = head * sizeof(P);
    loc_words<Pred, P>(pa + at, pb + at, po + at, n - head);
  } else {
    // LONG_DOUBLE_INT: x87 compares, which no vector unit has. Still
    // assembled word by word in registers: building the result in a
    // stack buffer from 10-, 4- and 32-byte copies, as this loop once did,
    // stalled every pair on a failed store-to-load forward.
    using V = decltype(P::value);
    using I = decltype(P::index);
    using U = typename Unaligned<uint64_t>::type;
    constexpr size_t kWords = sizeof(P) / 8;
    static_assert(sizeof(P) % 8 == 0);
    const U* wa = reinterpret_cast<const U*>(pa);
    const U* wb = reinterpret_cast<const U*>(pb);
    U* wo = reinterpret_cast<U*>(po);
    for (size_t i = 0; i < n; ++i) {
      const Byte* ea = pa + i * sizeof(P);
      const Byte* eb = pb + i * sizeof(P);
      const V va = load<V>(ea + offsetof(P, value)), vb = load<V>(eb + offsetof(P, value));
      const I ia = load<I>(ea + offsetof(P, index)), ib = load<I>(eb + offsetof(P, index));
      const bool take_b = Pred::take_b(va, vb) | ((vb == va) & (ib < ia));
      // A mask rather than ?:, which GCC turned back into a branch.
      const uint64_t from_b = uint64_t{0} - take_b;
      for (size_t k = 0; k < kWords; ++k) {
        const uint64_t x = wa[i * kWords + k], y = wb[i * kWords + k];
        const uint64_t from_a = ~from_b & kPairBytes<P>.word[k];
        wo[i * kWords + k] = (x & from_a) | (y & ~from_a);
      }
    }
  }
}

// ---- 16-bit floating point (FLOAT16, BFLOAT16) -----------------------------
//
// FLOAT16 is IEEE binary16 (1 sign, 5 exponent, 10 fraction bits), BFLOAT16
// the top half of a binary32 (1, 8, 7); both are stored as uint16_t. SUM and
// PROD widen both operands to float, exactly, compute there as the float
// kernels do (nan_first included), and round the result back to 16 bits to
// nearest, ties to even. Rounding twice, the exact result to float and then
// to 16 bits, gives what rounding once would: for + and * that holds when
// the wide format has at least 2p + 2 significand bits, p being the narrow
// one's (Figueroa, "When is double rounding innocuous?", 1995), and a float
// has 24 >= 2 * 11 + 2 (FLOAT16) and 24 >= 2 * 8 + 2 (BFLOAT16). Products
// are even exact in float (11 + 11 and 8 + 8 bits). BFLOAT16 shares float's
// exponent range, so its subnormal results are float subnormals: a sum of
// two is exact, and a product is rounded in float only below 2^-134, where
// both roundings give zero (or 2^-134 exactly, a tie that goes to zero).
// MAX and MIN compare the widened values and select an operand's own 16
// bits, so they follow the float rules above (NaN payloads kept as they are).
//
// NaN results of SUM and PROD: the lower operand's NaN if it is one, else
// the higher's (nan_first), quietened, with as much of its payload as the
// 16 bits hold (the top fraction bits); a NaN made by the operation
// (inf - inf, 0 * inf) is the CPU's default float NaN, narrowed. The
// software conversions below do what F16C's vcvtph2ps and vcvtps2ph do,
// and aarch64's fcvtl and fcvtn (with FPCR as Linux leaves it), bit for
// bit, NaN payloads and subnormals included: kernels_test.cc checks every
// 16-bit value in every table against a reference, with second operands
// that make every kind of rounding, so tables with and without the
// hardware conversions agree. Nothing is flushed to zero.

template <class T, class F>
inline T bits_as(const F& v) {
  static_assert(sizeof(T) == sizeof(F));
  T r;
  __builtin_memcpy(&r, &v, sizeof r);
  return r;
}

// All ones where `c` holds, else zero. The conversions below compute every
// case and pick one with these masks rather than with ?:, which GCC keeps
// as branches around the float operations (they could trap, as far as it
// knows), and branches stop the vectoriser.
inline uint32_t mask_if(bool c) { return 0u - uint32_t(c); }

// IEEE binary16.
struct Binary16 {
  static float widen(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t em = h & 0x7fffu;  // exponent and fraction
    // Normal numbers: the fields moved into place, the exponent rebiased
    // from 15 to 127.
    const uint32_t normal = (em << 13) + ((127u - 15u) << 23);
    // Infinity and NaN: exponent all ones, a NaN quietened.
    const uint32_t special = (em << 13) | 0x7f800000u | (mask_if(em > 0x7c00u) & 0x00400000u);
    // Zero and subnormals: the fraction times 2^-24, both steps exact.
    const uint32_t tiny = bits_as<uint32_t>(float(int32_t(em)) * 0x1p-24f);
    const uint32_t is_tiny = mask_if(em < 0x0400u), is_special = mask_if(em >= 0x7c00u);
    const uint32_t r = (tiny & is_tiny) | (special & is_special) | (normal & ~(is_tiny | is_special));
    return bits_as<float>(r | sign);
  }

  static uint16_t narrow(float f) {
    const uint32_t u = bits_as<uint32_t>(f);
    const uint32_t sign = (u >> 16) & 0x8000u;
    const uint32_t a = u & 0x7fffffffu;
    // Normal results: the fraction rounded at bit 13 (to nearest, ties to
    // even: add just under half, plus the bit that makes a tie go up when
    // the kept part is odd), the exponent rebiased. A carry out of the
    // fraction moves the exponent on, up to infinity from 65520 on.
    const uint32_t normal = (a + 0x0fffu + ((a >> 13) & 1u) - ((127u - 15u) << 23)) >> 13;
    // Below 2^-14, subnormal or zero: adding 0.5 rounds |f| at 2^-24,
    // the unit of the result, in the CPU's own (nearest, ties to even)
    // rounding; the result's low bits count those units, and a carry makes
    // the smallest normal number, as it should.
    const uint32_t tiny = bits_as<uint32_t>(bits_as<float>(a) + 0.5f) - 0x3f000000u;
    // NaN: quietened, the top 9 bits of the payload kept.
    const uint32_t nan = 0x7e00u | ((a >> 13) & 0x03ffu);
    const uint32_t is_nan = mask_if(a > 0x7f800000u);
    const uint32_t is_inf = mask_if(a >= 0x47800000u) & ~is_nan;  // from 65536 on (65520 rounds up in normal)
    const uint32_t is_tiny = mask_if(a < 0x38800000u);
    const uint32_t r =
        (nan & is_nan) | (0x7c00u & is_inf) | (tiny & is_tiny) | (normal & ~(is_nan | is_inf | is_tiny));
    return uint16_t(r | sign);
  }
};

// bfloat16: the top half of a float.
struct BFloat16 {
  static float widen(uint16_t h) { return bits_as<float>(uint32_t(h) << 16); }

  static uint16_t narrow(float f) {
    const uint32_t u = bits_as<uint32_t>(f);
    // Rounded at bit 16, to nearest, ties to even (as Binary16::narrow);
    // float's largest values carry into infinity, as they should, and
    // subnormals round like any other number.
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    // NaN: quietened, the top 6 bits of the payload kept.
    const uint32_t nan = (u >> 16) | 0x0040u;
    const uint32_t is_nan = mask_if((u & 0x7fffffffu) > 0x7f800000u);
    return uint16_t((nan & is_nan) | (rounded & ~is_nan));
  }
};

#if defined(NODEMPI_F16C) || defined(NODEMPI_NEON_F16)
#define NODEMPI_HALF_VECTORS
// FLOAT16 in whole vectors with the CPU's conversions: F16C in the AVX2 and
// AVX-512 tables (vcvtph2ps, and vcvtps2ph rounding to nearest, ties to
// even, whatever MXCSR says), Advanced SIMD's fcvtl and fcvtn in the NEON
// table (rounding as FPCR says: to nearest, ties to even, unless a program
// changes it). As many halves as a float vector has lanes; the arithmetic
// as in the float kernels, MAX/MIN by a compare and a select of the
// operands' bits. The same results as Binary16's, which the loops in the
// kernels below finish the tails with.
#if defined(NODEMPI_F16C)
using FloatVector = Vector<float>::type;
#else
typedef float FloatVector __attribute__((vector_size(16)));
#endif
inline constexpr size_t kHalfLanes = sizeof(FloatVector) / sizeof(float);
typedef uint16_t HalfVector __attribute__((vector_size(2 * kHalfLanes)));
typedef int16_t HalfMask __attribute__((vector_size(2 * kHalfLanes)));

#if defined(NODEMPI_NEON_F16)
inline FloatVector f16_widen(HalfVector h) { return bits_as<FloatVector>(vcvt_f32_f16(bits_as<float16x4_t>(h))); }
inline HalfVector f16_narrow(FloatVector v) { return bits_as<HalfVector>(vcvt_f16_f32(bits_as<float32x4_t>(v))); }
#elif NODEMPI_VECTOR_BYTES == 64
// The merge-masked forms with every lane set are the plain instructions; the
// plain intrinsics trip GCC 12's -Wmaybe-uninitialized in its own header.
inline FloatVector f16_widen(HalfVector h) {
  return FloatVector(_mm512_mask_cvtph_ps(_mm512_setzero_ps(), __mmask16(0xffff), __m256i(h)));
}
inline HalfVector f16_narrow(FloatVector v) {
  return HalfVector(_mm512_mask_cvtps_ph(_mm256_setzero_si256(), __mmask16(0xffff), __m512(v), _MM_FROUND_TO_NEAREST_INT));
}
#else
inline FloatVector f16_widen(HalfVector h) { return FloatVector(_mm256_cvtph_ps(__m128i(h))); }
inline HalfVector f16_narrow(FloatVector v) {
  return HalfVector(_mm256_cvtps_ph(__m256(v), _MM_FROUND_TO_NEAREST_INT));
}
#endif

// x + y or x * y with nan_first's NaN rule: on x86 the one instruction
// ordered() writes out; elsewhere y replaced by x in the lanes where x is
// NaN, after which the order of the operands no longer matters.
template <class Op>
inline FloatVector f16_apply(FloatVector x, FloatVector y) {
#if defined(NODEMPI_F16C)
  return ordered<Op, float>(x, y);
#else
  const FloatVector z = x != x ? x : y;
  return std::is_same_v<Op, Sum> ? x + z : x * z;
#endif
}

inline HalfVector half_vector_at(const Byte* p, size_t i) {
  HalfVector v;
  __builtin_memcpy(&v, p + 2 * i, sizeof v);
  return v;
}
inline void half_vector_put(Byte* p, size_t i, HalfVector v) { __builtin_memcpy(p + 2 * i, &v, sizeof v); }

// The whole vectors of SUM and PROD; returns how many halves it did.
template <class Op>
size_t f16_ordered_vectors(const Byte* a, const Byte* b, Byte* out, size_t n) {
  size_t i = 0;
  for (; i + kHalfLanes <= n; i += kHalfLanes) {
    const FloatVector x = f16_widen(half_vector_at(a, i)), y = f16_widen(half_vector_at(b, i));
    half_vector_put(out, i, f16_narrow(f16_apply<Op>(x, y)));
  }
  return i;
}

// The whole vectors of MAX and MIN.
template <class Pred>
size_t f16_choose_vectors(const Byte* a, const Byte* b, Byte* out, size_t n) {
  size_t i = 0;
  for (; i + kHalfLanes <= n; i += kHalfLanes) {
    const HalfVector ha = half_vector_at(a, i), hb = half_vector_at(b, i);
    // Lanes of -1 where b is taken, narrowed to the halves' width.
    const HalfMask take_b = __builtin_convertvector(Pred::take_b_lanes(f16_widen(ha), f16_widen(hb)), HalfMask);
    half_vector_put(out, i, take_b ? hb : ha);
  }
  return i;
}
#endif

// SUM and PROD on 16-bit floats of format H (Binary16, BFloat16).
template <class Op, class H>
void half_elementwise(const void* a, const void* b, void* out, size_t n) {
  const Byte* pa = static_cast<const Byte*>(a);
  const Byte* pb = static_cast<const Byte*>(b);
  Byte* po = static_cast<Byte*>(out);
  size_t i = 0;
#if defined(NODEMPI_HALF_VECTORS)
  if constexpr (std::is_same_v<H, Binary16>) i = f16_ordered_vectors<Op>(pa, pb, po, n);
#endif
  for (; i < n; ++i) {
    const float x = H::widen(load<uint16_t>(pa + 2 * i)), y = H::widen(load<uint16_t>(pb + 2 * i));
    // nan_first(x, y) with a mask, for the vectoriser (see mask_if); then
    // the plain operation, whose operands are both x's NaN if x is one.
    const uint32_t x_nan = mask_if(x != x);
    const float z = bits_as<float>((bits_as<uint32_t>(x) & x_nan) | (bits_as<uint32_t>(y) & ~x_nan));
    const uint16_t r = H::narrow(std::is_same_v<Op, Sum> ? x + z : x * z);
    __builtin_memcpy(po + 2 * i, &r, 2);
  }
}

// MAX and MIN on 16-bit floats: b's bits where Pred::take_b holds for the
// widened values, else a's.
template <class Pred, class H>
void half_choose(const void* a, const void* b, void* out, size_t n) {
  const Byte* pa = static_cast<const Byte*>(a);
  const Byte* pb = static_cast<const Byte*>(b);
  Byte* po = static_cast<Byte*>(out);
  size_t i = 0;
#if defined(NODEMPI_HALF_VECTORS)
  if constexpr (std::is_same_v<H, Binary16>) i = f16_choose_vectors<Pred>(pa, pb, po, n);
#endif
  for (; i < n; ++i) {
    const uint16_t x = load<uint16_t>(pa + 2 * i), y = load<uint16_t>(pb + 2 * i);
    const uint16_t r = Pred::take_b(H::widen(x), H::widen(y)) ? y : x;
    __builtin_memcpy(po + 2 * i, &r, 2);
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

  // 16-bit floating point: MAX, MIN, SUM and PROD only.
  t.at(OpId::MAX, TypeId::F16) = &half_choose<Max, Binary16>;
  t.at(OpId::MAX, TypeId::BF16) = &half_choose<Max, BFloat16>;
  t.at(OpId::MIN, TypeId::F16) = &half_choose<Min, Binary16>;
  t.at(OpId::MIN, TypeId::BF16) = &half_choose<Min, BFloat16>;
  t.at(OpId::SUM, TypeId::F16) = &half_elementwise<Sum, Binary16>;
  t.at(OpId::SUM, TypeId::BF16) = &half_elementwise<Sum, BFloat16>;
  t.at(OpId::PROD, TypeId::F16) = &half_elementwise<Prod, Binary16>;
  t.at(OpId::PROD, TypeId::BF16) = &half_elementwise<Prod, BFloat16>;

  pairs(OpId::MAXLOC, [](auto v) { return &loc<Max, decltype(v)>; });
  pairs(OpId::MINLOC, [](auto v) { return &loc<Min, decltype(v)>; });
  return t;
}

#undef NODEMPI_LOC_YMM
#undef NODEMPI_VECTOR_BYTES
#undef NODEMPI_F16C
#undef NODEMPI_NEON_F16
#undef NODEMPI_HALF_VECTORS
