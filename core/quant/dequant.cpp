// Dispatch of dequantize_row / dot_row, the float types and the legacy 32-value block types.
// Formulas: gguf-facts.md §2.3; summation order of dot_row: detail.hpp.
//
// Exactness of dequantize_row: every value is computed with the same f32 operations, in the same
// order, as the facts sheet writes them (e.g. Q4_1 (d·q) + m), which is also what the gguf Python
// package does, so results are bit-identical on targets without fused multiply-add contraction
// (the x86-64 baseline this project builds for has no FMA instructions).
#include "core/quant/dequant.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/quant/blocks.hpp"
#include "core/quant/detail.hpp"
#include "core/quant/fp16.hpp"

namespace decodebench::quant {

namespace {

using detail::f32x4;
using detail::Lanes8;
using detail::load4;

// ---- float types ---------------------------------------------------------------------------

// Σ w[i]·x[i] with lane i mod 16. `load8w(i, &lo, &hi)` converts w[i..i+8) to f32, `load1w(i)`
// converts w[i].
template <typename Load8, typename Load1>
float dot_float_lanes(Load8 load8w, Load1 load1w, const float* x, int64_t n) {
  f32x4 a0{}, a1{}, a2{}, a3{};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    f32x4 w0, w1, w2, w3;
    load8w(i, &w0, &w1);
    load8w(i + 8, &w2, &w3);
    a0 += w0 * load4(x + i);
    a1 += w1 * load4(x + i + 4);
    a2 += w2 * load4(x + i + 8);
    a3 += w3 * load4(x + i + 12);
  }
  if (i == n) return detail::reduce16(a0, a1, a2, a3);
  float acc[16];
  std::memcpy(acc, &a0, 16);
  std::memcpy(acc + 4, &a1, 16);
  std::memcpy(acc + 8, &a2, 16);
  std::memcpy(acc + 12, &a3, 16);
  for (int l = 0; i < n; ++i, ++l) acc[l] += load1w(i) * x[i];
  return detail::reduce16(load4(acc), load4(acc + 4), load4(acc + 8), load4(acc + 12));
}

float dot_f32(const float* w, const float* x, int64_t n) {
  return dot_float_lanes(
      [w](int64_t i, f32x4* lo, f32x4* hi) {
        *lo = load4(w + i);
        *hi = load4(w + i + 4);
      },
      [w](int64_t i) { return w[i]; }, x, n);
}

float dot_bf16(const uint16_t* w, const float* x, int64_t n) {
  return dot_float_lanes(
      [w](int64_t i, f32x4* lo, f32x4* hi) { detail::bf16x8_to_f32(w + i, lo, hi); },
      [w](int64_t i) { return bf16_to_f32(w[i]); }, x, n);
}

float dot_f16(const uint16_t* w, const float* x, int64_t n) {
  return dot_float_lanes(
      [w](int64_t i, f32x4* lo, f32x4* hi) { detail::f16x8_to_f32(w + i, lo, hi); },
      [w](int64_t i) { return f16_to_f32(w[i]); }, x, n);
}

// Converts n 16-bit floats to f32, eight at a time with `load8w`, the tail with `load1w`.
template <typename Load8, typename Load1>
void convert_16bit(Load8 load8w, Load1 load1w, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    f32x4 lo, hi;
    load8w(i, &lo, &hi);
    std::memcpy(dst + i, &lo, sizeof lo);
    std::memcpy(dst + i + 4, &hi, sizeof hi);
  }
  for (; i < n; ++i) dst[i] = load1w(i);
}

// ---- legacy block types (32 values per block) ---------------------------------------------

using detail::u8x16;

// Codes of a legacy block: q[k] (k < 8) holds elements 4k..4k+3 as f32.
using Codes = f32x4[8];

// Nibble order (gguf-facts.md §2.3): low nibble of qs[j] is element j, high nibble element j + 16.
inline void nibbles(const uint8_t* qs, float offset, f32x4* q) {
  const u8x16 v = detail::load16(qs);
  detail::bytes_to_f32(v & 0xF, offset, q);
  detail::bytes_to_f32(v >> 4, offset, q + 4);
}

