// The AVX-512 table: reduce_ops.h compiled with AVX-512 F/BW/DQ/VL. BW gives
// 8- and 16-bit integer lanes, DQ 64-bit multiplies, VL the 128/256-bit
// forms the vectoriser uses for loop tails; F16C converts FLOAT16.
// prefer-vector-width=512 keeps the compiler on zmm registers even if
// tuning for a CPU that favours ymm: these loops are load/store bound, where
// full width pays. dispatch.cc uses it only if the CPU (and OS) report all
// five extensions.
#include "core/kernels/table.h"

#if defined(__x86_64__)

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,f16c,prefer-vector-width=512")

namespace nodempi::kernels::isa_avx512 {
namespace {
#define NODEMPI_F16C
#define NODEMPI_VECTOR_BYTES 64
#include "core/kernels/reduce_ops.h"
}  // namespace
}  // namespace nodempi::kernels::isa_avx512

#pragma GCC pop_options

namespace nodempi::kernels {

static constexpr Table kAvx512Table = isa_avx512::build_table();

const Table& avx512_table() { return kAvx512Table; }

}  // namespace nodempi::kernels

#endif  // __x86_64__
