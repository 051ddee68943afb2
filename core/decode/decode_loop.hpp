// The decode loop: warm-up, then N timed greedy decode steps on a Backend, with optional
// verification of every step against the CPU.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/backend.hpp"
#include "core/telemetry.hpp"

namespace decodebench {

/// What one pass over the decode steps does.
struct PassSpec {
  std::string label;  ///< "eager", "graph", "cpu", ...
  ExecMode mode = ExecMode::kEager;
  int32_t first_token = 0;  ///< token fed to the first step (the prefill's argmax)
  int64_t start_pos = 0;    ///< position of the first step (the prompt length)
  int64_t tokens = 0;       ///< timed steps
  int64_t warmup = 0;       ///< untimed steps before timing, from the same start
  /// ... and at least this long, s: more steps, at positions cycling over the first
  /// max(warmup, tokens) of the pass (all within the capacity the pass needs anyway).
  double warmup_time_s = 0;
  bool stateless = false;     ///< every step at position 0 (debug: isolates KV/position bugs)
  bool phase_timing = false;  ///< ask the backend for per-phase times
  std::function<bool(int32_t)> is_end_of_generation;  ///< batch 1: stop early when true (or empty)
  bool verify_argmax = false;  ///< download logits each step and compare with a CPU argmax
  bool keep_going = false;     ///< continue after an argmax mismatch
  int64_t verify_tokens = 0;   ///< compare logits with `reference` for the first N steps
  /// CPU backend with the same prompt prefilled (batch > 1: the same prompts, prefill_batch)
  Backend* reference = nullptr;
  /// Sequences decoded in lockstep. 1: Backend::step per token; M > 1: Backend::step_batch with
  /// `first_tokens` (M entries, the prefill_batch argmaxes) and every sequence at the same
  /// position. A batched pass ignores is_end_of_generation: every sequence decodes `tokens` steps.
  int64_t batch = 1;
  std::vector<int32_t> first_tokens;  ///< batch > 1: token fed to each sequence's first step
  /// Repeat rounds of `tokens` steps (same positions, same tokens) until at least this much timed
  /// time has accumulated, s (0 = one round).
  double min_time_s = 0;
  /// Repeat rounds until the relative noise of the median TPOT (half-width of its 95% CI divided
  /// by the median, Summary::median_noise; judged from kMinSamplesForMedianCi samples on) is at
  /// most this fraction (0 = off) ...
  double max_noise = 0;
  /// ... or until the repetition has run this long, wall clock from the end of the first round,
  /// s (untimed work between steps counts, so the budget bounds the run; the first round's
  /// verification does not), and at least min_time_s of steps are timed.
  double max_time_s = 30;
  /// Called after every timed step with (steps done, steps planned in this round); may be empty.
  std::function<void(int64_t, int64_t)> on_step;
  /// Read before the first timed round and after each round (outside the timed steps) into
  /// PassResult::telemetry; null: no telemetry.
  GpuTelemetry* telemetry = nullptr;
  /// > 0 (batch 1): after the timed rounds, the GPU's own time of the middle timed step,
  /// Backend::replayed_step_gpu_us with this many replays, into PassResult::gpu_step_us.
  int gpu_step_replays = 0;
  /// Batch 1: the GPU's idle time before each timed step (Backend::begin_idle_series /
  /// idle_series_ns), a series per round, into PassResult::idle_ns. A step's idle time counts
  /// only when nothing but the loop's own bookkeeping ran since the previous timed step (its
  /// step-time record, `on_step`): not before a round's first step, nor after a step whose logits
  /// were verified. Not for a graph pass whose capture failed (it runs eagerly: the GPU then
  /// also waits inside each step for the launches, which gaps between steps do not show).
  bool measure_idle = false;
  /// Batch 1: launch each timed step before the previous step's token reaches the host
  /// (Backend::enqueue_step with kTokenOnDevice, then finish_step), so the GPU does not wait for
  /// the host between steps; a step's sample is then the time between the host's receipts of
  /// two consecutive tokens (a round's first: from its launch), which includes the loop's own
  /// work between steps. Meant for graph passes: where the host is slower than the GPU (eager
  /// launches), a step finishes while the next is still being launched and that time no longer
  /// measures one step. Not where the host must act between steps (phase timing; verification,
  /// for the whole pass; --stateless), nor for a graph pass whose capture failed (it runs
  /// eagerly), nor where the backend cannot (Backend::launch_ahead_unavailable):
  /// PassResult::launch_ahead_off says why. Warm-up steps run one at a time. Exceptions leave no
  /// step in flight (the loop finishes them first).
  bool launch_ahead = false;
  /// A graph pass that must not fall back to eager execution (--graph on): a failed capture
  /// throws (capture_failure_text, exit 1) before the first step, not after a whole eager pass.
  bool require_graph = false;
};

/// "graph capture failed: CALL failed with ERROR (MESSAGE); the context recovered (...)": the
/// error of a --graph on pass whose capture failed (ExecReport's failed_call, error_name and
/// error_message).
std::string capture_failure_text(const ExecReport& exec);

/// Why a pass stopped taking samples.
struct StoppingReport {
  std::string rule;         ///< "tokens" (one round), "min_time", "noise", "time_budget", "eos"
  int64_t rounds = 0;       ///< rounds of `tokens` steps run
  double timed_s = 0;       ///< Σ step times, s
  double median_noise = 0;  ///< relative noise of the median when it stopped
};

/// An argmax mismatch: the backend's id vs the CPU argmax of the backend's own logits.
struct ArgmaxMismatch {
  int64_t sequence = 0;  ///< sequence of a batched pass (0 for batch 1)
  int64_t step = 0;
  int64_t position = 0;
  int32_t backend_id = 0;
  int32_t cpu_id = 0;
  float backend_logit = 0;  ///< logit of backend_id
  float cpu_logit = 0;      ///< logit of cpu_id
  float margin = 0;         ///< top logit minus the runner-up
  std::vector<std::pair<int32_t, float>> top10;
};

/// Logits of one step compared with the CPU reference backend.
struct LogitsCheck {
  int64_t sequence = 0;  ///< sequence of a batched pass (0 for batch 1)
  int64_t step = 0;
  double max_abs_error = 0;
  double max_rel_error = 0;  ///< max_abs_error / max |reference logit|
  int32_t backend_id = 0;
  int32_t reference_id = 0;
  bool argmax_agrees = true;
  float reference_margin = 0;  ///< reference top-1 minus top-2 logit
  float reference_top = 0;     ///< reference top-1 logit
  float backend_margin = 0;    ///< backend top-1 minus top-2 logit
};

/// Everything one pass produced.
struct PassResult {
  PassSpec spec;
  ExecReport exec;
  std::vector<int32_t> ids;  ///< the input token and each step's output: tokens + 1 ids
  /// The ids of every sequence (batch entries; entry 0 equals `ids`), first round.
  std::vector<std::vector<int32_t>> sequence_ids;
  /// Per timed step, steady clock around Backend::step (batch > 1: around one step_batch of all
  /// sequences; launched ahead: between the host's receipts of consecutive tokens)
  std::vector<int64_t> samples_ns;
  std::vector<StepPhases> phases;  ///< per timed step when phase timing was on
  int64_t wall_ns = 0;             ///< whole timed loop
  int64_t warmup_steps = 0;        ///< untimed steps run (spec.warmup, more with warmup_time_s)
  bool stopped_at_end_of_generation = false;
  int64_t argmax_checked = 0;
  std::vector<ArgmaxMismatch> argmax_mismatches;
  std::vector<LogitsCheck> logits_checks;
  StoppingReport stopping;
  std::vector<RoundTelemetry> telemetry;  ///< per timed round when spec.telemetry was set
  /// The GPU's own time of one step (spec.gpu_step_replays), µs; < 0 when not measured or the
  /// backend cannot tell (CPU, eager mode).
  double gpu_step_us = -1.0;
  int64_t gpu_step_position = -1;  ///< the position it was measured at
  /// The GPU's idle time before each timed step that counts (spec.measure_idle), ns, in step
  /// order across rounds; empty when not measured or the backend cannot tell (CPU).
  std::vector<int64_t> idle_ns;
  /// Whether the timed steps were launched ahead (spec.launch_ahead, and nothing stood against
  /// it); when asked for but not done, launch_ahead_off says why ("" otherwise).
  bool launched_ahead = false;
  std::string launch_ahead_off;
};

/// Runs one pass: selects the execution mode (capturing a graph if asked), runs `warmup` untimed
/// steps from `start_pos`, then `tokens` timed steps from `start_pos` again (the warm-up's KV
/// entries are overwritten, so the tokens do not depend on the warm-up). With `min_time_s` or
/// `max_noise`, further rounds repeat the same steps and add samples (ids and verification come
/// from the first round); `stopping` says which rule ended the pass.
/// With `batch` M > 1 the same happens in lockstep through set_exec_mode_batch(mode, M) and
/// step_batch: one sample per step of all M sequences, verification of every sequence
/// (logits_batch), no end-of-generation stop.
/// Throws decodebench::Error with ExitCode::kVerification on an argmax mismatch unless
/// `keep_going`; exit 2 when `first_tokens` does not hold `batch` ids; backend errors propagate.
PassResult run_pass(Backend& backend, const PassSpec& spec);

/// The ids of the `k` largest logits, largest first (ties → lower id first).
std::vector<std::pair<int32_t, float>> top_k(const std::vector<float>& logits, int k);

}  // namespace decodebench
