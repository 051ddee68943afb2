#include <string>

#include "core/error.hpp"
#include "cuda/check.hpp"
#include "cuda/kernels/common.cuh"
#include "cuda/kernels/kv_cache.cuh"

namespace decodebench::cuda {
namespace {

constexpr int kThreads = 256;

/// One thread per float of K (first half of the grid's work) or V (second half).
__global__ void __launch_bounds__(kThreads)
    kv_append_kernel(const float* k, const float* v, float* k_cache, float* v_cache,
                     int64_t n_kv_heads, int64_t head_dim, int64_t capacity, const int32_t* d_pos,
                     int32_t* d_error) {
  const int64_t per = n_kv_heads * head_dim;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (idx >= 2 * per) return;
  const int64_t pos = *d_pos;
  if (pos < 0 || pos >= capacity) {
    if (idx == 0 && d_error != nullptr) atomicOr(d_error, kDeviceErrorKvPosition);
    return;
  }
  const bool is_v = idx >= per;
  const int64_t j = is_v ? idx - per : idx;
  const int64_t h = j / head_dim;
  const int64_t d = j % head_dim;
  float* cache = is_v ? v_cache : k_cache;
  cache[(h * capacity + pos) * head_dim + d] = is_v ? v[j] : k[j];
}

}  // namespace

void launch_kv_append(const float* k, const float* v, float* k_cache, float* v_cache,
                      int64_t n_kv_heads, int64_t head_dim, int64_t capacity, const int32_t* d_pos,
                      int32_t* d_error, cudaStream_t stream) {
  if (k == nullptr || v == nullptr || k_cache == nullptr || v_cache == nullptr ||
      d_pos == nullptr) {
    throw runtime_error("kv_append: null device pointer");
  }
  if (n_kv_heads <= 0 || head_dim <= 0 || capacity <= 0 ||
      n_kv_heads * head_dim > (int64_t{1} << 30)) {
    throw runtime_error("kv_append: invalid shape n_kv_heads=" + std::to_string(n_kv_heads) +
                        " head_dim=" + std::to_string(head_dim) +
                        " capacity=" + std::to_string(capacity));
  }
  const int64_t total = 2 * n_kv_heads * head_dim;
  const dim3 grid(static_cast<unsigned>(kernels::ceil_div<int64_t>(total, kThreads)));
  kv_append_kernel<<<grid, kThreads, 0, stream>>>(k, v, k_cache, v_cache, n_kv_heads, head_dim,
                                                  capacity, d_pos, d_error);
  DB_CUDA_CHECK_LAUNCH();
}

}  // namespace decodebench::cuda
