// `decodebench bench-kernels`: times the decode-step kernels one by one on the current GPU (each
// as many launches captured in one CUDA graph, so host launch overhead is excluded), plus whole
// layer sequences. Pure C++ header: app/ includes it without CUDA headers.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/quant/weight_type.hpp"

namespace decodebench::cuda {

/// One explicit GEMV shape (`--shapes R×C`).
struct GemvShapeArg {
  int64_t rows = 0;
  int64_t cols = 0;
};

/// What to measure. Model names select that model's GEMV shapes, its per-step kernels and its
/// whole-layer graphs: "7b" (Qwen2.5-7B: 28 layers, hidden 3584, 28/4 heads of 128, ffn 18944,
/// vocab 152064) and "smollm2" (SmolLM2-135M: 30 layers, hidden 576, 9/3 heads of 64, ffn 1536,
/// vocab 49152).
struct KernelBenchOptions {
  std::vector<WeightType> types;     ///< GEMV weight types; empty = every supported type
  std::vector<std::string> models;   ///< "7b", "smollm2"
  std::vector<GemvShapeArg> shapes;  ///< extra GEMV shapes (rows × cols)
  int iterations = 20;               ///< timed graph replays per measurement (median reported)
  bool gemv = true;                  ///< GEMV section
  bool ops = true;                   ///< other per-step kernels
  bool layers = true;                ///< whole-step graphs of the models
  bool gemm = false;                 ///< batched products (launch_gemm) per shape and batch size
  std::vector<int64_t> batches = {1, 2, 4, 8, 16, 32, 64};  ///< batch sizes of the gemm section
  bool all_variants = true;  ///< time every GEMV variant, not only the automatic one
  size_t bandwidth_bytes = size_t{4} << 30;  ///< buffer of the streaming-read reference
};

/// The known model names, for help text and validation ("7b", "smollm2").
std::vector<std::string> kernel_bench_models();

/// Runs the benchmark on device 0 and returns the result document:
///   {"schema": "decodebench.bench-kernels/1", "gpu": {...}, "stream_read_gbps": G,
///    "settings": {...},
///    "gemv": [{model, shape, rows, cols, type, variant, kernel, auto, bytes, launches, us,
///              us_min, gbps, pct_stream, plan: {...}} ...],
///    "gemv_per_token": [{model, type, layout, us, bytes, gbps, pct_stream} ...],
///    "ops": [{model, op, detail, us, us_min, bytes, gbps, launches} ...],
///    "layers": [{model, type, head_type, variant, nodes, us, us_per_node, tok_s, bytes, gbps,
///                pct_stream} ...],
///    "gemm": [{model, shape, rows, cols, type, batch, kernel, us, bytes, gbps, pct_stream,
///              us_per_seq, vs_gemv} ...]  (gbps: weight bytes / time; vs_gemv: time of the batch
///              ÷ (batch × time of the automatic GEMV)),
///    "errors": [...], "context_unusable": B}
/// Times are microseconds per launch (GEMV/ops) or per token (layers); GB/s are 1e9 bytes/s of
/// weight (or KV) bytes read. Progress lines go to stderr. A failure of one kernel is recorded
/// in "errors" and the rest still run, except after one that left the CUDA context unusable (a
/// kernel fault): then nothing more runs, "context_unusable" is true and the document holds what
/// was timed before (the command exits 5).
/// Throws decodebench::Error: exit 3 without a usable device or memory, exit 2 for an unknown
/// model name, an invalid shape or a bad DECODEBENCH_* switch (checked before any device work),
/// exit 1 for CUDA failures outside a kernel's timing.
nlohmann::json run_kernel_bench(const KernelBenchOptions& options);

}  // namespace decodebench::cuda
