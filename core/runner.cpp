#include "core/runner.hpp"

#include <unistd.h>  // environ

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>
#include <thread>

#include "core/backend_registry.hpp"
#include "core/cpu/cpu_backend.hpp"
#include "core/error.hpp"
#include "core/gguf/reader.hpp"
#include "core/model/gguf_model.hpp"
#include "core/model/synthetic.hpp"
#include "core/result/environment.hpp"
#include "core/telemetry.hpp"

namespace decodebench {

namespace {

/// Back-to-back replays of a graph pass's step for the GPU's own step time (host overhead): 32
/// steps of a 7B model take ~60 ms, of SmolLM2 ~18 ms, and average the event timer's ~0.5 µs
/// resolution down to ~0.02 µs.
constexpr int kGpuStepReplays = 32;

// "0.5 s" (shortest form of the number).
std::string seconds_text(double s) {
  std::ostringstream out;
  out << s << " s";
  return out.str();
}

using Clock = std::chrono::steady_clock;

int64_t ns_since(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
}

/// Weight sizes in decimal GB, as the run summary prints them (memory limits stay in GiB).
std::string gb(int64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GB", static_cast<double>(bytes) / 1e9);
  return buf;
}

Summary summarize_ns(const std::vector<int64_t>& ns) {
  std::vector<double> v(ns.begin(), ns.end());
  return summarize(v);
}

}  // namespace

PassReport make_pass_report(PassResult pass, int64_t bytes_per_token) {
  PassReport r;
  r.tpot_ns = summarize_ns(pass.samples_ns);
  if (r.tpot_ns.median > 0) {
    r.aggregate_tokens_per_s = static_cast<double>(pass.spec.batch) * 1e9 / r.tpot_ns.median;
  }
  int64_t total = 0;
  for (int64_t s : pass.samples_ns) total += s;
  r.tokens_per_s =
      total > 0 ? static_cast<double>(pass.samples_ns.size()) * 1e9 / static_cast<double>(total)
                : 0.0;
  if (pass.gpu_step_us > 0 && r.tpot_ns.median > 0) {
    r.replay_host_overhead_us = r.tpot_ns.median / 1e3 - pass.gpu_step_us;
  }
  if (!pass.idle_ns.empty()) {
    r.idle_ns = summarize_ns(pass.idle_ns);
    r.host_overhead_us = r.idle_ns->median / 1e3;
    r.host_overhead_method = "idle";
  } else if (r.replay_host_overhead_us) {
    r.host_overhead_us = r.replay_host_overhead_us;
    r.host_overhead_method = "replay";
  }
  if (!pass.phases.empty()) {
    const auto series = [&](auto field) {
      std::vector<double> v;
      for (const auto& p : pass.phases) v.push_back(static_cast<double>(field(p)));
      return summarize(v);
    };
    r.phases["h2d"] = series([](const StepPhases& p) { return p.h2d_ns; });
    r.phases["launch"] = series([](const StepPhases& p) { return p.launch_ns; });
    r.phases["wait"] = series([](const StepPhases& p) { return p.wait_ns; });
    r.phases["argmax"] = series([](const StepPhases& p) { return p.argmax_ns; });
    r.phases["total"] = series([](const StepPhases& p) { return p.total_ns; });
    if (pass.phases.front().gpu_ms >= 0) {
      r.phases["gpu_ms"] = series([](const StepPhases& p) { return p.gpu_ms; });
    }
  }
  r.roofline.bytes_per_token = bytes_per_token;
  if (r.tpot_ns.median > 0) {
    r.roofline.achieved_gbps = static_cast<double>(bytes_per_token) / r.tpot_ns.median;
  }
  r.pass = std::move(pass);
  return r;
}

namespace {

std::vector<int32_t> resolve_prompt(const RunConfig& config, const Model& model,
                                    RunReport& report) {
  std::vector<int32_t> ids;
  if (!config.prompt_ids.empty()) {
    ids = config.prompt_ids;
  } else if (!config.prompt_text.empty()) {
    if (!model.tokenizer) throw usage_error("--prompt needs a model with a tokenizer");
    ids = model.tokenizer->encode(config.prompt_text, true);
    if (ids.empty()) {
      throw usage_error("--prompt encodes to no tokens: the model's " + model.tokenizer->kind() +
                        " tokenizer gave none and adds no BOS token (--prompt-ids gives token ids "
                        "directly)");
    }
  } else {
    ids = synthetic_prompt(config.prompt_tokens, model.config.vocab, config.seed);
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= model.config.vocab) {
      throw usage_error("prompt token " + std::to_string(i + 1) + " (id " + std::to_string(ids[i]) +
                        ") is outside the vocabulary (" + std::to_string(model.config.vocab) +
                        " tokens)");
    }
  }
  const int64_t needed = static_cast<int64_t>(ids.size()) + std::max(config.tokens, config.warmup);
  if (needed > model.config.context_length) {
    // Every term named: the warm-up steps count as much as the generated tokens do.
    throw usage_error("prompt tokens (" + std::to_string(ids.size()) +
                      ") + the larger of generated tokens (--tokens " +
                      std::to_string(config.tokens) + ") and warm-up steps (--warmup " +
                      std::to_string(config.warmup) + ") = " + std::to_string(needed) +
                      " positions exceed the model's context limit of " +
                      std::to_string(model.config.context_length) +
                      " positions (warm-up and timed steps both start right after the prompt)");
  }
  (void)report;
  return ids;
}

// The prompts of a batched run: sequence 0 keeps `prompt`; with synthetic prompts sequence i > 0
// gets its own (sequence_prompt_seed), with an explicit or text prompt every sequence shares it.
std::vector<std::vector<int32_t>> sequence_prompts(
    const RunConfig& config, const Model& model, const std::vector<int32_t>& prompt,
    const std::function<void(const std::string&)>& warn) {
  std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(config.batch), prompt);
  if (config.batch == 1) return prompts;
  if (!config.prompt_ids.empty() || !config.prompt_text.empty()) {
    warn(std::string("every one of the ") + std::to_string(config.batch) +
         " sequences decodes the same prompt (" +
         (config.prompt_text.empty() ? "--prompt-ids" : "--prompt") +
         "); --prompt-tokens gives each sequence its own");
    return prompts;
  }
  for (int64_t i = 1; i < config.batch; ++i) {
    prompts[static_cast<size_t>(i)] =
        synthetic_prompt(static_cast<int64_t>(prompt.size()), model.config.vocab,
                         sequence_prompt_seed(config.seed, i));
  }
  return prompts;
}

}  // namespace

