// Throwing MPIError from native code: lib/errors.ts registers a factory at
// load time, so native errors are the same class as those thrown in TS.
#pragma once
#include <napi.h>

#include <string>

#include "core/error.h"
#include "napi/state.h"

namespace nodempi::napi {

inline Napi::Error mpi_error(Napi::Env env, ErrorClass cls, const std::string& message,
                             Napi::Value cause = Napi::Value()) {
  State& st = State::of(env);
  if (!st.make_error.IsEmpty()) {
    Napi::Value err = st.make_error.Call({Napi::Number::New(env, int(cls)), Napi::String::New(env, message),
                                          cause.IsEmpty() ? env.Undefined() : cause});
    if (err.IsObject()) return Napi::Error(env, err);
  }
  return Napi::Error::New(env, message);
}

[[noreturn]] inline void throw_mpi(Napi::Env env, ErrorClass cls, const std::string& message) {
  throw mpi_error(env, cls, message);
}

// The body of a plain N-API callback, with node-addon-api's C++ exceptions
// made JavaScript ones as Napi::Function's own wrapper does; what it
// returns (nullptr: undefined). For the hot calls that take their numbers
// from the call block and mostly return nothing: the wrapper, its
// CallbackInfo and a returned boolean cost more than the rest of the
// crossing (bench/CORE.md, "The N-API crossing").
template <typename F>
napi_value raw_callback(napi_env env, F&& body) {
  try {
    return body(Napi::Env(env));
  } catch (const Napi::Error& e) {
    e.ThrowAsJavaScriptException();
    return nullptr;
  }
}

// exports[name] = a function of the plain N-API callback `cb`.
inline void export_raw(Napi::Env env, Napi::Object exports, const char* name, napi_callback cb) {
  napi_value f = nullptr;
  NAPI_THROW_IF_FAILED_VOID(env, napi_create_function(env, name, NAPI_AUTO_LENGTH, cb, nullptr, &f));
  exports.Set(name, Napi::Value(env, f));
}

}  // namespace nodempi::napi
