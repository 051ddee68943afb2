// An empty kernel: the floor of what one graph node costs (for `decodebench bench-kernels`).
// Host launcher only; includable from g++ code.
#pragma once

#include <cuda_runtime_api.h>

namespace decodebench::cuda {

/// Launches an empty kernel of `blocks` blocks × `threads` threads on `stream` (nothing is read or
/// written). Throws decodebench::Error (exit 1) for blocks/threads out of range or a failed launch.
void launch_noop(int blocks, int threads, cudaStream_t stream);

}  // namespace decodebench::cuda
