// The system MPI library as nodempi's second backend: opened at run time
// (dlopen, so neither building nor installing nodempi needs MPI), its ABI
// told by what the library exports, and every call nodempi makes put in
// terms of small integer handles that mean the same under both ABIs
// (native/core/mpi/abi.h). No N-API here: the addon's native/napi/
// mpi_binding.cc unwraps JavaScript into these calls, and
// test/native/mpi_test.cc drives them under mpirun and mpiexec.
//
// Threads: every call, including those that complete requests (where MPI
// may run user ops), comes from the thread that opened the library, and MPI
// is initialised with MPI_THREAD_FUNNELED unless the user asks for
// MPI_THREAD_SINGLE (ThreadLevel).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace nodempi::mpi {

// Handles. Communicators: kWorld, kSelf, then those made here. Datatypes:
// kernels::TypeId values are the basic types, kFirstDerived on are made by
// type_create/opaque_type. Ops: kernels::OpId values are the predefined
// ops, kFirstUserOp on are made by op_create.
constexpr int kWorld = 0;
constexpr int kSelf = 1;
constexpr int kFirstDerived = 64;
constexpr int kFirstUserOp = 64;
// The rank arguments that are not ranks, as nodempi numbers them
// (lib/constants.ts); the library's own values may differ.
constexpr int kProcNull = -2;
constexpr int kRoot = -4;
constexpr int kUndefined = -32766;
constexpr int kAnySource = -1;
constexpr int kAnyTag = -1;

enum class Coll : uint8_t {
  BARRIER, BCAST, GATHER, GATHERV, SCATTER, SCATTERV, ALLGATHER, ALLGATHERV, ALLTOALL, ALLTOALLV, ALLTOALLW,
  REDUCE, ALLREDUCE, REDUCE_SCATTER, REDUCE_SCATTER_BLOCK, SCAN, EXSCAN,
};
const char* coll_name(Coll c);

enum class Mode : uint8_t { BLOCKING, NONBLOCKING, PERSISTENT };

// Where a Call's send (or, for scatter at the root, receive) buffer is
// MPI_IN_PLACE.
void* in_place();

// One collective in MPI's own terms (counts in items of the datatypes,
// displacements in extents, alltoallw's in bytes), with nodempi's handles
// and rank numbers. The arrays belong to the call: a nonblocking or
// persistent one keeps them until it is freed, as MPI requires.
struct Call {
  Coll coll = Coll::BARRIER;
  int comm = kWorld;
  const void* send = nullptr;
  void* recv = nullptr;
  int send_count = 0, recv_count = 0;
  int send_type = 0, recv_type = 0;
  int op = 0;
  int root = 0;
  std::vector<int> send_counts, send_displs, send_types;
  std::vector<int> recv_counts, recv_displs, recv_types;
};

// A matched message as lib/p2p/backend.ts's status array has it: its
// source (a rank of the remote group on an intercommunicator), tag and
// length, and the handle of a matched probe's message (0 otherwise).
struct Matched {
  int source = 0;
  int tag = 0;
  int64_t bytes = 0;
  int message = 0;
};

// How a request ended: error_class 0 (success) or nodempi's ErrorClass,
// with the library's message; `matched` for a receive or matched probe.
struct Completion {
  int id = -1;
  int error_class = 0;
  std::string message;
  bool has_match = false;
  Matched matched;
};

// A user-defined op's function as MPI calls it (MPI_User_function):
// inout[i] = in[i] op inout[i] for `len` items. `ctx` is what op_create
// was given.
using UserHook = void (*)(void* ctx, void* in, void* inout, int len);

// What open() found.
struct Opened {
  std::string path;
  const char* abi = "";
};

// The thread levels nodempi asks for, by the values both ABIs give them.
// FUNNELED is the truthful one in a Node process, whose other threads (V8's
// collector among them) unmap memory while MPI runs: Open MPI then guards
// its registration caches against their memory hooks, which costs a lock
// around every progress step (a 2-rank barrier loop from C: 0.19-0.21 µs
// at SINGLE, up to 0.67 µs at FUNNELED, bench/BACKENDS.md). SINGLE skips those locks;
// MPICH takes none below MULTIPLE either way.
enum class ThreadLevel : int { SINGLE = 0, FUNNELED = 1 };

class Mpi {
 public:
  virtual ~Mpi() = default;

  virtual const Opened& opened() const = 0;
  // MPI_Get_library_version (callable before init).
  virtual std::string library_version() = 0;
  virtual std::string processor_name() = 0;

  // MPI_Init_thread(level) once; MPI_ERRORS_RETURN on COMM_WORLD and
  // COMM_SELF, so that errors come back as CoreErrors instead of ending
  // the process.
  virtual void init(ThreadLevel level, int* rank, int* size) = 0;
  // MPI_Query_thread: the level the library provides.
  virtual int thread_level() = 0;
  virtual void finalize() = 0;
  [[noreturn]] virtual void abort(int code) = 0;