uint64_t sequence_prompt_seed(uint64_t seed, int64_t sequence) {
  return seed + static_cast<uint64_t>(sequence) * 0x9E3779B97F4A7C15ull;
}

RunReport execute_run(const RunConfig& config, const RunCallbacks& callbacks) {
  const auto say = [&](const std::string& s) {
    if (callbacks.progress) callbacks.progress(s);
  };
  const StepProgressFn& step_progress = callbacks.step;
  RunReport report;
  const auto warn = [&](const std::string& w) {
    report.warnings.push_back(w);
    if (callbacks.warning) callbacks.warning(w);
  };
  report.config = config;
  report.host_environment = host_environment();

  // A model file that is missing or not a valid GGUF is the user's first problem: said before the
  // backend is probed (whose "no usable CUDA device" warning would come first otherwise). This
  // parses the header, metadata and tensor infos, not the tensor data (about 0.1 s for a
  // 152k-token vocabulary), and loading parses them again; an unsupported architecture or a
  // missing tensor is still found only when the model is loaded.
  if (!config.model_path.empty()) (void)gguf::Reader(config.model_path);

  // Backend choice comes first: it decides how much host memory the run needs.
  CudaProvider* cuda = cuda_provider();
  bool use_cuda = false;
  std::string why_not;
  if (config.backend == BackendKind::kCuda) {
    if (!cuda)
      throw resource_error("--backend cuda: this build has no CUDA backend (built without nvcc)");
    if (!cuda->available(&why_not)) throw resource_error("--backend cuda: " + why_not);
    use_cuda = true;
  } else if (config.backend == BackendKind::kAuto && cuda) {
    use_cuda = cuda->available(&why_not);
  }
  // Checked before the fallback warning, which would announce a cpu run that never happens.
  if (!use_cuda && (config.graph == GraphMode::kOn || config.graph == GraphMode::kBoth)) {
    const std::string what = std::string("--graph ") + graph_mode_name(config.graph);
    if (config.backend == BackendKind::kCpu) throw usage_error(what + " needs the cuda backend");
    // backend auto without a GPU: a missing resource, not a usage error.
    throw resource_error(what + " needs a CUDA device: " +
                         (cuda ? why_not : std::string("this build has no CUDA backend")));
  }
  if (config.backend == BackendKind::kAuto && cuda && !use_cuda) {
    warn(std::string(kNoCudaDeviceWarning) + " (" + why_not + "); using the cpu backend");
    report.backend_fallback = std::string(kNoCudaDeviceWarning) + " (" + why_not + ")";
  }
  // Variables that change the kernels or their timing (recorded in environment.variables).
  for (const auto& w : run_variable_warnings(report.host_environment["variables"], use_cuda)) {
    warn(w);
  }
  for (const auto& w : unknown_variable_warnings(environ)) warn(w);
  // A CPU-only build has nothing to fall back from (no warning), but the report still says why.
  if (config.backend == BackendKind::kAuto && !cuda) {
    report.backend_fallback = "this build has no CUDA backend";
  }
  const bool want_reference = use_cuda && config.verify_tokens > 0;
  if (!use_cuda && config.verify_tokens > 0) {
    warn(
        "--verify compares a GPU with the CPU reference; on the cpu backend "
        "it has nothing to compare and was skipped");
  }
  // The CPU backend's argmax is the very function the check would run on the same logits: a
  // "0 mismatches" from it would read as a verification that never happened.
  if (!use_cuda && config.verify_argmax) {
    warn(
        "--verify-argmax re-checks a GPU's argmax on the CPU; on the cpu backend there is no "
        "other argmax to check and it was skipped");
  }
  // CUDA-only execution flags given for a cpu run change nothing: said, as --verify is.
  if (!use_cuda) {
    static const std::pair<const char*, const char*> kCudaOnly[] = {
        {"capture_mode", "--capture-mode"},
        {"inject_capture_fault", "--inject-capture-fault"},
        {"fusion", "--fusion"},
        {"pdl", "--pdl"},
        {"launch_ahead", "--launch-ahead"},
        {"weight_layout", "--weight-layout"}};
    std::string given;
    int count = 0;
    for (const auto& p : config.params) {
      if (p.origin != Origin::kFlag) continue;
      for (const auto& [name, flag] : kCudaOnly) {
        if (p.name == name) {
          given += (count++ == 0 ? "" : ", ") + std::string(flag);
        }
      }
    }
    if (count > 0) {
      warn(given + (count == 1 ? " applies" : " apply") +
           " to the CUDA backend only; the cpu backend ran without " +
           (count == 1 ? "it" : "them"));
    }
  }
  if (config.min_time_s > config.max_time_s) {
    warn("--min-time " + seconds_text(config.min_time_s) + " is longer than --max-time " +
         seconds_text(config.max_time_s) + ": rounds go on until " +
         seconds_text(config.min_time_s) + " are timed");
  }
  if (const unsigned hw = std::thread::hardware_concurrency();
      !use_cuda && hw > 0 && config.threads > static_cast<int>(hw)) {
    warn("--threads " + std::to_string(config.threads) + " is more than the " + std::to_string(hw) +
         " hardware threads: the CPU backend's threads will share them and "
         "its step times grow");
  }

  // Model.
  const auto t_load = Clock::now();
  Model model;
  const int threads = config.threads;
  if (config.model_path.empty()) {
    int64_t capacity = 0;
    if (!config.prompt_ids.empty())
      capacity = static_cast<int64_t>(config.prompt_ids.size());
    else
      capacity = config.prompt_tokens;
    capacity += std::max(config.tokens, config.warmup);
    const bool host_workspace = !use_cuda || want_reference;
    const int64_t weights = synthetic_weight_bytes(config.shape, config.dtype);
    if (!use_cuda && weights > (int64_t{2} << 30)) {
      warn("decoding " + gb(weights) + " of weights on the CPU takes minutes and as much RAM; " +
           "--preset smollm2-135m is a quick CPU check");
    }
    const int64_t work =
        host_workspace ? cpu::CpuBackend::workspace_bytes(config.shape, capacity, config.batch) : 0;
    check_host_memory(saturating_sum(weights, work),
                      "the synthetic model (weights " + std::to_string(weights) +
                          " bytes + KV cache and workspace " + std::to_string(work) + " bytes)");
    say("generating synthetic weights (" + gb(weights) + ")");
    cpu::ThreadPool pool(std::max(threads, static_cast<int>(std::thread::hardware_concurrency())));
    model = make_synthetic_model(config.shape, config.dtype, config.seed, pool);
    model.info.name = config.preset + " shape (synthetic)";
  } else {
    say("loading " + config.model_path);
    model = load_gguf_model(config.model_path);
  }
  report.load_ns = ns_since(t_load);
  report.model_config = model.config;
  report.model_info = model.info;
  if (model.tokenizer) report.tokenizer_kind = model.tokenizer->kind();

  report.prompt_ids = resolve_prompt(config, model, report);
  report.sequence_prompts = sequence_prompts(config, model, report.prompt_ids, warn);
  const int64_t batch = config.batch;
  const int64_t prompt_len = static_cast<int64_t>(report.prompt_ids.size());
  const int64_t capacity = prompt_len + std::max(config.tokens, config.warmup);
  if (!config.model_path.empty() && (!use_cuda || want_reference)) {
    check_host_memory(cpu::CpuBackend::workspace_bytes(model.config, capacity, batch),
                      "the KV cache and workspace");
  }

  // Backends.
  const auto t_setup = Clock::now();
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Backend> reference;
  std::unique_ptr<GpuTelemetry> telemetry;  // the CUDA device's, when it can be read
  if (use_cuda) {
    CudaBackendOptions options;
    options.max_positions = capacity;
    options.max_batch = batch;
    options.capture_mode = config.capture_mode;
    options.inject_fault = config.inject_fault;
    options.fused = config.fusion;
    options.pdl = config.pdl;
    options.weight_layout = config.weight_layout;
    say("uploading weights to the GPU");
    backend = cuda->create(model, options);
    report.gpu_environment = cuda->environment();
    report.telemetry_asked = true;
    telemetry = cuda->telemetry(&report.telemetry_unavailable);
    if (want_reference) {
      reference = std::make_unique<cpu::CpuBackend>(model, capacity, threads, batch);
    }
  } else {
    backend = std::make_unique<cpu::CpuBackend>(model, capacity, threads, batch);
  }
  if (backend->max_batch() < batch) {
    throw usage_error("--batch " + std::to_string(batch) + ": the " + backend->name() +
                      " backend decodes at most " + std::to_string(backend->max_batch()) +
                      " sequence(s) in lockstep");
  }
  report.setup_ns = ns_since(t_setup);
  report.backend = backend->name();
  report.device = backend->device_name();

  // Prefill.
  std::vector<int32_t> firsts(static_cast<size_t>(batch));
  const auto t_prefill = Clock::now();
  if (batch == 1) {
    say("prefill of " + std::to_string(prompt_len) + " tokens");
    firsts[0] = backend->prefill(report.prompt_ids);
    report.prefill_ns = ns_since(t_prefill);
    if (reference) reference->prefill(report.prompt_ids);
  } else {
    say("prefill of " + std::to_string(batch) + " × " + std::to_string(prompt_len) + " tokens");
    backend->prefill_batch(report.sequence_prompts, firsts);
    report.prefill_ns = ns_since(t_prefill);
    if (reference) {
      std::vector<int32_t> ref_firsts(firsts.size());
      reference->prefill_batch(report.sequence_prompts, ref_firsts);
    }
  }
  const int32_t first = firsts[0];
  // NaN or inf logits (broken weights, a shape that overflows) leave argmax nothing to choose:
  // said once per run, from the logits after the prompt and after each pass (sequence 0 of a
  // batch), outside the timed steps.
  bool warned_non_finite = false;
  const auto warn_non_finite = [&](const std::string& where) {
    std::vector<float> logits;
    if (batch == 1) {
      backend->logits(logits);
    } else {
      backend->logits_batch(0, logits);
    }
    const auto bad =
        std::count_if(logits.begin(), logits.end(), [](float v) { return !std::isfinite(v); });
    if (bad == 0) return;
    warned_non_finite = true;
    warn(where + " hold " + std::to_string(bad) + " of " + std::to_string(logits.size()) +
         " values that are NaN or inf: the model computes non-finite numbers (its weights or "
         "shape), so its tokens mean nothing");
  };
  warn_non_finite("the logits after the prompt");

  // Passes.
  std::vector<std::pair<std::string, ExecMode>> modes;
  if (!use_cuda) {
    modes = {{"cpu", ExecMode::kEager}};
  } else if (config.graph == GraphMode::kOff) {
    modes = {{"eager", ExecMode::kEager}};
  } else if (config.graph == GraphMode::kBoth) {
    modes = {{"eager", ExecMode::kEager}, {"graph", ExecMode::kGraph}};
  } else {
    modes = {{"graph", ExecMode::kGraph}};
  }
  // A batched pass decodes every sequence for exactly --tokens steps (no end-of-generation stop).
  bool stop_at_eog = model.tokenizer && !config.ignore_eos && batch == 1;
  // The prompt's own continuation is the end of generation: the answer is over before the first
  // timed step. Stopping at the next end-of-generation token would time an arbitrary stretch past
  // it, so every --tokens step is timed, as with --ignore-eos, and the run says so.
  // Not where the logits are NaN: the token is argmax's pick among them, not an answer, and every
  // step is timed.
  if (warned_non_finite) stop_at_eog = false;
  if (stop_at_eog && model.tokenizer->is_end_of_generation(first)) {
    warn(
        "the model ends generation right after the prompt (its first token is the "
        "end-of-generation token " +
        std::to_string(first) + ", '" + model.tokenizer->token_text(first) + "'): all " +
        std::to_string(config.tokens) +
        " steps are timed past it, as with --ignore-eos (another prompt times an answer)");
    stop_at_eog = false;
  }
  for (const auto& [label, mode] : modes) {
    for (int with_phases = 0; with_phases <= (config.phase_timing ? 1 : 0); ++with_phases) {
      PassSpec spec;
      spec.label = with_phases ? label + "+phases" : label;
      spec.mode = mode;
      spec.first_token = first;
      spec.batch = batch;
      if (batch > 1) spec.first_tokens = firsts;
      spec.start_pos = prompt_len;
      spec.tokens = config.tokens;
      spec.warmup = config.warmup;
      spec.warmup_time_s = config.warmup_time_s;
      spec.stateless = config.stateless;
      spec.phase_timing = with_phases == 1;
      if (stop_at_eog) {
        const Tokenizer* tok = model.tokenizer.get();
        spec.is_end_of_generation = [tok](int32_t id) { return tok->is_end_of_generation(id); };
      }
      spec.verify_argmax = config.verify_argmax && use_cuda;
      spec.min_time_s = config.min_time_s;
      spec.max_noise = config.max_noise;
      spec.max_time_s = config.max_time_s;
      if (step_progress) {
        const std::string label = spec.label;
        spec.on_step = [&step_progress, label](int64_t done, int64_t total) {
          step_progress(label, done, total);
        };
      }
      spec.keep_going = config.keep_going;
      spec.require_graph = config.graph == GraphMode::kOn;
      spec.telemetry = telemetry.get();
      // The GPU's own step time, for the host overhead per token (graph passes at batch 1).
      if (use_cuda && mode == ExecMode::kGraph && !with_phases && batch == 1) {
        spec.gpu_step_replays = kGpuStepReplays;
        spec.measure_idle = true;  // and its idle time between steps, measured on the GPU
      }
      // Not eager passes: their host, launching every kernel, is slower than the GPU, so a step
      // launched ahead finishes while the next one is still being launched, and the time between
      // two tokens no longer measures one step (from near 0 to several steps).
      if (use_cuda && mode == ExecMode::kGraph && !with_phases && batch == 1) {
        spec.launch_ahead = config.launch_ahead;
      }
      if (!with_phases && reference) {
        spec.verify_tokens = config.verify_tokens;
        spec.reference = reference.get();
      }
      say(spec.label + ": " + std::to_string(config.warmup) + " warm-up" +
          (config.warmup_time_s > 0 ? " (or more, for " + seconds_text(config.warmup_time_s) + ")"
                                    : std::string()) +
          " + " + std::to_string(config.tokens) + " timed decode steps" +
          (batch > 1 ? " of " + std::to_string(batch) + " sequences in lockstep" : ""));
      PassResult pass = run_pass(*backend, spec);
      if (!warned_non_finite) warn_non_finite(spec.label + ": the logits after the pass");
      if (mode == ExecMode::kGraph && !pass.exec.captured) {
        const std::string why = pass.exec.failed_call + " failed with " + pass.exec.error_name +
                                " (" + pass.exec.error_message + ")";
        // (--graph on never gets here: run_pass threw at the failed capture, require_graph.)
        warn("graph capture failed (" + why + "); " + pass.exec.recovery + ", ran eagerly instead");
      }
      if (!pass.argmax_mismatches.empty()) {
        // Only under --keep-going (else the first mismatch throws): a warning says why the
        // exit code is 4, also where only a suite's one-line status is printed.
        const auto& first = pass.argmax_mismatches.front();
        warn(spec.label + ": " + std::to_string(pass.argmax_mismatches.size()) +
             " argmax mismatch(es) against the CPU's argmax of the same logits (first at step " +
             std::to_string(first.step) + ": " + std::to_string(first.backend_id) + " against " +
             std::to_string(first.cpu_id) + ")");
        report.exit_code = ExitCode::kVerification;
      }
      report.passes.push_back(make_pass_report(std::move(pass), model.info.bytes_per_token));
    }
  }

  // Checks across passes.
  const PassReport& main_pass = report.passes.front();
  if (config.graph == GraphMode::kBoth && use_cuda) {
    const PassReport* eager = nullptr;
    const PassReport* graph = nullptr;
    for (const auto& p : report.passes) {
      if (p.pass.spec.label == "eager") eager = &p;
      if (p.pass.spec.label == "graph") graph = &p;
    }
    if (eager && graph) {
      report.graph_matches_eager = eager->pass.sequence_ids == graph->pass.sequence_ids;
      if (!*report.graph_matches_eager) {
        // The first sequence that differs, and the first step where it does.
        size_t s = 0;
        while (s + 1 < eager->pass.sequence_ids.size() && s + 1 < graph->pass.sequence_ids.size() &&
               eager->pass.sequence_ids[s] == graph->pass.sequence_ids[s]) {
          ++s;
        }
        const auto& e_ids = eager->pass.sequence_ids[s];
        const auto& g_ids = graph->pass.sequence_ids[s];
        size_t i = 0;
        while (i < e_ids.size() && i < g_ids.size() && e_ids[i] == g_ids[i]) ++i;
        const std::string msg = "graph replay and eager produced different tokens from step " +
                                std::to_string(i) + " on" +
                                (batch > 1 ? " (sequence " + std::to_string(s) + ")" : "");
        if (!config.keep_going) throw Error(ExitCode::kVerification, msg);
        warn(msg);
        report.exit_code = ExitCode::kVerification;
      }
    }
  }
  for (const auto& p : report.passes) {
    // Every check counts (a near tie must not hide a later real mismatch, e.g. in another
    // sequence of a batch); one warning per kind and pass.
    bool warned_tie = false;
    bool warned_mismatch = false;
    for (const auto& check : p.pass.logits_checks) {
      if (check.argmax_agrees) continue;
      // A near tie (top two logits within 1e-3, relative) is expected rounding, not a failure.
      const bool tie = check.reference_margin <= 1e-3 * std::fabs(check.reference_top);
      if (tie ? warned_tie : warned_mismatch) {
        if (!tie) report.exit_code = ExitCode::kVerification;
        continue;
      }
      const std::string seq =
          batch > 1 ? " of sequence " + std::to_string(check.sequence) : std::string();
      const std::string msg = "step " + std::to_string(check.step) + seq + ": " + report.backend +
                              " argmax " + std::to_string(check.backend_id) +
                              " differs from the CPU reference's " +
                              std::to_string(check.reference_id) + " (reference margin " +
                              std::to_string(check.reference_margin) + ", max abs logit error " +
                              std::to_string(check.max_abs_error) + ")";
      warn(msg + (tie ? " — a near tie, not counted as a failure" : ""));
      if (tie) {
        warned_tie = true;
      } else {
        warned_mismatch = true;
        report.exit_code = ExitCode::kVerification;
      }
    }
  }
  for (const auto& p : report.passes) {
    const PassResult& pass = p.pass;
    if (pass.spec.max_noise > 0 && pass.stopping.rule == "time_budget") {
      // The figures then carry more noise than the user asked for: say so, not only in the
      // stopping record. Below kMinSamplesForMedianCi steps there is no 95% interval (the
      // JSON's median_noise is null then), so no noise figure either.
      char got[64] = "not yet measurable (fewer than 6 timed steps)";
      if (static_cast<int64_t>(pass.samples_ns.size()) >= kMinSamplesForMedianCi) {
        std::snprintf(got, sizeof got, "%.2f%%", pass.stopping.median_noise * 100.0);
      }
      char buf[400];
      std::snprintf(buf, sizeof buf,
                    "%s: --max-noise %g%% not reached: the median's noise was %s when the "
                    "--max-time budget (%g s) ended the pass after %lld round(s)",
                    pass.spec.label.c_str(), pass.spec.max_noise * 100.0, got, pass.spec.max_time_s,
                    static_cast<long long>(pass.stopping.rounds));
      warn(buf);
    }
  }
  // On the CPU backend step times vary by nature (shared cores): no warnings about them.
  if (use_cuda) {
    std::string shared_passes;  // one warning names every pass that shared the GPU
    int64_t others = -1;
    for (const auto& p : report.passes) {
      const std::string w = slow_steps_warning(p.pass.spec.label, p.pass.samples_ns);
      if (!w.empty()) warn(w);
      const TelemetrySummary summary = summarize_telemetry(p.pass.telemetry, p.pass.spec.batch);
      const std::string t = telemetry_warning(p.pass.spec.label, summary);
      if (!t.empty()) warn(t);
      if (summary.other_processes_max > 0) {
        shared_passes += (shared_passes.empty() ? "" : ", ") + p.pass.spec.label;
        others = std::max(others, summary.other_processes_max);
      }
    }
    const std::string shared = sharing_warning(shared_passes, others);
    if (!shared.empty()) warn(shared);
  }
  if (config.phase_timing) {
    for (size_t i = 0; i + 1 < report.passes.size(); ++i) {
      const PassReport& plain = report.passes[i];
      const PassReport& phased = report.passes[i + 1];
      if (phased.pass.spec.label == plain.pass.spec.label + "+phases") {
        report.phase_timing_overhead_ns[plain.pass.spec.label] =
            phased.tpot_ns.median - plain.tpot_ns.median;
      }
    }
  }
  report.kernels = backend->kernel_mix();
  if (use_cuda) {
    report.gpu_environment_after = cuda->environment();
    say("measuring the streaming read bandwidth");
    report.measured_bandwidth_gbps = cuda->measure_read_bandwidth_gbps();
    for (auto& p : report.passes) {
      p.roofline.measured_gbps = report.measured_bandwidth_gbps;
      if (p.roofline.measured_gbps > 0) {
        p.roofline.efficiency = p.roofline.achieved_gbps / p.roofline.measured_gbps;
      }
    }
  }
  if (main_pass.pass.stopped_at_end_of_generation) {
    warn("generation reached an end-of-generation token after " +
         std::to_string(main_pass.pass.samples_ns.size()) +
         " steps (use --ignore-eos to time all " + std::to_string(config.tokens) + ")");
  }
  if (model.tokenizer) report.generated_text = model.tokenizer->decode(main_pass.pass.ids);
  return report;
}

