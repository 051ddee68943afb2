// quantize_row: f32 → every supported weight type, for synthetic models and tests.
//
// Legacy types follow the well-known reference rules (the gguf Python package implements the same
// ones), computed in f32 with the scale before its f16 rounding:
//   Q8_0: d = max|x| / 127, q = round-half-away(x / d)
//   Q4_0: v = the x of largest |x| (first one on ties), d = v / −8, q = min(15, trunc(x/d + 8.5))
//   Q5_0: as Q4_0 with −16, 16.5 and 31
//   Q4_1: d = (max − min) / 15, m = min, q = min(15, trunc((x − min)/d + 0.5));  Q5_1: 31
// where "x / d" is x · (1/d) and 1/d := 0 when d = 0.
//
// K-quants (own algorithm; closed form, no iterative search). Notation: nmax = 15 (Q4_K) or 31
// (Q5_K); ceil~(v) = ceil(v − 2^-10), a ceiling that ignores f32 noise so that values already on
// the grid are reproduced exactly.
//   Q4_K/Q5_K, per super-block of 8 sub-blocks of 32:
//     1. per sub-block: lo = min(0, min x), hi = max x, need_min = −lo (mins are unsigned);
//     2. dmin = f16(max need_min / 63), bumped one f16 step up if f32 noise left it too small;
//        mn = ceil~(need_min / dmin) ∈ [0, 63], ml = dmin·mn (≥ need_min, so x + ml ≥ 0);
//     3. span = hi + ml, the range the codes 0..nmax must cover; d = f16(max span / nmax / 63)
//        (bumped likewise); sc = ceil~(span / nmax / d) ∈ [0, 63], dl = d·sc;
//     4. q = clamp(round((x + ml) / dl), 0, nmax), so x ≈ dl·q − ml (the dequantization formula).
//     Rounding sc and mn up (never down) means no value is clipped (beyond the 2^-10 tolerance):
//     error ≤ dl/2 per value.
//   Q6_K, per super-block of 16 sub-blocks of 16 (symmetric, codes −31..31; −32 is left unused so
//   that positive and negative extremes fit alike): scale = max|x| / 31, d = f16(max scale / 127)
//   (bumped likewise), sc = ceil~(scale / d) ∈ [0, 127], q = clamp(round(x / (d·sc)), −32, 31).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/quant/blocks.hpp"
#include "core/quant/dequant.hpp"
#include "core/quant/detail.hpp"
#include "core/quant/fp16.hpp"

