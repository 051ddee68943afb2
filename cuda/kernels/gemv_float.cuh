// The float weight types' 16-byte vectors (F32: 4 elements, F16 and BF16: 8) and their dot
// products with f32 x', shared by the direct GEMV kernel (gemv_direct.cu) and its ring form
// (gemv_float_ring.cu). Device code only: include from .cu files.
#pragma once

#if !defined(__CUDACC__)
#error "cuda/kernels/gemv_float.cuh holds device code; include it from .cu files only"
#endif

#include <cuda_fp16.h>

#include <cstdint>

#include "core/quant/weight_type.hpp"

namespace decodebench::cuda::kernels {

/// Per-type 16-byte vector: kE elements. dot(w, a, b, acc) adds w[e]·x[e] to acc in element order
/// (fmaf, one rounding each), x[0..3] = a and x[4..7] = b (F32: a only); dot(w, x, acc) reads the
/// kE floats at x (16-byte aligned) for a and b.
template <WeightType T>
struct FloatVec;

template <>
struct FloatVec<WeightType::kF32> {
  static constexpr int kE = 4;
  __device__ static float dot(uint4 w, float4 a, float4 /*b*/, float acc) {
    acc = fmaf(__uint_as_float(w.x), a.x, acc);
    acc = fmaf(__uint_as_float(w.y), a.y, acc);
    acc = fmaf(__uint_as_float(w.z), a.z, acc);
    return fmaf(__uint_as_float(w.w), a.w, acc);
  }
  __device__ static float dot(uint4 w, const float* x, float acc) {
    return dot(w, *reinterpret_cast<const float4*>(x), float4{}, acc);
  }
};

__device__ __forceinline__ float2 half2_bits_to_float2(uint32_t u) {
  return __half22float2(*reinterpret_cast<const __half2*>(&u));
}

template <>
struct FloatVec<WeightType::kF16> {
  static constexpr int kE = 8;
  __device__ static float dot(uint4 w, float4 a, float4 b, float acc) {
    const float2 w0 = half2_bits_to_float2(w.x);
    const float2 w1 = half2_bits_to_float2(w.y);
    const float2 w2 = half2_bits_to_float2(w.z);
    const float2 w3 = half2_bits_to_float2(w.w);
    acc = fmaf(w0.x, a.x, acc);
    acc = fmaf(w0.y, a.y, acc);
    acc = fmaf(w1.x, a.z, acc);
    acc = fmaf(w1.y, a.w, acc);
    acc = fmaf(w2.x, b.x, acc);
    acc = fmaf(w2.y, b.y, acc);
    acc = fmaf(w3.x, b.z, acc);
    return fmaf(w3.y, b.w, acc);
  }
  __device__ static float dot(uint4 w, const float* x, float acc) {
    return dot(w, *reinterpret_cast<const float4*>(x), *reinterpret_cast<const float4*>(x + 4),
               acc);
  }
};

template <>
struct FloatVec<WeightType::kBF16> {
  static constexpr int kE = 8;
  __device__ static float lo(uint32_t u) { return __uint_as_float(u << 16); }
  __device__ static float hi(uint32_t u) { return __uint_as_float(u & 0xFFFF0000u); }
  __device__ static float dot(uint4 w, float4 a, float4 b, float acc) {
    acc = fmaf(lo(w.x), a.x, acc);
    acc = fmaf(hi(w.x), a.y, acc);
    acc = fmaf(lo(w.y), a.z, acc);
    acc = fmaf(hi(w.y), a.w, acc);
    acc = fmaf(lo(w.z), b.x, acc);
    acc = fmaf(hi(w.z), b.y, acc);
    acc = fmaf(lo(w.w), b.z, acc);
    return fmaf(hi(w.w), b.w, acc);
  }
  __device__ static float dot(uint4 w, const float* x, float acc) {
    return dot(w, *reinterpret_cast<const float4*>(x), *reinterpret_cast<const float4*>(x + 4),
               acc);
  }
};

}  // namespace decodebench::cuda::kernels
