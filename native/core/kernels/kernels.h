// Predefined reduction kernels: a table [op][type] of elementwise functions,
// one copy per instruction set, chosen once at start-up from CPU features.
#pragma once
#include <cstddef>
#include <cstdint>

namespace nodempi::kernels {

// Numbering shared with lib/op.ts (Op.id). Do not reorder.
enum class OpId : uint8_t {
  MAX = 0, MIN, SUM, PROD, LAND, BAND, LOR, BOR, LXOR, BXOR, MAXLOC, MINLOC, REPLACE, NO_OP,
  COUNT
};

// Storage types the kernels know, numbered as lib/datatype.ts (BasicType).
// Several MPI datatypes share one (INT and INT32_T and INTEGER are all I32);
// which ops a given MPI datatype allows is decided by lib/datatype.ts and
// re-checked by the collective with lookup() returning nullptr.
enum class TypeId : uint8_t {
  I8 = 0, U8, I16, U16, I32, U32, I64, U64,
  F32, F64, F80,            // F80: x86 long double, 16-byte storage
  C32, C64, C80,            // complex of float, double, long double
  BOOL,                     // C _Bool, 1 byte, values 0/1
  LOGICAL,                  // Fortran LOGICAL, 4 bytes, 0 false / non-zero true
  BYTE,                     // MPI_BYTE: bitwise ops only
  // Pair types for MAXLOC/MINLOC, laid out as the C structs (padding included)
  FLOAT_INT, DOUBLE_INT, LONG_INT, TWO_INT, SHORT_INT, LONG_DOUBLE_INT,
  TWO_FLOAT, TWO_DOUBLE,    // TWO_REAL, TWO_DOUBLE_PRECISION (value, index as the same type)
  F16, BF16,                // IEEE binary16 and bfloat16, stored as uint16_t (FLOAT16, BFLOAT16)
  COUNT
};

// out[i] = a[i] op b[i] for i < n items. `a` is the operand from the lower
// rank (MPI's invec), `b` the higher (inoutvec). out may alias a or b
// exactly (same pointer), never partially.
using ReduceFn = void (*)(const void* a, const void* b, void* out, size_t n);

// The function for (op, type) in the active table, or nullptr when MPI does
// not define that op on that storage type.
ReduceFn lookup(OpId op, TypeId type);

// Size in bytes of one item of a storage type.
size_t type_size(TypeId type);

// The names of lib/op.ts and lib/datatype.ts ("SUM"; "INT", the first of
// the predefined datatypes stored as `type`, as lib/coll/agree.ts names
// them for the mpi backend), for messages; nullptr when out of range.
const char* op_name(OpId op);
const char* type_name(TypeId type);

// Which table is active: "scalar", "avx2", "avx512" (or "neon").
const char* active_isa();

// Whether `name` is "auto" or the name of a table on some architecture
// (NODEMPI_KERNELS's values; this build may lack it), and those names for
// messages.
bool known_table(const char* name);
const char* table_names();

// Force a table by name ("scalar", "avx2", "avx512", "auto"); returns false
// if the CPU cannot run it. NODEMPI_KERNELS=scalar in the environment does the
// same at start-up.
bool select_isa(const char* name);

}  // namespace nodempi::kernels