namespace decodebench::quant {

namespace {

// ---- legacy types ----------------------------------------------------------------------------

float inverse_or_zero(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

void quantize_q8_0(const float* x, BlockQ8_0& b) {
  float amax = 0.0f;
  for (int e = 0; e < kQK; ++e) amax = std::max(amax, std::fabs(x[e]));
  const float d = amax / 127.0f;
  const float id = inverse_or_zero(d);
  for (int e = 0; e < kQK; ++e) {
    const float q = std::round(x[e] * id);  // half away from zero
    b.qs[e] = static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f));
  }
  b.d = f32_to_f16(d);
}

// The signed value of largest magnitude (the first one on ties).
float signed_absmax(const float* x) {
  float v = 0.0f;
  for (int e = 0; e < kQK; ++e) {
    if (std::fabs(x[e]) > std::fabs(v)) v = x[e];
  }
  return v;
}

// Q4_0 (levels = 16) and Q5_0 (levels = 32): codes 0..levels−1 holding q + levels/2.
void quantize_sym_codes(const float* x, int levels, uint8_t* codes, uint16_t* d_out) {
  const float d = signed_absmax(x) / static_cast<float>(-levels / 2);
  const float id = inverse_or_zero(d);
  const float bias = static_cast<float>(levels / 2) + 0.5f;
  for (int e = 0; e < kQK; ++e) {
    const float v = std::trunc(x[e] * id + bias);
    codes[e] = static_cast<uint8_t>(std::clamp(v, 0.0f, static_cast<float>(levels - 1)));
  }
  *d_out = f32_to_f16(d);
}

// Q4_1 (levels = 16) and Q5_1 (levels = 32).
void quantize_affine_codes(const float* x, int levels, uint8_t* codes, uint16_t* d_out,
                           uint16_t* m_out) {
  float lo = x[0], hi = x[0];
  for (int e = 1; e < kQK; ++e) {
    lo = std::min(lo, x[e]);
    hi = std::max(hi, x[e]);
  }
  const float d = (hi - lo) / static_cast<float>(levels - 1);
  const float id = inverse_or_zero(d);
  for (int e = 0; e < kQK; ++e) {
    const float v = std::trunc((x[e] - lo) * id + 0.5f);
    codes[e] = static_cast<uint8_t>(std::clamp(v, 0.0f, static_cast<float>(levels - 1)));
  }
  *d_out = f32_to_f16(d);
  *m_out = f32_to_f16(lo);
}

// Packs 32 codes: low nibbles of elements 0..15 and high nibbles of 16..31 into qs[16]; for 5-bit
// codes bit 4 of element e goes to bit e of the LE u32 qh.
void pack_nibbles(const uint8_t* codes, uint8_t* qs) {
  for (int j = 0; j < kQK / 2; ++j) {
    qs[j] = static_cast<uint8_t>((codes[j] & 0xF) | ((codes[j + kQK / 2] & 0xF) << 4));
  }
}

void pack_high_bits(const uint8_t* codes, uint8_t* qh) {
  uint32_t h = 0;
  for (int e = 0; e < kQK; ++e) h |= static_cast<uint32_t>((codes[e] >> 4) & 1) << e;
  for (int k = 0; k < 4; ++k) qh[k] = static_cast<uint8_t>(h >> (8 * k));
}

// ---- K-quants --------------------------------------------------------------------------------

// ceil(v) that ignores f32 noise just above an integer (see the file comment).
float ceil_tolerant(float v) { return std::ceil(v - 0.0009765625f); }

// f16 bits of a non-negative value v / divisor, raised one f16 step while (value · divisor) is
// clearly below v, so that ceil_tolerant(v_i / value) ≤ divisor for every v_i ≤ v.
uint16_t f16_scale_covering(float v, float divisor) {
  uint16_t h = f32_to_f16(v / divisor);
  while (f16_to_f32(h) * divisor * (1.0f + 0.0009765625f / divisor) < v && h < 0x7BFFu) ++h;
  return h;
}

// Q4_K (nmax = 15) / Q5_K (nmax = 31): writes d, dmin, the 12 scale bytes and the 256 codes.
void quantize_k_affine(const float* x, int nmax, uint16_t* d_out, uint16_t* dmin_out,
                       uint8_t* scales, uint8_t* codes) {
  constexpr int kSub = 32;
  float hi[8], need_min[8];
  float max_need = 0.0f;
  for (int s = 0; s < 8; ++s) {
    float lo = 0.0f, h = x[kSub * s];
    for (int l = 0; l < kSub; ++l) {
      lo = std::min(lo, x[kSub * s + l]);
      h = std::max(h, x[kSub * s + l]);
    }
    hi[s] = h;
    need_min[s] = -lo;
    max_need = std::max(max_need, need_min[s]);
  }
  *dmin_out = f16_scale_covering(max_need, 63.0f);
  const float dmin = f16_to_f32(*dmin_out);
  int sc[8], mn[8];
  float ml[8], need_scale[8];
  float max_scale = 0.0f;
  for (int s = 0; s < 8; ++s) {
    mn[s] = dmin > 0.0f
                ? static_cast<int>(std::clamp(ceil_tolerant(need_min[s] / dmin), 0.0f, 63.0f))
                : 0;
    ml[s] = dmin * static_cast<float>(mn[s]);
    need_scale[s] = std::max(0.0f, hi[s] + ml[s]) / static_cast<float>(nmax);
    max_scale = std::max(max_scale, need_scale[s]);
  }
  *d_out = f16_scale_covering(max_scale, 63.0f);
  const float d = f16_to_f32(*d_out);
  for (int s = 0; s < 8; ++s) {
    sc[s] =
        d > 0.0f ? static_cast<int>(std::clamp(ceil_tolerant(need_scale[s] / d), 0.0f, 63.0f)) : 0;
    const float dl = d * static_cast<float>(sc[s]);
    for (int l = 0; l < kSub; ++l) {
      const float q = dl > 0.0f ? std::round((x[kSub * s + l] + ml[s]) / dl) : 0.0f;
      codes[kSub * s + l] = static_cast<uint8_t>(std::clamp(q, 0.0f, static_cast<float>(nmax)));
    }
  }
  detail::pack_k_scales(sc, mn, scales);
}

// Element e = 64c + 32t + l goes to nibble t of qs[32c + l].
void pack_k_nibbles(const uint8_t* codes, uint8_t* qs) {
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      qs[32 * c + l] =
          static_cast<uint8_t>((codes[64 * c + l] & 0xF) | ((codes[64 * c + 32 + l] & 0xF) << 4));
    }
  }
}

