// The system MPI backend's bindings (lib/coll/mpi.ts, lib/p2p/mpi.ts,
// lib/backends/mpi.ts):
// unwrap, call native/core/mpi, wrap. Everything runs on the main thread,
// so a user op's function is called right where MPI calls it, and
// completions reach JavaScript through mpiPoll(), which lib/ calls from the
// event loop while requests are active.
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/datatype/typemap.h"
#include "core/kernels/kernels.h"
#include "core/memory/huge_pages.h"
#include "core/mpi/mpi.h"
#include "napi/args.h"
#include "napi/errors.h"
#include "napi/state.h"
#include "napi/user_op.h"

namespace nodempi::napi {

// A user-defined op on the MPI backend: its function, and how many active
// requests still need it (op_free waits for them).
struct MpiUserOp {
  std::unique_ptr<UserOp> fn;
  int uses = 0;
  bool freed = false;
};

struct MpiBackend {
  std::unique_ptr<mpi::Mpi> lib;
  // The numeric arguments of mpiColl (lib/coll/mpi.ts writes them).
  Napi::Reference<Napi::Int32Array> block_ref;
  int32_t* block = nullptr;
  // Derived datatypes' layouts, for the bounds checks.
  std::unordered_map<int, std::unique_ptr<datatype::Typemap>> layouts;
  std::unordered_map<int, MpiUserOp> user_ops;
  // Item sizes of the opaque types (user ops reduce items of these).
  std::unordered_map<int, size_t> opaque;
  // Requests and templates whose call uses a user op, by id.
  struct UsesOp {
    int op;
    bool persistent;
  };
  std::unordered_map<int, UsesOp> request_ops;
  // The large buffer spans of persistent calls, by id, offered huge pages
  // again at every start (memory::prefer_huge_pages collapses from a buffer's
  // second use on; replays, lib/replay.ts, take no buffer this large).
  std::unordered_map<int, std::vector<std::pair<const uint8_t*, size_t>>> template_spans;
  // What a point-to-point request's memory is, by id, kept from the GC
  // until it completes: the buffer MPI reads or writes, and the status
  // array (lib/p2p/backend.ts) its completion fills.
  struct Held {
    Napi::ObjectReference buffer;
    Napi::ObjectReference status;
  };
  std::unordered_map<int, Held> p2p;
  // Completions that waitAny found and wait() will report.
  std::unordered_map<int, mpi::Completion> found;
  std::vector<mpi::Completion> polled;
};

namespace {

// The library is process-wide: one environment (thread) may use it.
std::atomic<bool> g_taken{false};

// Slots of the call block.
// SEND_BLOCKS/RECV_BLOCKS: how many counts' worth the buffer holds (one per
// rank for gather's receive side and the like), for the bounds checks.
enum Slot : int {
  COLL, COMM, SEND_COUNT, SEND_TYPE, RECV_COUNT, RECV_TYPE, OP, ROOT, MODE, FLAGS, LISTS, LIST_LENGTH,
  SEND_BLOCKS, RECV_BLOCKS, BLOCK_SIZE
};
// FLAGS bits.
constexpr int kSendInPlace = 1, kRecvInPlace = 2;
// LISTS bits: which argument lists the call carries; list k is slot
// kFirstList + k of the argument lists (lib/args.ts; the slots below hold
// what lib/ resolved the v-messages to).
constexpr uint32_t kFirstList = 4;
enum List : int { SEND_COUNTS, SEND_DISPLS, SEND_TYPES, RECV_COUNTS, RECV_DISPLS, RECV_TYPES, LIST_COUNT };
static_assert(kFirstList + LIST_COUNT <= kArgLists, "room for every list");

MpiBackend& backend(Napi::Env env, State& st, const char* call) {
  if (!st.mpi || !st.mpi->lib) throw_mpi(env, ErrorClass::OTHER, std::string(call) + ": the MPI backend is not open");
  return *st.mpi;
}

MpiBackend& backend(Napi::Env env, const char* call) { return backend(env, State::of(env), call); }

[[noreturn]] void rethrow(Napi::Env env, const CoreError& e) { throw_mpi(env, e.error_class(), e.what()); }

// Runs f, turning CoreErrors into MPIErrors.
template <class F>
auto guarded(Napi::Env env, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const CoreError& e) {
    rethrow(env, e);
  }
}

int int_arg(const Napi::CallbackInfo& info, size_t i) {
  int32_t v = 0;
  napi_get_value_int32(info.Env(), info[i], &v);
  return v;
}

// ---- Opening and the life cycle -----------------------------------------------

// mpiOpen(candidates): { path, abi } or { tried: [reason per candidate] }
Napi::Value Open(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  State& st = State::of(env);
  if (st.mpi) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("path", st.mpi->lib->opened().path);
    o.Set("abi", st.mpi->lib->opened().abi);
    return o;
  }
  if (g_taken.exchange(true)) {
    throw_mpi(env, ErrorClass::OTHER,
              "init: the MPI backend is in use by another thread of this process; MPI is initialised once per process");
  }
  Napi::Array list = info[0].As<Napi::Array>();
  std::vector<std::string> candidates, tried;
  for (uint32_t i = 0; i < list.Length(); i++) candidates.push_back(list.Get(i).As<Napi::String>().Utf8Value());
  std::unique_ptr<mpi::Mpi> lib = mpi::open(candidates, tried);
  Napi::Object out = Napi::Object::New(env);
  if (!lib) {
    g_taken = false;
    Napi::Array t = Napi::Array::New(env, tried.size());
    for (uint32_t i = 0; i < tried.size(); i++) t.Set(i, tried[i]);
    out.Set("tried", t);
    return out;
  }
  out.Set("path", lib->opened().path);
  out.Set("abi", lib->opened().abi);
  st.mpi = std::make_shared<MpiBackend>();
  st.mpi->lib = std::move(lib);
  return out;
}

