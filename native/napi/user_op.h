// Calling a user-defined op (a JS function) from a collective. The function
// sees the operands as TypedArrays or DataViews over scratch ArrayBuffers
// that JS owns: the operands are copied in and the result out. On the main
// thread it is called directly; from a progress thread the call is handed
// to the main thread (napi/progress.h), which runs it while the worker waits.
#pragma once
#include <napi.h>

#include <string>

#include "core/coll/coll.h"

namespace nodempi::napi {

struct Progress;

class UserOp {
 public:
  // `spec` is { fn, datatype, kind, item } from lib/: kind is the
  // napi_typedarray_type to present the items as, or -1 for DataViews;
  // item is the datatype's extent. Holds references, so it must be created
  // and destroyed on the main thread. `threaded`: progress threads may call
  // it (the shm engine's); false when only the main thread ever does (the
  // MPI backend), which then needs no engine.
  UserOp(Napi::Env env, Napi::Object spec, bool threaded = true);

  coll::Combiner combiner() {
    coll::Combiner c{nullptr, item_, &UserOp::call, this};
    c.op_id = -1;
    return c;
  }
  bool failed() const { return failed_; }
  // The thrown value's message ("" when it had none).
  const std::string& failure() const { return failure_; }
  // inout = in op inout for n items, as MPI_User_function does.
  void apply(const void* in, void* inout, size_t n) { call(this, in, inout, inout, n); }
  // Forgets a failure, for the next call that uses the op.
  void reset() {
    failed_ = false;
    failure_.clear();
    error_.Reset();
  }
  // The value the function threw (undefined when it did not); main thread.
  Napi::Value error() const;

  // After the collective, on the thread that ran it: every rank learns
  // whether the op threw on any rank; if so this throws CoreError(OTHER)
  // naming the rank, on every rank. The MPIError built from it on the main
  // thread carries error() as its cause where it happened.
  void settle(coll::Context& c, const char* call);
  // settle() with the verdict already run: `bad` is the lowest failing
  // rank, or -1.
  void report(int bad, const char* call) const;

 private:
  static void call(void* self, const void* a, const void* b, void* out, size_t n);
  void call_here(const void* a, const void* b, void* out, size_t n);
  Napi::Value view(Napi::ArrayBuffer buffer, size_t bytes) const;

  Napi::Env env_;
  Progress* progress_;
  Napi::FunctionReference fn_;
  Napi::ObjectReference datatype_;
  int kind_;
  size_t item_;
  bool failed_ = false;
  std::string failure_;  // the thrown value's message, for the error text
  Napi::Reference<Napi::Value> error_;
};

}  // namespace nodempi::napi
