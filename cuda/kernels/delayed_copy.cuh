// Test helpers for programmatic dependent launch (PDL): a copy that lets the next kernel start at
// once and writes late, and a kernel that reads a value before and after its PDL wait. Tests use
// them to check that a PDL kernel reads what its predecessor writes only after
// griddepcontrol.wait. Host launchers only; includable from g++ code.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace decodebench::cuda {

/// Copies `bytes` bytes from `src` to `dst` (device pointers) after spinning `delay_ns`
/// nanoseconds (the GPU's global timer), having first let the next kernel on `stream` start (a
/// PDL launch of it then runs its pre-wait part during the delay). One block. Throws
/// decodebench::Error (exit 1) for null pointers, delay_ns outside [0, 1e9] or a failed launch.
void launch_delayed_copy(void* dst, const void* src, size_t bytes, int64_t delay_ns,
                         cudaStream_t stream);

/// With PDL: out[0] = *src read before the kernel's PDL wait, out[1] = *src read after it (one
/// thread). After launch_delayed_copy into `src`, out[0] shows whether this kernel really started
/// before its predecessor finished. Throws decodebench::Error (exit 1) for null pointers or a
/// failed launch.
void launch_pdl_peek(const float* src, float* out, cudaStream_t stream);

}  // namespace decodebench::cuda
