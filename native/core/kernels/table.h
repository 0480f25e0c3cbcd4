// The per-instruction-set kernel tables and what builds them. Private to
// kernels/: the rest of the core goes through kernels.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#if defined(__x86_64__)
#include <immintrin.h>  // F16C conversions (reduce_ops.h, the AVX2 and AVX-512 tables)
#endif
#if defined(__aarch64__)
#include <arm_neon.h>  // half-precision conversions (reduce_ops.h, the NEON table)
#endif

#include "core/kernels/kernels.h"
#include "core/kernels/pair_types.h"

namespace nodempi::kernels {

inline constexpr size_t kOpCount = static_cast<size_t>(OpId::COUNT);
inline constexpr size_t kTypeCount = static_cast<size_t>(TypeId::COUNT);

// One instruction set's kernels; nullptr where MPI defines no such reduction.
struct Table {
  ReduceFn fn[kOpCount][kTypeCount];

  constexpr ReduceFn& at(OpId op, TypeId type) {
    return fn[static_cast<size_t>(op)][static_cast<size_t>(type)];
  }
  constexpr ReduceFn get(OpId op, TypeId type) const {
    return fn[static_cast<size_t>(op)][static_cast<size_t>(type)];
  }
};

// Every table is built from reduce_ops.h, compiled in its own translation
// unit for one instruction set. A table exists only on the architecture
// that can run it; dispatch.cc checks the CPU before using it.
const Table& scalar_table();  // kernels_scalar.cc: the architecture baseline
#if defined(__x86_64__)
const Table& avx2_table();    // kernels_avx2.cc
const Table& avx512_table();  // kernels_avx512.cc
#endif
#if defined(__aarch64__)
const Table& neon_table();    // kernels_neon.cc
#endif

}  // namespace nodempi::kernels
