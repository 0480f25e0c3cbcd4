// The baseline table: reduce_ops.h compiled for the architecture's baseline
// instruction set (SSE2 on x86-64), with no target pragma. It runs on every
// CPU, and NODEMPI_KERNELS=scalar forces it so tests can compare the wider
// tables against it.
//
// On x86-64 the compiler may still vectorise these loops with SSE2; that is
// the point of a baseline. On aarch64, where Advanced SIMD is part of the
// baseline, kernels_neon.cc is the vector table and this one is built with
// SIMD switched off, so "scalar" means the same thing to tests there too.
#include "core/kernels/table.h"

#if defined(__aarch64__)
#pragma GCC push_options
#pragma GCC target("+nosimd")
#endif

namespace nodempi::kernels::isa_scalar {
namespace {
#include "core/kernels/reduce_ops.h"
}  // namespace
}  // namespace nodempi::kernels::isa_scalar

#if defined(__aarch64__)
#pragma GCC pop_options
#endif

namespace nodempi::kernels {

// constexpr: the table is constant-initialised, so it is ready before any
// static constructor could call lookup().
static constexpr Table kScalarTable = isa_scalar::build_table();

const Table& scalar_table() { return kScalarTable; }

}  // namespace nodempi::kernels
