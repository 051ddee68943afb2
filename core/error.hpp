// The one error type of decodebench: every failure that reaches the user carries an exit code.
#pragma once

#include <stdexcept>
#include <string>

namespace decodebench {

/// Process exit codes, documented in the README and in `decodebench --help`.
enum class ExitCode : int {
  kOk = 0,            ///< success (compare: no regression)
  kRuntime = 1,       ///< runtime failure (compare: a regression was found)
  kUsage = 2,         ///< bad flags, invalid shape, malformed or unsupported GGUF, schema mismatch
  kResources = 3,     ///< no CUDA device, driver too old, not enough host or device memory
  kVerification = 4,  ///< GPU argmax or logits disagree with the CPU
  kContextUnusable = 5  ///< the CUDA context is unusable: a failed capture or a kernel fault
};

/// An error with a message naming the input, the broken rule and where (flag, file offset, tensor),
/// and the exit code that `app/` maps it to. Thrown by every layer; caught only in `app/main.cpp`.
class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  [[nodiscard]] ExitCode code() const noexcept { return code_; }

 private:
  ExitCode code_;
};

/// An input decodebench does not support, though it may be valid (another architecture, tensor
/// type or tokenizer): exit 2 like any input error; `inspect` tells it from a broken file.
class UnsupportedError : public Error {
 public:
  explicit UnsupportedError(const std::string& message) : Error(ExitCode::kUsage, message) {}
};

/// Shorthand for an unsupported input (exit 2).
[[nodiscard]] inline UnsupportedError unsupported_error(const std::string& message) {
  return UnsupportedError(message);
}

/// Shorthand for a usage or input error (exit 2).
[[nodiscard]] inline Error usage_error(const std::string& message) {
  return Error(ExitCode::kUsage, message);
}

/// Shorthand for a resource error (exit 3).
[[nodiscard]] inline Error resource_error(const std::string& message) {
  return Error(ExitCode::kResources, message);
}

/// Shorthand for a runtime failure (exit 1).
[[nodiscard]] inline Error runtime_error(const std::string& message) {
  return Error(ExitCode::kRuntime, message);
}

}  // namespace decodebench
