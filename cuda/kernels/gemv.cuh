// Matrix-vector product of the decode step: y = W·x (+ bias) (+ residual), W in its storage type.
// Host launcher only; includable from g++ code.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "core/quant/weight_type.hpp"

namespace decodebench::cuda {

/// Arguments of one GEMV. W is `rows` × `cols`, row-major, each row row_bytes(type, cols) bytes
/// (GGUF layout: ne0 = cols contiguous). All pointers are device pointers.
struct GemvParams {
  WeightType type = WeightType::kF32;
  const void* w = nullptr;          ///< [rows][row_bytes(type, cols)] bytes
  int64_t rows = 0;                 ///< output length
  int64_t cols = 0;                 ///< input length; a multiple of the type's block size
  const float* x = nullptr;         ///< [cols]; must not alias y
  float* y = nullptr;               ///< [rows]
  const float* bias = nullptr;      ///< [rows] or null
  const float* residual = nullptr;  ///< [rows] or null; may alias y (y = W·x + y)
  /// Kernel variant: 0 = automatic choice (what the backend uses); k > 0 forces variant k from
  /// gemv_variants(type) (benchmarks and tests). A forced variant still falls back to the scalar
  /// kernel when the pointers or shape do not allow the fast path.
  int variant = 0;
};

/// Launches y[r] = Σ_c W[r][c]·x[c] (+ bias[r]) (+ residual[r]) for every row, f32 accumulation,
/// on `stream`. Fixed launch shape for given (type, rows, cols, pointer alignment): capturable.
/// The fast path needs `w` and `x` 16-byte aligned (and, for F32/F16/BF16, cols % 4 == 0);
/// otherwise a slower fallback kernel with the same semantics runs.
/// Throws decodebench::Error: exit 2 for an unsupported type ("GEMV: unsupported weight type
/// #<id>"), exit 1 for null pointers, non-positive sizes, cols not a multiple of the block size,
/// or a failed launch.
void launch_gemv(const GemvParams& p, cudaStream_t stream);

/// How launch_gemv runs a given GEMV (for diagnostics and the run record).
struct GemvLaunchInfo {
  int variant = 0;           ///< variant id (see gemv_variants); 0 for the scalar fallback
  const char* kernel = "";   ///< variant name, e.g. "staged"; "fallback" for the scalar kernel
  bool staged = false;    ///< true: a fast (vectorized) kernel; false: scalar fallback
  int column_splits = 1;  ///< warps sharing one row group (split over the columns)
  int rows_per_warp = 1;
  int64_t grid = 0;    ///< blocks
  int block = 0;       ///< threads per block
  int smem_bytes = 0;  ///< dynamic shared memory per block
};

/// The launch configuration launch_gemv would use for `p` on the current device (same checks;
/// additionally exit 1 for a variant id that `p.type` does not have).
GemvLaunchInfo gemv_launch_info(const GemvParams& p);

/// Variant ids (for GemvParams::variant) available for `type`; empty for an unsupported type.
std::vector<int> gemv_variants(WeightType type);

/// Name of variant `variant` ("staged", ...), or "?" for an unknown id.
const char* gemv_variant_name(int variant);

}  // namespace decodebench::cuda
