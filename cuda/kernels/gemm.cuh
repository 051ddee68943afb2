// Batched matrix products of the decode step (issue 8): Y[m] = W·X[m] (+ bias) (+ residual[m])
// for M sequences decoded in lockstep, W read once per step in its storage type. Host launchers
// only; includable from g++ code.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/quant/weight_type.hpp"

namespace decodebench::cuda {

/// Arguments of one batched product. W is `rows` × `cols` in the GGUF layout (as GemvParams).
/// Inputs and outputs are row-major per sequence: X[m] starts at x + m·ldx, Y[m] at y + m·ldy.
/// All pointers are device pointers.
struct GemmParams {
  WeightType type = WeightType::kF32;
  const void* w = nullptr;  ///< [rows][row_bytes(type, cols)] bytes, 16-byte aligned
  int64_t rows = 0;
  int64_t cols = 0;          ///< a multiple of 32 for the tensor-core kernel
  int64_t batch = 0;         ///< M, 1..256
  const float* x = nullptr;  ///< [M][ldx] f32 inputs (used by the GEMV-loop form)
  int64_t ldx = 0;
  /// Split inputs from launch_gemm_prepare_x for this (type, M, cols); required by the
  /// tensor-core kernel, ignored by the GEMV-loop form.
  const void* x_split = nullptr;
  /// Output segments for stacked weights: rows [0, y_end0) → y[m·ldy + r], [y_end0, y_end1) →
  /// y1[m·ldy1 + r − y_end0], [y_end1, rows) → y2[m·ldy2 + r − y_end1]. y1 == nullptr: one
  /// segment; y2 == nullptr: two (y_end1 = rows).
  float* y = nullptr;
  int64_t ldy = 0;
  float* y1 = nullptr;
  int64_t ldy1 = 0;
  float* y2 = nullptr;
  int64_t ldy2 = 0;
  int64_t y_end0 = 0;
  int64_t y_end1 = 0;
  const float* bias = nullptr;      ///< [rows] or null
  const float* residual = nullptr;  ///< [M][ldr] or null (one segment); may alias y with ldr = ldy
  int64_t ldr = 0;
  /// 0 = automatic (tensor-core kernel where gemm_mma_supported and M > 1, else the GEMV loop),
  /// 1 = GEMV loop (M launch_gemv calls: bit-identical to single-sequence decode), 2 = tensor-core.
  int variant = 0;
  bool pdl = false;  ///< programmatic dependent launch (see GemvParams::pdl)
  /// Tensor-core kernel: device scratch of gemm_scratch_bytes(type, rows, cols) bytes for
  /// shapes whose columns are split across CTAs (null is fine when that is 0).
  void* scratch = nullptr;
  size_t scratch_bytes = 0;
};

/// Whether the tensor-core kernel takes weights of `type` with `cols` columns: F16, BF16, Q8_0,
/// Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K with cols % 32 == 0 (and % 256 for the K-quants).
///
/// The kernel multiplies the weights' exact integer codes (float types: the values themselves)
/// on the bf16/f16 tensor cores (mma.sync m16n8k16, f32 accumulation) by x split into three
/// bf16 (F16 weights: f16, with a per-sequence power-of-two scale) pieces whose sum is x to
/// within 2^-24 relative; per-sub-block scales and minimums are applied in f32 afterwards. Its
/// results therefore differ from the f32 GEMV only by rounding, and sequence i of a batch
/// decodes the tokens of a single-sequence run unless two logits are within that rounding (a
/// near tie). Its tiles are sized for sm_90 (up to 182 KB of shared memory per block): where a
/// GPU allows less, the automatic choice takes the GEMV loop.
bool gemm_mma_supported(WeightType type, int64_t cols);

/// Bytes of scratch the tensor-core kernel needs for this shape (any batch): partial sums when
/// the columns are split across CTAs to fill the GPU (short matrices such as Q/K/V, O, down);
/// 0 otherwise.
size_t gemm_scratch_bytes(WeightType type, int64_t rows, int64_t cols);

/// Bytes of the split inputs for `batch` sequences of `cols` values (launch_gemm_prepare_x).
size_t gemm_x_split_bytes(int64_t batch, int64_t cols);

/// Writes the split form of X ([batch][ldx] f32, first `cols` values of each row) to `split`
/// (gemm_x_split_bytes(batch, cols) bytes, 16-byte aligned) for weights of `type` (F16 weights
/// take f16 pieces, every other type bf16 pieces). One launch, capturable.
/// Throws decodebench::Error (exit 1) for null/misaligned pointers, cols % 32 != 0, batch
/// outside 1..256 or a failed launch.
void launch_gemm_prepare_x(WeightType type, const float* x, int64_t ldx, int64_t batch,
                           int64_t cols, void* split, bool pdl, cudaStream_t stream);

/// Launches Y[m] = W·X[m] (+ bias) (+ residual[m]) for every m < batch on `stream`: the
/// tensor-core kernel (weights read once per 32 sequences) or the GEMV loop, per `variant`.
/// Fixed launch shapes for a given (type, rows, cols, batch): capturable; deterministic.
/// Throws decodebench::Error: exit 2 for an unsupported type; exit 1 for null pointers, bad
/// sizes or segment bounds, a missing x_split for the tensor-core kernel, or a failed launch.
void launch_gemm(const GemmParams& p, cudaStream_t stream);

/// "mma" or "gemv-loop": the kernel launch_gemm runs for `p`.
const char* gemm_kernel_name(const GemmParams& p);

}  // namespace decodebench::cuda
