// One `decodebench run`: RunConfig → Model → Backend → decode passes → RunReport.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/decode/decode_loop.hpp"
#include "core/error.hpp"
#include "core/model/model.hpp"
#include "core/run_config.hpp"
#include "core/stats/statistics.hpp"

namespace decodebench {

/// Bytes per token against bandwidth: achieved GB/s = bytes_per_token / median step time;
/// efficiency = achieved / measured streaming-read bandwidth of the same device and invocation.
/// For batch M the figure is the ideal of a batched step, the unique weight bytes of the model
/// read once for all M sequences, over the median step time (KV-cache reads are not counted).
/// The CUDA tensor-core products stream the weights once per 32 sequences and the GEMV loop (F32
/// weights) once per sequence, so beyond 32 sequences the efficiency is relative to that ideal,
/// not to the bytes actually moved.
struct Roofline {
  int64_t bytes_per_token = 0;
  double achieved_gbps = 0;
  double measured_gbps = 0;  ///< 0 when not measured (CPU backend; JSON: null)
  double efficiency = 0;     ///< 0 when not measured (JSON: null)
};

/// One pass with its statistics.
struct PassReport {
  PassResult pass;
  Summary tpot_ns;          ///< per-token latency (time per output token), ns
  double tokens_per_s = 0;  ///< timed steps / Σ step times (per sequence)
  /// Tokens of all sequences per second: batch / median step time (batch 1: 1 / median TPOT)
  double aggregate_tokens_per_s = 0;
  std::map<std::string, Summary> phases;  ///< h2d, launch, wait, argmax, total (ns), gpu (ms)
  Roofline roofline;
  /// The GPU's idle time between timed steps (PassResult::idle_ns), ns; empty when none was
  /// measured.
  std::optional<Summary> idle_ns;
  /// Host overhead per token, µs: everything outside the GPU's work (the token's way to the
  /// host, the host's wake-up and work, the graph launch, an H2D copy of the step's inputs where
  /// the device does not hold them already). The median of idle_ns where measured ("idle"), else
  /// replay_host_overhead_us ("replay"); empty when neither was measured (CPU, eager and
  /// phase-timing passes, batches).
  std::optional<double> host_overhead_us;
  /// "idle" or "replay": where host_overhead_us came from; empty with it.
  std::string host_overhead_method;
  /// Median TPOT − the GPU's own time of a step (PassResult::gpu_step_us: its graph replayed back
  /// to back), µs: the round-15 figure, kept as a cross-check; a difference of two figures taken
  /// minutes apart, so it moves with the GPU's clocks (a power-capped GPU). Empty when
  /// gpu_step_us was not measured.
  std::optional<double> replay_host_overhead_us;
};

/// How the warning (and RunReport::backend_fallback) of backend auto without a usable GPU begins:
/// "no usable CUDA device (<reason>); using the cpu backend".
inline constexpr std::string_view kNoCudaDeviceWarning = "no usable CUDA device";

/// Everything a run produced, for the terminal report and the result JSON.
struct RunReport {
  RunConfig config;
  ModelConfig model_config;
  ModelInfo model_info;
  std::string tokenizer_kind;  ///< "" for synthetic models
  std::string backend;         ///< "cpu" / "cuda"
  /// Why --backend auto decodes on the CPU ("no usable CUDA device (<reason>)", "this build has no
  /// CUDA backend"); "" when the backend was named (--backend cpu|cuda) or auto found a GPU.
  std::string backend_fallback;
  std::string device;
  KernelMix kernels;  ///< the backend's batch-1 kernels after the passes (empty for the CPU)
  nlohmann::json host_environment;
  nlohmann::json gpu_environment;        ///< before the passes; null for the CPU backend
  nlohmann::json gpu_environment_after;  ///< after the passes (clocks, throttling, temperature)
  /// Per-round GPU telemetry (PassResult::telemetry): asked for on the CUDA backend; when the
  /// device could not be read, why not.
  bool telemetry_asked = false;
  std::string telemetry_unavailable;
  std::vector<int32_t> prompt_ids;  ///< the prompt (of sequence 0 when batched)
  /// The prompt of every sequence (config.batch entries, all of one length; entry 0 = prompt_ids)
  std::vector<std::vector<int32_t>> sequence_prompts;
  int64_t load_ns = 0;   ///< model load / generation
  int64_t setup_ns = 0;  ///< backend construction (upload, allocation)
  int64_t prefill_ns = 0;
  std::vector<PassReport> passes;
  std::string generated_text;               ///< decoded ids of the first timed pass (GGUF models)
  std::optional<bool> graph_matches_eager;  ///< --graph both
  /// Per execution mode ("eager", "graph", "cpu"): median TPOT with phase timing − without, ns.
  std::map<std::string, double> phase_timing_overhead_ns;
  double measured_bandwidth_gbps = 0;  ///< 0 when not measured (CPU backend; JSON: null)
  std::vector<std::string> warnings;
  ExitCode exit_code = ExitCode::kOk;  ///< kVerification when a check failed under --keep-going
};

/// The statistics of one pass: TPOT summary, tokens/s, phases, roofline (without the measured
/// bandwidth, which the run adds), and the host overhead per token (PassReport::host_overhead_us:
/// the median of pass.idle_ns, else median TPOT − pass.gpu_step_us, where measured).
PassReport make_pass_report(PassResult pass, int64_t bytes_per_token);

/// Progress messages for the terminal (may be empty).
using ProgressFn = std::function<void(const std::string&)>;
/// Called after every timed step: (pass label, steps done, steps in the round).
using StepProgressFn = std::function<void(const std::string&, int64_t, int64_t)>;

/// How a run talks to its user while it runs; every member may be empty.
struct RunCallbacks {
  ProgressFn progress;  ///< what the run is doing now ("prefill of 32 tokens")
  StepProgressFn step;  ///< after every timed step
  ProgressFn warning;   ///< each warning the moment it arises (also kept in RunReport)
};

/// The seed of sequence `sequence`'s synthetic prompt in a batched run (--prompt-tokens):
/// seed + sequence · 0x9E3779B97F4A7C15 (mod 2^64), so sequence 0 uses the run's seed and gets the
/// prompt of a batch-1 run; the prompt is synthetic_prompt(prompt_tokens, vocab, that seed).
uint64_t sequence_prompt_seed(uint64_t seed, int64_t sequence);

/// Executes a resolved run. Throws decodebench::Error: exit 2 for bad input (model file, prompt
/// out of vocabulary, context exceeded), 3 when memory is insufficient (both numbers in the
/// message) or no CUDA device exists for --backend cuda, 4 for a verification failure (unless
/// --keep-going, then report.exit_code says it).
/// With config.batch M > 1 the backend is built with M KV-cache slots, prefilled with M prompts
/// (prefill_batch; synthetic prompts per sequence from sequence_prompt_seed, an explicit or text
/// prompt shared by all, with a warning), and each pass decodes them in lockstep (run_pass).
RunReport execute_run(const RunConfig& config, const RunCallbacks& callbacks = {});

/// The pass a run is summarised by: the fastest pass without phase timing (phase timing adds
/// synchronisation), or the first pass when every pass had it. Throws decodebench::Error (exit
/// 1) for a report without passes.
const PassReport& headline_pass(const RunReport& report);

/// One line that says what the run found: the fastest pass's tokens/s and TPOT, its share of the
/// measured bandwidth roofline (CUDA), what bounds it (launch/latency vs bandwidth, from the graph
/// node count and the phase split when available), and the graph speed-up over eager.
std::string run_verdict(const RunReport& report);

/// A warning when a timed pass's step times (ns, in step order) hold a stretch of slow steps:
/// at least 20 steps, of which max(3, 5%) took more than 5% longer than the median, and a mean
/// more than 1% above the median (tokens/s, from the mean, then understates the median TPOT).
/// Seen on the H200 as a run of ~30 steps 5-15% slow in one configuration (docs/performance.md,
/// round 8). Empty when the pass looks steady. `label` names the pass ("graph", ...). Step
/// time can also grow with the context; a run whose steps slow down that way may be named too.
std::string slow_steps_warning(const std::string& label, const std::vector<int64_t>& samples_ns);

/// The `tool` object of every document this build writes ({name, version, git_sha, build_type,
/// compiler, cuda, cuda_compiler}).
nlohmann::json tool_json();

/// The result document (docs/result.schema.json) of a run.
nlohmann::json result_json(const RunReport& report);

/// A model.shape field that a run's configuration key holds, with the text before its value in
/// the key's shape ("28x3584/h28kv4/ffn18944/v152064": layers, hidden, heads, kv_heads, ffn,
/// vocab). run_key builds the shape from this list and compare leaves these fields out of the
/// settings it tells apart besides the key.
struct KeyShapeField {
  const char* name;    ///< the field of model.shape
  const char* prefix;  ///< the text before its value in the key's shape
};

/// The fields of the configuration key's shape, in order.
inline constexpr KeyShapeField kKeyShapeFields[] = {{"layers", ""},  {"hidden", "x"},
                                                    {"heads", "/h"}, {"kv_heads", "kv"},
                                                    {"ffn", "/ffn"}, {"vocab", "/v"}};

/// Version of the result JSON layout; bump on incompatible changes.
inline constexpr const char* kResultSchemaVersion = "1.0";

}  // namespace decodebench
