// The Backend interface: one decode step of a model on one device, behind which the CPU reference
// and the CUDA backend sit. The decode loop (core/decode/) drives it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace decodebench {

/// Host-side phase durations of one decode step (ns, steady clock) and its GPU time (ms, CUDA
/// events). Filled only when phase timing is on; a phase that does not exist on a backend is 0.
struct StepPhases {
  int64_t h2d_ns = 0;     ///< issuing the async H2D copies of token id, position, seq_len
  int64_t launch_ns = 0;  ///< graph launch, or all eager kernel launches, returned
  int64_t wait_ns = 0;    ///< until the step's GPU work (before argmax) is complete
  int64_t argmax_ns = 0;  ///< argmax kernels + 4-byte D2H + synchronisation
  int64_t total_ns = 0;   ///< the whole step
  double gpu_ms = -1.0;   ///< CUDA-event time from before the forward pass to after argmax; <0: n/a
};

/// How a step is executed.
enum class ExecMode { kEager, kGraph };

/// What happened when a backend was asked for a mode; for graph mode, the capture outcome.
struct ExecReport {
  ExecMode mode = ExecMode::kEager;  ///< the mode the following steps run in
  bool capture_attempted = false;
  bool captured = false;
  std::string capture_mode;  ///< thread_local | global | relaxed
  std::string failed_call;   ///< API call that failed during capture ("" when none)
  std::string error_name;    ///< e.g. cudaErrorStreamCaptureUnsupported
  std::string error_message;
  std::string recovery;     ///< "", "recovered" (context healthy, eager fallback)
  double capture_ms = 0.0;  ///< time to capture and instantiate, ms
  int64_t graph_nodes = 0;  ///< nodes in the instantiated graph
};

/// A model placed on a device with its KV cache and workspace preallocated.
///
/// Contract (docs/architecture.md): `step` computes the logits for `token` at position `pos`,
/// appends K/V for `pos` to the KV cache, and returns the greedy argmax (ties → lowest index,
/// the first NaN wins). Positions must be < max_positions(). Steps at increasing positions form a
/// sequence; a step at position p overwrites the KV entries at p, so a sequence can be replayed
/// from any earlier position without a reset.
class Backend {
 public:
  virtual ~Backend() = default;

  /// "cpu" or "cuda".
  [[nodiscard]] virtual std::string name() const = 0;
  /// Human-readable device: CPU model and thread count, or GPU name.
  [[nodiscard]] virtual std::string device_name() const = 0;
  /// KV-cache capacity in positions, fixed at construction.
  [[nodiscard]] virtual int64_t max_positions() const = 0;

  /// Runs one decode step; returns the next token id. `phases` may be null (no phase timing, and
  /// then no extra synchronisation). Throws decodebench::Error for a position out of range.
  virtual int32_t step(int32_t token, int64_t pos, StepPhases* phases) = 0;

  /// Fills the KV cache for `tokens` at positions 0..n-1 and returns the argmax after the last.
  /// The default runs `step` per token.
  virtual int32_t prefill(std::span<const int32_t> tokens);

  /// Copies the logits (vocab floats) of the most recent step into `out`.
  virtual void logits(std::vector<float>& out) = 0;

  /// Selects eager or graph execution for the following steps. A CUDA backend captures its graph
  /// here (after warm-up) and, when capture fails, falls back to eager and says why in the report.
  /// The CPU backend supports eager only and throws a usage error for graph mode.
  virtual ExecReport set_exec_mode(ExecMode mode);
};

/// Throws decodebench::Error (exit 2) naming the rule when `pos` is outside [0, capacity) or
/// `token` outside [0, vocab): the checks every Backend::step does before touching its buffers.
void check_step_inputs(int32_t token, int64_t pos, int64_t vocab, int64_t capacity);

}  // namespace decodebench