// Q5 fifth bits: bit e of the LE u32 qh, as 16 in byte e of lo (e < 16) / hi (e >= 16), else 0.
inline void fifth_bits(const uint8_t* qh, u8x16* lo, u8x16* hi) {
  uint32_t h;
  std::memcpy(&h, qh, 4);  // the build targets little-endian x86-64
  u8x16 b = std::bit_cast<u8x16>(detail::i32x4{static_cast<int32_t>(h), 0, 0, 0});
  // Spread byte k of h over bytes 8k..8k+7 (three interleaves, as SSE2 unpacks would).
  b = __builtin_shufflevector(b, b, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  b = __builtin_shufflevector(b, b, 0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7);
  const u8x16 b01 = __builtin_shufflevector(b, b, 0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7);
  const u8x16 b23 =
      __builtin_shufflevector(b, b, 8, 9, 10, 11, 8, 9, 10, 11, 12, 13, 14, 15, 12, 13, 14, 15);
  const u8x16 bit = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  *lo = std::bit_cast<u8x16>((b01 & bit) == bit) & 16;
  *hi = std::bit_cast<u8x16>((b23 & bit) == bit) & 16;
}

inline void nibbles5(const uint8_t* qs, const uint8_t* qh, float offset, f32x4* q) {
  u8x16 lo, hi;
  fifth_bits(qh, &lo, &hi);
  const u8x16 v = detail::load16(qs);
  detail::bytes_to_f32((v & 0xF) | lo, offset, q);
  detail::bytes_to_f32((v >> 4) | hi, offset, q + 4);
}

// Block kernels: `unpack(block, q)` writes the 32 codes and returns the scale d.
// Symmetric types: x = d·q.
template <typename Block, typename Unpack>
void dequant_sym(const void* src, float* dst, int64_t nb, Unpack unpack) {
  const Block* b = static_cast<const Block*>(src);
  for (int64_t i = 0; i < nb; ++i) {
    Codes q;
    const float d = unpack(b[i], q);
    for (int k = 0; k < 8; ++k) {
      const f32x4 v = d * q[k];
      std::memcpy(dst + i * kQK + 4 * k, &v, sizeof v);
    }
  }
}

template <typename Block, typename Unpack>
float dot_sym(const void* row, const float* x, int64_t nb, Unpack unpack) {
  const Block* b = static_cast<const Block*>(row);
  Lanes8 acc{};
  for (int64_t i = 0; i < nb; ++i) {
    Codes q;
    const float d = unpack(b[i], q);
    const Lanes8 p = detail::lane_dot(q, x + i * kQK, kQK);
    acc.lo += d * p.lo;
    acc.hi += d * p.hi;
  }
  return detail::reduce8(acc);
}

// Types with an offset: x = d·q + m.
template <typename Block, typename Unpack>
void dequant_affine(const void* src, float* dst, int64_t nb, Unpack unpack) {
  const Block* b = static_cast<const Block*>(src);
  for (int64_t i = 0; i < nb; ++i) {
    Codes q;
    const float d = unpack(b[i], q);
    const float m = detail::f16_scale(b[i].m);
    for (int k = 0; k < 8; ++k) {
      const f32x4 v = d * q[k] + m;
      std::memcpy(dst + i * kQK + 4 * k, &v, sizeof v);
    }
  }
}

template <typename Block, typename Unpack>
float dot_affine(const void* row, const float* x, int64_t nb, Unpack unpack) {
  const Block* b = static_cast<const Block*>(row);
  Lanes8 acc{};
  for (int64_t i = 0; i < nb; ++i) {
    Codes q;
    const float d = unpack(b[i], q);
    const float m = detail::f16_scale(b[i].m);
    const Lanes8 p = detail::lane_dot(q, x + i * kQK, kQK);
    const Lanes8 s = detail::lane_sum(x + i * kQK, kQK);
    acc.lo += d * p.lo + m * s.lo;
    acc.hi += d * p.hi + m * s.hi;
  }
  return detail::reduce8(acc);
}

const auto kUnpackQ4_0 = [](const BlockQ4_0& b, f32x4* q) {
  nibbles(b.qs, 8.0f, q);
  return detail::f16_scale(b.d);
};
const auto kUnpackQ4_1 = [](const BlockQ4_1& b, f32x4* q) {
  nibbles(b.qs, 0.0f, q);
  return detail::f16_scale(b.d);
};
const auto kUnpackQ5_0 = [](const BlockQ5_0& b, f32x4* q) {
  nibbles5(b.qs, b.qh, 16.0f, q);
  return detail::f16_scale(b.d);
};
const auto kUnpackQ5_1 = [](const BlockQ5_1& b, f32x4* q) {
  nibbles5(b.qs, b.qh, 0.0f, q);
  return detail::f16_scale(b.d);
};
const auto kUnpackQ8_0 = [](const BlockQ8_0& b, f32x4* q) {
  // int8 → uint8 by flipping the sign bit (q + 128), converted, minus 128: exact.
  const auto* qs = reinterpret_cast<const uint8_t*>(b.qs);
  detail::bytes_to_f32(detail::load16(qs) ^ 0x80, 128.0f, q);
  detail::bytes_to_f32(detail::load16(qs + 16) ^ 0x80, 128.0f, q + 4);
  return detail::f16_scale(b.d);
};

// Validates n against the block size of a supported type; returns the number of blocks.
int64_t block_count(WeightType t, int64_t n) {
  const WeightTraits tr = weight_traits(t);
  if (tr.name == nullptr) throw unsupported_type_error(static_cast<uint32_t>(t));
  if (n < 0 || n % tr.block_elems != 0) {
    throw usage_error("row length " + std::to_string(n) + " is not a multiple of the " + tr.name +
                      " block size (" + std::to_string(tr.block_elems) + ")");
  }
  return n / tr.block_elems;
}

}  // namespace

