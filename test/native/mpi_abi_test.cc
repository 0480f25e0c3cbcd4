// native/core/mpi/abi.h and api.h against a real mpi.h. nodempi builds
// without any MPI header, so every number, handle name, struct layout and
// function type it relies on is written out by hand; this program is
// compiled once per ABI against that library's own header (CMakeLists.txt:
// mpi_abi_test_openmpi, mpi_abi_test_mpich) and checks every one of them,
// so a wrong value fails here instead of as a wrong result under one MPI.
//
// Open MPI's handles are addresses of the library's globals: the test links
// libmpi and compares each macro's address with dlsym(RTLD_DEFAULT, name of
// abi.h's table), which is how mpi.cc finds them. MPICH's are numbers,
// compared directly; that build needs no library at all. Nothing here
// calls MPI, so no MPI_Init and no launcher.
#if defined(NODEMPI_ABI_OPENMPI)
// The C++ bindings would drag in libmpi_cxx and its symbols; only C is used.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>
// Open MPI 4 declares its persistent collectives (MPIX_*_init) here.
#include <mpi-ext.h>
#elif defined(NODEMPI_ABI_MPICH)
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#else
#error "define NODEMPI_ABI_OPENMPI or NODEMPI_ABI_MPICH"
#endif

#include <dlfcn.h>

#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <string>
#include <type_traits>

#include "check.h"
#include "core/kernels/kernels.h"
#include "core/mpi/abi.h"
#include "core/mpi/api.h"

using namespace nodempi::mpi;
using nodempi::test::g_context;

