// Appending the current token's K and V to the per-layer KV cache. Host launcher only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace decodebench::cuda {

/// Bits of the device error word (an int32 in device memory the backend zeroes at setup and reads
/// after a run or on a failure). Kernels only ever set bits (atomicOr), never clear them.
inline constexpr int32_t kDeviceErrorKvPosition = 1;  ///< KV append: pos < 0 or pos >= capacity
inline constexpr int32_t kDeviceErrorSeqLen = 2;      ///< attention: seq_len > capacity (clamped)

/// Copies k and v ([n_kv_heads][head_dim] floats each) into position `*d_pos` (read on the device)
/// of k_cache and v_cache ([n_kv_heads][capacity][head_dim] floats each).
/// Out-of-range positions (pos < 0 or pos >= capacity) write nothing (the cache is never written
/// out of bounds) and set kDeviceErrorKvPosition in `*d_error` when `d_error` is not null: the
/// backend checks it, since the host cannot branch on device data inside a captured step.
/// Throws decodebench::Error (exit 1) for null pointers, non-positive sizes or a failed launch.
void launch_kv_append(const float* k, const float* v, float* k_cache, float* v_cache,
                      int64_t n_kv_heads, int64_t head_dim, int64_t capacity, const int32_t* d_pos,
                      int32_t* d_error, cudaStream_t stream);

}  // namespace decodebench::cuda
