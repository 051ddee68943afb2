// The result document of a run (layout: docs/result.schema.json).
#include <string>

#include "build_info.hpp"
#include "core/runner.hpp"
#include "core/telemetry.hpp"

namespace decodebench {

nlohmann::json tool_json() {
  return {{"name", "decodebench"},
          {"version", build_info::kVersion},
          {"git_sha", build_info::kGitSha},
          {"build_type", build_info::kBuildType},
          {"compiler", build_info::kCompiler},
#ifdef DECODEBENCH_HAVE_CUDA
          {"cuda", true},
#else
          {"cuda", false},
#endif
          {"cuda_compiler", build_info::kCudaCompiler}};
}

namespace {

/// A measured figure, or null where it was not measured (`v` <= 0: the CPU backend measures no
/// read bandwidth), never a 0 a reader could take for a measurement.
nlohmann::json measured_or_null(double v) { return v > 0 ? nlohmann::json(v) : nlohmann::json(); }

nlohmann::json shape_json(const ModelConfig& c) {
  return {{"architecture", c.architecture},
          {"layers", c.n_layers},
          {"hidden", c.hidden},
          {"heads", c.n_heads},
          {"kv_heads", c.n_kv_heads},
          {"head_dim", c.head_dim},
          {"ffn", c.ffn},
          {"vocab", c.vocab},
          {"context_length", c.context_length},
          {"rope_dim", c.rope_dim},
          {"rope_theta", c.rope_theta},
          {"rope_style", rope_style_name(c.rope_style)},
          {"rms_eps", c.rms_eps},
          {"tied_embeddings", c.tied_embeddings},
          {"qkv_bias", c.qkv_bias},
          {"qk_norm", c.qk_norm}};
}

nlohmann::json model_json(const RunReport& r) {
  nlohmann::json types = nlohmann::json::object();
  for (const auto& [name, s] : r.model_info.tensor_types) {
    types[name] = {{"count", s.count}, {"bytes", s.bytes}};
  }
  return {{"source", r.model_info.source},
          {"path", r.model_info.path},
          {"name", r.model_info.name},
          {"architecture", r.model_config.architecture},
          {"file_type", r.model_info.file_type},
          {"parameters", r.model_info.parameters},
          {"weight_bytes", r.model_info.weight_bytes},
          {"bytes_per_token", r.model_info.bytes_per_token},
          {"tensor_types", types},
          {"shape", shape_json(r.model_config)},
          {"tokenizer", r.tokenizer_kind}};
}

// The configuration key that `compare` matches runs by.
nlohmann::json run_key(const RunReport& r, const PassReport& p) {
  const std::string model =
      r.model_info.source == "gguf" ? "gguf:" + r.model_info.path : "synthetic:" + r.config.preset;
  const nlohmann::json fields = shape_json(r.model_config);
  std::string shape;
  for (const KeyShapeField& f : kKeyShapeFields) {
    shape += f.prefix + std::to_string(fields.at(f.name).get<int64_t>());
  }
  const std::string gpu = r.gpu_environment.is_object() && r.gpu_environment.contains("name")
                              ? r.gpu_environment["name"].get<std::string>()
                              : r.device;
  nlohmann::json key = {{"model", model},
                        {"shape", shape},
                        {"dtype", r.model_info.file_type},
                        {"backend", r.backend},
                        {"graph", p.pass.spec.label},
                        {"batch", p.pass.spec.batch},
                        {"device", gpu}};
  std::string id;
  for (const char* k : {"model", "shape", "dtype", "backend", "graph", "batch", "device"}) {
    id += (id.empty() ? "" : "|") + std::string(k) + "=" +
          (key[k].is_string() ? key[k].get<std::string>() : key[k].dump());
  }
  key["id"] = id;
  return key;
}

/// results.host_overhead of a pass: null where not measured (PassReport::host_overhead_us).
nlohmann::json host_overhead_json(const PassReport& p) {
  if (!p.host_overhead_us) return nullptr;
  nlohmann::json idle = nullptr;
  if (p.idle_ns) {
    idle = {{"steps", p.idle_ns->count},
            {"median_us", p.idle_ns->median / 1e3},
            {"p90_us", p.idle_ns->p90 / 1e3},
            {"min_us", p.idle_ns->min / 1e3},
            {"max_us", p.idle_ns->max / 1e3}};
  }
  const bool replayed = p.replay_host_overhead_us.has_value();
  const auto or_null = [&](auto v) { return replayed ? nlohmann::json(v) : nlohmann::json(); };
  return {{"host_us", *p.host_overhead_us},
          {"method", p.host_overhead_method},
          {"idle", idle},
          {"tpot_us_median", p.tpot_ns.median / 1e3},
          {"replay_host_us", or_null(p.replay_host_overhead_us.value_or(0))},
          {"gpu_step_us", or_null(p.pass.gpu_step_us)},
          {"position", or_null(p.pass.gpu_step_position)},
          {"replays", or_null(p.pass.spec.gpu_step_replays)}};
}

/// backend.kernels: null when the backend does not tell (CPU) or ran no batch-1 step.
nlohmann::json kernels_json(const RunReport& r) {
  if (r.kernels.gemv_per_step.empty()) return nullptr;
  nlohmann::json gemv = nlohmann::json::object();
  for (const auto& [name, n] : r.kernels.gemv_per_step) gemv[name] = n;
  nlohmann::json forms = nlohmann::json::object();
  for (const auto& [name, n] : r.kernels.gemv_forms_per_step) forms[name] = n;
  nlohmann::json k = {{"gemv_per_step", gemv},
                      {"gemv_forms_per_step", forms},
                      {"tiled_matrices", r.kernels.tiled_matrices},
                      {"x_split_kernels", r.kernels.x_split_kernels},
                      {"x_split_kernels_after_wait", r.kernels.x_split_kernels_after_wait},
                      {"x_splits_in_attention", r.kernels.x_splits_in_attention}};
  if (!r.kernels.attention.empty()) k["attention"] = r.kernels.attention;
  return k;
}

nlohmann::json exec_json(const ExecReport& e, const std::string& label) {
  nlohmann::json failure = nullptr;
  if (e.capture_attempted && !e.captured) {
    failure = {{"call", e.failed_call}, {"error", e.error_name}, {"message", e.error_message}};
  }
  return {{"mode", label},
          {"executed", e.mode == ExecMode::kGraph ? "graph" : "eager"},
          {"capture_attempted", e.capture_attempted},
          {"captured", e.captured},
          {"capture_mode", e.capture_mode},
          {"failure", failure},
          {"recovery", e.recovery},
          {"capture_ms", e.capture_ms},
          {"graph_nodes", e.graph_nodes}};
}

nlohmann::json verification_json(const PassResult& p) {
  // Batched passes say which sequence a check belongs to.
  const bool batched = p.spec.batch > 1;
  nlohmann::json mismatches = nlohmann::json::array();
  for (const auto& m : p.argmax_mismatches) {
    nlohmann::json top = nlohmann::json::array();
    for (const auto& [id, v] : m.top10) top.push_back({{"id", id}, {"logit", v}});
    mismatches.push_back({{"step", m.step},
                          {"position", m.position},
                          {"backend_id", m.backend_id},
                          {"cpu_id", m.cpu_id},
                          {"backend_logit", m.backend_logit},
                          {"cpu_logit", m.cpu_logit},
                          {"margin", m.margin},
                          {"top10", top}});
    if (batched) mismatches.back()["sequence"] = m.sequence;
  }
  nlohmann::json logits = nlohmann::json::array();
  for (const auto& c : p.logits_checks) {
    logits.push_back({{"step", c.step},
                      {"max_abs_error", c.max_abs_error},
                      {"max_rel_error", c.max_rel_error},
                      {"backend_id", c.backend_id},
                      {"reference_id", c.reference_id},
                      {"argmax_agrees", c.argmax_agrees},
                      {"reference_top", c.reference_top},
                      {"reference_margin", c.reference_margin},
                      {"backend_margin", c.backend_margin}});
    if (batched) logits.back()["sequence"] = c.sequence;
  }
  return {
      {"argmax_checked", p.argmax_checked}, {"argmax_mismatches", mismatches}, {"logits", logits}};
}

/// -1 (not reported) as null.
nlohmann::json known(double v) { return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v); }
nlohmann::json known(int64_t v) { return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v); }