std::string type_label(uint32_t id) {
  // ggml type ids (gguf-facts.md §2.1); empty = id unused/removed.
  static constexpr const char* kNames[] = {
      "F32",     "F16",   "Q4_0",   "Q4_1",  "",      "",       "Q5_0", "Q5_1",    "Q8_0",
      "Q8_1",    "Q2_K",  "Q3_K",   "Q4_K",  "Q5_K",  "Q6_K",   "Q8_K", "IQ2_XXS", "IQ2_XS",
      "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS", "I8",   "I16",     "I32",
      "I64",     "F64",   "IQ1_M",  "BF16",  "",      "",       "",     "TQ1_0",   "TQ2_0",
      "",        "",      "",       "MXFP4", "NVFP4", "Q1_0",   "Q2_0"};
  if (id < std::size(kNames) && kNames[id][0] != '\0') return kNames[id];
  return "#" + std::to_string(id);
}

Error unsupported_type_error(uint32_t id) {
  return usage_error("unsupported tensor type " + type_label(id));
}

void dequantize_row(WeightType t, const void* src, float* dst, int64_t n) {
  const int64_t nb = block_count(t, n);
  // The decoders read 16- and 32-bit fields in place; a GGUF file of general.alignment 1 or 2
  // can put a row at any address, where those loads are undefined behaviour. Such a row is
  // decoded from an aligned copy.
  if (reinterpret_cast<uintptr_t>(src) % alignof(uint64_t) != 0 && t != WeightType::kF32) {
    thread_local std::vector<uint64_t> aligned;
    const auto bytes = static_cast<size_t>(row_bytes(t, n));
    aligned.resize((bytes + sizeof(uint64_t) - 1) / sizeof(uint64_t));
    std::memcpy(aligned.data(), src, bytes);
    return dequantize_row(t, aligned.data(), dst, n);
  }
  switch (t) {
    case WeightType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case WeightType::kF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      convert_16bit([h](int64_t i, f32x4* lo, f32x4* hi) { detail::f16x8_to_f32(h + i, lo, hi); },
                    [h](int64_t i) { return f16_to_f32(h[i]); }, dst, n);
      return;
    }
    case WeightType::kBF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      convert_16bit([h](int64_t i, f32x4* lo, f32x4* hi) { detail::bf16x8_to_f32(h + i, lo, hi); },
                    [h](int64_t i) { return bf16_to_f32(h[i]); }, dst, n);
      return;
    }
    case WeightType::kQ4_0:
      return dequant_sym<BlockQ4_0>(src, dst, nb, kUnpackQ4_0);
    case WeightType::kQ4_1:
      return dequant_affine<BlockQ4_1>(src, dst, nb, kUnpackQ4_1);
    case WeightType::kQ5_0:
      return dequant_sym<BlockQ5_0>(src, dst, nb, kUnpackQ5_0);
    case WeightType::kQ5_1:
      return dequant_affine<BlockQ5_1>(src, dst, nb, kUnpackQ5_1);
    case WeightType::kQ8_0:
      return dequant_sym<BlockQ8_0>(src, dst, nb, kUnpackQ8_0);
    case WeightType::kQ4_K:
      return detail::dequant_q4_k(src, dst, nb);
    case WeightType::kQ5_K:
      return detail::dequant_q5_k(src, dst, nb);
    case WeightType::kQ6_K:
      return detail::dequant_q6_k(src, dst, nb);
  }
  throw unsupported_type_error(static_cast<uint32_t>(t));  // unreachable: block_count threw
}

float dot_row(WeightType t, const void* row, const float* x, int64_t n) {
  const int64_t nb = block_count(t, n);
  switch (t) {
    case WeightType::kF32:
      return dot_f32(static_cast<const float*>(row), x, n);
    case WeightType::kF16:
      return dot_f16(static_cast<const uint16_t*>(row), x, n);
    case WeightType::kBF16:
      return dot_bf16(static_cast<const uint16_t*>(row), x, n);
    case WeightType::kQ4_0:
      return dot_sym<BlockQ4_0>(row, x, nb, kUnpackQ4_0);
    case WeightType::kQ4_1:
      return dot_affine<BlockQ4_1>(row, x, nb, kUnpackQ4_1);
    case WeightType::kQ5_0:
      return dot_sym<BlockQ5_0>(row, x, nb, kUnpackQ5_0);
    case WeightType::kQ5_1:
      return dot_affine<BlockQ5_1>(row, x, nb, kUnpackQ5_1);
    case WeightType::kQ8_0:
      return dot_sym<BlockQ8_0>(row, x, nb, kUnpackQ8_0);
    case WeightType::kQ4_K:
      return detail::dot_q4_k(row, x, nb);
    case WeightType::kQ5_K:
      return detail::dot_q5_k(row, x, nb);
    case WeightType::kQ6_K:
      return detail::dot_q6_k(row, x, nb);
  }
  throw unsupported_type_error(static_cast<uint32_t>(t));  // unreachable: block_count threw
}

}  // namespace decodebench::quant
