#include "core/compare/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/result/json_file.hpp"
#include "core/runner.hpp"
#include "core/stats/statistics.hpp"
#include "core/suite/suite.hpp"
#include "core/text.hpp"

namespace decodebench {

const char* verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::kFaster:
      return "faster";
    case Verdict::kSlower:
      return "slower";
    case Verdict::kSame:
      return "same";
    case Verdict::kUnclear:
      return "unclear";
  }
  return "?";
}

const std::vector<MetricSpec>& compare_metrics() {
  static const std::vector<MetricSpec> kMetrics = {
      {"tpot_median", "ns", false, "median time per output token", true},
      {"tpot_mean", "ns", false, "mean time per output token", false, ResampledStatistic::kMean},
      {"tpot_p90", "ns", false, "90th percentile time per output token", false,
       ResampledStatistic::kP90},
      {"tpot_p99", "ns", false, "99th percentile time per output token", false,
       ResampledStatistic::kP99},
      {"tokens_per_s", "tokens/s", true, "decode throughput (timed steps / total step time)", false,
       ResampledStatistic::kTokensPerS},
      {"gpu_ms", "ms", false, "median CUDA-event GPU time per step (--phase-timing)", true},
      {"h2d", "ns", false, "median host-to-device copy phase (--phase-timing)", true},
      {"launch", "ns", false, "median launch phase (--phase-timing)", true},
      {"wait", "ns", false, "median wait phase (--phase-timing)", true},
      {"argmax", "ns", false, "median argmax read-back phase (--phase-timing)", true},
      {"phase_total", "ns", false, "median total of the phases (--phase-timing)", true},
  };
  return kMetrics;
}

bool change_and_test_disagree(double change_pct, bool higher_is_better, double z) {
  const bool better = higher_is_better ? change_pct > 0 : change_pct < 0;
  return better ? z > 0 : z < 0;
}

std::string bootstrap_minimum_text() {
  return fmt::format("{} a side ({} for tpot_p99)",
                     bootstrap_min_samples(ResampledStatistic::kMean),
                     bootstrap_min_samples(ResampledStatistic::kP99));
}

Verdict decide_verdict(double change_pct, bool higher_is_better, double p_value, double z,
                       bool check_direction, double alpha, double threshold_pct) {
  const bool significant = p_value < alpha;
  // --threshold 0: the test alone decides (|change| ≥ 0 always, which would leave no "same").
  // A significant test with no change of the metric itself (equal medians) is unclear, never
  // slower.
  const bool large =
      threshold_pct > 0 ? std::fabs(change_pct) >= threshold_pct : significant && change_pct != 0;
  if (significant && large) {
    // A median's verdict claims the test's significance, so the test must point its way too.
    if (check_direction && change_and_test_disagree(change_pct, higher_is_better, z)) {
      return Verdict::kUnclear;
    }
    const bool better = higher_is_better ? change_pct > 0 : change_pct < 0;
    return better ? Verdict::kFaster : Verdict::kSlower;
  }
  if (!significant && !large) return Verdict::kSame;
  return Verdict::kUnclear;
}

double parse_threshold_percent(const std::string& text) {
  std::string t = text;
  if (!t.empty() && t.back() == '%') t.pop_back();
  char* end = nullptr;
  const double v = t.empty() ? NAN : std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(v) || v < 0 || v >= 1000) {
    throw usage_error("--threshold: '" + echo_value(text) +
                      "' is not a percentage in [0, 1000) (e.g. 5% or 2.5)");
  }
  return v;
}

