// reduceLocal and reduceLocals: the collective kernels applied to local
// buffers, with no extra copy.
#include <string>

#include "core/kernels/kernels.h"
#include "napi/args.h"
#include "napi/state.h"
#include "napi/user_op.h"

namespace nodempi::napi {
namespace {

kernels::ReduceFn kernel_of(Napi::Env env, uint32_t code, const char* call) {
  uint32_t type = code & 0xff, op = code >> 8;
  kernels::ReduceFn fn = nullptr;
  if (type < uint32_t(kernels::TypeId::COUNT) && op < uint32_t(kernels::OpId::COUNT)) {
    fn = kernels::lookup(kernels::OpId(op), kernels::TypeId(type));
  }
  if (!fn) throw_mpi(env, ErrorClass::OP, std::string(call) + ": the op is not defined for the datatype");
  return fn;
}

// reduceLocals(a, b, out, count, code, user?): out = a op b. code is
// type | op << 8, or -1 for a user-defined op described by `user`. `a` and
// `b` may be the same view as `out` (IN_PLACE) or as each other. Six
// arguments at most: node-addon-api copies more onto the heap at every call.
void ReduceLocals(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  size_t count = size_arg(info, 3, "reduceLocals", "count");
  int32_t code = 0;
  napi_get_value_int32(env, info[4], &code);
  if (code < 0) {
    UserOp user(env, info[5].As<Napi::Object>());  // main thread: called directly
    size_t bytes = count * user.combiner().item;
    Bytes a = need_bytes(info, 0, bytes, "reduceLocals", "inbuf");
    Bytes b = need_bytes(info, 1, bytes, "reduceLocals", "argbuf");
    Bytes out = need_bytes(info, 2, bytes, "reduceLocals", "inoutbuf");
    // The function's scratch copies both inputs before out is written, so
    // either may be out itself.
    user.combiner().apply(a.data, b.data, out.data, count);
    if (user.failed()) throw Napi::Error(env, user.error());
    return;
  }
  kernels::ReduceFn fn = kernel_of(env, uint32_t(code), "reduceLocals");
  size_t bytes = count * kernels::type_size(kernels::TypeId(code & 0xff));
  Bytes a = need_bytes(info, 0, bytes, "reduceLocals", "inbuf");
  Bytes b = need_bytes(info, 1, bytes, "reduceLocals", "argbuf");
  Bytes out = need_bytes(info, 2, bytes, "reduceLocals", "inoutbuf");
  if (count) fn(a.data, b.data, out.data, count);
}

// reduceLocal(a, b, out, count, code): out = a op b over whole TypedArrays
// and a predefined op, the fast path of the common calls; (a, io, count,
// code) is io = a op io. Raw N-API and no wrapper objects: at 4 KiB the
// call itself costs more than the kernel, and each view unwrapped costs
// tens of nanoseconds, so the two-buffer form unwraps two.
napi_value ReduceLocal(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 5;
  napi_value argv[5];
  napi_get_cb_info(env, cbinfo, &argc, argv, nullptr, nullptr);
  const size_t views = argc == 4 ? 2 : 3;
  void* data[3] = {};
  size_t bytes[3] = {};
  double count = 0;
  uint32_t code = 0;
  bool ok = (argc == 4 || argc == 5) && napi_get_value_double(env, argv[views], &count) == napi_ok &&
            napi_get_value_uint32(env, argv[views + 1], &code) == napi_ok;
  for (size_t i = 0; ok && i < views; i++) {
    napi_typedarray_type type;
    ok = napi_get_typedarray_info(env, argv[i], &type, &bytes[i], &data[i], nullptr, nullptr) == napi_ok;
    bytes[i] *= element_size(type);
  }
  if (!ok) {
    napi_throw_type_error(env, nullptr, "reduceLocal: bad arguments");
    return nullptr;
  }
  if (views == 2) {
    data[2] = data[1];
    bytes[2] = bytes[1];
  }
  try {
    Napi::Env e(env);
    kernels::ReduceFn fn = kernel_of(e, code, "reduceLocal");
    const double need = count * double(kernels::type_size(kernels::TypeId(code & 0xff)));
    if (!(count >= 0) || need > double(bytes[0]) || need > double(bytes[1]) || need > double(bytes[2])) {
      throw_mpi(e, ErrorClass::BUFFER, "reduceLocal: the buffers hold fewer bytes than count items");
    }
    if (count > 0) fn(data[0], data[1], data[2], size_t(count));
  } catch (const Napi::Error& err) {
    err.ThrowAsJavaScriptException();
  }
  return nullptr;
}

}  // namespace

void register_local(Napi::Env env, Napi::Object exports) {
  exports.Set("reduceLocals", Napi::Function::New(env, ReduceLocals, "reduceLocals"));
  napi_value fast;
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_function(env, "reduceLocal", NAPI_AUTO_LENGTH, ReduceLocal, nullptr, &fast));
  exports.Set("reduceLocal", Napi::Value(env, fast));
}

}  // namespace nodempi::napi
