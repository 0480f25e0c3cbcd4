#include "napi/user_op.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "core/error.h"
#include "napi/args.h"
#include "napi/progress.h"
#include "napi/state.h"

namespace nodempi::napi {

UserOp::UserOp(Napi::Env env, Napi::Object spec, bool threaded)
    : env_(env),
      progress_(threaded ? progress_for(env) : nullptr),
      fn_(Napi::Persistent(spec.Get("fn").As<Napi::Function>())),
      datatype_(Napi::Persistent(spec.Get("datatype").As<Napi::Object>())),
      kind_(spec.Get("kind").As<Napi::Number>().Int32Value()),
      item_(size_t(spec.Get("item").As<Napi::Number>().Int64Value())) {}

Napi::Value UserOp::error() const { return error_.IsEmpty() ? env_.Undefined() : error_.Value(); }

Napi::Value UserOp::view(Napi::ArrayBuffer buffer, size_t bytes) const {
  if (kind_ < 0) return Napi::DataView::New(env_, buffer, 0, bytes);
  auto type = napi_typedarray_type(kind_);
  napi_value out;
  napi_status st = napi_create_typedarray(env_, type, bytes / element_size(type), buffer, 0, &out);
  NAPI_THROW_IF_FAILED(env_, st, Napi::Value());
  return Napi::Value(env_, out);
}

// out = a op b as MPI's user function sees it: inoutvec = invec op inoutvec.
// Once the function has thrown, the remaining steps only keep the protocol
// going (out = b); the result is discarded.
void UserOp::call(void* self, const void* a, const void* b, void* out, size_t n) {
  auto* u = static_cast<UserOp*>(self);
  if (u->failed_ || n == 0) {
    if (out != b && n) std::memmove(out, b, n * u->item_);
    return;
  }
  if (!u->progress_ || on_main_thread(u->progress_)) {
    u->call_here(a, b, out, n);
  } else {
    run_on_main(u->progress_, [u, a, b, out, n] { u->call_here(a, b, out, n); });
  }
}

// Both operands are copied into the scratch before anything is written to
// out, so a or b may be out itself.
void UserOp::call_here(const void* a, const void* b, void* out, size_t n) {
  Napi::HandleScope scope(env_);
  const size_t bytes = n * item_;
  State& state = State::of(env_);
  UserScratch& s = state.user_scratch;
  const bool shared = !s.busy;
  Napi::ArrayBuffer in_buf, inout_buf;
  Napi::Value in_view, inout_view;
  if (shared) {
    if (s.capacity < bytes) {
      // Grow geometrically: a collective calls with chunks up to a slot.
      s.capacity = std::max(bytes, std::max<size_t>(4096, 2 * s.capacity));
      s.in = Napi::Persistent(Napi::ArrayBuffer::New(env_, s.capacity));
      s.inout = Napi::Persistent(Napi::ArrayBuffer::New(env_, s.capacity));
      s.kind = -2;
    }
    in_buf = s.in.Value();
    inout_buf = s.inout.Value();
    if (s.kind != kind_ || s.bytes != bytes) {
      s.in_view = Napi::Persistent(view(in_buf, bytes));
      s.inout_view = Napi::Persistent(view(inout_buf, bytes));
      s.kind = kind_;
      s.bytes = bytes;
    }
    in_view = s.in_view.Value();
    inout_view = s.inout_view.Value();
  } else {
    in_buf = Napi::ArrayBuffer::New(env_, bytes);
    inout_buf = Napi::ArrayBuffer::New(env_, bytes);
    in_view = view(in_buf, bytes);
    inout_view = view(inout_buf, bytes);
  }
  std::memcpy(in_buf.Data(), a, bytes);
  std::memcpy(inout_buf.Data(), b, bytes);
  if (shared) s.busy = true;
  try {
    fn_.Call({in_view, inout_view, Napi::Number::New(env_, double(n)), datatype_.Value()});
  } catch (const Napi::Error& e) {
    failed_ = true;
    Napi::Value thrown = e.Value().IsEmpty() ? env_.Undefined() : Napi::Value(e.Value());
    error_ = Napi::Persistent(thrown);
    if (thrown.IsObject()) {
      Napi::Value msg = thrown.As<Napi::Object>().Get("message");
      if (msg.IsString()) failure_ = msg.As<Napi::String>().Utf8Value();
    }
  }
  if (shared) s.busy = false;
  // The function may have transferred a buffer away (postMessage,
  // structuredClone): its memory is gone, so the scratch starts over.
  if (in_buf.IsDetached() || inout_buf.IsDetached()) {
    if (shared) s.capacity = 0;
    if (!failed_ && inout_buf.IsDetached()) {
      failed_ = true;
      failure_ = "the function detached its inoutvec buffer";
      error_ = Napi::Persistent(Napi::Value(Napi::Error::New(env_, failure_).Value()));
    }
  }
  if (!inout_buf.IsDetached()) std::memcpy(out, inout_buf.Data(), bytes);
  else if (out != b) std::memmove(out, b, bytes);
}

void UserOp::settle(coll::Context& c, const char* call) { report(coll::verdict(c, !failed_), call); }

void UserOp::report(int bad, const char* call) const {
  if (bad < 0) return;
  std::string where = std::string(call) + ": the user-defined op threw on rank " + std::to_string(bad);
  if (failed_ && !failure_.empty()) where += ": " + failure_;
  throw CoreError(ErrorClass::OTHER, where);
}

}  // namespace nodempi::napi
