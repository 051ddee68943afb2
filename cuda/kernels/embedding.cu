// Embedding lookup: one thread per output element, exact dequantization (dequant.cuh).
#include <string>

#include "core/error.hpp"
#include "cuda/check.hpp"
#include "cuda/kernels/common.cuh"
#include "cuda/kernels/dequant.cuh"
#include "cuda/kernels/embedding.cuh"
#include "cuda/kernels/gemv_device.cuh"
#include "cuda/kernels/gemv_impl.cuh"
#include "cuda/kernels/step_clock.cuh"

namespace decodebench::cuda {
namespace {

constexpr int kThreads = 256;

template <WeightType T>
__global__ void __launch_bounds__(kThreads)
    embedding_kernel(const uint8_t* table, int64_t cols, int64_t row_bytes, const int32_t* d_token,
                     float* out, int64_t token_stride, int64_t out_stride, StepClock* clock) {
  kernels::grid_dependency_trigger();
  kernels::grid_dependency_wait();
  // The step's first kernel: its start ends the GPU's idle time since the last step (the wait
  // returns at once: nothing in the step precedes this kernel).
  if (clock != nullptr && blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) {
    kernels::step_clock_begin(clock);
  }
  const int64_t e = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (e >= cols) return;
  const int64_t token = d_token[blockIdx.y * token_stride];
  out[blockIdx.y * out_stride + e] = kernels::QuantOps<T>::elem(table + token * row_bytes, e);
}

}  // namespace

void launch_embedding(WeightType type, const void* table, int64_t cols, const int32_t* d_token,
                      float* out, cudaStream_t stream, bool pdl, StepClock* clock) {
  launch_embedding_batched(type, table, cols, d_token, 0, 1, out, cols, stream, pdl, clock);
}

void launch_embedding_batched(WeightType type, const void* table, int64_t cols,
                              const int32_t* d_tokens, int64_t token_stride, int64_t batch,
                              float* out, int64_t out_stride, cudaStream_t stream, bool pdl,
                              StepClock* clock) {
  const int32_t* d_token = d_tokens;
  if (batch < 1 || batch > 65535 || out_stride < cols || (batch > 1 && token_stride < 1)) {
    throw runtime_error("embedding: invalid batch " + std::to_string(batch) + " or strides");
  }
  const WeightTraits tr = weight_traits(type);
  if (tr.name == nullptr) {
    throw usage_error("embedding: unsupported weight type #" +
                      std::to_string(static_cast<uint32_t>(type)));
  }
  if (table == nullptr || d_token == nullptr || out == nullptr) {
    throw runtime_error("embedding: null device pointer");
  }
  if (cols <= 0 || cols % tr.block_elems != 0 || cols > (int64_t{1} << 30)) {
    throw runtime_error("embedding: invalid row length " + std::to_string(cols) + " for " +
                        tr.name);
  }
  const int64_t rb = row_bytes(type, cols);
  const auto* t = static_cast<const uint8_t*>(table);
  const dim3 grid(static_cast<unsigned>(kernels::ceil_div<int64_t>(cols, kThreads)),
                  static_cast<unsigned>(batch));
  int64_t c = cols;
  int64_t r = rb;
  int64_t ts = token_stride;
  int64_t os = out_stride;
  void* args[] = {
      const_cast<uint8_t**>(&t), &c, &r, const_cast<int32_t**>(&d_token), &out, &ts, &os, &clock};
  kernels::dispatch_weight_type(type, [&]<WeightType T>() {
    gemv_impl::launch_with_attrs(reinterpret_cast<const void*>(&embedding_kernel<T>), args, grid,
                                 dim3(kThreads), 0, pdl, stream);
  });
}

}  // namespace decodebench::cuda