Napi::Value LibraryVersion(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), backend(info.Env(), "libraryVersion").lib->library_version());
}

Napi::Value ProcessorName(const Napi::CallbackInfo& info) {
  MpiBackend& b = backend(info.Env(), "processorName");
  return Napi::String::New(info.Env(), guarded(info.Env(), [&] { return b.lib->processor_name(); }));
}

// mpiInit(threadLevel): [rank, size] in COMM_WORLD; threadLevel 0 asks for
// MPI_THREAD_SINGLE, 1 for MPI_THREAD_FUNNELED.
Napi::Value Init(const Napi::CallbackInfo& info) {
  MpiBackend& b = backend(info.Env(), "init");
  const mpi::ThreadLevel level = int_arg(info, 0) == 0 ? mpi::ThreadLevel::SINGLE : mpi::ThreadLevel::FUNNELED;
  int rank = 0, size = 0;
  guarded(info.Env(), [&] { b.lib->init(level, &rank, &size); });
  Napi::Array out = Napi::Array::New(info.Env(), 2);
  out.Set(0u, rank);
  out.Set(1u, size);
  return out;
}

// mpiThreadLevel(): MPI_Query_thread's answer.
Napi::Value QueryThread(const Napi::CallbackInfo& info) {
  MpiBackend& b = backend(info.Env(), "threadLevel");
  return Napi::Number::New(info.Env(), guarded(info.Env(), [&] { return b.lib->thread_level(); }));
}

void Finalize(const Napi::CallbackInfo& info) {
  State& st = State::of(info.Env());
  if (st.mpi && st.mpi->lib) guarded(info.Env(), [&] { st.mpi->lib->finalize(); });
}

void Abort(const Napi::CallbackInfo& info) { backend(info.Env(), "abort").lib->abort(int_arg(info, 0)); }

// ---- Communicators --------------------------------------------------------------

// mpiCommInfo(h): [rank, size, remoteSize (-1 for an intracommunicator)]
Napi::Value CommInfo(const Napi::CallbackInfo& info) {
  MpiBackend& b = backend(info.Env(), "comm");
  int rank = 0, size = 0, remote = -1;
  guarded(info.Env(), [&] { b.lib->comm_info(int_arg(info, 0), &rank, &size, &remote); });
  Napi::Array out = Napi::Array::New(info.Env(), 3);
  out.Set(0u, rank);
  out.Set(1u, size);
  out.Set(2u, remote);
  return out;
}

Napi::Value CommDup(const Napi::CallbackInfo& info) {
  MpiBackend& b = backend(info.Env(), "dup");
  return Napi::Number::New(info.Env(), guarded(info.Env(), [&] { return b.lib->comm_dup(int_arg(info, 0)); }));
}

// mpiCommSplit(h, color, key): the new handle, -1 for color UNDEFINED
Napi::Value CommSplit(const Napi::CallbackInfo& info) {
  MpiBackend& b = backend(info.Env(), "split");
  return Napi::Number::New(info.Env(), guarded(info.Env(), [&] {
    return b.lib->comm_split(int_arg(info, 0), int_arg(info, 1), int_arg(info, 2));
  }));
}

// mpiCommSplitShared(h, undefined, key)
Napi::Value CommSplitShared(const Napi::CallbackInfo& info) {
  MpiBackend& b = backend(info.Env(), "splitType");
  return Napi::Number::New(info.Env(), guarded(info.Env(), [&] {
    return b.lib->comm_split_shared(int_arg(info, 0), info[1].ToBoolean(), int_arg(info, 2));
  }));
}

// mpiIntercommCreate(local, localLeader, peer (-1 where it does not matter), remoteLeader, tag)
Napi::Value IntercommCreate(const Napi::CallbackInfo& info) {
  MpiBackend& b = backend(info.Env(), "createIntercomm");
  return Napi::Number::New(info.Env(), guarded(info.Env(), [&] {
    return b.lib->intercomm_create(int_arg(info, 0), int_arg(info, 1), int_arg(info, 2), int_arg(info, 3),
                                   int_arg(info, 4));
  }));
}

Napi::Value IntercommMerge(const Napi::CallbackInfo& info) {
  MpiBackend& b = backend(info.Env(), "merge");
  return Napi::Number::New(info.Env(), guarded(info.Env(), [&] {
    return b.lib->intercomm_merge(int_arg(info, 0), info[1].ToBoolean());
  }));
}

void CommFree(const Napi::CallbackInfo& info) {
  MpiBackend& b = backend(info.Env(), "free");
  guarded(info.Env(), [&] { b.lib->comm_free(int_arg(info, 0)); });
}

