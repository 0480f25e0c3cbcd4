// Arguments shared by the collective bindings: the communicator handle, the
// root, the op, and running a core call with its errors mapped to MPIError.
#pragma once
#include <napi.h>

#include <memory>
#include <string>

#include "core/coll/coll.h"
#include "core/datatype/pack.h"
#include "core/error.h"
#include "napi/args.h"
#include "napi/state.h"
#include "napi/progress.h"
#include "napi/user_op.h"

namespace nodempi::napi {

inline coll::Context& context_arg(const Napi::CallbackInfo& info, const char* call) {
  State& st = State::of(info.Env());
  uint32_t h = u32_arg(info, 0);
  if (h >= st.contexts.size() || !st.contexts[h]) {
    throw_mpi(info.Env(), ErrorClass::COMM, std::string(call) + ": the communicator is not valid (freed or finalized)");
  }
  return *st.contexts[h];
}

inline uint32_t root_arg(const Napi::CallbackInfo& info, size_t i, const coll::Context& c, const char* call) {
  uint32_t root = u32_arg(info, i);
  if (root >= c.size()) throw_mpi(info.Env(), ErrorClass::ROOT, std::string(call) + ": root out of range");
  return root;
}

// The op argument: a predefined op number, or -1 with a user-op spec in
// argument `user_i` (lib/op.ts builds it).
inline coll::Combiner combiner_arg(const Napi::CallbackInfo& info, size_t type_i, size_t op_i, size_t user_i,
                                   std::shared_ptr<UserOp>& user, const char* call) {
  if (info[op_i].As<Napi::Number>().Int32Value() < 0) {
    user = std::make_shared<UserOp>(info.Env(), info[user_i].As<Napi::Object>());
    return user->combiner();
  }
  uint32_t type = u32_arg(info, type_i), op = u32_arg(info, op_i);
  kernels::ReduceFn fn = nullptr;
  if (type < uint32_t(kernels::TypeId::COUNT) && op < uint32_t(kernels::OpId::COUNT)) {
    fn = kernels::lookup(kernels::OpId(op), kernels::TypeId(type));
  }
  if (!fn) throw_mpi(info.Env(), ErrorClass::OP, std::string(call) + ": the op is not defined for the datatype");
  coll::Combiner c{fn, kernels::type_size(kernels::TypeId(type))};
  c.op_id = int32_t(op);
  c.type_id = type + 1;
  return c;
}

// A message buffer (argument `buf_i`) as the data path takes it: plain
// bytes when the datatype handle (argument `type_i`) is 0, else `count`
// items (argument `type_i + 1`) of that committed datatype, whose packed
// stream must be `bytes` long. Either way nothing outside the buffer can be
// touched. `optional`: null/undefined is an absent buffer (IN_PLACE).
inline coll::Layout layout_arg(const Napi::CallbackInfo& info, size_t buf_i, size_t type_i, size_t bytes,
                               bool optional, const char* call, const char* what) {
  uint32_t handle = u32_arg(info, type_i);
  Bytes b = bytes_arg(info, buf_i, call, what);
  if (!b.data && optional) return coll::Layout();
  if (handle == 0) return coll::Layout(need(info, b, bytes, call, what).data);
  if (!b.data) need(info, b, bytes, call, what);
  size_t count = size_arg(info, type_i + 1, call, "item count");
  try {
    std::shared_ptr<const datatype::Typemap> type = State::of(info.Env()).types.get(handle);
    if (datatype::stream_bytes(*type, count) != bytes) {
      throw CoreError(ErrorClass::COUNT, std::string(what) + ": " + std::to_string(count) + " items make " +
                                             std::to_string(datatype::stream_bytes(*type, count)) +
                                             " bytes of stream, not " + std::to_string(bytes));
    }
    datatype::UserBuffer user{b.data, b.length, 0};
    int64_t lo, hi;
    datatype::touched(*type, user, count, lo, hi);
    return coll::Layout(std::move(type), user, count);
  } catch (const CoreError& e) {
    throw_mpi(info.Env(), e.error_class(), std::string(call) + ": " + e.what());
  }
}

// The communicator handle (argument 0) for the job.
inline uint32_t comm_handle(const Napi::CallbackInfo& info) { return u32_arg(info, 0); }

}  // namespace nodempi::napi
