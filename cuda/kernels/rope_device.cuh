// Device helpers for one attention head held in shared memory: per-head RMSNorm (qwen3 QK-norm)
// and RoPE, with cpu::rms_norm / cpu::rope's float operations. Used by rope_kv.cu and by the
// attention kernel's fused prologue. Device code only: include from .cu files.
#pragma once

#if !defined(__CUDACC__)
#error "cuda/kernels/rope_device.cuh holds device code; include it from .cu files only"
#endif

#include <cstdint>

#include "cuda/kernels/common.cuh"

namespace decodebench::cuda::kernels {

/// h[i] ← (h[i] · 1/sqrt(Σh²/hd + eps)) · w[i] for i < hd; one warp (all 32 lanes call it).
__device__ __forceinline__ void rms_norm_head(float* h, int hd, const float* w, float eps,
                                              int lane) {
  float ss = 0.0f;
  for (int i = lane; i < hd; i += 32) ss = fmaf(h[i], h[i], ss);
  ss = warp_sum(ss);
  const float scale = 1.0f / sqrtf(ss / static_cast<float>(hd) + eps);
  __syncwarp();
  for (int i = lane; i < hd; i += 32) h[i] = __fmul_rn(__fmul_rn(h[i], scale), w[i]);
  __syncwarp();
}

/// (cos, sin) of pair i's angle pos·inv_freq[i], computed as rope_head does (double, then
/// rounded to float), for a table shared by several heads.
__device__ __forceinline__ float2 rope_cos_sin(int64_t pos, double inv_freq) {
  double sd, cd;
  sincos(static_cast<double>(pos) * inv_freq, &sd, &cd);
  return make_float2(static_cast<float>(cd), static_cast<float>(sd));
}

/// Pair i of h rotated by the angle with cosine c and sine s: (a, b) → (a·c − b·s, a·s + b·c),
/// every product rounded (as cpu::rope); pairs adjacent (2i, 2i+1) or half-split (i, i +
/// rope_half). RoPE: Su et al., "RoFormer" (2021), eq. 34.
__device__ __forceinline__ void rotate_pair(float* h, int i, int rope_half, bool adjacent, float c,
                                            float s) {
  const int ia = adjacent ? 2 * i : i;
  const int ib = adjacent ? 2 * i + 1 : i + rope_half;
  const float x0 = h[ia];
  const float x1 = h[ib];
  h[ia] = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
  h[ib] = __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
}

/// Rotates pairs i < rope_half of h for position `pos`: angle = pos·inv_freq[i] in double,
/// (a, b) → (a·c − b·s, a·s + b·c) with every product rounded; pairs adjacent (2i, 2i+1) or
/// half-split (i, i + rope_half). One warp (all lanes call it); ends with __syncwarp.
__device__ __forceinline__ void rope_head(float* h, int rope_half, bool adjacent, int64_t pos,
                                          const double* inv_freq, int lane) {
  for (int i = lane; i < rope_half; i += 32) {
    const float2 cs = rope_cos_sin(pos, inv_freq[i]);
    rotate_pair(h, i, rope_half, adjacent, cs.x, cs.y);
  }
  __syncwarp();
}

/// rope_head with the angles' (cos, sin) from a table (rope_cos_sin): the same results.
__device__ __forceinline__ void rope_head_table(float* h, int rope_half, bool adjacent,
                                                const float2* cs, int lane) {
  for (int i = lane; i < rope_half; i += 32) {
    rotate_pair(h, i, rope_half, adjacent, cs[i].x, cs[i].y);
  }
  __syncwarp();
}

}  // namespace decodebench::cuda::kernels
