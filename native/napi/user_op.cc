#include "napi/user_op.h"

#include <cstring>

#include "core/error.h"
#include "napi/args.h"
#include "napi/progress.h"

namespace nodempi::napi {

UserOp::UserOp(Napi::Env env, Napi::Object spec)
    : env_(env),
      progress_(progress_for(env)),
      fn_(Napi::Persistent(spec.Get("fn").As<Napi::Function>())),
      datatype_(Napi::Persistent(spec.Get("datatype").As<Napi::Object>())),
      kind_(spec.Get("kind").As<Napi::Number>().Int32Value()),
      item_(size_t(spec.Get("item").As<Napi::Number>().Int64Value())) {}

Napi::Value UserOp::error() const { return error_.IsEmpty() ? env_.Undefined() : error_.Value(); }

Napi::Value UserOp::view(Napi::ArrayBuffer buffer) const {
  if (kind_ < 0) return Napi::DataView::New(env_, buffer);
  auto type = napi_typedarray_type(kind_);
  napi_value out;
  napi_status st = napi_create_typedarray(env_, type, buffer.ByteLength() / element_size(type), buffer, 0, &out);
  NAPI_THROW_IF_FAILED(env_, st, Napi::Value());
  return Napi::Value(env_, out);
}

// out = a op b as MPI's user function sees it: inoutvec = invec op inoutvec.
// b is first copied into out (unless they are the same memory), then the
// function combines a into it. Once the function has thrown, the remaining
// steps only keep the protocol going; the result is discarded.
void UserOp::call(void* self, const void* a, const void* b, void* out, size_t n) {
  auto* u = static_cast<UserOp*>(self);
  const size_t bytes = n * u->item_;
  if (out != b && bytes) std::memmove(out, b, bytes);
  if (u->failed_ || n == 0) return;
  if (on_main_thread(u->progress_)) {
    u->call_here(a, out, n);
  } else {
    run_on_main(u->progress_, [u, a, out, n] { u->call_here(a, out, n); });
  }
}

void UserOp::call_here(const void* a, void* out, size_t n) {
  Napi::HandleScope scope(env_);
  const size_t bytes = n * item_;
  // External buffers over the collective's memory, detached right after the
  // call so the function cannot keep a view that outlives that memory.
  Napi::ArrayBuffer in_buf = Napi::ArrayBuffer::New(env_, const_cast<void*>(a), bytes);
  Napi::ArrayBuffer inout_buf = Napi::ArrayBuffer::New(env_, out, bytes);
  try {
    fn_.Call({view(in_buf), view(inout_buf), Napi::Number::New(env_, double(n)), datatype_.Value()});
  } catch (const Napi::Error& e) {
    failed_ = true;
    Napi::Value thrown = e.Value().IsEmpty() ? env_.Undefined() : Napi::Value(e.Value());
    error_ = Napi::Persistent(thrown);
    if (thrown.IsObject()) {
      Napi::Value msg = thrown.As<Napi::Object>().Get("message");
      if (msg.IsString()) failure_ = msg.As<Napi::String>().Utf8Value();
    }
  }
  in_buf.Detach();
  inout_buf.Detach();
}

void UserOp::settle(coll::Context& c, const char* call) {
  int bad = coll::verdict(c, !failed_);
  if (bad < 0) return;
  std::string where = std::string(call) + ": the user-defined op threw on rank " + std::to_string(bad);
  if (failed_ && !failure_.empty()) where += ": " + failure_;
  throw CoreError(ErrorClass::OTHER, where);
}

}  // namespace nodempi::napi
