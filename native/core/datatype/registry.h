// Committed datatypes by handle, for one Node environment. Handles are small
// positive integers, reused after release. A Typemap is immutable and shared:
// an operation that holds the shared_ptr keeps using it after the handle is
// released (MPI lets a datatype be freed while communication using it is
// pending).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/datatype/typemap.h"

namespace nodempi::datatype {

class Registry {
 public:
  uint32_t add(std::shared_ptr<const Typemap> type);
  // Throws CoreError(TYPE) for an unknown or released handle.
  const std::shared_ptr<const Typemap>& get(uint32_t handle) const;
  // Releasing an unknown handle is a no-op.
  void release(uint32_t handle);
  size_t live() const { return live_; }

 private:
  std::vector<std::shared_ptr<const Typemap>> types_;  // index handle - 1
  std::vector<uint32_t> free_;
  size_t live_ = 0;
};

}  // namespace nodempi::datatype
