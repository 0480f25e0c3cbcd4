// Datatype entry points: committing a description (lib/datatype.ts builds
// it), releasing it, and packing/unpacking with it. The registry lives per
// environment, in its State.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/datatype/pack.h"
#include "core/datatype/registry.h"
#include "core/error.h"
#include "napi/args.h"
#include "napi/state.h"

namespace nodempi::napi {
namespace {

datatype::Registry& registry(const Napi::CallbackInfo& info) { return *static_cast<datatype::Registry*>(info.Data()); }

const datatype::Typemap& type_arg(const Napi::CallbackInfo& info, size_t i, const char* call) {
  try {
    return *registry(info).get(u32_arg(info, i));
  } catch (const CoreError& e) {
    throw_mpi(info.Env(), e.error_class(), std::string(call) + ": " + e.what());
  }
}

// A signed integer argument (an origin may lie before the view's start).
int64_t int_arg(const Napi::CallbackInfo& info, size_t i, const char* call, const char* what) {
  double d = number_arg(info, i);
  if (!(d >= -9007199254740992.0 && d <= 9007199254740992.0) || d != double(int64_t(d))) {
    throw_mpi(info.Env(), ErrorClass::ARG, std::string(call) + ": " + what + " must be an integer");
  }
  return int64_t(d);
}

// typeCommit(words: Float64Array): handle
Napi::Value TypeCommit(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array) {
    throw_mpi(env, ErrorClass::TYPE, "typeCommit: the description must be a Float64Array");
  }
  Napi::Float64Array words = info[0].As<Napi::Float64Array>();
  try {
    auto type = std::make_shared<const datatype::Typemap>(words.Data(), words.ElementLength());
    return Napi::Number::New(env, registry(info).add(std::move(type)));
  } catch (const CoreError& e) {
    throw_mpi(env, e.error_class(), std::string("Datatype.commit: ") + e.what());
  }
}

// typeRelease(handle)
void TypeRelease(const Napi::CallbackInfo& info) { registry(info).release(u32_arg(info, 0)); }

// typeDescribe(handle): the description tree as text (tests, debugging).
Napi::Value TypeDescribe(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), type_arg(info, 0, "typeDescribe").describe());
}

// Whether the bytes [a, a + an) and [b, b + bn) share any byte.
bool overlap(const uint8_t* a, size_t an, const uint8_t* b, size_t bn) {
  return an && bn && a < b + bn && b < a + an;
}

// typePack(handle, count, src, srcOrigin, dst, dstOffset): bytes packed.
// Items' origins start at src byte srcOrigin; the stream goes to dst from
// byte dstOffset on.
Napi::Value TypePack(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const datatype::Typemap& type = type_arg(info, 0, "pack");
  size_t count = size_arg(info, 1, "pack", "count");
  Bytes src = bytes_arg(info, 2, "pack", "inbuf");
  int64_t origin = int_arg(info, 3, "pack", "inbuf origin");
  Bytes dst = bytes_arg(info, 4, "pack", "outbuf");
  size_t offset = size_arg(info, 5, "pack", "position");
  if (!src.data || !dst.data) throw_mpi(env, ErrorClass::BUFFER, "pack: inbuf and outbuf must be TypedArrays or DataViews");
  if (offset > dst.length) {
    throw_mpi(env, ErrorClass::TRUNCATE, "pack: position " + std::to_string(offset) + " is past the end of outbuf (" +
                                             std::to_string(dst.length) + " bytes)");
  }
  try {
    datatype::UserBuffer user{src.data, src.length, origin};
    uint8_t* out = dst.data + offset;
    size_t room = dst.length - offset;
    uint64_t bytes = datatype::stream_bytes(type, count);
    int64_t lo, hi;
    datatype::touched(type, user, count, lo, hi);
    if (bytes > room) {
      throw CoreError(ErrorClass::TRUNCATE, std::to_string(bytes) + " bytes of packed data do not fit in the " +
                                                std::to_string(room) + " bytes of outbuf after the position");
    }
    if (overlap(src.data + lo, size_t(hi - lo), out, size_t(bytes))) {
      // MPI forbids it; doing it through a copy keeps the result defined.
      std::vector<uint8_t> tmp(bytes);
      datatype::pack(type, user, count, tmp.data(), tmp.size());
      std::copy(tmp.begin(), tmp.end(), out);
    } else {
      datatype::pack(type, user, count, out, room);
    }
    return Napi::Number::New(env, double(bytes));
  } catch (const CoreError& e) {
    throw_mpi(env, e.error_class(), std::string("pack: ") + e.what());
  }
}

// typeUnpack(handle, count, src, srcOffset, dst, dstOrigin): bytes unpacked.
// The stream is read from src byte srcOffset on; items' origins start at
// dst byte dstOrigin.
Napi::Value TypeUnpack(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const datatype::Typemap& type = type_arg(info, 0, "unpack");
  size_t count = size_arg(info, 1, "unpack", "count");
  Bytes src = bytes_arg(info, 2, "unpack", "inbuf");
  size_t offset = size_arg(info, 3, "unpack", "position");
  Bytes dst = bytes_arg(info, 4, "unpack", "outbuf");
  int64_t origin = int_arg(info, 5, "unpack", "outbuf origin");
  if (!src.data || !dst.data) throw_mpi(env, ErrorClass::BUFFER, "unpack: inbuf and outbuf must be TypedArrays or DataViews");
  if (offset > src.length) {
    throw_mpi(env, ErrorClass::TRUNCATE, "unpack: position " + std::to_string(offset) + " is past the end of inbuf (" +
                                             std::to_string(src.length) + " bytes)");
  }
  try {
    datatype::UserBuffer user{dst.data, dst.length, origin};
    const uint8_t* in = src.data + offset;
    size_t avail = src.length - offset;
    uint64_t bytes = datatype::stream_bytes(type, count);
    int64_t lo, hi;
    datatype::touched(type, user, count, lo, hi);
    if (bytes > avail) {
      throw CoreError(ErrorClass::TRUNCATE, std::to_string(count) + " items need " + std::to_string(bytes) +
                                                " bytes of packed data, inbuf has " + std::to_string(avail) +
                                                " after the position");
    }
    if (overlap(dst.data + lo, size_t(hi - lo), in, size_t(bytes))) {
      std::vector<uint8_t> tmp(in, in + bytes);
      datatype::unpack(type, tmp.data(), tmp.size(), user, count);
    } else {
      datatype::unpack(type, in, avail, user, count);
    }
    return Napi::Number::New(env, double(bytes));
  } catch (const CoreError& e) {
    throw_mpi(env, e.error_class(), std::string("unpack: ") + e.what());
  }
}

}  // namespace

void register_datatype(Napi::Env env, Napi::Object exports) {
  // The collectives take datatypes too (napi/comm_args.h): the registry
  // lives in the environment's State.
  auto* reg = &State::of(env).types;
  exports.Set("typeCommit", Napi::Function::New(env, TypeCommit, "typeCommit", reg));
  exports.Set("typeRelease", Napi::Function::New(env, TypeRelease, "typeRelease", reg));
  exports.Set("typeDescribe", Napi::Function::New(env, TypeDescribe, "typeDescribe", reg));
  exports.Set("typePack", Napi::Function::New(env, TypePack, "typePack", reg));
  exports.Set("typeUnpack", Napi::Function::New(env, TypeUnpack, "typeUnpack", reg));
}

}  // namespace nodempi::napi
