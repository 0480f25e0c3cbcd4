// Entry points of the v-variants, reduce-scatter and the scans. Counts and
// displacements arrive in bytes (lib/ converts elements), as numbered
// argument lists (sizes_arg); every block is re-checked against its buffer
// before the core runs.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/coll/coll.h"
#include "napi/args.h"
#include "napi/comm_args.h"
#include "napi/state.h"
#include "napi/user_op.h"

namespace nodempi::napi {
namespace {

// Per-rank sizes, held inline up to kInline ranks: a small v-collective
// then allocates nothing for them, neither here nor in the job's copy.
class Sizes {
 public:
  Sizes() = default;
  explicit Sizes(size_t n) : n_(n) {
    if (n > kInline) heap_.resize(n);
  }
  size_t* data() { return n_ > kInline ? heap_.data() : inline_; }
  const size_t* data() const { return n_ > kInline ? heap_.data() : inline_; }
  size_t size() const { return n_; }
  size_t& operator[](size_t r) { return data()[r]; }
  size_t operator[](size_t r) const { return data()[r]; }
  const size_t* begin() const { return data(); }
  const size_t* end() const { return data() + n_; }

 private:
  static constexpr size_t kInline = 8;
  size_t n_ = 0;
  size_t inline_[kInline] = {};
  std::vector<size_t> heap_;
};

// n non-negative integers stored as doubles: argument list number `i` of
// State::arg_lists (lib/args.ts), or a Float64Array (or a byte view of
// one) of the caller's; as size_t.
Sizes sizes_arg(const Napi::CallbackInfo& info, size_t i, uint32_t n, const char* call, const char* what) {
  const uint8_t* src = nullptr;
  if (info[i].IsNumber()) {
    const ArgLists& lists = State::of(info.Env()).arg_lists;
    uint32_t k = u32_arg(info, i);
    if (k < kArgLists && n <= lists.width) src = lists.data + k * lists.width * sizeof(double);
  } else {
    Bytes b = bytes_arg(info, i, call, what);
    if (b.data && b.length >= n * sizeof(double)) src = b.data;
  }
  if (!src) throw_mpi(info.Env(), ErrorClass::ARG, std::string(call) + ": " + what + " must list one value per rank");
  Sizes out(n);
  for (uint32_t r = 0; r < n; ++r) {
    double d;
    std::memcpy(&d, src + r * sizeof(double), sizeof d);
    if (!(d >= 0) || d != double(size_t(d))) {
      throw_mpi(info.Env(), ErrorClass::COUNT, std::string(call) + ": " + what + " must be non-negative integers");
    }
    out[r] = size_t(d);
  }
  return out;
}

// setArgLists(buffer, width): the lists sizes_arg reads by number.
void SetArgLists(const Napi::CallbackInfo& info) {
  ArgLists& lists = State::of(info.Env()).arg_lists;
  Napi::ArrayBuffer buf = info[0].As<Napi::ArrayBuffer>();
  size_t width = size_arg(info, 1, "setArgLists", "width");
  if (buf.ByteLength() < kArgLists * width * sizeof(double)) {
    throw_mpi(info.Env(), ErrorClass::ARG, "setArgLists: the buffer is smaller than its lists");
  }
  lists.hold = Napi::Persistent(buf);
  lists.data = static_cast<const uint8_t*>(buf.Data());
  lists.width = width;
}

// Every block [displ, displ + bytes) must lie inside the buffer.
void check_blocks(const Napi::CallbackInfo& info, const Bytes& buf, const Sizes& bytes, const Sizes& displs,
                  const char* call, const char* what) {
  for (size_t r = 0; r < bytes.size(); ++r) {
    if (bytes[r] == 0) continue;
    if (!buf.data || displs[r] > buf.length || bytes[r] > buf.length - displs[r]) {
      throw_mpi(info.Env(), ErrorClass::BUFFER, std::string(call) + ": block " + std::to_string(r) + " of the " + what +
                                                   " lies outside its " + std::to_string(buf.length) + " bytes");
    }
  }
}

// A root, or -1 (kNoRoot) from an intercommunicator member that takes no part.
uint32_t any_root_arg(const Napi::CallbackInfo& info, size_t i, const coll::Context& c, const char* call) {
  if (info[i].As<Napi::Number>().Int32Value() == -1) return coll::kNoRoot;
  return root_arg(info, i, c, call);
}

// gatherv(h, send|null, sendBytes, recv|null, recvBytes|null, recvDispls|null, root, mode)
Napi::Value Gatherv(const Napi::CallbackInfo& info) {
  coll::Context& c = context_arg(info, "gatherv");
  size_t send_bytes = size_arg(info, 2, "gatherv", "send byte count");
  uint32_t root = any_root_arg(info, 6, c, "gatherv");
  Bytes send = bytes_arg(info, 1, "gatherv", "send buffer");
  if (send.data || c.rank() != root) need(info, send, send_bytes, "gatherv", "send buffer");
  Sizes rb, rd;
  Bytes recv{nullptr, 0};
  if (c.rank() == root) {
    recv = bytes_arg(info, 3, "gatherv", "receive buffer");
    rb = sizes_arg(info, 4, c.size(), "gatherv", "receive counts");
    rd = sizes_arg(info, 5, c.size(), "gatherv", "receive displacements");
    check_blocks(info, recv, rb, rd, "gatherv", "receive buffer");
  }
  coll::Context* cp = &c;
  return dispatch(info, comm_handle(info), nullptr, [=] {
    coll::gatherv(*cp, send.data, send_bytes, recv.data, rb.data(), rd.data(), root);
  });
}

// scatterv(h, send|null, sendBytes|null, sendDispls|null, recv|null, recvBytes, root, mode)
Napi::Value Scatterv(const Napi::CallbackInfo& info) {
  coll::Context& c = context_arg(info, "scatterv");
  size_t recv_bytes = size_arg(info, 5, "scatterv", "receive byte count");
  uint32_t root = any_root_arg(info, 6, c, "scatterv");
  Bytes recv = bytes_arg(info, 4, "scatterv", "receive buffer");
  if (recv.data || c.rank() != root) need(info, recv, recv_bytes, "scatterv", "receive buffer");
  Sizes sb, sd;
  Bytes send{nullptr, 0};
  if (c.rank() == root) {
    send = bytes_arg(info, 1, "scatterv", "send buffer");
    sb = sizes_arg(info, 2, c.size(), "scatterv", "send counts");
    sd = sizes_arg(info, 3, c.size(), "scatterv", "send displacements");
    check_blocks(info, send, sb, sd, "scatterv", "send buffer");
  }
  coll::Context* cp = &c;
  return dispatch(info, comm_handle(info), nullptr, [=] {
    coll::scatterv(*cp, send.data, sb.data(), sd.data(), recv.data, recv_bytes, root);
  });
}

// allgatherv(h, send|null, sendBytes, recv, recvBytes, recvDispls, mode)
Napi::Value Allgatherv(const Napi::CallbackInfo& info) {
  coll::Context& c = context_arg(info, "allgatherv");
  size_t send_bytes = size_arg(info, 2, "allgatherv", "send byte count");
  Bytes send = bytes_arg(info, 1, "allgatherv", "send buffer");
  if (send.data) need(info, send, send_bytes, "allgatherv", "send buffer");
  Bytes recv = bytes_arg(info, 3, "allgatherv", "receive buffer");
  Sizes rb = sizes_arg(info, 4, c.size(), "allgatherv", "receive counts");
  Sizes rd = sizes_arg(info, 5, c.size(), "allgatherv", "receive displacements");
  check_blocks(info, recv, rb, rd, "allgatherv", "receive buffer");
  coll::Context* cp = &c;
  return dispatch(info, comm_handle(info), nullptr, [=] {
    coll::allgatherv(*cp, send.data, send_bytes, recv.data, rb.data(), rd.data());
  });
}

// alltoallv(h, send|null, sendBytes|null, sendDispls|null, recv, recvBytes, recvDispls, mode)
Napi::Value Alltoallv(const Napi::CallbackInfo& info) {
  coll::Context& c = context_arg(info, "alltoallv");
  Bytes send = bytes_arg(info, 1, "alltoallv", "send buffer");
  Sizes sb, sd;
  if (send.data) {
    sb = sizes_arg(info, 2, c.size(), "alltoallv", "send counts");
    sd = sizes_arg(info, 3, c.size(), "alltoallv", "send displacements");
    check_blocks(info, send, sb, sd, "alltoallv", "send buffer");
  }
  Bytes recv = bytes_arg(info, 4, "alltoallv", "receive buffer");
  Sizes rb = sizes_arg(info, 5, c.size(), "alltoallv", "receive counts");
  Sizes rd = sizes_arg(info, 6, c.size(), "alltoallv", "receive displacements");
  check_blocks(info, recv, rb, rd, "alltoallv", "receive buffer");
  coll::Context* cp = &c;
  return dispatch(info, comm_handle(info), nullptr, [=] {
    coll::alltoallv(*cp, send.data, sb.data(), sd.data(), recv.data, rb.data(), rd.data());
  });
}

// reduceScatter(h, send|null, recv, counts (items), type, op, user?, mode)
Napi::Value ReduceScatter(const Napi::CallbackInfo& info) {
  coll::Context& c = context_arg(info, "reduceScatter");
  std::shared_ptr<UserOp> user;
  coll::Combiner op = combiner_arg(info, 4, 5, 6, user, "reduceScatter");
  Sizes counts = sizes_arg(info, 3, c.size(), "reduceScatter", "receive counts");
  size_t total = 0;
  for (size_t k : counts) total += k;
  Bytes send = bytes_arg(info, 1, "reduceScatter", "send buffer");
  if (send.data) need(info, send, total * op.item, "reduceScatter", "send buffer");
  Bytes recv = need_bytes(info, 2, (send.data ? counts[c.rank()] : total) * op.item, "reduceScatter", "receive buffer");
  coll::Context* cp = &c;
  UserOp* u = user.get();
  return dispatch(info, comm_handle(info), user, [=] {
    coll::reduce_scatter(*cp, send.data, recv.data, counts.data(), op);
    if (u) u->settle(*cp, "reduceScatter");
  });
}

// scan(h, send|null, recv, count, type, op, exclusive, user?, mode)
Napi::Value Scan(const Napi::CallbackInfo& info) {
  bool exclusive = info[6].ToBoolean();
  const char* call = exclusive ? "exscan" : "scan";
  coll::Context& c = context_arg(info, call);
  size_t count = size_arg(info, 3, call, "count");
  std::shared_ptr<UserOp> user;
  coll::Combiner op = combiner_arg(info, 4, 5, 7, user, call);
  Bytes send = bytes_arg(info, 1, call, "send buffer");
  if (send.data) need(info, send, count * op.item, call, "send buffer");
  Bytes recv = need_bytes(info, 2, count * op.item, call, "receive buffer");
  coll::Context* cp = &c;
  UserOp* u = user.get();
  return dispatch(info, comm_handle(info), user, [=] {
    coll::scan(*cp, send.data, recv.data, count, op, exclusive);
    if (u) u->settle(*cp, call);
  });
}

// exchangeFold(h, send|null, sendBytes, sendDispls, recv|null, recvBytes, count, type, op, user?, kind, mode):
// kind 0 for a rank that takes no part (MPI_PROC_NULL), else 1 reduce,
// 2 allreduce, 3 reduce-scatter.
Napi::Value ExchangeFold(const Napi::CallbackInfo& info) {
  const char* call = "intercommunicator reduction";
  coll::Context& c = context_arg(info, call);
  static const uint32_t kinds[] = {coll::REDUCE, coll::REDUCE, coll::ALLREDUCE, coll::REDUCE_SCATTER};
  uint32_t kind_arg = u32_arg(info, 10);
  if (kind_arg >= 4) throw_mpi(info.Env(), ErrorClass::INTERN, std::string(call) + ": unknown kind");
  const uint32_t kind = kinds[kind_arg];
  const bool takes_part = kind_arg != 0;
  std::shared_ptr<UserOp> user;
  coll::Combiner op = combiner_arg(info, 7, 8, 9, user, call);
  size_t count = size_arg(info, 6, call, "count");
  Bytes send = bytes_arg(info, 1, call, "send buffer");
  Sizes sb = sizes_arg(info, 2, c.size(), call, "send counts");
  Sizes sd = sizes_arg(info, 3, c.size(), call, "send displacements");
  check_blocks(info, send, sb, sd, call, "send buffer");
  Sizes rb = sizes_arg(info, 5, c.size(), call, "receive counts");
  bool any = false;
  for (size_t b : rb) {
    if (b != 0 && b != count * op.item) throw_mpi(info.Env(), ErrorClass::INTERN, std::string(call) + ": inconsistent block size");
    any = any || b != 0;
  }
  Bytes recv = any ? need_bytes(info, 4, count * op.item, call, "receive buffer") : Bytes{nullptr, 0};
  coll::Context* cp = &c;
  UserOp* u = user.get();
  return dispatch(info, comm_handle(info), user, [=] {
    // Two failures show on some ranks only: a receive block too small for
    // what arrived (found after the exchange's last phase, where it
    // arrived) and a user op that throws (where it runs). So every rank runs
    // one verdict phase, whatever its op (a rank that takes no part,
    // MPI_PROC_NULL, may pass any op), and learns whether the reduction
    // failed anywhere; none is left waiting for a phase another skipped.
    std::unique_ptr<CoreError> truncated;
    try {
      coll::exchange_fold(*cp, send.data, sb.data(), sd.data(), recv.data, rb.data(), count, op, kind, takes_part);
    } catch (const CoreError& e) {
      if (e.error_class() != ErrorClass::TRUNCATE) throw;
      truncated = std::make_unique<CoreError>(e);
    }
    int bad = coll::verdict(*cp, !truncated && !(u && u->failed()));
    if (truncated) throw *truncated;
    if (u) u->report(bad, "reduction");
    if (bad >= 0) {
      throw CoreError(ErrorClass::OTHER, "reduction: rank " + std::to_string(bad) +
                                             " failed (its receive buffer was too small for what arrived)");
    }
  });
}

}  // namespace

void register_vcoll(Napi::Env env, Napi::Object exports) {
  exports.Set("setArgLists", Napi::Function::New(env, SetArgLists, "setArgLists"));
  exports.Set("gatherv", Napi::Function::New(env, Gatherv, "gatherv"));
  exports.Set("scatterv", Napi::Function::New(env, Scatterv, "scatterv"));
  exports.Set("allgatherv", Napi::Function::New(env, Allgatherv, "allgatherv"));
  exports.Set("alltoallv", Napi::Function::New(env, Alltoallv, "alltoallv"));
  exports.Set("reduceScatter", Napi::Function::New(env, ReduceScatter, "reduceScatter"));
  exports.Set("scan", Napi::Function::New(env, Scan, "scan"));
  exports.Set("exchangeFold", Napi::Function::New(env, ExchangeFold, "exchangeFold"));
}

}  // namespace nodempi::napi