// mpiWorldRanks(h, remote): COMM_WORLD ranks of the (remote) group
Napi::Value WorldRanks(const Napi::CallbackInfo& info) {
  MpiBackend& b = backend(info.Env(), "group");
  std::vector<int> ranks = guarded(info.Env(), [&] { return b.lib->world_ranks(int_arg(info, 0), info[1].ToBoolean()); });
  Napi::Int32Array out = Napi::Int32Array::New(info.Env(), ranks.size());
  if (!ranks.empty()) std::memcpy(out.Data(), ranks.data(), ranks.size() * sizeof(int));
  return out;
}

// ---- Datatypes and ops -------------------------------------------------------------

// mpiTypeCreate(description: Float64Array): a committed MPI datatype
Napi::Value TypeCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  MpiBackend& b = backend(env, "commit");
  Bytes words = bytes_arg(info, 0, "commit", "description");
  const double* w = reinterpret_cast<const double*>(words.data);
  const size_t n = words.length / sizeof(double);
  return Napi::Number::New(env, guarded(env, [&] {
    auto layout = std::make_unique<datatype::Typemap>(w, n);
    int h = b.lib->type_create(w, n);
    b.layouts[h] = std::move(layout);
    return h;
  }));
}

Napi::Value OpaqueType(const Napi::CallbackInfo& info) {
  MpiBackend& b = backend(info.Env(), "commit");
  size_t bytes = size_arg(info, 0, "commit", "item size");
  int h = guarded(info.Env(), [&] { return b.lib->opaque_type(bytes); });
  b.opaque[h] = bytes;
  return Napi::Number::New(info.Env(), h);
}

void TypeFree(const Napi::CallbackInfo& info) {
  State& st = State::of(info.Env());
  if (!st.mpi) return;
  int h = int_arg(info, 0);
  st.mpi->lib->type_free(h);
  st.mpi->layouts.erase(h);
  st.mpi->opaque.erase(h);
}

void call_user(void* ctx, void* in, void* inout, int len) {
  if (len > 0) static_cast<UserOp*>(ctx)->apply(in, inout, size_t(len));
}

// mpiOpCreate(spec, commute): spec is lib/op.ts's UserOpSpec for one datatype
Napi::Value OpCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  MpiBackend& b = backend(env, "Op.create");
  auto fn = std::make_unique<UserOp>(env, info[0].As<Napi::Object>(), false);
  UserOp* ctx = fn.get();
  int h = guarded(env, [&] { return b.lib->op_create(call_user, ctx, info[1].ToBoolean()); });
  b.user_ops[h] = MpiUserOp{std::move(fn), 0, false};
  return Napi::Number::New(env, h);
}

void release_op(MpiBackend& b, int h) {
  auto it = b.user_ops.find(h);
  if (it == b.user_ops.end() || !it->second.freed || it->second.uses > 0) return;
  b.lib->op_free(h);
  b.user_ops.erase(it);
}

// mpiOpFree(h): released once no active request uses it
void OpFree(const Napi::CallbackInfo& info) {
  State& st = State::of(info.Env());
  if (!st.mpi) return;
  int h = int_arg(info, 0);
  auto it = st.mpi->user_ops.find(h);
  if (it == st.mpi->user_ops.end()) return;
  it->second.freed = true;
  release_op(*st.mpi, h);
}

// ---- Collectives ---------------------------------------------------------------

// mpiSetCallBlock(Int32Array): where mpiColl finds its numeric arguments.
void SetCallBlock(const Napi::CallbackInfo& info) {
  MpiBackend& b = backend(info.Env(), "init");
  Napi::Int32Array block = info[0].As<Napi::Int32Array>();
  if (block.ElementLength() < BLOCK_SIZE) throw_mpi(info.Env(), ErrorClass::INTERN, "mpiSetCallBlock: too short");
  b.block_ref = Napi::Persistent(block);
  b.block = block.Data();
}

// Bytes `count` items of datatype `type` touch from a buffer's start:
// [lo, hi), or {0, 0} for none.
void span_of(MpiBackend& b, Napi::Env env, int type, int64_t count, int64_t& lo, int64_t& hi, const char* call) {
  lo = hi = 0;
  if (count <= 0) return;
  if (type >= 0 && type < int(kernels::TypeId::COUNT)) {
    hi = count * int64_t(kernels::type_size(kernels::TypeId(type)));
  } else if (auto it = b.layouts.find(type); it != b.layouts.end()) {
    guarded(env, [&] { it->second->span(size_t(count), lo, hi); });
  } else if (auto o = b.opaque.find(type); o != b.opaque.end()) {
    hi = count * int64_t(o->second);
  } else {
    throw_mpi(env, ErrorClass::TYPE, std::string(call) + ": no such datatype on the MPI backend");
  }
}

void need_span(Napi::Env env, const Bytes& buf, int64_t lo, int64_t hi, int64_t at, const char* call, const char* what) {
  if (hi <= lo) return;
  if (!buf.data || at + lo < 0 || uint64_t(at + hi) > buf.length) {
    throw_mpi(env, ErrorClass::BUFFER,
              std::string(call) + ": " + what + " holds " + std::to_string(buf.length) + " bytes, bytes " +
                  std::to_string(at + lo) + " to " + std::to_string(at + hi) + " needed");
  }
}

