#include "app/commands/inspect.hpp"

#include <cstdio>
#include <memory>
#include <string>

#include "core/gguf/inspect.hpp"
#include "core/gguf/reader.hpp"
#include "core/result/json_file.hpp"

namespace decodebench::app {

namespace {

struct InspectOptions {
  std::string file;
  std::string json_path;  // "" = no JSON, "-" = stdout
};

void run_inspect(const InspectOptions& opt) {
  // Fail on a bad destination before reading a possibly large file.
  if (!opt.json_path.empty()) check_json_destination(opt.json_path);
  const gguf::Reader reader(opt.file);
  // With `--json -` stdout carries only the JSON document, so it stays parseable.
  if (opt.json_path != "-") {
    const std::string report = gguf::inspect_report(reader);
    std::fwrite(report.data(), 1, report.size(), stdout);
    std::fflush(stdout);
  }
  if (!opt.json_path.empty()) write_json_file(opt.json_path, gguf::inspect_json(reader));
}

}  // namespace

void setup_inspect(CLI::App& app) {
  auto opt = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "inspect", "Validate a GGUF file and report its metadata, tensors and bytes per token");
  cmd->add_option("file", opt->file, "GGUF file to inspect")->required();
  cmd->add_option("--json", opt->json_path, "Also write the report as JSON to PATH ('-' = stdout)");
  cmd->callback([opt] { run_inspect(*opt); });
}

}  // namespace decodebench::app
