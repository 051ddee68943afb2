// A trivial kernel that proves a CUDA context can still run work (after a failed capture).
#pragma once

#include <cuda_runtime_api.h>

namespace decodebench::cuda {

/// Launches a 1-thread kernel on `stream`; returns the launch status (does not synchronise).
cudaError_t launch_health_probe(cudaStream_t stream);

}  // namespace decodebench::cuda