// List `k` of the argument lists as ints (counts, displacements, types).
bool list_arg(Napi::Env env, int32_t lists, List k, uint32_t n, std::vector<int>& out, const char* call) {
  if (!(lists & (1 << k))) return false;
  const ArgLists& a = State::of(env).arg_lists;
  if (n > a.width || !a.data) throw_mpi(env, ErrorClass::ARG, std::string(call) + ": argument list too short");
  const uint8_t* src = a.data + size_t(kFirstList + k) * a.width * sizeof(double);
  out.resize(n);
  for (uint32_t r = 0; r < n; r++) {
    double d;
    std::memcpy(&d, src + r * sizeof(double), sizeof d);
    if (!(d >= -2147483648.0 && d <= 2147483647.0) || d != double(int64_t(d))) {
      throw_mpi(env, ErrorClass::COUNT,
                std::string(call) + ": counts and displacements must be integers below 2^31 on the MPI backend");
    }
    out[r] = int(d);
  }
  return true;
}

// Checks a v-message's blocks against its buffer: block r is counts[r]
// items of types[r] (or `type`) at displs[r] × (1, or the type's extent).
// Returns the bytes from the lowest block's start to the highest's end
// (none when every block is empty).
std::pair<int64_t, int64_t> check_blocks(MpiBackend& b, Napi::Env env, const Bytes& buf,
                                         const std::vector<int>& counts, const std::vector<int>& displs,
                                         const std::vector<int>* types, int type, bool byte_displs,
                                         const char* call, const char* what) {
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (size_t r = 0; r < counts.size(); r++) {
    int t = types ? (*types)[r] : type;
    int64_t lo, hi;
    span_of(b, env, t, counts[r], lo, hi, call);
    int64_t unit = 1;
    if (!byte_displs) {
      if (t >= 0 && t < int(kernels::TypeId::COUNT)) unit = int64_t(kernels::type_size(kernels::TypeId(t)));
      else if (auto it = b.layouts.find(t); it != b.layouts.end()) unit = it->second->extent();
      else if (auto o = b.opaque.find(t); o != b.opaque.end()) unit = int64_t(o->second);
    }
    const int64_t at = int64_t(displs[r]) * unit;
    need_span(env, buf, lo, hi, at, call, what);
    if (hi > lo) {
      first = std::min(first, at + lo);
      last = std::max(last, at + hi);
    }
  }
  return first < last ? std::pair{first, last} : std::pair<int64_t, int64_t>{0, 0};
}

// mpiUserOpFailure(op): after a blocking collective with user op `op`, the
// value its function threw on this rank (forgotten once read), or
// undefined. lib/ agrees on it with the other ranks, so that every rank
// fails the collective, as on shm.
Napi::Value UserOpFailure(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  MpiBackend& b = backend(env, "collective");
  auto it = b.user_ops.find(int_arg(info, 0));
  if (it == b.user_ops.end() || !it->second.fn->failed()) return env.Undefined();
  UserOp& u = *it->second.fn;
  Napi::Object out = Napi::Object::New(env);
  out.Set("message", u.failure());
  out.Set("error", u.error());
  u.reset();
  return out;
}

