#include "app/commands/suite.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "app/commands/run.hpp"
#include "app/parse_errors.hpp"
#include "app/report/batch_scaling.hpp"
#include "app/report/progress.hpp"
#include "app/report/text.hpp"
#include "core/output_file.hpp"
#include "core/result/environment.hpp"
#include "core/result/json_file.hpp"
#include "core/run_config.hpp"
#include "core/suite/suite_runner.hpp"

namespace decodebench::app {

ParsedRunArgs parse_run_args(std::vector<std::string> args, bool suite_file) {
  if (!args.empty() && args.front() == "run") args.erase(args.begin());
  CLI::App app{"decodebench run"};
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  RunFlags flags;
  add_run_flags(app, flags);
  require_decimal_integers(app);
  const std::vector<std::string> given = args;
  std::reverse(args.begin(), args.end());  // CLI11 consumes a vector from its back
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    std::string msg = parse_error_message(app, nullptr, e, &given);
    // In a suite file such a flag is a boolean key.
    if (suite_file && msg.find(" takes no value (got '") != std::string::npos) {
      msg += ": in a suite file give it true or false";
    }
    throw usage_error(msg);
  }
  bind_flags(flags);
  return {flags.options, flags.quiet, flags.verbose};
}

namespace {

struct SuiteFlags {
  std::string file;
  std::string json_path;
  std::string backend;
  std::optional<int64_t> threads;  ///< unset: each configuration's own
  bool list = false;
  bool quiet = false;
  bool verbose = false;
};

std::string seconds(int64_t ns) { return fmt::format("{:.1f} s", static_cast<double>(ns) / 1e9); }

void print_summary(const SuiteOutcome& outcome, FILE* out) {
  const auto& doc = outcome.document;
  int ok = 0, failed = 0, skipped = 0;
  for (const auto& e : outcome.entries) {
    ok += e.status == "ok" ? 1 : 0;
    failed += e.status == "failed" ? 1 : 0;
    skipped += e.status == "skipped" ? 1 : 0;
  }
  fmt::print(out, "\nsuite {}: {} configuration(s), {} ok, {} failed, {} skipped ({})\n\n",
             doc["suite"]["name"].get<std::string>(), outcome.entries.size(), ok, failed, skipped,
             seconds(doc["suite"]["wall_ns"].get<int64_t>()));
  // "step": one decode step (batch 1: one token, i.e. the TPOT; batch M: one token of each
  // sequence); tokens/s is per sequence.
  fmt::print(out, "{:>3}  {:<13} {:>13} {:>7} {:>10}  {:<8} {}\n", "#", "run", "median step",
             "noise", "tokens/s", "status", "configuration");
  for (const auto& e : outcome.entries) {
    const std::string status =
        e.status == "ok"
            ? (e.exit_code == ExitCode::kOk ? std::string("ok")
                                            : fmt::format("exit {}", static_cast<int>(e.exit_code)))
            : e.status;
    if (!e.result_index) {
      fmt::print(out, "{:>3}  {:<13} {:>13} {:>7} {:>10}  {:<8} {}\n", e.index + 1, "-", "-", "-",
                 "-", status, e.label);
      fmt::print(out, "     exit {}: {}\n", static_cast<int>(e.exit_code),
                 printable_line(e.error, 160));
      continue;
    }
    for (const auto& run : doc["results"][*e.result_index]["runs"]) {
      const auto& stats = run["results"]["stats"];
      const auto& tpot = stats["tpot_ns"];
      const double median = tpot["median"].get<double>();
      // Noise: the half-width of the median's 95% CI relative to the median ("-" below 6 steps,
      // where there is no such interval).
      const auto& ci = tpot["median_ci95"];
      const std::string noise =
          median > 0 && ci.is_array()
              ? fmt::format("{:.1f}%",
                            (ci[1].get<double>() - ci[0].get<double>()) / 2.0 / median * 100.0)
              : "-";
      fmt::print(out, "{:>3}  {:<13} {:>10.1f} µs {:>7} {:>10.1f}  {:<8} {}\n", e.index + 1,
                 run["label"].get<std::string>(), median / 1000.0, noise,
                 stats["tokens_per_s"].get<double>(), status, e.label);
    }
  }
  fmt::print(out,
             "noise: half-width of the median step's 95% confidence interval, relative to the "
             "median ('-' below 6 timed steps); tokens/s: timed steps ÷ their summed time, per "
             "sequence (the scaling table of a --batch sweep takes the median step)\n");
}

// Runs a suite definition: validation of every configuration, the runs, the report, the document.
int execute_suite(const SuiteDefinition& suite, const ParseRunArgsFn& parse,
                  const std::string& json_path, bool quiet, bool verbose) {
  if (!json_path.empty()) check_json_destination(json_path);
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::vector<PreparedRun> runs = prepare_suite(suite, parse, hw);
  if (!json_path.empty()) {
    // The suite file (a sweep has none) and every configuration's model or preset file.
    std::vector<std::string> inputs;
    if (suite.source != kCommandLineSource) inputs.push_back(suite.source);
    for (const PreparedRun& r : runs) {
      for (const std::string& f : run_input_files(r.config.model_path, r.config.preset)) {
        inputs.push_back(f);
      }
    }
    check_not_an_input(json_path, "--json", inputs);
  }
  FILE* out = writes_to_stdout(json_path) ? stderr : stdout;
  ProgressBar bar(!quiet);
  SuiteCallbacks callbacks;
  std::string current;
  if (verbose) callbacks.run.progress = [](const std::string& s) { spdlog::info("{}", s); };
  callbacks.run.step = [&bar, &current](const std::string& label, int64_t done, int64_t total) {
    bar.update(current + " " + label, done, total);
  };
  // The CPU fallback of backend auto and the warnings about variables (unknown ones, measurement
  // switches) are the same for every run of the process, or of its backend: each said once on
  // stderr (every run's JSON still records it).
  bool fallback_said = false;
  std::set<std::string> variables_said;
  callbacks.run.warning = [&bar, &current, &fallback_said, &variables_said](const std::string& w) {
    if (w.starts_with(kNoCudaDeviceWarning)) {
      if (fallback_said) return;
      fallback_said = true;
      bar.clear();  // not tagged with this run: it holds for every run of backend auto
      std::fprintf(stderr, "decodebench: warning: %s (said once for every run of backend auto)\n",
                   printable_message(w).c_str());
      return;
    }
    if (const std::string_view runs = environment_warning_runs(w); !runs.empty()) {
      if (!variables_said.insert(w).second) return;
      bar.clear();
      std::fprintf(stderr, "decodebench: warning: %s (said once for %.*s)\n",
                   printable_message(w).c_str(), static_cast<int>(runs.size()), runs.data());
      return;
    }
    bar.clear();
    std::fprintf(stderr, "decodebench: warning: %s %s\n", current.c_str(),
                 printable_message(w).c_str());
  };
  callbacks.on_start = [&current](const PreparedRun& run, size_t total) {
    current = fmt::format("[{}/{}]", run.index + 1, total);
  };
  const size_t total = runs.size();
  callbacks.on_finish = [&bar, out, quiet, total](const SuiteEntry& e, const nlohmann::json*) {
    bar.clear();
    // A failure, or an "ok" configuration with a non-zero exit code (4: a verification failure
    // under --keep-going), reaches stderr even with --quiet, so that a CI log says why the suite's
    // exit code is not 0.
    const bool failed = e.status != "ok" || e.exit_code != ExitCode::kOk;
    if (quiet && !failed) return;
    FILE* to = quiet ? stderr : out;
    const char* prefix = quiet ? "decodebench: " : "";
    const int code = static_cast<int>(e.exit_code);
    if (e.status == "ok") {
      // An "ok" configuration ends with exit 4 only under --keep-going: its warnings say which
      // check failed.
      fmt::print(to, "{}[{}/{}] ok ({}){}  {}\n", prefix, e.index + 1, total, seconds(e.wall_ns),
                 code == 0 ? std::string()
                           : fmt::format(", exit {}: a check failed, see its warnings", code),
                 e.label);
    } else {
      fmt::print(to, "{}[{}/{}] {} (exit {})  {}: {}\n", prefix, e.index + 1, total, e.status, code,
                 e.label, printable_line(e.error, 200));
    }
    flush_output(to);
  };
  const SuiteOutcome outcome = run_suite(suite, runs, callbacks);
  bar.clear();
  if (!quiet) {
    print_summary(outcome, out);
    print_batch_scaling(outcome.document, out);  // runs that differ in --batch only
  }
  if (!json_path.empty()) {
    write_json_file(json_path, outcome.document);
    if (!quiet && json_path != "-")
      std::fprintf(stderr, "decodebench: wrote %s\n", json_path.c_str());
  }
  return static_cast<int>(outcome.exit_code);
}

int run_suite_command(const SuiteFlags& f) {
  // Checked once here, not as a failure of every configuration (0 once meant "not given"), nor
  // of the first configuration, whose file entry the error would name.
  if (f.threads) check_thread_count(*f.threads);
  if (!f.backend.empty()) (void)parse_backend_name(f.backend);
  SuiteDefinition suite = load_suite_file(f.file);
  for (auto& c : suite.configurations) {
    if (!f.backend.empty()) c.args.insert(c.args.end(), {"--backend", f.backend});
    if (f.threads) c.args.insert(c.args.end(), {"--threads", std::to_string(*f.threads)});
  }
  const ParseRunArgsFn parse = [](const std::vector<std::string>& args) {
    return parse_run_args(args, true).options;
  };
  if (f.list) {
    const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const auto runs = prepare_suite(suite, parse, hw);  // validates every configuration
    fmt::print("suite {}: {} configuration(s)\n", suite.name, runs.size());
    for (const auto& r : runs) {
      std::string line;
      for (const auto& a : r.configuration.args) line += " " + a;
      fmt::print("{:>3}  {}\n     decodebench{}\n", r.index + 1, r.configuration.label, line);
    }
    return 0;
  }
  return execute_suite(suite, parse, f.json_path, f.quiet, f.verbose);
}

}  // namespace

