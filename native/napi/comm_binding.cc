// Collective entry points: unwrap, re-check sizes cheaply, run the core
// algorithm on the calling thread, map core errors to MPIError.
#include <string>

#include "core/coll/coll.h"
#include "napi/args.h"
#include "napi/comm_args.h"
#include "napi/state.h"
#include "napi/progress.h"
#include "napi/user_op.h"

namespace nodempi::napi {
namespace {

// Every binding takes a trailing mode (napi/progress.h) and returns
// undefined, or a request id when nonblocking or persistent.

// barrier(h, mode)
Napi::Value Barrier(const Napi::CallbackInfo& info) {
  coll::Context* c = &context_arg(info, "barrier");
  return dispatch(info, comm_handle(info), nullptr, [c] { coll::barrier(*c); });
}

// bcast(h, buf, bytes, root, type, count, mode): type 0 for plain bytes,
// else a datatype handle and the item count (bytes is then the stream).
Napi::Value Bcast(const Napi::CallbackInfo& info) {
  coll::Context& c = context_arg(info, "bcast");
  size_t bytes = size_arg(info, 2, "bcast", "byte count");
  coll::Layout buf = layout_arg(info, 1, 4, bytes, false, "bcast", "buffer");
  uint32_t root = root_arg(info, 3, c, "bcast");
  coll::Context* cp = &c;
  return dispatch(info, comm_handle(info), nullptr, [cp, buf, bytes, root] { coll::bcast(*cp, buf, bytes, root); });
}

// gather(h, send|null, recv|null, bytes, root, mode)
Napi::Value Gather(const Napi::CallbackInfo& info) {
  coll::Context& c = context_arg(info, "gather");
  size_t bytes = size_arg(info, 3, "gather", "byte count");
  uint32_t root = root_arg(info, 4, c, "gather");
  bool at_root = c.rank() == root;
  Bytes send = at_root ? bytes_arg(info, 1, "gather", "send buffer") : need_bytes(info, 1, bytes, "gather", "send buffer");
  if (send.data) need(info, send, bytes, "gather", "send buffer");
  Bytes recv = at_root ? need_bytes(info, 2, bytes * c.size(), "gather", "receive buffer") : Bytes{nullptr, 0};
  coll::Context* cp = &c;
  return dispatch(info, comm_handle(info), nullptr, [=] { coll::gather(*cp, send.data, recv.data, bytes, root); });
}

// scatter(h, send|null, recv|null, bytes, root, mode)
Napi::Value Scatter(const Napi::CallbackInfo& info) {
  coll::Context& c = context_arg(info, "scatter");
  size_t bytes = size_arg(info, 3, "scatter", "byte count");
  uint32_t root = root_arg(info, 4, c, "scatter");
  bool at_root = c.rank() == root;
  Bytes send = at_root ? need_bytes(info, 1, bytes * c.size(), "scatter", "send buffer") : Bytes{nullptr, 0};
  Bytes recv = at_root ? bytes_arg(info, 2, "scatter", "receive buffer") : need_bytes(info, 2, bytes, "scatter", "receive buffer");
  if (recv.data) need(info, recv, bytes, "scatter", "receive buffer");
  coll::Context* cp = &c;
  return dispatch(info, comm_handle(info), nullptr, [=] { coll::scatter(*cp, send.data, recv.data, bytes, root); });
}

// allgather(h, send|null, recv, bytes, sendType, sendCount, recvType,
// recvCount, mode): types as for bcast; bytes is one block's stream, and
// recvCount counts the items of all blocks.
Napi::Value Allgather(const Napi::CallbackInfo& info) {
  coll::Context& c = context_arg(info, "allgather");
  size_t bytes = size_arg(info, 3, "allgather", "byte count");
  coll::Layout send = layout_arg(info, 1, 4, bytes, true, "allgather", "send buffer");
  coll::Layout recv = layout_arg(info, 2, 6, bytes * c.size(), false, "allgather", "receive buffer");
  coll::Context* cp = &c;
  return dispatch(info, comm_handle(info), nullptr, [=] { coll::allgather(*cp, send, recv, bytes); });
}

// alltoall(h, send|null, recv, bytes, mode)
Napi::Value Alltoall(const Napi::CallbackInfo& info) {
  coll::Context& c = context_arg(info, "alltoall");
  size_t bytes = size_arg(info, 3, "alltoall", "byte count");
  Bytes send = bytes_arg(info, 1, "alltoall", "send buffer");
  if (send.data) need(info, send, bytes * c.size(), "alltoall", "send buffer");
  Bytes recv = need_bytes(info, 2, bytes * c.size(), "alltoall", "receive buffer");
  coll::Context* cp = &c;
  return dispatch(info, comm_handle(info), nullptr, [=] { coll::alltoall(*cp, send.data, recv.data, bytes); });
}

// reduce(h, send|null, recv|null, count, type, op, root, user?, mode)
Napi::Value Reduce(const Napi::CallbackInfo& info) {
  coll::Context& c = context_arg(info, "reduce");
  size_t count = size_arg(info, 3, "reduce", "count");
  std::shared_ptr<UserOp> user;
  coll::Combiner op = combiner_arg(info, 4, 5, 7, user, "reduce");
  uint32_t root = root_arg(info, 6, c, "reduce");
  bool at_root = c.rank() == root;
  size_t bytes = count * op.item;
  Bytes send = bytes_arg(info, 1, "reduce", "send buffer");
  if (send.data || !at_root) need(info, send, bytes, "reduce", "send buffer");
  Bytes recv = at_root ? need_bytes(info, 2, bytes, "reduce", "receive buffer") : Bytes{nullptr, 0};
  coll::Context* cp = &c;
  UserOp* u = user.get();
  return dispatch(info, comm_handle(info), user, [=] {
    coll::reduce(*cp, send.data, recv.data, count, op, root);
    if (u) u->settle(*cp, "reduce");
  });
}

// allreduce(h, send|null, recv, count, type, op, user?, mode)
Napi::Value Allreduce(const Napi::CallbackInfo& info) {
  coll::Context& c = context_arg(info, "allreduce");
  size_t count = size_arg(info, 3, "allreduce", "count");
  std::shared_ptr<UserOp> user;
  coll::Combiner op = combiner_arg(info, 4, 5, 6, user, "allreduce");
  size_t bytes = count * op.item;
  Bytes send = bytes_arg(info, 1, "allreduce", "send buffer");
  if (send.data) need(info, send, bytes, "allreduce", "send buffer");
  Bytes recv = need_bytes(info, 2, bytes, "allreduce", "receive buffer");
  coll::Context* cp = &c;
  UserOp* u = user.get();
  return dispatch(info, comm_handle(info), user, [=] {
    coll::allreduce(*cp, send.data, recv.data, count, op);
    if (u) u->settle(*cp, "allreduce");
  });
}

// commInfo(h) -> [rank, size]
Napi::Value CommInfo(const Napi::CallbackInfo& info) {
  coll::Context& c = context_arg(info, "comm");
  Napi::Array out = Napi::Array::New(info.Env(), 2);
  out.Set(uint32_t(0), c.rank());
  out.Set(uint32_t(1), c.size());
  return out;
}

}  // namespace

void register_comm(Napi::Env env, Napi::Object exports) {
  exports.Set("barrier", Napi::Function::New(env, Barrier, "barrier"));
  exports.Set("bcast", Napi::Function::New(env, Bcast, "bcast"));
  exports.Set("gather", Napi::Function::New(env, Gather, "gather"));
  exports.Set("scatter", Napi::Function::New(env, Scatter, "scatter"));
  exports.Set("allgather", Napi::Function::New(env, Allgather, "allgather"));
  exports.Set("alltoall", Napi::Function::New(env, Alltoall, "alltoall"));
  exports.Set("reduce", Napi::Function::New(env, Reduce, "reduce"));
  exports.Set("allreduce", Napi::Function::New(env, Allreduce, "allreduce"));
  exports.Set("commInfo", Napi::Function::New(env, CommInfo, "commInfo"));
}

}  // namespace nodempi::napi