// mpiColl(send, recv): the collective the call block describes.
// Blocking: undefined; nonblocking: a request id; persistent: a template id.
Napi::Value Coll(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  MpiBackend& b = backend(env, "collective");
  const int32_t* k = b.block;
  mpi::Call c;
  c.coll = mpi::Coll(k[COLL]);
  const char* call = mpi::coll_name(c.coll);
  c.comm = k[COMM];
  c.send_count = k[SEND_COUNT];
  c.send_type = k[SEND_TYPE];
  c.recv_count = k[RECV_COUNT];
  c.recv_type = k[RECV_TYPE];
  c.op = k[OP];
  c.root = k[ROOT];
  const mpi::Mode mode = mpi::Mode(k[MODE]);
  const uint32_t n = uint32_t(k[LIST_LENGTH]);
  Bytes send = bytes_arg(info, 0, call, "send buffer");
  Bytes recv = bytes_arg(info, 1, call, "receive buffer");
  const bool send_in_place = k[FLAGS] & kSendInPlace, recv_in_place = k[FLAGS] & kRecvInPlace;

  bool sv = list_arg(env, k[LISTS], SEND_COUNTS, n, c.send_counts, call);
  list_arg(env, k[LISTS], SEND_DISPLS, n, c.send_displs, call);
  bool sw = list_arg(env, k[LISTS], SEND_TYPES, n, c.send_types, call);
  bool rv = list_arg(env, k[LISTS], RECV_COUNTS, n, c.recv_counts, call);
  list_arg(env, k[LISTS], RECV_DISPLS, n, c.recv_displs, call);
  bool rw = list_arg(env, k[LISTS], RECV_TYPES, n, c.recv_types, call);

  // The cheap second line behind lib/'s checks: nothing outside a buffer.
  // What the message spans of each buffer (from the first block to the
  // last for the v and w forms) is offered huge pages.
  int64_t lo, hi;
  std::pair<const uint8_t*, size_t> spans[2] = {};
  auto offer = [&](int i, const uint8_t* data) {
    if (!data || hi <= lo) return;
    spans[i] = {data + lo, size_t(hi - lo)};
    memory::prefer_huge_pages(spans[i].first, spans[i].second);
  };
  if (sv && !c.send_displs.empty()) {
    std::tie(lo, hi) = check_blocks(b, env, send, c.send_counts, c.send_displs, sw ? &c.send_types : nullptr,
                                    c.send_type, sw, call, "send buffer");
    offer(0, send.data);
  } else if (!send_in_place) {
    span_of(b, env, c.send_type, int64_t(c.send_count) * k[SEND_BLOCKS], lo, hi, call);
    need_span(env, send, lo, hi, 0, call, "send buffer");
    offer(0, send.data);
  }
  if (rv && !c.recv_displs.empty()) {
    std::tie(lo, hi) = check_blocks(b, env, recv, c.recv_counts, c.recv_displs, rw ? &c.recv_types : nullptr,
                                    c.recv_type, rw, call, "receive buffer");
    offer(1, recv.data);
  } else if (!recv_in_place) {
    span_of(b, env, c.recv_type, int64_t(c.recv_count) * k[RECV_BLOCKS], lo, hi, call);
    need_span(env, recv, lo, hi, 0, call, "receive buffer");
    offer(1, recv.data);
  }
  // Empty views share one dummy address (napi/args.h); Open MPI takes the
  // same address on both sides for an aliasing error.
  // An absent buffer (one this rank's part does not use: bounds-checked
  // above to carry nothing) gets a dummy address too: MPICH 4.0 refuses a
  // null send buffer at the root of an intercommunicator reduce, where it
  // is not significant.
  static uint8_t empty_recv[8], absent_send[8], absent_recv[8];
  if (recv.data && recv.length == 0) recv.data = empty_recv;
  c.send = send_in_place ? mpi::in_place() : send.data ? send.data : absent_send;
  c.recv = recv_in_place ? mpi::in_place() : recv.data ? recv.data : absent_recv;

  MpiUserOp* user = nullptr;
  if (c.op >= mpi::kFirstUserOp) {
    auto it = b.user_ops.find(c.op);
    if (it == b.user_ops.end() || it->second.freed) throw_mpi(env, ErrorClass::OP, std::string(call) + ": the op has been freed");
    user = &it->second;
    user->fn->reset();
  }
  const int op = c.op;
  int id = guarded(env, [&] { return b.lib->run(std::move(c), mode); });
  if (mode == mpi::Mode::BLOCKING) return env.Undefined();
  if (mode == mpi::Mode::PERSISTENT) {
    for (const auto& span : spans) {
      if (span.second >= memory::kHugePagesFrom) b.template_spans[id].push_back(span);
    }
  }
  if (user) {
    b.request_ops[id] = {op, mode == mpi::Mode::PERSISTENT};
    if (mode == mpi::Mode::NONBLOCKING) user->uses++;
  }
  return Napi::Number::New(env, id);
}

// ---- Point-to-point (lib/p2p/mpi.ts) ----------------------------------------------

// A status array (Float64Array(4)): [source, tag, byteLength, message].
double* status_arg(const Napi::CallbackInfo& info, size_t i, const char* call) {
  Bytes s = bytes_arg(info, i, call, "status");
  if (!s.data || s.length < 4 * sizeof(double)) {
    throw_mpi(info.Env(), ErrorClass::ARG, std::string(call) + ": status must be a Float64Array(4)");
  }
  return reinterpret_cast<double*>(s.data);
}

void fill(double* s, const mpi::Matched& m) {
  s[0] = m.source;
  s[1] = m.tag;
  s[2] = double(m.bytes);
  s[3] = m.message;
}

// A message's buffer: the first `bytes` bytes of argument `i`.
Bytes message_arg(const Napi::CallbackInfo& info, size_t i, const char* call, const char* what) {
  size_t bytes = size_arg(info, i + 1, call, "byte count");
  Bytes b = need_bytes(info, i, bytes, call, what);
  b.length = bytes;
  memory::prefer_huge_pages(b.data, b.length);
  return b;
}

// Keeps a started request's buffer and status array until it completes.
int hold(MpiBackend& b, int id, Napi::Value buffer, Napi::Value status) {
  MpiBackend::Held& h = b.p2p[id];
  if (buffer.IsObject()) h.buffer = Napi::Persistent(buffer.As<Napi::Object>());
  if (status.IsObject()) h.status = Napi::Persistent(status.As<Napi::Object>());
  return id;
}

// A blocking send's or receive's numbers, in the call block
// (State::block, lib/block.ts) rather than as arguments: [0] the
// communicator's handle, [1] the byte count, [2] dest or source, [3] the
// tag; a receive's status at [4..7].
enum P2pSlot : int { kComm = 0, kBytes = 1, kPeer = 2, kTag = 3, kStatus = 4 };

// A slot that holds a handle, rank or tag (lib checked them); INT_MIN,
// which the library refuses as any of them, for a number out of range.
int int_slot(const double* b, P2pSlot s) {
  const double d = b[s];
  return d >= INT_MIN && d <= INT_MAX ? int(d) : INT_MIN;
}

// The view (argument 0) and the block's byte count of it.
Bytes block_message(const Napi::CallbackInfo& info, const double* b, const char* call, const char* what) {
  const size_t n = size_value(info.Env(), b[kBytes], call, "byte count");
  Bytes m = need_bytes(info, 0, n, call, what);
  m.length = n;
  memory::prefer_huge_pages(m.data, m.length);
  return m;
}