namespace {

const MetricSpec& find_metric(const std::string& name) {
  std::string names;
  for (const MetricSpec& m : compare_metrics()) {
    if (name == m.name) return m;
    names += (names.empty() ? "" : "|") + std::string(m.name);
  }
  throw usage_error("--metric: unknown metric '" + echo_value(name) + "' (expected " + names + ")");
}

// A JSON value as text: a string as it is, anything else as JSON.
std::string text_of(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// text_of in single quotes, as the notes show values.
std::string quoted(const nlohmann::json& v) { return "'" + text_of(v) + "'"; }

std::string str(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return "?";
  return text_of(j[key]);
}

// "model shape dtype graph", the model without its folder.
std::string short_label(const nlohmann::json& key) {
  std::string model = str(key, "model");
  const size_t colon = model.find(':');
  const size_t slash = model.rfind('/');
  if (colon != std::string::npos && slash != std::string::npos && slash > colon) {
    model = model.substr(0, colon + 1) + model.substr(slash + 1);
  }
  return model + " " + str(key, "shape") + " " + str(key, "dtype") + " " + str(key, "graph");
}

// The stored median step time (and mean, p90, p99 and tokens/s, where stored) must be what the
// stored samples give: compare reports the change from the former and tests it on the latter, so
// a file whose two disagree (edited or merged by hand; tokens/s −1 was reported as −100% before
// round 36) has no single answer. `runs` written by decodebench always agree (summarize()).
void check_stored_stats(const nlohmann::json& results, const std::vector<double>& samples,
                        const std::string& at) {
  if (!results.contains("stats") || !results["stats"].is_object()) return;
  const auto& stats = results["stats"];
  if (!stats.contains("tpot_ns") || !stats["tpot_ns"].is_object() ||
      !stats["tpot_ns"].contains("median") || !stats["tpot_ns"]["median"].is_number()) {
    return;
  }
  const Summary s = summarize(samples);
  const auto check = [&](const std::string& field, double stored, double computed,
                         const std::string& what) {
    const std::string unit = field == "tokens_per_s" ? "" : " ns";
    if (!(std::fabs(stored - computed) <= 1e-9 * std::fabs(computed) + 1e-6)) {
      throw usage_error(at + ": results.stats." + field + " (" + fmt::format("{}", stored) + unit +
                        ") is not " + what + " of results.samples_ns (" +
                        fmt::format("{}", computed) + unit +
                        "); the file was changed after decodebench wrote it");
    }
  };
  check("tpot_ns.median", stats["tpot_ns"]["median"].get<double>(), s.median, "the median");
  // The other figures compare may report, where stored: each is what the writer computed from the
  // same samples (summarize; tokens/s = steps ÷ their summed time).
  for (const auto& [field, value] : {std::pair{"mean", s.mean}, {"p90", s.p90}, {"p99", s.p99}}) {
    if (stats["tpot_ns"].contains(field) && stats["tpot_ns"][field].is_number()) {
      check(std::string("tpot_ns.") + field, stats["tpot_ns"][field].get<double>(), value,
            std::string("the ") + field);
    }
  }
  if (stats.contains("tokens_per_s") && stats["tokens_per_s"].is_number()) {
    double total = 0;
    for (const double v : samples) total += v;
    check("tokens_per_s", stats["tokens_per_s"].get<double>(),
          static_cast<double>(samples.size()) * 1e9 / total, "the steps per second");
  }
}

// Whether model.shape's field `name` is part of the configuration key's shape (kKeyShapeFields,
// from which run_key builds it).
bool key_shape_field(const std::string& name) {
  for (const KeyShapeField& f : kKeyShapeFields) {
    if (name == f.name) return true;
  }
  return false;
}

void add_result_runs(const nlohmann::json& doc, const std::string& where, LoadedRuns& out,
                     std::map<std::string, int>& seen) {
  if (!doc.is_object()) throw usage_error(where + ": not a JSON object");
  if (!doc.contains("schema_version")) {
    throw usage_error(where + ": no schema_version (not a decodebench result document)");
  }
  // The string "1.0", not the number 1.0 (which str() would print alike).
  if (!doc["schema_version"].is_string()) {
    throw usage_error(where + ": result schema_version is " + doc["schema_version"].dump() +
                      ", not a string (this decodebench reads version \"" + kResultSchemaVersion +
                      "\")");
  }
  const std::string version = str(doc, "schema_version");
  if (version != kResultSchemaVersion) {
    throw usage_error(where + ": result schema_version '" + version +
                      "' is not supported (this decodebench reads version " + kResultSchemaVersion +
                      ")");
  }
  if (!doc.contains("runs") || !doc["runs"].is_array() || doc["runs"].empty()) {
    throw usage_error(where + ": no runs[] (a result document holds at least one run)");
  }
  const auto& runs = doc["runs"];
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& run = runs[i];
    const std::string at = where + ": runs[" + std::to_string(i) + "]";
    if (!run.is_object() || !run.contains("key") || !run["key"].is_object() ||
        !run["key"].contains("id") || !run["key"]["id"].is_string()) {
      throw usage_error(at + " has no key.id (the configuration key runs are matched by)");
    }
    const std::string id = run["key"]["id"].get<std::string>();
    // The key's fields are read as text (labels, the cpu backend's rule) and the batch as a count.
    for (const char* k : {"model", "shape", "dtype", "backend", "graph", "device"}) {
      if (run["key"].contains(k) && !run["key"][k].is_string()) {
        throw usage_error(at + ": key." + k + " is not a string");
      }
    }
    if (run["key"].contains("batch") && !run["key"]["batch"].is_number_integer()) {
      throw usage_error(at + ": key.batch is not an integer");
    }
    const auto* samples = run.contains("results") && run["results"].is_object() &&
                                  run["results"].contains("samples_ns")
                              ? &run["results"]["samples_ns"]
                              : nullptr;
    if (samples == nullptr || !samples->is_array() || samples->empty()) {
      throw usage_error(at + " ('" + id +
                        "') has no per-token samples (results.samples_ns), which the "
                        "tests need");
    }
    std::vector<double> values;
    values.reserve(samples->size());
    for (const auto& s : *samples) {
      if (!s.is_number()) throw usage_error(at + ": results.samples_ns holds a non-number");
      values.push_back(s.get<double>());
      if (!std::isfinite(values.back()) || values.back() <= 0) {
        throw usage_error(at + ": results.samples_ns holds " + fmt::format("{}", values.back()) +
                          " (a step time is a positive number of nanoseconds)");
      }
    }
    check_stored_stats(run["results"], values, at);
    LoadedRun r;
    r.key_id = id;
    const auto& results = run["results"];
    if (results.contains("start_position") && results["start_position"].is_number_integer()) {
      r.start_position = results["start_position"].get<int64_t>();
    }
    // `seen` counts runs per key id and, under "id\n@position" (no key id holds a newline), per
    // key id and start position.
    r.repeat_of_key = ++seen[id];
    const int n = ++seen[id + "\n@" + std::to_string(r.start_position)];
    r.repeat_at_start = n;
    // "@N" always where the position is known, so one workload keeps its id in every comparison.
    r.id = id + (r.start_position >= 0 ? "@" + std::to_string(r.start_position) : "") +
           (n == 1 ? "" : "#" + std::to_string(n));
    r.label = short_label(run["key"]);  // name_start_positions adds " @N" where needed, then #n
    r.key = run["key"];
    r.run = run;
    r.origin = where;
    // The run settings outside the key that change what is timed (config.<name>.value).
    if (doc.contains("config") && doc["config"].is_object()) {
      r.settings = nlohmann::json::object();
      for (const char* name : {"tokens", "seed", "fusion", "pdl", "weight_layout", "capture_mode",
                               "stateless", "ignore_eos", "inject_capture_fault"}) {
        const auto it = doc["config"].find(name);
        if (it != doc["config"].end() && it->is_object() && it->contains("value")) {
          r.settings[name] = (*it)["value"];
        }
      }
      // What the pass did, not what was asked (eager, verified and phase-timed passes run one
      // step at a time whatever --launch-ahead says); results written before launch-ahead
      // existed ran one step at a time.
      const auto ahead = results.find("launch_ahead");
      const bool on = ahead != results.end() && ahead->is_object() && ahead->contains("on") &&
                      (*ahead)["on"] == true;
      r.settings["launch_ahead"] = on ? "on" : "off";
    }
    // The model's fields outside the key (model.shape; the key holds layers, hidden, heads,
    // kv_heads, ffn and vocab) and its bytes per token, as settings "model.<name>": another
    // head_dim, Q/K/V bias or GGUF file under the same key is another model, so it pairs last and
    // is named in the settings note.
    if (doc.contains("model") && doc["model"].is_object()) {
      const auto& model = doc["model"];
      if (!r.settings.is_object()) r.settings = nlohmann::json::object();
      const auto shape = model.find("shape");
      if (shape != model.end() && shape->is_object()) {
        for (const auto& [name, value] : shape->items()) {
          if (!key_shape_field(name)) r.settings["model." + name] = value;
        }
      }
      const auto bytes = model.find("bytes_per_token");
      if (bytes != model.end() && bytes->is_number()) r.settings["model.bytes_per_token"] = *bytes;
    }
    if (doc.contains("environment") && doc["environment"].is_object() &&
        doc["environment"].contains("variables") && doc["environment"]["variables"].is_object()) {
      r.variables = doc["environment"]["variables"];
    }
    const auto tool = doc.find("tool");
    if (tool != doc.end() && tool->is_object()) {
      const auto build_type = tool->find("build_type");
      if (build_type != tool->end() && build_type->is_string()) r.build_type = *build_type;
    }
    out.runs.push_back(std::move(r));
  }
}

// Where a document holds one key at several start positions (a sweep of prompt lengths), the
// runs' labels say which position each is (" @N", " @?" where unknown); then " #n" for repeats.
void name_start_positions(LoadedRuns& out) {
  std::map<std::string, std::set<int64_t>> starts;
  for (const auto& r : out.runs) starts[r.key_id].insert(r.start_position);
  for (auto& r : out.runs) {
    if (starts[r.key_id].size() >= 2) {
      r.label += r.start_position >= 0 ? " @" + std::to_string(r.start_position) : " @?";
    }
    if (r.repeat_at_start > 1) r.label += " #" + std::to_string(r.repeat_at_start);
  }
}

// Reported value and raw samples of `metric` in `run`; nullopt when the run did not measure it
// (phase metrics of a run without --phase-timing).
struct Series {
  double value = 0;
  std::vector<double> samples;
};

std::optional<Series> metric_series(const LoadedRun& run, const MetricSpec& metric) {
  const auto& results = run.run["results"];
  const std::string name = metric.name;
  const auto missing_stat = [&](const std::string& field) {
    return usage_error(run.origin + " ('" + run.id + "'): missing " + field + " for metric " +
                       name);
  };
  Series s;
  if (name.rfind("tpot_", 0) == 0 || name == "tokens_per_s") {
    for (const auto& v : results["samples_ns"]) s.samples.push_back(v.get<double>());
    const auto& stats = results.contains("stats") ? results["stats"] : nlohmann::json();
    if (name == "tokens_per_s") {
      if (!stats.is_object() || !stats.contains("tokens_per_s") ||
          !stats["tokens_per_s"].is_number()) {
        throw missing_stat("results.stats.tokens_per_s");
      }
      s.value = stats["tokens_per_s"].get<double>();
    } else {
      const std::string field = name.substr(5);  // median, mean, p90, p99
      if (!stats.is_object() || !stats.contains("tpot_ns") || !stats["tpot_ns"].is_object() ||
          !stats["tpot_ns"].contains(field) || !stats["tpot_ns"][field].is_number()) {
        throw missing_stat("results.stats.tpot_ns." + field);
      }
      s.value = stats["tpot_ns"][field].get<double>();
    }
    return s;
  }
  const std::string phase = name == "phase_total" ? "total" : name;
  const auto& phases = results.contains("phases") ? results["phases"] : nlohmann::json();
  const auto& samples =
      results.contains("phase_samples") ? results["phase_samples"] : nlohmann::json();
  if (!phases.is_object() || !phases.contains(phase) || !samples.is_object() ||
      !samples.contains(phase) || !samples[phase].is_array() || samples[phase].empty()) {
    return std::nullopt;
  }
  if (!phases[phase].is_object() || !phases[phase].contains("median") ||
      !phases[phase]["median"].is_number()) {
    throw missing_stat("results.phases." + phase + ".median");
  }
  s.value = phases[phase]["median"].get<double>();
  for (const auto& v : samples[phase]) {
    if (!v.is_number()) {
      throw usage_error(run.origin + " ('" + run.id + "'): results.phase_samples." + phase +
                        " holds a non-number");
    }
    s.samples.push_back(v.get<double>());
    if (!std::isfinite(s.samples.back()) || s.samples.back() < 0) {
      throw usage_error(run.origin + " ('" + run.id + "'): results.phase_samples." + phase +
                        " holds " + fmt::format("{}", s.samples.back()) +
                        " (a phase time is a non-negative number)");
    }
  }
  return s;
}

// "NAME '0' in A, unset in B; ..." for the variables whose values differ; empty when they agree
// or neither side records them (null: older writers). One side recording some where the other
// records none: "NAME '0' in A, not recorded in B (an older decodebench)".
std::string variables_difference(const nlohmann::json& a, const std::string& a_name,
                                 const nlohmann::json& b, const std::string& b_name) {
  if (a.is_object() != b.is_object()) {
    const nlohmann::json& known = a.is_object() ? a : b;
    if (known.empty()) return "";
    std::string out;
    for (const auto& [k, v] : known.items()) {
      out += (out.empty() ? "" : "; ") + k + " " + quoted(v) + " in " +
             (a.is_object() ? a_name : b_name);
    }
    return out + ", not recorded in " + (a.is_object() ? b_name : a_name) +
           " (an older decodebench)";
  }
  if (!a.is_object()) return "";
  std::set<std::string> names;
  for (const auto& [k, v] : a.items()) names.insert(k);
  for (const auto& [k, v] : b.items()) names.insert(k);
  const auto value = [](const nlohmann::json& vars, const std::string& k) {
    const auto it = vars.find(k);
    return it == vars.end() ? std::string("unset") : quoted(*it);
  };
  std::string out;
  for (const auto& k : names) {
    const std::string va = value(a, k), vb = value(b, k);
    if (va == vb) continue;
    out += (out.empty() ? "" : "; ") + k + " " + va + " in " + a_name + ", " + vb + " in " + b_name;
  }
  return out;
}

// The settings both documents record whose values differ (a setting one side lacks, from an
// older writer, is not compared), in name order.
std::vector<std::string> differing_settings(const nlohmann::json& a, const nlohmann::json& b) {
  std::vector<std::string> out;
  if (!a.is_object() || !b.is_object()) return out;
  for (const auto& [k, v] : a.items()) {
    const auto it = b.find(k);
    if (it != b.end() && *it != v) out.push_back(k);
  }
  return out;
}

// "fusion 'on' in A, 'off' in B; ..." for differing_settings; empty when there are none.
std::string settings_difference(const nlohmann::json& a, const std::string& a_name,
                                const nlohmann::json& b, const std::string& b_name) {
  std::string out;
  for (const std::string& k : differing_settings(a, b)) {
    out += (out.empty() ? "" : "; ") + k + " " + quoted(a[k]) + " in " + a_name + ", " +
           quoted(b[k]) + " in " + b_name;
  }
  return out;
}

}  // namespace

