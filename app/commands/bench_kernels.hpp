// `decodebench bench-kernels`: per-kernel timings of the decode step on the GPU (GEMV per weight
// type and shape with its launch plan, the other per-step kernels, whole-step graphs).
#pragma once

#include <CLI/CLI.hpp>

namespace decodebench::app {

/// Adds `bench-kernels [--type T,...] [--shapes 7b|smollm2|R×C,...] [--iterations N]
/// [--sections gemv,ops,layers] [--variants all|auto] [--json PATH|-]`. Exit 0 when every
/// measurement ran, 1 when some failed (listed), 3 without a GPU or a CUDA build.
void setup_bench_kernels(CLI::App& app, int* exit_code);

}  // namespace decodebench::app
