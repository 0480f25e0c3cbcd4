// The two binary interfaces (ABIs) of the MPI libraries nodempi can load at
// run time, written out so that no MPI header is needed to build nodempi.
//
// - Open MPI (3.x to 5.x, libmpi.so.40): a handle is a pointer to a global
//   object of the library (MPI_COMM_WORLD is &ompi_mpi_comm_world), found
//   with dlsym once the library is open.
// - MPICH and the libraries that keep its ABI (Intel MPI, Cray MPICH,
//   MVAPICH; libmpich.so.12, libmpi.so.12): a handle is an int, and the
//   predefined ones are fixed numbers.
//
// Everything a handle-independent caller needs (native/core/mpi/mpi.h)
// differs between the two only in the types and values below; the code
// that calls MPI (native/core/mpi/mpi.cc) is one template over them.
// test/native/mpi_abi_test.cc compiles this file against each library's real
// mpi.h and checks every value.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/kernels/kernels.h"

// Open MPI's handle types, as its mpi.h names them.
struct ompi_communicator_t;
struct ompi_datatype_t;
struct ompi_op_t;
struct ompi_request_t;
struct ompi_group_t;
struct ompi_info_t;
struct ompi_errhandler_t;
struct ompi_message_t;

namespace nodempi::mpi {

// A predefined handle in both ABIs: the Open MPI global it points at, and
// MPICH's number for it.
struct Predefined {
  const char* ompi;
  uint32_t mpich;
};

struct OmpiAbi {
  static constexpr const char* kName = "Open MPI";
  using Comm = ompi_communicator_t*;
  using Datatype = ompi_datatype_t*;
  using Op = ompi_op_t*;
  using Request = ompi_request_t*;
  using Group = ompi_group_t*;
  using Info = ompi_info_t*;
  using Errhandler = ompi_errhandler_t*;
  using Message = ompi_message_t*;
  using Count = long long;
  struct Status {
    int MPI_SOURCE;
    int MPI_TAG;
    int MPI_ERROR;
    int cancelled;
    size_t ucount;
  };
  static constexpr int kAnySource = -1;
  static constexpr int kProcNull = -2;
  // A receive of a longer message fills the buffer and reports the
  // message's length: MPI_Recv keeps the seam's promise alone.
  static constexpr bool kRecvTellsTruncation = true;
  static constexpr int kRoot = -4;
  static constexpr int kAnyTag = -1;
  static constexpr int kUndefined = -32766;
  static constexpr int kCommTypeShared = 0;
  static constexpr int kTagUbKeyval = 0;  // MPI_TAG_UB, first of an enum
  static void* in_place() { return reinterpret_cast<void*>(1); }
  static Status* status_ignore() { return nullptr; }
  static constexpr int kMaxLibraryVersionString = 256;
  static constexpr int kMaxProcessorName = 256;
  static constexpr int kMaxErrorString = 256;
  // Error classes nodempi names (MPI_ERR_*); -1: the library has none.
  static constexpr int kErrBuffer = 1, kErrCount = 2, kErrType = 3, kErrTag = 4, kErrComm = 5, kErrRank = 6,
                       kErrRequest = 7, kErrRoot = 8, kErrGroup = 9, kErrOp = 10, kErrArg = 13, kErrUnknown = 14,
                       kErrTruncate = 15, kErrOther = 16, kErrIntern = 17, kErrNotSame = 40, kErrProcFailed = -1;

  template <class H>
  static H handle(void* (*lookup)(const char*), const Predefined& p) {
    return static_cast<H>(lookup(p.ompi));
  }
};

struct MpichAbi {
  static constexpr const char* kName = "MPICH";
  using Comm = int;
  using Datatype = int;
  using Op = int;
  using Request = int;
  using Group = int;
  using Info = int;
  using Errhandler = int;
  using Message = int;
  using Count = long;
  struct Status {
    int count_lo;
    int count_hi_and_cancelled;
    int MPI_SOURCE;
    int MPI_TAG;
    int MPI_ERROR;
  };
  static constexpr int kAnySource = -2;
  static constexpr int kProcNull = -1;
  // MPICH 4.0 writes nothing of a longer message and reports 0 bytes.
  static constexpr bool kRecvTellsTruncation = false;
  static constexpr int kRoot = -3;
  static constexpr int kAnyTag = -1;
  static constexpr int kUndefined = -32766;
  static constexpr int kCommTypeShared = 1;
  static constexpr int kTagUbKeyval = 0x64400001;  // MPI_TAG_UB
  static void* in_place() { return reinterpret_cast<void*>(-1); }
  static Status* status_ignore() { return reinterpret_cast<Status*>(1); }
  static constexpr int kMaxLibraryVersionString = 8192;
  static constexpr int kMaxProcessorName = 128;
  static constexpr int kMaxErrorString = 512;
  static constexpr int kErrBuffer = 1, kErrCount = 2, kErrType = 3, kErrTag = 4, kErrComm = 5, kErrRank = 6,
                       kErrRequest = 19, kErrRoot = 7, kErrGroup = 8, kErrOp = 9, kErrArg = 12, kErrUnknown = 13,
                       kErrTruncate = 14, kErrOther = 15, kErrIntern = 16, kErrNotSame = 35,
                       kErrProcFailed = 101;  // MPIX_ERR_PROC_FAILED

