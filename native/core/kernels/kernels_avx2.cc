// The AVX2 table: reduce_ops.h compiled with AVX2 (256-bit integer and float
// vectors) and F16C (FLOAT16 conversions). FMA is deliberately not enabled:
// fused results would differ from the other tables. dispatch.cc uses it
// only if the CPU reports AVX2 and F16C.
#include "core/kernels/table.h"

#if defined(__x86_64__)

#pragma GCC push_options
#pragma GCC target("avx2,f16c")

namespace nodempi::kernels::isa_avx2 {
namespace {
#define NODEMPI_F16C
#define NODEMPI_VECTOR_BYTES 32
#include "core/kernels/reduce_ops.h"
}  // namespace
}  // namespace nodempi::kernels::isa_avx2

#pragma GCC pop_options

namespace nodempi::kernels {

static constexpr Table kAvx2Table = isa_avx2::build_table();

const Table& avx2_table() { return kAvx2Table; }

}  // namespace nodempi::kernels

#endif  // __x86_64__
