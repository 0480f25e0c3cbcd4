// reduceLocal and reduceLocals: the collective kernels applied to local
// buffers, with no extra copy.
#include <string>

#include "core/kernels/kernels.h"
#include "napi/args.h"
#include "napi/state.h"
#include "napi/user_op.h"

namespace nodempi::napi {
namespace {

kernels::ReduceFn kernel_arg(const Napi::CallbackInfo& info, size_t type_i, size_t op_i, const char* call) {
  uint32_t type = u32_arg(info, type_i), op = u32_arg(info, op_i);
  kernels::ReduceFn fn = nullptr;
  if (type < uint32_t(kernels::TypeId::COUNT) && op < uint32_t(kernels::OpId::COUNT)) {
    fn = kernels::lookup(kernels::OpId(op), kernels::TypeId(type));
  }
  if (!fn) throw_mpi(info.Env(), ErrorClass::OP, std::string(call) + ": the op is not defined for the datatype");
  return fn;
}

// reduceLocals(a, b, out, count, type, op, user?): out = a op b. `a` and `b`
// may be the same view as `out` (IN_PLACE) or as each other. op -1 is a
// user-defined op described by `user`.
void ReduceLocals(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  size_t count = size_arg(info, 3, "reduceLocals", "count");
  if (info[5].As<Napi::Number>().Int32Value() < 0) {
    UserOp user(env, info[6].As<Napi::Object>());  // main thread: called directly
    size_t bytes = count * user.combiner().item;
    Bytes a = need_bytes(info, 0, bytes, "reduceLocals", "inbuf");
    Bytes b = need_bytes(info, 1, bytes, "reduceLocals", "argbuf");
    Bytes out = need_bytes(info, 2, bytes, "reduceLocals", "inoutbuf");
    user.combiner().apply(a.data, b.data, out.data, count);
    if (user.failed()) throw Napi::Error(env, user.error());
    return;
  }
  kernels::ReduceFn fn = kernel_arg(info, 4, 5, "reduceLocals");
  size_t bytes = count * kernels::type_size(kernels::TypeId(u32_arg(info, 4)));
  Bytes a = need_bytes(info, 0, bytes, "reduceLocals", "inbuf");
  Bytes b = need_bytes(info, 1, bytes, "reduceLocals", "argbuf");
  Bytes out = need_bytes(info, 2, bytes, "reduceLocals", "inoutbuf");
  if (count) fn(a.data, b.data, out.data, count);
}

}  // namespace

void register_local(Napi::Env env, Napi::Object exports) {
  exports.Set("reduceLocals", Napi::Function::New(env, ReduceLocals, "reduceLocals"));
}

}  // namespace nodempi::napi
