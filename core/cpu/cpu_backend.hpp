// The CPU reference backend: multi-threaded, f32 activations and accumulation.
#pragma once

#include <memory>
#include <vector>

#include "core/backend.hpp"
#include "core/cpu/thread_pool.hpp"
#include "core/model/model.hpp"

namespace decodebench::cpu {

/// Throws decodebench::Error (exit 1) unless every norm weight and bias of `model` is stored as
/// F32 (Model's contract; TensorView::f32() reads them directly).
void require_f32_vectors(const Model& model);

/// Decodes a Model on the CPU. Weights are read in place (GGUF mapping or synthetic buffers); the
/// KV cache ([layer][kv_head][position][head_dim] f32) and the workspace are allocated once for
/// `max_positions` positions. The model must outlive the backend.
class CpuBackend final : public Backend {
 public:
  /// Throws decodebench::Error (exit 2) for max_positions < 1 or threads < 1.
  CpuBackend(const Model& model, int64_t max_positions, int threads);

  /// Host bytes the KV cache and workspace take for this model and capacity.
  static int64_t workspace_bytes(const ModelConfig& config, int64_t max_positions);

  [[nodiscard]] std::string name() const override { return "cpu"; }
  [[nodiscard]] std::string device_name() const override;
  [[nodiscard]] int64_t max_positions() const override { return max_positions_; }
  int32_t step(int32_t token, int64_t pos, StepPhases* phases) override;
  void logits(std::vector<float>& out) override { out = logits_; }

 private:
  void layer(int64_t l, int64_t pos);

  const Model& model_;
  const ModelConfig& c_;
  int64_t max_positions_;
  ThreadPool pool_;
  std::vector<double> inv_freq_;
  std::vector<float> k_cache_, v_cache_;
  std::vector<float> x_, xn_, q_, k_, v_, att_, proj_, gate_, up_, act_, logits_, scratch_;
};

}  // namespace decodebench::cpu