/// results.telemetry: null when not asked for (CPU backend), {available: false, reason} when the
/// device could not be read, else the rounds and their totals.
nlohmann::json telemetry_json(const RunReport& r, const PassResult& p) {
  if (!r.telemetry_asked) return nullptr;
  if (!r.telemetry_unavailable.empty()) {
    return {{"available", false}, {"reason", r.telemetry_unavailable}};
  }
  nlohmann::json rounds = nlohmann::json::array();
  for (const RoundTelemetry& t : p.telemetry) {
    rounds.push_back({{"round", t.round},
                      {"steps", t.steps},
                      {"wall_s", t.wall_s},
                      {"median_step_us", t.median_step_us},
                      {"sm_clock_mhz", known(t.sm_clock_mhz)},
                      {"mem_clock_mhz", known(t.mem_clock_mhz)},
                      {"temperature_c", known(t.temperature_c)},
                      {"energy_j", known(t.energy_j)},
                      {"mean_power_w", known(t.mean_power_w)},
                      {"power_throttled_ms", known(t.power_throttled_ms)},
                      {"thermal_throttled_ms", known(t.thermal_throttled_ms)},
                      {"throttle_reasons", t.reasons_known ? nlohmann::json(t.throttle_reasons)
                                                           : nlohmann::json(nullptr)},
                      {"verified", t.verified},
                      {"other_processes", known(t.other_processes)}});
  }
  const TelemetrySummary s = summarize_telemetry(p.telemetry, p.spec.batch);
  return {{"available", true},
          {"rounds", rounds},
          {"energy_j", known(s.energy_j)},
          {"mean_power_w", known(s.mean_power_w)},
          {"joules_per_token", known(s.joules_per_token)},
          {"energy_rounds", s.energy_rounds},
          {"power_throttled_ms", known(s.power_throttled_ms)},
          {"thermal_throttled_ms", known(s.thermal_throttled_ms)},
          {"other_processes_max", known(s.other_processes_max)}};
}

