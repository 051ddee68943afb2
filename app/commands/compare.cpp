#include "app/commands/compare.hpp"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "app/report/compare_report.hpp"
#include "core/compare/compare.hpp"
#include "core/output_file.hpp"
#include "core/result/json_file.hpp"
#include "core/result/json_text.hpp"
#include "core/text.hpp"

namespace decodebench::app {

namespace {

struct CompareFlags {
  std::string baseline;
  std::string candidate;
  std::string threshold = "5%";
  std::vector<std::string> metrics;
  double alpha = 0.05;
  std::string format = "text";
  std::string output;
  bool quiet = false;
};

std::string help_footer() {
  std::string metrics;
  for (const MetricSpec& m : compare_metrics()) {
    metrics += std::string("  ") + m.name + ": " + m.description + "\n";
  }
  return "Runs are matched by their configuration key (runs[].key.id: model, shape, dtype, "
         "backend, graph, batch, device) and the position of their first timed step "
         "(results.start_position: another prompt length is another workload); repeats in one "
         "file match in order.\n"
         "Verdict per matched run and metric, from a test of the raw per-token samples and "
         "the change = (new - baseline) / baseline. The test: for a median (tpot_median, the "
         "phase medians) a two-sided Mann-Whitney U test (normal approximation with tie and "
         "continuity corrections; Mann & Whitney 1947); for tpot_mean, tpot_p90, tpot_p99 and "
         "tokens_per_s the percentile bootstrap of the figure's change (each sample resampled "
         "with replacement, 2,000 times at alpha 0.05; Efron & Tibshirani 1993), as a few slow "
         "tokens move these figures but barely the rank test:\n"
         "  p < alpha and |change| >= threshold  -> faster or slower (for a median: unclear "
         "where the rank test finds most tokens' times moved the other way)\n"
         "  p >= alpha and |change| < threshold  -> same\n"
         "  otherwise                            -> unclear (more tokens or a quieter machine)\n"
         "  (--threshold 0: the test alone decides, p >= alpha -> same)\n"
         "  too few samples for p < alpha in the rank test without ties (1 to 3 a side at 0.05) "
         "-> unclear\n"
         "  a bootstrap figure with fewer samples than " +
         bootstrap_minimum_text() +
         " -> unclear\n"
         "Metrics:\n" +
         metrics +
         "Exit codes: 0 nothing slower · 1 at least one slower (a regression) · 2 usage or data "
         "error (unreadable file, different or unknown schema_version, missing samples, nothing "
         "matched, e.g. every run timed from another start position).\n";
}

void run_compare(const CompareFlags& f, int* exit_code) {
  CompareOptions options;
  options.threshold_pct = parse_threshold_percent(f.threshold);
  options.alpha = f.alpha;
  // Split here, not by CLI11, whose delimiter drops empty pieces: "a,,b" is a typo to report.
  std::vector<std::string> metrics;
  for (const std::string& given : f.metrics) {
    size_t start = 0;
    while (true) {
      const size_t comma = given.find(',', start);
      const std::string name = given.substr(start, comma - start);
      if (name.empty()) {
        throw usage_error("--metric: an empty metric name in '" + echo_value(given) + "'");
      }
      metrics.push_back(name);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  if (!metrics.empty()) options.metrics = metrics;
  if (!f.output.empty()) {
    check_destination(f.output, "--output");
    check_not_an_input(f.output, "--output", {f.baseline, f.candidate});
  }
  // A JSON type error the loader did not check for is a malformed file (exit 2), not an internal
  // error (exit 1: compare's "regression").
  const auto load = [](const std::string& path) {
    try {
      return load_runs_file(path);
    } catch (const nlohmann::json::exception& e) {
      throw usage_error(path + ": a field of the wrong type (" + std::string(e.what()) + ")");
    }
  };
  const LoadedRuns baseline = load(f.baseline);
  const LoadedRuns candidate = load(f.candidate);
  const CompareReport report = compare_runs(baseline, candidate, options);
  std::string rendered;
  if (f.format == "json") {
    rendered = json_text(compare_json(report)) + "\n";
  } else if (f.format == "md") {
    rendered = compare_markdown(report);
  } else {
    rendered = compare_text(report);
  }
  if (!f.output.empty()) write_text_file(f.output, rendered, "--output");
  // Without --output the report goes to stdout, but -q drops a text one; with --output to a file
  // the text table goes to stdout too, unless -q. The exit code is the verdict, and under -q a
  // regression still says so on stderr, as suite -q says why a configuration failed.
  if (f.output.empty() && !(f.quiet && f.format == "text")) {
    std::fwrite(rendered.data(), 1, rendered.size(), stdout);
  }
  if (!f.output.empty() && !writes_to_stdout(f.output) && !f.quiet) {
    const std::string text = compare_text(report);
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  if (f.quiet && report.exit_code() != ExitCode::kOk) {
    std::fprintf(stderr, "decodebench: %s\n", outcome_line(report).c_str());
  }
  flush_output(stdout);
  *exit_code = static_cast<int>(report.exit_code());
}

}  // namespace

void setup_compare(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<CompareFlags>();
  CLI::App* cmd = app.add_subcommand(
      "compare",
      "Compare two result or suite JSON files: per run and metric faster / slower / "
      "same / unclear; exit 1 on a regression");
  cmd->add_option("baseline", f->baseline, "Baseline result or suite JSON (e.g. from main)")
      ->required();
  cmd->add_option("new", f->candidate, "New result or suite JSON")->required();
  cmd->add_option("--threshold", f->threshold,
                  "Smallest relative change that counts, in percent: 5% (default), 2.5")
      ->default_str("5%");
  cmd->add_option("--metric", f->metrics,
                  "Metric(s) to judge, repeated or comma-separated (default tpot_median)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--alpha", f->alpha, "Significance level of the test (default 0.05)")
      ->default_str("0.05");
  cmd->add_option("--format", f->format,
                  "text (default) | md (GitHub markdown; 'markdown' is taken too) | json")
      ->check(CLI::IsMember({"text", "md", "json"}))
      ->transform([](std::string v) { return v == "markdown" ? std::string("md") : v; });
  cmd->add_option("--output", f->output,
                  "Write the --format report to PATH (atomically) and the text table to stdout; "
                  "'-': the report alone, to stdout");
  cmd->add_flag("-q,--quiet", f->quiet,
                "No text table of its own on stdout (the exit code is the verdict): --output still "
                "writes its report ('-': to stdout), and a --format md or json report without "
                "--output goes to stdout; a regression's verdict line on stderr");
  cmd->footer(help_footer());
  cmd->callback([f, exit_code] { run_compare(*f, exit_code); });
}

}  // namespace decodebench::app
