// The system MPI backend (mpi.h): one implementation, a template over the
// two ABIs (abi.h), instantiated for each; open() picks one by what the
// library exports.
#include "core/mpi/mpi.h"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/datatype/typemap.h"
#include "core/error.h"
#include "core/handles.h"
#include "core/kernels/kernels.h"
#include "core/mpi/abi.h"
#include "core/mpi/api.h"
#include "core/mpi/pmi.h"
#include "core/tuning.h"

namespace nodempi::mpi {

const char* coll_name(Coll c) {
  static const char* const kNames[] = {
      "barrier", "bcast", "gather", "gatherv", "scatter", "scatterv", "allgather", "allgatherv", "alltoall",
      "alltoallv", "alltoallw", "reduce", "allreduce", "reduceScatter", "reduceScatterBlock", "scan", "exscan"};
  return kNames[size_t(c)];
}

void* in_place() {
  static char marker;
  return &marker;
}

// ---- Looking up the functions -------------------------------------------------

template <class A>
std::string Api<A>::load(void* (*lookup)(const char*)) {
  std::string missing;
  auto need = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(lookup(name));
    if (!fn && missing.empty()) missing = name;
  };
  // Persistent collectives: MPI 4's name, else Open MPI 4's extension.
  auto maybe = [&](auto& fn, const char* name, const char* mpix) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(lookup(name));
    if (!fn) fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(lookup(mpix));
  };
  need(Init_thread, "MPI_Init_thread");
  need(Query_thread, "MPI_Query_thread");
  need(Initialized, "MPI_Initialized");
  need(Finalized, "MPI_Finalized");
  need(Finalize, "MPI_Finalize");
  need(Abort, "MPI_Abort");
  need(Get_library_version, "MPI_Get_library_version");
  need(Get_processor_name, "MPI_Get_processor_name");
  need(Error_class, "MPI_Error_class");
  need(Error_string, "MPI_Error_string");
  need(Comm_set_errhandler, "MPI_Comm_set_errhandler");
  need(Comm_get_attr, "MPI_Comm_get_attr");
  need(Comm_rank, "MPI_Comm_rank");
  need(Comm_size, "MPI_Comm_size");
  need(Comm_remote_size, "MPI_Comm_remote_size");
  need(Comm_test_inter, "MPI_Comm_test_inter");
  need(Comm_dup, "MPI_Comm_dup");
  need(Comm_split, "MPI_Comm_split");
  need(Comm_split_type, "MPI_Comm_split_type");
  need(Comm_free, "MPI_Comm_free");
  need(Comm_group, "MPI_Comm_group");
  need(Comm_remote_group, "MPI_Comm_remote_group");
  need(Group_translate_ranks, "MPI_Group_translate_ranks");
  need(Group_free, "MPI_Group_free");
  need(Intercomm_create, "MPI_Intercomm_create");
  need(Intercomm_merge, "MPI_Intercomm_merge");
  need(Type_contiguous, "MPI_Type_contiguous");
  need(Type_create_hvector, "MPI_Type_create_hvector");
  need(Type_create_hindexed, "MPI_Type_create_hindexed");
  need(Type_create_struct, "MPI_Type_create_struct");
  need(Type_create_resized, "MPI_Type_create_resized");
  need(Type_commit, "MPI_Type_commit");
  need(Type_free, "MPI_Type_free");
  need(Op_create, "MPI_Op_create");
  need(Op_free, "MPI_Op_free");
  need(Reduce_local, "MPI_Reduce_local");
  need(Test, "MPI_Test");
  need(Wait, "MPI_Wait");
  need(Waitany, "MPI_Waitany");
  need(Testsome, "MPI_Testsome");
  need(Start, "MPI_Start");
  need(Request_free, "MPI_Request_free");
  need(Send, "MPI_Send");
  need(Isend, "MPI_Isend");
  need(Recv, "MPI_Recv");
  need(Irecv, "MPI_Irecv");
  need(Probe, "MPI_Probe");
  need(Iprobe, "MPI_Iprobe");
  need(Mprobe, "MPI_Mprobe");
  need(Improbe, "MPI_Improbe");
  need(Mrecv, "MPI_Mrecv");
  need(Get_elements_x, "MPI_Get_elements_x");
  auto optional = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(lookup(name));
  };
  optional(Send_c, "MPI_Send_c");
  optional(Isend_c, "MPI_Isend_c");
  optional(Irecv_c, "MPI_Irecv_c");
  optional(Mrecv_c, "MPI_Mrecv_c");
  optional(Get_count_c, "MPI_Get_count_c");
  need(Barrier, "MPI_Barrier");
  need(Ibarrier, "MPI_Ibarrier");
  maybe(Barrier_init, "MPI_Barrier_init", "MPIX_Barrier_init");
