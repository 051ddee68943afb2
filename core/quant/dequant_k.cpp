// Q4_K, Q5_K and Q6_K (256-value super-blocks): dequantization and dot products.
// Formulas: gguf-facts.md §2.3; summation order and vector helpers: detail.hpp.
#include <cstring>

#include "core/quant/blocks.hpp"
#include "core/quant/detail.hpp"
#include "core/quant/fp16.hpp"

namespace decodebench::quant::detail {

namespace {

// Q4_K/Q5_K: 8 sub-blocks of 32. Element e = 64c + 32t + l takes nibble t of qs[32c + l]
// (sub-block s = 2c + t); Q5_K adds bit s of qh[l] as bit 4.
struct KAffineCodes {
  // Codes of sub-block s (32 values in q[0..8)), as f32.
  template <typename Block>
  static void sub_block(const Block& b, int s, f32x4* q) {
    const int c = s / 2;
    u8x16 v0 = load16(b.qs + 32 * c), v1 = load16(b.qs + 32 * c + 16);
    if (s % 2 == 0) {
      v0 &= 0xF;
      v1 &= 0xF;
    } else {
      v0 >>= 4;
      v1 >>= 4;
    }
    if constexpr (sizeof(Block) == sizeof(BlockQ5_K)) {
      // Each byte set by memset: `u8x16{} + uint8_t(1u << s)` is a scalar-to-vector conversion that
      // g++ 12 refuses under -fsanitize=undefined (it sees an int that may not fit a byte).
      u8x16 bit;
      std::memset(&bit, 1 << s, sizeof bit);
      v0 |= std::bit_cast<u8x16>((load16(b.qh) & bit) == bit) & 16;
      v1 |= std::bit_cast<u8x16>((load16(b.qh + 16) & bit) == bit) & 16;
    }
    bytes_to_f32(v0, 0.0f, q);
    bytes_to_f32(v1, 0.0f, q + 4);
  }
};

template <typename Block>
void dequant_k_affine(const void* src, float* dst, int64_t nb) {
  const Block* blocks = static_cast<const Block*>(src);
  for (int64_t i = 0; i < nb; ++i) {
    const Block& b = blocks[i];
    int sc[8], mn[8];
    unpack_k_scales(b.scales, sc, mn);
    const float d = f16_scale(b.d), dmin = f16_scale(b.dmin);
    for (int s = 0; s < 8; ++s) {
      const float dl = d * static_cast<float>(sc[s]);
      const float ml = dmin * static_cast<float>(mn[s]);
      f32x4 q[8];
      KAffineCodes::sub_block(b, s, q);
      for (int k = 0; k < 8; ++k) {
        const f32x4 v = dl * q[k] - ml;
        std::memcpy(dst + i * kQKK + 32 * s + 4 * k, &v, sizeof v);
      }
    }
  }
}

template <typename Block>
float dot_k_affine(const void* row, const float* x, int64_t nb) {
  const Block* blocks = static_cast<const Block*>(row);
  Lanes8 acc{};
  for (int64_t i = 0; i < nb; ++i) {
    const Block& b = blocks[i];
    int sc[8], mn[8];
    unpack_k_scales(b.scales, sc, mn);
    const float d = f16_scale(b.d), dmin = f16_scale(b.dmin);
    for (int s = 0; s < 8; ++s) {
      const float dl = d * static_cast<float>(sc[s]);
      const float ml = dmin * static_cast<float>(mn[s]);
      const float* xs = x + i * kQKK + 32 * s;
      f32x4 q[8];
      KAffineCodes::sub_block(b, s, q);
      const Lanes8 p = lane_dot(q, xs, 32);
      const Lanes8 sx = lane_sum(xs, 32);
      acc.lo += dl * p.lo - ml * sx.lo;
      acc.hi += dl * p.hi - ml * sx.hi;
    }
  }
  return reduce8(acc);
}

// Q6_K: element e = 128h + 32g + l; low 4 bits from ql[64h + 32(g & 1) + l] (low nibble for
// g < 2, high for g >= 2), high 2 bits from qh[32h + l] >> 2g; code − 32. Calls f(s, q) for the
// 16 sub-blocks of 16 (s = e / 16) in order, q[0..4) holding the codes as f32.
template <typename F>
void q6_k_sub_blocks(const BlockQ6_K& b, F f) {
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = b.ql + 64 * h;
    const uint8_t* qh = b.qh + 32 * h;
    for (int half = 0; half < 2; ++half) {  // l < 16, l >= 16
      const u8x16 lo = load16(ql + 16 * half), hi = load16(ql + 32 + 16 * half);
      const u8x16 hb = load16(qh + 16 * half);
      const u8x16 codes[4] = {(lo & 0xF) | ((hb & 0x03) << 4), (hi & 0xF) | ((hb & 0x0C) << 2),
                              (lo >> 4) | (hb & 0x30), (hi >> 4) | ((hb >> 2) & 0x30)};
      for (int g = 0; g < 4; ++g) {
        f32x4 q[4];
        bytes_to_f32(codes[g], 32.0f, q);
        f(8 * h + 2 * g + half, q);
      }
    }
  }
}

}  // namespace

void dequant_q4_k(const void* src, float* dst, int64_t nb) {
  dequant_k_affine<BlockQ4_K>(src, dst, nb);
}

void dequant_q5_k(const void* src, float* dst, int64_t nb) {
  dequant_k_affine<BlockQ5_K>(src, dst, nb);
}

float dot_q4_k(const void* row, const float* x, int64_t nb) {
  return dot_k_affine<BlockQ4_K>(row, x, nb);
}

float dot_q5_k(const void* row, const float* x, int64_t nb) {
  return dot_k_affine<BlockQ5_K>(row, x, nb);
}

void dequant_q6_k(const void* src, float* dst, int64_t nb) {
  const BlockQ6_K* blocks = static_cast<const BlockQ6_K*>(src);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = f16_scale(blocks[i].d);
    q6_k_sub_blocks(blocks[i], [&](int s, const f32x4* q) {
      const float dl = d * static_cast<float>(blocks[i].scales[s]);
      for (int k = 0; k < 4; ++k) {
        const f32x4 v = dl * q[k];
        std::memcpy(dst + i * kQKK + 16 * s + 4 * k, &v, sizeof v);
      }
    });
  }
}

float dot_q6_k(const void* row, const float* x, int64_t nb) {
  const BlockQ6_K* blocks = static_cast<const BlockQ6_K*>(row);
  // Per-sub-block partial sums, then added to the lanes in sub-block order s = 0..15 (the
  // unpacking visits sub-blocks out of order).
  Lanes8 acc{};
  for (int64_t i = 0; i < nb; ++i) {
    const float d = f16_scale(blocks[i].d);
    Lanes8 part[16];
    q6_k_sub_blocks(blocks[i], [&](int s, const f32x4* q) {
      const float dl = d * static_cast<float>(blocks[i].scales[s]);
      const Lanes8 p = lane_dot(q, x + i * kQKK + 16 * s, 16);
      part[s] = {dl * p.lo, dl * p.hi};
    });
    for (int s = 0; s < 16; ++s) {
      acc.lo += part[s].lo;
      acc.hi += part[s].hi;
    }
  }
  return reduce8(acc);
}

}  // namespace decodebench::quant::detail