namespace {

#if defined(NODEMPI_ABI_OPENMPI)
using Abi = OmpiAbi;
constexpr const char* kProgram = "mpi_abi_test (Open MPI)";
#else
using Abi = MpichAbi;
constexpr const char* kProgram = "mpi_abi_test (MPICH)";
#endif

// What mpi.cc's Library passes to Abi::handle: a symbol of the process
// (here libmpi is linked, so RTLD_DEFAULT sees it as dlopen's handle would).
void* lookup(const char* name) { return dlsym(RTLD_DEFAULT, name); }

// One named value against the header's.
void same(int line, const char* what, long long ours, long long header) {
  nodempi::test::g_checks.fetch_add(1);
  if (ours != header) {
    nodempi::test::fail(__FILE__, line,
                        std::string(what) + ": abi.h has " + std::to_string(ours) + ", mpi.h " + std::to_string(header));
  }
}
#define SAME(ours, header) same(__LINE__, #ours " vs " #header, (long long)(ours), (long long)(header))

// A predefined handle: abi.h's table entry resolved as mpi.cc resolves it,
// against the header's macro.
template <class H>
void handle(int line, const char* macro, const Predefined& p, H header) {
  nodempi::test::g_checks.fetch_add(1);
  H ours = Abi::template handle<H>(lookup, p);
#if defined(NODEMPI_ABI_OPENMPI)
  // A name the library does not export resolves to null, which no macro is.
  if (ours != header) {
    nodempi::test::fail(__FILE__, line,
                        std::string(macro) + ": dlsym(\"" + p.ompi + "\") is " +
                            (ours ? "another object" : "missing") + ", not the macro's address");
  }
#else
  if (ours != header) {
    char buf[128];
    std::snprintf(buf, sizeof buf, ": abi.h has 0x%08" PRIx32 ", mpi.h 0x%08x", p.mpich, unsigned(header));
    nodempi::test::fail(__FILE__, line, std::string(macro) + buf);
  }
#endif
}
#define HANDLE(macro, entry) handle(__LINE__, #macro, entry, macro)

// ---- Constants --------------------------------------------------------------

void test_constants() {
  g_context = "constants";
  SAME(Abi::kAnySource, MPI_ANY_SOURCE);
  SAME(Abi::kProcNull, MPI_PROC_NULL);
  SAME(Abi::kRoot, MPI_ROOT);
  SAME(Abi::kAnyTag, MPI_ANY_TAG);
  SAME(Abi::kUndefined, MPI_UNDEFINED);
  SAME(Abi::kCommTypeShared, MPI_COMM_TYPE_SHARED);
  SAME(Abi::kTagUbKeyval, MPI_TAG_UB);
  CHECK(Abi::in_place() == static_cast<void*>(MPI_IN_PLACE));
  CHECK(static_cast<void*>(Abi::status_ignore()) == static_cast<void*>(MPI_STATUS_IGNORE));
  SAME(Abi::kMaxLibraryVersionString, MPI_MAX_LIBRARY_VERSION_STRING);
  SAME(Abi::kMaxProcessorName, MPI_MAX_PROCESSOR_NAME);
  SAME(Abi::kMaxErrorString, MPI_MAX_ERROR_STRING);
}

void test_error_classes() {
  g_context = "error classes";
  SAME(Abi::kErrBuffer, MPI_ERR_BUFFER);
  SAME(Abi::kErrCount, MPI_ERR_COUNT);
  SAME(Abi::kErrType, MPI_ERR_TYPE);
  SAME(Abi::kErrTag, MPI_ERR_TAG);
  SAME(Abi::kErrComm, MPI_ERR_COMM);
  SAME(Abi::kErrRank, MPI_ERR_RANK);
  SAME(Abi::kErrRequest, MPI_ERR_REQUEST);
  SAME(Abi::kErrRoot, MPI_ERR_ROOT);
  SAME(Abi::kErrGroup, MPI_ERR_GROUP);
  SAME(Abi::kErrOp, MPI_ERR_OP);
  SAME(Abi::kErrArg, MPI_ERR_ARG);
  SAME(Abi::kErrUnknown, MPI_ERR_UNKNOWN);
  SAME(Abi::kErrTruncate, MPI_ERR_TRUNCATE);
  SAME(Abi::kErrOther, MPI_ERR_OTHER);
  SAME(Abi::kErrIntern, MPI_ERR_INTERN);
  SAME(Abi::kErrNotSame, MPI_ERR_NOT_SAME);
  // Process failure is an extension (ULFM), named MPIX_ by both; -1 in abi.h
  // where this header has none, so that no error class maps to it.
#if defined(MPIX_ERR_PROC_FAILED)
  SAME(Abi::kErrProcFailed, MPIX_ERR_PROC_FAILED);
#elif defined(MPI_ERR_PROC_FAILED)
  SAME(Abi::kErrProcFailed, MPI_ERR_PROC_FAILED);
#else
  SAME(Abi::kErrProcFailed, -1);
#endif
}

// ---- Types and layouts ---------------------------------------------------------

void test_types() {
  g_context = "types";
  // The handle types themselves: Open MPI's pointer types are the structs
  // abi.h forward-declares, MPICH's all int.
  CHECK((std::is_same_v<Abi::Comm, MPI_Comm>));
  CHECK((std::is_same_v<Abi::Datatype, MPI_Datatype>));
  CHECK((std::is_same_v<Abi::Op, MPI_Op>));
  CHECK((std::is_same_v<Abi::Request, MPI_Request>));
  CHECK((std::is_same_v<Abi::Group, MPI_Group>));
  CHECK((std::is_same_v<Abi::Info, MPI_Info>));
  CHECK((std::is_same_v<Abi::Errhandler, MPI_Errhandler>));
  CHECK((std::is_same_v<Abi::Message, MPI_Message>));
  CHECK((std::is_same_v<Abi::Count, MPI_Count>));
  CHECK((std::is_same_v<Api<Abi>::Aint, MPI_Aint>));
  CHECK((std::is_same_v<Api<Abi>::UserFunction, MPI_User_function>));
  // Status: mpi.cc reads MPI_ERROR out of the array MPI_Testsome fills, so
  // the size (the array's stride) and that field's place must both agree;
  // point-to-point reads MPI_SOURCE and MPI_TAG.
  SAME(sizeof(Abi::Status), sizeof(MPI_Status));
  SAME(alignof(Abi::Status), alignof(MPI_Status));
  SAME(offsetof(Abi::Status, MPI_SOURCE), offsetof(MPI_Status, MPI_SOURCE));
  SAME(offsetof(Abi::Status, MPI_TAG), offsetof(MPI_Status, MPI_TAG));
  SAME(offsetof(Abi::Status, MPI_ERROR), offsetof(MPI_Status, MPI_ERROR));
}

// ---- Predefined handles -------------------------------------------------------

void test_handles() {
  g_context = "predefined handles";
  HANDLE(MPI_COMM_WORLD, kCommWorld);
  HANDLE(MPI_COMM_SELF, kCommSelf);
  HANDLE(MPI_COMM_NULL, kCommNull);
  HANDLE(MPI_GROUP_NULL, kGroupNull);
  HANDLE(MPI_DATATYPE_NULL, kDatatypeNull);
  HANDLE(MPI_OP_NULL, kOpNull);
  HANDLE(MPI_REQUEST_NULL, kRequestNull);
  HANDLE(MPI_INFO_NULL, kInfoNull);
  HANDLE(MPI_ERRORS_RETURN, kErrorsReturn);
  HANDLE(MPI_BYTE, kByte);
  HANDLE(MPI_MESSAGE_NULL, kMessageNull);
  HANDLE(MPI_MESSAGE_NO_PROC, kMessageNoProc);

  g_context = "basic datatypes";
  using T = nodempi::kernels::TypeId;
  struct Basic {
    T id;
    const char* macro;
    MPI_Datatype header;
  };
  // Which MPI datatype stands for each kernel storage type (abi.h's comment
  // on kBasicTypes): the one whose C layout the kernel implements.
  const Basic kBasic[] = {
      {T::I8, "MPI_INT8_T", MPI_INT8_T},
      {T::U8, "MPI_UINT8_T", MPI_UINT8_T},
      {T::I16, "MPI_INT16_T", MPI_INT16_T},
      {T::U16, "MPI_UINT16_T", MPI_UINT16_T},
      {T::I32, "MPI_INT32_T", MPI_INT32_T},
      {T::U32, "MPI_UINT32_T", MPI_UINT32_T},
      {T::I64, "MPI_INT64_T", MPI_INT64_T},
      {T::U64, "MPI_UINT64_T", MPI_UINT64_T},
      {T::F32, "MPI_FLOAT", MPI_FLOAT},
      {T::F64, "MPI_DOUBLE", MPI_DOUBLE},
      {T::F80, "MPI_LONG_DOUBLE", MPI_LONG_DOUBLE},
      {T::C32, "MPI_C_FLOAT_COMPLEX", MPI_C_FLOAT_COMPLEX},
      {T::C64, "MPI_C_DOUBLE_COMPLEX", MPI_C_DOUBLE_COMPLEX},
      {T::C80, "MPI_C_LONG_DOUBLE_COMPLEX", MPI_C_LONG_DOUBLE_COMPLEX},
      {T::BOOL, "MPI_C_BOOL", MPI_C_BOOL},
      {T::LOGICAL, "MPI_LOGICAL", MPI_LOGICAL},
      {T::BYTE, "MPI_BYTE", MPI_BYTE},
      {T::FLOAT_INT, "MPI_FLOAT_INT", MPI_FLOAT_INT},
      {T::DOUBLE_INT, "MPI_DOUBLE_INT", MPI_DOUBLE_INT},
      {T::LONG_INT, "MPI_LONG_INT", MPI_LONG_INT},
      {T::TWO_INT, "MPI_2INT", MPI_2INT},
      {T::SHORT_INT, "MPI_SHORT_INT", MPI_SHORT_INT},
      {T::LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT", MPI_LONG_DOUBLE_INT},
      {T::TWO_FLOAT, "MPI_2REAL", MPI_2REAL},
      {T::TWO_DOUBLE, "MPI_2DOUBLE_PRECISION", MPI_2DOUBLE_PRECISION},
      // Stand-ins of their size for the types MPI 4.1 lacks (abi.h).
      {T::F16, "MPI_UINT16_T", MPI_UINT16_T},
      {T::BF16, "MPI_UINT16_T", MPI_UINT16_T},
  };
  static_assert(sizeof(kBasic) / sizeof(kBasic[0]) == size_t(T::COUNT), "every kernel storage type");
  for (size_t i = 0; i < size_t(T::COUNT); i++) {
    SAME(size_t(kBasic[i].id), i);  // the list above is in TypeId order
    handle(__LINE__, kBasic[i].macro, kBasicTypes[size_t(kBasic[i].id)], kBasic[i].header);
  }

  // Exactly those two are stand-ins, whose reductions never use the library's ops.
  g_context = "stand-ins";
  SAME(is_stand_in(T::F16) && is_stand_in(T::BF16) && !is_stand_in(T::U16), 1);

  g_context = "predefined ops";
  using O = nodempi::kernels::OpId;
  struct Pre {
    O id;
    const char* macro;
    MPI_Op header;
  };
  const Pre kPre[] = {
      {O::MAX, "MPI_MAX", MPI_MAX},       {O::MIN, "MPI_MIN", MPI_MIN},
      {O::SUM, "MPI_SUM", MPI_SUM},       {O::PROD, "MPI_PROD", MPI_PROD},
      {O::LAND, "MPI_LAND", MPI_LAND},    {O::BAND, "MPI_BAND", MPI_BAND},
      {O::LOR, "MPI_LOR", MPI_LOR},       {O::BOR, "MPI_BOR", MPI_BOR},
      {O::LXOR, "MPI_LXOR", MPI_LXOR},    {O::BXOR, "MPI_BXOR", MPI_BXOR},
      {O::MAXLOC, "MPI_MAXLOC", MPI_MAXLOC}, {O::MINLOC, "MPI_MINLOC", MPI_MINLOC},
      {O::REPLACE, "MPI_REPLACE", MPI_REPLACE}, {O::NO_OP, "MPI_NO_OP", MPI_NO_OP},
  };
  static_assert(sizeof(kPre) / sizeof(kPre[0]) == size_t(O::COUNT), "every predefined op");
  for (size_t i = 0; i < size_t(O::COUNT); i++) {
    SAME(size_t(kPre[i].id), i);
    handle(__LINE__, kPre[i].macro, kOps[size_t(kPre[i].id)], kPre[i].header);
  }
}

// ---- Function types (api.h) -----------------------------------------------------
//
// mpi.cc calls through pointers cast from dlsym; a parameter of the wrong
// type or count would compile and corrupt the call. Each pointer's type must
// be the header's prototype exactly, except that abi.h's Status stands for
// MPI_Status (test_types checks that the two are laid out alike).

template <class T>
struct Ours {
  using type = T;
};
template <>
struct Ours<MPI_Status*> {
  using type = Abi::Status*;
};
template <>
struct Ours<const MPI_Status*> {
  using type = const Abi::Status*;
};
template <class R, class... P>
struct Ours<R (*)(P...)> {
  using type = R (*)(typename Ours<P>::type...);
};

template <class Member, class Header>
void signature(int line, const char* name) {
  nodempi::test::g_checks.fetch_add(1);
  if (!std::is_same_v<Member, typename Ours<Header>::type>) {
    nodempi::test::fail(__FILE__, line, std::string(name) + ": api.h's type is not mpi.h's prototype");
  }
}
#define SIG(member, fn) signature<decltype(Api<Abi>::member), decltype(&fn)>(__LINE__, #fn)

void test_signatures() {
  g_context = "api.h signatures";
  SIG(Init_thread, MPI_Init_thread);
  SIG(Initialized, MPI_Initialized);
  SIG(Finalized, MPI_Finalized);
  SIG(Finalize, MPI_Finalize);
  SIG(Abort, MPI_Abort);
  SIG(Get_library_version, MPI_Get_library_version);
  SIG(Get_processor_name, MPI_Get_processor_name);
  SIG(Error_class, MPI_Error_class);
  SIG(Error_string, MPI_Error_string);
  SIG(Comm_set_errhandler, MPI_Comm_set_errhandler);
  SIG(Comm_get_attr, MPI_Comm_get_attr);
  SIG(Comm_rank, MPI_Comm_rank);
  SIG(Comm_size, MPI_Comm_size);
  SIG(Comm_remote_size, MPI_Comm_remote_size);
  SIG(Comm_test_inter, MPI_Comm_test_inter);
  SIG(Comm_dup, MPI_Comm_dup);
  SIG(Comm_split, MPI_Comm_split);
  SIG(Comm_split_type, MPI_Comm_split_type);
  SIG(Comm_free, MPI_Comm_free);
  SIG(Comm_group, MPI_Comm_group);
  SIG(Comm_remote_group, MPI_Comm_remote_group);
  SIG(Group_translate_ranks, MPI_Group_translate_ranks);
  SIG(Group_free, MPI_Group_free);
  SIG(Intercomm_create, MPI_Intercomm_create);
  SIG(Intercomm_merge, MPI_Intercomm_merge);
  SIG(Type_contiguous, MPI_Type_contiguous);
  SIG(Type_create_hvector, MPI_Type_create_hvector);
  SIG(Type_create_hindexed, MPI_Type_create_hindexed);
  SIG(Type_create_struct, MPI_Type_create_struct);
  SIG(Type_create_resized, MPI_Type_create_resized);
  SIG(Type_commit, MPI_Type_commit);
  SIG(Type_free, MPI_Type_free);
  SIG(Op_create, MPI_Op_create);
  SIG(Op_free, MPI_Op_free);
  SIG(Reduce_local, MPI_Reduce_local);
  SIG(Test, MPI_Test);
  SIG(Wait, MPI_Wait);
  SIG(Waitany, MPI_Waitany);
  SIG(Testsome, MPI_Testsome);
  SIG(Start, MPI_Start);
  SIG(Request_free, MPI_Request_free);
  SIG(Send, MPI_Send);
  SIG(Isend, MPI_Isend);
  SIG(Irecv, MPI_Irecv);
  SIG(Probe, MPI_Probe);
  SIG(Iprobe, MPI_Iprobe);
  SIG(Mprobe, MPI_Mprobe);
  SIG(Improbe, MPI_Improbe);
  SIG(Mrecv, MPI_Mrecv);
  SIG(Get_elements_x, MPI_Get_elements_x);
#if MPI_VERSION >= 4
  SIG(Send_c, MPI_Send_c);
  SIG(Isend_c, MPI_Isend_c);
  SIG(Irecv_c, MPI_Irecv_c);
  SIG(Mrecv_c, MPI_Mrecv_c);
  SIG(Get_count_c, MPI_Get_count_c);
#endif
  SIG(Barrier, MPI_Barrier);
  SIG(Ibarrier, MPI_Ibarrier);
  // Blocking and nonblocking forms of every collective, and the persistent
  // one under the name mpi.cc looks up first (MPI 4) or second (Open MPI 4's
  // pcollreq extension).
#define COLL(name, iname) \
  SIG(name, MPI_##name);  \
  SIG(I##name, MPI_##iname);
  COLL(Bcast, Ibcast)
  COLL(Gather, Igather)
  COLL(Gatherv, Igatherv)
  COLL(Scatter, Iscatter)
  COLL(Scatterv, Iscatterv)
  COLL(Allgather, Iallgather)
  COLL(Allgatherv, Iallgatherv)
  COLL(Alltoall, Ialltoall)
  COLL(Alltoallv, Ialltoallv)
  COLL(Alltoallw, Ialltoallw)
  COLL(Reduce, Ireduce)
  COLL(Allreduce, Iallreduce)
  COLL(Reduce_scatter, Ireduce_scatter)
  COLL(Reduce_scatter_block, Ireduce_scatter_block)
  COLL(Scan, Iscan)
  COLL(Exscan, Iexscan)
#undef COLL
#if MPI_VERSION >= 4
#define PERSISTENT(name) SIG(name##_init, MPI_##name##_init);
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define PERSISTENT(name) SIG(name##_init, MPIX_##name##_init);
#else
#define PERSISTENT(name)
  std::printf("%s: this mpi.h declares no persistent collectives; their types go unchecked\n", kProgram);
#endif
  PERSISTENT(Barrier)
  PERSISTENT(Bcast)
  PERSISTENT(Gather)
  PERSISTENT(Gatherv)
  PERSISTENT(Scatter)
  PERSISTENT(Scatterv)
  PERSISTENT(Allgather)
  PERSISTENT(Allgatherv)
  PERSISTENT(Alltoall)
  PERSISTENT(Alltoallv)
  PERSISTENT(Alltoallw)
  PERSISTENT(Reduce)
  PERSISTENT(Allreduce)
  PERSISTENT(Reduce_scatter)
  PERSISTENT(Reduce_scatter_block)
  PERSISTENT(Scan)
  PERSISTENT(Exscan)
#undef PERSISTENT
}

}  // namespace

int main() {
  test_constants();
  test_error_classes();
  test_types();
  test_handles();
  test_signatures();
  return nodempi::test::summary(kProgram);
}
