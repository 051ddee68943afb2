// RunOptions (what the user typed) → RunConfig (every parameter resolved, with its origin).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/model/config.hpp"
#include "core/model/weight_scheme.hpp"
#include "core/quant/weight_type.hpp"

namespace decodebench {

/// Where a resolved parameter's value came from (reported in the JSON `config` section).
enum class Origin { kDefault, kPreset, kFlag, kModelFile };
const char* origin_name(Origin origin);

enum class BackendKind { kAuto, kCpu, kCuda };
enum class GraphMode { kAuto, kOn, kOff, kBoth };
enum class CaptureMode { kThreadLocal, kGlobal, kRelaxed };
enum class CaptureFault { kNone, kAlloc, kLegacySync, kHostSync, kEventQuery, kDeviceSync };
/// CUDA device layout of the quantized matrices whose batch-1 GEMVs run on a pre-split x':
/// kAuto = the tiled layout (core/quant/tiled_layout.hpp) for the types whose steps measured
/// faster in it on the H200 (Q8_0; Q4_0 on sm_90, where the stream-tiled kernel reads it), GGUF
/// blocks for the others; kTiled = the tiled layout for every type it holds (Q4_0, Q4_1, Q8_0,
/// Q4_K); kGguf = GGUF blocks.
enum class WeightLayout { kAuto, kTiled, kGguf };

const char* backend_kind_name(BackendKind kind);
const char* graph_mode_name(GraphMode mode);
const char* capture_mode_name(CaptureMode mode);
const char* capture_fault_name(CaptureFault fault);

/// The `run` command's inputs as typed: a field is set only when the flag was given.
/// Enumerations arrive as strings and are checked during resolution.
struct RunOptions {
  // Model selection.
  std::optional<std::string> preset;
  std::optional<std::string> model_path;
  // Synthetic shape.
  std::optional<int64_t> layers, hidden, heads, kv_heads, head_dim, ffn, vocab, context_length;
  std::optional<double> rope_theta, rms_eps;
  std::optional<bool> tied_embeddings;
  std::optional<bool> qkv_bias;
  std::optional<std::string> dtype;
  std::optional<int64_t> seed;
  // Prompt and decode.
  std::optional<int64_t> prompt_tokens;
  std::optional<std::string> prompt_ids;  ///< "1,2,3"
  std::optional<std::string> prompt;      ///< text (GGUF models)
  std::optional<int64_t> tokens;
  std::optional<int64_t> warmup;
  std::optional<double> warmup_time;  ///< s
  std::optional<bool> ignore_eos;
  std::optional<bool> stateless;
  std::optional<int64_t> batch;  ///< sequences decoded in lockstep
  // Execution.
  std::optional<std::string> backend;
  std::optional<int64_t> threads;
  std::optional<std::string> graph;
  std::optional<std::string> capture_mode;
  std::optional<std::string> inject_capture_fault;
  std::optional<bool> phase_timing;
  std::optional<std::string> fusion;         ///< on | off
  std::optional<std::string> pdl;            ///< on | off
  std::optional<std::string> launch_ahead;   ///< on | off
  std::optional<std::string> weight_layout;  ///< auto | tiled | gguf
  // Stopping rules.
  std::optional<double> min_time;   ///< s
  std::optional<double> max_noise;  ///< percent
  std::optional<double> max_time;   ///< s
  // Verification.
  std::optional<bool> verify_argmax;
  std::optional<int64_t> verify;  ///< compare logits with the CPU for the first N tokens
  std::optional<bool> keep_going;
  // Output.
  std::optional<std::string> json_path;
};

/// One resolved parameter for the report.
struct ResolvedParam {
  std::string name;
  nlohmann::json value;
  Origin origin = Origin::kDefault;
};

/// Every parameter of a run, resolved. Synthetic shape fields are meaningful only when
/// `model_path` is empty; for a GGUF model the shape comes from the file.
struct RunConfig {
  std::string model_path;  ///< empty → synthetic model
  std::string preset;      ///< preset the synthetic shape is based on
  ModelConfig shape;       ///< synthetic shape
  /// Storage of the synthetic weights: one type, or the q4_k_m mix.
  WeightScheme dtype = WeightType::kBF16;
  uint64_t seed = 0;

