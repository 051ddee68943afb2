#include "app/report/terminal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "app/report/text.hpp"
#include "core/output_file.hpp"
#include "core/telemetry.hpp"
#include "core/text.hpp"

namespace decodebench::app {

namespace {

std::string bytes_text(int64_t b) {
  return decimal_bytes(static_cast<uint64_t>(std::max<int64_t>(b, 0)));
}

std::string count_text(int64_t n) {
  const double v = static_cast<double>(n);
  if (v >= 1e9) return fmt::format("{:.2f} B", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.1f} M", v / 1e6);
  return fmt::format("{}", n);
}

// Microseconds from nanoseconds, 1 decimal.
std::string us(double ns) { return fmt::format("{:.1f}", ns / 1000.0); }

std::string ids_text(const std::vector<int32_t>& ids, size_t from, size_t count) {
  std::string s;
  for (size_t i = from; i < std::min(ids.size(), from + count); ++i) {
    s += (s.empty() ? "" : " ") + std::to_string(ids[i]);
  }
  return s;
}

/// "SM 1980 MHz · memory 3201 MHz · 412 W mean · 1.53 J/token · 42–60 °C · below application
/// clocks 0.0 ms (power), 0.0 ms (thermal) · no other compute process seen": a pass's telemetry
/// on one line (ranges over the rounds' ends; parts the device did not report are left out).
std::string telemetry_text(const TelemetrySummary& t) {
  const auto range = [](int64_t lo, int64_t hi, const char* unit) {
    return lo == hi ? fmt::format("{} {}", lo, unit) : fmt::format("{}–{} {}", lo, hi, unit);
  };
  std::vector<std::string> parts;
  if (t.sm_clock_max_mhz >= 0)
    parts.push_back("SM " + range(t.sm_clock_min_mhz, t.sm_clock_max_mhz, "MHz"));
  if (t.mem_clock_max_mhz >= 0) {
    parts.push_back("memory " + range(t.mem_clock_min_mhz, t.mem_clock_max_mhz, "MHz"));
  }
  if (t.mean_power_w >= 0) parts.push_back(fmt::format("{:.0f} W mean", t.mean_power_w));
  if (t.joules_per_token >= 0) parts.push_back(fmt::format("{:.3g} J/token", t.joules_per_token));
  if (t.verified_rounds > 0 && t.verified_rounds == t.rounds) {
    parts.push_back("no energy figure (verified steps: their rounds' energy is not the steps')");
  }
  if (t.temperature_max_c >= 0) {
    parts.push_back(range(t.temperature_min_c, t.temperature_max_c, "°C"));
  }
  if (t.power_throttled_ms >= 0 || t.thermal_throttled_ms >= 0) {
    const auto ms = [](double v) {
      return v < 0 ? std::string("n/a") : fmt::format("{:.1f} ms", v);
    };
    parts.push_back("below application clocks " + ms(t.power_throttled_ms) + " (power), " +
                    ms(t.thermal_throttled_ms) + " (thermal)");
  }
  if (t.other_processes_max >= 0) {
    parts.push_back(t.other_processes_max == 0
                        ? std::string("no other compute process seen")
                        : fmt::format("shared with {} other compute process{}",
                                      t.other_processes_max,
                                      t.other_processes_max == 1 ? "" : "es"));
  }
  std::string text;
  for (const std::string& part : parts) text += (text.empty() ? "" : " · ") + part;
  return text.empty() ? "no readings" : text;
}

std::string nvml_field(const nlohmann::json& gpu, const char* key) {
  if (!gpu.is_object() || !gpu.contains("nvml")) return "unavailable";
  const auto& n = gpu["nvml"];
  if (!n.value("available", false) || !n.contains(key)) return "unavailable";
  if (n[key].is_array()) {
    std::string s;
    for (const auto& v : n[key]) s += (s.empty() ? "" : ",") + v.get<std::string>();
    return s.empty() ? "none" : s;
  }
  return n[key].is_string() ? n[key].get<std::string>() : n[key].dump();
}

void print_gpu_clocks(const RunReport& r, FILE* out) {
  if (!r.gpu_environment.is_object()) return;
  const auto& a = r.gpu_environment;
  const auto& b = r.gpu_environment_after;
  fmt::print(
      out,
      "\ngpu      SM clock {} → {} MHz · memory clock {} → {} MHz · throttle reasons {} → {} "
      "· {} → {} °C · power limit {} W\n",
      nvml_field(a, "sm_clock_mhz"), nvml_field(b, "sm_clock_mhz"), nvml_field(a, "mem_clock_mhz"),
      nvml_field(b, "mem_clock_mhz"), nvml_field(a, "throttle_reasons"),
      nvml_field(b, "throttle_reasons"), nvml_field(a, "temperature_c"),
      nvml_field(b, "temperature_c"), nvml_field(a, "power_limit_w"));
}

}  // namespace

std::string kernels_line(const KernelMix& k) {
  // By form where the backend names them (the stream kernels' ring, split or per-warp form).
  const auto& counts = k.gemv_forms_per_step.empty() ? k.gemv_per_step : k.gemv_forms_per_step;
  std::string mix;
  for (const auto& [name, n] : counts) {
    mix += (mix.empty() ? "" : " · ") + fmt::format("{} {}", name, n);
  }
  const std::string late =
      k.x_split_kernels_after_wait == 0
          ? ""
          : fmt::format(" ({} after their wait)", k.x_split_kernels_after_wait);
  const std::string splits =
      k.x_split_kernels + k.x_splits_in_attention == 0
          ? ""
          : fmt::format(" · x' splits: {} kernel{}{}, {} in attention", k.x_split_kernels,
                        k.x_split_kernels == 1 ? "" : "s", late, k.x_splits_in_attention);
  const std::string attention = k.attention.empty() ? "" : " · attention: " + k.attention;
  return fmt::format("kernels  GEMVs per step: {} · {} matri{} in the tiled layout{}{}", mix,
                     k.tiled_matrices, k.tiled_matrices == 1 ? "x" : "ces", splits, attention);
}

void print_run_report(const RunReport& r, FILE* out, bool color) {
  (void)color;
  const ModelConfig& c = r.model_config;
  const ModelInfo& m = r.model_info;
  fmt::print(out, "decodebench · {} backend · {}\n", r.backend, r.device);
  if (!r.backend_fallback.empty()) {
    fmt::print(out, "backend  {}, chosen by --backend auto: {}\n", r.backend, r.backend_fallback);
  }
  const std::string what = m.source == "gguf"
                               ? fmt::format("{} ({}, {})", m.path, c.architecture, m.file_type)
                               : fmt::format("{} {}", m.name, m.file_type);
  fmt::print(out, "model    {}\n", what);
  // A step reads one row of an untied embedding table, so it can read less than the weights.
  const std::string per_step = bytes_text(m.bytes_per_token) + " read per step" +
                               (m.bytes_per_token < m.weight_bytes ? " (one embedding row)" : "");
  fmt::print(out,
             "         {} {} · hidden {} · heads {}/{} · head_dim {} · ffn {} · vocab {} · "
             "{} parameters · {} weights · {}\n",
             c.n_layers, c.n_layers == 1 ? "layer" : "layers", c.hidden, c.n_heads, c.n_kv_heads,
             c.head_dim, c.ffn, c.vocab, count_text(m.parameters), bytes_text(m.weight_bytes),
             per_step);
  if (!r.kernels.gemv_per_step.empty()) fmt::print(out, "{}\n", kernels_line(r.kernels));
  fmt::print(out, "prompt   {} token{} · load {:.2f} s · setup {:.2f} s · prefill {:.1f} ms\n",
             r.prompt_ids.size(), r.prompt_ids.size() == 1 ? "" : "s", r.load_ns / 1e9,
             r.setup_ns / 1e9, r.prefill_ns / 1e6);
  const int64_t batch = r.config.batch;
  if (batch > 1) {
    fmt::print(
        out,
        "batch    {} sequences in lockstep, each with its own KV cache · {} prompt · "
        "every sequence decodes {} tokens (no end-of-generation stop)\n",
        batch,
        r.config.prompt_ids.empty() && r.config.prompt_text.empty() ? "own synthetic" : "shared",
        r.config.tokens);
  }
  // Batched passes: TPOT is the time of one lockstep step; tokens/s is per sequence.
  fmt::print(out, "\n{:<16} {:>10}", "run", "tokens/s");
  if (batch > 1) fmt::print(out, " {:>10}", "aggregate");
  fmt::print(out, " {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}   ({}, µs)\n", "mean", "median",
             "p90", "p99", "min", "max", "stddev", batch > 1 ? "step" : "TPOT");
  for (const auto& p : r.passes) {
    const Summary& s = p.tpot_ns;
    fmt::print(out, "{:<16} {:>10.1f}", p.pass.spec.label, p.tokens_per_s);
    if (batch > 1) fmt::print(out, " {:>10.1f}", p.aggregate_tokens_per_s);
    fmt::print(out, " {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n", us(s.mean), us(s.median),
               us(s.p90), us(s.p99), us(s.min), us(s.max),
               s.count >= 2 ? us(s.stddev) : std::string("-"));
  }
  for (const auto& p : r.passes) {
    const StoppingReport& st = p.pass.stopping;
    if (st.rule != "tokens" && st.rule != "eos") {
      const std::string noise =
          static_cast<int64_t>(p.pass.samples_ns.size()) >= kMinSamplesForMedianCi
              ? fmt::format("{:.2f}%", 100.0 * st.median_noise)
              : std::string("n/a (fewer than 6 steps)");
      fmt::print(out, "stopping {}: {} after {} rounds ({:.2f} s timed), median noise {}\n",
                 p.pass.spec.label, st.rule, st.rounds, st.timed_s, noise);
    }
  }
  if (r.telemetry_asked && !r.telemetry_unavailable.empty()) {
    fmt::print(out, "gpu      telemetry unavailable: {}\n", r.telemetry_unavailable);
  }
  for (const auto& p : r.passes) {
    if (p.pass.telemetry.empty()) continue;
    fmt::print(out, "gpu      {}: {}\n", p.pass.spec.label,
               telemetry_text(summarize_telemetry(p.pass.telemetry, p.pass.spec.batch)));
  }
  for (const auto& p : r.passes) {
    if (p.phases.empty()) continue;
    fmt::print(out, "\nphases of '{}' (µs)\n  {:<20} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
               p.pass.spec.label, "", "median", "mean", "p90", "p99", "max");
    for (const char* name : {"h2d", "launch", "wait", "argmax", "total"}) {
      const auto it = p.phases.find(name);
      if (it == p.phases.end()) continue;
      const Summary& s = it->second;
      fmt::print(out, "  {:<20} {:>9} {:>9} {:>9} {:>9} {:>9}\n", name, us(s.median), us(s.mean),
                 us(s.p90), us(s.p99), us(s.max));
    }
    const auto gpu = p.phases.find("gpu_ms");
    if (gpu != p.phases.end()) {
      fmt::print(out, "  {:<20} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f}\n", "gpu (events)",
                 gpu->second.median * 1e3, gpu->second.mean * 1e3, gpu->second.p90 * 1e3,
                 gpu->second.p99 * 1e3, gpu->second.max * 1e3);
    }
    // The phases are a GPU step's; on the CPU the whole step is the "launch" call.
    if (r.backend == "cpu") {
      fmt::print(out,
                 "  (cpu backend: the forward pass runs inside 'launch', on the calling threads; "
                 "h2d and wait have no work)\n");
    }
  }
  for (const auto& p : r.passes) {
    if (!p.pass.launch_ahead_off.empty()) {
      fmt::print(out, "launch   {}: steps one at a time, not launched ahead: {}\n",
                 p.pass.spec.label, p.pass.launch_ahead_off);
    }
  }
  for (const auto& p : r.passes) {
    if (!p.host_overhead_us) continue;
    if (p.idle_ns) {
      // Launched ahead, the host's work overlaps the GPU's: what is left is the GPU's wait.
      fmt::print(out,
                 "host     {}: {:.1f} µs per token outside the GPU's kernels (from one step's last "
                 "kernel to the next one's first, on the GPU's clock: median of {} steps, p90 "
                 "{:.1f} µs; {})",
                 p.pass.spec.label, *p.host_overhead_us, p.idle_ns->count, p.idle_ns->p90 / 1e3,
                 p.pass.launched_ahead
                     ? "steps launched ahead: the token's way to the host and the host's work "
                       "overlap the next step"
                     : "includes getting the token to the host");
      if (p.replay_host_overhead_us) {
        fmt::print(out, "; replay check {:.1f} µs", *p.replay_host_overhead_us);
      }
      fmt::print(out, "\n");
      continue;
    }
    fmt::print(out,
               "host     {}: {:.1f} µs per token outside the GPU's work (median TPOT {:.1f} µs − "
               "{:.1f} µs, the step's graph replayed {} times back to back at position {}",
               p.pass.spec.label, *p.host_overhead_us, p.tpot_ns.median / 1e3, p.pass.gpu_step_us,
               p.pass.spec.gpu_step_replays, p.pass.gpu_step_position);
    // Asked for, but no step's idle time counted: say why the coarser figure stands here.
    fmt::print(out, "{})\n",
               p.pass.spec.measure_idle ? "; no idle time between steps counted: every timed "
                                          "step was verified or followed a round's start"
                                        : "");
  }
  for (const auto& [mode, ns] : r.phase_timing_overhead_ns) {
    // The difference of two noisy medians: give its uncertainty (the two medians' 95% interval
    // half-widths combined), so that a negative or tiny figure reads as noise, not as a fact.
    double spread2 = 0;
    bool known = true;
    for (const std::string& label : {mode, mode + "+phases"}) {
      const auto p = std::find_if(r.passes.begin(), r.passes.end(),
                                  [&](const PassReport& q) { return q.pass.spec.label == label; });
      if (p == r.passes.end() || p->tpot_ns.count < kMinSamplesForMedianCi) {
        known = false;
        break;
      }
      const double half = (p->tpot_ns.median_ci_high - p->tpot_ns.median_ci_low) / 2;
      spread2 += half * half;
    }
    const double spread = std::sqrt(spread2);
    fmt::print(out, "phase-timing overhead ({}): {:+.1f} µs per token (median with − without{})\n",
               mode, ns / 1000.0,
               !known ? "; fewer than 6 steps: no uncertainty"
               : std::fabs(ns) <= spread
                   ? fmt::format("; ± {:.1f} µs: within the noise", spread / 1000.0)
                   : fmt::format("; ± {:.1f} µs", spread / 1000.0));
  }
  print_gpu_clocks(r, out);
  if (r.passes.empty()) return;  // nothing below without a pass (the runner always has one)
  const PassReport& main_pass = headline_pass(r);
  if (r.measured_bandwidth_gbps > 0) {
    fmt::print(out,
               "\nroofline {} per token · {:.0f} GB/s achieved ({}) · {:.0f} GB/s measured "
               "streaming read · efficiency {:.1f}%\n",
               bytes_text(main_pass.roofline.bytes_per_token), main_pass.roofline.achieved_gbps,
               main_pass.pass.spec.label, r.measured_bandwidth_gbps,
               100.0 * main_pass.roofline.efficiency);
  }
  if (r.graph_matches_eager) {
    const PassReport* eager = nullptr;
    const PassReport* graph = nullptr;
    for (const auto& p : r.passes) {
      if (p.pass.spec.label == "eager") eager = &p;
      if (p.pass.spec.label == "graph") graph = &p;
    }
    if (eager && graph && eager->tpot_ns.median > 0 && graph->tpot_ns.median > 0) {
      // Eager passes run one step at a time: a graph launched ahead gains from both.
      fmt::print(out, "graph vs eager: tokens {} · speed-up {:.2f}× (median TPOT{})\n",
                 *r.graph_matches_eager ? "identical" : "DIFFERENT",
                 eager->tpot_ns.median / graph->tpot_ns.median,
                 graph->pass.launched_ahead && !eager->pass.launched_ahead
                     ? "; the graph's steps launched ahead, the eager ones one at a time"
                     : "");
    }
  }
  const auto& seqs = main_pass.pass.sequence_ids;
  const size_t shown = batch > 1 ? std::min<size_t>(seqs.size(), 4) : 1;
  fmt::print(out, "\n");
  for (size_t s = 0; s < shown; ++s) {
    const auto& ids = batch > 1 ? seqs[s] : main_pass.pass.ids;
    const std::string head = batch > 1 ? fmt::format("seq {:<3}", s) : std::string("ids     ");
    fmt::print(out, "{} first: {}", head, ids_text(ids, 0, 8));
    if (ids.size() > 8)
      fmt::print(out, " · last: {}",
                 ids_text(ids, ids.size() - std::min<size_t>(8, ids.size()), 8));
    fmt::print(out, "\n");
  }
  if (seqs.size() > shown) {
    fmt::print(out, "         … {} more sequences (all in the JSON: runs[].results.sequences)\n",
               seqs.size() - shown);
  }
  for (const auto& p : r.passes) {
    if (p.pass.argmax_checked > 0) {
      fmt::print(out, "verify   {}: argmax checked on {} steps{}, {} mismatches\n",
                 p.pass.spec.label, p.pass.argmax_checked / std::max<int64_t>(1, batch),
                 batch > 1 ? fmt::format(" × {} sequences", batch) : std::string(),
                 p.pass.argmax_mismatches.size());
    }
    if (!p.pass.logits_checks.empty()) {
      double worst_abs = 0, worst_rel = 0;
      int agree = 0;
      for (const auto& lc : p.pass.logits_checks) {
        worst_abs = std::max(worst_abs, lc.max_abs_error);
        worst_rel = std::max(worst_rel, lc.max_rel_error);
        agree += lc.argmax_agrees ? 1 : 0;
      }
      fmt::print(out,
                 "verify   {} vs cpu logits over {} steps{}: max abs error {:.3g}, max rel error "
                 "{:.3g}, argmax agrees on {}/{}\n",
                 p.pass.spec.label,
                 p.pass.logits_checks.size() / static_cast<size_t>(std::max<int64_t>(1, batch)),
                 batch > 1 ? fmt::format(" × {} sequences", batch) : std::string(), worst_abs,
                 worst_rel, agree, p.pass.logits_checks.size());
    }
  }
  if (!r.generated_text.empty()) {
    fmt::print(out, "text     {}\n", printable_line(r.generated_text, 400));
  }
  if (!r.warnings.empty()) {
    fmt::print(out, "warnings {} (printed on stderr as they arose; a --json result lists them)\n",
               r.warnings.size());
  }
  fmt::print(out, "verdict  {}\n", run_verdict(r));
  flush_output(out);
}

}  // namespace decodebench::app
