// init / finalize / abort, the error factory, and a rank's tie to its
// launcher.
#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>

#include "core/clock.h"
#include "core/coll/direct.h"
#include "core/kernels/kernels.h"
#include "core/tuning.h"
#include "napi/args.h"
#include "napi/errors.h"
#include "napi/progress.h"
#include "napi/state.h"

namespace nodempi::napi {
namespace {

// setErrorFactory(fn): fn(errorClass, message) returns an MPIError.
void SetErrorFactory(const Napi::CallbackInfo& info) {
  State::of(info.Env()).make_error = Napi::Persistent(info[0].As<Napi::Function>());
}

void on_teardown(void* arg);

// init(rank, size, fd): fd < 0 means a singleton (no launcher). Returns
// nothing; the TS layer already knows rank and size.
void Init(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  State& st = State::of(env);
  if (st.initialized) return;
  uint32_t rank = u32_arg(info, 0), size = u32_arg(info, 1);
  int32_t fd = info[2].As<Napi::Number>().Int32Value();
  if (fd >= 0) {
    std::string error;
    st.segment.reset(transport::Segment::attach(fd, rank, size, &error));
    if (!st.segment) throw_mpi(env, ErrorClass::INTERN, "init: cannot attach the job's shared memory: " + error);
  } else if (size != 1 || rank != 0) {
    throw_mpi(env, ErrorClass::INTERN, "init: a world of several ranks needs the segment from the launcher");
  }
  st.world_rank = rank;
  st.world_size = size;
  std::vector<uint32_t> world(size);
  for (uint32_t r = 0; r < size; ++r) world[r] = r;
  st.contexts.clear();
  st.contexts.emplace_back(new coll::Context(st.segment.get(), 0, rank, world));
  st.contexts.emplace_back(new coll::Context(nullptr, 0, 0, std::vector<uint32_t>{rank}));
  st.initialized = true;
  // Runs before the environment's instance data (and with it the segment)
  // is deleted: cleanup hooks run newest first.
  napi_add_env_cleanup_hook(env, on_teardown, static_cast<napi_env>(env));
}

// How long operations still running on progress threads when this rank lets
// go of the job get to finish on their own, and then, once the rank is
// marked as leaving, to unwind (a waiting thread looks at liveness every
// ~20 ms).
constexpr long kSettleMs = 100;
constexpr long kUnwindMs = 2000;

// Finalize, at exit, or when this rank's environment is torn down without
// it (a worker-thread rank ended by terminate(), or by its process exiting).
// A nonblocking or persistent operation still running reads and writes the
// segment, this rank's contexts and its users' buffers, which all go away
// next (a worker's buffers with its heap): it must be over first. One that
// does not finish at once waits for ranks that will never take part (this
// one will not: it is leaving). Marking this rank as leaving ends that
// operation's waits here, and the waits of peers for this rank, as its exit
// would; ranks that do not wait for it carry on.
void release_job(Napi::Env env) {
  State& st = State::of(env);
  if (!settle_progress(env, kSettleMs) && st.segment) {
    st.segment->header()->ranks[st.world_rank].leaving.store(1, std::memory_order_release);
    settle_progress(env, kUnwindMs);
  }
  // Point-to-point's thread first: it completes requests in the engine
  // and reads the segment.
  stop_p2p(env);
  destroy_progress(env);
  st.finalized = true;
  if (st.keep_segment) {
    // A progress thread still runs a collective over these even now (say,
    // waiting for a JavaScript call the main thread will not make); the
    // process or the thread is ending, so leave them to it.
    for (auto& c : st.contexts) c.release();
    st.segment.release();
    return;
  }
  st.contexts.clear();
  st.segment.reset();
}

void on_teardown(void* arg) {
  Napi::Env env(static_cast<napi_env>(arg));
  State& st = State::of(env);
  if (st.initialized && !st.finalized) release_job(env);
}

void Finalize(const Napi::CallbackInfo& info) {
  State& st = State::of(info.Env());
  if (st.finalized) return;
  release_job(info.Env());
}

// abort(): marks the job failed, so peers blocked in a collective stop
// waiting, and ends the other ranks. The caller then exits with its code.
void Abort(const Napi::CallbackInfo& info) {
  State& st = State::of(info.Env());
  if (!st.segment) return;
  transport::Header* h = st.segment->header();
  h->failed_rank.store(int32_t(st.world_rank), std::memory_order_relaxed);
  h->failed.store(1, std::memory_order_release);
  for (uint32_t r = 0; r < st.world_size; ++r) {
    int32_t pid = h->ranks[r].pid.load(std::memory_order_acquire);
    // In thread mode every rank shares this process: the launcher ends them.
    if (r != st.world_rank && pid > 0 && pid != getpid()) kill(pid, SIGTERM);
  }
}

// True when `pid` has ended: no such process, or a zombie its parent has
// not reaped yet.
bool process_ended(pid_t pid) {
  if (kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
}

// watchLauncher(pid): ties this rank's life to its launcher's, as soon as
// the addon loads (a rank busy outside MPI never looks at the launcher
// otherwise). A rank the launcher started itself gets SIGKILL from the
// kernel when the launcher ends, however it ends (PR_SET_PDEATHSIG); the
// launcher may have ended before that was set, which a changed parent
// shows. A process further down (a rank under `-- CMD`, or something a
// rank started) is left to the launcher's watchdog, which ends the ranks'
// process groups, unless the launcher is already gone: then the job is over.
// Nothing happens in the launcher's own process (thread mode).
void WatchLauncher(const Napi::CallbackInfo& info) {
  const pid_t launcher = pid_t(info[0].As<Napi::Number>().Int32Value());
  if (launcher <= 0 || launcher == getpid()) return;
  if (getppid() == launcher) {
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() == launcher) return;
  } else if (!process_ended(launcher)) {
    return;
  }
  kill(getpid(), SIGKILL);
}

// settingsErrors(env?): what in the NODEMPI_* settings does not parse
// (core/tuning.h), "" when all do: of this process's environment, or of
// `env` (an object of strings: what a launcher will give its ranks).
Napi::Value SettingsErrors(const Napi::CallbackInfo& info) {
  if (info.Length() == 0 || info[0].IsUndefined()) return Napi::String::New(info.Env(), tuning().errors);
  Napi::Object env = info[0].As<Napi::Object>();
  std::string value;
  const Tuning t = Tuning::from([&](const char* name) -> const char* {
    Napi::Value v = env.Get(name);
    if (!v.IsString()) return nullptr;
    value = v.As<Napi::String>().Utf8Value();
    return value.c_str();
  });
  return Napi::String::New(info.Env(), t.errors);
}

Napi::Value KernelIsa(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), kernels::active_isa());
}