LoadedRuns load_runs(const nlohmann::json& doc, const std::string& name) {
  LoadedRuns out;
  out.name = name;
  if (!doc.is_object()) throw usage_error(name + ": not a JSON object");
  std::map<std::string, int> seen;
  const bool is_suite = doc.contains("suite") && doc.contains("results");
  if (!is_suite && !doc.contains("runs")) {
    throw usage_error(name +
                      ": unknown format: neither a decodebench result document (runs[]) nor a "
                      "suite document (suite, results[])");
  }
  if (!is_suite) {
    out.kind = "result";
    add_result_runs(doc, name, out, seen);
    name_start_positions(out);
    return out;
  }
  out.kind = "suite";
  if (!doc.contains("schema_version") || !doc["schema_version"].is_string()) {
    throw usage_error(name + ": suite schema_version is " +
                      (doc.contains("schema_version") ? doc["schema_version"].dump() : "missing") +
                      ", not a string (this decodebench reads version \"" + kSuiteSchemaVersion +
                      "\")");
  }
  const std::string version = str(doc, "schema_version");
  if (version != kSuiteSchemaVersion) {
    throw usage_error(name + ": suite schema_version '" + version +
                      "' is not supported (this decodebench reads version " + kSuiteSchemaVersion +
                      ")");
  }
  if (!doc["results"].is_array()) throw usage_error(name + ": results is not an array");
  for (size_t i = 0; i < doc["results"].size(); ++i) {
    add_result_runs(doc["results"][i], name + ": results[" + std::to_string(i) + "]", out, seen);
  }
  name_start_positions(out);
  if (doc.contains("configurations") && doc["configurations"].is_array()) {
    for (size_t i = 0; i < doc["configurations"].size(); ++i) {
      const auto& c = doc["configurations"][i];
      if (c.is_object() && c.contains("status") && !c["status"].is_string()) {
        throw usage_error(name + ": configurations[" + std::to_string(i) +
                          "].status is not a string (\"ok\" or the failure's kind)");
      }
      if (c.is_object() && c.value("status", std::string()) != "ok") {
        out.failures.push_back(str(c, "label") + ": " + str(c, "status") + " (" + str(c, "error") +
                               ")");
      }
    }
  }
  return out;
}

