// The MPI functions nodempi calls, as pointers looked up in the library
// opened at run time (never linked at build time), typed by the ABI's
// handles (native/core/mpi/abi.h).
#pragma once
#include <string>

namespace nodempi::mpi {

template <class A>
struct Api {
  using Comm = typename A::Comm;
  using Datatype = typename A::Datatype;
  using Op = typename A::Op;
  using Request = typename A::Request;
  using Group = typename A::Group;
  using Info = typename A::Info;
  using Errhandler = typename A::Errhandler;
  using Status = typename A::Status;
  using Message = typename A::Message;
  using Count = typename A::Count;
  using Aint = long;  // MPI_Aint on LP64 in both ABIs
  using UserFunction = void(void*, void*, int*, Datatype*);

  // Start, identity, end
  int (*Init_thread)(int*, char***, int, int*);
  int (*Query_thread)(int*);
  int (*Initialized)(int*);
  int (*Finalized)(int*);
  int (*Finalize)();
  int (*Abort)(Comm, int);
  int (*Get_library_version)(char*, int*);
  int (*Get_processor_name)(char*, int*);
  int (*Error_class)(int, int*);
  int (*Error_string)(int, char*, int*);
  int (*Comm_set_errhandler)(Comm, Errhandler);
  int (*Comm_get_attr)(Comm, int, void*, int*);

  // Communicators and groups
  int (*Comm_rank)(Comm, int*);
  int (*Comm_size)(Comm, int*);
  int (*Comm_remote_size)(Comm, int*);
  int (*Comm_test_inter)(Comm, int*);
  int (*Comm_dup)(Comm, Comm*);
  int (*Comm_split)(Comm, int, int, Comm*);
  int (*Comm_split_type)(Comm, int, int, Info, Comm*);
  int (*Comm_free)(Comm*);
  int (*Comm_group)(Comm, Group*);
  int (*Comm_remote_group)(Comm, Group*);
  int (*Group_translate_ranks)(Group, int, const int*, Group, int*);
  int (*Group_free)(Group*);
  int (*Intercomm_create)(Comm, int, Comm, int, int, Comm*);
  int (*Intercomm_merge)(Comm, int, Comm*);

  // Datatypes and ops
  int (*Type_contiguous)(int, Datatype, Datatype*);
  int (*Type_create_hvector)(int, int, Aint, Datatype, Datatype*);
  int (*Type_create_hindexed)(int, const int*, const Aint*, Datatype, Datatype*);
  int (*Type_create_struct)(int, const int*, const Aint*, const Datatype*, Datatype*);
  int (*Type_create_resized)(Datatype, Aint, Aint, Datatype*);
  int (*Type_commit)(Datatype*);
  int (*Type_free)(Datatype*);
  int (*Op_create)(UserFunction*, int, Op*);
  int (*Op_free)(Op*);
  int (*Reduce_local)(const void*, void*, int, Datatype, Op);

  // Requests
  int (*Test)(Request*, int*, Status*);
  int (*Wait)(Request*, Status*);
  int (*Waitany)(int, Request*, int*, Status*);
  int (*Testsome)(int, Request*, int*, int*, Status*);
  int (*Start)(Request*);
  int (*Request_free)(Request*);

  // Point-to-point, in bytes (MPI_BYTE). The large-count forms (_c, MPI 4)
  // are null where the library has none (Open MPI before 5).
  int (*Send)(const void*, int, Datatype, int, int, Comm);
  int (*Isend)(const void*, int, Datatype, int, int, Comm, Request*);
  int (*Recv)(void*, int, Datatype, int, int, Comm, Status*);
  int (*Irecv)(void*, int, Datatype, int, int, Comm, Request*);
  int (*Probe)(int, int, Comm, Status*);
  int (*Iprobe)(int, int, Comm, int*, Status*);
  int (*Mprobe)(int, int, Comm, Message*, Status*);
  int (*Improbe)(int, int, Comm, int*, Message*, Status*);
  int (*Mrecv)(void*, int, Datatype, Message*, Status*);
  int (*Get_elements_x)(const Status*, Datatype, Count*);
  int (*Send_c)(const void*, Count, Datatype, int, int, Comm);
  int (*Isend_c)(const void*, Count, Datatype, int, int, Comm, Request*);
  int (*Irecv_c)(void*, Count, Datatype, int, int, Comm, Request*);
  int (*Mrecv_c)(void*, Count, Datatype, Message*, Status*);
  int (*Get_count_c)(const Status*, Datatype, Count*);

  // Collectives: blocking, nonblocking (I), persistent (_init: MPI 4 names,
  // or Open MPI 4's MPIX_ ones; null when the library has neither).
#define NODEMPI_MPI_COLL(name, ...)                 \
  int (*name)(__VA_ARGS__, Comm);                   \
  int (*I##name)(__VA_ARGS__, Comm, Request*);      \
  int (*name##_init)(__VA_ARGS__, Comm, Info, Request*);
  int (*Barrier)(Comm);
  int (*Ibarrier)(Comm, Request*);
  int (*Barrier_init)(Comm, Info, Request*);
  NODEMPI_MPI_COLL(Bcast, void*, int, Datatype, int)
  NODEMPI_MPI_COLL(Gather, const void*, int, Datatype, void*, int, Datatype, int)
  NODEMPI_MPI_COLL(Gatherv, const void*, int, Datatype, void*, const int*, const int*, Datatype, int)
  NODEMPI_MPI_COLL(Scatter, const void*, int, Datatype, void*, int, Datatype, int)
  NODEMPI_MPI_COLL(Scatterv, const void*, const int*, const int*, Datatype, void*, int, Datatype, int)
  NODEMPI_MPI_COLL(Allgather, const void*, int, Datatype, void*, int, Datatype)
  NODEMPI_MPI_COLL(Allgatherv, const void*, int, Datatype, void*, const int*, const int*, Datatype)
  NODEMPI_MPI_COLL(Alltoall, const void*, int, Datatype, void*, int, Datatype)
  NODEMPI_MPI_COLL(Alltoallv, const void*, const int*, const int*, Datatype, void*, const int*, const int*, Datatype)
  NODEMPI_MPI_COLL(Alltoallw, const void*, const int*, const int*, const Datatype*, void*, const int*, const int*,
                   const Datatype*)
  NODEMPI_MPI_COLL(Reduce, const void*, void*, int, Datatype, Op, int)
  NODEMPI_MPI_COLL(Allreduce, const void*, void*, int, Datatype, Op)
  NODEMPI_MPI_COLL(Reduce_scatter, const void*, void*, const int*, Datatype, Op)
  NODEMPI_MPI_COLL(Reduce_scatter_block, const void*, void*, int, Datatype, Op)
  NODEMPI_MPI_COLL(Scan, const void*, void*, int, Datatype, Op)
  NODEMPI_MPI_COLL(Exscan, const void*, void*, int, Datatype, Op)
#undef NODEMPI_MPI_COLL

  // Looks every function up with `lookup` (dlsym on the library); returns
  // the name of the first required one that is missing, or "".
  std::string load(void* (*lookup)(const char*));
};

}  // namespace nodempi::mpi
