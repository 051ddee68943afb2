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

void check_step_inputs(int32_t token, int64_t pos, int64_t vocab, int64_t capacity) {
  if (pos < 0 || pos >= capacity) {
    throw usage_error("position " + std::to_string(pos) + " is outside the KV-cache capacity of " +
                      std::to_string(capacity) + " positions");
  }
  if (token < 0 || token >= vocab) {
    throw usage_error("token id " + std::to_string(token) + " is outside the vocabulary (" +
                      std::to_string(vocab) + " tokens)");
  }
}

}  // namespace decodebench
