// The launcher's side of the segment: create it, let the ranks inherit the
// descriptor, and record how each rank ended so the survivors stop waiting
// for it.
#include <fcntl.h>

#include <string>

#include "napi/args.h"
#include "napi/state.h"

namespace nodempi::napi {
namespace {

transport::Segment& launched_arg(const Napi::CallbackInfo& info) {
  State& st = State::of(info.Env());
  uint32_t h = u32_arg(info, 0);
  if (h >= st.launched.size() || !st.launched[h]) {
    throw_mpi(info.Env(), ErrorClass::ARG, "launcher: unknown segment handle");
  }
  return *st.launched[h];
}

// segmentCreate(nranks) -> { handle, fd, name }
Napi::Value SegmentCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  State& st = State::of(env);
  std::string error;
  transport::Segment* seg = transport::Segment::create(u32_arg(info, 0), &error);
  if (!seg) throw_mpi(env, ErrorClass::INTERN, "launcher: cannot create the shared-memory segment: " + error);
  st.launched.emplace_back(seg);
  Napi::Object out = Napi::Object::New(env);
  out.Set("handle", uint32_t(st.launched.size() - 1));
  out.Set("fd", seg->fd());
  out.Set("name", seg->name());
  out.Set("bytes", double(seg->geometry().total_bytes));
  return out;
}

// segmentCloseFd(handle): closes the original descriptor once the launcher
// holds its duplicates; mappings and inherited fds live on.
void SegmentCloseFd(const Napi::CallbackInfo& info) {
  launched_arg(info).close_fd();
}

// segmentExited(handle, rank, status, failed): status is 1 + exit code, or
// -signal. `failed` also marks the whole job failed.
void SegmentExited(const Napi::CallbackInfo& info) {
  transport::Segment& seg = launched_arg(info);
  uint32_t rank = u32_arg(info, 1);
  int32_t status = info[2].As<Napi::Number>().Int32Value();
  bool failed = info[3].ToBoolean();
  transport::Header* h = seg.header();
  if (rank >= h->nranks) throw_mpi(info.Env(), ErrorClass::RANK, "launcher: rank out of range");
  h->ranks[rank].exited.store(status, std::memory_order_release);
  if (failed && !h->failed.load(std::memory_order_acquire)) {
    h->failed_rank.store(int32_t(rank), std::memory_order_relaxed);
    h->failed.store(1, std::memory_order_release);
  }
}

// segmentFail(handle): the job is being ended (timeout, signal); every rank
// waiting in a collective stops with ERR_PROC_FAILED.
void SegmentFail(const Napi::CallbackInfo& info) {
  transport::Header* h = launched_arg(info).header();
  if (!h->failed.load(std::memory_order_acquire)) {
    h->failed_rank.store(-1, std::memory_order_relaxed);
    h->failed.store(1, std::memory_order_release);
  }
}

// segmentDupFd(handle) -> fd: a descriptor of its own for a worker-thread
// rank, which closes it once mapped (thread mode).
Napi::Value SegmentDupFd(const Napi::CallbackInfo& info) {
  transport::Segment& seg = launched_arg(info);
  int fd = fcntl(seg.fd(), F_DUPFD_CLOEXEC, 0);
  if (fd < 0) throw_mpi(info.Env(), ErrorClass::INTERN, "launcher: cannot duplicate the segment descriptor");
  return Napi::Number::New(info.Env(), fd);
}

// segmentState(handle) -> [failed, failedRank]: whether the job was marked
// failed (abort(), a dead rank, the launcher) and by which rank (-1: none).
Napi::Value SegmentState(const Napi::CallbackInfo& info) {
  transport::Header* h = launched_arg(info).header();
  Napi::Array out = Napi::Array::New(info.Env(), 2);
  out.Set(uint32_t(0), h->failed.load(std::memory_order_acquire) != 0);
  out.Set(uint32_t(1), h->failed_rank.load(std::memory_order_acquire));
  return out;
}

// segmentClose(handle): unmap, and close the original descriptor if that has
// not happened yet.
void SegmentClose(const Napi::CallbackInfo& info) {
  State& st = State::of(info.Env());
  uint32_t h = u32_arg(info, 0);
  if (h < st.launched.size()) st.launched[h].reset();
}

}  // namespace

void register_launcher(Napi::Env env, Napi::Object exports) {
  exports.Set("segmentCreate", Napi::Function::New(env, SegmentCreate, "segmentCreate"));
  exports.Set("segmentCloseFd", Napi::Function::New(env, SegmentCloseFd, "segmentCloseFd"));
  exports.Set("segmentExited", Napi::Function::New(env, SegmentExited, "segmentExited"));
  exports.Set("segmentFail", Napi::Function::New(env, SegmentFail, "segmentFail"));
  exports.Set("segmentDupFd", Napi::Function::New(env, SegmentDupFd, "segmentDupFd"));
  exports.Set("segmentState", Napi::Function::New(env, SegmentState, "segmentState"));
  exports.Set("segmentClose", Napi::Function::New(env, SegmentClose, "segmentClose"));
}

}  // namespace nodempi::napi
