// Unwrapping arguments. lib/ has validated everything; these checks are the
// cheap second line that keeps a bad call from touching memory it does not own.
#pragma once
#include <napi.h>

#include <cstdint>
#include <string>

#include "napi/errors.h"

namespace nodempi::napi {

struct Bytes {
  uint8_t* data;
  size_t length;
};

inline size_t element_size(napi_typedarray_type type) {
  switch (type) {
    case napi_int8_array: case napi_uint8_array: case napi_uint8_clamped_array: return 1;
    case napi_int16_array: case napi_uint16_array: return 2;
    case napi_int32_array: case napi_uint32_array: case napi_float32_array: return 4;
    default: return 8;  // float64, bigint64, biguint64
  }
}

// Whether view `v`'s ArrayBuffer is detached (transferred to a worker,
// handed to a stream): it then reads as 0 bytes, which must not pass for
// an empty message. Asked of empty views only.
[[gnu::cold, gnu::noinline]] inline bool detached(napi_env env, napi_value v) {
  napi_value buffer = nullptr;
  bool typed = false;
  napi_is_typedarray(env, v, &typed);
  if (typed) {
    napi_get_typedarray_info(env, v, nullptr, nullptr, nullptr, &buffer, nullptr);
  } else {
    napi_get_dataview_info(env, v, nullptr, nullptr, &buffer, nullptr);
  }
  bool is = false;
  return buffer && napi_is_detached_arraybuffer(env, buffer, &is) == napi_ok && is;
}

[[noreturn, gnu::cold, gnu::noinline]] inline void throw_detached(napi_env env, const char* call, const char* what) {
  throw_mpi(env, ErrorClass::BUFFER, std::string(call) + ": the " + what +
                                         "'s ArrayBuffer is detached (transferred, or handed to a stream): it holds nothing now");
}

// A TypedArray or DataView, or null/undefined (an absent buffer, e.g.
// IN_PLACE or a non-root's receive buffer).
inline Bytes bytes_arg(const Napi::CallbackInfo& info, size_t i, const char* call, const char* what) {
  napi_env env = info.Env();
  napi_value v = info[i];
  void* data = nullptr;
  size_t length = 0;
  // Node's napi_get_buffer_info takes any ArrayBufferView (TypedArray or
  // DataView) and answers in bytes with one call; napi_get_typedarray_info
  // would first find the array's kind by testing each in turn (ninth for a
  // Float64Array), most of a small collective's unwrapping time.
  // An empty view may have no memory at all; give it a non-null address so
  // that only an absent buffer (IN_PLACE) reads as null in the core.
  static uint8_t empty[8];
  if (napi_get_buffer_info(env, v, &data, &length) == napi_ok) {
    if (length == 0 && detached(env, v)) throw_detached(env, call, what);
    return {data ? static_cast<uint8_t*>(data) : empty, length};
  }
  napi_valuetype t;
  napi_typeof(env, v, &t);
  if (t == napi_null || t == napi_undefined) return {nullptr, 0};
  throw_mpi(env, ErrorClass::BUFFER, std::string(call) + ": " + what + " must be a TypedArray or DataView");
}

// `b` (already unwrapped: each unwrapping costs tens of nanoseconds) must
// hold `needed` bytes.
inline Bytes need(const Napi::CallbackInfo& info, const Bytes& b, size_t needed, const char* call,
                 const char* what) {
  if (!b.data || b.length < needed) {
    throw_mpi(info.Env(), ErrorClass::BUFFER,
              std::string(call) + ": " + what + " holds " + std::to_string(b.length) + " bytes, " +
                  std::to_string(needed) + " needed");
  }
  return b;
}

inline Bytes need_bytes(const Napi::CallbackInfo& info, size_t i, size_t needed, const char* call,
                        const char* what) {
  return need(info, bytes_arg(info, i, call, what), needed, call, what);
}

inline double number_arg(const Napi::CallbackInfo& info, size_t i) {
  double d = 0;
  napi_get_value_double(info.Env(), info[i], &d);
  return d;
}

// A count from JavaScript: a non-negative integer that size_t holds with
// room to add to (converting a larger double to size_t is undefined).
// Out of line: the message is built only on this path, not in every caller.
[[noreturn, gnu::cold, gnu::noinline]] inline void throw_not_size(Napi::Env env, const char* call, const char* what) {
  throw_mpi(env, ErrorClass::COUNT, std::string(call) + ": " + what + " must be a non-negative integer");
}

inline size_t size_value(Napi::Env env, double d, const char* call, const char* what) {
  if (!(d >= 0 && d <= double(SIZE_MAX / 2)) || d != double(size_t(d))) throw_not_size(env, call, what);
  return size_t(d);
}

inline size_t size_arg(const Napi::CallbackInfo& info, size_t i, const char* call, const char* what) {
  return size_value(info.Env(), number_arg(info, i), call, what);
}

inline uint32_t u32_arg(const Napi::CallbackInfo& info, size_t i) {
  uint32_t v = 0;
  napi_get_value_uint32(info.Env(), info[i], &v);
  return v;
}

}  // namespace nodempi::napi
