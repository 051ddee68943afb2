// The Backend interface: one decode step of a model on one device, behind which the CPU reference
// and the CUDA backend sit. The decode loop (core/decode/) drives it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace decodebench {

/// Host-side phase durations of one decode step (ns, steady clock) and its GPU time (ms, CUDA
/// events). Filled only when phase timing is on; a phase that does not exist on a backend is 0.
struct StepPhases {
  int64_t h2d_ns = 0;  ///< issuing the async H2D copies of token id, position, seq_len (~0
                       ///< when the device holds them already: CudaBackendOptions::device_advance)
  int64_t launch_ns = 0;  ///< graph launch, or all eager kernel launches, returned
  int64_t wait_ns = 0;    ///< until the step's GPU work (before argmax) is complete
  int64_t argmax_ns = 0;  ///< argmax kernels + the token's way to the host + synchronisation
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

/// Which kernels a backend's batch-1 step runs: diagnostics for the result JSON
/// (`backend.kernels`), so a run says which GEMV kernel (and weight layout) it measured.
struct KernelMix {
  /// GEMV launches of one batch-1 step by kernel ("direct", "stream", "tiled", ...; the last
  /// step enqueued, eagerly or into a graph); empty when no batch-1 step ran or the backend does
  /// not tell (CPU).
  std::vector<std::pair<std::string, int64_t>> gemv_per_step;
  /// The same launches by kernel and form (cuda::gemv_form_name: "stream-tiled ring 8x2x2",
  /// "stream split 1x2", "stream per-warp", "mma presplit", "direct", ...), in order of first
  /// launch (the JSON object sorts them by name); each name starts with a gemv_per_step name,
  /// and the counts add up to gemv_per_step's.
  std::vector<std::pair<std::string, int64_t>> gemv_forms_per_step;
  int64_t tiled_matrices = 0;  ///< matrices on the device in the tiled layout
  /// Pre-split x' of the same step: standalone split kernels launched, and splits the attention
  /// kernel wrote with its output for the o projection (no kernel of their own).
  int64_t x_split_kernels = 0;
  /// Of those, the kernels that let the next kernel launch after their PDL wait, not at entry
  /// (cuda::split_trigger_after_wait; 0 without PDL).
  int64_t x_split_kernels_after_wait = 0;
  int64_t x_splits_in_attention = 0;
  /// The attention kernel's form in that step (cuda::attention_form_name: "cluster 2",
  /// "cluster-push 2", "merge 4", "block", "split-kv 4"); when layers ran different forms, each
  /// with its layer count (describe_attention_forms); empty when not told.
  std::string attention;
};

/// KernelMix::attention from the forms of one step's attention launches, counted per form in
/// order of first launch ({form, layers}): the form alone when every layer ran it ("cluster 4"),
/// else each with its layers ("cluster 4 (20 layers), cluster-push 4 (8 layers)"), since a layer
/// whose attention writes the o projection's x' split keeps the cluster merge while the others
/// push; "" for none.
std::string describe_attention_forms(std::span<const std::pair<std::string, int64_t>> forms);

/// Backend::enqueue_step's token for "the previous step's argmax, held by the device".
inline constexpr int32_t kTokenOnDevice = -1;
/// Steps Backend::enqueue_step may have in flight at once.
inline constexpr int kMaxStepsInFlight = 2;

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
  /// The kernels of a batch-1 step (KernelMix); empty by default.
  [[nodiscard]] virtual KernelMix kernel_mix() const { return {}; }

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

  /// The GPU's own time for one batch-1 decode step, µs: the step at `pos` fed `token` (its
  /// inputs copied once), its captured graph replayed `replays` times back to back with no host
  /// synchronisation between replays, CUDA-event time ÷ replays. A step's time minus this is the
  /// host's overhead per token (graph launch, synchronisation latency, any H2D copy). Rewrites
  /// the KV entries at `pos` as a step does (with the same token, the same values). Returns a
  /// negative value when the backend cannot tell: the CPU backend, eager mode, no captured graph.
  /// Throws decodebench::Error: exit 2 for replays < 1 or invalid token / pos (as `step`).
  virtual double replayed_step_gpu_us(int32_t token, int64_t pos, int replays);

  /// Starts a series of the GPU's idle times between consecutive batch-1 steps: the next step
  /// records none, each later one the time from the previous step's last kernel's end to its
  /// own first kernel's start, ns, read on the GPU's clock (the token's way to the host, the
  /// host's wake-up, its work between the steps, any H2D copy and the next launch). Issued on the
  /// backend's stream, so it takes effect before the next step; no synchronisation. The default
  /// (a backend that cannot tell, the CPU's) does nothing.
  virtual void begin_idle_series() {}

