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

}  // namespace nodempi::napi
