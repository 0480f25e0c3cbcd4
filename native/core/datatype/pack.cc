// Pack and unpack: one walker over the description, instantiated for each
// direction. The stream side always advances by whole runs; a run is one
// memcpy, and a strided loop of small blocks uses a fixed-size copy the
// compiler turns into register moves.
#include "core/datatype/pack.h"

#include <algorithm>
#include <cstring>
#include <string>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/error.h"

namespace nodempi::datatype {
namespace {

template <bool Pack>
inline void move(uint8_t* user, uint8_t* stream, size_t n) {
  if constexpr (Pack) {
    std::memcpy(stream, user, n);
  } else {
    std::memcpy(user, stream, n);
  }
}

// `n` blocks of L bytes, `stride` apart in user memory, back to back in the
// stream. L is a constant, so each copy is a load and a store.
template <bool Pack, size_t L>
void strided_fixed(uint8_t* user, int64_t stride, int64_t n, uint8_t* stream) {
  for (int64_t i = 0; i < n; ++i) {
    move<Pack>(user, stream, L);
    user += stride;
    stream += L;
  }
}

#if defined(__x86_64__)
// Wider copies for the commonest strided case, 8-byte blocks (a column of
// doubles, every other double). The scalar loop does one store per block
// and stores are what limit it: packing four blocks into one 32-byte store
// makes it faster on data in cache (bench/README.md, "Measurements behind
// the code"). Unpacking cannot merge stores to
// places `stride` apart, except with AVX-512's masked stores when several
// blocks share one 64-byte window (stride 16 or 32); the mask leaves the
// bytes between them (the holes) unwritten.
struct Simd {
  bool avx2 = __builtin_cpu_supports("avx2");
  bool avx512 = __builtin_cpu_supports("avx512f");
};
const Simd& simd() {
  static const Simd s;
  return s;
}

__attribute__((target("avx2"))) void pack8_avx2(const uint8_t* user, int64_t stride, int64_t n, uint8_t* stream) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    // Through memcpy: blocks need not be aligned.
    auto at = [&](int64_t k) {
      long long v;
      std::memcpy(&v, user + k * stride, 8);
      return v;
    };
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(stream), _mm256_set_epi64x(at(3), at(2), at(1), at(0)));
    user += 4 * stride;
    stream += 32;
  }
  for (; i < n; ++i, user += stride, stream += 8) std::memcpy(stream, user, 8);
}

// `stride` is 16 or 32: 64 / stride blocks per masked store.
__attribute__((target("avx512f"))) void unpack8_avx512(uint8_t* user, int64_t stride, int64_t n,
                                                       const uint8_t* stream) {
  const int64_t per = 64 / stride;
  const __m512i spread = stride == 16 ? _mm512_set_epi64(3, 3, 2, 2, 1, 1, 0, 0) : _mm512_set_epi64(1, 1, 1, 1, 0, 0, 0, 0);
  const __mmask8 lanes = stride == 16 ? 0x55 : 0x11;
  // Masked (zeroing) forms throughout: they read only the stream bytes of
  // these blocks, and leave no lane undefined.
  const __mmask8 have = stride == 16 ? 0x0f : 0x03;
  int64_t i = 0;
  for (; i + per <= n; i += per) {
    __m512d v = _mm512_maskz_loadu_pd(have, stream);
    _mm512_mask_storeu_pd(user, lanes, _mm512_maskz_permutexvar_pd(0xff, spread, v));
    user += 64;
    stream += 8 * per;
  }
  for (; i < n; ++i, user += stride, stream += 8) std::memcpy(user, stream, 8);
}
#endif

// `n` blocks of 8 bytes: the wide copies above where they apply.
template <bool Pack>
void strided8(uint8_t* user, int64_t stride, int64_t n, uint8_t* stream) {
#if defined(__x86_64__)
  if constexpr (Pack) {
    if (n >= 4 && simd().avx2) return pack8_avx2(user, stride, n, stream);
  } else {
    if (n >= 2 && (stride == 16 || stride == 32) && simd().avx512) return unpack8_avx512(user, stride, n, stream);
  }
#endif
  strided_fixed<Pack, 8>(user, stride, n, stream);
}

template <bool Pack>
void strided(uint8_t* user, int64_t stride, int64_t len, int64_t n, uint8_t* stream) {
  switch (len) {
    case 1: return strided_fixed<Pack, 1>(user, stride, n, stream);
    case 2: return strided_fixed<Pack, 2>(user, stride, n, stream);
    case 4: return strided_fixed<Pack, 4>(user, stride, n, stream);
    case 8: return strided8<Pack>(user, stride, n, stream);
    case 12: return strided_fixed<Pack, 12>(user, stride, n, stream);
    case 16: return strided_fixed<Pack, 16>(user, stride, n, stream);
    case 24: return strided_fixed<Pack, 24>(user, stride, n, stream);
    case 32: return strided_fixed<Pack, 32>(user, stride, n, stream);
    default:
      for (int64_t i = 0; i < n; ++i) {
        move<Pack>(user, stream, size_t(len));
        user += stride;
        stream += len;
      }
  }
}

