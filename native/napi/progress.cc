#include "napi/progress.h"

#include <vector>

#include "core/progress/engine.h"
#include "napi/args.h"
#include "napi/errors.h"
#include "napi/state.h"

namespace nodempi::napi {

namespace {
// Runs on the main thread for every wake-up of the event loop the engine
// asked for. `env` is null while Node tears the environment down: then
// there is nothing left to deliver to.
void call_progress(Napi::Env env, Napi::Function, void*, void*);
using ProgressTsfn = Napi::TypedThreadSafeFunction<void, void, call_progress>;
}  // namespace

// The engine and what connects it to the event loop. Requests keep their
// user op (if any) in the engine as `keep`, handed back at delivery, so it
// is released on the main thread.
struct Progress {
  ProgressTsfn tsfn;  // wakes the event loop; calls lib's onProgress
  bool tsfn_ref = false;
  Napi::FunctionReference on_progress;
  // Last: destroyed first, its threads calling tsfn until then. tsfn is
  // made before the first request, so before any thread can call it.
  progress::Engine engine{[this] { tsfn.NonBlockingCall(); }};
};

namespace {

void call_progress(Napi::Env env, Napi::Function, void*, void*) {
  if (env == nullptr) return;
  // Looked up on each call: after finalize there is no engine left.
  Progress* now = State::of(env).progress;
  if (!now) return;
  try {
    now->engine.service_mail();
    if (!now->on_progress.IsEmpty()) now->on_progress.Call({});
  } catch (const Napi::Error& e) {
    // lib's callback settles promises and does not throw; should anything
    // else, report it as Node reports an uncaught exception.
    e.ThrowAsJavaScriptException();
  }
}

Progress& progress_of(Napi::Env env) {
  State& st = State::of(env);
  if (!st.progress) {
    auto* p = new Progress;
    p->tsfn = ProgressTsfn::New(env, "nodempi progress", 0, 1);
    // Referenced only while nonblocking requests are in flight, so an idle
    // engine never keeps the process alive.
    p->tsfn.Unref(env);
    st.progress = p;
  }
  return *st.progress;
}

// The MPIError for a finished operation, or null; main thread.
Napi::Value outcome(Napi::Env env, const progress::Completion& c, const UserOp* user) {
  if (c.error == ErrorClass::SUCCESS) return env.Null();
  Napi::Value cause = user && user->failed() ? user->error() : Napi::Value();
  return mpi_error(env, c.error, c.message, cause).Value();
}

Napi::Value outcome(Napi::Env env, const progress::Completion& c) {
  // An external request's keep is its owner's (point-to-point's views).
  return outcome(env, c, c.external ? nullptr : static_cast<const UserOp*>(c.keep.get()));
}

// Operations at least this large wake their lane's thread at once, so they
// overlap with whatever the main thread computes next; smaller ones wait for
// the kick lib/request.ts schedules at the end of the current JavaScript
// turn (or for a wait() that runs them here), which spares a thread wake-up
// per request when requests are waited for right away. The wake-up and the
// extra runnable thread cost a fixed amount per call, a large part of a
// 1 MiB call with as many ranks as cores (bench/README.md, "Measurements
// behind the code"); from 4 MiB on it is small against the call, and the
// overlap is worth it.
constexpr size_t kWakeBytes = 4 * 1024 * 1024;

// Bytes of the TypedArray/DataView arguments of a binding call.
size_t payload_bytes(const Napi::CallbackInfo& info) {
  size_t total = 0;
  for (size_t i = 1; i < info.Length(); ++i) {
    size_t length = 0;
    if (napi_get_buffer_info(info.Env(), info[i], nullptr, &length) == napi_ok) total += length;
  }
  return total;
}

// A request is in flight: the engine must keep the process alive until it
// is delivered.
void ref_loop(Napi::Env env, Progress& p) {
  if (!p.tsfn_ref) {
    p.tsfn.Ref(env);
    p.tsfn_ref = true;
  }
}

// No request in flight: the engine must not keep the process alive.
void unref_if_idle(Napi::Env env, Progress& p) {
  if (!p.engine.has_requests() && p.tsfn_ref) {
    p.tsfn.Unref(env);
    p.tsfn_ref = false;
  }
}

uint64_t id_arg(const Napi::CallbackInfo& info, size_t i) {
  return uint64_t(info[i].As<Napi::Number>().Int64Value());
}

}  // namespace

Mode mode_arg(const Napi::CallbackInfo& info) {
  return Mode(info[info.Length() - 1].As<Napi::Number>().Int32Value());
}

Progress* progress_for(Napi::Env env) { return &progress_of(env); }

progress::Engine& engine_for(Napi::Env env) { return progress_of(env).engine; }

std::shared_ptr<progress::Op> add_external(Napi::Env env, std::shared_ptr<void> keep) {
  Progress& p = progress_of(env);
  std::shared_ptr<progress::Op> op = p.engine.add_external(std::move(keep));
  ref_loop(env, p);
  return op;
}

bool on_main_thread(const Progress* p) { return p->engine.on_main_thread(); }

void run_on_main(Progress* p, std::function<void()> fn) { p->engine.run_on_main(std::move(fn)); }

bool may_run_now(Napi::Env env, uint32_t comm, std::unique_lock<std::mutex>& hold) {
  Progress* p = State::of(env).progress;
  return !p || p->engine.may_run_now(comm, hold);
}

[[noreturn]] void throw_core(Napi::Env env, const CoreError& e, const UserOp* user) {
  Napi::Value cause = user && user->failed() ? user->error() : Napi::Value();
  throw mpi_error(env, e.error_class(), e.what(), cause);
}

Napi::Value queue(const Napi::CallbackInfo& info, Job job) {
  Napi::Env env = info.Env();
  const Mode mode = mode_arg(info);
  switch (mode) {
    case Mode::NONBLOCKING: {
      Progress& p = progress_of(env);
      const bool wake = payload_bytes(info) >= kWakeBytes;
      uint64_t id = p.engine.submit(job.comm, std::move(job.body), wake, std::move(job.user));
      ref_loop(env, p);
      return Napi::Number::New(env, double(id));
    }
    case Mode::PERSISTENT: {
      // Decided here, where the buffers are arguments: start() has only the id.
      const bool wake = payload_bytes(info) >= kWakeBytes;
      try {
        uint64_t id = progress_of(env).engine.add_template(job.comm, std::move(job.body), wake, std::move(job.user));
        return Napi::Number::New(env, double(id));
      } catch (const CoreError& e) {
        throw_core(env, e, nullptr);
      }
    }
    case Mode::BLOCKING:
      break;
  }
  // Blocking, behind the communicator's queued operations (dispatch() found
  // some, so the engine exists): wait its turn.
  progress::Completion done = State::of(env).progress->engine.run_blocking(job.comm, job.body);
  Napi::Value err = outcome(env, done, job.user.get());
  if (!err.IsNull()) throw Napi::Error(env, err);
  return env.Undefined();
}

void retire_lane(Napi::Env env, uint32_t comm) {
  Progress* p = State::of(env).progress;
  if (p) p->engine.retire_lane(comm);
}

void destroy_progress(Napi::Env env) {
  State& st = State::of(env);
  Progress* p = st.progress;
  if (!p) return;
  const bool idle = p->engine.shutdown();
  p->tsfn.Release();
  if (!idle) {
    // A collective some peer never joined: let its thread be, with the
    // engine and the segment it uses (freeing either could crash it before
    // exit).
    st.keep_segment = true;
    return;
  }
  delete p;
  st.progress = nullptr;
}

bool settle_progress(Napi::Env env, long timeout_ms) {
  Progress* p = State::of(env).progress;
  return !p || p->engine.settle(timeout_ms);
}

namespace {

// setProgressCallback(fn): fn() runs on the main thread whenever requests
// may have completed; it calls drain().
void SetProgressCallback(const Napi::CallbackInfo& info) {
  progress_of(info.Env()).on_progress = Napi::Persistent(info[0].As<Napi::Function>());
}

// drain() -> [id, errorOrNull, id, errorOrNull, ...] for the nonblocking
// requests that completed since the last call.
Napi::Value Drain(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Progress& p = progress_of(env);
  std::vector<progress::Completion> done;
  p.engine.drain(done);
  Napi::Array out = Napi::Array::New(env, done.size() * 2);
  uint32_t k = 0;
  for (const progress::Completion& c : done) {
    out.Set(k++, Napi::Number::New(env, double(c.id)));
    out.Set(k++, outcome(env, c));
  }
  unref_if_idle(env, p);
  return out;
}

// test(id) -> undefined while in flight, else null or the MPIError. Never
// blocks; serves pending JavaScript calls so user ops progress.
Napi::Value Test(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Progress& p = progress_of(env);
  progress::Completion c = p.engine.test(id_arg(info, 0));
  if (!c.done) return env.Undefined();
  unref_if_idle(env, p);
  return outcome(env, c);
}

// wait(id) -> null or the MPIError; blocks the main thread.
Napi::Value Wait(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Progress& p = progress_of(env);
  progress::Completion c = p.engine.wait(id_arg(info, 0));
  unref_if_idle(env, p);
  return outcome(env, c);
}

// waitAny(ids) -> index of a completed request (not consumed: lib then calls
// wait on it). Blocks the main thread without spinning it.
Napi::Value WaitAny(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Array list = info[0].As<Napi::Array>();
  std::vector<uint64_t> ids(list.Length());
  for (uint32_t i = 0; i < list.Length(); ++i) ids[i] = uint64_t(list.Get(i).As<Napi::Number>().Int64Value());
  return Napi::Number::New(env, double(progress_of(env).engine.wait_any(ids)));
}

// start(templateId) -> request id of a new round of a persistent request.
Napi::Value Start(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Progress& p = progress_of(env);
  uint64_t id = p.engine.start(id_arg(info, 0));
  if (id == 0) throw_mpi(env, ErrorClass::REQUEST, "start: the persistent request has been freed");
  ref_loop(env, p);
  return Napi::Number::New(env, double(id));
}

// kick(): wakes the threads of lanes holding operations not yet started,
// and point-to-point's if requests of it are in flight (lib calls it once
// per JavaScript turn after making requests).
void Kick(const Napi::CallbackInfo& info) {
  Progress* p = State::of(info.Env()).progress;
  if (p) p->engine.kick();
  kick_p2p(info.Env());
}

// freeTemplate(templateId)
void FreeTemplate(const Napi::CallbackInfo& info) {
  progress_of(info.Env()).engine.free_template(id_arg(info, 0));
}

// runTemplate(): runs the persistent request's template whose id is in
// the call block's kTemplate as a blocking call (lib/replay.ts: a repeated
// blocking call is an implicit persistent request) and returns undefined,
// or false when the template is gone (its communicator was freed).
// Templates run this way never hold a user op, so no JavaScript runs
// inside. A plain N-API callback: a loop of one collective spends most of
// its time outside the core crossing into it.
napi_value RunTemplate(napi_env raw, napi_callback_info) {
  return raw_callback(raw, [](Napi::Env env) -> napi_value {
    State& st = State::of(env);
    const double id = st.call_block(env, "collective")[kTemplate];
    progress::Completion c;
    if (st.progress) c = st.progress->engine.run_template(uint64_t(id));
    if (c.id == 0) return Napi::Boolean::New(env, false);
    if (c.error != ErrorClass::SUCCESS) throw Napi::Error(env, outcome(env, c, nullptr));
    return nullptr;
  });
}

}  // namespace

void register_progress(Napi::Env env, Napi::Object exports) {
  exports.Set("setProgressCallback", Napi::Function::New(env, SetProgressCallback, "setProgressCallback"));
  export_raw(env, exports, "runTemplate", RunTemplate);
  exports.Set("drain", Napi::Function::New(env, Drain, "drain"));
  exports.Set("test", Napi::Function::New(env, Test, "test"));
  exports.Set("wait", Napi::Function::New(env, Wait, "wait"));
  exports.Set("waitAny", Napi::Function::New(env, WaitAny, "waitAny"));
  exports.Set("start", Napi::Function::New(env, Start, "start"));
  exports.Set("kick", Napi::Function::New(env, Kick, "kick"));
  exports.Set("freeTemplate", Napi::Function::New(env, FreeTemplate, "freeTemplate"));
}

}  // namespace nodempi::napi
