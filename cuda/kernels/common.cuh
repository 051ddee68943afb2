// Device-side helpers shared by the kernels in cuda/kernels/*.cu: warp reductions, cp.async
// wrappers and exact small-integer → float conversion. Device code only: include from .cu files.
#pragma once

#if !defined(__CUDACC__)
#error "cuda/kernels/common.cuh holds device code; include it from .cu files only"
#endif

#include <cstdint>

namespace decodebench::cuda::kernels {

inline constexpr int kWarpSize = 32;
inline constexpr unsigned kFullMask = 0xFFFFFFFFu;

/// ceil(a / b) for positive b.
template <typename T>
__host__ __device__ constexpr T ceil_div(T a, T b) {
  return (a + b - 1) / b;
}

/// Minimum of two 64-bit integers (device `min` has no int64_t template form).
__host__ __device__ constexpr int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/// Sum over the 32 lanes of a warp (butterfly: every lane gets the same, fixed-order result).
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}

/// Maximum over the 32 lanes of a warp.
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}

/// Sum over aligned groups of `kWidth` lanes (kWidth a power of two <= 32); every lane of a group
/// gets its group's sum.
template <int kWidth>
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
  for (int o = kWidth / 2; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}

/// Exact float value of byte `k` (0..3) of `w`, minus `bias`: the byte is placed in the mantissa of
/// 2^23 (0x4B000000 | byte) by one PRMT, and 2^23 + bias is subtracted. Exact for any byte and any
/// bias in 0..255 — cheaper than I2F, which runs at a quarter of the FP32 rate.
__device__ __forceinline__ float byte_as_float(uint32_t w, int k, float bias) {
  const uint32_t bits = __byte_perm(w, 0x4B000000u, 0x7540u | static_cast<unsigned>(k));
  return __uint_as_float(bits) - (8388608.0f + bias);
}

/// Σ_{k<4} (byte_k(w) − bias)·x_k added to `acc` in order k = 0..3.
__device__ __forceinline__ float dot4_bytes(uint32_t w, float4 x, float bias, float acc) {
  acc = fmaf(byte_as_float(w, 0, bias), x.x, acc);
  acc = fmaf(byte_as_float(w, 1, bias), x.y, acc);
  acc = fmaf(byte_as_float(w, 2, bias), x.z, acc);
  acc = fmaf(byte_as_float(w, 3, bias), x.w, acc);
  return acc;
}

/// x.x + x.y + x.z + x.w.
__device__ __forceinline__ float hsum4(float4 x) { return (x.x + x.y) + (x.z + x.w); }

// ---- cp.async (sm_80+): global → shared copies that bypass registers and L1 -----------------

/// Copies 16 bytes from `src` (16-byte aligned, global) to `dst` (16-byte aligned, shared); only
/// the first `src_bytes` (0..16) are read, the rest of the 16 destination bytes are zero-filled.
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, int src_bytes) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(src_bytes)
               : "memory");
}

/// Closes the group of cp.async issued by this thread since the last commit (may be empty).
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/// Waits until at most `kPending` of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

}  // namespace decodebench::cuda::kernels
