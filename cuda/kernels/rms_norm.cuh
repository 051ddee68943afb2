// RMSNorm of the decode step (also the per-head QK-norm of qwen3). Host launcher only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace decodebench::cuda {

/// For each of `rows` rows of `n` floats (row r at x + r·n):
///   y[r][i] = x[r][i] · (1 / sqrt(Σ_i x[r][i]² / n + eps)) · w[i]
/// (ggml form, eps inside the root; cpu::rms_norm per row). All rows share the weight w[n]; rows >
/// 1 is the per-head QK-norm. `y` may alias `x`. One block per row; the sum of squares is a tree
/// reduction, so results differ from the CPU's sequential sum by rounding only.
/// Throws decodebench::Error (exit 1) for null pointers, rows/n <= 0, eps < 0 or a failed launch.
void launch_rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps,
                     cudaStream_t stream);

}  // namespace decodebench::cuda