  int64_t prompt_tokens = 0;        ///< synthetic prompt length (ids drawn from the seed)
  std::vector<int32_t> prompt_ids;  ///< explicit prompt ids (override prompt_tokens)
  std::string prompt_text;          ///< text prompt (GGUF models with a tokenizer)
  int64_t tokens = 0;               ///< decode steps timed
  int64_t warmup = 0;               ///< untimed decode steps before timing
  /// Warm up for at least this long as well, s (the steps cycle over the warm-up positions): a
  /// GPU runs its first few hundred ms of load at other clocks than later (H200: ~0.35-0.5 s in,
  /// docs/performance.md round 12). 0 = steps only.
  double warmup_time_s = 0;
  bool ignore_eos = false;
  bool stateless = false;
  /// Sequences decoded in lockstep (1..kMaxBatch), each with its own prompt, position and KV
  /// cache; 1 = the single-sequence step path.
  int64_t batch = 1;

  BackendKind backend = BackendKind::kAuto;
  int threads = 1;
  GraphMode graph = GraphMode::kAuto;
  CaptureMode capture_mode = CaptureMode::kThreadLocal;
  CaptureFault inject_fault = CaptureFault::kNone;
  bool phase_timing = false;
  bool fusion = true;  ///< CUDA: fused kernels (norm in GEMV, stacked QKV/gate-up, RoPE+KV)
  bool pdl = true;     ///< CUDA: programmatic dependent launch
  /// CUDA graph passes at batch 1: each step launched before the previous token reaches the
  /// host (PassSpec::launch_ahead)
  bool launch_ahead = true;
  WeightLayout weight_layout = WeightLayout::kAuto;  ///< CUDA: device layout of quantized GEMVs

  double min_time_s = 0;   ///< repeat rounds until this much timed time (0 = one round)
  double max_noise = 0;    ///< repeat until the median's relative noise ≤ this fraction (0 = off)
  double max_time_s = 30;  ///< budget of the repetition, s

  bool verify_argmax = false;
  int64_t verify_tokens = 0;
  bool keep_going = false;

  std::string json_path;  ///< "" = no JSON, "-" = stdout

  std::vector<ResolvedParam> params;  ///< every parameter with its origin, in a stable order
};

/// The largest --batch: KV-cache slots a backend may hold for batched decode.
inline constexpr int64_t kMaxBatch = 256;

/// The preset the synthetic shape starts from when neither --preset nor --model is given.
inline constexpr const char* kDefaultPreset = "qwen2.5-7b";

/// Resolves options: defaults < preset < flags. Checks every value and cross-flag rule (shape rules
/// of validate(), --prompt-ids syntax and range, tokens ≥ 1, prompt + tokens + warmup within the
/// context length, enumerations, flags that only apply to one model kind).
/// `hardware_threads` is the default for --threads.
/// Throws decodebench::Error (exit 2) naming the flag and the rule.
RunConfig resolve_run_config(const RunOptions& options, int hardware_threads);

/// Checks a --threads value (CPU threads, 1..1024) for every command that takes one.
/// Throws decodebench::Error (exit 2): "--threads must be in [1, 1024] (got N)".
void check_thread_count(int64_t threads);

/// Parses a --backend value for every command that takes one: auto, cpu or cuda. Throws
/// decodebench::Error (exit 2) naming the flag and the valid names ("gpu" in any case: a hint
/// that the GPU backend is 'cuda').
BackendKind parse_backend_name(const std::string& name);

/// Parses a single storage type name (f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k,
/// q6_k); Error (exit 2) listing the valid names. --dtype itself also takes the q4_k_m mix: it is
/// parsed with parse_weight_scheme() (core/model/weight_scheme.hpp).
WeightType parse_dtype(const std::string& name);

/// Parses "1,2,3" into token ids (each ≥ 0); Error (exit 2) naming the bad element.
std::vector<int32_t> parse_id_list(const std::string& text, const std::string& flag);

}  // namespace decodebench