LoadedRuns load_runs_file(const std::string& path) {
  const std::string text = read_input_file(path, "result file");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // syntax, or a number out of range (1e400)
    throw usage_error(path + ": not valid JSON (" + e.what() + ")");
  }
  return load_runs(doc, path);
}

int CompareReport::count(Verdict verdict) const {
  int n = 0;
  for (const auto& r : runs) {
    for (const auto& m : r.metrics) n += m.verdict == verdict ? 1 : 0;
  }
  return n;
}

ExitCode CompareReport::exit_code() const {
  return count(Verdict::kSlower) > 0 ? ExitCode::kRuntime : ExitCode::kOk;
}

CompareReport compare_runs(const LoadedRuns& baseline, const LoadedRuns& candidate,
                           const CompareOptions& options) {
  if (options.metrics.empty()) throw usage_error("--metric: no metric given");
  std::vector<const MetricSpec*> metrics;
  for (const auto& name : options.metrics) {
    const MetricSpec* m = &find_metric(name);
    // Twice would print its rows twice and count their verdicts twice.
    if (std::find(metrics.begin(), metrics.end(), m) != metrics.end()) {
      throw usage_error("--metric: '" + name + "' is given twice");
    }
    metrics.push_back(m);
  }
  if (!(options.alpha > 0 && options.alpha < 1)) {
    throw usage_error(fmt::format("--alpha must be in (0, 1) (got {:g})", options.alpha));
  }
  if (!std::isfinite(options.threshold_pct) || options.threshold_pct < 0) {
    throw usage_error("--threshold must be a percentage >= 0");
  }
  for (const MetricSpec* m : metrics) {
    if (!m->median && bootstrap_smallest_p(options.alpha) >= options.alpha) {
      throw usage_error(fmt::format(
          "--alpha {:g} is below the smallest p the bootstrap of {} can give ({:.3g} with {} "
          "resamples): use --alpha 1e-05 or more with tpot_mean, tpot_p90, tpot_p99 or "
          "tokens_per_s",
          options.alpha, m->name, bootstrap_smallest_p(options.alpha),
          bootstrap_resamples(options.alpha)));
    }
  }
  CompareReport report;
  report.baseline_name = baseline.name;
  report.candidate_name = candidate.name;
  report.options = options;
  for (const auto& f : baseline.failures) report.notes.push_back(baseline.name + ": failed " + f);
  for (const auto& f : candidate.failures) {
    report.notes.push_back(candidate.name + ": failed " + f);
  }

  // Runs match by configuration key and, since the key leaves out the prompt length while a
  // step's cost grows with the context (attention over every cached position), by the position
  // of their first timed step (below: pairing within them). Where any run of a key, in either
  // file, lacks results.start_position (older writers), that key's runs match by key alone.
  std::set<std::string> unknown_start;
  std::map<std::string, std::string> known_start;  // key id → its label
  for (const LoadedRuns* f : {&baseline, &candidate}) {
    for (const auto& r : f->runs) {
      if (r.start_position < 0) {
        unknown_start.insert(r.key_id);
      } else {
        known_start.emplace(r.key_id, short_label(r.key));
      }
    }
  }
  for (const auto& [id, label] : known_start) {
    if (unknown_start.count(id) > 0) {
      report.notes.push_back(label +
                             ": start positions not compared (a file has runs of it without "
                             "results.start_position)");
    }
  }
  // Pairing, within one key and start position: first runs whose settings (the run settings that
  // change what is timed, LoadedRun::settings) agree, in document order, so two sweeps pair point
  // by point whatever their order; then each run left over with the unused run that differs in
  // the fewest settings (the first on a tie), and a note naming them (comparing --fusion off with
  // on is a use of compare). A setting only one document records (older writers) is not compared.
  using Slot = std::pair<std::string, int64_t>;  // key id, start position (-1: not compared)
  const auto slot = [&unknown_start](const LoadedRun& r) {
    return Slot{r.key_id, unknown_start.count(r.key_id) == 0 ? r.start_position : -1};
  };
  std::map<Slot, std::vector<const LoadedRun*>> same_slot;  // in document order
  for (const auto& r : candidate.runs) same_slot[slot(r)].push_back(&r);
  std::map<const LoadedRun*, const LoadedRun*> pair_of;  // baseline run → candidate run
  std::set<const LoadedRun*> used;
  // The unused run of `base`'s slot that differs from it in the fewest settings, or null; with
  // `exact`, only one that differs in none.
  const auto nearest_unused = [&](const LoadedRun& base, bool exact) {
    const auto it = same_slot.find(slot(base));
    const LoadedRun* best = nullptr;
    int best_count = 0;
    if (it == same_slot.end()) return best;
    for (const LoadedRun* c : it->second) {
      if (used.count(c) != 0) continue;
      const auto n = static_cast<int>(differing_settings(base.settings, c->settings).size());
      if ((exact && n > 0) || (best != nullptr && n >= best_count)) continue;
      best = c;
      best_count = n;
    }
    return best;
  };
  for (const bool exact : {true, false}) {
    for (const auto& base : baseline.runs) {
      if (pair_of.count(&base) != 0) continue;
      if (const LoadedRun* c = nearest_unused(base, exact)) {
        pair_of[&base] = c;
        used.insert(c);
      }
    }
  }
  std::map<std::string, int> settings_differ;  // settings_difference text → pairs with it
  for (const auto& base : baseline.runs) {
    const auto it = pair_of.find(&base);
    if (it == pair_of.end()) continue;
    const std::string d =
        settings_difference(base.settings, baseline.name, it->second->settings, candidate.name);
    if (!d.empty()) ++settings_differ[d];
  }
  std::map<std::string, int> differing;  // variables_difference text → matched runs with it
  std::map<std::string, int> builds;     // build types of a pair → matched runs with them
  std::map<std::string, int> opposite;   // metric → matched runs whose change and test disagree
  std::map<std::string, int> powerless;  // metric and sample counts → matched runs with them
  for (const auto& base : baseline.runs) {
    const auto it = pair_of.find(&base);
    if (it == pair_of.end()) {
      report.only_in_baseline.push_back(base.id);
      // The same key only at other positions in the new file: say why it is not compared (a
      // missing repeat at the same position needs no note).
      std::set<int64_t> positions;
      bool same_position = false;
      for (const auto& c : candidate.runs) {
        if (c.key_id != base.key_id) continue;
        positions.insert(c.start_position);
        same_position = same_position || c.start_position == base.start_position;
      }
      std::string others;
      for (const int64_t p : positions) others += (others.empty() ? "" : ", ") + std::to_string(p);
      if (unknown_start.count(base.key_id) == 0 && !same_position && !others.empty()) {
        report.notes.push_back(base.label + ": not compared: its timed steps start at position " +
                               std::to_string(base.start_position) + " in " + baseline.name +
                               ", at " + others + " in " + candidate.name +
                               " (another prompt length: not the same workload)");
      }
      continue;
    }
    const LoadedRun& cand = *it->second;
    // The cpu backend reads none of these variables.
    const bool both_cpu =
        base.key.value("backend", "") == "cpu" && cand.key.value("backend", "") == "cpu";
    const std::string differ = both_cpu ? std::string()
                                        : variables_difference(base.variables, baseline.name,
                                                               cand.variables, candidate.name);
    if (!differ.empty()) ++differing[differ];
    // Another build type is other code (a Debug build, or a probe build's kernels): where both
    // documents record it and they differ, say so, whatever the backend.
    if (!base.build_type.empty() && !cand.build_type.empty() &&
        base.build_type != cand.build_type) {
      ++builds["'" + base.build_type + "' in " + baseline.name + ", '" + cand.build_type + "' in " +
               candidate.name];
    }
    RunComparison rc;
    rc.id = base.id;
    rc.label = base.label;
    rc.key = base.key;
    std::optional<BootstrapTests> boot;
    for (const MetricSpec* metric : metrics) {
      const auto b = metric_series(base, *metric);
      const auto c = metric_series(cand, *metric);
      if (!b && !c) {
        report.notes.push_back(base.label + ": " + metric->name +
                               " not measured in either file (phase metrics need --phase-timing; " +
                               "gpu_ms, CUDA-event time, also the CUDA backend)");
        continue;
      }
      if (!b || !c) {
        const std::string has = b ? baseline.name : candidate.name;
        const std::string lacks = b ? candidate.name : baseline.name;
        throw usage_error("missing samples: metric " + std::string(metric->name) + " of run '" +
                          base.id + "' exists in " + has + " but not in " + lacks);
      }
      MetricComparison m;
      m.metric = metric->name;
      m.baseline = b->value;
      m.candidate = c->value;
      if (b->value != 0) {
        m.change_pct = (c->value - b->value) / b->value * 100.0;
      } else {
        m.change_pct =
            c->value == 0 ? 0.0 : std::copysign(std::numeric_limits<double>::infinity(), c->value);
      }
      m.n_baseline = static_cast<int64_t>(b->samples.size());
      m.n_candidate = static_cast<int64_t>(c->samples.size());
      // A median follows the bulk of the tokens, as the rank test does; the mean, the tail and
      // tokens/s are tested by resampling the figure itself.
      m.bootstrap = !metric->median;
      if (m.bootstrap) {
        // Every bootstrap metric reads samples_ns: one set of resamples serves them all.
        if (!boot) boot = bootstrap_changes(c->samples, b->samples, options.alpha);
        m.boot = boot->of(metric->statistic);
        m.resamples = boot->resamples;
        m.p_value = m.boot.p_value;
      } else {
        m.test = mann_whitney_u(c->samples, b->samples);
        m.p_value = m.test.p_value;
      }
      m.verdict = decide_verdict(m.change_pct, metric->higher_is_better, m.p_value, m.test.z,
                                 metric->median, options.alpha, options.threshold_pct);
      // The verdict the figure's change alone would give: where it differs, the test's direction
      // made a median's verdict unclear (noted below).
      const bool direction_vetoed =
          m.verdict != decide_verdict(m.change_pct, metric->higher_is_better, m.p_value, m.test.z,
                                      false, options.alpha, options.threshold_pct);
      // With so few samples that complete separation without ties is not significant, "not
      // significant" says nothing (a CI job timing one token would otherwise pass any change
      // below the threshold as "same"), and a significant p comes only from the tie correction
      // (3 against 3 tied values: p = 0.047): such a pair is unclear, whatever the test says.
      // The bootstrap has no such floor of its own (1 against 1 resamples to one change, p =
      // 2 / (B + 1)), so the rank test's floor applies to every metric, and the bootstrap needs
      // more samples still (bootstrap_min_samples).
      const double floor_p = smallest_p_value(m.n_baseline, m.n_candidate);
      const int64_t need = m.bootstrap ? bootstrap_min_samples(metric->statistic) : 1;
      std::string untestable;
      if (floor_p >= options.alpha) {
        untestable = fmt::format(
            "{}: {} against {} samples, smallest p of the rank test without ties {:.3g}, not "
            "below alpha {:g}",
            metric->name, m.n_baseline, m.n_candidate, floor_p, options.alpha);
      } else if (std::min(m.n_baseline, m.n_candidate) < need) {
        untestable = fmt::format("{}: {} against {} samples; its bootstrap needs {} a side",
                                 metric->name, m.n_baseline, m.n_candidate, need);
      }
      if (!untestable.empty()) {
        m.verdict = Verdict::kUnclear;
        ++powerless[untestable];
      } else if (direction_vetoed) {
        ++opposite[std::string(metric->name)];
      }
      rc.metrics.push_back(std::move(m));
    }
    report.runs.push_back(std::move(rc));
  }
  for (const auto& r : candidate.runs) {
    if (!used.count(&r)) report.only_in_candidate.push_back(r.id);
  }
  for (const auto& [text, n] : settings_differ) {
    report.notes.push_back("settings differ in " + std::to_string(n) + " of " +
                           std::to_string(report.runs.size()) + " matched run(s): " + text +
                           " (not the same workload; pair them on purpose, or compare files of "
                           "the same settings)");
  }
  for (const auto& [metric, n] : opposite) {
    report.notes.push_back(
        metric + ": the change and the rank test point opposite ways in " + std::to_string(n) +
        " of " + std::to_string(report.runs.size()) +
        " matched run(s): the median moved past the threshold one way while most per-token "
        "times, by the test, moved the other: unclear, not slower or faster (a run of two "
        "speeds can do that to a median; look at the per-token samples)");
  }
  for (const auto& [text, n] : powerless) {
    report.notes.push_back("too few samples for a test in " + std::to_string(n) + " of " +
                           std::to_string(report.runs.size()) + " matched run(s) (" + text +
                           "): unclear whatever the change; time more tokens (--tokens, "
                           "--min-time)");
  }
  for (const auto& [text, n] : builds) {
    report.notes.push_back("build types differ in " + std::to_string(n) + " of " +
                           std::to_string(report.runs.size()) +
                           " matched run(s): tool.build_type " + text +
                           " (other code: a probe or Debug build times other kernels)");
  }
  for (const auto& [text, n] : differing) {
    report.notes.push_back("environment variables differ in " + std::to_string(n) + " of " +
                           std::to_string(report.runs.size()) + " matched run(s): " + text +
                           " (the runs may not have run the same kernels or timed them alike)");
  }
  if (report.runs.empty()) {
    std::string msg = "nothing matched: no run of " + candidate.name +
                      " has the configuration key (model, shape, dtype, backend, graph, batch, "
                      "device) and the start position (where both files give it) of a run of " +
                      baseline.name +
                      " (a run is named by its key, then @ and its start position); ";
    msg += baseline.name + " has " + std::to_string(baseline.runs.size()) + " run(s)" +
           (baseline.runs.empty() ? "" : ", e.g. '" + baseline.runs.front().id + "'");
    msg += "; " + candidate.name + " has " + std::to_string(candidate.runs.size()) + " run(s)" +
           (candidate.runs.empty() ? "" : ", e.g. '" + candidate.runs.front().id + "'");
    for (const auto& note : report.notes) msg += "; " + note;
    throw usage_error(msg);
  }
  for (const MetricSpec* metric : metrics) {
    bool any = false;
    for (const auto& r : report.runs) {
      for (const auto& m : r.metrics) any = any || m.metric == metric->name;
    }
    if (!any) {
      throw usage_error("metric " + std::string(metric->name) +
                        ": no matched run has it in both files (phase metrics need runs with "
                        "--phase-timing; gpu_ms, CUDA-event time, also the CUDA backend)");
    }
  }
  return report;
}

