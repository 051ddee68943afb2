// SwiGLU activation of the feed-forward block. Host launcher only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace decodebench::cuda {

/// out[i] = silu(gate[i]) · up[i] = gate[i] / (1 + exp(−gate[i])) · up[i] for i < n, with expf
/// (not __expf) and IEEE division, as cpu::swiglu; results differ only where the device expf
/// (≤ 2 ulp) rounds differently. `out` may alias `gate` or `up`.
/// Throws decodebench::Error (exit 1) for null pointers, n <= 0 or a failed launch.
void launch_swiglu(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream);

}  // namespace decodebench::cuda