void quantize_q4_k(const float* x, BlockQ4_K& b) {
  uint8_t codes[kQKK];
  quantize_k_affine(x, 15, &b.d, &b.dmin, b.scales, codes);
  pack_k_nibbles(codes, b.qs);
}

void quantize_q5_k(const float* x, BlockQ5_K& b) {
  uint8_t codes[kQKK];
  quantize_k_affine(x, 31, &b.d, &b.dmin, b.scales, codes);
  pack_k_nibbles(codes, b.qs);
  // Bit 4 of the code of sub-block s, position l, is bit s of qh[l].
  for (int l = 0; l < 32; ++l) {
    int h = 0;
    for (int s = 0; s < 8; ++s) h |= ((codes[32 * s + l] >> 4) & 1) << s;
    b.qh[l] = static_cast<uint8_t>(h);
  }
}

void quantize_q6_k(const float* x, BlockQ6_K& b) {
  constexpr int kSub = 16;
  float need_scale[16];
  float max_scale = 0.0f;
  for (int s = 0; s < 16; ++s) {
    float amax = 0.0f;
    for (int l = 0; l < kSub; ++l) amax = std::max(amax, std::fabs(x[kSub * s + l]));
    need_scale[s] = amax / 31.0f;
    max_scale = std::max(max_scale, need_scale[s]);
  }
  b.d = f16_scale_covering(max_scale, 127.0f);
  const float d = f16_to_f32(b.d);
  uint8_t codes[kQKK];  // q + 32, 0..63
  for (int s = 0; s < 16; ++s) {
    const int sc =
        d > 0.0f ? static_cast<int>(std::clamp(ceil_tolerant(need_scale[s] / d), 0.0f, 127.0f)) : 0;
    b.scales[s] = static_cast<int8_t>(sc);
    const float dl = d * static_cast<float>(sc);
    for (int l = 0; l < kSub; ++l) {
      const float q = dl > 0.0f ? std::round(x[kSub * s + l] / dl) : 0.0f;
      codes[kSub * s + l] = static_cast<uint8_t>(std::clamp(q, -32.0f, 31.0f) + 32.0f);
    }
  }
  // Element e = 128h + 32g + l: low nibble into ql[64h + 32(g & 1) + l] (nibble g / 2), high two
  // bits into bits 2g..2g+1 of qh[32h + l].
  for (int h = 0; h < 2; ++h) {
    const uint8_t* c = codes + 128 * h;
    for (int l = 0; l < 32; ++l) {
      b.ql[64 * h + l] = static_cast<uint8_t>((c[l] & 0xF) | ((c[l + 64] & 0xF) << 4));
      b.ql[64 * h + 32 + l] = static_cast<uint8_t>((c[l + 32] & 0xF) | ((c[l + 96] & 0xF) << 4));
      b.qh[32 * h + l] = static_cast<uint8_t>((c[l] >> 4) | ((c[l + 32] >> 4) << 2) |
                                              ((c[l + 64] >> 4) << 4) | ((c[l + 96] >> 4) << 6));
    }
  }
}

}  // namespace

