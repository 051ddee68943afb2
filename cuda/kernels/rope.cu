#include <string>

#include "core/error.hpp"
#include "cuda/check.hpp"
#include "cuda/kernels/common.cuh"
#include "cuda/kernels/rope.cuh"
#include "cuda/kernels/rope_device.cuh"

namespace decodebench::cuda {
namespace {

constexpr int kThreads = 256;

/// One thread per (head, pair) over the q heads followed by the k heads.
__global__ void __launch_bounds__(kThreads)
    rope_kernel(float* q, float* k, int n_heads, int n_kv_heads, int head_dim, int half,
                const int32_t* d_pos, const double* inv_freq, bool adjacent) {
  const int idx = static_cast<int>(blockIdx.x) * kThreads + static_cast<int>(threadIdx.x);
  const int total = (n_heads + n_kv_heads) * half;
  if (idx >= total) return;
  const int head = idx / half;
  const int i = idx % half;
  float* x = head < n_heads ? q + static_cast<int64_t>(head) * head_dim
                            : k + static_cast<int64_t>(head - n_heads) * head_dim;
  const float2 cs = kernels::rope_cos_sin(*d_pos, inv_freq[i]);
  kernels::rotate_pair(x, i, half, adjacent, cs.x, cs.y);
}

}  // namespace

void launch_rope(float* q, float* k, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim,
                 int64_t rope_dim, const int32_t* d_pos, const double* d_inv_freq, RopeStyle style,
                 cudaStream_t stream) {
  if (q == nullptr || d_pos == nullptr || d_inv_freq == nullptr ||
      (k == nullptr && n_kv_heads > 0)) {
    throw runtime_error("rope: null device pointer");
  }
  if (n_heads <= 0 || n_kv_heads < 0 || head_dim <= 0 || rope_dim <= 0 || rope_dim % 2 != 0 ||
      rope_dim > head_dim || (n_heads + n_kv_heads) * (rope_dim / 2) > (int64_t{1} << 30)) {
    throw runtime_error("rope: invalid shape n_heads=" + std::to_string(n_heads) + " n_kv_heads=" +
                        std::to_string(n_kv_heads) + " head_dim=" + std::to_string(head_dim) +
                        " rope_dim=" + std::to_string(rope_dim));
  }
  const int half = static_cast<int>(rope_dim / 2);
  const int64_t total = (n_heads + n_kv_heads) * half;
  const dim3 grid(static_cast<unsigned>(kernels::ceil_div<int64_t>(total, kThreads)));
  rope_kernel<<<grid, kThreads, 0, stream>>>(
      q, k, static_cast<int>(n_heads), static_cast<int>(n_kv_heads), static_cast<int>(head_dim),
      half, d_pos, d_inv_freq, style == RopeStyle::kAdjacent);
  DB_CUDA_CHECK_LAUNCH();
}

}  // namespace decodebench::cuda
