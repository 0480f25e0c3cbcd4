#include "core/datatype/registry.h"

#include <string>

#include "core/error.h"

namespace nodempi::datatype {

uint32_t Registry::add(std::shared_ptr<const Typemap> type) {
  uint32_t handle;
  if (!free_.empty()) {
    handle = free_.back();
    free_.pop_back();
    types_[handle - 1] = std::move(type);
  } else {
    types_.push_back(std::move(type));
    handle = uint32_t(types_.size());
  }
  ++live_;
  return handle;
}

const std::shared_ptr<const Typemap>& Registry::get(uint32_t handle) const {
  if (handle == 0 || handle > types_.size() || !types_[handle - 1]) {
    throw CoreError(ErrorClass::TYPE, "datatype handle " + std::to_string(handle) + " is not committed");
  }
  return types_[handle - 1];
}

void Registry::release(uint32_t handle) {
  if (handle == 0 || handle > types_.size() || !types_[handle - 1]) return;
  types_[handle - 1].reset();
  free_.push_back(handle);
  --live_;
}

}  // namespace nodempi::datatype
