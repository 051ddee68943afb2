#include <string>

#include "core/error.hpp"
#include "cuda/check.hpp"
#include "cuda/kernels/common.cuh"
#include "cuda/kernels/rms_norm.cuh"

namespace decodebench::cuda {
namespace {

constexpr int kMaxThreads = 512;

__global__ void __launch_bounds__(kMaxThreads)
    rms_norm_kernel(const float* x, const float* w, float* y, int64_t n, float eps) {
  __shared__ float warp_sums[kMaxThreads / 32];
  __shared__ float scale_s;
  const float* xr = x + static_cast<int64_t>(blockIdx.x) * n;
  float* yr = y + static_cast<int64_t>(blockIdx.x) * n;
  const int t = static_cast<int>(threadIdx.x);
  const int nt = static_cast<int>(blockDim.x);

  float sum = 0.0f;
  for (int64_t i = t; i < n; i += nt) sum = fmaf(xr[i], xr[i], sum);
  sum = kernels::warp_sum(sum);
  if ((t & 31) == 0) warp_sums[t >> 5] = sum;
  __syncthreads();
  if (t < 32) {
    float s = t < nt / 32 ? warp_sums[t] : 0.0f;
    s = kernels::warp_sum(s);
    // Same expression as cpu::rms_norm: 1 / sqrt(mean + eps), IEEE sqrt and division.
    if (t == 0) scale_s = 1.0f / sqrtf(s / static_cast<float>(n) + eps);
  }
  __syncthreads();
  const float scale = scale_s;
  // (x·scale)·w with two roundings, as the CPU evaluates it. Every element is read and written
  // by the same thread after the barrier, so y may alias x.
  for (int64_t i = t; i < n; i += nt) yr[i] = __fmul_rn(__fmul_rn(xr[i], scale), w[i]);
}

}  // namespace

void launch_rms_norm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps,
                     cudaStream_t stream) {
  if (x == nullptr || w == nullptr || y == nullptr) {
    throw runtime_error("rms_norm: null device pointer");
  }
  if (rows <= 0 || n <= 0 || rows > (int64_t{1} << 31) - 1 || !(eps >= 0.0f)) {
    throw runtime_error("rms_norm: invalid arguments rows=" + std::to_string(rows) +
                        " n=" + std::to_string(n) + " eps=" + std::to_string(eps));
  }
  // A warp multiple up to 512 threads: a 128-value QK-norm row gets 128 threads.
  const int64_t want = kernels::ceil_div<int64_t>(n, 32) * 32;
  const int threads = static_cast<int>(want < kMaxThreads ? want : kMaxThreads);
  rms_norm_kernel<<<static_cast<unsigned>(rows), threads, 0, stream>>>(x, w, y, n, eps);
  DB_CUDA_CHECK_LAUNCH();
}

}  // namespace decodebench::cuda