// Walks the tree, moving bytes between user memory and the stream cursor.
// `base` arguments are the origin of the node's parent: a node adds its own
// offset.
template <bool Pack>
class Walker {
 public:
  Walker(const Typemap& type, uint8_t* stream) : t_(type), s_(stream) {}

  void copy(uint8_t* user, int64_t n) {
    move<Pack>(user, s_, size_t(n));
    s_ += n;
  }

  // All of node `nd`.
  void full(const Node& nd, uint8_t* base) {
    uint8_t* p = base + nd.off;
    switch (nd.kind) {
      case Kind::BLOCK:
        copy(p, nd.size);
        return;
      case Kind::VECTOR:
        repeat_full(t_.node(nd.child), p, nd.n, nd.stride);
        return;
      case Kind::LIST:
        for (int64_t j = 0; j < nd.n; ++j) {
          const Entry& e = t_.entry(nd.first + size_t(j));
          copy(p + e.disp, e.len);
        }
        return;
      case Kind::INDEXED: {
        const Node& c = t_.node(nd.child);
        for (int64_t j = 0; j < nd.n; ++j) {
          const Entry& e = t_.entry(nd.first + size_t(j));
          repeat_full(c, p + e.disp, e.len, nd.stride);
        }
        return;
      }
      case Kind::STRUCT:
        for (int64_t j = 0; j < nd.n; ++j) full(t_.node(t_.entry(nd.first + size_t(j)).child), p);
        return;
    }
  }

  // `n` copies of node `c`, copy i with its parent's origin at at + i * stride.
  void repeat_full(const Node& c, uint8_t* at, int64_t n, int64_t stride) {
    if (c.kind == Kind::BLOCK) {
      strided<Pack>(at + c.off, stride, c.size, n, s_);
      s_ += n * c.size;
      return;
    }
    for (int64_t i = 0; i < n; ++i, at += stride) full(c, at);
  }

  // Stream bytes [skip, skip + take) of node `nd`; 0 < take, skip + take <= size.
  void part(const Node& nd, uint8_t* base, int64_t skip, int64_t take) {
    if (skip == 0 && take == nd.size) return full(nd, base);
    uint8_t* p = base + nd.off;
    switch (nd.kind) {
      case Kind::BLOCK:
        copy(p + skip, take);
        return;
      case Kind::VECTOR:
        repeat_part(t_.node(nd.child), p, nd.stride, skip, take);
        return;
      case Kind::LIST:
        for (size_t j = seek(nd, skip); take > 0; ++j) {
          const Entry& e = t_.entry(j);
          int64_t o = skip - e.start, t = std::min(take, e.len - o);
          copy(p + e.disp + o, t);
          skip += t;
          take -= t;
        }
        return;
      case Kind::INDEXED: {
        const Node& c = t_.node(nd.child);
        for (size_t j = seek(nd, skip); take > 0; ++j) {
          const Entry& e = t_.entry(j);
          int64_t o = skip - e.start, t = std::min(take, e.len * c.size - o);
          repeat_part(c, p + e.disp, nd.stride, o, t);
          skip += t;
          take -= t;
        }
        return;
      }
      case Kind::STRUCT:
        for (size_t j = seek(nd, skip); take > 0; ++j) {
          const Entry& e = t_.entry(j);
          const Node& c = t_.node(e.child);
          int64_t o = skip - e.start, t = std::min(take, c.size - o);
          part(c, p, o, t);
          skip += t;
          take -= t;
        }
        return;
    }
  }

  // Stream bytes [skip, skip + take) of copies of `c` placed `stride` apart.
  void repeat_part(const Node& c, uint8_t* at, int64_t stride, int64_t skip, int64_t take) {
    int64_t i = skip / c.size, r = skip % c.size;
    if (r) {
      int64_t t = std::min(take, c.size - r);
      part(c, at + i * stride, r, t);
      take -= t;
      ++i;
    }
    if (int64_t k = take / c.size) {
      repeat_full(c, at + i * stride, k, stride);
      i += k;
      take -= k * c.size;
    }
    if (take) part(c, at + i * stride, 0, take);
  }

