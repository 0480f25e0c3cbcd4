#include "napi/user_op.h"

#include <cstring>

#include "napi/args.h"
#include "napi/errors.h"

namespace nodempi::napi {

UserOp::UserOp(Napi::Env env, Napi::Object spec)
    : env_(env),
      fn_(spec.Get("fn").As<Napi::Function>()),
      datatype_(spec.Get("datatype")),
      kind_(spec.Get("kind").As<Napi::Number>().Int32Value()),
      item_(size_t(spec.Get("item").As<Napi::Number>().Int64Value())) {}

Napi::Value UserOp::view(Napi::ArrayBuffer buffer, size_t n) const {
  if (kind_ < 0) return Napi::DataView::New(env_, buffer);
  napi_value out;
  napi_status st = napi_create_typedarray(env_, napi_typedarray_type(kind_), buffer.ByteLength() / element_size(napi_typedarray_type(kind_)),
                                          buffer, 0, &out);
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
  Napi::HandleScope scope(u->env_);
  // External buffers over the collective's memory, detached right after the
  // call so the function cannot keep a view that outlives that memory.
  Napi::ArrayBuffer in_buf = Napi::ArrayBuffer::New(u->env_, const_cast<void*>(a), bytes);
  Napi::ArrayBuffer inout_buf = Napi::ArrayBuffer::New(u->env_, out, bytes);
  try {
    u->fn_.Call({u->view(in_buf, n), u->view(inout_buf, n), Napi::Number::New(u->env_, double(n)), u->datatype_});
  } catch (const Napi::Error& e) {
    u->failed_ = true;
    u->error_ = Napi::Persistent(e.Value().IsEmpty() ? u->env_.Undefined() : Napi::Value(e.Value()));
  }
  in_buf.Detach();
  inout_buf.Detach();
}

void UserOp::settle(coll::Context& c, const char* call) {
  int bad = coll::verdict(c, !failed_);
  if (bad < 0) return;
  std::string where = std::string(call) + ": the user-defined op threw on rank " + std::to_string(bad);
  if (failed_) {
    Napi::Value cause = error();
    std::string detail;
    if (cause.IsObject()) {
      Napi::Value msg = cause.As<Napi::Object>().Get("message");
      if (msg.IsString()) detail = ": " + msg.As<Napi::String>().Utf8Value();
    }
    throw mpi_error(env_, ErrorClass::OTHER, where + detail, cause);
  }
  throw mpi_error(env_, ErrorClass::OTHER, where);
}

}  // namespace nodempi::napi
