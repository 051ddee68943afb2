// IEEE binary16 and bfloat16 conversions on raw bits, usable from host code and CUDA kernels.
// Rounding is round-to-nearest-even, as in IEEE 754-2008 §4.3.1; NaN stays NaN.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define DB_HOST_DEVICE __host__ __device__
#else
#define DB_HOST_DEVICE
#endif

namespace decodebench::quant {

DB_HOST_DEVICE inline float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

DB_HOST_DEVICE inline uint32_t float_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

/// binary16 bits → float (exact).
DB_HOST_DEVICE inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) return bits_to_float(sign | 0x7F800000u | (mant << 13));  // inf / NaN
  if (exp != 0) return bits_to_float(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return bits_to_float(sign);  // signed zero
  // Subnormal: value = mant * 2^-24.
  float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
  return sign ? -v : v;
}

/// float → binary16 bits, round-to-nearest-even; overflow → inf.
DB_HOST_DEVICE inline uint16_t f32_to_f16(float f) {
  const uint32_t x = float_to_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u);   // NaN
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to >= 65520: inf
  if (abs >= 0x38800000u) {
    // normal half
    uint32_t mant = abs & 0x7FFFFFu;
    uint32_t exp = (abs >> 23) - 112u;
    uint32_t h = (exp << 10) | (mant >> 13);
    const uint32_t rem = mant & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // < 2^-25: rounds to zero
  // Subnormal half: value = round(abs_value * 2^24).
  const uint32_t exp = abs >> 23;
  const uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126u - exp;  // 14..24
  uint32_t h = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

/// bfloat16 bits → float (exact: the upper half of a binary32).
DB_HOST_DEVICE inline float bf16_to_f32(uint16_t b) {
  return bits_to_float(static_cast<uint32_t>(b) << 16);
}

/// float → bfloat16 bits, round-to-nearest-even; NaN stays a quiet NaN.
DB_HOST_DEVICE inline uint16_t f32_to_bf16(float f) {
  const uint32_t x = float_to_bits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  const uint32_t rounding = 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

}  // namespace decodebench::quant
