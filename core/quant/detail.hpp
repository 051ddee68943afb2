// Internal helpers of core/quant/*.cpp: the per-type kernels behind dequant.hpp's dispatchers and
// the lane accumulators that fix the summation order of dot_row. Not part of the public API.
//
// Summation order of every dot_row (why: the CPU backend is the reference the GPU kernels are
// checked against, so its result must not depend on threads, pointer alignment or compiler):
//  * lanes: L accumulators (L = 16 for F32/F16/BF16, 8 for block types); element i of the row
//    (float types) or of a block (block types) only ever feeds lane i mod L;
//  * float types: acc[i mod 16] += w[i]·x[i] for i = 0, 1, ..., n−1;
//  * block types, per block (or sub-block of a K-quant super-block) in row order:
//      p[l] = Σ_{j ascending} q[8j + l]·x[8j + l]      (q = the integer code as f32, lane l < 8)
//      s[l] = Σ_{j ascending} x[8j + l]                 (only for types with an offset)
//      acc[l] += scale·p[l]             (Q4_0, Q5_0, Q8_0, Q6_K; signed codes: nibble − 8,
//                                        5-bit code − 16, int8, 6-bit code − 32)
//      acc[l] += scale·p[l] + min·s[l]  (Q4_1, Q5_1: scale = d, min = m)
//      acc[l] += scale·p[l] − min·s[l]  (Q4_K, Q5_K: scale = d·sc, min = dmin·mn)
//    each sum starting from its j = 0 term (no added zero), every product and sum rounded to f32;
//  * final reduction: reduce16 / reduce8 below (a fixed pairwise tree).
// The factored form (scale·Σq·x + min·Σx) differs from dequantize-then-dot by rounding only.
//
// Implementation: GCC/Clang vector extensions (4 × f32 = one SSE2 register on the x86-64
// baseline). Vector operators are lane-wise IEEE operations, so the vector code computes exactly
// the scalar definition above; lanes 0-3 of a group of 8 live in `lo`, lanes 4-7 in `hi`. They are
// used instead of relying on auto-vectorisation because GCC 12 leaves the lane-accumulator loops
// scalar (measured: 2-3x slower). Without -ffast-math nothing is reassociated; the x86-64 baseline
// has no FMA, so nothing is contracted either. Needs GCC >= 12 or Clang (__builtin_shufflevector)
// and a little-endian host (byte lanes are reinterpreted as wider lanes, as GGUF data is LE).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

#include "core/quant/fp16.hpp"

