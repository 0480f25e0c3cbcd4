// The NEON table for aarch64: reduce_ops.h compiled with Advanced SIMD,
// which every aarch64 CPU has (so dispatch.cc picks it by default there).
// kernels_scalar.cc is built with SIMD off on aarch64 to be the reference.
// FLOAT16 converts with fcvtl and fcvtn (NODEMPI_NEON_F16).
#include "core/kernels/table.h"

#if defined(__aarch64__)

#pragma GCC push_options
#pragma GCC target("+simd")

namespace nodempi::kernels::isa_neon {
namespace {
#define NODEMPI_NEON_F16
#include "core/kernels/reduce_ops.h"
}  // namespace
}  // namespace nodempi::kernels::isa_neon

#pragma GCC pop_options

namespace nodempi::kernels {

static constexpr Table kNeonTable = isa_neon::build_table();

const Table& neon_table() { return kNeonTable; }

}  // namespace nodempi::kernels

#endif  // __aarch64__
