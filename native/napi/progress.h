// Running collectives blocking, nonblocking or persistent: the binding of
// core/progress/engine.h. It turns a call's arguments into a body for the
// engine, the engine's results into request ids and MPIErrors for
// lib/request.ts, and the engine's wake-ups into calls on the main thread
// through one thread-safe function (completions, and JavaScript calls such
// as user ops that progress threads hand to the main thread).
#pragma once
#include <napi.h>

#include <functional>
#include <memory>
#include <mutex>
#include <utility>

#include "core/error.h"

#include "napi/user_op.h"

namespace nodempi::progress {
class Engine;
struct Op;
}  // namespace nodempi::progress

namespace nodempi::napi {

// A collective with its arguments bound: `body` runs the core algorithm.
// `user`, when set, is the user op the body calls; it is owned here so that
// it is released on the main thread.
struct Job {
  uint32_t comm = 0;
  std::function<void()> body;
  std::shared_ptr<UserOp> user;
};

// How a binding was called: the last argument of every collective binding.
enum class Mode : int { BLOCKING = 0, NONBLOCKING = 1, PERSISTENT = 2 };

// Queues the job (nonblocking: returns a request id), stores it
// (persistent: returns a template id for start()), or, blocking, runs it
// behind the operations queued on its communicator and returns undefined
// or throws MPIError. dispatch() below is the entry point.
Napi::Value queue(const Napi::CallbackInfo& info, Job job);
Mode mode_arg(const Napi::CallbackInfo& info);

// True when a blocking collective on `comm` may run on this thread now
// (nothing of it queued); `hold` then keeps its lane until released.
bool may_run_now(Napi::Env env, uint32_t comm, std::unique_lock<std::mutex>& hold);
// Throws the MPIError for a core error, with the user op's error as cause.
[[noreturn]] void throw_core(Napi::Env env, const CoreError& e, const UserOp* user);

// Runs a collective's body: a blocking call that may run at once (nothing
// queued on its communicator) calls it in place, so the common small call
// builds no Job and no std::function (a heap allocation for most bodies'
// captures); everything else goes through queue().
template <class Body>
Napi::Value dispatch(const Napi::CallbackInfo& info, uint32_t comm, std::shared_ptr<UserOp> user, Body&& body) {
  const Mode mode = mode_arg(info);
  if (mode == Mode::BLOCKING) {
    std::unique_lock<std::mutex> hold;
    if (may_run_now(info.Env(), comm, hold)) {
      try {
        body();
      } catch (const CoreError& e) {
        throw_core(info.Env(), e, user.get());
      }
      return info.Env().Undefined();
    }
  }
  return queue(info, Job{comm, std::forward<Body>(body), std::move(user)});
}

struct Progress;
// The engine of this environment with its event-loop wake-up (created on
// first use; main thread).
Progress* progress_for(Napi::Env env);
// Callable from any thread.
bool on_main_thread(const Progress* p);
// From a progress thread: runs fn on the main thread and returns when it has.
void run_on_main(Progress* p, std::function<void()> fn);

// The engine of this environment (created on first use; main thread).
progress::Engine& engine_for(Napi::Env env);
// Registers a request that completes outside the lanes (point-to-point,
// napi/p2p_binding.cc) and keeps the event loop alive until it is
// delivered; `keep` is released on the main thread then.
std::shared_ptr<progress::Op> add_external(Napi::Env env, std::shared_ptr<void> keep);

// Releases the engine at finalize. Lanes with operations still in flight
// are left running (the process is ending; joining them could hang).
void destroy_progress(Napi::Env env);
// Wakes every lane that holds operations not yet started and waits up to
// `timeout_ms` for all of them to have nothing queued or running. True when
// the engine is idle (or was never created). Runs no JavaScript, so it may
// be called while the environment is being torn down.
bool settle_progress(Napi::Env env, long timeout_ms);
// Waits until every queued operation of communicator `comm` has completed
// (main thread), then retires its lane.
void retire_lane(Napi::Env env, uint32_t comm);

void register_progress(Napi::Env env, Napi::Object exports);

}  // namespace nodempi::napi
