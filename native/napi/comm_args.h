// Arguments shared by the collective bindings: the communicator handle, the
// root, the op, and running a core call with its errors mapped to MPIError.
#pragma once
#include <napi.h>

#include <memory>
#include <string>

#include "core/coll/coll.h"
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

// The communicator handle (argument 0) for the job.
inline uint32_t comm_handle(const Napi::CallbackInfo& info) { return u32_arg(info, 0); }

}  // namespace nodempi::napi