// mpiSend(view)
void Send(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  State& st = State::of(env);
  MpiBackend& b = backend(env, st, "send");
  const double* k = st.call_block(env, "send");
  Bytes m = block_message(info, k, "send", "send buffer");
  guarded(env, [&] { b.lib->send(int_slot(k, kComm), m.data, m.length, int_slot(k, kPeer), int_slot(k, kTag)); });
}

// mpiIsend(comm, view, bytes, dest, tag): a request id
Napi::Value Isend(const Napi::CallbackInfo& info) {
  MpiBackend& b = backend(info.Env(), "isend");
  Bytes m = message_arg(info, 1, "isend", "send buffer");
  int id = guarded(info.Env(), [&] {
    return b.lib->isend(int_arg(info, 0), m.data, m.length, int_arg(info, 3), int_arg(info, 4));
  });
  return Napi::Number::New(info.Env(), hold(b, id, info[1], info.Env().Undefined()));
}

// mpiRecv(view): the status in the call block, "no message" unless one
// matched; a truncated message fills it before the MPIError.
void Recv(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  State& state = State::of(env);
  MpiBackend& b = backend(env, state, "recv");
  double* k = state.call_block(env, "recv");
  Bytes m = block_message(info, k, "recv", "receive buffer");
  const int comm = int_slot(k, kComm), source = int_slot(k, kPeer), tag = int_slot(k, kTag);
  double* st = k + kStatus;
  mpi::Matched out;
  fill(st, mpi::Matched{-1, -1, 0, 0});
  try {
    b.lib->recv(comm, m.data, m.length, source, tag, out);
  } catch (const CoreError& e) {
    if (e.error_class() == ErrorClass::TRUNCATE) fill(st, out);
    rethrow(env, e);
  }
  fill(st, out);
}

// mpiIrecv(comm, view, bytes, source, tag, status): a request id
Napi::Value Irecv(const Napi::CallbackInfo& info) {
  MpiBackend& b = backend(info.Env(), "irecv");
  Bytes m = message_arg(info, 1, "irecv", "receive buffer");
  status_arg(info, 5, "irecv");
  int id = guarded(info.Env(), [&] {
    return b.lib->irecv(int_arg(info, 0), m.data, m.length, int_arg(info, 3), int_arg(info, 4));
  });
  return Napi::Number::New(info.Env(), hold(b, id, info[1], info[5]));
}

// mpiProbe(comm, source, tag, status)
void Probe(const Napi::CallbackInfo& info) {
  MpiBackend& b = backend(info.Env(), "probe");
  double* st = status_arg(info, 3, "probe");
  mpi::Matched out;
  guarded(info.Env(), [&] { b.lib->probe(int_arg(info, 0), int_arg(info, 1), int_arg(info, 2), out); });
  fill(st, out);
}

// mpiIprobe(comm, source, tag, status): whether a message matched
Napi::Value Iprobe(const Napi::CallbackInfo& info) {
  MpiBackend& b = backend(info.Env(), "iprobe");
  double* st = status_arg(info, 3, "iprobe");
  mpi::Matched out;
  bool found = guarded(info.Env(), [&] { return b.lib->iprobe(int_arg(info, 0), int_arg(info, 1), int_arg(info, 2), out); });
  if (found) fill(st, out);
  return Napi::Boolean::New(info.Env(), found);
}

// mpiMprobe(comm, source, tag, status): status[3] is the message's handle
void Mprobe(const Napi::CallbackInfo& info) {
  MpiBackend& b = backend(info.Env(), "mprobe");
  double* st = status_arg(info, 3, "mprobe");
  mpi::Matched out;
  guarded(info.Env(), [&] { b.lib->mprobe(int_arg(info, 0), int_arg(info, 1), int_arg(info, 2), out); });
  fill(st, out);
}

// mpiImprobe(comm, source, tag, status): a request id
Napi::Value Improbe(const Napi::CallbackInfo& info) {
  MpiBackend& b = backend(info.Env(), "improbe");
  status_arg(info, 3, "improbe");
  int id = guarded(info.Env(), [&] { return b.lib->improbe(int_arg(info, 0), int_arg(info, 1), int_arg(info, 2)); });
  return Napi::Number::New(info.Env(), hold(b, id, info.Env().Undefined(), info[3]));
}

// mpiMrecv(message, view, bytes, status)
void Mrecv(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  MpiBackend& b = backend(env, "mrecv");
  Bytes m = message_arg(info, 1, "mrecv", "receive buffer");
  double* st = status_arg(info, 3, "mrecv");
  mpi::Matched out;
  try {
    b.lib->mrecv(int_arg(info, 0), m.data, m.length, out);
  } catch (const CoreError& e) {
    if (e.error_class() == ErrorClass::TRUNCATE) fill(st, out);
    rethrow(env, e);
  }
  fill(st, out);
}

Napi::Value TagUb(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), backend(info.Env(), "tagUb").lib->tag_ub());
}

// ---- Requests -------------------------------------------------------------------

