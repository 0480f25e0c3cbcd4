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

// Views whose buffers are larger than this are not recorded for reduceLast:
// the record keeps the arrays alive on the JS side (lib/local.ts).
constexpr size_t kRecordMax = size_t(1) << 20;

// A new record of the views of the last fast call, for reduceLast: slot 2
// gets its generation, or -1 when it was not recorded (lib/ then drops its
// references), slots 3 to 5 the views' byte lengths.
void remember(napi_env env, LastLocal& last, const napi_value buffers[3], void* const data[3],
              const size_t bytes[3]) {
  last.generation += 1;
  bool keep = last.slots != nullptr;
  for (int i = 0; keep && i < 3; i++) {
    if (i == 2 && buffers[2] == buffers[1]) break;  // the two-view form
    size_t whole = 0;
    keep = bytes[i] <= kRecordMax && napi_get_arraybuffer_info(env, buffers[i], nullptr, &whole) == napi_ok &&
           whole <= kRecordMax;
  }
  for (int i = 0; i < 3; i++) {
    last.data[i] = keep ? data[i] : nullptr;
    last.bytes[i] = keep ? bytes[i] : 0;
  }
  if (!last.slots) return;
  last.slots[2] = keep ? last.generation : -1;
  for (int i = 0; i < 3; i++) last.slots[3 + i] = double(last.bytes[i]);
}

// Set in a kernel code by reduceLocals' calls, for the error messages.
constexpr uint32_t kLocals = 1u << 16;

// The kernels allow an input to be exactly the output, not to overlap it at
// another offset (a later item would read an already-combined one).
void check_overlap(Napi::Env env, void* const data[3], const size_t bytes[3], uint32_t code) {
  const char* call = code & kLocals ? "reduceLocals" : "reduceLocal";
  const auto out = static_cast<const uint8_t*>(data[2]);
  for (int i = 0; i < 2; i++) {
    const auto m = static_cast<const uint8_t*>(data[i]);
    if (m == out || m >= out + bytes[2] || out >= m + bytes[i]) continue;
    throw_mpi(env, ErrorClass::BUFFER,
              std::string(call) + ": " + (i == 0 ? "inbuf" : "argbuf") + " overlaps inoutbuf at a different offset (" +
                  std::to_string(m - out) + " bytes from it); pass IN_PLACE or separate buffers");
  }
}

// reduceLocal(a, b, out, count, code): out = a op b over whole TypedArrays
// and a predefined op, the fast path of the common calls; (a, io, count,
// code) is io = a op io. Raw N-API and no wrapper objects: at 4 KiB the
// call itself costs more than the kernel, and each view unwrapped costs
// tens of nanoseconds, so the two-buffer form unwraps two.
napi_value ReduceLocal(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 5;
  napi_value argv[5];
  void* self = nullptr;
  napi_get_cb_info(env, cbinfo, &argc, argv, nullptr, &self);
  const size_t views = argc == 4 ? 2 : 3;
  void* data[3] = {};
  size_t bytes[3] = {};
  napi_value buffers[3] = {};
  double count = 0;
  uint32_t code = 0;
  bool ok = (argc == 4 || argc == 5) && napi_get_value_double(env, argv[views], &count) == napi_ok &&
            napi_get_value_uint32(env, argv[views + 1], &code) == napi_ok;
  for (size_t i = 0; ok && i < views; i++) {
    napi_typedarray_type type;
    ok = napi_get_typedarray_info(env, argv[i], &type, &bytes[i], &data[i], &buffers[i], nullptr) == napi_ok;
    bytes[i] *= element_size(type);
  }
  if (!ok) {
    napi_throw_type_error(env, nullptr, "reduceLocal: bad arguments");
    return nullptr;
  }
  if (views == 2) {
    data[2] = data[1];
    bytes[2] = bytes[1];
    buffers[2] = buffers[1];
  }
  try {
    Napi::Env e(env);
    kernels::ReduceFn fn = kernel_of(e, code & ~kLocals, "reduceLocal");
    const double need = count * double(kernels::type_size(kernels::TypeId(code & 0xff)));
    if (!(count >= 0) || need > double(bytes[0]) || need > double(bytes[1]) || need > double(bytes[2])) {
      throw_mpi(e, ErrorClass::BUFFER, "reduceLocal: the buffers hold fewer bytes than count items");
    }
    for (size_t i = 0; i < views; i++) {
      bool gone = false;
      if (bytes[i] == 0 && napi_is_detached_arraybuffer(env, buffers[i], &gone) == napi_ok && gone) {
        throw_detached(env, code & kLocals ? "reduceLocals" : "reduceLocal",
                       i == 0 ? "inbuf" : i + 1 < views ? "argbuf" : "inoutbuf");
      }
    }
    check_overlap(e, data, bytes, code);
    if (count > 0) fn(data[0], data[1], data[2], size_t(count));
    remember(env, *static_cast<LastLocal*>(self), buffers, data, bytes);
  } catch (const Napi::Error& err) {
    err.ThrowAsJavaScriptException();
  }
  return nullptr;
}