std::string slow_steps_warning(const std::string& label, const std::vector<int64_t>& samples_ns) {
  const size_t n = samples_ns.size();
  if (n < 20) return "";
  const std::vector<double> v(samples_ns.begin(), samples_ns.end());
  const Summary s = summarize(v);
  const SlowStretch slow = slow_stretch(v, s.median, 0.05);
  const int64_t needed = std::max<int64_t>(3, static_cast<int64_t>(std::ceil(0.05 * n)));
  if (slow.count < needed || s.mean <= 1.01 * s.median) return "";
  char buf[512];
  std::snprintf(
      buf, sizeof buf,
      "pass '%s': %lld of %zu timed steps (steps %lld to %lld, counted from 0) took more than "
      "5%% longer than the median %.1f µs, up to %.1f µs: tokens/s (from the mean step) is "
      "%.1f%% below the median's. The GPU or the host may have been throttled or busy; the "
      "median TPOT, and the efficiency taken from it, move far less",
      label.c_str(), static_cast<long long>(slow.count), n, static_cast<long long>(slow.first),
      static_cast<long long>(slow.last), s.median / 1e3, slow.worst / 1e3,
      100.0 * (1.0 - s.median / s.mean));
  return buf;
}

const PassReport& headline_pass(const RunReport& r) {
  if (r.passes.empty()) throw runtime_error("run report: no pass to summarise");
  const PassReport* best = &r.passes.front();
  for (const auto& p : r.passes) {
    if (p.pass.spec.phase_timing) continue;  // phase timing adds synchronisation: not the figure
    if (p.tpot_ns.median < best->tpot_ns.median || best->pass.spec.phase_timing) best = &p;
  }
  return *best;
}

