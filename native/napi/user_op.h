// Calling a user-defined op (a JS function) from a collective running on the
// main thread. The function sees the operands as TypedArrays or DataViews
// over the memory the collective reduces in: no copy in, no copy out.
#pragma once
#include <napi.h>

#include <string>

#include "core/coll/coll.h"

namespace nodempi::napi {

class UserOp {
 public:
  // `spec` is { fn, datatype, kind, item } from lib/: kind is the
  // napi_typedarray_type to present the items as, or -1 for DataViews;
  // item is the datatype's extent.
  UserOp(Napi::Env env, Napi::Object spec);

  coll::Combiner combiner() { return {nullptr, item_, &UserOp::call, this}; }
  bool failed() const { return failed_; }
  // The value the function threw (undefined when it did not).
  Napi::Value error() const { return error_.IsEmpty() ? Napi::Value() : error_.Value(); }

  // After the collective: every rank learns whether a user op threw on any
  // rank and throws on every rank if so; the rank where it happened carries
  // the thrown value as the MPIError's cause.
  void settle(coll::Context& c, const char* call);

 private:
  static void call(void* self, const void* a, const void* b, void* out, size_t n);
  Napi::Value view(Napi::ArrayBuffer buffer, size_t n) const;

  Napi::Env env_;
  Napi::Function fn_;
  Napi::Value datatype_;
  int kind_;
  size_t item_;
  bool failed_ = false;
  Napi::Reference<Napi::Value> error_;
};

}  // namespace nodempi::napi
