#include <string>

#include "core/error.hpp"
#include "cuda/check.hpp"
#include "cuda/kernels/noop.cuh"

namespace decodebench::cuda {
namespace {

__global__ void noop_kernel() {}

}  // namespace

void launch_noop(int blocks, int threads, cudaStream_t stream) {
  if (blocks < 1 || blocks > (1 << 30) || threads < 1 || threads > 1024) {
    throw runtime_error("noop: invalid launch " + std::to_string(blocks) + " x " +
                        std::to_string(threads));
  }
  noop_kernel<<<static_cast<unsigned>(blocks), threads, 0, stream>>>();
  DB_CUDA_CHECK_LAUNCH();
}

}  // namespace decodebench::cuda
