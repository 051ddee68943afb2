#include "app/commands/inspect.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "app/report/text.hpp"
#include "core/error.hpp"
#include "core/gguf/inspect.hpp"
#include "core/gguf/reader.hpp"
#include "core/gguf/value_scan.hpp"
#include "core/model/gguf_model.hpp"
#include "core/output_file.hpp"
#include "core/result/json_file.hpp"
#include "core/text.hpp"

namespace decodebench::app {

namespace {

struct InspectOptions {
  std::string file;
  std::string json_path;     // "" = no JSON, "-" = stdout
  std::string dump;          // tensor to dequantize ("" = none)
  std::string dump_out;      // where its f32 values go
  bool scan_values = false;  // dequantize every tensor and count NaN and inf
};

void run_inspect(const InspectOptions& opt) {
  std::error_code ignored;
  // Fail on a bad destination before reading a possibly large file.
  if (!opt.json_path.empty()) check_json_destination(opt.json_path);
  if (opt.dump.empty() != opt.dump_out.empty()) {
    throw usage_error("--dump NAME and --dump-out PATH go together");
  }
  if (!opt.dump_out.empty()) check_destination(opt.dump_out, "--dump-out");
  if (opt.scan_values && !opt.dump.empty()) {
    throw usage_error("--scan-values reports on the whole file and --dump on one tensor; give one");
  }
  if (!opt.json_path.empty() && !opt.dump_out.empty() &&
      (opt.json_path == opt.dump_out ||
       std::filesystem::equivalent(opt.json_path, opt.dump_out, ignored))) {
    throw usage_error("--json and --dump-out name the same destination ('" + opt.json_path +
                      "'); give each its own");
  }
  check_not_an_input(opt.json_path, "--json", {opt.file});
  check_not_an_input(opt.dump_out, "--dump-out", {opt.file});
  const gguf::Reader reader(opt.file);
  // Whether the file is meant as a model decodebench runs: a refusal then exits 2 (below). An
  // architecture key that is not a string counts as none (the report notes it as ignored).
  const gguf::KeyValue* arch_kv = reader.find("general.architecture");
  std::optional<std::string> arch;
  if (arch_kv != nullptr && arch_kv->value.type == gguf::ValueType::kString) {
    arch = reader.get_string("general.architecture");
  }
  const bool meant_to_run = !reader.tensors().empty() &&
                            (!arch || *arch == "llama" || *arch == "qwen2" || *arch == "qwen3");
  // Whether a run can load it (the whole file's report only; a dump asks about one tensor).
  std::optional<GgufModelCheck> check;
  if (opt.dump.empty()) {
    check = check_gguf_model(opt.file);
    // GGUF strings are bytes: the message goes to the terminal and into JSON (valid UTF-8).
    check->message = printable_message(check->message);
  }
  // The dump is decoded before anything is written, so a tensor that cannot be dequantized
  // leaves an existing --json file as it was.
  std::string bytes;
  if (!opt.dump.empty()) {
    const std::vector<float> values = gguf::dequantize_tensor(reader, opt.dump);
    bytes.resize(values.size() * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
  }
  std::optional<gguf::ValueScan> scan;
  if (opt.scan_values) {
    scan = gguf::scan_values(reader, static_cast<int>(std::thread::hardware_concurrency()));
  }
  // With `--json -` (or `--dump-out -`) stdout carries only that output, so it stays parseable.
  // A dump asks about one tensor: the report is then the tensor's line, not the whole file's.
  if (!writes_to_stdout(opt.json_path) && !writes_to_stdout(opt.dump_out)) {
    std::string report;
    if (opt.dump.empty()) {
      report = gguf::inspect_report(reader);
      switch (check->status) {
        case GgufModelCheck::Status::kRuns:
          report += "decodebench runs this model (decodebench --model FILE)\n";
          if (!check->unread.empty()) {
            std::string names;
            for (size_t i = 0; i < check->unread.size() && i < 8; ++i) {
              names += (i == 0 ? "" : ", ") + printable_message(check->unread[i]);
            }
            if (check->unread.size() > 8) names += ", ...";
            report += "note: a run reads none of " + std::to_string(check->unread.size()) +
                      " tensor(s), " + decimal_bytes(check->unread_bytes) + ": " + names +
                      " (the bytes per decode token above count them)\n";
          }
          break;
        case GgufModelCheck::Status::kUnsupported:
          if (!meant_to_run)
            report += "decodebench does not run this file: " + check->message + "\n";
          break;  // otherwise the error at the end says it
        case GgufModelCheck::Status::kInvalid:
          break;  // the error at the end says it
      }
      if (scan) report += gguf::value_scan_report(*scan);
    } else {
      const gguf::TensorInfo& t = *reader.find_tensor(opt.dump);
      std::string shape;
      for (uint32_t d = 0; d < t.n_dims; ++d) {
        shape += (d == 0 ? "" : " x ") + std::to_string(t.dims[d]);
      }
      report = opt.dump + ": " + gguf::ggml_type_name(t.type_id) + ", ne " + shape + ", " +
               std::to_string(t.elements()) + " values dequantized to f32 (rows of " +
               std::to_string(t.dims[0]) + "; the whole file's report: leave out --dump)\n";
    }
    std::fwrite(report.data(), 1, report.size(), stdout);
    flush_output(stdout);
  }
  // Files written are named on stderr, as a run names its --json file.
  if (!opt.json_path.empty()) {
    nlohmann::json doc = gguf::inspect_json(reader);
    if (check) {
      nlohmann::json unread = nlohmann::json::array();
      for (const std::string& n : check->unread) unread.push_back(printable_message(n));
      doc["model_check"] = {{"status", gguf_model_status_name(check->status)},
                            {"message", check->message.empty() ? nlohmann::json(nullptr)
                                                               : nlohmann::json(check->message)},
                            {"unread_tensors", unread},
                            {"unread_bytes", check->unread_bytes}};
    }
    if (scan) doc["values"] = gguf::value_scan_json(*scan);
    write_json_file(opt.json_path, doc);
    if (!writes_to_stdout(opt.json_path)) {
      std::fprintf(stderr, "decodebench: wrote %s\n", opt.json_path.c_str());
    }
  }
  if (!opt.dump.empty()) {
    write_text_file(opt.dump_out, bytes, "--dump-out");
    if (!writes_to_stdout(opt.dump_out)) {
      std::fprintf(stderr, "decodebench: wrote %s (%zu bytes, %zu f32 values)\n",
                   opt.dump_out.c_str(), bytes.size(), bytes.size() / sizeof(float));
    }
  }
  // Weights holding NaN or inf: said after the report, in the error that ends the command.
  std::string nonfinite;
  if (scan && scan->nonfinite_tensors() > 0) {
    const gguf::TensorValues* first = nullptr;
    for (const gguf::TensorValues& t : scan->tensors) {
      if (t.nonfinite() > 0) {
        first = &t;
        break;
      }
    }
    nonfinite = std::to_string(scan->nonfinite_tensors()) +
                " tensor(s) hold NaN or inf weights, the first '" + printable_message(first->name) +
                "' at row " + std::to_string(first->first_nonfinite / first->row_length) +
                ", column " + std::to_string(first->first_nonfinite % first->row_length);
    if (check->status == GgufModelCheck::Status::kRuns) {
      const bool unread =
          std::find(check->unread.begin(), check->unread.end(), first->name) != check->unread.end();
      nonfinite +=
          unread ? " (a tensor a run does not read)" : " (a run reads it: its logits can turn NaN)";
    }
  }
  // Reported, then refused: a model a run refuses, as broken (a model of a supported architecture
  // whose keys or tensors do not fit) or as one decodebench does not run (per-layer head counts,
  // value_length other than key_length, no general.architecture), ends the command with the exit
  // code of that run (2). Files that are not meant as such a model are inspected, not refused:
  // another architecture (a Gemma file is a valid file) and files without tensors (a tokenizer's
  // vocabulary file) keep exit 0, with the report's line saying decodebench does not run them.
  if (check && check->status != GgufModelCheck::Status::kRuns &&
      (meant_to_run || check->status == GgufModelCheck::Status::kInvalid)) {
    const bool invalid = check->status == GgufModelCheck::Status::kInvalid;
    throw usage_error(
        (invalid ? "cannot run this model: " : "decodebench does not run this file: ") +
        check->message + (nonfinite.empty() ? "" : "; also " + nonfinite));
  }
  if (!nonfinite.empty()) throw usage_error(opt.file + ": " + nonfinite);
}

}  // namespace

void setup_inspect(CLI::App& app) {
  auto opt = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "inspect",
      "Validate a GGUF file and report its metadata, tensors, bytes per token and whether "
      "decodebench can run it (exit 2, after the report, when it cannot: a llama/qwen2/qwen3 "
      "model whose tensors or metadata do not fit together, or in a form decodebench does not "
      "run; files of other architectures and without tensors are inspected with exit 0)");
  cmd->add_option("file", opt->file, "GGUF file to inspect")->required();
  cmd->add_option(
      "--json", opt->json_path,
      "Also write the report as JSON to PATH ('-' = stdout, which then carries the JSON alone, "
      "without the text report)");
  cmd->add_option("--dump", opt->dump,
                  "Dequantize tensor NAME with decodebench's CPU dequantizer (needs --dump-out); "
                  "the report is then that tensor's line");
  cmd->add_option("--dump-out", opt->dump_out,
                  "Write the --dump values to PATH as raw little-endian f32, rows of ne0 values "
                  "('-' = stdout)");
  cmd->add_flag("--scan-values", opt->scan_values,
                "Dequantize every tensor and count NaN and inf values (exit 2 when any), with "
                "each tensor's range in the JSON");
  cmd->callback([opt] { run_inspect(*opt); });
}

}  // namespace decodebench::app