 private:
  // The entry of `nd` whose stream range holds byte `skip` (an index into
  // the type's entry table).
  size_t seek(const Node& nd, int64_t skip) const {
    size_t lo = nd.first, hi = nd.first + size_t(nd.n);  // answer in [lo, hi)
    while (hi - lo > 1) {
      size_t mid = lo + (hi - lo) / 2;
      if (t_.entry(mid).start <= skip) lo = mid; else hi = mid;
    }
    return lo;
  }

  const Typemap& t_;
  uint8_t* s_;
};

// Stream bytes [first, last) of `count` items whose first origin is `origin`.
template <bool Pack>
void run(const Typemap& t, uint8_t* origin, size_t count, uint8_t* stream, uint64_t first, uint64_t last) {
  if (first == last) return;
  Walker<Pack> w(t, stream);
  const Node& r = t.root();
  int64_t skip = int64_t(first), take = int64_t(last - first);
  // Items that abut continue the root's own loop: count items of a dense
  // block are one run, count items of a vector that ends where the next
  // item starts are one longer vector.
  if (r.kind == Kind::BLOCK && r.size == t.extent()) {
    w.copy(origin + r.off + skip, take);
    return;
  }
  int64_t whole;
  if (r.kind == Kind::VECTOR && !__builtin_mul_overflow(r.n, r.stride, &whole) && whole == t.extent()) {
    w.repeat_part(t.node(r.child), origin + r.off, r.stride, skip, take);
    return;
  }
  w.repeat_part(r, origin, t.extent(), skip, take);
}

void check_range(const Typemap& t, size_t count, uint64_t first, uint64_t last, size_t stream_length,
                 const char* verb) {
  uint64_t total = stream_bytes(t, count);
  if (first > last || last > total) {
    throw CoreError(ErrorClass::ARG, std::string(verb) + ": stream range [" + std::to_string(first) + ", " +
                                         std::to_string(last) + ") is outside the " + std::to_string(total) +
                                         " bytes of the message");
  }
  if (last - first > stream_length) {
    throw CoreError(ErrorClass::TRUNCATE, std::string(verb) + ": " + std::to_string(last - first) +
                                              " bytes of packed data, the stream buffer holds " +
                                              std::to_string(stream_length));
  }
}

}  // namespace

uint64_t stream_bytes(const Typemap& type, size_t count) {
  uint64_t total;
  if (__builtin_mul_overflow(uint64_t(type.size()), uint64_t(count), &total) || total > uint64_t(INT64_MAX)) {
    throw CoreError(ErrorClass::COUNT, std::to_string(count) + " items of " + std::to_string(type.size()) +
                                           " bytes overflow the address space");
  }
  return total;
}

void touched(const Typemap& type, const UserBuffer& user, size_t count, int64_t& lo, int64_t& hi) {
  type.span(count, lo, hi);
  if (lo == hi) {
    lo = hi = 0;
    return;
  }
  if (__builtin_add_overflow(lo, user.origin, &lo) || __builtin_add_overflow(hi, user.origin, &hi) || lo < 0 ||
      uint64_t(hi) > user.length) {
    throw CoreError(ErrorClass::BUFFER, std::to_string(count) + " items touch bytes [" + std::to_string(lo) + ", " +
                                            std::to_string(hi) + ") of a buffer of " + std::to_string(user.length) +
                                            " bytes");
  }
}

size_t pack(const Typemap& type, const UserBuffer& user, size_t count, uint8_t* stream, size_t stream_length,
            uint64_t first, uint64_t last) {
  check_range(type, count, first, last, stream_length, "pack");
  int64_t lo, hi;
  touched(type, user, count, lo, hi);
  run<true>(type, user.data + user.origin, count, stream, first, last);
  return size_t(last - first);
}

size_t pack(const Typemap& type, const UserBuffer& user, size_t count, uint8_t* stream, size_t stream_length) {
  return pack(type, user, count, stream, stream_length, 0, stream_bytes(type, count));
}

size_t unpack(const Typemap& type, const uint8_t* stream, size_t stream_length, const UserBuffer& user, size_t count,
              uint64_t first, uint64_t last) {
  check_range(type, count, first, last, stream_length, "unpack");
  int64_t lo, hi;
  touched(type, user, count, lo, hi);
  // The walker is shared with pack; in this direction it only reads the stream.
  run<false>(type, user.data + user.origin, count, const_cast<uint8_t*>(stream), first, last);
  return size_t(last - first);
}

size_t unpack(const Typemap& type, const uint8_t* stream, size_t stream_length, const UserBuffer& user,
              size_t count) {
  return unpack(type, stream, stream_length, user, count, 0, stream_bytes(type, count));
}

}  // namespace nodempi::datatype