nlohmann::json pass_json(const RunReport& r, const PassReport& p) {
  nlohmann::json phases = nullptr;
  nlohmann::json phase_samples = nullptr;
  if (!p.phases.empty()) {
    phases = nlohmann::json::object();
    for (const auto& [name, s] : p.phases) phases[name] = to_json(s);
    phase_samples = nlohmann::json::object();
    const auto& ph = p.pass.phases;
    auto column = [&](auto field) {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& x : ph) a.push_back(field(x));
      return a;
    };
    phase_samples["h2d"] = column([](const StepPhases& x) { return x.h2d_ns; });
    phase_samples["launch"] = column([](const StepPhases& x) { return x.launch_ns; });
    phase_samples["wait"] = column([](const StepPhases& x) { return x.wait_ns; });
    phase_samples["argmax"] = column([](const StepPhases& x) { return x.argmax_ns; });
    phase_samples["total"] = column([](const StepPhases& x) { return x.total_ns; });
    // GPU time exists only where CUDA events measured it (phases["gpu_ms"]); the CPU backend
    // leaves the field at -1, which is no sample.
    if (p.phases.contains("gpu_ms")) {
      phase_samples["gpu_ms"] = column([](const StepPhases& x) { return x.gpu_ms; });
    }
  }
  // One entry per sequence of the pass (batch 1: one); all share the lockstep step time.
  nlohmann::json sequences = nlohmann::json::array();
  for (size_t s = 0; s < p.pass.sequence_ids.size(); ++s) {
    const std::vector<int32_t>& prompt =
        s < r.sequence_prompts.size() ? r.sequence_prompts[s] : r.prompt_ids;
    sequences.push_back({{"index", s},
                         {"prompt_tokens", prompt.size()},
                         {"prompt_ids", prompt},
                         {"tokens", p.pass.sequence_ids[s]},
                         {"tpot_ms_median", p.tpot_ns.median / 1e6}});
  }
  // Efficiency exists only where the bandwidth was measured (Roofline: both 0 otherwise).
  nlohmann::json roofline = {{"bytes_per_token", p.roofline.bytes_per_token},
                             {"achieved_gbps", p.roofline.achieved_gbps},
                             {"measured_gbps", measured_or_null(p.roofline.measured_gbps)},
                             {"efficiency", measured_or_null(p.roofline.efficiency)}};
  return {
      {"key", run_key(r, p)},
      {"label", p.pass.spec.label},
      {"batch", p.pass.spec.batch},
      {"graph", exec_json(p.pass.exec, p.pass.spec.label)},
      {"results",
       {{"tokens", p.pass.ids},
        {"timed_steps", p.pass.samples_ns.size()},
        {"warmup_steps", p.pass.warmup_steps},
        {"start_position", p.pass.spec.start_pos},
        {"stateless", p.pass.spec.stateless},
        {"stopped_at_end_of_generation", p.pass.stopped_at_end_of_generation},
        {"launch_ahead",
         {{"on", p.pass.launched_ahead},
          {"why_off", p.pass.launch_ahead_off.empty() ? nlohmann::json(nullptr)
                                                      : nlohmann::json(p.pass.launch_ahead_off)}}},
        {"stopping",
         {{"rule", p.pass.stopping.rule},
          {"rounds", p.pass.stopping.rounds},
          {"timed_s", p.pass.stopping.timed_s},
          // As median_ci95: no 95% interval, so no noise figure, below 6 samples.
          {"median_noise", static_cast<int64_t>(p.pass.samples_ns.size()) >= kMinSamplesForMedianCi
                               ? nlohmann::json(p.pass.stopping.median_noise)
                               : nlohmann::json(nullptr)}}},
        {"wall_ns", p.pass.wall_ns},
        {"samples_ns", p.pass.samples_ns},
        {"stats",
         {{"tpot_ns", to_json(p.tpot_ns)},
          {"tokens_per_s", p.tokens_per_s},
          {"aggregate_tokens_per_s", p.aggregate_tokens_per_s}}},
        {"sequences", sequences},
        {"phases", phases},
        {"phase_samples", phase_samples},
        {"host_overhead", host_overhead_json(p)},
        {"telemetry", telemetry_json(r, p.pass)}}},
      {"verification", verification_json(p.pass)},
      {"roofline", roofline}};
}

}  // namespace