Napi::Value SingleCopies(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), double(coll::single_copies()));
}

Napi::Value SelectKernelIsa(const Napi::CallbackInfo& info) {
  std::string name = info[0].As<Napi::String>();
  return Napi::Boolean::New(info.Env(), kernels::select_isa(name.c_str()));
}

// setCallBlock(buffer): the call block (State::block); kept until exit.
void SetCallBlock(const Napi::CallbackInfo& info) {
  CallBlock& block = State::of(info.Env()).block;
  Napi::ArrayBuffer buf = info[0].As<Napi::ArrayBuffer>();
  if (buf.ByteLength() < kCallBlockDoubles * sizeof(double)) {
    throw_mpi(info.Env(), ErrorClass::ARG, "setCallBlock: " + std::to_string(kCallBlockDoubles) + " doubles needed");
  }
  block.hold = Napi::Persistent(buf);
  block.data = static_cast<double*>(buf.Data());
}

// The clock's reading when the addon was loaded: wtime()'s zero, the same
// for every thread of the process, as MPI_Wtime's is.
const uint64_t kWtimeOrigin = now_ns();

// wtime(): seconds since kWtimeOrigin, left in the call block. A number
// returned through N-API is a new heap number, and a loop timing each call
// reads the clock twice a call: it would make garbage of its own
// (bench/CORE.md, "wtime").
napi_value Wtime(napi_env raw, napi_callback_info) {
  return raw_callback(raw, [](Napi::Env env) -> napi_value {
    State::of(env).call_block(env, "wtime")[kWtime] = double(now_ns() - kWtimeOrigin) * 1e-9;
    return nullptr;
  });
}

}  // namespace

double* State::call_block(Napi::Env env, const char* call) {
  double* b = block.data;
  if (!b) throw_mpi(env, ErrorClass::INTERN, std::string(call) + ": no call block (setCallBlock)");
  return b;
}

void register_runtime(Napi::Env env, Napi::Object exports) {
  exports.Set("setCallBlock", Napi::Function::New(env, SetCallBlock, "setCallBlock"));
  exports.Set("setErrorFactory", Napi::Function::New(env, SetErrorFactory, "setErrorFactory"));
  exports.Set("init", Napi::Function::New(env, Init, "init"));
  exports.Set("finalize", Napi::Function::New(env, Finalize, "finalize"));
  exports.Set("abort", Napi::Function::New(env, Abort, "abort"));
  exports.Set("watchLauncher", Napi::Function::New(env, WatchLauncher, "watchLauncher"));
  exports.Set("settingsErrors", Napi::Function::New(env, SettingsErrors, "settingsErrors"));
  exports.Set("kernelIsa", Napi::Function::New(env, KernelIsa, "kernelIsa"));
  exports.Set("selectKernelIsa", Napi::Function::New(env, SelectKernelIsa, "selectKernelIsa"));
  exports.Set("singleCopies", Napi::Function::New(env, SingleCopies, "singleCopies"));
  export_raw(env, exports, "wtime", Wtime);
}

}  // namespace nodempi::napi
