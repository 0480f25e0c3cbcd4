#include "napi/progress.h"

#include <sched.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/progress/lane.h"
#include "napi/args.h"
#include "napi/errors.h"
#include "napi/state.h"

namespace nodempi::napi {

namespace {

// A JavaScript call a progress thread needs made on the main thread.
struct MainCall {
  std::function<void()> fn;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
};

struct Pending {
  std::shared_ptr<progress::Op> op;
  std::shared_ptr<UserOp> user;
  uint32_t comm;
};

}  // namespace

namespace {
// Runs on the main thread for every wake-up of the event loop the engine
// asked for. `env` is null while Node tears the environment down: then
// there is nothing left to deliver to.
void call_progress(Napi::Env env, Napi::Function, void*, void*);
using ProgressTsfn = Napi::TypedThreadSafeFunction<void, void, call_progress>;
}  // namespace

struct Progress {
  std::thread::id main = std::this_thread::get_id();
  std::vector<std::unique_ptr<progress::Lane>> lanes;  // by communicator handle
  std::unordered_map<uint64_t, Pending> pending;       // nonblocking requests
  std::unordered_map<uint64_t, Job> templates;         // persistent requests
  uint64_t next_id = 1;
  progress::Signal signal;  // raised on every completion and main-thread call
  std::mutex mail_mu;
  std::deque<MainCall*> mail;
  ProgressTsfn tsfn;  // wakes the event loop; calls lib's onProgress
  bool tsfn_live = false;
  bool unkicked = false;  // some lane holds operations its thread was not woken for
  bool in_wait = false;   // the main thread is inside wait(); lib delivers afterwards
  bool tsfn_ref = false;
  Napi::FunctionReference on_progress;
};

namespace {

void service_mail(Progress& p);

void call_progress(Napi::Env env, Napi::Function, void*, void*) {
  if (env == nullptr) return;
  // Looked up on each call: after finalize there is no engine left.
  Progress* now = State::of(env).progress;
  if (!now) return;
  try {
    service_mail(*now);
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
    p->tsfn_live = true;
    // Referenced only while nonblocking requests are in flight, so an idle
    // engine never keeps the process alive.
    p->tsfn.Unref(env);
    st.progress = p;
  }
  return *st.progress;
}

void wake_loop(Progress& p) {
  if (p.tsfn_live) p.tsfn.NonBlockingCall();
}

progress::Lane& lane_of(Napi::Env env, Progress& p, uint32_t comm) {
  if (p.lanes.size() <= comm) p.lanes.resize(comm + 1);
  if (!p.lanes[comm]) {
    Progress* pp = &p;
    p.lanes[comm] = std::make_unique<progress::Lane>([pp](const std::shared_ptr<progress::Op>&) {
      // Completed on the main thread inside wait(): lib delivers it when
      // that call returns, no need to wake the event loop.
      if (on_main_thread(pp) && pp->in_wait) return;
      pp->signal.raise();
      wake_loop(*pp);
    });
  }
  return *p.lanes[comm];
}

void service_mail(Progress& p) {
  for (;;) {
    MainCall* call;
    {
      std::lock_guard<std::mutex> lk(p.mail_mu);
      if (p.mail.empty()) return;
      call = p.mail.front();
      p.mail.pop_front();
    }
    call->fn();
    {
      std::lock_guard<std::mutex> lk(call->mu);
      call->done = true;
    }
    call->cv.notify_one();
  }
}

// Blocks the main thread until `op` is done, running it (and what precedes
// it on its lane) here when no progress thread is, and serving JavaScript
// calls the progress threads ask for meanwhile.
void wait_done(Progress& p, progress::Lane& lane, const progress::Op* op) {
  for (;;) {
    uint32_t seen = p.signal.value();
    if (lane.help(op)) return;
    service_mail(p);
    if (op->state.load(std::memory_order_acquire) == progress::Op::DONE) return;
    p.signal.wait(seen, 1000 * 1000);
  }
}

// The MPIError for a finished op, or null; main thread.
Napi::Value outcome(Napi::Env env, const progress::Op& op, const std::shared_ptr<UserOp>& user) {
  if (op.error == ErrorClass::SUCCESS) return env.Null();
  Napi::Value cause = user && user->failed() ? user->error() : Napi::Value();
  return mpi_error(env, op.error, op.message, cause).Value();
}

std::shared_ptr<progress::Op> make_op(Progress& p, const Job& job) {
  auto op = std::make_shared<progress::Op>();
  op->id = p.next_id++;
  op->body = job.body;
  return op;
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

uint64_t enqueue(Napi::Env env, Progress& p, const Job& job, bool wake) {
  auto op = make_op(p, job);
  p.pending.emplace(op->id, Pending{op, job.user, job.comm});
  if (p.tsfn_live && !p.tsfn_ref) {
    p.tsfn.Ref(env);
    p.tsfn_ref = true;
  }
  lane_of(env, p, job.comm).submit(op, wake);
  if (!wake) p.unkicked = true;
  return op->id;
}

// Wakes lanes holding operations not yet started, except `except` (the
// lane the main thread is about to run itself).
void kick_all(Progress& p, uint32_t except = UINT32_MAX) {
  if (!p.unkicked) return;
  p.unkicked = false;
  for (uint32_t c = 0; c < p.lanes.size(); ++c) {
    if (!p.lanes[c]) continue;
    if (c == except) {
      p.unkicked = true;  // still owed a kick if the main thread does not run it
      continue;
    }
    p.lanes[c]->kick();
  }
}

// No request in flight: the engine must not keep the process alive.
void unref_if_idle(Napi::Env env, Progress& p) {
  if (p.pending.empty() && p.tsfn_ref) {
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

bool on_main_thread(const Progress* p) { return std::this_thread::get_id() == p->main; }

void run_on_main(Progress* pp, std::function<void()> fn) {
  Progress& p = *pp;
  MainCall call;
  call.fn = std::move(fn);
  {
    std::lock_guard<std::mutex> lk(p.mail_mu);
    p.mail.push_back(&call);
  }
  p.signal.raise();
  wake_loop(p);
  std::unique_lock<std::mutex> lk(call.mu);
  call.cv.wait(lk, [&] { return call.done; });
}

bool may_run_now(Napi::Env env, uint32_t comm, std::unique_lock<std::mutex>& hold) {
  Progress* p = State::of(env).progress;
  if (!p) return true;
  // Before blocking, let every lane's queued operations progress: a peer
  // may need one of them to reach this collective.
  kick_all(*p, comm);
  progress::Lane* lane = comm < p->lanes.size() ? p->lanes[comm].get() : nullptr;
  return !lane || lane->try_run_direct(hold);
}

[[noreturn]] void throw_core(Napi::Env env, const CoreError& e, const UserOp* user) {
  Napi::Value cause = user && user->failed() ? user->error() : Napi::Value();
  throw mpi_error(env, e.error_class(), e.what(), cause);
}

Napi::Value queue(const Napi::CallbackInfo& info, Job job) {
  Napi::Env env = info.Env();
  const Mode mode = mode_arg(info);
  switch (mode) {
    case Mode::NONBLOCKING:
      return Napi::Number::New(env, double(enqueue(env, progress_of(env), job, payload_bytes(info) >= kWakeBytes)));
    case Mode::PERSISTENT: {
      Progress& p = progress_of(env);
      uint64_t id = p.next_id++;
      // Decided here, where the buffers are arguments: start() has only the id.
      job.wake = payload_bytes(info) >= kWakeBytes;
      p.templates.emplace(id, std::move(job));
      return Napi::Number::New(env, double(id));
    }
    case Mode::BLOCKING:
    case Mode::RECORD:
      break;
  }
  // Blocking, behind the communicator's queued operations (dispatch() found
  // some, so the engine and the lane exist): wait its turn.
  Progress* p = State::of(env).progress;
  progress::Lane* lane = p->lanes[job.comm].get();
  auto op = make_op(*p, job);
  lane->submit(op, false);
  wait_done(*p, *lane, op.get());
  Napi::Value err = outcome(env, *op, job.user);
  if (!err.IsNull()) throw Napi::Error(env, err);
  if (mode == Mode::RECORD && !job.user) return record(env, job.comm, std::move(job.body));
  return env.Undefined();
}

Napi::Value record(Napi::Env env, uint32_t comm, std::function<void()> body) {
  Replays& r = State::of(env).replays;
  uint64_t id = r.next_id++;
  r.calls.emplace(id, Replay{comm, std::move(body)});
  return Napi::Number::New(env, double(id));
}

void retire_lane(Napi::Env env, uint32_t comm) {
  Progress* p = State::of(env).progress;
  if (!p || comm >= p->lanes.size() || !p->lanes[comm]) return;
  progress::Lane& lane = *p->lanes[comm];
  // Queue a no-op behind everything and wait for it, running the lane here
  // if its thread is idle.
  auto marker = std::make_shared<progress::Op>();
  marker->body = [] {};
  lane.submit(marker);
  wait_done(*p, lane, marker.get());
  p->lanes[comm].reset();
}

void destroy_progress(Napi::Env env) {
  State& st = State::of(env);
  Progress* p = st.progress;
  if (!p) return;
  bool busy = false;
  for (auto& lane : p->lanes) {
    if (!lane) continue;
    if (lane->busy()) {
      // A collective some peer never joined: let its thread be, with the
      // segment it uses (freeing either could crash it before exit).
      busy = true;
      lane.release();
    }
  }
  if (p->tsfn_live) p->tsfn.Release();
  if (busy) {
    st.keep_segment = true;
    return;  // Progress intentionally leaked with its running lanes
  }
  p->lanes.clear();
  delete p;
  st.progress = nullptr;
}

bool settle_progress(Napi::Env env, long timeout_ms) {
  Progress* p = State::of(env).progress;
  if (!p) return true;
  for (auto& lane : p->lanes) {
    if (lane) lane->kick();
  }
  p->unkicked = false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    uint32_t seen = p->signal.value();
    bool busy = false;
    for (auto& lane : p->lanes) busy = busy || (lane && lane->busy());
    if (!busy) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    // Raised at every completion; the timeout bounds a missed one.
    p->signal.wait(seen, 5 * 1000 * 1000);
  }
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
  service_mail(p);
  Napi::Array out = Napi::Array::New(env);
  uint32_t k = 0;
  for (auto it = p.pending.begin(); it != p.pending.end();) {
    if (it->second.op->state.load(std::memory_order_acquire) == progress::Op::DONE) {
      out.Set(k++, Napi::Number::New(env, double(it->first)));
      out.Set(k++, outcome(env, *it->second.op, it->second.user));
      it = p.pending.erase(it);
    } else {
      ++it;
    }
  }
  unref_if_idle(env, p);
  return out;
}

// test(id) -> undefined while in flight, else null or the MPIError. Never
// blocks; serves pending JavaScript calls so user ops progress.
Napi::Value Test(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Progress& p = progress_of(env);
  service_mail(p);
  auto it = p.pending.find(id_arg(info, 0));
  if (it == p.pending.end()) return env.Null();  // already delivered
  if (it->second.op->state.load(std::memory_order_acquire) != progress::Op::DONE) {
    kick_all(p);
    // A test() loop must not starve the thread doing the work when ranks
    // outnumber cores: give up the rest of this time slice (it returns at
    // once when no other thread wants the core).
    sched_yield();
    return env.Undefined();
  }
  Napi::Value result = outcome(env, *it->second.op, it->second.user);
  p.pending.erase(it);
  unref_if_idle(env, p);
  return result;
}

// wait(id) -> null or the MPIError; blocks the main thread.
Napi::Value Wait(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Progress& p = progress_of(env);
  auto it = p.pending.find(id_arg(info, 0));
  if (it == p.pending.end()) return env.Null();
  Pending pend = it->second;
  kick_all(p, pend.comm);
  p.in_wait = true;
  wait_done(p, lane_of(env, p, pend.comm), pend.op.get());
  p.in_wait = false;
  p.pending.erase(pend.op->id);
  unref_if_idle(env, p);
  return outcome(env, *pend.op, pend.user);
}

// waitAny(ids) -> index of a completed request (not consumed: lib then calls
// wait on it). Blocks the main thread without spinning it.
Napi::Value WaitAny(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Progress& p = progress_of(env);
  Napi::Array ids = info[0].As<Napi::Array>();
  kick_all(p);
  for (;;) {
    uint32_t seen = p.signal.value();
    service_mail(p);
    for (uint32_t i = 0; i < ids.Length(); ++i) {
      auto it = p.pending.find(uint64_t(ids.Get(i).As<Napi::Number>().Int64Value()));
      if (it == p.pending.end() || it->second.op->state.load(std::memory_order_acquire) == progress::Op::DONE) {
        return Napi::Number::New(env, i);
      }
    }
    // Let the first in-flight request's lane run here if its thread is idle.
    auto it = p.pending.find(uint64_t(ids.Get(0u).As<Napi::Number>().Int64Value()));
    if (it != p.pending.end() && lane_of(env, p, it->second.comm).help(it->second.op.get())) continue;
    p.signal.wait(seen, 1000 * 1000);
  }
}

// start(templateId) -> request id of a new round of a persistent request.
Napi::Value Start(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Progress& p = progress_of(env);
  auto it = p.templates.find(id_arg(info, 0));
  if (it == p.templates.end()) throw_mpi(env, ErrorClass::REQUEST, "start: the persistent request has been freed");
  return Napi::Number::New(env, double(enqueue(env, p, it->second, it->second.wake)));
}

// kick(): wakes the threads of lanes holding operations not yet started
// (lib calls it once per JavaScript turn after queuing requests).
void Kick(const Napi::CallbackInfo& info) {
  Progress* p = State::of(info.Env()).progress;
  if (p) kick_all(*p);
}

// freeTemplate(templateId)
void FreeTemplate(const Napi::CallbackInfo& info) {
  progress_of(info.Env()).templates.erase(id_arg(info, 0));
}

// replay(id, mode): runs a recorded blocking call again (lib/replay.ts has
// checked that its arguments are the recorded ones); false when there is
// no such record (its communicator was freed, or MPI finalized).
Napi::Value ReplayCall(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Replays& r = State::of(env).replays;
  auto it = r.calls.find(id_arg(info, 0));
  if (it == r.calls.end()) return Napi::Boolean::New(env, false);
  // In place, nothing can drop the record while it runs (no user op, no
  // JavaScript); a call that must wait its turn runs a copy.
  dispatch(info, it->second.comm, nullptr, it->second.body);
  return Napi::Boolean::New(env, true);
}

// replayFree(id)
void ReplayFree(const Napi::CallbackInfo& info) {
  State::of(info.Env()).replays.calls.erase(id_arg(info, 0));
}

}  // namespace

void register_progress(Napi::Env env, Napi::Object exports) {
  exports.Set("setProgressCallback", Napi::Function::New(env, SetProgressCallback, "setProgressCallback"));
  exports.Set("replay", Napi::Function::New(env, ReplayCall, "replay"));
  exports.Set("replayFree", Napi::Function::New(env, ReplayFree, "replayFree"));
  exports.Set("drain", Napi::Function::New(env, Drain, "drain"));
  exports.Set("test", Napi::Function::New(env, Test, "test"));
  exports.Set("wait", Napi::Function::New(env, Wait, "wait"));
  exports.Set("waitAny", Napi::Function::New(env, WaitAny, "waitAny"));
  exports.Set("start", Napi::Function::New(env, Start, "start"));
  exports.Set("kick", Napi::Function::New(env, Kick, "kick"));
  exports.Set("freeTemplate", Napi::Function::New(env, FreeTemplate, "freeTemplate"));
}

}  // namespace nodempi::napi
