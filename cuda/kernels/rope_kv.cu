// RoPE + KV append (+ QK-norm): one warp per head (query heads first, then KV heads). A head is
// staged in shared memory so that any RoPE pairing (adjacent or half-split) can read its partner.
#include <string>

#include "core/error.hpp"
#include "cuda/check.hpp"
#include "cuda/kernels/common.cuh"
#include "cuda/kernels/gemv_device.cuh"
#include "cuda/kernels/gemv_impl.cuh"
#include "cuda/kernels/kv_cache.cuh"
#include "cuda/kernels/rope_device.cuh"
#include "cuda/kernels/rope_kv.cuh"

namespace decodebench::cuda {
namespace {

constexpr int kWarps = 4;  ///< heads per CTA
constexpr int kMaxHeadDim = 256;

struct Args {
  RopeKvParams p;
  int n_heads, n_kv_heads, head_dim, half, rope_half;
  bool adjacent;
};

__global__ void __launch_bounds__(kWarps * 32) rope_kv_kernel(const Args a) {
  __shared__ float hs[kWarps][kMaxHeadDim];
  kernels::grid_dependency_trigger();
  kernels::grid_dependency_wait();
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int head = static_cast<int>(blockIdx.x) * kWarps + warp;
  if (head >= a.n_heads + a.n_kv_heads) return;  // uniform per warp
  const bool is_q = head < a.n_heads;
  const int kvh = head - a.n_heads;
  const int hd = a.head_dim;
  const float* src =
      is_q ? a.p.q + static_cast<int64_t>(head) * hd : a.p.k + static_cast<int64_t>(kvh) * hd;
  float* h = hs[warp];
  for (int i = lane; i < hd; i += 32) h[i] = src[i];
  __syncwarp();

  const float* norm_w = is_q ? a.p.q_norm : a.p.k_norm;
  if (norm_w != nullptr) kernels::rms_norm_head(h, hd, norm_w, a.p.eps, lane);
  const int64_t pos = *a.p.d_pos;
  kernels::rope_head(h, a.rope_half, a.adjacent, pos, a.p.d_inv_freq, lane);

  if (is_q) {
    float* dst = a.p.q + static_cast<int64_t>(head) * hd;
    for (int i = lane; i < hd; i += 32) dst[i] = h[i];
    return;
  }
  if (pos < 0 || pos >= a.p.capacity) {
    if (kvh == 0 && lane == 0 && a.p.d_error != nullptr) {
      atomicOr(a.p.d_error, kDeviceErrorKvPosition);
    }
    return;
  }
  const int64_t off = (static_cast<int64_t>(kvh) * a.p.capacity + pos) * hd;
  const float* v = a.p.v + static_cast<int64_t>(kvh) * hd;
  for (int i = lane; i < hd; i += 32) {
    a.p.k_cache[off + i] = h[i];
    a.p.v_cache[off + i] = v[i];
  }
}

}  // namespace

void launch_rope_kv_append(const RopeKvParams& p, cudaStream_t stream) {
  if (p.q == nullptr || p.k == nullptr || p.v == nullptr || p.k_cache == nullptr ||
      p.v_cache == nullptr || p.d_pos == nullptr || p.d_inv_freq == nullptr ||
      (p.k_norm != nullptr && p.q_norm == nullptr)) {
    throw runtime_error("rope_kv_append: null device pointer");
  }
  if (p.n_heads <= 0 || p.n_kv_heads <= 0 || p.head_dim <= 0 || p.head_dim % 2 != 0 ||
      p.head_dim > kMaxHeadDim || p.rope_dim <= 0 || p.rope_dim % 2 != 0 ||
      p.rope_dim > p.head_dim || p.capacity <= 0 || p.n_heads + p.n_kv_heads > (1 << 20) ||
      !(p.eps >= 0.0f)) {
    throw runtime_error(
        "rope_kv_append: invalid shape n_heads=" + std::to_string(p.n_heads) +
        " n_kv_heads=" + std::to_string(p.n_kv_heads) + " head_dim=" + std::to_string(p.head_dim) +
        " rope_dim=" + std::to_string(p.rope_dim) + " capacity=" + std::to_string(p.capacity));
  }
  Args a;
  a.p = p;
  a.n_heads = static_cast<int>(p.n_heads);
  a.n_kv_heads = static_cast<int>(p.n_kv_heads);
  a.head_dim = static_cast<int>(p.head_dim);
  a.half = static_cast<int>(p.head_dim / 2);
  a.rope_half = static_cast<int>(p.rope_dim / 2);
  a.adjacent = p.style == RopeStyle::kAdjacent;
  const int heads = a.n_heads + a.n_kv_heads;
  void* params[] = {&a};
  gemv_impl::launch_with_attrs(reinterpret_cast<const void*>(&rope_kv_kernel), params,
                               dim3(static_cast<unsigned>((heads + kWarps - 1) / kWarps)),
                               dim3(kWarps * 32), 0, p.pdl, stream);
}

}  // namespace decodebench::cuda
