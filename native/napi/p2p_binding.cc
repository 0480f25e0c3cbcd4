// Point-to-point entry points: unwrap, re-check cheaply, call the rank's
// P2P (core/p2p), map core errors to MPIError. Nonblocking calls register
// an external request with the progress engine, which the P2P completes;
// the request keeps the JavaScript views it writes into alive until lib/
// has been told.
#include <cstdint>
#include <memory>
#include <string>

#include "core/p2p/p2p.h"
#include "core/progress/engine.h"
#include "napi/args.h"
#include "napi/comm_args.h"
#include "napi/progress.h"
#include "napi/state.h"

namespace nodempi::napi {

struct P2pState {
  // A singleton (no launcher) has no segment; its messages to itself go
  // through a private one of a single rank.
  std::unique_ptr<transport::Segment> own;
  std::unique_ptr<p2p::P2P> core;
  bool hooked = false;  // the engine drives it, and it completes the engine's requests
};

namespace {

// What a nonblocking call's request keeps alive until it is delivered.
struct Keep {
  Napi::Reference<Napi::Value> view;
  Napi::Reference<Napi::Value> status;
};

// The rank's P2P, made at its first call.
[[gnu::noinline]] P2pState& start_p2p(Napi::Env env, State& st, const char* call) {
  if (!st.initialized || st.finalized) {
    throw_mpi(env, ErrorClass::OTHER, std::string(call) + ": MPI is not initialized, or finalized already");
  }
  auto ps = std::make_shared<P2pState>();
  transport::Segment* seg = st.segment.get();
  if (!seg) {
    std::string error;
    ps->own.reset(transport::Segment::create(1, &error));
    if (!ps->own) throw_mpi(env, ErrorClass::INTERN, std::string(call) + ": no shared memory for messages: " + error);
    ps->own->close_fd();
    seg = ps->own.get();
  }
  ps->core = std::make_unique<p2p::P2P>(seg, st.world_rank);
  ps->core->start_thread();
  st.p2p = std::move(ps);
  return *st.p2p;
}

P2pState& state_of(Napi::Env env, State& st, const char* call) {
  if (st.p2p && st.initialized && !st.finalized) return *st.p2p;
  return start_p2p(env, st, call);
}

// The P2P, joined to the progress engine (for a nonblocking call).
p2p::P2P& hooked(Napi::Env env, const char* call) {
  P2pState& ps = state_of(env, State::of(env), call);
  if (!ps.hooked) {
    progress::Engine& engine = engine_for(env);
    p2p::P2P* core = ps.core.get();
    engine.set_external_hook([core](const progress::Op* op, uint64_t since) { core->drive(op, since); });
    core->set_sink([&engine](const std::shared_ptr<progress::Op>& op) { engine.complete_external(op); });
    ps.hooked = true;
  }
  return *ps.core;
}

// A communicator's messages carry its context and that context's
// generation. Communicators of one rank need no context (all share id 0),
// so theirs is their serial, marked by the top bit: not their handle,
// which a later communicator may get once this one is freed.
uint64_t key_of(const coll::Context& c) {
  if (c.size() > 1) return uint64_t(c.generation()) << 32 | c.id();
  return uint64_t(1) << 63 | c.serial();
}

// The call block (State::block, set by setCallBlock), in doubles:
//   [0] the communicator's handle   [1] the byte count
//   a send:    [2] the destination's index in the context, [3] the tag,
//              [4] the sender's rank in its own group (what the receiver
//              matches and reports);
//   a blocking receive: [4..7] its envelope, then its status (below).
// lib writes them just before the call; they are read once, on entry.
enum Slot { kComm = 0, kBytes = 1, kPeer = 2, kTag = 3, kSelf = 4, kStatus = 4 };

// Errors out of line, so that the checks on a call's way in stay a few
// compares the compiler inlines (a blocking send or receive of a few
// bytes is over in well under a microsecond).
[[noreturn, gnu::cold, gnu::noinline]] void fail(Napi::Env env, ErrorClass cls, const char* call, const char* what) {
  throw_mpi(env, cls, std::string(call) + ": " + what);
}

// What every call with a communicator starts from: the state, the call
// block and the communicator named in it.
struct Call {
  State& st;
  const double* block;
  coll::Context& c;
};

Call call_of(Napi::Env env, const char* call) {
  State& st = State::of(env);
  const double* b = st.call_block(env, call);
  const double h = b[kComm];
  if (!(h >= 0 && h < double(st.contexts.size())) || !st.contexts[size_t(h)]) {
    fail(env, ErrorClass::COMM, call, "the communicator is not valid (freed or finalized)");
  }
  return Call{st, b, *st.contexts[size_t(h)]};
}

size_t bytes_of(Napi::Env env, const Call& k, const char* call) {
  return size_value(env, k.block[kBytes], call, "byte count");
}

double* status_arg(const Napi::CallbackInfo& info, size_t i, const char* call) {
  return reinterpret_cast<double*>(need_bytes(info, i, 4 * sizeof(double), call, "status").data);
}

// What a receive or probe matches, and whose failure ends its wait: lib
// (lib/p2p/shm.ts) writes them where the status goes before the call, as
// [source, tag, first, count], the watched members being [first, first +
// count) of the context.
struct Envelope {
  p2p::Match match;
  p2p::Watch watch;
};

Envelope envelope(Napi::Env env, const coll::Context& c, double* status, const char* call) {
  const double source = status[0], tag = status[1], first = status[2], count = status[3];
  if (!(source >= -1 && source <= INT32_MAX && tag >= -1 && tag <= INT32_MAX)) {
    fail(env, ErrorClass::ARG, call, "source or tag out of range");
  }
  if (!(first >= 0 && count >= 0 && first <= c.size() && count <= c.size() - first)) {
    fail(env, ErrorClass::RANK, call, "source out of range");
  }
  Envelope e{p2p::Match{key_of(c), int32_t(source), int32_t(tag)},
             p2p::Watch{c.world_ranks() + uint32_t(first), uint32_t(count)}};
  // Read: from here on the array is the status, "no message" until one
  // matches (what a failed receive leaves).
  status[0] = -1;
  status[1] = -1;
  status[2] = 0;
  status[3] = 0;
  return e;
}

void write_status(double* out, const p2p::Status& st) {
  out[0] = st.source;
  out[1] = st.tag;
  out[2] = double(st.bytes);
  out[3] = double(st.handle);
}

struct SendArgs {
  uint64_t key;
  Bytes buf;
  size_t bytes;
  uint32_t dst;  // world rank
  int32_t tag;
  int32_t self;
};

// (view), the rest in the call block
SendArgs send_args(const Napi::CallbackInfo& info, const Call& k, const char* call) {
  Napi::Env env = info.Env();
  const size_t bytes = bytes_of(env, k, call);
  Bytes buf = need_bytes(info, 0, bytes, call, "buffer");
  const double peer = k.block[kPeer], tag = k.block[kTag], self = k.block[kSelf];
  if (!(peer >= 0 && peer < k.c.size())) fail(env, ErrorClass::RANK, call, "rank out of range");
  if (!(tag >= 0 && tag <= INT32_MAX && self >= 0 && self <= INT32_MAX)) {
    fail(env, ErrorClass::ARG, call, "tag or source out of range");
  }
  return SendArgs{key_of(k.c), buf, bytes, k.c.world_rank(uint32_t(peer)), int32_t(tag), int32_t(self)};
}

// p2pSend(view)
void Send(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Call k = call_of(env, "send");
  SendArgs a = send_args(info, k, "send");
  p2p::P2P& p = *state_of(env, k.st, "send").core;
  try {
    p.send(a.key, a.self, a.tag, a.dst, a.buf.data, a.bytes);
  } catch (const CoreError& e) {
    throw_core(env, e, nullptr);
  }
}

// p2pIsend(view) -> request id
Napi::Value Isend(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Call k = call_of(env, "isend");
  SendArgs a = send_args(info, k, "isend");
  p2p::P2P& p = hooked(env, "isend");
  auto keep = std::make_shared<Keep>();
  keep->view = Napi::Persistent(info[0]);
  std::shared_ptr<progress::Op> op = add_external(env, keep);
  p.isend(a.key, a.self, a.tag, a.dst, a.buf.data, a.bytes, p2p::Report{nullptr, op});
  return Napi::Number::New(env, double(op->id));
}

struct RecvArgs {
  Bytes buf;
  size_t bytes;
  p2p::Watch watch;
  p2p::Match match;
};

// (view), the rest in the call block; the envelope at `status`, where the
// status goes (the block's, or a nonblocking receive's own array).
RecvArgs recv_args(const Napi::CallbackInfo& info, const Call& k, double* status, const char* call) {
  Napi::Env env = info.Env();
  const size_t bytes = bytes_of(env, k, call);
  Bytes buf = need_bytes(info, 0, bytes, call, "buffer");
  Envelope e = envelope(env, k.c, status, call);
  return RecvArgs{buf, bytes, e.watch, e.match};
}

// p2pRecv(view): the status in the call block
void Recv(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Call k = call_of(env, "recv");
  double* status = k.st.block.data + kStatus;
  RecvArgs a = recv_args(info, k, status, "recv");
  p2p::P2P& p = *state_of(env, k.st, "recv").core;
  p2p::Status st;
  try {
    p.recv(a.match, a.buf.data, a.bytes, a.watch, st);
  } catch (const CoreError& e) {
    if (e.error_class() == ErrorClass::TRUNCATE) write_status(status, st);
    throw_core(env, e, nullptr);
  }
  write_status(status, st);
}

// p2pIrecv(view, status) -> request id
Napi::Value Irecv(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Call k = call_of(env, "irecv");
  double* status = status_arg(info, 1, "irecv");
  RecvArgs a = recv_args(info, k, status, "irecv");
  p2p::P2P& p = hooked(env, "irecv");
  auto keep = std::make_shared<Keep>();
  keep->view = Napi::Persistent(info[0]);
  keep->status = Napi::Persistent(info[1]);
  std::shared_ptr<progress::Op> op = add_external(env, keep);
  p.irecv(a.match, a.buf.data, a.bytes, a.watch, p2p::Report{status, op});
  return Napi::Number::New(env, double(op->id));
}

// p2pProbe(status holding the envelope, kind), the communicator in the call
// block: kind 0 probe, 1 iprobe (-> whether a message matched), 2 mprobe,
// 3 improbe (-> request id).
Napi::Value Probe(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const uint32_t kind = u32_arg(info, 1);
  const char* call = kind == 0 ? "probe" : kind == 1 ? "iprobe" : kind == 2 ? "mprobe" : "improbe";
  Call k = call_of(env, call);
  double* status = status_arg(info, 0, call);
  Envelope e = envelope(env, k.c, status, call);
  const p2p::Match& m = e.match;
  const p2p::Watch& w = e.watch;
  if (kind == 3) {
    p2p::P2P& p = hooked(env, call);
    auto keep = std::make_shared<Keep>();
    keep->status = Napi::Persistent(info[0]);
    std::shared_ptr<progress::Op> op = add_external(env, keep);
    p.improbe(m, w, p2p::Report{status, op});
    return Napi::Number::New(env, double(op->id));
  }
  p2p::P2P& p = *state_of(env, k.st, call).core;
  p2p::Status st;
  try {
    if (kind == 1) {
      if (!p.iprobe(m, st)) return Napi::Boolean::New(env, false);
      write_status(status, st);
      return Napi::Boolean::New(env, true);
    }
    st = kind == 2 ? p.mprobe(m, w) : p.probe(m, w);
  } catch (const CoreError& e) {
    throw_core(env, e, nullptr);
  }
  write_status(status, st);
  return env.Undefined();
}

// p2pMrecv(message, view, bytes, status)
void Mrecv(const Napi::CallbackInfo& info) {
  double handle = number_arg(info, 0);
  size_t bytes = size_arg(info, 2, "mrecv", "byte count");
  Bytes buf = need_bytes(info, 1, bytes, "mrecv", "buffer");
  double* status = status_arg(info, 3, "mrecv");
  p2p::P2P& p = *state_of(info.Env(), State::of(info.Env()), "mrecv").core;
  p2p::Status st;
  try {
    if (!(handle >= 1) || handle != double(uint64_t(handle))) {
      throw CoreError(ErrorClass::REQUEST, "mrecv: the message handle is not one mprobe or improbe gave");
    }
    p.mrecv(uint64_t(handle), buf.data, bytes, st);
  } catch (const CoreError& e) {
    if (e.error_class() == ErrorClass::TRUNCATE) write_status(status, st);
    throw_core(info.Env(), e, nullptr);
  }
  write_status(status, st);
}

}  // namespace

void forget_p2p(Napi::Env env, const coll::Context& c) {
  State& st = State::of(env);
  if (st.p2p) st.p2p->core->forget(key_of(c));
}

void kick_p2p(Napi::Env env) {
  State& st = State::of(env);
  if (st.p2p && st.p2p->hooked) st.p2p->core->kick();
}

void stop_p2p(Napi::Env env) {
  State& st = State::of(env);
  if (!st.p2p) return;
  st.p2p->core->stop_thread();
  if (st.p2p->hooked && st.progress) engine_for(env).set_external_hook({});
  st.p2p.reset();
}

void register_p2p(Napi::Env env, Napi::Object exports) {
  exports.Set("p2pSend", Napi::Function::New(env, Send, "p2pSend"));
  exports.Set("p2pIsend", Napi::Function::New(env, Isend, "p2pIsend"));
  exports.Set("p2pRecv", Napi::Function::New(env, Recv, "p2pRecv"));
  exports.Set("p2pIrecv", Napi::Function::New(env, Irecv, "p2pIrecv"));
  exports.Set("p2pProbe", Napi::Function::New(env, Probe, "p2pProbe"));
  exports.Set("p2pMrecv", Napi::Function::New(env, Mrecv, "p2pMrecv"));
}

}  // namespace nodempi::napi
