#include <string>

#include "core/error.hpp"
#include "cuda/check.hpp"
#include "cuda/kernels/common.cuh"
#include "cuda/kernels/swiglu.cuh"

namespace decodebench::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    swiglu_kernel(const float* gate, const float* up, float* out, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n) return;
  const float g = gate[i];
  const float u = up[i];
  // g / (1 + e^-g) · u: IEEE division, product rounded separately (CPU order).
  out[i] = __fmul_rn(g / (1.0f + expf(-g)), u);
}

}  // namespace

void launch_swiglu(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream) {
  if (gate == nullptr || up == nullptr || out == nullptr) {
    throw runtime_error("swiglu: null device pointer");
  }
  if (n <= 0 || n > (int64_t{1} << 36)) {
    throw runtime_error("swiglu: invalid length " + std::to_string(n));
  }
  const dim3 grid(static_cast<unsigned>(kernels::ceil_div<int64_t>(n, kThreads)));
  swiglu_kernel<<<grid, kThreads, 0, stream>>>(gate, up, out, n);
  DB_CUDA_CHECK_LAUNCH();
}

}  // namespace decodebench::cuda