  /// The idle times recorded since begin_idle_series, ns, in step order (at most a capacity of
  /// the backend's, 4,096 for the CUDA backend); empty when the backend does not measure them.
  /// Synchronises with the device. Throws decodebench::Error (exit 1) on a device error.
  virtual std::vector<int64_t> idle_series_ns() { return {}; }

  // ---- launch-ahead decoding (batch 1) ---------------------------------------------------------
  // A greedy decode step needs the previous step's token, but when the device passes it on
  // (the argmax kernel writes the next step's inputs), the host can enqueue step n + 1 before step
  // n's token reaches it, so the GPU does not wait for the host between steps. At most
  // kMaxStepsInFlight steps are in flight; `step`, `logits`, replays, idle series and batched
  // steps need none in flight.

  /// Why this backend cannot launch steps ahead now, or "" when enqueue_step / finish_step work.
  /// The default: the backend runs each step to completion.
  [[nodiscard]] virtual std::string launch_ahead_unavailable() const;

  /// Enqueues the batch-1 step at `pos` without waiting for it. `token` >= 0 feeds that token
  /// (checked as `step` checks it; no step may be in flight then, as its inputs are copied from
  /// one host buffer); kTokenOnDevice feeds the argmax of the step enqueued just before, at
  /// pos − 1 (in flight or finished last), which the device holds. Throws decodebench::Error:
  /// exit 2 for a bad token or position or a kTokenOnDevice step that does not follow the last
  /// one; exit 1 when kMaxStepsInFlight steps are in flight or launch_ahead_unavailable() says why
  /// not (the default always throws).
  virtual void enqueue_step(int32_t token, int64_t pos);

  /// Waits for the oldest step in flight and returns its argmax. Throws decodebench::Error: exit 1
  /// when none is in flight (the default always throws) or on a device error.
  virtual int32_t finish_step();

  // ---- batched decode (issue 8) -------------------------------------------------------------
  // A backend built for max_batch() = B > 1 holds B independent KV caches ("slots"). step_batch
  // decodes M <= B sequences in lockstep: sequence i uses slot i. Slot 0 is also the KV cache of
  // the single-sequence `step`, so a backend decodes either one sequence or a batch, not both at
  // once. Sequence i of a batched run produces the same tokens as a single-sequence run with
  // the same prompt, up to near ties: the batched products differ from the GEMVs by f32
  // rounding only (the CPU backend is bit-identical).

  /// Sequences a step_batch may hold (KV-cache slots), fixed at construction; 1 by default.
  [[nodiscard]] virtual int64_t max_batch() const { return 1; }

  /// One decode step of M = tokens.size() sequences: sequence i takes tokens[i] at positions[i]
  /// in slot i; next[i] receives its greedy argmax (rules as `step`). One synchronisation for all
  /// M. `phases` as in `step` (whole step). Throws decodebench::Error (exit 2) when M is 0 or
  /// above max_batch(), the spans differ in length, or a token/position is out of range; a
  /// backend without batch support (max_batch() == 1) throws for M > 1. The default runs `step`
  /// for M == 1.
  virtual void step_batch(std::span<const int32_t> tokens, std::span<const int64_t> positions,
                          std::span<int32_t> next, StepPhases* phases);

  /// Fills the KV caches of M = prompts.size() sequences (equal lengths n >= 1) at positions
  /// 0..n-1 and writes each sequence's argmax after its last prompt token to next[i]. The default
  /// runs step_batch once per position.
  virtual void prefill_batch(std::span<const std::vector<int32_t>> prompts,
                             std::span<int32_t> next);

  /// Copies the logits (vocab floats) of sequence `seq` of the most recent step_batch (or, for
  /// seq 0, of the most recent step) into `out`. Throws decodebench::Error (exit 2) for a bad seq.
  /// The default serves seq 0 through `logits`.
  virtual void logits_batch(int64_t seq, std::vector<float>& out);

  /// Selects the execution mode for step_batch calls of exactly `batch` sequences (a CUDA backend
  /// captures one graph per batch size). The default accepts batch 1 and forwards to
  /// set_exec_mode.
  virtual ExecReport set_exec_mode_batch(ExecMode mode, int64_t batch);
};

/// Throws decodebench::Error (exit 2) naming the rule unless 1 <= tokens.size() <= max_batch and
/// positions and next have the same size; then checks every (token, position) pair as
/// check_step_inputs does.
void check_batch_inputs(std::span<const int32_t> tokens, std::span<const int64_t> positions,
                        std::span<const int32_t> next, int64_t max_batch, int64_t vocab,
                        int64_t capacity);

/// Throws decodebench::Error (exit 2) naming the rule when `pos` is outside [0, capacity) or
/// `token` outside [0, vocab): the checks every Backend::step does before touching its buffers.
void check_step_inputs(int32_t token, int64_t pos, int64_t vocab, int64_t capacity);

}  // namespace decodebench
