// Datatype entry points (being written; this placeholder only registers the
// module so the addon links).
#include "napi/state.h"

namespace nodempi::napi {

void register_datatype(Napi::Env env, Napi::Object exports) {}

}  // namespace nodempi::napi
