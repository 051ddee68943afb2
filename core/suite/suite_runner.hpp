// Running a suite (or a command-line sweep): every configuration through the same resolution and
// execution as `decodebench run`, collected into one suite document (docs/suite.schema.json).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/run_config.hpp"
#include "core/runner.hpp"
#include "core/suite/suite.hpp"

namespace decodebench {

/// Turns one configuration's run flags into RunOptions. The app provides it (the CLI11 parser of
/// `decodebench run`), so suites accept exactly the run flags. Throws decodebench::Error (exit 2).
using ParseRunArgsFn = std::function<RunOptions(const std::vector<std::string>& args)>;

/// A configuration with its resolved RunConfig.
struct PreparedRun {
  size_t index = 0;  ///< position in the suite (0-based)
  SuiteConfiguration configuration;
  RunConfig config;
};

/// Parses and resolves (resolve_run_config) every configuration before anything runs, so a typo in
/// the last one fails at once. Throws decodebench::Error (exit 2) whose message names the suite
/// source, the configuration ("configuration N of M", from 1, and its label), for a suite file
/// the entry it was expanded from ("from configurations[i]", from 0, as the file's own errors
/// count) and the original problem; also when a
/// configuration sets --json (the suite writes one document).
std::vector<PreparedRun> prepare_suite(const SuiteDefinition& suite, const ParseRunArgsFn& parse,
                                       int hardware_threads);

/// What happened to one configuration.
struct SuiteEntry {
  size_t index = 0;
  std::string label;
  std::vector<std::string> args;
  std::string status = "ok";           ///< "ok" | "failed" | "skipped"
  ExitCode exit_code = ExitCode::kOk;  ///< run's exit code (4: verification under --keep-going)
  std::string error;                   ///< message of the failure ("" when ok)
  std::optional<size_t> result_index;  ///< index in the document's results[]
  int64_t wall_ns = 0;
};

/// Live notifications (all optional).
struct SuiteCallbacks {
  std::function<void(const PreparedRun& run, size_t total)> on_start;
  /// `result` is the configuration's result document, nullptr when it failed or was skipped.
  std::function<void(const SuiteEntry& entry, const nlohmann::json* result)> on_finish;
  RunCallbacks run;  ///< passed to execute_run for every configuration
};

/// The outcome of a suite.
struct SuiteOutcome {
  nlohmann::json document;  ///< the suite document
  std::vector<SuiteEntry> entries;
  ExitCode exit_code =
      ExitCode::kOk;  ///< 0, or the exit code of the first configuration that failed
};

/// Runs the prepared configurations in order with execute_run() and result_json(). A configuration
/// that throws is recorded (status "failed", its exit code and message) and the suite continues
/// with the next one, except after exit code 5 (CUDA context unusable): the rest are "skipped".
/// The suite's exit code is that of the first configuration whose exit code is not 0.
/// Document (docs/suite.schema.json): {schema_version, suite {name, description, source,
/// configurations, wall_ns}, tool, environment (host at the start; gpu of the first result that
/// has one, else null), configurations [{index, label, args, status, exit_code, error, result,
/// wall_ns}], results [result documents of the configurations that ran], exit_code}.
/// A failing configuration never makes it throw (every exception of a run is recorded).
SuiteOutcome run_suite(const SuiteDefinition& suite, const std::vector<PreparedRun>& runs,
                       const SuiteCallbacks& callbacks);

}  // namespace decodebench