  // Communicators. A call that gives MPI_COMM_NULL on this rank (split
  // with color kUndefined) returns -1.
  virtual void comm_info(int comm, int* rank, int* size, int* remote_size) = 0;  // remote_size -1: intra
  virtual int comm_dup(int comm) = 0;
  virtual int comm_split(int comm, int color, int key) = 0;
  virtual int comm_split_shared(int comm, bool undefined, int key) = 0;
  virtual int intercomm_create(int local, int local_leader, int peer, int remote_leader, int tag) = 0;
  virtual int intercomm_merge(int comm, bool high) = 0;
  virtual void comm_free(int comm) = 0;
  // COMM_WORLD ranks of the members of the local (or remote) group.
  virtual std::vector<int> world_ranks(int comm, bool remote) = 0;

  // A committed MPI datatype with the layout of a nodempi description
  // (native/core/datatype/typemap.h): byte blocks, no basic types, which
  // is all the movement collectives need between machines of one kind.
  virtual int type_create(const double* words, size_t count) = 0;
  // An item of `bytes` bytes with no structure (what user ops reduce).
  virtual int opaque_type(size_t bytes) = 0;
  virtual void type_free(int type) = 0;

  // MPI_Op_create over `hook`; at most kUserOps exist at once.
  virtual int op_create(UserHook hook, void* ctx, bool commute) = 0;
  virtual void op_free(int op) = 0;

  // A collective. Blocking: runs it and returns -1. Nonblocking: a request
  // id. Persistent: a template id, inactive until start(). Errors throw
  // CoreError with nodempi's class and the library's message.
  virtual int run(Call&& call, Mode mode) = 0;
  // Starts a round of a persistent template; the round completes under
  // the template's own id.
  virtual void start(int id) = 0;
  // Runs an inactive template's call once as the blocking call it was
  // made from (a repeated blocking call, lib/replay.ts): the library's
  // blocking algorithms, without a request. False if `id` is no template.
  virtual bool run_template(int id) = 0;
  virtual void free_template(int id) = 0;

  // Point-to-point in bytes (lib/p2p/mpi.ts). `source` may be kAnySource,
  // `tag` kAnyTag. Counts above INT_MAX use the library's large-count
  // functions (MPI 4), or fail with ERR_COUNT where it has none. Blocking
  // calls block the calling thread in the library.
  virtual void send(int comm, const void* buf, size_t bytes, int dest, int tag) = 0;
  // A request id; the buffer must stay until it completes.
  virtual int isend(int comm, const void* buf, size_t bytes, int dest, int tag) = 0;
  // Receives into `bytes` bytes of `buf`. A longer message is taken whole
  // into scratch, its first `bytes` copied, and fails with ERR_TRUNCATE
  // (with `out` filled): the libraries differ in what they write then.
  virtual void recv(int comm, void* buf, size_t bytes, int source, int tag, Matched& out) = 0;
  // A request id, completing with `matched` set.
  virtual int irecv(int comm, void* buf, size_t bytes, int source, int tag) = 0;
  virtual void probe(int comm, int source, int tag, Matched& out) = 0;
  virtual bool iprobe(int comm, int source, int tag, Matched& out) = 0;
  // MPI_Mprobe: out.message is the message's handle for mrecv, which
  // takes it once.
  virtual void mprobe(int comm, int source, int tag, Matched& out) = 0;
  // MPI_Improbe as a request: tried at every poll, test and wait until it
  // matches; its completion carries the message's handle. Pending improbes
  // are tried oldest first, but MPI matches a receive posted later (irecv)
  // as soon as the message arrives, before the next try.
  virtual int improbe(int comm, int source, int tag) = 0;
  // MPI_Mrecv of a matched message into `bytes` bytes of `buf` (a shorter
  // buffer truncates as recv does).
  virtual void mrecv(int message, void* buf, size_t bytes, Matched& out) = 0;
  // The library's MPI_TAG_UB (after init): the largest tag it carries.
  virtual int tag_ub() = 0;

  // Completing requests. A nonblocking request's id is released once its
  // completion is returned; a template's stays until free_template.
  virtual bool test(int id, Completion& out) = 0;
  virtual Completion wait(int id) = 0;
  // MPI_Waitany over `ids` (all active): the index of the one completed.
  virtual size_t wait_any(const std::vector<int>& ids, Completion& out) = 0;
  // MPI_Testsome over every active request.
  virtual void poll(std::vector<Completion>& done) = 0;
  virtual size_t active() const = 0;
};

constexpr int kUserOps = 512;

// Opens the first of `candidates` (file names for dlopen, or paths) that
// loads as an MPI library of a known ABI. On failure returns null and
// fills `tried` with one line per candidate saying why it was passed over.
std::unique_ptr<Mpi> open(const std::vector<std::string>& candidates, std::vector<std::string>& tried);

}  // namespace nodempi::mpi
