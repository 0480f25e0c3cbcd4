// Registration only: each Node environment gets its own State.
#include <napi.h>

#include "napi/progress.h"
#include "napi/state.h"

namespace {

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  env.SetInstanceData(new nodempi::napi::State);
  nodempi::napi::register_runtime(env, exports);
  nodempi::napi::register_comm(env, exports);
  nodempi::napi::register_vcoll(env, exports);
  nodempi::napi::register_datatype(env, exports);
  nodempi::napi::register_progress(env, exports);
  nodempi::napi::register_comm_mgmt(env, exports);
  nodempi::napi::register_launcher(env, exports);
  nodempi::napi::register_local(env, exports);
  nodempi::napi::register_memory(env, exports);
  nodempi::napi::register_mpi(env, exports);
  nodempi::napi::register_p2p(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(NODE_GYP_MODULE_NAME, Init)
