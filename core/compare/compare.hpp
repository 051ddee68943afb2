// `decodebench compare`: match the runs of two result (or suite) documents by configuration key and
// decide, per metric, whether the new one is faster, slower, the same, or unclear.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/compare/bootstrap.hpp"
#include "core/compare/mann_whitney.hpp"
#include "core/error.hpp"

namespace decodebench {

/// The verdict of one (run, metric) pair.
enum class Verdict { kFaster, kSlower, kSame, kUnclear };
/// "faster", "slower", "same", "unclear".
const char* verdict_name(Verdict verdict);

/// A metric `compare` can judge. Values come from the run's reported statistics; the test runs on
/// the raw per-token series behind them: the Mann-Whitney U test for a median, the percentile
/// bootstrap of the figure's own change for the others.
struct MetricSpec {
  const char* name;         ///< --metric name, e.g. "tpot_median"
  const char* unit;         ///< "ns", "ms" or "tokens/s"
  bool higher_is_better;    ///< tokens_per_s: true; latencies: false
  const char* description;  ///< for --help and the reports
  /// A median of the tested samples (tpot_median and the phase medians): the rank test speaks
  /// to it (both follow the bulk of the tokens), so a verdict needs the test's direction too.
  /// The mean, p90, p99 and tokens/s can move with a few tokens that the rank test barely sees:
  /// they are tested by resampling the figure itself (`statistic`).
  bool median = false;
  /// For a metric that is not a median: the statistic bootstrap_changes() resamples.
  ResampledStatistic statistic = ResampledStatistic::kMean;
};

/// Every metric, in --help order: tpot_median, tpot_mean, tpot_p90, tpot_p99, tokens_per_s (all on
/// results.samples_ns), gpu_ms, h2d, launch, wait, argmax, phase_total (medians of the per-token
/// phases of a --phase-timing run, on results.phase_samples.<phase>).
const std::vector<MetricSpec>& compare_metrics();

/// The decision rule (documented in `compare --help` and docs/ci.md):
///   significant = p < alpha: for a median metric the two-sided Mann-Whitney U test on the
///   per-token samples, for the mean, p90, p99 and tokens/s the percentile bootstrap of the
///   figure's change (bootstrap_changes());
///   large = |change_pct| ≥ threshold_pct;
///   significant and large → faster or slower (by the sign of the change and the metric's
///   direction), except for a median metric (`check_direction`) whose test points the other
///   way: `z` > 0 says the new run's per-token times tend to be longer (slower), z < 0 shorter,
///   and a "slower" median with z < 0 or a "faster" one with z > 0 is unclear (a run of two
///   speeds can move its median against most of its tokens). The bootstrap tests the figure
///   itself, so its sign is the change's;
///   not significant and not large → same; otherwise → unclear.
/// A threshold of 0 leaves the decision to the test alone: not significant → same (every change
/// is ≥ 0%, so no result would ever be same); significant with change_pct 0 (no change) →
/// unclear.
/// `change_pct` = (new − baseline) / baseline · 100; `z` = MannWhitney::z of the new run's
/// samples against the baseline's (every metric's samples are times: longer is slower).
Verdict decide_verdict(double change_pct, bool higher_is_better, double p_value, double z,
                       bool check_direction, double alpha, double threshold_pct);

/// Whether a change and the rank test point opposite ways (decide_verdict's unclear case above for
/// a median metric): the change says faster while `z` > 0, or slower while z < 0.
bool change_and_test_disagree(double change_pct, bool higher_is_better, double z);

/// Parses a threshold "5%", "5" or "2.5%" into percent; Error (exit 2) unless it is a number in
/// [0, 1000).
double parse_threshold_percent(const std::string& text);

/// One run of a loaded document.
struct LoadedRun {
  /// runs[].key.id, then "@N" (the start position, where the document gives it), then "#2",
  /// "#3", ... for repeats at the same start position: one workload keeps its id in every report
  std::string id;
  /// short display name: model, shape, dtype, graph, then " @N" where the document holds the
  /// key at several start positions (a prompt-length sweep; " @?" where unknown), then " #n"
  std::string label;
  std::string key_id;  ///< runs[].key.id as stored
  nlohmann::json key;
  nlohmann::json run;  ///< the runs[] element
  std::string origin;  ///< "FILE" or "FILE: results[3]" (for messages)
  /// results.start_position: the position of the first timed step (the prompt length when
  /// decoding after a prefilled prompt); -1 where the document does not say
  int64_t start_position = -1;
  int repeat_at_start = 1;  ///< 1, 2, ...: the n-th run of key_id at this start position
  int repeat_of_key = 1;    ///< 1, 2, ...: the n-th run of key_id in the document
  /// environment.variables of the run's result document ({name: value}); null where the document
  /// does not have it (older writers)
  nlohmann::json variables;
  /// tool.build_type of the run's result document ("Release", "Debug", or "Release (probe build:
  /// DECODEBENCH_X_DIGITS=1)"); empty where the document does not record it
  std::string build_type;
  /// The run settings outside the key that change what is timed, from the document's config:
  /// {tokens, seed, fusion, pdl, weight_layout, capture_mode, stateless, ignore_eos,
  /// inject_capture_fault} (those present), and launch_ahead "on" or "off" from the run's own
  /// results.launch_ahead.on (absent: "off", as older writers ran one step at a time); and from
  /// the document's model, "model.<field>" for each model.shape field the key leaves out
  /// (head_dim, qkv_bias, tied_embeddings, rope_theta, ...) and "model.bytes_per_token"; null
  /// where the document has neither config nor model
  nlohmann::json settings;
};

/// A result or suite document reduced to its runs.
struct LoadedRuns {
  std::string name;                   ///< file name (for messages)
  std::string kind;                   ///< "result" or "suite"
  std::vector<LoadedRun> runs;        ///< in document order
  std::vector<std::string> failures;  ///< failed suite configurations, "label: error"
};

/// Reads a result document (schema_version "1.0", runs[]) or a suite document (schema_version
/// "1.0", suite + results[] of result documents; docs/suite.schema.json). `name` appears in every
/// message. Throws decodebench::Error (exit 2) naming the file and the problem: an unsupported
/// schema_version, neither format, a run without key.id or without per-token samples, no runs.
LoadedRuns load_runs(const nlohmann::json& doc, const std::string& name);

/// load_runs() of a file; Error (exit 2) when it is unreadable or not JSON.
LoadedRuns load_runs_file(const std::string& path);

/// Options of a comparison.
struct CompareOptions {
  std::vector<std::string> metrics = {"tpot_median"};
  double threshold_pct = 5.0;  ///< percent
  double alpha = 0.05;         ///< significance level of the two-sided test, in (0, 1)
};

/// One metric of one matched run.
struct MetricComparison {
  std::string metric;
  double baseline = 0;                      ///< in the metric's unit
  double candidate = 0;                     ///< the new value, same unit
  double change_pct = 0;                    ///< (new − baseline) / baseline · 100
  int64_t n_baseline = 0, n_candidate = 0;  ///< samples in the test
  /// Which test gave p_value: the bootstrap (`boot`; metrics that are not medians) or the rank
  /// test (`test`; medians)
  bool bootstrap = false;
  double p_value = 1;     ///< the verdict's p: boot.p_value or test.p_value
  MannWhitney test;       ///< medians: x = new samples, y = baseline samples
  BootstrapTest boot;     ///< the others: the change's resampled interval and p
  int64_t resamples = 0;  ///< the bootstrap's B (0 for the rank test)
  Verdict verdict = Verdict::kUnclear;
};

/// A run present in both documents.
struct RunComparison {
  std::string id;
  std::string label;
  nlohmann::json key;
  std::vector<MetricComparison> metrics;
};

/// Everything `compare` reports.
struct CompareReport {
  std::string baseline_name, candidate_name;
  CompareOptions options;
  std::vector<RunComparison> runs;            ///< matched, in baseline order
  std::vector<std::string> only_in_baseline;  ///< LoadedRun ids (key id, "@N", "#n")
  std::vector<std::string> only_in_candidate;
  /// skipped metrics, failed suite configurations, environment variables that differ between
  /// matched runs
  std::vector<std::string> notes;

