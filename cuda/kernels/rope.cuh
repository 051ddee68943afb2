// Rotary position embedding (RoPE) of the decode step, in place on Q and K. Host launcher only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/model/config.hpp"

namespace decodebench::cuda {

/// Rotates the first `rope_dim` values of each head of q ([n_heads][head_dim]) and k
/// ([n_kv_heads][head_dim]) in place for position `*d_pos` (read on the device):
/// angle_i = pos · d_inv_freq[i] in double (d_inv_freq: rope_dim/2 doubles, e.g. from
/// rope_inv_freq(ModelConfig)), c = (float)cos, s = (float)sin, pair (a, b) → (a·c − b·s, a·s +
/// b·c) with the pairs of `style` (adjacent or half-split), exactly as cpu::rope orders the float
/// operations. Values past rope_dim are untouched. `k` may be null when n_kv_heads == 0.
/// Results can differ from the CPU only where the device cos/sin (≤ 2 ulp in double) rounds to a
/// different float.
/// Throws decodebench::Error (exit 1) for null pointers, rope_dim odd / > head_dim / <= 0, or a
/// failed launch.
void launch_rope(float* q, float* k, int64_t n_heads, int64_t n_kv_heads, int64_t head_dim,
                 int64_t rope_dim, const int32_t* d_pos, const double* d_inv_freq, RopeStyle style,
                 cudaStream_t stream);

}  // namespace decodebench::cuda
