#include "core/run_config.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/model/preset.hpp"
#include "core/text.hpp"

namespace decodebench {

const char* origin_name(Origin origin) {
  switch (origin) {
    case Origin::kDefault:
      return "default";
    case Origin::kPreset:
      return "preset";
    case Origin::kFlag:
      return "flag";
    case Origin::kModelFile:
      return "model";
  }
  return "?";
}

const char* backend_kind_name(BackendKind kind) {
  switch (kind) {
    case BackendKind::kAuto:
      return "auto";
    case BackendKind::kCpu:
      return "cpu";
    case BackendKind::kCuda:
      return "cuda";
  }
  return "?";
}

const char* graph_mode_name(GraphMode mode) {
  switch (mode) {
    case GraphMode::kAuto:
      return "auto";
    case GraphMode::kOn:
      return "on";
    case GraphMode::kOff:
      return "off";
    case GraphMode::kBoth:
      return "both";
  }
  return "?";
}

const char* capture_mode_name(CaptureMode mode) {
  switch (mode) {
    case CaptureMode::kThreadLocal:
      return "thread_local";
    case CaptureMode::kGlobal:
      return "global";
    case CaptureMode::kRelaxed:
      return "relaxed";
  }
  return "?";
}

const char* capture_fault_name(CaptureFault fault) {
  switch (fault) {
    case CaptureFault::kNone:
      return "none";
    case CaptureFault::kAlloc:
      return "alloc";
    case CaptureFault::kLegacySync:
      return "legacy-sync";
    case CaptureFault::kHostSync:
      return "host-sync";
    case CaptureFault::kEventQuery:
      return "event-query";
    case CaptureFault::kDeviceSync:
      return "device-sync";
  }
  return "?";
}

namespace {

// Looks `text` up among `names` (parallel to `values`); Error naming the flag and the choices.
template <typename T, size_t N>
T parse_choice(const std::string& flag, const std::string& text, const char* const (&names)[N],
               const T (&values)[N]) {
  std::string choices;
  for (size_t i = 0; i < N; ++i) {
    if (text == names[i]) return values[i];
    choices += (i ? "|" : "") + std::string(names[i]);
  }
  throw usage_error(
      flag + ": invalid value '" + echo_value(text) + "'" +
      choice_hint(text, std::vector<std::string>(std::begin(names), std::end(names))) +
      " (expected " + choices + ")");
}

// Collects resolved values with their origins, in the order they are resolved.
class Resolver {
 public:
  explicit Resolver(const nlohmann::json* preset) : preset_(preset) {}

  // Resolves `name` from flag > preset key > default.
  template <typename T>
  T get(const std::string& name, const std::optional<T>& flag, const char* preset_key, T fallback) {
    if (flag) return record(name, *flag, Origin::kFlag);
    if (preset_ && preset_key && preset_->contains(preset_key)) {
      try {
        return record(name, preset_->at(preset_key).get<T>(), Origin::kPreset);
      } catch (const nlohmann::json::exception& e) {
        throw usage_error("preset key '" + std::string(preset_key) +
                          "' has the wrong type: " + e.what());
      }
    }
    return record(name, fallback, Origin::kDefault);
  }

  template <typename T>
  T record(const std::string& name, T value, Origin origin) {
    params.push_back({name, nlohmann::json(value), origin});
    return value;
  }

  /// Where the value recorded last under `name` came from (kDefault when none was).
  [[nodiscard]] Origin origin_of(const std::string& name) const {
    for (auto p = params.rbegin(); p != params.rend(); ++p) {
      if (p->name == name) return p->origin;
    }
    return Origin::kDefault;
  }

  std::vector<ResolvedParam> params;