std::string run_verdict(const RunReport& r) {
  if (r.passes.empty()) return "no timed steps";
  const PassReport* best = &headline_pass(r);
  const PassReport* eager = nullptr;
  const PassReport* graph = nullptr;
  for (const auto& p : r.passes) {
    if (p.pass.spec.label == "eager") eager = &p;
    if (p.pass.spec.label == "graph" && p.pass.exec.captured) graph = &p;
  }
  char buf[512];
  // tokens/s counts every timed step (steps ÷ their summed time, as tokens_per_s in the JSON);
  // the median TPOT beside it is the robust step time: the two differ where some steps are slow.
  std::snprintf(buf, sizeof buf,
                "%s: %.1f tokens/s (timed steps ÷ their summed time; median TPOT %.1f µs)",
                best->pass.spec.label.c_str(), best->tokens_per_s, best->tpot_ns.median / 1e3);
  std::string v = buf;
  if (best->pass.spec.batch > 1) {
    std::snprintf(buf, sizeof buf,
                  " per sequence, batch %lld: %.1f tokens/s aggregate (batch ÷ median step)",
                  static_cast<long long>(best->pass.spec.batch), best->aggregate_tokens_per_s);
    v += buf;
  }
  if (best->roofline.measured_gbps <= 0) {
    std::snprintf(buf, sizeof buf, ", %.1f GB/s of weights read", best->roofline.achieved_gbps);
    v += buf;
  } else {
    std::snprintf(buf, sizeof buf, ", %.0f GB/s = %.1f%% of the %.0f GB/s measured read bandwidth",
                  best->roofline.achieved_gbps, 100.0 * best->roofline.efficiency,
                  best->roofline.measured_gbps);
    v += buf;
    // Small kernels cost ~1-3 µs each whatever their bytes: when the step's bytes would take far
    // less than its node count times ~1.5 µs, launches and latency bound it, not HBM.
    const int64_t nodes = graph ? graph->pass.exec.graph_nodes : 0;
    const double bytes_time_us =
        static_cast<double>(best->roofline.bytes_per_token) / (best->roofline.measured_gbps * 1e3);
    if (nodes > 0 && bytes_time_us < 1.5 * static_cast<double>(nodes) &&
        best->roofline.efficiency < 0.6) {
      std::snprintf(buf, sizeof buf,
                    "; latency-bound: %lld graph nodes for %.0f µs of HBM traffic (fuse kernels)",
                    static_cast<long long>(nodes), bytes_time_us);
      v += buf;
    } else if (best->roofline.efficiency >= 0.85) {
      v += "; close to the bandwidth roofline";
    } else {
      v += "; bandwidth-bound, below the roofline by the kernels' efficiency";
    }
  }
  if (eager && graph && graph->tpot_ns.median > 0) {
    std::snprintf(buf, sizeof buf, "; graph %.2fx eager",
                  eager->tpot_ns.median / graph->tpot_ns.median);
    v += buf;
  }
  if (r.exit_code != ExitCode::kOk) v += "; VERIFICATION FAILED";
  return v;
}

}  // namespace decodebench