  template <class H>
  static H handle(void* (*)(const char*), const Predefined& p) {
    return static_cast<H>(int32_t(p.mpich));
  }
};

// ---- Predefined handles, both ABIs side by side ----------------------------

constexpr Predefined kCommWorld{"ompi_mpi_comm_world", 0x44000000};
constexpr Predefined kCommSelf{"ompi_mpi_comm_self", 0x44000001};
constexpr Predefined kCommNull{"ompi_mpi_comm_null", 0x04000000};
constexpr Predefined kGroupNull{"ompi_mpi_group_null", 0x08000000};
constexpr Predefined kDatatypeNull{"ompi_mpi_datatype_null", 0x0c000000};
constexpr Predefined kOpNull{"ompi_mpi_op_null", 0x18000000};
constexpr Predefined kRequestNull{"ompi_request_null", 0x2c000000};
constexpr Predefined kInfoNull{"ompi_mpi_info_null", 0x1c000000};
constexpr Predefined kErrorsReturn{"ompi_mpi_errors_return", 0x54000001};
constexpr Predefined kByte{"ompi_mpi_byte", 0x4c00010d};
constexpr Predefined kMessageNull{"ompi_message_null", 0x2c000000};
constexpr Predefined kMessageNoProc{"ompi_message_no_proc", 0x6c000000};

// The MPI datatype of each kernel storage type (kernels::TypeId order):
// reductions run on these. Several MPI types share a storage type (INT,
// INT32_T and INTEGER are all I32); any of them gives the same result.
constexpr Predefined kBasicTypes[] = {
    {"ompi_mpi_int8_t", 0x4c000137},                  // I8
    {"ompi_mpi_uint8_t", 0x4c00013b},                 // U8
    {"ompi_mpi_int16_t", 0x4c000238},                 // I16
    {"ompi_mpi_uint16_t", 0x4c00023c},                // U16
    {"ompi_mpi_int32_t", 0x4c000439},                 // I32
    {"ompi_mpi_uint32_t", 0x4c00043d},                // U32
    {"ompi_mpi_int64_t", 0x4c00083a},                 // I64
    {"ompi_mpi_uint64_t", 0x4c00083e},                // U64
    {"ompi_mpi_float", 0x4c00040a},                   // F32
    {"ompi_mpi_double", 0x4c00080b},                  // F64
    {"ompi_mpi_long_double", 0x4c00100c},             // F80
    {"ompi_mpi_c_float_complex", 0x4c000840},         // C32
    {"ompi_mpi_c_double_complex", 0x4c001041},        // C64
    {"ompi_mpi_c_long_double_complex", 0x4c002042},   // C80
    {"ompi_mpi_c_bool", 0x4c00013f},                  // BOOL
    {"ompi_mpi_logical", 0x4c00041d},                 // LOGICAL
    {"ompi_mpi_byte", 0x4c00010d},                    // BYTE
    {"ompi_mpi_float_int", 0x8c000000},               // FLOAT_INT
    {"ompi_mpi_double_int", 0x8c000001},              // DOUBLE_INT
    {"ompi_mpi_long_int", 0x8c000002},                // LONG_INT
    {"ompi_mpi_2int", 0x4c000816},                    // TWO_INT
    {"ompi_mpi_short_int", 0x8c000003},               // SHORT_INT
    {"ompi_mpi_longdbl_int", 0x8c000004},             // LONG_DOUBLE_INT
    {"ompi_mpi_2real", 0x4c000821},                   // TWO_FLOAT (MPI_2REAL)
    {"ompi_mpi_2dblprec", 0x4c001023},                // TWO_DOUBLE (MPI_2DOUBLE_PRECISION)
    // Not in MPI 4.1: stand-ins of their size, which move the same bytes.
    // A reduction on a stand-in always runs nodempi's kernel (mpi.cc,
    // Library::calibrate). The libraries' own FLOAT16 is not used: MPICH's
    // MPIX_C_FLOAT16 (from 3.3; Open MPI's shortfloat extension has one
    // too) is accepted by MPI_Type_size, but MPICH 4.0.2 aborts in
    // MPI_Reduce_local on it (an assertion in its yaksa pack code), which
    // no error handler catches; data moves as bytes anyway, so all it
    // could add is the library's own ops. No library has a bfloat16 type.
    {"ompi_mpi_uint16_t", 0x4c00023c},                // F16 (MPI_UINT16_T)
    {"ompi_mpi_uint16_t", 0x4c00023c},                // BF16 (MPI_UINT16_T)
};
static_assert(sizeof(kBasicTypes) / sizeof(kBasicTypes[0]) == size_t(kernels::TypeId::COUNT),
              "one MPI datatype per kernel storage type");

// Whether kBasicTypes gives a stand-in for kernel storage type t.
constexpr bool is_stand_in(kernels::TypeId t) { return t == kernels::TypeId::F16 || t == kernels::TypeId::BF16; }

// The MPI op of each predefined op (kernels::OpId order).
constexpr Predefined kOps[] = {
    {"ompi_mpi_op_max", 0x58000001},      {"ompi_mpi_op_min", 0x58000002},    {"ompi_mpi_op_sum", 0x58000003},
    {"ompi_mpi_op_prod", 0x58000004},     {"ompi_mpi_op_land", 0x58000005},   {"ompi_mpi_op_band", 0x58000006},
    {"ompi_mpi_op_lor", 0x58000007},      {"ompi_mpi_op_bor", 0x58000008},    {"ompi_mpi_op_lxor", 0x58000009},
    {"ompi_mpi_op_bxor", 0x5800000a},     {"ompi_mpi_op_maxloc", 0x5800000c}, {"ompi_mpi_op_minloc", 0x5800000b},
    {"ompi_mpi_op_replace", 0x5800000d},  {"ompi_mpi_op_no_op", 0x5800000e},
};
static_assert(sizeof(kOps) / sizeof(kOps[0]) == size_t(kernels::OpId::COUNT), "one MPI op per predefined op");

}  // namespace nodempi::mpi
