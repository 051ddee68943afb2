// Internal interface between gemm.cu (validation, split inputs, dispatch) and gemm_mma.cu (the
// tensor-core kernel). Plain data and host declarations only; includable from g++ and nvcc.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/quant/weight_type.hpp"

namespace decodebench::cuda::gemm_impl {

/// Pieces per x value in the split form (x = p0 + p1 + p2).
inline constexpr int kPieces = 3;
/// Sequences one tensor-core launch serves (4 n8 tiles); larger batches take several launches.
inline constexpr int kMaxVectorsPerLaunch = 32;

/// Sequences rounded up to a whole n8 tile (8).
constexpr int64_t padded_batch(int64_t batch) { return (batch + 7) / 8 * 8; }

/// Split-input layout for `batch` sequences of `cols` values (cols % 32 == 0), Mp = padded:
///   pieces   u16 [kPieces][Mp][cols]   bf16 or f16 bits; piece sums give x · scale[m]
///   inv_scale f32 [Mp]                 1 / scale[m] (powers of two; 1 for bf16 pieces)
///   xsum32   f32 [cols / 32][Mp]       Σ x over each 32-column sub-block (for minimums)
struct SplitLayout {
  int64_t mp = 0;
  int64_t pieces_offset = 0;
  int64_t inv_scale_offset = 0;
  int64_t xsum_offset = 0;
  int64_t bytes = 0;
};

constexpr SplitLayout split_layout(int64_t batch, int64_t cols) {
  SplitLayout s;
  s.mp = padded_batch(batch);
  s.pieces_offset = 0;
  s.inv_scale_offset = kPieces * s.mp * cols * 2;
  s.xsum_offset = s.inv_scale_offset + (s.mp * 4 + 15) / 16 * 16;
  s.bytes = s.xsum_offset + (cols / 32 * s.mp * 4 + 15) / 16 * 16;
  return s;
}

/// Arguments of one tensor-core launch (vectors [vec0, vec0 + 8·nt) of the padded batch).
struct MmaArgs {
  const uint8_t* w = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t row_bytes = 0;
  const uint16_t* pieces = nullptr;
  const float* inv_scale = nullptr;
  const float* xsum = nullptr;
  int64_t mp = 0;     ///< padded batch (stride of the pieces and sums)
  int64_t batch = 0;  ///< real sequences (outputs only for m < batch)
  int64_t vec0 = 0;   ///< first sequence of this launch
  float* y0 = nullptr;
  float* y1 = nullptr;
  float* y2 = nullptr;
  int64_t ld0 = 0, ld1 = 0, ld2 = 0;
  int64_t end0 = 0, end1 = 0;
  const float* bias = nullptr;
  const float* residual = nullptr;
  int64_t ldr = 0;
  int ksplit = 1;            ///< column splits (grid.y); set by the launcher
  float* scratch = nullptr;  ///< [ksplit][8·nt][rows] partial sums when ksplit > 1
  int64_t scratch_floats = 0;
  int pdl = 0;
};

/// Whether the kernel exists for `type` (block geometry checks are the caller's).
bool mma_type_supported(WeightType type);
/// Whether the kernel's shared memory for `batch` sequences (n8 tiles per launch) fits the
/// current device's per-block opt-in limit (sm_90: 227 KB; smaller on other GPUs).
bool mma_fits(WeightType type, int64_t batch);
/// Floats of scratch the launches of a (type, rows, cols) product need (0: no column split).
int64_t mma_scratch_floats(WeightType type, int64_t rows, int64_t cols);
/// Launches the kernel for n8 tiles `nt` (1..4) with the CTA count chosen for the shape (plus a
/// reduction kernel when the columns are split across CTAs).
void mma_launch(WeightType type, const MmaArgs& a, int nt, cudaStream_t stream);

}  // namespace decodebench::cuda::gemm_impl
