#include "core/backend.hpp"

#include "core/error.hpp"

namespace decodebench {

int32_t Backend::prefill(std::span<const int32_t> tokens) {
  if (tokens.empty()) throw usage_error("prefill needs at least one prompt token");
  int32_t next = 0;
  for (size_t i = 0; i < tokens.size(); ++i)
    next = step(tokens[i], static_cast<int64_t>(i), nullptr);
  return next;
}

ExecReport Backend::set_exec_mode(ExecMode mode) {
  if (mode == ExecMode::kGraph) {
    throw usage_error("graph replay needs the cuda backend; the " + name() +
                      " backend runs eagerly (use --graph off)");
  }
  return ExecReport{};
}

}  // namespace decodebench
