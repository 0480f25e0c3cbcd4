// mpi.allocMem's two steps around the ArrayBuffer lib/memory.ts makes
// (V8's own, so that V8 frees it as it frees any: an external ArrayBuffer's
// memory would be given back only at a later turn of the event loop, and a
// synchronous loop of allocations would grow without bound):
//   memSlack(bytes): how much larger than `bytes` to make it (0: too large);
//   placeMem(arrayBuffer, bytes): where in it the buffer starts.
#include "core/memory/buffers.h"
#include "napi/args.h"
#include "napi/errors.h"

namespace nodempi::napi {
namespace {

Napi::Value MemSlack(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), double(memory::placement_slack(size_arg(info, 0, "allocMem", "bytes"))));
}

Napi::Value PlaceMem(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const size_t bytes = size_arg(info, 1, "allocMem", "bytes");
  if (!info[0].IsArrayBuffer()) throw_mpi(env, ErrorClass::INTERN, "allocMem: no ArrayBuffer to place the buffer in");
  Napi::ArrayBuffer ab = info[0].As<Napi::ArrayBuffer>();
  const size_t slack = memory::placement_slack(bytes);
  if (bytes == 0 || slack == 0 || ab.ByteLength() < bytes + slack) {
    throw_mpi(env, ErrorClass::INTERN, "allocMem: the ArrayBuffer is too small to place the buffer in");
  }
  return Napi::Number::New(env, double(memory::place_buffer(ab.Data(), bytes)));
}

}  // namespace

void register_memory(Napi::Env env, Napi::Object exports) {
  exports.Set("memSlack", Napi::Function::New(env, MemSlack, "memSlack"));
  exports.Set("placeMem", Napi::Function::New(env, PlaceMem, "placeMem"));
}

}  // namespace nodempi::napi
