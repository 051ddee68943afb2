#include "core/backend.hpp"

#include "core/error.hpp"

namespace decodebench {

std::string describe_attention_forms(std::span<const std::pair<std::string, int64_t>> forms) {
  if (forms.size() == 1) return forms.front().first;
  std::string out;
  for (const auto& [form, layers] : forms) {
    if (!out.empty()) out += ", ";
    out += form + " (" + std::to_string(layers) + (layers == 1 ? " layer)" : " layers)");
  }
  return out;
}

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

double Backend::replayed_step_gpu_us(int32_t, int64_t, int replays) {
  if (replays < 1) throw usage_error("replays must be >= 1, got " + std::to_string(replays));
  return -1.0;  // no graph to replay
}

std::string Backend::launch_ahead_unavailable() const {
  return "the " + name() + " backend runs each step to completion";
}

void Backend::enqueue_step(int32_t, int64_t) {
  throw runtime_error("enqueue_step: " + launch_ahead_unavailable());
}

int32_t Backend::finish_step() {
  throw runtime_error("finish_step: " + launch_ahead_unavailable());
}

void Backend::step_batch(std::span<const int32_t> tokens, std::span<const int64_t> positions,
                         std::span<int32_t> next, StepPhases* phases) {
  if (tokens.size() != 1 || positions.size() != 1 || next.size() != 1) {
    throw usage_error("the " + name() + " backend decodes one sequence at a time (batch 1)");
  }
  next[0] = step(tokens[0], positions[0], phases);
}

void Backend::prefill_batch(std::span<const std::vector<int32_t>> prompts,
                            std::span<int32_t> next) {
  if (prompts.empty()) throw usage_error("prefill needs at least one sequence");
  if (next.size() != prompts.size()) {
    throw usage_error("prefill_batch: " + std::to_string(prompts.size()) + " prompts but " +
                      std::to_string(next.size()) + " outputs");
  }
  const size_t n = prompts[0].size();
  if (n == 0) throw usage_error("prefill needs at least one prompt token");
  for (const auto& p : prompts) {
    if (p.size() != n) {
      throw usage_error("batched prefill needs prompts of equal length (" + std::to_string(n) +
                        " vs " + std::to_string(p.size()) + " tokens)");
    }
  }
  std::vector<int32_t> tokens(prompts.size());
  std::vector<int64_t> positions(prompts.size());
  for (size_t t = 0; t < n; ++t) {
    for (size_t i = 0; i < prompts.size(); ++i) {
      tokens[i] = prompts[i][t];
      positions[i] = static_cast<int64_t>(t);
    }
    step_batch(tokens, positions, next, nullptr);
  }
}

void Backend::logits_batch(int64_t seq, std::vector<float>& out) {
  if (seq != 0) {
    throw usage_error("sequence " + std::to_string(seq) + " is outside the batch of the " + name() +
                      " backend (batch 1)");
  }
  logits(out);
}

ExecReport Backend::set_exec_mode_batch(ExecMode mode, int64_t batch) {
  if (batch != 1) {
    throw usage_error("the " + name() + " backend decodes one sequence at a time (batch 1)");
  }
  return set_exec_mode(mode);
}

void check_batch_inputs(std::span<const int32_t> tokens, std::span<const int64_t> positions,
                        std::span<const int32_t> next, int64_t max_batch, int64_t vocab,
                        int64_t capacity) {
  const auto m = static_cast<int64_t>(tokens.size());
  if (m < 1 || m > max_batch) {
    throw usage_error("a batched step holds 1 to " + std::to_string(max_batch) +
                      " sequences, got " + std::to_string(m));
  }
  if (positions.size() != tokens.size() || next.size() != tokens.size()) {
    throw usage_error("a batched step needs as many positions and outputs as tokens (" +
                      std::to_string(m) + ")");
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    check_step_inputs(tokens[i], positions[i], vocab, capacity);
  }
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