void setup_suite(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<SuiteFlags>();
  CLI::App* cmd = app.add_subcommand(
      "suite", "Run every configuration of a suite file into one suite JSON document");
  cmd->add_option("file", f->file, "Suite JSON (bench-configs/suites/*.json)")->required();
  cmd->add_option("--json", f->json_path,
                  "Write the suite document (docs/suite.schema.json) to PATH ('-' = stdout)");
  cmd->add_option("--backend", f->backend, "Override the backend of every configuration");
  cmd->add_option("--threads", f->threads, "Override the CPU threads of every configuration");
  cmd->add_flag("--list", f->list, "Print the expanded configurations (validated) and exit");
  CLI::Option* quiet = cmd->add_flag("-q,--quiet", f->quiet, "Print nothing but errors");
  cmd->add_flag("-v,--verbose", f->verbose, "Print progress details")->excludes(quiet);
  cmd->footer(
      "A configuration is an object of run flags without '--' (\"layers\": 2, \"phase_timing\": "
      "true); a list value sweeps (cartesian product in key order, first key outermost). Every "
      "configuration is validated before the first runs. A configuration that fails is recorded "
      "in the document (status, exit_code, error) and the suite continues; the exit code is that "
      "of the first failed configuration (0 when all succeeded).\n");
  cmd->callback([f, exit_code] { *exit_code = run_suite_command(*f); });
}

int sweep_command(const std::vector<SweepPoint>& points, const std::vector<std::string>& args) {
  const ParsedRunArgs first = parse_run_args(points.front().args);
  const std::string json_path = first.options.json_path.value_or("");
  SuiteDefinition suite;
  suite.name = "sweep";
  suite.source = kCommandLineSource;
  suite.description = "decodebench";
  for (const auto& a : args) suite.description += " " + a;
  for (const auto& p : points) {
    SuiteConfiguration c;
    c.label = sweep_label(p.values);
    // The configuration's own flags: the sweep's --json is the suite document, not a run's.
    for (size_t i = 0; i < p.args.size(); ++i) {
      if (p.args[i] == "--json") {
        ++i;
      } else if (p.args[i].rfind("--json=", 0) != 0 && !(i == 0 && p.args[i] == "run")) {
        c.args.push_back(p.args[i]);
      }
    }
    suite.configurations.push_back(std::move(c));
  }
  const ParseRunArgsFn parse = [](const std::vector<std::string>& a) {
    return parse_run_args(a).options;
  };
  return execute_suite(suite, parse, json_path, first.quiet, first.verbose);
}

}  // namespace decodebench::app
