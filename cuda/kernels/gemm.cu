// Batched product of the decode step: validation, the split inputs of the tensor-core kernel
// (gemm_mma.cu) and the GEMV-loop form.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "core/quant/blocks.hpp"
#include "cuda/check.hpp"
#include "cuda/kernels/common.cuh"
#include "cuda/kernels/gemm.cuh"
#include "cuda/kernels/gemm_impl.cuh"
#include "cuda/kernels/gemv.cuh"
#include "cuda/kernels/gemv_device.cuh"
#include "cuda/kernels/gemv_impl.cuh"

namespace decodebench::cuda {
namespace {

using gemm_impl::kPieces;
using kernels::ceil_div;

constexpr int kPrepThreads = 256;
constexpr int kPrepCols = 1024;  // columns per CTA
constexpr int64_t kMaxBatch = 256;

__device__ __forceinline__ uint16_t bits(__nv_bfloat16 h) { return __bfloat16_as_ushort(h); }
__device__ __forceinline__ uint16_t bits(__half h) { return __half_as_ushort(h); }

/// Splits v into kPieces values of the piece type whose sum is v (each piece is the rounded
/// remainder of the previous ones, so the remainders are exact in f32).
template <bool kF16>
__device__ __forceinline__ void split(float v, uint16_t (&out)[kPieces]) {
#pragma unroll
  for (int p = 0; p < kPieces; ++p) {
    if constexpr (kF16) {
      const __half h = __float2half_rn(v);
      out[p] = bits(h);
      v -= __half2float(h);
    } else {
      const __nv_bfloat16 h = __float2bfloat16_rn(v);
      out[p] = bits(h);
      v -= __bfloat162float(h);
    }
  }
}

/// grid (ceil(cols / kPrepCols), padded batch); sequences m >= batch get zeros.
template <bool kF16>
__global__ void __launch_bounds__(kPrepThreads)
    prepare_kernel(const float* x, int64_t ldx, int64_t batch, int64_t cols, int64_t mp,
                   uint16_t* pieces, float* inv_scale, float* xsum) {
  kernels::grid_dependency_trigger();
  kernels::grid_dependency_wait();
  const int64_t m = blockIdx.y;
  const bool real = m < batch;
  const float* xm = x + (real ? m : 0) * ldx;
  float scale = 1.0f;
  float inv = 1.0f;
  if constexpr (kF16) {
    // f16 pieces: scale the sequence so its largest |x| lies in [2^14, 2^15) (no overflow, few
    // subnormals); every CTA of the row computes the same power of two.
    __shared__ float red[kPrepThreads / 32];
    float mx = 0.0f;
    if (real) {
      for (int64_t c = threadIdx.x; c < cols; c += kPrepThreads) mx = fmaxf(mx, fabsf(xm[c]));
    }
    mx = kernels::warp_max(mx);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = mx;
    __syncthreads();
    mx = 0.0f;
    for (int i = 0; i < kPrepThreads / 32; ++i) mx = fmaxf(mx, red[i]);
    if (mx > 0.0f && isfinite(mx)) {
      int e = 0;
      frexpf(mx, &e);
      e = e < -100 ? -100 : e;  // tiny rows: keep 2^(15 − e) finite
      scale = ldexpf(1.0f, 15 - e);
      inv = ldexpf(1.0f, e - 15);
    }
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) inv_scale[m] = inv;
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * kPrepCols;
  const int64_t c1 = c0 + kPrepCols < cols ? c0 + kPrepCols : cols;
  // cols % 32 == 0: every warp covers 32 consecutive columns (one xsum entry) per iteration.
  for (int64_t c = c0 + threadIdx.x; c < c1; c += kPrepThreads) {
    const float v = real ? xm[c] : 0.0f;
    uint16_t pc[kPieces];
    split<kF16>(v * scale, pc);
#pragma unroll
    for (int p = 0; p < kPieces; ++p) pieces[(p * mp + m) * cols + c] = pc[p];
    const float s = kernels::warp_sum(v);
    if ((threadIdx.x & 31) == 0) xsum[(c / 32) * mp + m] = s;
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

void check_batch_cols(int64_t batch, int64_t cols, const char* what) {
  if (batch < 1 || batch > kMaxBatch) {
    throw runtime_error(std::string(what) + ": batch " + std::to_string(batch) + " outside 1..256");
  }
  if (cols <= 0 || cols % 32 != 0 || cols > (int64_t{1} << 24)) {
    throw runtime_error(std::string(what) + ": cols " + std::to_string(cols) +
                        " must be a positive multiple of 32");
  }
}

bool use_mma(const GemmParams& p) {
  if (p.variant == 1) return false;
  if (p.variant == 2) return true;
  // The GEMV loop where the tensor-core kernel's shared memory exceeds this GPU's limit (its
  // tiles are sized for sm_90's 227 KB).
  return p.batch > 1 && p.batch <= kMaxBatch && gemm_mma_supported(p.type, p.cols) &&
         gemm_impl::mma_fits(p.type, p.batch);
}

}  // namespace

bool gemm_mma_supported(WeightType type, int64_t cols) {
  if (!gemm_impl::mma_type_supported(type) || cols <= 0) return false;
  const WeightTraits tr = weight_traits(type);
  return cols % 32 == 0 && cols % tr.block_elems == 0;
}

size_t gemm_scratch_bytes(WeightType type, int64_t rows, int64_t cols) {
  if (!gemm_mma_supported(type, cols) || rows <= 0) return 0;
  return static_cast<size_t>(gemm_impl::mma_scratch_floats(type, rows, cols)) * 4;
}

size_t gemm_x_split_bytes(int64_t batch, int64_t cols) {
  return static_cast<size_t>(gemm_impl::split_layout(batch, (cols + 31) / 32 * 32).bytes);
}

void launch_gemm_prepare_x(WeightType type, const float* x, int64_t ldx, int64_t batch,
                           int64_t cols, void* split_out, bool pdl, cudaStream_t stream) {
  check_batch_cols(batch, cols, "GEMM prepare");
  if (x == nullptr || split_out == nullptr || !aligned16(split_out) || ldx < cols) {
    throw runtime_error("GEMM prepare: null or misaligned pointer, or ldx < cols");
  }
  const gemm_impl::SplitLayout s = gemm_impl::split_layout(batch, cols);
  auto* base = static_cast<uint8_t*>(split_out);
  auto* pieces = reinterpret_cast<uint16_t*>(base + s.pieces_offset);
  auto* inv = reinterpret_cast<float*>(base + s.inv_scale_offset);
  auto* xsum = reinterpret_cast<float*>(base + s.xsum_offset);
  int64_t l = ldx, b = batch, c = cols, mp = s.mp;
  void* args[] = {const_cast<float**>(&x), &l, &b, &c, &mp, &pieces, &inv, &xsum};
  const dim3 grid(static_cast<unsigned>(ceil_div<int64_t>(cols, kPrepCols)),
                  static_cast<unsigned>(s.mp));
  const void* kernel = type == WeightType::kF16
                           ? reinterpret_cast<const void*>(&prepare_kernel<true>)
                           : reinterpret_cast<const void*>(&prepare_kernel<false>);
  gemv_impl::launch_with_attrs(kernel, args, grid, dim3(kPrepThreads), 0, pdl, stream);
  DB_CUDA_CHECK_LAUNCH();
}

const char* gemm_kernel_name(const GemmParams& p) { return use_mma(p) ? "mma" : "gemv-loop"; }

void launch_gemm(const GemmParams& p, cudaStream_t stream) {
  const WeightTraits tr = weight_traits(p.type);
  if (tr.name == nullptr) {
    throw usage_error("GEMM: unsupported weight type #" +
                      std::to_string(static_cast<uint32_t>(p.type)));
  }
  if (p.w == nullptr || p.y == nullptr || p.rows <= 0 || p.cols <= 0 || p.batch < 1 ||
      p.batch > kMaxBatch || p.ldy < (p.y1 ? p.y_end0 : p.rows) ||
      (p.residual != nullptr && p.ldr < p.rows)) {
    throw runtime_error("GEMM: null pointer or invalid shape (rows " + std::to_string(p.rows) +
                        ", cols " + std::to_string(p.cols) + ", batch " + std::to_string(p.batch) +
                        ")");
  }
  if (p.y1 != nullptr) {
    const int64_t end1 = p.y2 ? p.y_end1 : p.rows;
    if (p.y_end0 <= 0 || end1 <= p.y_end0 || end1 > p.rows || p.ldy1 < end1 - p.y_end0 ||
        (p.y2 != nullptr && (end1 >= p.rows || p.ldy2 < p.rows - end1)) || p.residual != nullptr) {
      throw runtime_error("GEMM: invalid output segments");
    }
  }
  if (!use_mma(p)) {
    if (p.x == nullptr || p.ldx < p.cols) throw runtime_error("GEMM: GEMV loop needs x and ldx");
    for (int64_t m = 0; m < p.batch; ++m) {
      GemvParams g;
      g.type = p.type;
      g.w = p.w;
      g.rows = p.rows;
      g.cols = p.cols;
      g.x = p.x + m * p.ldx;
      g.y = p.y + m * p.ldy;
      g.bias = p.bias;
      g.residual = p.residual ? p.residual + m * p.ldr : nullptr;
      if (p.y1 != nullptr) {
        g.y1 = p.y1 + m * p.ldy1;
        g.y2 = p.y2 ? p.y2 + m * p.ldy2 : nullptr;
        g.y_end0 = p.y_end0;
        g.y_end1 = p.y2 ? p.y_end1 : p.rows;
      }
      g.pdl = p.pdl;
      launch_gemv(g, stream);
    }
    return;
  }
  if (!gemm_mma_supported(p.type, p.cols)) {
    throw runtime_error(std::string("GEMM: the tensor-core kernel does not take ") + tr.name +
                        " with cols " + std::to_string(p.cols));
  }
  if (!gemm_impl::mma_fits(p.type, p.batch)) {
    throw runtime_error(std::string("GEMM: the tensor-core kernel for ") + tr.name +
                        " needs more shared memory per block than this GPU allows");
  }
  if (p.x_split == nullptr || !aligned16(p.x_split) || !aligned16(p.w)) {
    throw runtime_error("GEMM: the tensor-core kernel needs x_split and 16-byte aligned W");
  }
  const gemm_impl::SplitLayout s = gemm_impl::split_layout(p.batch, p.cols);
  const auto* base = static_cast<const uint8_t*>(p.x_split);
  gemm_impl::MmaArgs a;
  a.w = static_cast<const uint8_t*>(p.w);
  a.rows = p.rows;
  a.cols = p.cols;
  a.row_bytes = row_bytes(p.type, p.cols);
  a.pieces = reinterpret_cast<const uint16_t*>(base + s.pieces_offset);
  a.inv_scale = reinterpret_cast<const float*>(base + s.inv_scale_offset);
  a.xsum = reinterpret_cast<const float*>(base + s.xsum_offset);
  a.mp = s.mp;
  a.batch = p.batch;
  a.y0 = p.y;
  a.ld0 = p.ldy;
  a.y1 = p.y1;
  a.ld1 = p.ldy1;
  a.y2 = p.y2;
  a.ld2 = p.ldy2;
  a.end0 = p.y1 ? p.y_end0 : p.rows;
  a.end1 = p.y2 ? p.y_end1 : p.rows;
  a.bias = p.bias;
  a.residual = p.residual;
  a.ldr = p.ldr;
  a.pdl = p.pdl ? 1 : 0;
  a.scratch = static_cast<float*>(p.scratch);
  a.scratch_floats = static_cast<int64_t>(p.scratch_bytes / 4);
  for (int64_t v0 = 0; v0 < s.mp; v0 += gemm_impl::kMaxVectorsPerLaunch) {
    a.vec0 = v0;
    const int nt =
        static_cast<int>(std::min<int64_t>(gemm_impl::kMaxVectorsPerLaunch, s.mp - v0) / 8);
    gemm_impl::mma_launch(p.type, a, nt, stream);
  }
  DB_CUDA_CHECK_LAUNCH();
}

}  // namespace decodebench::cuda