#define NODEMPI_LOAD_COLL(name, iname)                        \
  need(name, "MPI_" #name);                                   \
  need(I##name, "MPI_" #iname);                               \
  maybe(name##_init, "MPI_" #name "_init", "MPIX_" #name "_init");
  NODEMPI_LOAD_COLL(Bcast, Ibcast)
  NODEMPI_LOAD_COLL(Gather, Igather)
  NODEMPI_LOAD_COLL(Gatherv, Igatherv)
  NODEMPI_LOAD_COLL(Scatter, Iscatter)
  NODEMPI_LOAD_COLL(Scatterv, Iscatterv)
  NODEMPI_LOAD_COLL(Allgather, Iallgather)
  NODEMPI_LOAD_COLL(Allgatherv, Iallgatherv)
  NODEMPI_LOAD_COLL(Alltoall, Ialltoall)
  NODEMPI_LOAD_COLL(Alltoallv, Ialltoallv)
  NODEMPI_LOAD_COLL(Alltoallw, Ialltoallw)
  NODEMPI_LOAD_COLL(Reduce, Ireduce)
  NODEMPI_LOAD_COLL(Allreduce, Iallreduce)
  NODEMPI_LOAD_COLL(Reduce_scatter, Ireduce_scatter)
  NODEMPI_LOAD_COLL(Reduce_scatter_block, Ireduce_scatter_block)
  NODEMPI_LOAD_COLL(Scan, Iscan)
  NODEMPI_LOAD_COLL(Exscan, Iexscan)
#undef NODEMPI_LOAD_COLL
  return missing;
}

namespace {

// ---- User-defined ops ----------------------------------------------------------
//
// MPI_User_function carries no pointer of the caller's, so each MPI_Op gets
// a function of its own: kUserOps trampolines, each reading its slot. The
// table is process-wide because MPI is: one library, initialised once per
// process.

struct UserSlot {
  UserHook hook = nullptr;
  void* ctx = nullptr;
};
UserSlot g_user[kUserOps];

// A predefined op run by nodempi's own kernel (see Library::calibrate).
void kernel_hook(void* ctx, void* in, void* inout, int len) {
  if (len > 0) reinterpret_cast<kernels::ReduceFn>(ctx)(in, inout, inout, size_t(len));
}

// Operands for trying an (op, type) pair: `n` items of `t`, the same on
// every rank, with what tells implementations apart: wrap-around, the high
// bit of unsigned types, signed zeros, infinities and NaN, ties for the
// pair types, logical values other than 0 and 1.
std::vector<uint8_t> probe_items(kernels::TypeId t, size_t n, uint64_t seed) {
  using T = kernels::TypeId;
  const size_t item = kernels::type_size(t);
  std::vector<uint8_t> out(n * item, 0);
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  auto next = [&] {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x;
  };
  static const double kSpecial[] = {0.0, -0.0, 1.0, -1.5, 1e308, -1e308, 3e-310, __builtin_inf(), -__builtin_inf(),
                                    __builtin_nan(""), 2.5, 7.0};
  auto real = [&](size_t i) { return i % 3 == 0 ? kSpecial[next() % 12] : double(int64_t(next() % 2001) - 1000) / 8; };
  for (size_t i = 0; i < n; i++) {
    uint8_t* p = out.data() + i * item;
    switch (t) {
      case T::F32: { float v = float(real(i)); std::memcpy(p, &v, 4); break; }
      case T::F64: { double v = real(i); std::memcpy(p, &v, 8); break; }
      case T::F80: { long double v = real(i); std::memcpy(p, &v, 10); break; }
      case T::C32: { float v[2] = {float(real(i)), float(real(i + 1))}; std::memcpy(p, v, 8); break; }
      case T::C64: { double v[2] = {real(i), real(i + 1)}; std::memcpy(p, v, 16); break; }
      case T::C80: {
        long double re = real(i), im = real(i + 1);
        std::memcpy(p, &re, 10);
        std::memcpy(p + 16, &im, 10);
        break;
      }
      case T::BOOL: p[0] = next() & 1; break;
      case T::LOGICAL: { int32_t v = int32_t(next() % 3) - 1; std::memcpy(p, &v, 4); break; }
      // Pairs: a value from a small set (ties) and an index.
      case T::FLOAT_INT: { float v = float(next() % 4); int32_t k = int32_t(next() % 64); std::memcpy(p, &v, 4); std::memcpy(p + 4, &k, 4); break; }
      case T::DOUBLE_INT: { double v = double(next() % 4); int32_t k = int32_t(next() % 64); std::memcpy(p, &v, 8); std::memcpy(p + 8, &k, 4); break; }
      case T::LONG_INT: { int64_t v = int64_t(next() % 4) - 2; int32_t k = int32_t(next() % 64); std::memcpy(p, &v, 8); std::memcpy(p + 8, &k, 4); break; }
      case T::TWO_INT: { int32_t v[2] = {int32_t(next() % 4) - 2, int32_t(next() % 64)}; std::memcpy(p, v, 8); break; }
      case T::SHORT_INT: { int16_t v = int16_t(next() % 4); int32_t k = int32_t(next() % 64); std::memcpy(p, &v, 2); std::memcpy(p + 4, &k, 4); break; }
      case T::LONG_DOUBLE_INT: { long double v = double(next() % 4); int32_t k = int32_t(next() % 64); std::memcpy(p, &v, 10); std::memcpy(p + 16, &k, 4); break; }
      case T::TWO_FLOAT: { float v[2] = {float(next() % 4), float(next() % 64)}; std::memcpy(p, v, 8); break; }
      case T::TWO_DOUBLE: { double v[2] = {double(next() % 4), double(next() % 64)}; std::memcpy(p, v, 16); break; }
      default:  // integers and BYTE: any bits
        for (size_t b = 0; b < item; b++) p[b] = uint8_t(next());
    }
  }
  return out;
}

template <class A, int K>
void trampoline(void* in, void* inout, int* len, typename A::Datatype*) {
  const UserSlot& s = g_user[K];
  if (s.hook) s.hook(s.ctx, in, inout, *len);
}

template <class A, size_t... K>
constexpr auto trampolines(std::index_sequence<K...>) {
  using Fn = typename Api<A>::UserFunction*;
  return std::array<Fn, sizeof...(K)>{&trampoline<A, int(K)>...};
}

// ---- Handle tables ---------------------------------------------------------------

// Objects by nodempi handle (core/handles.h): 22 bits of place, 9 of
// generation, so that handles stay positive 32-bit integers.
template <class T>
using Table = HandleTable<T, int, 22, 9>;

template <class A>
class Library final : public Mpi {
  using Comm = typename A::Comm;
  using Datatype = typename A::Datatype;
  using Op = typename A::Op;
  using Request = typename A::Request;
  using Group = typename A::Group;
  using Status = typename A::Status;
  using Message = typename A::Message;
  using Count = typename A::Count;
  using Aint = typename Api<A>::Aint;

  // Tags go to the library as they are.
  static_assert(A::kAnyTag == kAnyTag, "MPI_ANY_TAG is nodempi's ANY_TAG");

  // What a request in the table is.
  enum class Kind : uint8_t { COLL, SEND, RECV, IMPROBE };

  struct Pending {
    Kind kind = Kind::COLL;
    Call call;
    Request request{};
    bool persistent = false;  // a template: kept until free_template
    bool native = false;      // the library's own persistent request (else restarted as nonblocking)
    bool made = false;        // that request exists (made at the first start)
    bool active = false;
    bool failed = false;      // its last round ended with the library's error
    std::vector<Datatype> w_types;  // alltoallw's, in the library's handles (read until completion)
    // An irecv's capacity (for the truncation message); an improbe's
    // communicator, source and tag (it has no MPI request: it is tried anew).
    size_t bytes = 0;
    int comm = 0, source = 0, tag = 0;
  };

  // A message mprobe or improbe matched, until mrecv takes it.
  struct Held {
    Message message{};
    Matched matched;
  };

 public:
  Library(void* lib, std::string path) : lib_(lib) {
    opened_.path = std::move(path);
    opened_.abi = A::kName;
    static void* g_lib;  // for the lookup below, which takes no context
    g_lib = lib;
    auto lookup = +[](const char* name) { return dlsym(g_lib, name); };
    std::string missing = api_.load(lookup);
    if (!missing.empty()) {
      throw CoreError(ErrorClass::OTHER, opened_.path + " is missing " + missing + ": not an MPI 3 library");
    }
    for (size_t i = 0; i < size_t(kernels::TypeId::COUNT); i++) basic_[i] = A::template handle<Datatype>(lookup, kBasicTypes[i]);
    for (size_t i = 0; i < size_t(kernels::OpId::COUNT); i++) ops_[i] = A::template handle<Op>(lookup, kOps[i]);
    world_ = A::template handle<Comm>(lookup, kCommWorld);
    self_ = A::template handle<Comm>(lookup, kCommSelf);
    comm_null_ = A::template handle<Comm>(lookup, kCommNull);
    request_null_ = A::template handle<Request>(lookup, kRequestNull);
    info_null_ = A::template handle<typename A::Info>(lookup, kInfoNull);
    errors_return_ = A::template handle<typename A::Errhandler>(lookup, kErrorsReturn);
    byte_ = A::template handle<Datatype>(lookup, kByte);
    datatype_null_ = A::template handle<Datatype>(lookup, kDatatypeNull);
    message_null_ = A::template handle<Message>(lookup, kMessageNull);
    if (!world_ || !self_ || !byte_ || !errors_return_) {
      throw CoreError(ErrorClass::OTHER, opened_.path + " does not define the predefined handles of the " +
                                             A::kName + " ABI");
    }
  }

  const Opened& opened() const override { return opened_; }

  std::string library_version() override {
    std::string s(size_t(A::kMaxLibraryVersionString), '\0');
    int len = 0;
    if (api_.Get_library_version(s.data(), &len) != 0) return "";
    s.resize(size_t(std::max(0, len)));
    while (!s.empty() && (s.back() == '\n' || s.back() == '\0' || s.back() == ' ')) s.pop_back();
    return s;
  }

  std::string processor_name() override {
    std::string s(size_t(A::kMaxProcessorName), '\0');
    int len = 0;
    check(api_.Get_processor_name(s.data(), &len), "processorName");
    s.resize(size_t(std::max(0, len)));
    return s;
  }

  void init(ThreadLevel level, int* rank, int* size) override {
    int done = 0;
    api_.Initialized(&done);
    if (!done) {
      int provided = 0;
      // Errors in MPI_Init end the process under the library's default
      // handler, with the library's own message.
      api_.Init_thread(nullptr, nullptr, int(level), &provided);
    }
    check(api_.Comm_set_errhandler(world_, errors_return_), "init");
    check(api_.Comm_set_errhandler(self_, errors_return_), "init");
    comms_.add(world_);
    comms_.add(self_);
    check(api_.Comm_rank(world_, rank), "init");
    check(api_.Comm_size(world_, size), "init");
    int* ub = nullptr;
    int has = 0;
    check(api_.Comm_get_attr(world_, A::kTagUbKeyval, &ub, &has), "init");
    tag_ub_ = has && ub ? *ub : 32767;  // 32767: the least MPI allows
    initialized_ = true;
    pmi_barrier_ = pmi::finalize_needs_barrier(library_version());
    calibrate();
  }

  void finalize() override {
    if (!initialized_) return;
    // Datatypes, ops and requests the program did not free: libraries
    // count leaked handles at MPI_Finalize (MPICH prints them).
    pending_.each([&](int, Pending& p) {
      if (p.made && !p.active) api_.Request_free(&p.request);
    });
    types_.each([&](int, Datatype& t) { api_.Type_free(&t); });
    for (auto& u : user_ops_) {
      api_.Op_free(&u.second);
      g_user[u.first] = {};
    }
    user_ops_.clear();
    // Communicators are left to MPI_Finalize: freeing one may be collective
    // (MPICH's hierarchical ones), and ranks need not hold the same ones.
    //
    // MPICH before 4.2 over UCX closes its endpoints in MPI_Finalize, then
    // waits in PMI's barrier, which progresses nothing. Over TCP a close
    // needs the peer: UCX 1.13 flushes each connection with a put the peer
    // acknowledges, and a connection not yet set up both ways waits for the
    // peer to accept it. A rank whose close waits on a peer already in
    // PMI's barrier waits for good, and so does every rank: C programs too
    // (bench/BACKENDS.md). So there every rank first exchanges a byte with
    // every other, which sets up every connection both ways, then enters
    // PMI's barrier, after which every rank sends its closes before it
    // answers any. Elsewhere a barrier keeps the ranks close. An error here
    // (a rank gone) is MPI_Finalize's to meet.
    if (pmi_barrier_) {
      greet_every_rank();
      pmi::barrier();
    } else {
      api_.Barrier(world_);
    }
    initialized_ = false;
    int done = 0;
    api_.Finalized(&done);
    if (!done) api_.Finalize();
  }

  // A byte to and from every other rank, on a communicator of its own so
  // that no receive the program left posted takes one.
  void greet_every_rank() {
    Comm c = comm_null_;
    if (api_.Comm_dup(world_, &c) != 0) return;
    int n = 0, me = 0;
    api_.Comm_size(c, &n);
    api_.Comm_rank(c, &me);
    std::vector<char> bytes(2 * static_cast<size_t>(n));
    std::vector<Request> requests(bytes.size(), request_null_);
    for (int r = 0; r < n; r++) {
      if (r == me) continue;
      api_.Irecv(&bytes[size_t(r)], 1, byte_, r, 0, c, &requests[size_t(r)]);
      api_.Isend(&bytes[size_t(n + r)], 1, byte_, r, 0, c, &requests[size_t(n + r)]);
    }
    Status st{};
    for (Request& q : requests) api_.Wait(&q, &st);
    api_.Comm_free(&c);
  }

  [[noreturn]] void abort(int code) override {
    api_.Abort(world_, code);
    std::_Exit(code);
  }

  // ---- Communicators ----------------------------------------------------------

  void comm_info(int h, int* rank, int* size, int* remote_size) override {
    Comm c = comm(h, "commInfo");
    check(api_.Comm_rank(c, rank), "commInfo");
    check(api_.Comm_size(c, size), "commInfo");
    int inter = 0;
    check(api_.Comm_test_inter(c, &inter), "commInfo");
    *remote_size = -1;
    if (inter) check(api_.Comm_remote_size(c, remote_size), "commInfo");
  }

  int comm_dup(int h) override {
    Comm out = comm_null_;
    check(api_.Comm_dup(comm(h, "dup"), &out), "dup");
    return keep(out);
  }

  int comm_split(int h, int color, int key) override {
    Comm out = comm_null_;
    check(api_.Comm_split(comm(h, "split"), color == kUndefined ? A::kUndefined : color, key, &out), "split");
    return keep(out);
  }

  int comm_split_shared(int h, bool undefined, int key) override {
    Comm out = comm_null_;
    check(api_.Comm_split_type(comm(h, "splitType"), undefined ? A::kUndefined : A::kCommTypeShared, key, info_null_,
                               &out),
          "splitType");
    return keep(out);
  }

  int intercomm_create(int local, int local_leader, int peer, int remote_leader, int tag) override {
    Comm out = comm_null_;
    // peer matters at the local leader only (MPI 4.1 §7.6.2).
    Comm p = peer >= 0 ? comm(peer, "createIntercomm") : comm_null_;
    check(api_.Intercomm_create(comm(local, "createIntercomm"), local_leader, p, remote_leader, tag, &out),
          "createIntercomm");
    return keep(out);
  }

  int intercomm_merge(int h, bool high) override {
    Comm out = comm_null_;
    check(api_.Intercomm_merge(comm(h, "merge"), high ? 1 : 0, &out), "merge");
    return keep(out);
  }

  void comm_free(int h) override {
    if (h == kWorld || h == kSelf) throw CoreError(ErrorClass::COMM, "free: a predefined communicator");
    if (!initialized_) return;  // MPI_Finalize freed it
    Comm c = comm(h, "free");
    check(api_.Comm_free(&c), "free");
    comms_.remove(h);
  }

  std::vector<int> world_ranks(int h, bool remote) override {
    Comm c = comm(h, "group");
    Group g{}, wg{};
    check(remote ? api_.Comm_remote_group(c, &g) : api_.Comm_group(c, &g), "group");
    check(api_.Comm_group(world_, &wg), "group");
    int n = 0;
    if (remote) check(api_.Comm_remote_size(c, &n), "group");
    else check(api_.Comm_size(c, &n), "group");
    std::vector<int> ranks(static_cast<size_t>(n)), out(static_cast<size_t>(n));
    for (int i = 0; i < n; i++) ranks[size_t(i)] = i;
    int rc = api_.Group_translate_ranks(g, n, ranks.data(), wg, out.data());
    api_.Group_free(&g);
    api_.Group_free(&wg);
    check(rc, "group");
    return out;
  }

  // ---- Datatypes ----------------------------------------------------------------

  int type_create(const double* words, size_t count) override {
    datatype::Typemap map(words, count);
    std::vector<Datatype> made;  // intermediate types, freed once the result is committed
    Datatype body;
    if (map.empty()) {
      body = made_type(made, [&](Datatype* t) { return api_.Type_contiguous(0, byte_, t); });
    } else {
      std::vector<Datatype> nodes(map.node_count());
      for (size_t i = 0; i < map.node_count(); i++) nodes[i] = node_type(map, i, nodes, made);
      body = nodes[size_t(map.root_index())];
    }
    Datatype t = datatype_null_;
    int rc = api_.Type_create_resized(body, 0, Aint(map.extent()), &t);
    if (rc == 0) rc = api_.Type_commit(&t);
    for (Datatype& d : made) api_.Type_free(&d);
    check(rc, "commit");
    return types_.add(t);
  }

  int opaque_type(size_t bytes) override {
    if (bytes > size_t(INT_MAX)) throw CoreError(ErrorClass::COUNT, "a datatype item of more than 2^31 - 1 bytes");
    auto it = std::find_if(opaque_.begin(), opaque_.end(), [&](auto& p) { return p.first == bytes; });
    if (it != opaque_.end()) return it->second;
    Datatype t = datatype_null_;
    check(api_.Type_contiguous(int(bytes), byte_, &t), "commit");
    check(api_.Type_commit(&t), "commit");
    int h = types_.add(t);
    opaque_.emplace_back(bytes, h);
    return h;
  }

  void type_free(int h) override {
    // A JavaScript finalizer may release a type after MPI_Finalize.
    if (!initialized_) return;
    Datatype* t = types_.find(h);
    if (!t) return;
    api_.Type_free(t);
    types_.remove(h);
    opaque_.erase(std::remove_if(opaque_.begin(), opaque_.end(), [&](auto& p) { return p.second == h; }), opaque_.end());
  }

  // ---- Ops ------------------------------------------------------------------

  int op_create(UserHook hook, void* ctx, bool commute) override {
    size_t k = 0;
    while (k < size_t(kUserOps) && g_user[k].hook) k++;
    if (k == size_t(kUserOps)) {
      throw CoreError(ErrorClass::OTHER, "Op.create: " + std::to_string(kUserOps) +
                                             " user-defined ops are in use with the MPI backend; free() ops no longer needed");
    }
    static constexpr auto kFns = trampolines<A>(std::make_index_sequence<kUserOps>{});
    Op op{};
    check(api_.Op_create(kFns[k], commute ? 1 : 0, &op), "Op.create");
    g_user[k] = {hook, ctx};
    user_ops_.push_back({int(k), op});
    return kFirstUserOp + int(k);
  }

  void op_free(int h) override {
    if (!initialized_) return;
    auto it = std::find_if(user_ops_.begin(), user_ops_.end(), [&](auto& u) { return kFirstUserOp + u.first == h; });
    if (it == user_ops_.end()) return;
    api_.Op_free(&it->second);
    g_user[it->first] = {};
    user_ops_.erase(it);
  }

  // ---- Point-to-point ------------------------------------------------------------

  void send(int h, const void* buf, size_t bytes, int dest, int tag) override {
    Comm c = comm(h, "send");
    const int d = rank_arg(dest);
    int rc = bytes <= size_t(INT_MAX) ? api_.Send(buf, int(bytes), byte_, d, tag, c)
             : api_.Send_c            ? api_.Send_c(buf, Count(bytes), byte_, d, tag, c)
                                      : too_large("send", bytes, "MPI_Send_c");
    check(rc, "send");
  }

  int isend(int h, const void* buf, size_t bytes, int dest, int tag) override {
    Comm c = comm(h, "isend");
    const int d = rank_arg(dest);
    Request r = request_null_;
    int rc = bytes <= size_t(INT_MAX) ? api_.Isend(buf, int(bytes), byte_, d, tag, c, &r)
             : api_.Isend_c           ? api_.Isend_c(buf, Count(bytes), byte_, d, tag, c, &r)
                                      : too_large("isend", bytes, "MPI_Isend_c");
    check(rc, "isend");
    Pending p;
    p.kind = Kind::SEND;
    return started(std::move(p), r);
  }

  // Where the library's MPI_Recv does not keep the seam's promise for a
  // message longer than the buffer (the buffer's worth and the length:
  // MPICH 4.0 writes nothing and reports 0), a probe and a receive of what
  // it matched; that costs a second call, and an extra copy of a message
  // that arrives before its receive, on every receive.
  void recv(int h, void* buf, size_t bytes, int source, int tag, Matched& out) override {
    Comm c = comm(h, "recv");
    if (A::kRecvTellsTruncation && bytes <= size_t(INT_MAX)) {
      Status st{};
      const int rc = api_.Recv(buf, int(bytes), byte_, source_arg(source), tag, c, &st);
      if (rc != 0 && error_class(rc) != ErrorClass::TRUNCATE) check(rc, "recv");
      out = matched(st);
      if (rc != 0) throw CoreError(ErrorClass::TRUNCATE, truncated("recv", out.bytes, bytes));
      return;
    }
    Message m = message_null_;
    Status st{};
    check(api_.Mprobe(source_arg(source), tag, c, &m, &st), "recv");
    out = matched(st);
    take(m, buf, bytes, out, "recv");
  }

  int irecv(int h, void* buf, size_t bytes, int source, int tag) override {
    Comm c = comm(h, "irecv");
    Request r = request_null_;
    // Without large counts no message of more than INT_MAX bytes can be
    // sent either: a larger buffer receives as one of INT_MAX bytes.
    size_t posted = bytes;
    int rc;
    if (bytes <= size_t(INT_MAX)) {
      rc = api_.Irecv(buf, int(bytes), byte_, source_arg(source), tag, c, &r);
    } else if (api_.Irecv_c) {
      rc = api_.Irecv_c(buf, Count(bytes), byte_, source_arg(source), tag, c, &r);
    } else {
      posted = size_t(INT_MAX);
      rc = api_.Irecv(buf, INT_MAX, byte_, source_arg(source), tag, c, &r);
    }
    check(rc, "irecv");
    Pending p;
    p.kind = Kind::RECV;
    p.bytes = posted;
    return started(std::move(p), r);
  }

  void probe(int h, int source, int tag, Matched& out) override {
    Status st{};
    check(api_.Probe(source_arg(source), tag, comm(h, "probe"), &st), "probe");
    out = matched(st);
  }

  bool iprobe(int h, int source, int tag, Matched& out) override {
    Status st{};
    int flag = 0;
    check(api_.Iprobe(source_arg(source), tag, comm(h, "iprobe"), &flag, &st), "iprobe");
    if (flag) out = matched(st);
    return flag != 0;
  }

  void mprobe(int h, int source, int tag, Matched& out) override {
    Message m = message_null_;
    Status st{};
    check(api_.Mprobe(source_arg(source), tag, comm(h, "mprobe"), &m, &st), "mprobe");
    out = matched(st);
    out.message = messages_.add(Held{m, out});
  }

  int improbe(int h, int source, int tag) override {
    comm(h, "improbe");
    Pending p;
    p.kind = Kind::IMPROBE;
    p.comm = h;
    p.source = source;
    p.tag = tag;
    int id = started(std::move(p), request_null_);
    improbes_.push_back(id);
    return id;
  }

  void mrecv(int message, void* buf, size_t bytes, Matched& out) override {
    Held* held = initialized_ ? messages_.find(message) : nullptr;
    if (!held) throw CoreError(ErrorClass::ARG, "mrecv: no such message (mrecv takes a matched message once)");
    Message m = held->message;
    out = held->matched;
    out.message = 0;
    messages_.remove(message);
    take(m, buf, bytes, out, "mrecv");
  }

  int tag_ub() override { return tag_ub_; }

  int thread_level() override {
    int provided = -1;
    check(api_.Query_thread(&provided), "threadLevel");
    return provided;
  }

  // ---- Collectives ------------------------------------------------------------

  int run(Call&& call, Mode mode) override {
    if (mode == Mode::BLOCKING) {
      check(issue(call, Mode::BLOCKING, nullptr, w_scratch_), coll_name(call.coll));
      return -1;
    }
    Pending p;
    p.call = std::move(call);
    p.persistent = mode == Mode::PERSISTENT;
    Request r = request_null_;
    if (p.persistent) {
      // The library's persistent collective where it has one, made at the
      // first start: making one is collective in MPI (Open MPI takes a
      // sequence number of the communicator), and templates of repeated
      // blocking calls (run_template) are made by each rank on its own
      // and never started. Else start() issues a nonblocking call.
      p.native = !emulate_persistent(p.call.comm);
      return pending_.add(std::move(p));
    }
    check(issue(p.call, Mode::NONBLOCKING, &r, p.w_types), coll_name(p.call.coll));
    p.request = r;
    p.active = true;
    active_++;
    return pending_.add(std::move(p));
  }

  void start(int id) override {
    Pending& p = pending(id, "PersistentRequest.start");
    if (!p.persistent || p.active) throw CoreError(ErrorClass::REQUEST, "PersistentRequest.start: the request is active");
    if (p.native && !p.made) {
      Request r = request_null_;
      int rc = issue(p.call, Mode::PERSISTENT, &r, p.w_types);
      if (rc == kNoPersistent) {
        p.native = false;
      } else {
        check(rc, coll_name(p.call.coll));
        p.request = r;
        p.made = true;
      }
    }
    if (p.native) {
      // Open MPI 4.1 will not start its persistent collective again once a
      // round has failed; nothing but the message can change that, since
      // making a new request is collective.
      int rc = api_.Start(&p.request);
      if (rc != 0 && p.failed) {
        throw CoreError(ErrorClass::REQUEST, std::string("PersistentRequest.start: ") + A::kName +
                                                 " cannot start this request again after its last round failed (" +
                                                 error_text(rc) + "): free it, and make a new one on every rank");
      }
      check(rc, "PersistentRequest.start");
    } else {
      Request r = request_null_;
      check(issue(p.call, Mode::NONBLOCKING, &r, p.w_types), coll_name(p.call.coll));
      p.request = r;
    }
    p.active = true;
    active_++;
  }

  bool run_template(int id) override {
    Pending* p = initialized_ ? pending_.find(id) : nullptr;
    if (!p || !p->persistent || p->active) return false;
    check(issue(p->call, Mode::BLOCKING, nullptr, w_scratch_), coll_name(p->call.coll));
    return true;
  }

  void free_template(int id) override {
    Pending* p = pending_.find(id);
    if (!p || !p->persistent) return;
    if (!initialized_) return pending_.remove(id);  // its request went with MPI_Finalize
    if (p->active) throw CoreError(ErrorClass::REQUEST, "PersistentRequest.free: the request is active");
    if (p->made) api_.Request_free(&p->request);
    pending_.remove(id);
  }

  bool test(int id, Completion& out) override {
    Pending& p = pending(id, "Request.test");
    if (!p.active) return finish(id, p, 0, out), true;
    if (p.kind == Kind::IMPROBE) return try_improbe(id, p, false, out);
    int flag = 0;
    Status st{};
    int rc = api_.Test(&p.request, &flag, &st);
    if (rc == 0 && !flag) return false;
    finish(id, p, rc, out, &st);
    return true;
  }

  Completion wait(int id) override {
    Pending& p = pending(id, "Request.wait");
    Completion out;
    if (!p.active) return finish(id, p, 0, out), out;
    if (p.kind == Kind::IMPROBE) return try_improbe(id, p, true, out), out;
    Status st{};
    int rc = api_.Wait(&p.request, &st);
    finish(id, p, rc, out, &st);
    return out;
  }

  size_t wait_any(const std::vector<int>& ids, Completion& out) override {
    std::vector<Request> reqs(ids.size());
    bool probes = false;
    for (size_t i = 0; i < ids.size(); i++) {
      Pending& p = pending(ids[i], "Request.waitAny");
      reqs[i] = p.active ? p.request : request_null_;
      probes |= p.active && p.kind == Kind::IMPROBE;
    }
    if (probes) return test_any(ids, out);
    int index = -1;
    Status st{};
    int rc = api_.Waitany(int(reqs.size()), reqs.data(), &index, &st);
    if (index < 0 || size_t(index) >= ids.size()) {
      check(rc, "Request.waitAny");
      throw CoreError(ErrorClass::REQUEST, "Request.waitAny: no request was active");
    }
    Pending& p = *pending_.find(ids[size_t(index)]);
    p.request = reqs[size_t(index)];
    finish(ids[size_t(index)], p, rc, out, &st);
    return size_t(index);
  }

  void poll(std::vector<Completion>& done) override {
    if (active_ == 0 || !initialized_) return;
    poll_ids_.clear();
    poll_reqs_.clear();
    pending_.each([&](int id, Pending& p) {
      if (p.active && p.kind != Kind::IMPROBE) {
        poll_ids_.push_back(id);
        poll_reqs_.push_back(p.request);
      }
    });
    int n = int(poll_reqs_.size());
    poll_index_.resize(size_t(n));
    poll_status_.resize(size_t(n));
    int outcount = 0;
    int rc = n > 0 ? api_.Testsome(n, poll_reqs_.data(), &outcount, poll_index_.data(), poll_status_.data()) : 0;
    for (int k = 0; k < outcount; k++) {  // outcount MPI_UNDEFINED (< 0): nothing was active
      int i = poll_index_[size_t(k)];
      int id = poll_ids_[size_t(i)];
      Pending& p = *pending_.find(id);
      p.request = poll_reqs_[size_t(i)];
      // MPI_ERR_IN_STATUS: each status says how its request ended.
      int err = rc == 0 ? 0 : poll_status_[size_t(k)].MPI_ERROR;
      Completion c;
      finish(id, p, err, c, &poll_status_[size_t(k)]);
      done.push_back(std::move(c));
    }
    // Matched probes, oldest first (each that matches leaves the list).
    for (size_t k = 0; k < improbes_.size();) {
      Completion c;
      if (try_improbe(improbes_[k], *pending_.find(improbes_[k]), false, c)) {
        done.push_back(std::move(c));
      } else {
        k++;
      }
    }
  }

  size_t active() const override { return active_; }

 private:
  static constexpr int kNoPersistent = INT_MIN;

  // The request's end: its id released unless it is a template. `st`:
  // its status, where the call that completed it filled one.
  void finish(int id, Pending& p, int rc, Completion& out, const Status* st = nullptr) {
    out.id = id;
    out.error_class = 0;
    out.message.clear();
    out.has_match = p.kind == Kind::RECV && st;
    if (out.has_match) out.matched = matched(*st);
    if (rc != 0) {
      out.error_class = int(error_class(rc));
      if (p.kind == Kind::RECV && out.error_class == int(ErrorClass::TRUNCATE)) {
        out.message = truncated("irecv", out.has_match ? out.matched.bytes : -1, p.bytes);
      } else {
        out.message = std::string(name(p)) + ": " + error_text(rc);
      }
      // Open MPI leaves a request that failed allocated (MPI_Testsome).
      if (!p.persistent && p.request != request_null_) api_.Request_free(&p.request);
    }
    if (p.active) {
      p.active = false;
      active_--;
    }
    p.failed = rc != 0;
    if (p.kind == Kind::IMPROBE) improbes_.erase(std::remove(improbes_.begin(), improbes_.end(), id), improbes_.end());
    if (!p.persistent) pending_.remove(id);
  }

  static const char* name(const Pending& p) {
    switch (p.kind) {
      case Kind::SEND: return "isend";
      case Kind::RECV: return "irecv";
      case Kind::IMPROBE: return "improbe";
      default: return coll_name(p.call.coll);
    }
  }

  // A point-to-point request in flight (MPI's `r`; none for an improbe).
  int started(Pending&& p, Request r) {
    p.request = r;
    p.active = true;
    active_++;
    return pending_.add(std::move(p));
  }

  // Tries improbe request `p` once, or with `block` until it matches
  // (MPI_Mprobe): true once it has completed.
  bool try_improbe(int id, Pending& p, bool block, Completion& out) {
    Comm* c = comms_.find(p.comm);
    Message m = message_null_;
    Status st{};
    int flag = 0;
    int rc = !c      ? -1
             : block ? (flag = 1, api_.Mprobe(source_arg(p.source), p.tag, *c, &m, &st))
                     : api_.Improbe(source_arg(p.source), p.tag, *c, &flag, &m, &st);
    if (rc == 0 && !flag) return false;
    if (!c) {
      finish(id, p, 0, out);
      out.error_class = int(ErrorClass::COMM);
      out.message = "improbe: the communicator was freed before a message matched";
      return true;
    }
    finish(id, p, rc, out);
    if (rc == 0) {
      out.has_match = true;
      out.matched = matched(st);
      out.matched.message = messages_.add(Held{m, out.matched});
    }
    return true;
  }

  // MPI_Waitany where some of `ids` are improbes: MPI_Test and MPI_Improbe
  // in turn until one completes.
  size_t test_any(const std::vector<int>& ids, Completion& out) {
    for (;;) {
      bool any = false;
      for (size_t i = 0; i < ids.size(); i++) {
        Pending* p = pending_.find(ids[i]);
        if (!p || !p->active) continue;
        any = true;
        if (test(ids[i], out)) return i;
      }
      if (!any) throw CoreError(ErrorClass::REQUEST, "Request.waitAny: no request was active");
    }
  }

  // What a status says, in nodempi's terms.
  Matched matched(const Status& st) {
    Matched m;
    m.source = st.MPI_SOURCE == A::kProcNull ? kProcNull : st.MPI_SOURCE;
    m.tag = st.MPI_TAG;
    Count n = 0;
    // MPI_Get_elements_x where there is no MPI_Get_count_c: for MPI_BYTE
    // the same number, as a count that can pass INT_MAX (MPI 3).
    int rc = api_.Get_count_c ? api_.Get_count_c(&st, byte_, &n) : api_.Get_elements_x(&st, byte_, &n);
    m.bytes = rc == 0 ? int64_t(n) : -1;
    return m;
  }

  // Receives matched message `m`, of out.bytes bytes, into `bytes` bytes of
  // `buf`; a longer one goes whole into scratch, of which `buf` gets the
  // first `bytes`, and fails with ERR_TRUNCATE.
  void take(Message& m, void* buf, size_t bytes, const Matched& out, const char* call) {
    Status st{};
    if (out.bytes >= 0 && size_t(out.bytes) <= bytes) return check(mrecv_bytes(buf, size_t(out.bytes), m, &st, call), call);
    if (out.bytes < 0) return check(mrecv_bytes(buf, bytes, m, &st, call), call);
    std::vector<uint8_t> scratch(size_t(out.bytes));
    check(mrecv_bytes(scratch.data(), scratch.size(), m, &st, call), call);
    if (bytes > 0) std::memcpy(buf, scratch.data(), bytes);
    throw CoreError(ErrorClass::TRUNCATE, truncated(call, out.bytes, bytes));
  }

  int mrecv_bytes(void* buf, size_t n, Message& m, Status* st, const char* call) {
    if (n <= size_t(INT_MAX)) return api_.Mrecv(buf, int(n), byte_, &m, st);
    if (api_.Mrecv_c) return api_.Mrecv_c(buf, Count(n), byte_, &m, st);
    return too_large(call, n, "MPI_Mrecv_c");
  }

  // `has`: the message's length, or what the library reported where it
  // does not tell (MPICH says 0).
  static std::string truncated(const char* call, int64_t has, size_t holds) {
    if (has > int64_t(holds)) {
      return std::string(call) + ": the message has " + std::to_string(has) + " bytes but the receive buffer holds " +
             std::to_string(holds);
    }
    return std::string(call) + ": the message is longer than the " + std::to_string(holds) +
           " bytes the receive buffer holds (" + A::kName + " does not say how long)";
  }

  // Throws; typed int to sit in the expressions that pick a function.
  int too_large(const char* call, size_t bytes, const char* fn) {
    throw CoreError(ErrorClass::COUNT, std::string(call) + ": a message of " + std::to_string(bytes) +
                                           " bytes is more than MPI's int counts carry (2^31 - 1), and " +
                                           opened_.path + " has no large-count " + fn + " (MPI 4)");
  }

  // A source argument in the library's numbering (MPICH's MPI_PROC_NULL
  // is nodempi's ANY_SOURCE).
  static int source_arg(int s) {
    if (s == kAnySource) return A::kAnySource;
    if (s == kProcNull) return A::kProcNull;
    return s;
  }

  // The lookups every call makes refuse after MPI_Finalize, after which
  // the libraries abort the process on any call; shm's words for the same.
  Pending& pending(int id, const char* call) {
    Pending* p = pending_.find(id);
    if (!p) throw CoreError(ErrorClass::REQUEST, std::string(call) + ": no such request");
    if (!initialized_) throw CoreError(ErrorClass::REQUEST, std::string(call) + ": the request was freed at finalize");
    return *p;
  }

  Comm comm(int h, const char* call) {
    Comm* c = comms_.find(h);
    if (!c) throw CoreError(ErrorClass::COMM, std::string(call) + ": no such communicator");
    if (!initialized_) throw CoreError(ErrorClass::COMM, std::string(call) + ": the communicator is not valid (freed or finalized)");
    return *c;
  }

  int keep(Comm c) {
    if (c == comm_null_) return -1;
    api_.Comm_set_errhandler(c, errors_return_);
    return comms_.add(c);
  }

  Datatype type(int h) {
    if (h >= 0 && h < int(kernels::TypeId::COUNT)) return basic_[size_t(h)];
    Datatype* t = types_.find(h);
    if (!t) throw CoreError(ErrorClass::TYPE, "no such datatype on the MPI backend");
    return *t;
  }

  // The op of a reduction on datatype handle `t`.
  Op reduce_op(int h, int t) {
    if (h >= 0 && h < int(kernels::OpId::COUNT)) return predefined_op(h, t);
    return op(h);
  }

  Op op(int h) {
    if (h >= 0 && h < int(kernels::OpId::COUNT)) return ops_[size_t(h)];
    for (auto& u : user_ops_) {
      if (kFirstUserOp + u.first == h) return u.second;
    }
    throw CoreError(ErrorClass::OP, "no such op on the MPI backend");
  }

  // A rank argument in the library's numbering.
  static int rank_arg(int r) {
    if (r == kRoot) return A::kRoot;
    if (r == kProcNull) return A::kProcNull;
    return r;
  }

  const void* send_buf(const void* b) const { return b == in_place() ? A::in_place() : b; }
  void* recv_buf(void* b) const { return b == in_place() ? A::in_place() : b; }

  // One collective in `mode`. PERSISTENT returns kNoPersistent when the
  // library has no persistent form of it.
  int issue(Call& c, Mode mode, Request* r, std::vector<Datatype>& w) {
    Comm cm = comm(c.comm, coll_name(c.coll));
    const void* s = send_buf(c.send);
    void* rv = recv_buf(c.recv);
    const int root = rank_arg(c.root);
    auto& a = api_;
    typename A::Info info = info_null_;
    // Calls `blocking`, `nonblocking` or `persistent` by mode.
#define NODEMPI_BY_MODE(fn, ...)                                                       \
  (mode == Mode::BLOCKING      ? a.fn(__VA_ARGS__, cm)                                 \
   : mode == Mode::NONBLOCKING ? a.I##fn(__VA_ARGS__, cm, r)                           \
   : a.fn##_init               ? a.fn##_init(__VA_ARGS__, cm, info, r)                 \
                               : kNoPersistent)
    switch (c.coll) {
      case Coll::BARRIER:
        return mode == Mode::BLOCKING      ? a.Barrier(cm)
               : mode == Mode::NONBLOCKING ? a.Ibarrier(cm, r)
               : a.Barrier_init            ? a.Barrier_init(cm, info, r)
                                           : kNoPersistent;
      case Coll::BCAST:
        return NODEMPI_BY_MODE(Bcast, c.recv, c.recv_count, type(c.recv_type), root);
      case Coll::GATHER:
        return NODEMPI_BY_MODE(Gather, s, c.send_count, type(c.send_type), rv, c.recv_count, type(c.recv_type), root);
      case Coll::GATHERV:
        return NODEMPI_BY_MODE(Gatherv, s, c.send_count, type(c.send_type), rv, ints(c.recv_counts),
                               ints(c.recv_displs), type(c.recv_type), root);
      case Coll::SCATTER:
        return NODEMPI_BY_MODE(Scatter, s, c.send_count, type(c.send_type), rv, c.recv_count, type(c.recv_type), root);
      case Coll::SCATTERV:
        return NODEMPI_BY_MODE(Scatterv, s, ints(c.send_counts), ints(c.send_displs), type(c.send_type), rv,
                               c.recv_count, type(c.recv_type), root);
      case Coll::ALLGATHER:
        return NODEMPI_BY_MODE(Allgather, s, c.send_count, type(c.send_type), rv, c.recv_count, type(c.recv_type));
      case Coll::ALLGATHERV:
        return NODEMPI_BY_MODE(Allgatherv, s, c.send_count, type(c.send_type), rv, ints(c.recv_counts),
                               ints(c.recv_displs), type(c.recv_type));
      case Coll::ALLTOALL:
        return NODEMPI_BY_MODE(Alltoall, s, c.send_count, type(c.send_type), rv, c.recv_count, type(c.recv_type));
      case Coll::ALLTOALLV:
        return NODEMPI_BY_MODE(Alltoallv, s, ints(c.send_counts), ints(c.send_displs), type(c.send_type), rv,
                               ints(c.recv_counts), ints(c.recv_displs), type(c.recv_type));
      case Coll::ALLTOALLW: {
        // Datatype handles in the library's terms, kept with the request
        // (MPI reads them until it completes): send types, then receive.
        w.clear();
        for (int t : c.send_types) w.push_back(type(t));
        for (int t : c.recv_types) w.push_back(type(t));
        const Datatype* st = c.send_types.empty() ? nullptr : w.data();
        return NODEMPI_BY_MODE(Alltoallw, s, ints(c.send_counts), ints(c.send_displs), st, rv,
                               ints(c.recv_counts), ints(c.recv_displs), w.data() + c.send_types.size());
      }
      case Coll::REDUCE: {
        // Where this rank receives nothing (not the root), the send side
        // says what is reduced.
        const bool here = c.recv_count > 0 || c.send_count == 0;
        const int t = here ? c.recv_type : c.send_type;
        return NODEMPI_BY_MODE(Reduce, s, rv, here ? c.recv_count : c.send_count, type(t), reduce_op(c.op, t), root);
      }
      case Coll::ALLREDUCE:
        return NODEMPI_BY_MODE(Allreduce, s, rv, c.recv_count, type(c.recv_type), reduce_op(c.op, c.recv_type));
      case Coll::REDUCE_SCATTER:
        return NODEMPI_BY_MODE(Reduce_scatter, s, rv, ints(c.recv_counts), type(c.recv_type),
                               reduce_op(c.op, c.recv_type));
      case Coll::REDUCE_SCATTER_BLOCK:
        return NODEMPI_BY_MODE(Reduce_scatter_block, s, rv, c.recv_count, type(c.recv_type),
                               reduce_op(c.op, c.recv_type));
      case Coll::SCAN:
        return NODEMPI_BY_MODE(Scan, s, rv, c.recv_count, type(c.recv_type), reduce_op(c.op, c.recv_type));
      case Coll::EXSCAN:
        return NODEMPI_BY_MODE(Exscan, s, rv, c.recv_count, type(c.recv_type), reduce_op(c.op, c.recv_type));
    }
#undef NODEMPI_BY_MODE
    throw CoreError(ErrorClass::INTERN, "unknown collective");
  }

  // MPI reads absent count lists as a null pointer; a rank where a list
  // does not matter passes none.
  static const int* ints(const std::vector<int>& v) { return v.empty() ? nullptr : v.data(); }

  // A node of a nodempi description (typemap.h) as an MPI datatype whose
  // type map is the node's byte blocks relative to its parent's origin.
  Datatype node_type(const datatype::Typemap& map, size_t i, const std::vector<Datatype>& nodes,
                     std::vector<Datatype>& made) {
    const datatype::Node& n = map.node(int32_t(i));
    auto sub = [&](int32_t child) { return nodes[size_t(child)]; };
    switch (n.kind) {
      case datatype::Kind::BLOCK:
        return at(made, n.off, made_type(made, [&](Datatype* t) { return api_.Type_contiguous(int(n.size), byte_, t); }));
      case datatype::Kind::VECTOR:
        return at(made, n.off, made_type(made, [&](Datatype* t) {
                    return api_.Type_create_hvector(int(n.n), 1, Aint(n.stride), sub(n.child), t);
                  }));
      case datatype::Kind::LIST: {
        std::vector<int> lens(size_t(n.n));
        std::vector<Aint> disps(size_t(n.n));
        for (size_t k = 0; k < size_t(n.n); k++) {
          const datatype::Entry& e = map.entry(n.first + k);
          lens[k] = int(e.len);
          disps[k] = Aint(n.off + e.disp);
        }
        return made_type(made, [&](Datatype* t) {
          return api_.Type_create_hindexed(int(n.n), lens.data(), disps.data(), byte_, t);
        });
      }
      case datatype::Kind::INDEXED: {
        // Runs of children `stride` apart: the child resized to that extent.
        Datatype step = made_type(made, [&](Datatype* t) {
          return api_.Type_create_resized(sub(n.child), 0, Aint(n.stride), t);
        });
        std::vector<int> lens(size_t(n.n));
        std::vector<Aint> disps(size_t(n.n));
        for (size_t k = 0; k < size_t(n.n); k++) {
          const datatype::Entry& e = map.entry(n.first + k);
          lens[k] = int(e.len);
          disps[k] = Aint(n.off + e.disp);
        }
        return made_type(made, [&](Datatype* t) {
          return api_.Type_create_hindexed(int(n.n), lens.data(), disps.data(), step, t);
        });
      }
      case datatype::Kind::STRUCT: {
        std::vector<int> ones(size_t(n.n), 1);
        std::vector<Aint> disps(size_t(n.n), Aint(n.off));
        std::vector<Datatype> parts(size_t(n.n));
        for (size_t k = 0; k < size_t(n.n); k++) parts[k] = sub(map.entry(n.first + k).child);
        return made_type(made, [&](Datatype* t) {
          return api_.Type_create_struct(int(n.n), ones.data(), disps.data(), parts.data(), t);
        });
      }
    }
    throw CoreError(ErrorClass::TYPE, "unknown node in a datatype description");
  }

  // `t` placed at byte `off`.
  Datatype at(std::vector<Datatype>& made, int64_t off, Datatype t) {
    if (off == 0) return t;
    int one = 1;
    Aint d = Aint(off);
    return made_type(made, [&](Datatype* out) { return api_.Type_create_hindexed(1, &one, &d, t, out); });
  }

  template <class F>
  Datatype made_type(std::vector<Datatype>& made, F&& f) {
    Datatype t = datatype_null_;
    int rc = f(&t);
    if (rc != 0) {
      for (Datatype& d : made) api_.Type_free(&d);
      made.clear();
      check(rc, "commit");
    }
    made.push_back(t);
    return t;
  }

  // ---- Predefined ops the library gets wrong -----------------------------------
  //
  // Libraries differ from C semantics in places, and from each other: Open
  // MPI 4.1's AVX ops saturate 8- and 16-bit integer sums instead of
  // wrapping (its issue 8045, closed as won't fix), MPICH 4.0 compares
  // 8- and 16-bit unsigned integers as signed in MAX and MIN, and each has
  // its own rule for NaN. So at init every (op, type) pair nodempi allows
  // is tried with MPI_Reduce_local against nodempi's kernel on the same
  // operands; where the results differ in any bit, or the library refuses
  // the pair, collectives use an MPI_Op that runs nodempi's kernel. The
  // ranks agree on the verdict (a bitwise OR over COMM_WORLD), since every
  // rank of a reduction must pass the same op.

  void calibrate() {
    constexpr size_t kTypes = size_t(kernels::TypeId::COUNT), kOps = size_t(kernels::OpId::COUNT);
    constexpr size_t kItems = 67;  // vector bodies and tails
    uint8_t bad[kOps][kTypes] = {};
    for (size_t t = 0; t < kTypes; t++) {
      const auto type = kernels::TypeId(t);
      std::vector<uint8_t> a = probe_items(type, kItems, 2 * t + 1), b = probe_items(type, kItems, 2 * t + 2);
      for (size_t o = 0; o < kOps; o++) {
        kernels::ReduceFn fn = kernels::lookup(kernels::OpId(o), type);
        if (!fn) continue;
        // A stand-in type is another type to the library: its ops are
        // never the right ones, even where the probe could not tell.
        if (is_stand_in(type)) {
          bad[o][t] = 1;
          continue;
        }
        std::vector<uint8_t> ours(a.size()), theirs = b;
        fn(a.data(), b.data(), ours.data(), kItems);
        int rc = api_.Reduce_local(a.data(), theirs.data(), int(kItems), basic_[t], ops_[o]);
        bad[o][t] = rc != 0 || theirs != ours;
      }
    }
    check(api_.Allreduce(A::in_place(), bad, int(sizeof bad), byte_, ops_[size_t(kernels::OpId::BOR)], world_), "init");
    for (size_t o = 0; o < kOps; o++) {
      for (size_t t = 0; t < kTypes; t++) replaced_[o][t] = bad[o][t] ? kReplace : kNative;
    }
  }

  // Whether a kernel's result can depend on which operand comes first: with
  // NaNs (which payload, or NaN against a number in MAX and MIN) and signed
  // zeros, for the floating types and the pairs with a floating value. MPI
  // lets a library combine a commutative op in either order, and libraries
  // do so differently on different ranks (MPICH 4.0's recursive doubling
  // computes "theirs op mine" on both sides of each exchange), so an
  // allreduce would end with different bits on different ranks. Such ops
  // are made non-commutative: the library then combines in rank order
  // everywhere.
  static bool order_matters(kernels::TypeId t) {
    using T = kernels::TypeId;
    switch (t) {
      case T::F32: case T::F64: case T::F80: case T::C32: case T::C64: case T::C80: case T::F16: case T::BF16:
      case T::FLOAT_INT: case T::DOUBLE_INT: case T::LONG_DOUBLE_INT: case T::TWO_FLOAT: case T::TWO_DOUBLE:
        return true;
      default:
        return false;
    }
  }

  // The op for predefined op `o` on basic type `t`: the library's, or one
  // that runs nodempi's kernel (made on first use).
  Op predefined_op(int o, int t) {
    if (t < 0 || t >= int(kernels::TypeId::COUNT)) return ops_[size_t(o)];
    int& r = replaced_[size_t(o)][size_t(t)];
    if (r == kNative) return ops_[size_t(o)];
    if (r == kReplace) {
      auto fn = kernels::lookup(kernels::OpId(o), kernels::TypeId(t));
      if (!fn) return ops_[size_t(o)];
      r = op_create(kernel_hook, reinterpret_cast<void*>(fn), !order_matters(kernels::TypeId(t)));
    }
    return op(r);
  }

  // ---- Errors ----------------------------------------------------------------

  ErrorClass error_class(int rc) {
    int cls = rc;
    api_.Error_class(rc, &cls);
    struct Pair {
      int mpi;
      ErrorClass ours;
    };
    static const Pair kMap[] = {
        {A::kErrBuffer, ErrorClass::BUFFER}, {A::kErrCount, ErrorClass::COUNT},     {A::kErrType, ErrorClass::TYPE},
        {A::kErrTag, ErrorClass::TAG},       {A::kErrComm, ErrorClass::COMM},       {A::kErrRank, ErrorClass::RANK},
        {A::kErrRequest, ErrorClass::REQUEST}, {A::kErrRoot, ErrorClass::ROOT},     {A::kErrGroup, ErrorClass::GROUP},
        {A::kErrOp, ErrorClass::OP},         {A::kErrArg, ErrorClass::ARG},         {A::kErrTruncate, ErrorClass::TRUNCATE},
        {A::kErrIntern, ErrorClass::INTERN}, {A::kErrNotSame, ErrorClass::NOT_SAME},
        {A::kErrProcFailed, ErrorClass::PROC_FAILED},
    };
    for (const Pair& p : kMap) {
      if (p.mpi == cls) return p.ours;
    }
    return ErrorClass::OTHER;
  }

  std::string error_text(int rc) {
    std::string s(size_t(A::kMaxErrorString), '\0');
    int len = 0;
    if (api_.Error_string(rc, s.data(), &len) != 0) return "MPI error " + std::to_string(rc);
    s.resize(size_t(std::max(0, len)));
    return s + " (" + A::kName + ")";
  }

  void check(int rc, const char* call) {
    if (rc != 0) throw CoreError(error_class(rc), std::string(call) + ": " + error_text(rc));
  }

  void* lib_;
  Opened opened_;
  Api<A> api_{};
  Datatype basic_[size_t(kernels::TypeId::COUNT)]{};
  Op ops_[size_t(kernels::OpId::COUNT)]{};
  Comm world_{}, self_{}, comm_null_{};
  Request request_null_{};
  typename A::Info info_null_{};
  typename A::Errhandler errors_return_{};
  Datatype byte_{}, datatype_null_{};
  Message message_null_{};
  int tag_ub_ = 32767;
  bool initialized_ = false;
  bool pmi_barrier_ = false;  // finalize enters PMI's barrier (pmi.h)
  // Whether persistent collectives run as nonblocking ones started anew each
  // time, even where the library has its own: with
  // NODEMPI_MPI_PERSISTENT=emulate, and on the MPICH ABI, whose persistent
  // collectives deliver wrong data up to MPICH 4.2 (a gather's root misses
  // blocks: pmodels/mpich#7078; on intercommunicators nothing arrives).
  bool emulate_persistent(int) const { return tuning().emulate_persistent || std::strcmp(A::kName, "MPICH") == 0; }
  // Per predefined op and basic type: kNative, kReplace (not made yet), or
  // the handle of the kernel-backed op.
  static constexpr int kNative = -1, kReplace = -2;
  int replaced_[size_t(kernels::OpId::COUNT)][size_t(kernels::TypeId::COUNT)]{};

  Table<Comm> comms_{kWorld, "communicators"};
  Table<Datatype> types_{kFirstDerived, "datatypes"};
  Table<Pending> pending_{1, "requests"};
  Table<Held> messages_{1, "matched messages"};
  std::vector<int> improbes_;  // pending improbes, oldest first
  std::vector<std::pair<size_t, int>> opaque_;  // item bytes -> type handle
  std::vector<std::pair<int, Op>> user_ops_;     // trampoline slot -> MPI_Op
  size_t active_ = 0;
  // Scratch of poll() and alltoallw, kept between calls.
  std::vector<int> poll_ids_, poll_index_;
  std::vector<Request> poll_reqs_;
  std::vector<Status> poll_status_;
  std::vector<Datatype> w_scratch_;
};

}  // namespace

std::unique_ptr<Mpi> open(const std::vector<std::string>& candidates, std::vector<std::string>& tried) {
  // MPICH's ch4:ucx links UCX, which at load reads UCX_MEM_EVENTS and at
  // MPI_Init patches mmap, munmap and brk in the process to learn when
  // registered memory goes away. Inside Node that makes V8 fault at random
  // (about one 3-rank MPICH job in 60 here; the other hook mode, reloc,
  // hangs instead); without the events UCX registers memory per transfer.
  // Open MPI loads UCX only with its pml at MPI_Init and feeds it its own
  // memory hooks: there the events stay on (off, its large transfers take
  // up to 4x as long). A user's own setting wins.
  const bool user_set = std::getenv("UCX_MEM_EVENTS") != nullptr;
  auto events = [&](bool on) {
    if (user_set) return;
    if (on) unsetenv("UCX_MEM_EVENTS");
    else setenv("UCX_MEM_EVENTS", "no", 1);
  };
  for (const std::string& name : candidates) {
    // RTLD_GLOBAL: the library's own plugins (Open MPI's mca components,
    // MPICH's netmods) resolve their symbols against it.
    events(false);
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_GLOBAL);
    events(true);
    if (!lib) {
      const char* e = dlerror();
      tried.push_back(name + ": " + (e ? e : "cannot be loaded"));
      continue;
    }
    // Open MPI exports its predefined objects; the MPICH ABI's handles are
    // numbers, so any other library that has MPI_Init_thread is taken as
    // MPICH's (Intel MPI, Cray MPICH and MVAPICH keep its ABI).
    const bool ompi = dlsym(lib, "ompi_mpi_comm_world") != nullptr;
    const bool mpi = dlsym(lib, "MPI_Init_thread") != nullptr;
    if (!mpi) {
      tried.push_back(name + ": loads, but is not an MPI library (no MPI_Init_thread)");
      dlclose(lib);
      continue;
    }
    if (!ompi && dlsym(lib, "MPI_Abi_get_version")) {
      tried.push_back(name + ": the MPI 5 standard ABI (libmpi_abi), which this version of nodempi does not load yet");
      dlclose(lib);
      continue;
    }
    if (!ompi) events(false);  // for good: UCX may read it again at MPI_Init
    try {
      if (ompi) return std::make_unique<Library<OmpiAbi>>(lib, name);
      return std::make_unique<Library<MpichAbi>>(lib, name);
    } catch (const CoreError& e) {
      tried.push_back(name + ": " + e.what());
      // Left open: a library that has run its constructors may not unload cleanly.
    }
  }
  return nullptr;
}

}  // namespace nodempi::mpi