// The end of one round of request `c.id`: null or its MPIError.
Napi::Value settle(MpiBackend& b, Napi::Env env, const mpi::Completion& c) {
  if (auto h = b.p2p.find(c.id); h != b.p2p.end()) {
    if (c.has_match && !h->second.status.IsEmpty()) {
      // Looked up again: a small array's memory is V8's to move until
      // first unwrapped, which the call that started the request did.
      void* data = nullptr;
      size_t length = 0;
      napi_get_buffer_info(env, h->second.status.Value(), &data, &length);
      if (data && length >= 4 * sizeof(double)) fill(static_cast<double*>(data), c.matched);
    }
    b.p2p.erase(h);
  }
  Napi::Value err = env.Null();
  auto it = b.request_ops.find(c.id);
  if (it != b.request_ops.end()) {
    int op = it->second.op;
    auto u = b.user_ops.find(op);
    if (!it->second.persistent) b.request_ops.erase(it);
    if (u != b.user_ops.end()) {
      u->second.uses--;
      if (c.error_class == 0 && u->second.fn->failed()) {
        std::string msg = std::string("the user-defined op threw on this rank");
        if (!u->second.fn->failure().empty()) msg += ": " + u->second.fn->failure();
        err = mpi_error(env, ErrorClass::OTHER, msg, u->second.fn->error()).Value();
        u->second.fn->reset();
      }
      release_op(b, op);
    }
  }
  if (c.error_class != 0) err = mpi_error(env, ErrorClass(c.error_class), c.message).Value();
  return err;
}

// A persistent call's large buffers, offered huge pages at each start as a
// new call's are.
void offer_again(MpiBackend& b, int id) {
  auto it = b.template_spans.find(id);
  if (it == b.template_spans.end()) return;
  for (const auto& [data, bytes] : it->second) memory::prefer_huge_pages(data, bytes);
}

// mpiStart(template): starts a round of a persistent request (its id stays the template's)
void Start(const Napi::CallbackInfo& info) {
  MpiBackend& b = backend(info.Env(), "PersistentRequest.start");
  int id = int_arg(info, 0);
  auto it = b.request_ops.find(id);
  if (it != b.request_ops.end()) {
    auto u = b.user_ops.find(it->second.op);
    if (u != b.user_ops.end()) {
      u->second.fn->reset();
      u->second.uses++;
    }
  }
  offer_again(b, id);
  guarded(info.Env(), [&] { b.lib->start(id); });
}

// mpiRunTemplate(): the call of the template whose id is in the call
// block's kTemplate, once, blocking (lib/replay.ts); undefined, or false
// when the template is gone. Replays carry predefined ops only. A plain
// N-API callback, as the shm backend's runTemplate (napi/progress.cc).
napi_value RunTemplate(napi_env raw, napi_callback_info) {
  return raw_callback(raw, [](Napi::Env env) -> napi_value {
    State& st = State::of(env);
    MpiBackend& b = backend(env, st, "collective");
    const int id = int(st.call_block(env, "collective")[kTemplate]);
    if (!guarded(env, [&] { return b.lib->run_template(id); })) return Napi::Boolean::New(env, false);
    return nullptr;
  });
}

void FreeTemplate(const Napi::CallbackInfo& info) {
  State& st = State::of(info.Env());
  if (!st.mpi) return;
  int id = int_arg(info, 0);
  guarded(info.Env(), [&] { st.mpi->lib->free_template(id); });
  st.mpi->template_spans.erase(id);
  auto it = st.mpi->request_ops.find(id);
  if (it != st.mpi->request_ops.end()) {
    int op = it->second.op;
    st.mpi->request_ops.erase(it);
    release_op(*st.mpi, op);
  }
}

// mpiTest(id): undefined while active, else null or the MPIError
Napi::Value Test(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  MpiBackend& b = backend(env, "Request.test");
  int id = int_arg(info, 0);
  if (auto f = b.found.find(id); f != b.found.end()) {
    mpi::Completion c = std::move(f->second);
    b.found.erase(f);
    return settle(b, env, c);
  }
  mpi::Completion c;
  if (!guarded(env, [&] { return b.lib->test(id, c); })) return env.Undefined();
  return settle(b, env, c);
}

// mpiWait(id): null or the MPIError
Napi::Value Wait(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  MpiBackend& b = backend(env, "Request.wait");
  int id = int_arg(info, 0);
  if (auto f = b.found.find(id); f != b.found.end()) {
    mpi::Completion c = std::move(f->second);
    b.found.erase(f);
    return settle(b, env, c);
  }
  mpi::Completion c = guarded(env, [&] { return b.lib->wait(id); });
  return settle(b, env, c);
}

// mpiWaitAny(ids): the index of one that completed; wait() on it reports how.
Napi::Value WaitAny(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  MpiBackend& b = backend(env, "Request.waitAny");
  Napi::Array list = info[0].As<Napi::Array>();
  std::vector<int> ids(list.Length());
  for (uint32_t i = 0; i < list.Length(); i++) {
    ids[i] = list.Get(i).As<Napi::Number>().Int32Value();
    if (b.found.count(ids[i])) return Napi::Number::New(env, i);
  }
  mpi::Completion c;
  size_t index = guarded(env, [&] { return b.lib->wait_any(ids, c); });
  b.found[c.id] = std::move(c);
  return Napi::Number::New(env, double(index));
}

