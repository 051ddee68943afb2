#include "core/suite/suite_runner.hpp"

#include <chrono>
#include <exception>
#include <new>

#include "core/result/environment.hpp"
#include "core/runner.hpp"
#include "core/text.hpp"

namespace decodebench {

std::vector<PreparedRun> prepare_suite(const SuiteDefinition& suite, const ParseRunArgsFn& parse,
                                       int hardware_threads) {
  std::vector<PreparedRun> runs;
  for (size_t i = 0; i < suite.configurations.size(); ++i) {
    const SuiteConfiguration& c = suite.configurations[i];
    const std::string where =
        suite.source + ": configuration " + std::to_string(i + 1) + " of " +
        std::to_string(suite.configurations.size()) +
        // A label joins several values: 4 values' worth of it.
        (c.label.empty() ? "" : " (" + echo_value(c.label, 4 * kEchoMaxBytes) + ")") +
        // The file's entry it came from, numbered as the errors found while reading the file.
        (c.entry ? ", from configurations[" + std::to_string(*c.entry) + "]" : "");
    try {
      const RunOptions options = parse(c.args);
      if (options.json_path) {
        throw usage_error(
            "--json is not allowed per configuration (the suite writes one document)");
      }
      runs.push_back({i, c, resolve_run_config(options, hardware_threads)});
    } catch (const Error& e) {
      throw Error(e.code(), where + ": " + e.what());
    }
  }
  return runs;
}

SuiteOutcome run_suite(const SuiteDefinition& suite, const std::vector<PreparedRun>& runs,
                       const SuiteCallbacks& callbacks) {
  using Clock = std::chrono::steady_clock;
  const auto ns_since = [](Clock::time_point t0) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
  };
  SuiteOutcome outcome;
  nlohmann::json environment = host_environment();
  environment["gpu"] = nullptr;
  nlohmann::json results = nlohmann::json::array();
  const auto suite_start = Clock::now();
  bool context_lost = false;
  for (const PreparedRun& run : runs) {
    SuiteEntry entry;
    entry.index = run.index;
    entry.label = run.configuration.label;
    entry.args = run.configuration.args;
    if (context_lost) {
      entry.status = "skipped";
      entry.error = "not run: the CUDA context became unusable in an earlier configuration";
      entry.exit_code = ExitCode::kContextUnusable;
      if (callbacks.on_finish) callbacks.on_finish(entry, nullptr);
      outcome.entries.push_back(std::move(entry));
      continue;
    }
    if (callbacks.on_start) callbacks.on_start(run, runs.size());
    const auto t0 = Clock::now();
    std::optional<nlohmann::json> doc;
    try {
      const RunReport report = execute_run(run.config, callbacks.run);
      doc = result_json(report);
      entry.exit_code = report.exit_code;
    } catch (const Error& e) {
      entry.status = "failed";
      entry.exit_code = e.code();
      entry.error = e.what();
    } catch (const std::bad_alloc&) {
      entry.status = "failed";
      entry.exit_code = ExitCode::kResources;
      entry.error = "out of host memory";
      try {  // the figures need a few small allocations; without them the plain message
        const std::string state = host_memory_state();
        if (!state.empty()) entry.error += " (" + state + ")";
      } catch (const std::exception&) {
      }
    } catch (const std::exception& e) {
      entry.status = "failed";
      entry.exit_code = ExitCode::kRuntime;
      entry.error = std::string("internal error: ") + e.what();
    }
    entry.wall_ns = ns_since(t0);
    if (doc) {
      entry.result_index = results.size();
      if (environment["gpu"].is_null() && doc->contains("environment") &&
          (*doc)["environment"].contains("gpu")) {
        environment["gpu"] = (*doc)["environment"]["gpu"];
      }
      results.push_back(std::move(*doc));
    }
    if (entry.exit_code == ExitCode::kContextUnusable) context_lost = true;
    if (outcome.exit_code == ExitCode::kOk) outcome.exit_code = entry.exit_code;
    if (callbacks.on_finish) callbacks.on_finish(entry, doc ? &results.back() : nullptr);
    outcome.entries.push_back(std::move(entry));
  }
  nlohmann::json configurations = nlohmann::json::array();
  for (const SuiteEntry& e : outcome.entries) {
    configurations.push_back(
        {{"index", e.index},
         {"label", e.label},
         {"args", e.args},
         {"status", e.status},
         {"exit_code", static_cast<int>(e.exit_code)},
         {"error", e.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.error)},
         {"result", e.result_index ? nlohmann::json(*e.result_index) : nlohmann::json(nullptr)},
         {"wall_ns", e.wall_ns}});
  }
  outcome.document = {{"schema_version", kSuiteSchemaVersion},
                      {"suite",
                       {{"name", suite.name},
                        {"description", suite.description},
                        {"source", suite.source},
                        {"configurations", runs.size()},
                        {"wall_ns", ns_since(suite_start)}}},
                      {"tool", tool_json()},
                      {"environment", environment},
                      {"configurations", configurations},
                      {"results", std::move(results)},
                      {"exit_code", static_cast<int>(outcome.exit_code)}};
  return outcome;
}

}  // namespace decodebench