namespace decodebench::quant::detail {

typedef float f32x4 __attribute__((vector_size(16)));
typedef int32_t i32x4 __attribute__((vector_size(16)));
typedef uint16_t u16x8 __attribute__((vector_size(16)));
typedef int16_t i16x8 __attribute__((vector_size(16)));
typedef uint8_t u8x16 __attribute__((vector_size(16)));

/// Four floats from any address.
inline f32x4 load4(const float* p) {
  f32x4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// Sixteen bytes from any address.
inline u8x16 load16(const uint8_t* p) {
  u8x16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// Eight lanes: lo = lanes 0..3, hi = lanes 4..7.
struct Lanes8 {
  f32x4 lo, hi;
};

/// Lanes → one float: b[l] = a[l] + a[l + 4], then (b0 + b2) + (b1 + b3).
inline float reduce8(Lanes8 a) {
  const f32x4 b = a.lo + a.hi;
  return (b[0] + b[2]) + (b[1] + b[3]);
}

/// 16 lanes a[0..16) (a0 = lanes 0..3, ..., a3 = lanes 12..15) → one float: a[l] + a[l + 8],
/// then reduce8.
inline float reduce16(f32x4 a0, f32x4 a1, f32x4 a2, f32x4 a3) {
  return reduce8({a0 + a2, a1 + a3});
}

/// p[l] = Σ_j q[8j+l]·x[8j+l] over `len` values (a multiple of 8) held in q[0..len/4).
inline Lanes8 lane_dot(const f32x4* q, const float* x, int len) {
  Lanes8 p{q[0] * load4(x), q[1] * load4(x + 4)};
  for (int j = 8; j < len; j += 8) {
    p.lo += q[j / 4] * load4(x + j);
    p.hi += q[j / 4 + 1] * load4(x + j + 4);
  }
  return p;
}

/// s[l] = Σ_j x[8j+l] over `len` values, j ascending.
inline Lanes8 lane_sum(const float* x, int len) {
  Lanes8 s{load4(x), load4(x + 4)};
  for (int j = 8; j < len; j += 8) {
    s.lo += load4(x + j);
    s.hi += load4(x + j + 4);
  }
  return s;
}

/// Sixteen unsigned bytes → q[0..4) as f32 (q[k] holds bytes 4k..4k+3), minus `offset`
/// (exact: small integers).
inline void bytes_to_f32(u8x16 v, float offset, f32x4* q) {
  const u8x16 z{};
  const u16x8 w0 = std::bit_cast<u16x8>(
      __builtin_shufflevector(v, z, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23));
  const u16x8 w1 = std::bit_cast<u16x8>(
      __builtin_shufflevector(v, z, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31));
  const u16x8 z16{};
  const i32x4 d0 = std::bit_cast<i32x4>(__builtin_shufflevector(w0, z16, 0, 8, 1, 9, 2, 10, 3, 11));
  const i32x4 d1 =
      std::bit_cast<i32x4>(__builtin_shufflevector(w0, z16, 4, 12, 5, 13, 6, 14, 7, 15));
  const i32x4 d2 = std::bit_cast<i32x4>(__builtin_shufflevector(w1, z16, 0, 8, 1, 9, 2, 10, 3, 11));
  const i32x4 d3 =
      std::bit_cast<i32x4>(__builtin_shufflevector(w1, z16, 4, 12, 5, 13, 6, 14, 7, 15));
  q[0] = __builtin_convertvector(d0, f32x4) - offset;
  q[1] = __builtin_convertvector(d1, f32x4) - offset;
  q[2] = __builtin_convertvector(d2, f32x4) - offset;
  q[3] = __builtin_convertvector(d3, f32x4) - offset;
}

/// A block's f16 scale → f32; equal to f16_to_f32 for every input, with a short path for normal
/// numbers (the usual case) because it runs once per 32 weights.
inline float f16_scale(uint16_t h) {
  const uint32_t em = h & 0x7FFFu;
  if (em - 0x400u < 0x7800u) {
    return std::bit_cast<float>(((em << 13) + (112u << 23)) |
                                (static_cast<uint32_t>(h & 0x8000u) << 16));
  }
  return f16_to_f32(h);
}

/// Eight 16-bit values → two vectors of their 32-bit zero extensions (`high` = false: value in
/// the low half of each lane; true: in the high half, i.e. shifted left by 16).
inline void widen8(const uint16_t* p, bool high, i32x4* lo, i32x4* hi) {
  u16x8 h;
  std::memcpy(&h, p, sizeof h);
  const u16x8 z{};
  if (high) {
    *lo = std::bit_cast<i32x4>(__builtin_shufflevector(z, h, 0, 8, 1, 9, 2, 10, 3, 11));
    *hi = std::bit_cast<i32x4>(__builtin_shufflevector(z, h, 4, 12, 5, 13, 6, 14, 7, 15));
  } else {
    *lo = std::bit_cast<i32x4>(__builtin_shufflevector(h, z, 0, 8, 1, 9, 2, 10, 3, 11));
    *hi = std::bit_cast<i32x4>(__builtin_shufflevector(h, z, 4, 12, 5, 13, 6, 14, 7, 15));
  }
}

/// binary16 bits (zero-extended in i32 lanes) → f32, bit-identical to f16_to_f32 (fp16.hpp)
/// including subnormals, infinities and NaN payloads, with lane-wise selects instead of branches.
inline f32x4 f16_bits_to_f32(i32x4 h) {
  const i32x4 sign = (h & 0x8000) << 16;
  const i32x4 em = h & 0x7FFF;  // exponent and mantissa
  // Normal numbers: move the 15-bit payload up and rebias the exponent by 127 − 15 = 112.
  i32x4 bits = (em << 13) + (112 << 23);
  // Exponent 31 (inf/NaN) needs exponent 255: rebias once more. (Comparisons yield −1 / 0.)
  bits += (em >= 0x7C00) & (112 << 23);
  // Zero and subnormals: value = mantissa · 2^-24, exact in f32 (and no subnormal operand).
  const f32x4 sub = __builtin_convertvector(em, f32x4) * 5.9604644775390625e-8f;
  const i32x4 is_sub = em < 0x0400;
  bits = (is_sub & std::bit_cast<i32x4>(sub)) | (~is_sub & bits);
  return std::bit_cast<f32x4>(bits | sign);
}

/// Eight binary16 values at p → f32 (lo = values 0..3, hi = 4..7).
inline void f16x8_to_f32(const uint16_t* p, f32x4* lo, f32x4* hi) {
  u16x8 h;
  std::memcpy(&h, p, sizeof h);
  const u16x8 em = h & 0x7FFF, sign = h & 0x8000, z{};
  // em − 0x400 is in [0, 0x77FF] exactly for normal numbers.
  const i16x8 t = std::bit_cast<i16x8>(em) - 0x400;
  const i16x8 special = (t < 0) | (t > 0x77FF);
  uint64_t any[2];
  std::memcpy(any, &special, sizeof any);
  const i32x4 em_lo =
      std::bit_cast<i32x4>(__builtin_shufflevector(em, z, 0, 8, 1, 9, 2, 10, 3, 11));
  const i32x4 em_hi =
      std::bit_cast<i32x4>(__builtin_shufflevector(em, z, 4, 12, 5, 13, 6, 14, 7, 15));
  if ((any[0] | any[1]) == 0) {
    // All eight normal (the common case for weights): shift the payload up, rebias the exponent by
    // 127 − 15 = 112, and put the sign (already in the high half of each lane) on top.
    const i32x4 s_lo =
        std::bit_cast<i32x4>(__builtin_shufflevector(z, sign, 0, 8, 1, 9, 2, 10, 3, 11));
    const i32x4 s_hi =
        std::bit_cast<i32x4>(__builtin_shufflevector(z, sign, 4, 12, 5, 13, 6, 14, 7, 15));
    *lo = std::bit_cast<f32x4>(((em_lo << 13) + (112 << 23)) | s_lo);
    *hi = std::bit_cast<f32x4>(((em_hi << 13) + (112 << 23)) | s_hi);
    return;
  }
  i32x4 a, b;
  widen8(p, false, &a, &b);
  *lo = f16_bits_to_f32(a);
  *hi = f16_bits_to_f32(b);
}

/// Eight bfloat16 values at p → f32 (exact: each is the upper half of a binary32).
inline void bf16x8_to_f32(const uint16_t* p, f32x4* lo, f32x4* hi) {
  i32x4 a, b;
  widen8(p, true, &a, &b);
  *lo = std::bit_cast<f32x4>(a);
  *hi = std::bit_cast<f32x4>(b);
}

// Per-type kernels on whole blocks. `nb` = number of blocks; `x`/`dst` hold nb · block_elems
// floats.
void dequant_q4_k(const void* src, float* dst, int64_t nb);
void dequant_q5_k(const void* src, float* dst, int64_t nb);
void dequant_q6_k(const void* src, float* dst, int64_t nb);
float dot_q4_k(const void* row, const float* x, int64_t nb);
float dot_q5_k(const void* row, const float* x, int64_t nb);
float dot_q6_k(const void* row, const float* x, int64_t nb);

/// Unpacks the eight 6-bit scales and mins of a Q4_K/Q5_K super-block (gguf-facts.md §2.3).
inline void unpack_k_scales(const uint8_t* b, int* sc, int* mn) {
  for (int s = 0; s < 4; ++s) {
    sc[s] = b[s] & 63;
    mn[s] = b[s + 4] & 63;
  }
  for (int s = 4; s < 8; ++s) {
    sc[s] = (b[s + 4] & 0xF) | ((b[s - 4] >> 6) << 4);
    mn[s] = (b[s + 4] >> 4) | ((b[s] >> 6) << 4);
  }
}

/// Inverse of unpack_k_scales: packs sc[8], mn[8] (each 0..63) into 12 bytes.
inline void pack_k_scales(const int* sc, const int* mn, uint8_t* b) {
  for (int s = 0; s < 4; ++s) {
    b[s] = static_cast<uint8_t>((sc[s] & 63) | ((sc[s + 4] >> 4) << 6));
    b[s + 4] = static_cast<uint8_t>((mn[s] & 63) | ((mn[s + 4] >> 4) << 6));
    b[s + 8] = static_cast<uint8_t>((sc[s + 4] & 0xF) | ((mn[s + 4] & 0xF) << 4));
  }
}

}  // namespace decodebench::quant::detail