nlohmann::json result_json(const RunReport& r) {
  nlohmann::json env = r.host_environment;
  env["gpu"] = r.gpu_environment;
  env["gpu_after"] = r.gpu_environment_after;
  nlohmann::json config = nlohmann::json::object();
  for (const auto& p : r.config.params) {
    config[p.name] = {{"value", p.value}, {"origin", origin_name(p.origin)}};
  }
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& p : r.passes) runs.push_back(pass_json(r, p));
  nlohmann::json checks = {
      {"graph_matches_eager",
       r.graph_matches_eager ? nlohmann::json(*r.graph_matches_eager) : nlohmann::json(nullptr)},
      {"phase_timing_overhead_ns", r.phase_timing_overhead_ns.empty()
                                       ? nlohmann::json(nullptr)
                                       : nlohmann::json(r.phase_timing_overhead_ns)}};
  return {
      {"schema_version", kResultSchemaVersion},
      {"tool", tool_json()},
      {"environment", env},
      {"config", config},
      {"model", model_json(r)},
      {"backend",
       {{"name", r.backend},
        {"device", r.device},
        {"kernels", kernels_json(r)},
        {"fallback", r.backend_fallback.empty() ? nlohmann::json(nullptr)
                                                : nlohmann::json(r.backend_fallback)}}},
      {"prompt", {{"ids", r.prompt_ids}, {"text", r.config.prompt_text}}},
      {"timing", {{"load_ns", r.load_ns}, {"setup_ns", r.setup_ns}, {"prefill_ns", r.prefill_ns}}},
      {"generated_text", r.generated_text},
      {"runs", runs},
      {"checks", checks},
      {"bandwidth_gbps", measured_or_null(r.measured_bandwidth_gbps)},
      {"verdict", run_verdict(r)},
      {"warnings", r.warnings},
      {"exit_code", static_cast<int>(r.exit_code)}};
}

}  // namespace decodebench
