#include "app/commands/bench_kernels.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cstdio>
#include <string>
#include <vector>

#include "app/report/text.hpp"
#include "core/backend_registry.hpp"
#include "core/error.hpp"
#include "core/output_file.hpp"
#include "core/quant/weight_type.hpp"
#include "core/result/environment.hpp"
#include "core/result/json_file.hpp"
#include "core/text.hpp"

#ifdef DECODEBENCH_HAVE_CUDA
#include "cuda/bench_kernels.hpp"
#endif

namespace decodebench::app {

namespace {

struct Flags {
  std::vector<std::string> types;
  std::vector<std::string> shapes{"7b", "smollm2"};
  std::vector<std::string> sections{"gemv", "ops", "layers"};
  std::string variants = "all";
  int iterations = 20;
  std::string json_path;
  std::vector<int64_t> batches{1, 2, 4, 8, 16, 32, 64};
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

WeightType parse_type(const std::string& name) {
  std::string known;
  for (const WeightType t : kAllWeightTypes) {
    if (lower(name) == lower(weight_traits(t).name)) return t;
    known += std::string(known.empty() ? "" : ", ") + weight_traits(t).name;
  }
  throw usage_error("bench-kernels: --type: unknown weight type '" + echo_value(name) +
                    "' (known: " + known + ")");
}

/// "R×C" or "RxC" → rows, cols; false when `s` is not of that form.
bool parse_shape(const std::string& s, int64_t* rows, int64_t* cols) {
  size_t sep = s.find("\xC3\x97");  // U+00D7 MULTIPLICATION SIGN in UTF-8
  size_t sep_len = 2;
  if (sep == std::string::npos) {
    sep = s.find_first_of("xX");
    sep_len = 1;
  }
  if (sep == std::string::npos) return false;
  const char* a = s.data();
  const char* b = s.data() + sep + sep_len;
  const char* end = s.data() + s.size();
  const auto r1 = std::from_chars(a, s.data() + sep, *rows);
  const auto r2 = std::from_chars(b, end, *cols);
  return r1.ec == std::errc() && r1.ptr == s.data() + sep && r2.ec == std::errc() && r2.ptr == end;
}

#ifdef DECODEBENCH_HAVE_CUDA

std::string str(const nlohmann::json& j, const char* key) {
  if (!j.contains(key)) return "-";
  return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
}

void print_report(const nlohmann::json& r, FILE* out) {
  fmt::print(out, "\n{} · streaming read {:.0f} GB/s\n", str(r["gpu"], "name"),
             r["stream_read_gbps"].get<double>());
  if (!r["gemv"].empty()) {
    fmt::print(out, "\nGEMV (µs per launch inside a graph; weights from HBM)\n");
    fmt::print(out, "{:<8} {:<8} {:>13} {:<5} {:<19} {:>9} {:>8} {:>6}  {}\n", "model", "shape",
               "rows×cols", "type", "kernel", "µs", "GB/s", "%", "plan");
    for (const auto& g : r["gemv"]) {
      const auto& p = g["plan"];
      fmt::print(
          out, "{:<8} {:<8} {:>13} {:<5} {:<19} {:>9.2f} {:>8.0f} {:>6.1f}  {}\n", str(g, "model"),
          str(g, "shape"), fmt::format("{}×{}", g["rows"].get<int64_t>(), g["cols"].get<int64_t>()),
          str(g, "type"), str(g, "kernel") + (g["auto"].get<bool>() ? "*" : ""),
          g["us"].get<double>(), g["gbps"].get<double>(), g["pct_stream"].get<double>(),
          fmt::format("grid {} × {} thr, tasks {}, splits {}, rows/warp {}, chunk {}, smem {}",
                      p["grid"].get<int64_t>(), p["block"].get<int>(), p["tasks"].get<int64_t>(),
                      p["column_splits"].get<int>(), p["rows_per_warp"].get<int>(),
                      p.value("chunk", 0), p["smem_bytes"].get<int>()));
    }
    fmt::print(out, "(* = the variant launch_gemv picks automatically)\n");
  }
  if (!r["gemv_per_token"].empty()) {
    fmt::print(out, "\nGEMV time per token (Σ shape × count; auto variant · best variant)\n");
    fmt::print(out, "{:<8} {:<5} {:<9} {:>10} {:>8} {:>6} {:>10} {:>6}\n", "model", "type",
               "layout", "µs", "GB/s", "%", "best µs", "best %");
    for (const auto& g : r["gemv_per_token"]) {
      fmt::print(out, "{:<8} {:<5} {:<9} {:>10.1f} {:>8.0f} {:>6.1f} {:>10.1f} {:>6.1f}\n",
                 str(g, "model"), str(g, "type"), str(g, "layout"), g["us"].get<double>(),
                 g["gbps"].get<double>(), g["pct_stream"].get<double>(),
                 g["best_variants_us"].get<double>(), g["best_variants_pct_stream"].get<double>());
    }
  }
  if (!r["ops"].empty()) {
    fmt::print(out, "\nOther kernels (µs per launch inside a graph)\n");
    fmt::print(out, "{:<8} {:<18} {:>9} {:>9} {:>8}  {}\n", "model", "op", "µs", "min µs", "GB/s",
               "detail");
    for (const auto& o : r["ops"]) {
      fmt::print(out, "{:<8} {:<18} {:>9.2f} {:>9.2f} {:>8.0f}  {}\n", str(o, "model"),
                 str(o, "op"), o["us"].get<double>(), o["us_min"].get<double>(),
                 o["gbps"].get<double>(), str(o, "detail"));
    }
  }
  if (!r["layers"].empty()) {
    fmt::print(out, "\nWhole decode step as one graph (seq_len 129, capacity 256)\n");
    fmt::print(out, "{:<8} {:<11} {:<19} {:>10} {:>9} {:>6} {:>8} {:>8} {:>6} {:>10}\n", "model",
               "types", "variant", "µs/token", "tok/s", "nodes", "µs/node", "GB/s", "%", "Δlogits");
    for (const auto& s : r["layers"]) {
      fmt::print(
          out,
          "{:<8} {:<11} {:<19} {:>10.1f} {:>9.1f} {:>6} {:>8.2f} {:>8.0f} {:>6.1f} {:>10.3g}\n",
          str(s, "model"), str(s, "type") + "/" + str(s, "head_type"), str(s, "variant"),
          s["us"].get<double>(), s["tok_s"].get<double>(), s["nodes"].get<int64_t>(),
          s["us_per_node"].get<double>(), s["gbps"].get<double>(), s["pct_stream"].get<double>(),
          s.value("logits_max_abs_diff_vs_baseline", 0.0));
    }
    fmt::print(out, "(Δlogits: largest |logit − baseline logit|, same weights and inputs)\n");
  }
  if (r.contains("gemm") && !r["gemm"].empty()) {
    fmt::print(out, "\nBatched products (tensor-core kernel) vs the batch-1 GEMV\n");
    fmt::print(out, "{:<8} {:<8} {:<5} {:>5} {:>10} {:>8} {:>6} {:>10} {:>9}\n", "model", "shape",
               "type", "batch", "µs", "GB/s", "%", "µs/seq", "vs GEMV");
    for (const auto& g : r["gemm"]) {
      fmt::print(out, "{:<8} {:<8} {:<5} {:>5} {:>10.2f} {:>8.0f} {:>6.1f} {:>10.2f} {:>8.3f}x\n",
                 str(g, "model"), str(g, "shape"), str(g, "type"), g["batch"].get<int64_t>(),
                 g["us"].get<double>(), g["gbps"].get<double>(), g["pct_stream"].get<double>(),
                 g["us_per_seq"].get<double>(), g["vs_gemv"].get<double>());
    }
    fmt::print(out, "(vs GEMV: time of the batch ÷ (batch × one automatic GEMV))\n");
  }
  for (const auto& e : r["errors"]) {
    fmt::print(out, "ERROR {}: {}\n", str(e, "what"), str(e, "error"));
  }
}

#endif  // DECODEBENCH_HAVE_CUDA

}  // namespace

void setup_bench_kernels(CLI::App& app, int* exit_code) {
  auto* cmd =
      app.add_subcommand("bench-kernels",
                         "Time each decode kernel on the GPU (GEMV per type and shape, other "
                         "kernels, whole-step graphs)");
  static Flags flags;  // CLI11 binds by reference: storage for the process lifetime
  Flags* f = &flags;
  cmd->add_option("--type", f->types, "GEMV weight types, e.g. bf16,q4_k (default: all)")
      ->delimiter(',');
  cmd->add_option("--shapes", f->shapes,
                  "Models and GEMV shapes: 7b, smollm2, ROWSxCOLS (default: 7b,smollm2)")
      ->delimiter(',');
  cmd->add_option("--iterations", f->iterations, "Timed graph replays, median reported (20)");
  cmd->add_option("--sections", f->sections,
                  "gemv, ops, layers (whole-step graphs of a model of the step: weights in GGUF "
                  "blocks, x' pre-split for the down projection only, so quantized GEMVs may run "
                  "other kernels than the backend's; `decodebench run` times the backend's own "
                  "step), gemm (batched products; default: gemv,ops,layers)")
      ->delimiter(',');
  cmd->add_option("--batches", f->batches, "Batch sizes of the gemm section (1,2,4,...,64)")
      ->delimiter(',');
  cmd->add_option("--variants", f->variants,
                  "GEMV kernels timed: all (every variant) | auto (the automatic pick)");
  cmd->add_option("--json", f->json_path, "Write the results as JSON to PATH ('-' = stdout)");
  cmd->callback([f, exit_code] {
    if (f->iterations < 1) throw usage_error("bench-kernels: --iterations must be >= 1");
    if (f->variants != "all" && f->variants != "auto") {
      throw usage_error("bench-kernels: --variants must be all or auto");
    }
    std::vector<WeightType> types;
    for (const std::string& t : f->types) types.push_back(parse_type(t));
    std::vector<std::string> models;
    std::vector<std::pair<int64_t, int64_t>> shapes;
    for (const std::string& s : f->shapes) {
      int64_t rows = 0, cols = 0;
      if (s == "7b" || s == "smollm2") {
        models.push_back(s);
      } else if (parse_shape(s, &rows, &cols) && rows > 0 && cols > 0) {
        shapes.emplace_back(rows, cols);
      } else {
        throw usage_error("bench-kernels: --shapes: '" + echo_value(s) +
                          "' is neither 7b, smollm2 nor ROWSxCOLS");
      }
    }
    bool gemv = false, ops = false, layers = false, gemm = false;
    for (const std::string& s : f->sections) {
      if (s == "gemv") {
        gemv = true;
      } else if (s == "ops") {
        ops = true;
      } else if (s == "layers") {
        layers = true;
      } else if (s == "gemm") {
        gemm = true;
      } else {
        throw usage_error("bench-kernels: --sections: unknown section '" + echo_value(s) +
                          "' (gemv, ops, layers, gemm)");
      }
    }
    // Checked before any device work: the gemm section runs last, minutes into a run.
    for (const int64_t b : f->batches) {
      if (b < 1 || b > 256) {
        throw usage_error("bench-kernels: --batches must be in 1..256, got " + std::to_string(b));
      }
    }
    if (!f->json_path.empty()) check_json_destination(f->json_path);
    // A misspelled measurement switch would leave every GEMV at its default form unnoticed.
    const std::vector<std::string> unknown = print_unknown_variable_warnings();
#ifdef DECODEBENCH_HAVE_CUDA
    cuda::KernelBenchOptions o;
    o.types = types;
    o.models = models;
    for (const auto& [r, c] : shapes) o.shapes.push_back({r, c});
    o.iterations = f->iterations;
    o.gemv = gemv;
    o.ops = ops;
    o.layers = layers;
    o.gemm = gemm;
    o.batches = f->batches;
    o.all_variants = f->variants == "all";
    nlohmann::json r = cuda::run_kernel_bench(o);
    r["environment"] = host_environment();
    r["warnings"] = unknown;
    print_report(r, writes_to_stdout(f->json_path) ? stderr : stdout);
    if (!f->json_path.empty()) write_json_file(f->json_path, r);
    // 5 after a kernel fault (the document holds what ran before it), 1 after other errors.
    *exit_code = r.value("context_unusable", false) ? static_cast<int>(ExitCode::kContextUnusable)
                 : r["errors"].empty()              ? 0
                                                    : static_cast<int>(ExitCode::kRuntime);
#else
    (void)gemv;
    (void)ops;
    (void)layers;
    (void)gemm;
    (void)exit_code;
    throw resource_error("bench-kernels: this build has no CUDA backend (built without nvcc)");
#endif
  });
}

}  // namespace decodebench::app
