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
/// KV cache and the workspace are allocated once for `max_positions` positions. The KV cache holds
/// `max_batch` slots, one per sequence of a batched step ([slot][layer][kv_head][position]
/// [head_dim] f32); slot 0 is the cache of the single-sequence `step`. A batched step runs the
/// forward pass of all its sequences layer by layer, each matrix read once per step for all of
/// them (gemm), and every sequence's arithmetic is the single-sequence pass's, so sequence i of a
/// batch produces exactly the logits and tokens of a single-sequence run with its prompt.
/// The model must outlive the backend.
class CpuBackend final : public Backend {
 public:
  /// Throws decodebench::Error (exit 2) for max_positions < 1, threads < 1, or max_batch outside
  /// [1, kMaxBatch] (256).
  CpuBackend(const Model& model, int64_t max_positions, int threads, int64_t max_batch = 1);

  /// Host bytes the KV cache (max_batch slots of max_positions positions) and the workspace
  /// (including max_batch logit rows) take for this model.
  static int64_t workspace_bytes(const ModelConfig& config, int64_t max_positions,
                                 int64_t max_batch = 1);

  [[nodiscard]] std::string name() const override { return "cpu"; }
  [[nodiscard]] std::string device_name() const override;
  [[nodiscard]] int64_t max_positions() const override { return max_positions_; }
  [[nodiscard]] int64_t max_batch() const override { return max_batch_; }
  int32_t step(int32_t token, int64_t pos, StepPhases* phases) override;
  /// The logits of the most recent `step` (or of sequence 0 of the most recent step_batch).
  void logits(std::vector<float>& out) override;

  /// Runs `step`'s forward pass for each sequence i on KV slot i, all sequences together layer by
  /// layer; `phases` (launch = the forward pass, argmax = all argmaxes, total) covers the batch.
  /// Throws decodebench::Error (exit 2) as check_batch_inputs does (M = 0 or > max_batch(), spans
  /// of different sizes, a token or position out of range), before any slot is touched.
  void step_batch(std::span<const int32_t> tokens, std::span<const int64_t> positions,
                  std::span<int32_t> next, StepPhases* phases) override;
  /// Logits (vocab floats) of sequence `seq` of the most recent step_batch (seq 0 after a `step`).
  /// Throws decodebench::Error (exit 2) when seq is outside that step's batch.
  void logits_batch(int64_t seq, std::vector<float>& out) override;
  /// Eager only: throws decodebench::Error (exit 2) for graph mode (as set_exec_mode does) and for
  /// a batch outside [1, max_batch()].
  ExecReport set_exec_mode_batch(ExecMode mode, int64_t batch) override;

 private:
  /// The forward pass of tokens[i] at positions[i] on KV slot i, for every i (a batch of
  /// tokens.size() sequences, at most max_batch); logits into logits row i.
  void forward(std::span<const int32_t> tokens, std::span<const int64_t> positions);
  /// Layer l of that pass, on activation rows 0 .. positions.size() − 1.
  void layer(int64_t l, std::span<const int64_t> positions);

  const Model& model_;
  const ModelConfig& c_;
  int64_t max_positions_;
  int64_t max_batch_;
  int64_t last_batch_ = 1;  ///< sequences of the most recent step / step_batch
  ThreadPool pool_;
  std::vector<double> inv_freq_;
  std::vector<float> k_cache_, v_cache_;
  std::vector<float> logits_;  ///< max_batch rows of vocab floats; row i: sequence i
  std::vector<float> x_, xn_, q_, k_, v_, att_, proj_, gate_, up_, act_, scratch_;
};

}  // namespace decodebench::cpu