nlohmann::json compare_json(const CompareReport& report) {
  nlohmann::json comparisons = nlohmann::json::array();
  for (const auto& r : report.runs) {
    for (const auto& m : r.metrics) {
      const MetricSpec& spec = find_metric(m.metric);
      nlohmann::json change =
          std::isfinite(m.change_pct) ? nlohmann::json(m.change_pct) : nlohmann::json(nullptr);
      comparisons.push_back(
          {{"id", r.id},
           {"label", r.label},
           {"key", r.key},
           {"metric", m.metric},
           {"unit", spec.unit},
           {"higher_is_better", spec.higher_is_better},
           {"baseline", m.baseline},
           {"new", m.candidate},
           {"change_pct", change},
           {"n_baseline", m.n_baseline},
           {"n_new", m.n_candidate},
           {"test", m.bootstrap ? "bootstrap" : "mann-whitney"},
           {"u", m.bootstrap ? nlohmann::json(nullptr) : nlohmann::json(m.test.u)},
           {"z", m.bootstrap ? nlohmann::json(nullptr) : nlohmann::json(m.test.z)},
           {"p_value", m.p_value},
           {"resamples", m.bootstrap ? nlohmann::json(m.resamples) : nlohmann::json(nullptr)},
           {"ci_pct", m.bootstrap ? nlohmann::json::array({m.boot.ci_low_pct, m.boot.ci_high_pct})
                                  : nlohmann::json(nullptr)},
           {"verdict", verdict_name(m.verdict)}});
    }
  }
  const std::string method =
      std::string(
          "p: two-sided Mann-Whitney U test on the per-token samples (normal approximation, "
          "tie and continuity corrections) for a median (tpot_median, the phase medians); "
          "percentile bootstrap of the figure's change (each sample resampled with replacement, "
          "resamples per comparison in each row) for tpot_mean, tpot_p90, tpot_p99 and "
          "tokens_per_s; ") +
      (report.options.threshold_pct > 0
           ? "significant (p < alpha) and |change| >= threshold: faster/slower; not significant "
             "and |change| < threshold: same; otherwise unclear"
           : "threshold 0, the test alone decides: significant (p < alpha): faster/slower; not "
             "significant: same; significant with no change in the figure: unclear") +
      "; a median whose rank test points the other way: unclear; whatever the test, unclear "
      "where the sample counts cannot reach p < alpha in the rank test without ties, or are below "
      "the bootstrap's " +
      bootstrap_minimum_text();
  return {{"schema_version", kCompareSchemaVersion},
          {"baseline", report.baseline_name},
          {"new", report.candidate_name},
          {"metrics", report.options.metrics},
          {"threshold_pct", report.options.threshold_pct},
          {"alpha", report.options.alpha},
          {"method", method},
          {"summary",
           {{"matched_runs", report.runs.size()},
            {"faster", report.count(Verdict::kFaster)},
            {"slower", report.count(Verdict::kSlower)},
            {"same", report.count(Verdict::kSame)},
            {"unclear", report.count(Verdict::kUnclear)}}},
          {"comparisons", comparisons},
          {"only_in_baseline", report.only_in_baseline},
          {"only_in_new", report.only_in_candidate},
          {"notes", report.notes},
          {"exit_code", static_cast<int>(report.exit_code())}};
}

}  // namespace decodebench