void quantize_row(WeightType t, const float* src, void* dst, int64_t n) {
  const WeightTraits tr = weight_traits(t);
  if (tr.name == nullptr) throw unsupported_type_error(static_cast<uint32_t>(t));
  if (n < 0 || n % tr.block_elems != 0) {
    throw usage_error("row length " + std::to_string(n) + " is not a multiple of the " + tr.name +
                      " block size (" + std::to_string(tr.block_elems) + ")");
  }
  const int64_t nb = n / tr.block_elems;
  switch (t) {
    case WeightType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case WeightType::kF16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) h[i] = f32_to_f16(src[i]);
      return;
    }
    case WeightType::kBF16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) h[i] = f32_to_bf16(src[i]);
      return;
    }
    case WeightType::kQ8_0: {
      auto* b = static_cast<BlockQ8_0*>(dst);
      for (int64_t i = 0; i < nb; ++i) quantize_q8_0(src + i * kQK, b[i]);
      return;
    }
    case WeightType::kQ4_0: {
      auto* b = static_cast<BlockQ4_0*>(dst);
      for (int64_t i = 0; i < nb; ++i) {
        uint8_t codes[kQK];
        quantize_sym_codes(src + i * kQK, 16, codes, &b[i].d);
        pack_nibbles(codes, b[i].qs);
      }
      return;
    }
    case WeightType::kQ5_0: {
      auto* b = static_cast<BlockQ5_0*>(dst);
      for (int64_t i = 0; i < nb; ++i) {
        uint8_t codes[kQK];
        quantize_sym_codes(src + i * kQK, 32, codes, &b[i].d);
        pack_nibbles(codes, b[i].qs);
        pack_high_bits(codes, b[i].qh);
      }
      return;
    }
    case WeightType::kQ4_1: {
      auto* b = static_cast<BlockQ4_1*>(dst);
      for (int64_t i = 0; i < nb; ++i) {
        uint8_t codes[kQK];
        quantize_affine_codes(src + i * kQK, 16, codes, &b[i].d, &b[i].m);
        pack_nibbles(codes, b[i].qs);
      }
      return;
    }
    case WeightType::kQ5_1: {
      auto* b = static_cast<BlockQ5_1*>(dst);
      for (int64_t i = 0; i < nb; ++i) {
        uint8_t codes[kQK];
        quantize_affine_codes(src + i * kQK, 32, codes, &b[i].d, &b[i].m);
        pack_nibbles(codes, b[i].qs);
        pack_high_bits(codes, b[i].qh);
      }
      return;
    }
    case WeightType::kQ4_K: {
      auto* b = static_cast<BlockQ4_K*>(dst);
      for (int64_t i = 0; i < nb; ++i) quantize_q4_k(src + i * kQKK, b[i]);
      return;
    }
    case WeightType::kQ5_K: {
      auto* b = static_cast<BlockQ5_K*>(dst);
      for (int64_t i = 0; i < nb; ++i) quantize_q5_k(src + i * kQKK, b[i]);
      return;
    }
    case WeightType::kQ6_K: {
      auto* b = static_cast<BlockQ6_K*>(dst);
      for (int64_t i = 0; i < nb; ++i) quantize_q6_k(src + i * kQKK, b[i]);
      return;
    }
  }
}

}  // namespace decodebench::quant
