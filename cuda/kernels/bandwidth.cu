#include <algorithm>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "cuda/check.hpp"
#include "cuda/kernels/bandwidth.cuh"
#include "cuda/kernels/common.cuh"

namespace decodebench::cuda {
namespace {

constexpr int kThreads = 512;
constexpr int kUnroll = 4;  ///< independent 16-byte loads per thread per iteration

__device__ __forceinline__ uint4 load_streaming(const uint4* p) {
  return __ldcs(p);  // evict-first: the data is read once
}

__global__ void __launch_bounds__(kThreads)
    read_kernel(const uint4* data, size_t n16, unsigned* checksum) {
  const size_t stride = static_cast<size_t>(gridDim.x) * kThreads;
  size_t i = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x;
  unsigned acc = 0;
  for (; i + (kUnroll - 1) * stride < n16; i += kUnroll * stride) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = load_streaming(data + i + u * stride);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < n16; i += stride) {
    const uint4 v = load_streaming(data + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) acc ^= __shfl_xor_sync(kernels::kFullMask, acc, o);
  if ((threadIdx.x & 31) == 0 && acc != 0) atomicXor(checksum, acc);
}

}  // namespace

double measure_read_bandwidth_gbps(size_t bytes, int iterations, cudaStream_t stream) {
  bytes &= ~static_cast<size_t>(15);
  if (bytes < (size_t{1} << 20) || iterations < 1) {
    throw runtime_error("bandwidth: need at least 1 MiB and 1 iteration (got " +
                        std::to_string(bytes) + " bytes, " + std::to_string(iterations) + ")");
  }
  int device = 0;
  int sms = 0;
  DB_CUDA_CHECK(cudaGetDevice(&device));
  DB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));

  void* buf = nullptr;
  unsigned* checksum = nullptr;
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  // Plain handles released on every path (this file is compiled by nvcc; the RAII types live in
  // host code, and a failure here must not leak a GiB of device memory).
  auto release = [&]() noexcept {  // idempotent
    if (start != nullptr) DB_CUDA_CHECK_NOTHROW(cudaEventDestroy(start));
    if (stop != nullptr) DB_CUDA_CHECK_NOTHROW(cudaEventDestroy(stop));
    if (checksum != nullptr) DB_CUDA_CHECK_NOTHROW(cudaFree(checksum));
    if (buf != nullptr) DB_CUDA_CHECK_NOTHROW(cudaFree(buf));
    start = stop = nullptr;
    checksum = nullptr;
    buf = nullptr;
  };
  try {
    DB_CUDA_CHECK(cudaMalloc(&buf, bytes));
    DB_CUDA_CHECK(cudaMalloc(&checksum, sizeof(unsigned)));
    DB_CUDA_CHECK(cudaEventCreate(&start));
    DB_CUDA_CHECK(cudaEventCreate(&stop));
    DB_CUDA_CHECK(cudaMemsetAsync(buf, 0x5A, bytes, stream));
    DB_CUDA_CHECK(cudaMemsetAsync(checksum, 0, sizeof(unsigned), stream));

    const size_t n16 = bytes / 16;
    const int blocks = std::max(1, sms) * 4;  // 2048 threads per SM with 512-thread blocks
    const auto* data = static_cast<const uint4*>(buf);
    read_kernel<<<blocks, kThreads, 0, stream>>>(data, n16, checksum);  // warm-up
    DB_CUDA_CHECK_LAUNCH();

    std::vector<float> ms(static_cast<size_t>(iterations));
    for (int it = 0; it < iterations; ++it) {
      DB_CUDA_CHECK(cudaEventRecord(start, stream));
      read_kernel<<<blocks, kThreads, 0, stream>>>(data, n16, checksum);
      DB_CUDA_CHECK_LAUNCH();
      DB_CUDA_CHECK(cudaEventRecord(stop, stream));
      DB_CUDA_CHECK(cudaEventSynchronize(stop));
      DB_CUDA_CHECK(cudaEventElapsedTime(&ms[static_cast<size_t>(it)], start, stop));
    }
    std::sort(ms.begin(), ms.end());
    const size_t mid = ms.size() / 2;
    const double median_ms =
        ms.size() % 2 == 1 ? ms[mid] : 0.5 * (static_cast<double>(ms[mid - 1]) + ms[mid]);
    release();
    if (!(median_ms > 0.0)) throw runtime_error("bandwidth: kernel time measured as 0 ms");
    return static_cast<double>(bytes) / (median_ms * 1e-3) / 1e9;
  } catch (...) {
    release();
    throw;
  }
}

}  // namespace decodebench::cuda
