// Errors raised by the core. The N-API layer turns them into MPIError with
// the same error class; the core itself never sees V8.
#pragma once
#include <stdexcept>
#include <string>

namespace nodempi {

// Numbering shared with lib/errors.ts (errorClass). Do not reorder.
enum class ErrorClass : int {
  SUCCESS = 0, BUFFER, COUNT, TYPE, TAG, COMM, RANK, ROOT, GROUP, OP, ARG,
  TRUNCATE, REQUEST, OTHER, INTERN, PROC_FAILED, NOT_SAME
};

class CoreError : public std::runtime_error {
 public:
  CoreError(ErrorClass cls, const std::string& message) : std::runtime_error(message), cls_(cls) {}
  ErrorClass error_class() const { return cls_; }

 private:
  ErrorClass cls_;
};

}  // namespace nodempi
