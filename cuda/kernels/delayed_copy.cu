#include "core/error.hpp"
#include "cuda/check.hpp"
#include "cuda/kernels/delayed_copy.cuh"
#include "cuda/kernels/gemv_device.cuh"
#include "cuda/kernels/gemv_impl.cuh"

namespace decodebench::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void __launch_bounds__(kThreads)
    delayed_copy_kernel(uint8_t* dst, const uint8_t* src, size_t bytes, int64_t delay_ns) {
  kernels::grid_dependency_trigger();  // the next kernel may start now
  const uint64_t t0 = global_ns();
  while (global_ns() - t0 < static_cast<uint64_t>(delay_ns)) {
  }
  for (size_t i = threadIdx.x; i < bytes; i += kThreads) dst[i] = src[i];
}

__global__ void pdl_peek_kernel(const float* src, float* out) {
  const float before = *reinterpret_cast<const volatile float*>(src);
  kernels::grid_dependency_wait();
  out[0] = before;
  out[1] = *reinterpret_cast<const volatile float*>(src);
}

}  // namespace

void launch_delayed_copy(void* dst, const void* src, size_t bytes, int64_t delay_ns,
                         cudaStream_t stream) {
  if (dst == nullptr || src == nullptr || delay_ns < 0 || delay_ns > 1000000000) {
    throw runtime_error("delayed copy: null pointer or delay outside [0, 1e9] ns");
  }
  delayed_copy_kernel<<<1, kThreads, 0, stream>>>(
      static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), bytes, delay_ns);
  DB_CUDA_CHECK_LAUNCH();
}

void launch_pdl_peek(const float* src, float* out, cudaStream_t stream) {
  if (src == nullptr || out == nullptr) throw runtime_error("pdl peek: null pointer");
  void* args[] = {&src, &out};
  gemv_impl::launch_with_attrs(reinterpret_cast<const void*>(&pdl_peek_kernel), args, dim3(1),
                               dim3(1), 0, /*pdl=*/true, stream);
  DB_CUDA_CHECK_LAUNCH();
}

}  // namespace decodebench::cuda
