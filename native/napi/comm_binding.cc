// Collective entry points: unwrap, re-check sizes cheaply, run the core
// algorithm on the calling thread, map core errors to MPIError.
#include <optional>
#include <string>

#include "core/coll/coll.h"
#include "napi/args.h"
#include "napi/comm_args.h"
#include "napi/state.h"
#include "napi/user_op.h"

namespace nodempi::napi {
namespace {

// barrier(h)
void Barrier(const Napi::CallbackInfo& info) {
  coll::Context& c = context_arg(info, "barrier");
  run(info.Env(), [&] { coll::barrier(c); });
}

// bcast(h, buf, bytes, root)
void Bcast(const Napi::CallbackInfo& info) {
  coll::Context& c = context_arg(info, "bcast");
  size_t bytes = size_arg(info, 2, "bcast", "byte count");
  Bytes buf = need_bytes(info, 1, bytes, "bcast", "buffer");
  uint32_t root = root_arg(info, 3, c, "bcast");
  run(info.Env(), [&] { coll::bcast(c, buf.data, bytes, root); });
}

// gather(h, send|null, recv|null, bytes, root)
void Gather(const Napi::CallbackInfo& info) {
  coll::Context& c = context_arg(info, "gather");
  size_t bytes = size_arg(info, 3, "gather", "byte count");
  uint32_t root = root_arg(info, 4, c, "gather");
  bool at_root = c.rank() == root;
  Bytes send = at_root ? bytes_arg(info, 1, "gather", "send buffer") : need_bytes(info, 1, bytes, "gather", "send buffer");
  if (send.data && send.length < bytes) need_bytes(info, 1, bytes, "gather", "send buffer");
  Bytes recv = at_root ? need_bytes(info, 2, bytes * c.size(), "gather", "receive buffer") : Bytes{nullptr, 0};
  run(info.Env(), [&] { coll::gather(c, send.data, recv.data, bytes, root); });
}

// scatter(h, send|null, recv|null, bytes, root)
void Scatter(const Napi::CallbackInfo& info) {
  coll::Context& c = context_arg(info, "scatter");
  size_t bytes = size_arg(info, 3, "scatter", "byte count");
  uint32_t root = root_arg(info, 4, c, "scatter");
  bool at_root = c.rank() == root;
  Bytes send = at_root ? need_bytes(info, 1, bytes * c.size(), "scatter", "send buffer") : Bytes{nullptr, 0};
  Bytes recv = at_root ? bytes_arg(info, 2, "scatter", "receive buffer") : need_bytes(info, 2, bytes, "scatter", "receive buffer");
  if (recv.data && recv.length < bytes) need_bytes(info, 2, bytes, "scatter", "receive buffer");
  run(info.Env(), [&] { coll::scatter(c, send.data, recv.data, bytes, root); });
}

// allgather(h, send|null, recv, bytes)
void Allgather(const Napi::CallbackInfo& info) {
  coll::Context& c = context_arg(info, "allgather");
  size_t bytes = size_arg(info, 3, "allgather", "byte count");
  Bytes send = bytes_arg(info, 1, "allgather", "send buffer");
  if (send.data && send.length < bytes) need_bytes(info, 1, bytes, "allgather", "send buffer");
  Bytes recv = need_bytes(info, 2, bytes * c.size(), "allgather", "receive buffer");
  run(info.Env(), [&] { coll::allgather(c, send.data, recv.data, bytes); });
}

// alltoall(h, send|null, recv, bytes)
void Alltoall(const Napi::CallbackInfo& info) {
  coll::Context& c = context_arg(info, "alltoall");
  size_t bytes = size_arg(info, 3, "alltoall", "byte count");
  Bytes send = bytes_arg(info, 1, "alltoall", "send buffer");
  if (send.data) need_bytes(info, 1, bytes * c.size(), "alltoall", "send buffer");
  Bytes recv = need_bytes(info, 2, bytes * c.size(), "alltoall", "receive buffer");
  run(info.Env(), [&] { coll::alltoall(c, send.data, recv.data, bytes); });
}

// reduce(h, send|null, recv|null, count, type, op, root, user?)
void Reduce(const Napi::CallbackInfo& info) {
  coll::Context& c = context_arg(info, "reduce");
  size_t count = size_arg(info, 3, "reduce", "count");
  std::optional<UserOp> user;
  coll::Combiner op = combiner_arg(info, 4, 5, 7, user, "reduce");
  uint32_t root = root_arg(info, 6, c, "reduce");
  bool at_root = c.rank() == root;
  size_t bytes = count * op.item;
  Bytes send = bytes_arg(info, 1, "reduce", "send buffer");
  if (send.data || !at_root) need_bytes(info, 1, bytes, "reduce", "send buffer");
  Bytes recv = at_root ? need_bytes(info, 2, bytes, "reduce", "receive buffer") : Bytes{nullptr, 0};
  run(info.Env(), [&] {
    coll::reduce(c, send.data, recv.data, count, op, root);
    if (user) user->settle(c, "reduce");
  });
}

// allreduce(h, send|null, recv, count, type, op, user?)
void Allreduce(const Napi::CallbackInfo& info) {
  coll::Context& c = context_arg(info, "allreduce");
  size_t count = size_arg(info, 3, "allreduce", "count");
  std::optional<UserOp> user;
  coll::Combiner op = combiner_arg(info, 4, 5, 6, user, "allreduce");
  size_t bytes = count * op.item;
  Bytes send = bytes_arg(info, 1, "allreduce", "send buffer");
  if (send.data) need_bytes(info, 1, bytes, "allreduce", "send buffer");
  Bytes recv = need_bytes(info, 2, bytes, "allreduce", "receive buffer");
  run(info.Env(), [&] {
    coll::allreduce(c, send.data, recv.data, count, op);
    if (user) user->settle(c, "allreduce");
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
