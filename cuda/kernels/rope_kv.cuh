// RoPE and KV-cache append in one kernel (optionally with qwen3's per-head QK-norm first): the
// decode step's q/k/v post-processing as a single launch. Host launcher only; includable from g++.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/model/config.hpp"

namespace decodebench::cuda {

/// Arguments of launch_rope_kv_append. All pointers are device pointers.
struct RopeKvParams {
  float* q = nullptr;  ///< [n_heads][head_dim]: normed (optional) and rotated in place
  const float* k =
      nullptr;  ///< [n_kv_heads][head_dim]: read only (the rotated k goes to the cache)
  const float* v = nullptr;  ///< [n_kv_heads][head_dim]
  float* k_cache = nullptr;  ///< [n_kv_heads][capacity][head_dim]
  float* v_cache = nullptr;  ///< [n_kv_heads][capacity][head_dim]
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;                ///< even, <= 256
  int64_t rope_dim = 0;                ///< even, in (0, head_dim]
  int64_t capacity = 0;                ///< KV positions per head
  const int32_t* d_pos = nullptr;      ///< position, read on the device
  const double* d_inv_freq = nullptr;  ///< rope_dim / 2 doubles (rope_inv_freq)
  RopeStyle style = RopeStyle::kHalfSplit;
  const float* q_norm = nullptr;  ///< [head_dim] per-head RMSNorm weight of q (qwen3) or null
  const float* k_norm = nullptr;  ///< [head_dim] per-head RMSNorm weight of k (with q_norm)
  float eps = 0.0f;               ///< QK-norm epsilon
  int32_t* d_error = nullptr;     ///< optional device error word (kv_cache.cuh)
  bool pdl = false;               ///< programmatic dependent launch (see GemvParams::pdl)
};

/// For every query head: q ← rope(qk_norm(q)); for every KV head h: k_cache[h][pos] ←
/// rope(qk_norm(k[h])), v_cache[h][pos] ← v[h]. The same float operations as the separate
/// launch_rms_norm (rows = heads) → launch_rope → launch_kv_append sequence (cpu::rms_norm,
/// cpu::rope); only the QK-norm's sum of squares is ordered differently. One warp per head.
/// Out-of-range positions (pos < 0 or >= capacity) rotate q but write no cache entry and set
/// kDeviceErrorKvPosition in *d_error (when not null).
/// Throws decodebench::Error (exit 1) for null pointers, bad sizes (head_dim odd or > 256,
/// rope_dim odd / > head_dim / <= 0, k_norm without q_norm, eps < 0) or a failed launch.
void launch_rope_kv_append(const RopeKvParams& p, cudaStream_t stream);

}  // namespace decodebench::cuda