// reduceLast(): reduceLocal again on the views of the last call, with the
// count and code lib/local.ts wrote to the slots. It calls this only for the
// very same array objects (so the same memory: an array's buffer never moves
// once unwrapped, and resizable buffers grow in place) whose true byte
// lengths, read with the intrinsic getter, are what remember() recorded, so
// none was detached or shrunk since; and only while the generation is the
// one it saw. The bounds are checked here again all the same. Unwrapping
// two arrays is most of the call at 4 KiB; this skips it.
napi_value ReduceLast(napi_env env, napi_callback_info cbinfo) {
  void* self = nullptr;
  napi_get_cb_info(env, cbinfo, nullptr, nullptr, nullptr, &self);
  const LastLocal& last = *static_cast<const LastLocal*>(self);
  try {
    Napi::Env e(env);
    if (!last.slots || !last.data[2] || last.slots[2] != last.generation) {
      throw_mpi(e, ErrorClass::INTERN, "reduceLocal: no record of the last call's buffers");
    }
    const double count = last.slots[0], code = last.slots[1];
    if (!(code >= 0 && code < double(2 * kLocals))) throw_mpi(e, ErrorClass::OP, "reduceLocal: bad kernel code");
    kernels::ReduceFn fn = kernel_of(e, uint32_t(code) & ~kLocals, "reduceLocal");
    const double need = count * double(kernels::type_size(kernels::TypeId(uint32_t(code) & 0xff)));
    if (!(count >= 0) || need > double(last.bytes[0]) || need > double(last.bytes[1]) ||
        need > double(last.bytes[2])) {
      throw_mpi(e, ErrorClass::BUFFER, "reduceLocal: the buffers hold fewer bytes than count items");
    }
    if (count > 0) fn(last.data[0], last.data[1], last.data[2], size_t(count));
  } catch (const Napi::Error& err) {
    err.ThrowAsJavaScriptException();
  }
  return nullptr;
}

// localSlots(): the 6 doubles both sides share, one ArrayBuffer per
// environment: [count, code] written by lib/ before reduceLast,
// [generation, bytes of a, b, out] by remember(). Every copy of lib/ in the
// environment (a bundler or a test runner may load it more than once) gets
// the same buffer, so each sees the generation the others' calls recorded.
Napi::Value LocalSlots(const Napi::CallbackInfo& info) {
  LastLocal& last = State::of(info.Env()).last_local;
  if (!last.slots) {
    Napi::ArrayBuffer buf = Napi::ArrayBuffer::New(info.Env(), 6 * sizeof(double));
    last.hold = Napi::Persistent(buf);
    last.slots = static_cast<double*>(buf.Data());
    last.slots[2] = -1;  // nothing recorded yet
  }
  return last.hold.Value();
}

}  // namespace

void register_local(Napi::Env env, Napi::Object exports) {
  exports.Set("reduceLocals", Napi::Function::New(env, ReduceLocals, "reduceLocals"));
  napi_value fast;
  LastLocal* last = &State::of(env).last_local;
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_function(env, "reduceLocal", NAPI_AUTO_LENGTH, ReduceLocal, last, &fast));
  exports.Set("reduceLocal", Napi::Value(env, fast));
  napi_value again;
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_function(env, "reduceLast", NAPI_AUTO_LENGTH, ReduceLast, last, &again));
  exports.Set("reduceLast", Napi::Value(env, again));
  exports.Set("localSlots", Napi::Function::New(env, LocalSlots, "localSlots"));
}

}  // namespace nodempi::napi
