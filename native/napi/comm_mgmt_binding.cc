// Creating and freeing communicators. lib/comm.ts runs the agreement (who
// is in the new communicator, in which order, which context) with
// collectives on the parent; these calls only take and return contexts.
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "core/transport/inbox.h"
#include "core/transport/slot_sets.h"
#include "napi/args.h"
#include "napi/comm_args.h"
#include "napi/progress.h"
#include "napi/state.h"

namespace nodempi::napi {
namespace {

// ctxAlloc(members) -> a context id from the pool, or -1 when exhausted.
// Called by the leader of each new communicator.
Napi::Value CtxAlloc(const Napi::CallbackInfo& info) {
  State& st = State::of(info.Env());
  uint32_t members = u32_arg(info, 0);
  int id = st.segment && members > 1 ? st.segment->alloc_context(members) : 0;
  return Napi::Number::New(info.Env(), id);
}

// ctxRelease(id): gives back a context nobody ended up using (creation
// failed on some member after the leader had taken it).
void CtxRelease(const Napi::CallbackInfo& info) {
  State& st = State::of(info.Env());
  if (st.segment) st.segment->release_context(u32_arg(info, 0));
}

// commCreate(ctxId, rank, worldRanks: Int32Array) -> handle.
Napi::Value CommCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  State& st = State::of(env);
  uint32_t ctx = u32_arg(info, 0), rank = u32_arg(info, 1);
  Bytes ranks = bytes_arg(info, 2, "comm create", "world ranks");
  size_t n = ranks.length / sizeof(int32_t);
  std::vector<uint32_t> world(n);
  for (size_t i = 0; i < n; ++i) {
    int32_t w;
    std::memcpy(&w, ranks.data + i * sizeof w, sizeof w);
    if (w < 0 || uint32_t(w) >= st.world_size) throw_mpi(env, ErrorClass::INTERN, "comm create: bad world rank");
    world[i] = uint32_t(w);
  }
  if (rank >= n || (n > 1 && (!st.segment || ctx == 0 || ctx >= transport::kContexts))) {
    throw_mpi(env, ErrorClass::INTERN, "comm create: inconsistent arguments");
  }
  transport::Segment* seg = n > 1 ? st.segment.get() : nullptr;
  // Reuse a freed handle so handles stay small.
  uint32_t h = 2;
  while (h < st.contexts.size() && st.contexts[h]) ++h;
  if (h == st.contexts.size()) st.contexts.emplace_back();
  st.contexts[h].reset(new coll::Context(seg, n > 1 ? ctx : 0, rank, std::move(world)));
  return Napi::Number::New(env, h);
}

// commFree(handle): waits for the communicator's queued operations, then
// releases it; the last member to free a context returns it to the pool.
void CommFree(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  State& st = State::of(env);
  uint32_t h = u32_arg(info, 0);
  if (h < 2 || h >= st.contexts.size() || !st.contexts[h]) {
    throw_mpi(env, ErrorClass::COMM, "free: the communicator is not valid (freed already, or predefined)");
  }
  retire_lane(env, h);  // its templates too
  coll::Context& c = *st.contexts[h];
  forget_p2p(env, c);
  if (c.segment() && c.size() > 1) c.segment()->release_context(c.id());
  st.contexts[h].reset();
}

// leaderExchange(peerWorldRank, tag, data: Int32Array) -> Int32Array: the
// two leaders of an intercommunicator swap their groups (and the context).
Napi::Value LeaderExchange(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  State& st = State::of(env);
  uint32_t peer = u32_arg(info, 0), tag = u32_arg(info, 1);
  Bytes b = bytes_arg(info, 2, "createIntercomm", "leader message");
  std::vector<int32_t> data(b.length / sizeof(int32_t));
  std::memcpy(data.data(), b.data, data.size() * sizeof(int32_t));
  if (!st.segment || peer >= st.world_size) throw_mpi(env, ErrorClass::RANK, "createIntercomm: the remote leader is not another rank of this job");
  std::vector<int32_t> got;
  try {
    got = transport::exchange(*st.segment, st.world_rank, peer, tag, data);
  } catch (const CoreError& e) {
    throw_mpi(env, e.error_class(), e.what());
  }
  Napi::Int32Array out = Napi::Int32Array::New(env, got.size());
  for (size_t i = 0; i < got.size(); ++i) out[i] = got[i];
  return out;
}

// slotSetsUsed() -> how many of its slot sets this rank has ever written:
// lets tests see that memory follows busy communicators, not live ones.
Napi::Value SlotSetsUsed(const Napi::CallbackInfo& info) {
  State& st = State::of(info.Env());
  return Napi::Number::New(info.Env(), st.segment ? st.segment->sets()->used() : 0);
}

}  // namespace

void register_comm_mgmt(Napi::Env env, Napi::Object exports) {
  exports.Set("ctxAlloc", Napi::Function::New(env, CtxAlloc, "ctxAlloc"));
  exports.Set("ctxRelease", Napi::Function::New(env, CtxRelease, "ctxRelease"));
  exports.Set("commCreate", Napi::Function::New(env, CommCreate, "commCreate"));
  exports.Set("commFree", Napi::Function::New(env, CommFree, "commFree"));
  exports.Set("leaderExchange", Napi::Function::New(env, LeaderExchange, "leaderExchange"));
  exports.Set("slotSetsUsed", Napi::Function::New(env, SlotSetsUsed, "slotSetsUsed"));
}

}  // namespace nodempi::napi