 private:
  const nlohmann::json* preset_;
};

// Error (exit 2) unless shape dimension `value` (resolved as `name`) is at least `least` (> 0 by
// default; 2 for the vocabulary, an argmax over one token being none), naming the flag, or the
// preset key when the value came from the preset.
void require_dimension(const Resolver& r, const std::string& flag, const std::string& name,
                       int64_t value, int64_t least = 1) {
  if (value >= least) return;
  const std::string who = r.origin_of(name) == Origin::kPreset ? "preset key '" + name + "'" : flag;
  throw usage_error("invalid model shape: " + who +
                    (least == 1 ? " must be > 0" : " must be >= " + std::to_string(least)) +
                    " (got " + std::to_string(value) + ")");
}

}  // namespace

WeightType parse_dtype(const std::string& name) {
  static const char* const kNames[] = {"f32",  "f16",  "bf16", "q8_0", "q4_0", "q4_1",
                                       "q5_0", "q5_1", "q4_k", "q5_k", "q6_k"};
  static const WeightType kValues[] = {WeightType::kF32,  WeightType::kF16,  WeightType::kBF16,
                                       WeightType::kQ8_0, WeightType::kQ4_0, WeightType::kQ4_1,
                                       WeightType::kQ5_0, WeightType::kQ5_1, WeightType::kQ4_K,
                                       WeightType::kQ5_K, WeightType::kQ6_K};
  return parse_choice("--dtype", name, kNames, kValues);
}

std::vector<int32_t> parse_id_list(const std::string& text, const std::string& flag) {
  std::vector<int32_t> ids;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    int64_t value = -1;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || value < 0 ||
        value > INT32_MAX) {
      throw usage_error(flag + ": element " + std::to_string(ids.size() + 1) + " ('" +
                        echo_value(item) + "') is not a token id (a non-negative integer)");
    }
    ids.push_back(static_cast<int32_t>(value));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return ids;
}

BackendKind parse_backend_name(const std::string& name) {
  static const char* const kNames[] = {"auto", "cpu", "cuda"};
  static const BackendKind kValues[] = {BackendKind::kAuto, BackendKind::kCpu, BackendKind::kCuda};
  // "gpu" is one letter from "cpu": the hint would point the wrong way.
  std::string lower = name;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (lower == "gpu") {
    throw usage_error("--backend: invalid value '" + name +
                      "' (the GPU backend is 'cuda'; expected auto|cpu|cuda)");
  }
  return parse_choice("--backend", name, kNames, kValues);
}

void check_thread_count(int64_t threads) {
  if (threads < 1 || threads > 1024) {
    throw usage_error("--threads must be in [1, 1024] (got " + std::to_string(threads) + ")");
  }
}