// mpiPoll(): the requests that completed since, as [id, error|null, ...].
Napi::Value Poll(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  MpiBackend& b = backend(env, "progress");
  b.polled.clear();
  guarded(env, [&] { b.lib->poll(b.polled); });
  Napi::Array out = Napi::Array::New(env, 2 * b.polled.size());
  for (uint32_t i = 0; i < b.polled.size(); i++) {
    out.Set(2 * i, b.polled[i].id);
    out.Set(2 * i + 1, settle(b, env, b.polled[i]));
  }
  return out;
}

Napi::Value Active(const Napi::CallbackInfo& info) {
  State& st = State::of(info.Env());
  return Napi::Number::New(info.Env(), st.mpi && st.mpi->lib ? double(st.mpi->lib->active()) : 0);
}

}  // namespace

void register_mpi(Napi::Env env, Napi::Object exports) {
  exports.Set("mpiOpen", Napi::Function::New(env, Open, "mpiOpen"));
  exports.Set("mpiLibraryVersion", Napi::Function::New(env, LibraryVersion, "mpiLibraryVersion"));
  exports.Set("mpiProcessorName", Napi::Function::New(env, ProcessorName, "mpiProcessorName"));
  exports.Set("mpiInit", Napi::Function::New(env, Init, "mpiInit"));
  exports.Set("mpiThreadLevel", Napi::Function::New(env, QueryThread, "mpiThreadLevel"));
  exports.Set("mpiFinalize", Napi::Function::New(env, Finalize, "mpiFinalize"));
  exports.Set("mpiAbort", Napi::Function::New(env, Abort, "mpiAbort"));
  exports.Set("mpiCommInfo", Napi::Function::New(env, CommInfo, "mpiCommInfo"));
  exports.Set("mpiCommDup", Napi::Function::New(env, CommDup, "mpiCommDup"));
  exports.Set("mpiCommSplit", Napi::Function::New(env, CommSplit, "mpiCommSplit"));
  exports.Set("mpiCommSplitShared", Napi::Function::New(env, CommSplitShared, "mpiCommSplitShared"));
  exports.Set("mpiIntercommCreate", Napi::Function::New(env, IntercommCreate, "mpiIntercommCreate"));
  exports.Set("mpiIntercommMerge", Napi::Function::New(env, IntercommMerge, "mpiIntercommMerge"));
  exports.Set("mpiCommFree", Napi::Function::New(env, CommFree, "mpiCommFree"));
  exports.Set("mpiWorldRanks", Napi::Function::New(env, WorldRanks, "mpiWorldRanks"));
  exports.Set("mpiTypeCreate", Napi::Function::New(env, TypeCreate, "mpiTypeCreate"));
  exports.Set("mpiOpaqueType", Napi::Function::New(env, OpaqueType, "mpiOpaqueType"));
  exports.Set("mpiTypeFree", Napi::Function::New(env, TypeFree, "mpiTypeFree"));
  exports.Set("mpiOpCreate", Napi::Function::New(env, OpCreate, "mpiOpCreate"));
  exports.Set("mpiOpFree", Napi::Function::New(env, OpFree, "mpiOpFree"));
  exports.Set("mpiSetCallBlock", Napi::Function::New(env, SetCallBlock, "mpiSetCallBlock"));
  exports.Set("mpiColl", Napi::Function::New(env, Coll, "mpiColl"));
  exports.Set("mpiUserOpFailure", Napi::Function::New(env, UserOpFailure, "mpiUserOpFailure"));
  exports.Set("mpiStart", Napi::Function::New(env, Start, "mpiStart"));
  export_raw(env, exports, "mpiRunTemplate", RunTemplate);
  exports.Set("mpiFreeTemplate", Napi::Function::New(env, FreeTemplate, "mpiFreeTemplate"));
  exports.Set("mpiSend", Napi::Function::New(env, Send, "mpiSend"));
  exports.Set("mpiIsend", Napi::Function::New(env, Isend, "mpiIsend"));
  exports.Set("mpiRecv", Napi::Function::New(env, Recv, "mpiRecv"));
  exports.Set("mpiIrecv", Napi::Function::New(env, Irecv, "mpiIrecv"));
  exports.Set("mpiProbe", Napi::Function::New(env, Probe, "mpiProbe"));
  exports.Set("mpiIprobe", Napi::Function::New(env, Iprobe, "mpiIprobe"));
  exports.Set("mpiMprobe", Napi::Function::New(env, Mprobe, "mpiMprobe"));
  exports.Set("mpiImprobe", Napi::Function::New(env, Improbe, "mpiImprobe"));
  exports.Set("mpiMrecv", Napi::Function::New(env, Mrecv, "mpiMrecv"));
  exports.Set("mpiTagUb", Napi::Function::New(env, TagUb, "mpiTagUb"));
  exports.Set("mpiTest", Napi::Function::New(env, Test, "mpiTest"));
  exports.Set("mpiWait", Napi::Function::New(env, Wait, "mpiWait"));
  exports.Set("mpiWaitAny", Napi::Function::New(env, WaitAny, "mpiWaitAny"));
  exports.Set("mpiPoll", Napi::Function::New(env, Poll, "mpiPoll"));
  exports.Set("mpiActive", Napi::Function::New(env, Active, "mpiActive"));
}

}  // namespace nodempi::napi
