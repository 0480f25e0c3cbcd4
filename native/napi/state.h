// Per-environment addon state: each Node environment (the main thread, or a
// worker thread in thread mode) is its own rank with its own attachment.
#pragma once
#include <napi.h>

#include <memory>
#include <vector>

#include "core/coll/context.h"
#include "core/datatype/registry.h"
#include "core/transport/segment.h"

namespace nodempi::napi {

struct Progress;     // napi/progress.cc
struct MpiBackend;   // napi/mpi_binding.cc
struct P2pState;     // napi/p2p_binding.cc

// The scratch a user function's views live in (napi/user_op.cc), one per
// environment, kept between calls: creating external ArrayBuffers over the
// collective's memory and detaching them after each call (so no view
// outlives that memory) costs microseconds per call, and the first detach
// invalidates V8's "no ArrayBuffer was ever detached" assumption, which
// slows every TypedArray access in the process from then on (bench/README.md,
// "Measurements behind the code").
// Copies of a slot-sized chunk cost far less.
struct UserScratch {
  Napi::Reference<Napi::ArrayBuffer> in, inout;
  size_t capacity = 0;
  // The views of the last call, reused while kind and length stay the same.
  int kind = -2;
  size_t bytes = 0;
  Napi::Reference<Napi::Value> in_view, inout_view;
  bool busy = false;  // a call is running (a nested one gets its own buffers)
};

// The views of reduceLocal's last fast call, so that the next call on the
// same arrays need not unwrap them again (napi/local_binding.cc says when
// that is safe). `slots` is the memory of an ArrayBuffer both sides read
// and write.
struct LastLocal {
  double* slots = nullptr;
  Napi::Reference<Napi::ArrayBuffer> hold;
  void* data[3] = {};
  size_t bytes[3] = {};
  double generation = 0;
};

// The per-rank lists of the v-collectives (lib/args.ts): kArgLists lists of
// `width` doubles in one ArrayBuffer both sides keep, so that a call names
// a list by its number instead of passing a view to unwrap (tens of
// nanoseconds each, four for an alltoallv).
constexpr uint32_t kArgLists = 10;
struct ArgLists {
  Napi::Reference<Napi::ArrayBuffer> hold;
  const uint8_t* data = nullptr;
  size_t width = 0;
};

// The call block (lib/block.ts): the numbers of a hot call, in doubles of
// one ArrayBuffer both sides keep, read from memory instead of unwrapped
// argument by argument (a value read through N-API costs several
// nanoseconds; a blocking send or receive had six). Layouts: point-to-
// point's in napi/p2p_binding.cc and napi/mpi_binding.cc, a replayed
// collective's (kTemplate) here.
struct CallBlock {
  Napi::Reference<Napi::ArrayBuffer> hold;
  double* data = nullptr;
};

// Its length in doubles (lib/block.ts makes it).
constexpr size_t kCallBlockDoubles = 16;

// A replayed collective (runTemplate, mpiRunTemplate): lib writes the
// template's id in kTemplate.
enum TemplateSlot { kTemplate = 0 };

// wtime() leaves its seconds in kWtime, apart from every call's numbers.
enum WtimeSlot { kWtime = 8 };

struct State {
  std::unique_ptr<transport::Segment> segment;  // null for a singleton
  uint32_t world_rank = 0;
  uint32_t world_size = 1;
  bool initialized = false;
  bool finalized = false;
  // Communicator contexts by handle; 0 is COMM_WORLD, 1 is COMM_SELF.
  std::vector<std::unique_ptr<coll::Context>> contexts;
  // Segments the launcher created, by handle.
  std::vector<std::unique_ptr<transport::Segment>> launched;
  Napi::FunctionReference make_error;  // (errorClass, message, cause) => MPIError
  Progress* progress = nullptr;        // created at the first nonblocking call
  datatype::Registry types;            // committed datatypes by handle
  bool keep_segment = false;           // a progress thread may still use it
  UserScratch user_scratch;
  LastLocal last_local;
  ArgLists arg_lists;
  // The system MPI library, once lib/ has opened it (shared_ptr: its type
  // is complete only in napi/mpi_binding.cc).
  std::shared_ptr<MpiBackend> mpi;
  // Point-to-point, made at the first call (shared_ptr: its type is
  // complete only in napi/p2p_binding.cc).
  std::shared_ptr<P2pState> p2p;
  CallBlock block;

  static State& of(Napi::Env env) { return *env.GetInstanceData<State>(); }

  // The call block's numbers, for `call`; INTERN when lib has not set it
  // (setCallBlock, napi/runtime_binding.cc).
  double* call_block(Napi::Env env, const char* call);
};

void register_runtime(Napi::Env env, Napi::Object exports);
void register_comm(Napi::Env env, Napi::Object exports);
void register_vcoll(Napi::Env env, Napi::Object exports);
void register_datatype(Napi::Env env, Napi::Object exports);
void register_progress(Napi::Env env, Napi::Object exports);
void register_comm_mgmt(Napi::Env env, Napi::Object exports);
void register_launcher(Napi::Env env, Napi::Object exports);
void register_local(Napi::Env env, Napi::Object exports);
void register_memory(Napi::Env env, Napi::Object exports);
void register_mpi(Napi::Env env, Napi::Object exports);
void register_p2p(Napi::Env env, Napi::Object exports);
// Wakes point-to-point's progress thread if nonblocking requests are in
// flight: once per JavaScript turn that made requests (napi/p2p_binding.cc).
void kick_p2p(Napi::Env env);
// Stops point-to-point progress before the job is let go (napi/p2p_binding.cc).
void stop_p2p(Napi::Env env);
// Drops the unexpected messages of communicator `c`, which is being freed.
void forget_p2p(Napi::Env env, const coll::Context& c);

}  // namespace nodempi::napi