  /// Number of (run, metric) pairs with the verdict.
  [[nodiscard]] int count(Verdict verdict) const;
  /// kRuntime (1) when any verdict is kSlower, else kOk.
  [[nodiscard]] ExitCode exit_code() const;
};

/// Matches runs by key and start position, runs with the same settings first (in document order,
/// so sweeps pair point by point), then the rest in order with a note naming the settings that
/// differ; compares each requested metric. Matched runs whose
/// environment.variables differ (both documents recording them) get one note per difference,
/// naming each variable's value on both sides and how many matched runs it concerns. Throws
/// decodebench::Error (exit 2) when an option is invalid (unknown metric, alpha outside (0, 1),
/// negative threshold, an alpha at or below the bootstrap's smallest p with a metric it tests),
/// when no run matched (the message shows a key of each side), when a metric's
/// samples exist on one side only, or when no matched run has a requested metric.
CompareReport compare_runs(const LoadedRuns& baseline, const LoadedRuns& candidate,
                           const CompareOptions& options);

/// The JSON form of a report (`compare --format json`; layout in docs/ci.md).
nlohmann::json compare_json(const CompareReport& report);

/// "30 a side (200 for tpot_p99)": the bootstrap's minimum samples (bootstrap_min_samples), as the
/// help, the legend and the JSON method state it.
std::string bootstrap_minimum_text();

/// Version of the compare JSON layout.
/// 1.1: each comparison names its test ("test"), u and z are null for the bootstrap's metrics,
/// which add "resamples" and "ci_pct".
inline constexpr const char* kCompareSchemaVersion = "1.1";

}  // namespace decodebench