RunConfig resolve_run_config(const RunOptions& o, int hardware_threads) {
  RunConfig c;
  if (o.model_path && o.preset) {
    throw usage_error("--model and --preset are exclusive: a GGUF model brings its own shape");
  }
  nlohmann::json preset_json;
  const bool synthetic = !o.model_path;
  if (synthetic) {
    c.preset = o.preset.value_or(kDefaultPreset);
    preset_json = load_preset(c.preset);
  }
  Resolver r(synthetic ? &preset_json : nullptr);

  if (!synthetic) {
    c.model_path = r.record("model", *o.model_path, Origin::kFlag);
    const bool shape_flag = o.layers || o.hidden || o.heads || o.kv_heads || o.head_dim || o.ffn ||
                            o.vocab || o.rope_theta || o.rms_eps || o.tied_embeddings ||
                            o.qkv_bias || o.context_length || o.dtype;
    if (shape_flag) {
      throw usage_error(
          "shape flags (--layers, --hidden, --heads, --kv-heads, --head-dim, --ffn, --vocab, "
          "--rope-theta, --rms-eps, --tied-embeddings/--untied, --qkv-bias, --context, --dtype) "
          "describe a synthetic model and cannot be combined with --model");
    }
    if (o.prompt_ids && o.prompt) throw usage_error("--prompt and --prompt-ids are exclusive");
  } else {
    r.record("preset", c.preset, o.preset ? Origin::kFlag : Origin::kDefault);
    if (o.prompt) {
      throw usage_error(
          "--prompt needs a tokenizer: use it with --model FILE.gguf "
          "(synthetic models take --prompt-ids or --prompt-tokens)");
    }
    ModelConfig& s = c.shape;
    s.architecture = "synthetic";
    s.n_layers = r.get<int64_t>("layers", o.layers, "layers", 0);
    s.hidden = r.get<int64_t>("hidden", o.hidden, "hidden", 0);
    s.n_heads = r.get<int64_t>("heads", o.heads, "heads", 0);
    s.n_kv_heads = r.get<int64_t>("kv_heads", o.kv_heads, "kv_heads", s.n_heads);
    s.ffn = r.get<int64_t>("ffn", o.ffn, "ffn", 0);
    s.vocab = r.get<int64_t>("vocab", o.vocab, "vocab", 0);
    s.context_length = r.get<int64_t>("context_length", o.context_length, "context_length", 4096);
    // Every dimension is checked for > 0 before any rule divides by one or tests divisibility:
    // --hidden -1 is "must be > 0", not "not divisible by heads".
    require_dimension(r, "--layers", "layers", s.n_layers);
    require_dimension(r, "--hidden", "hidden", s.hidden);
    require_dimension(r, "--heads", "heads", s.n_heads);
    require_dimension(r, "--kv-heads", "kv_heads", s.n_kv_heads);
    if (o.head_dim) require_dimension(r, "--head-dim", "head_dim", *o.head_dim);
    require_dimension(r, "--ffn", "ffn", s.ffn);
    require_dimension(r, "--vocab", "vocab", s.vocab, 2);
    require_dimension(r, "--context", "context_length", s.context_length);
    // head_dim follows hidden/heads unless given; a preset's head_dim is dropped when the user
    // changes hidden or heads without giving --head-dim.
    if (o.head_dim) {
      s.head_dim = r.record("head_dim", *o.head_dim, Origin::kFlag);
    } else {
      if (s.hidden % s.n_heads != 0) {
        throw usage_error("invalid model shape: hidden (" + std::to_string(s.hidden) +
                          ") must be divisible by heads (" + std::to_string(s.n_heads) +
                          ") unless --head-dim is given");
      }
      const bool derived = o.hidden || o.heads || !preset_json.contains("head_dim");
      s.head_dim = derived ? r.record("head_dim", s.hidden / s.n_heads, Origin::kDefault)
                           : r.get<int64_t>("head_dim", std::nullopt, "head_dim", 0);
      require_dimension(r, "--head-dim", "head_dim", s.head_dim);
    }
    s.rope_dim = s.head_dim;
    s.rope_theta = r.get<double>("rope_theta", o.rope_theta, "rope_theta", 10000.0);
    s.rms_eps = r.get<double>("rms_eps", o.rms_eps, "rms_eps", 1e-6);
    s.tied_embeddings = r.get<bool>("tied_embeddings", o.tied_embeddings, "tied_embeddings", false);
    s.qkv_bias = r.get<bool>("qkv_bias", o.qkv_bias, "qkv_bias", false);
    s.rope_style = RopeStyle::kHalfSplit;
    // A value a preset file gave is named by its key there, so the user knows which to fix.
    validate(s, [&r](const std::string& key) {
      return r.origin_of(key) == Origin::kPreset ? "preset key '" + key + "'"
                                                 : shape_flag_name(key);
    });
    const std::string dtype = r.get<std::string>("dtype", o.dtype, nullptr, "bf16");
    c.dtype = parse_weight_scheme(dtype);
    check_weight_scheme_fits(s, c.dtype);
  }
  const int64_t seed = r.get<int64_t>("seed", o.seed, nullptr, 0);
  if (seed < 0) throw usage_error("--seed must be >= 0 (got " + std::to_string(seed) + ")");
  c.seed = static_cast<uint64_t>(seed);

  // Prompt.
  if (o.prompt_ids) {
    if (o.prompt_tokens) throw usage_error("--prompt-ids and --prompt-tokens are exclusive");
    c.prompt_ids = parse_id_list(*o.prompt_ids, "--prompt-ids");
    r.record("prompt_ids", c.prompt_ids, Origin::kFlag);
    c.prompt_tokens = static_cast<int64_t>(c.prompt_ids.size());
    if (synthetic) {
      for (size_t i = 0; i < c.prompt_ids.size(); ++i) {
        if (c.prompt_ids[i] >= c.shape.vocab) {
          throw usage_error("--prompt-ids: element " + std::to_string(i + 1) + " (" +
                            std::to_string(c.prompt_ids[i]) + ") is outside the vocabulary (" +
                            std::to_string(c.shape.vocab) + " tokens)");
        }
      }
    }
  } else if (o.prompt) {
    c.prompt_text = r.record("prompt", *o.prompt, Origin::kFlag);
    if (o.prompt_tokens) throw usage_error("--prompt and --prompt-tokens are exclusive");
  } else {
    c.prompt_tokens = r.get<int64_t>("prompt_tokens", o.prompt_tokens, nullptr, 32);
    if (c.prompt_tokens < 1) {
      throw usage_error("--prompt-tokens must be >= 1 (a decode step needs a previous token; got " +
                        std::to_string(c.prompt_tokens) + ")");
    }
    if (c.prompt_tokens > kMaxContext) {
      throw usage_error("--prompt-tokens must be <= " + std::to_string(kMaxContext) + " (got " +
                        std::to_string(c.prompt_tokens) + ")");
    }
  }
  // Step counts share the context bound, so prompt + steps stays far below int64 (also with
  // --stateless, which skips the context check).
  c.tokens = r.get<int64_t>("tokens", o.tokens, nullptr, 64);
  if (c.tokens < 1 || c.tokens > kMaxContext) {
    throw usage_error("--tokens must be in [1, " + std::to_string(kMaxContext) + "] (got " +
                      std::to_string(c.tokens) + ")");
  }
  c.warmup = r.get<int64_t>("warmup", o.warmup, nullptr, 4);
  if (c.warmup < 0 || c.warmup > kMaxContext) {
    throw usage_error("--warmup must be in [0, " + std::to_string(kMaxContext) + "] (got " +
                      std::to_string(c.warmup) + ")");
  }
  c.warmup_time_s = r.get<double>("warmup_time_s", o.warmup_time, nullptr, 0.0);
  if (!(c.warmup_time_s >= 0 && c.warmup_time_s <= 600)) {
    throw usage_error("--warmup-time must be a number of seconds in [0, 600]");
  }
  c.ignore_eos = r.get<bool>("ignore_eos", o.ignore_eos, nullptr, false);
  c.stateless = r.get<bool>("stateless", o.stateless, nullptr, false);
  c.batch = r.get<int64_t>("batch", o.batch, nullptr, 1);
  if (c.batch < 1 || c.batch > kMaxBatch) {
    throw usage_error("--batch must be in [1, " + std::to_string(kMaxBatch) +
                      "] sequences decoded in lockstep (got " + std::to_string(c.batch) + ")");
  }
  if (synthetic && c.prompt_tokens + std::max(c.tokens, c.warmup) > c.shape.context_length &&
      !c.stateless) {
    // Warm-up and timed steps start at the same position, so the larger count needs the room.
    const std::string steps = c.warmup > c.tokens
                                  ? "warm-up steps (" + std::to_string(c.warmup) + ")"
                                  : "tokens (" + std::to_string(c.tokens) + ")";
    throw usage_error("prompt (" + std::to_string(c.prompt_tokens) + ") + " + steps +
                      " exceed the context limit of " + std::to_string(c.shape.context_length) +
                      " positions (--context to raise it)");
  }

  // Execution.
  c.backend = parse_backend_name(r.get<std::string>("backend", o.backend, nullptr, "auto"));
  const int64_t threads = r.get<int64_t>("threads", o.threads, nullptr, hardware_threads);
  check_thread_count(threads);
  c.threads = static_cast<int>(threads);
  {
    static const char* const kNames[] = {"auto", "on", "off", "both"};
    static const GraphMode kValues[] = {GraphMode::kAuto, GraphMode::kOn, GraphMode::kOff,
                                        GraphMode::kBoth};
    c.graph = parse_choice("--graph", r.get<std::string>("graph", o.graph, nullptr, "auto"), kNames,
                           kValues);
  }
  {
    static const char* const kNames[] = {"thread_local", "global", "relaxed"};
    static const CaptureMode kValues[] = {CaptureMode::kThreadLocal, CaptureMode::kGlobal,
                                          CaptureMode::kRelaxed};
    c.capture_mode =
        parse_choice("--capture-mode",
                     r.get<std::string>("capture_mode", o.capture_mode, nullptr, "thread_local"),
                     kNames, kValues);
  }
  {
    static const char* const kNames[] = {"none",      "alloc",       "legacy-sync",
                                         "host-sync", "event-query", "device-sync"};
    static const CaptureFault kValues[] = {CaptureFault::kNone,       CaptureFault::kAlloc,
                                           CaptureFault::kLegacySync, CaptureFault::kHostSync,
                                           CaptureFault::kEventQuery, CaptureFault::kDeviceSync};
    c.inject_fault = parse_choice(
        "--inject-capture-fault",
        r.get<std::string>("inject_capture_fault", o.inject_capture_fault, nullptr, "none"), kNames,
        kValues);
  }
  c.phase_timing = r.get<bool>("phase_timing", o.phase_timing, nullptr, false);
  {
    static const char* const kNames[] = {"on", "off"};
    static const bool kValues[] = {true, false};
    c.fusion = parse_choice("--fusion", r.get<std::string>("fusion", o.fusion, nullptr, "on"),
                            kNames, kValues);
    c.pdl = parse_choice("--pdl", r.get<std::string>("pdl", o.pdl, nullptr, "on"), kNames, kValues);
    c.launch_ahead = parse_choice("--launch-ahead",
                                  r.get<std::string>("launch_ahead", o.launch_ahead, nullptr, "on"),
                                  kNames, kValues);
  }
  {
    static const char* const kNames[] = {"auto", "tiled", "gguf"};
    static const WeightLayout kValues[] = {WeightLayout::kAuto, WeightLayout::kTiled,
                                           WeightLayout::kGguf};
    c.weight_layout = parse_choice(
        "--weight-layout", r.get<std::string>("weight_layout", o.weight_layout, nullptr, "auto"),
        kNames, kValues);
  }
  c.min_time_s = r.get<double>("min_time_s", o.min_time, nullptr, 0.0);
  // Written so that NaN fails too (every comparison with NaN is false).
  // An hour at most: beyond it a typo (1e20) would look like a hang.
  if (!(c.min_time_s >= 0 && c.min_time_s <= 3600)) {
    throw usage_error("--min-time must be a number of seconds in [0, 3600]");
  }
  const double noise_pct = r.get<double>("max_noise_pct", o.max_noise, nullptr, 0.0);
  if (!(noise_pct >= 0 && noise_pct < 100)) {
    throw usage_error(
        fmt::format("--max-noise must be a percentage in [0, 100) (got {:g})", noise_pct));
  }
  c.max_noise = noise_pct / 100.0;
  c.max_time_s = r.get<double>("max_time_s", o.max_time, nullptr, 30.0);
  if (!(c.max_time_s > 0 && c.max_time_s <= 3600)) {
    throw usage_error("--max-time must be a number of seconds in (0, 3600]");
  }
  c.verify_argmax = r.get<bool>("verify_argmax", o.verify_argmax, nullptr, false);
  c.verify_tokens = r.get<int64_t>("verify", o.verify, nullptr, 0);
  if (c.verify_tokens < 0) throw usage_error("--verify must be >= 0");
  c.keep_going = r.get<bool>("keep_going", o.keep_going, nullptr, false);
  c.json_path = r.get<std::string>("json", o.json_path, nullptr, "");

  if (c.backend == BackendKind::kCpu) {
    if (c.graph == GraphMode::kOn || c.graph == GraphMode::kBoth) {
      throw usage_error("--graph " + std::string(graph_mode_name(c.graph)) +
                        " needs the cuda backend (the cpu backend runs eagerly)");
    }
    if (c.inject_fault != CaptureFault::kNone) {
      throw usage_error("--inject-capture-fault needs the cuda backend");
    }
  }
  if (c.inject_fault != CaptureFault::kNone && c.graph == GraphMode::kOff) {
    throw usage_error("--inject-capture-fault needs graph capture (not --graph off)");
  }
  c.params = std::move(r.params);
  return c;
}

}  // namespace decodebench
