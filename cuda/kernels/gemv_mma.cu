// GEMV for the quantized weight types on the int8 tensor cores: "mma" kernel.
//
// Why: at HBM speed a 4-bit GEMV must turn ~28 weights per clock and SM into products; unpacking
// each code to a float (PRMT + FADD) and multiplying (FFMA) costs ~4 instructions per weight,
// more than the SM can issue. Here the codes stay integers: a warp multiplies a 16-row × 32-column
// tile of codes (u8/s8, as stored, biased codes offset through the accumulator's initial value)
// with x' written as four signed 7-bit digits per value (x' = 2^e·(X0 + X1/128 + X2/128² +
// X3/128³), e per 32 columns, exact to 2^-22 of the tile's largest |x'|) in one
// mma.m16n8k32.s8 (columns n = digit); integer products and sums are exact. Per tile and row the
// four digit sums are combined in f32 with the block scale (and minimum), so the result differs
// from the CPU's f32 dot product only by f32 rounding of per-block terms and the 2^-22 digit
// residue.
//
// Layout. A CTA of 8 warps runs a persistent loop over tasks (row tiles of 16 rows per warp
// slot); the warps of a slot split the row's chunks of kCB blocks (ksplit) and add their partial
// sums in a fixed order. Each warp streams its 16 rows × kCB blocks per stage into shared memory
// with cp.async (the blocks are 18, 20, 22, ... bytes: staging keeps the global loads 16-byte and
// coalesced), kStages deep, continuously across tasks. x' is split once per CTA into shared
// memory (or read pre-split from global memory, prepare_x_launch). The first stages are issued
// before the PDL wait.
#include <algorithm>

#include "core/error.hpp"
#include "cuda/check.hpp"
#include "cuda/kernels/common.cuh"
#include "cuda/kernels/dequant.cuh"
#include "cuda/kernels/gemv_device.cuh"
#include "cuda/kernels/gemv_impl.cuh"

namespace decodebench::cuda::gemv_impl {
namespace {

using kernels::ceil_div;
using kernels::ld_f16;
using kernels::ld_u32_a2;
using kernels::ld_u32_a4;

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kTileRows = 16;
constexpr int kMagic = 0x4B400000;      ///< float bits of 1.5·2^23
constexpr float kMagicF = 12582912.0f;  ///< 1.5·2^23
constexpr uint32_t kLow4 = 0x0F0F0F0Fu;

// ---- tensor-core MMA wrappers (C = {c_a, c_b} per column pair, both row halves) --------------

__device__ __forceinline__ void mma_k32_u8(int (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                           uint32_t a3, uint32_t b0, uint32_t b1, int ca,
                                           int cb) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%10,%11};\n"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(ca), "r"(cb));
}

__device__ __forceinline__ void mma_k32_s8(int (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                           uint32_t a3, uint32_t b0, uint32_t b1, int ca,
                                           int cb) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%10,%11};\n"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(ca), "r"(cb));
}

__device__ __forceinline__ void mma_k16_u8(int (&d)[4], uint32_t a0, uint32_t a1, uint32_t b0,
                                           int ca, int cb) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
      "{%7,%8,%7,%8};\n"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a0), "r"(a1), "r"(b0), "r"(ca), "r"(cb));
}

/// The integer an accumulator holds (it started at kMagic + bias term): exact for |S| < 2^22.
__device__ __forceinline__ float acc_value(int d) { return __int_as_float(d) - kMagicF; }

/// Σ over this thread's two digits (columns 2t, 2t+1 of C) weighted by their scales.
__device__ __forceinline__ float combine(int da, int db, float fa, float fb) {
  return fmaf(fb, acc_value(db), fa * acc_value(da));
}

/// Sign-extended low / high int16 of a packed pair.
__device__ __forceinline__ int lo16(int v) { return static_cast<int>(static_cast<int16_t>(v)); }
__device__ __forceinline__ int hi16(int v) { return v >> 16; }

// ---- x' in split form (shared or global memory, generic pointers) ------------------------------

struct XView {
  const int8_t* dig;  ///< [4][stride]
  int64_t stride;     ///< cols + 16
  const int4* meta;   ///< [cols / 32][3]
};

/// B fragment word of digit (g & 3) at columns col + 4t .. +3.
__device__ __forceinline__ uint32_t b_word(const XView& x, int g, int t, int64_t col) {
  return *reinterpret_cast<const uint32_t*>(x.dig + (g & 3) * x.stride + col + 4 * t);
}

/// Per-tile scales and digit sums of this thread's digit pair (2(t&1), 2(t&1)+1).
__device__ __forceinline__ int4 meta_pair(const XView& x, int64_t tile, int t) {
  return x.meta[3 * tile + (t & 1)];
}

/// Σ x' over the tile, counted once per row: only threads t == 0 contribute it (threads t = 1
/// hold digits 2, 3 of the same rows, t = 2, 3 hold duplicates that are discarded).
__device__ __forceinline__ float tile_sum_x(const XView& x, int64_t tile, int t) {
  return t == 0 ? __int_as_float(x.meta[3 * tile + 2].x) : 0.0f;
}

/// Accumulator start values for a 32-column tile of codes with bias `kBias` (code − kBias is
/// the signed weight): kMagic − kBias·Σ digits.
template <int kBias>
__device__ __forceinline__ void c_init32(const int4& m, int* ca, int* cb) {
  if constexpr (kBias == 0) {
    *ca = kMagic;
    *cb = kMagic;
  } else {
    *ca = kMagic - kBias * (lo16(m.z) + lo16(m.w));
    *cb = kMagic - kBias * (hi16(m.z) + hi16(m.w));
  }
}

// ---- per-type code ------------------------------------------------------------------------------
// block(pg, p8, tg, t8, g, t, x, tile0, acc_g, acc_8): adds block (pg: row g, p8: row g + 8, in
// shared memory) times x' (32-column tiles tile0...) to the rows' accumulators; tg/t8: the rows'
// coefficient table entries for this block (K-quants). kTable: float2 entries per block and row.

template <WeightType T>
struct MmaOps;

template <>
struct MmaOps<WeightType::kQ4_0> {  // d f16 @0 · qs[16] @2
  static constexpr int kBB = 18, kBE = 32, kCB = 8, kStages = 4, kTable = 0;
  __device__ static void block(const uint8_t* pg, const uint8_t* p8, const float2*, const float2*,
                               int g, int t, const XView& x, int64_t tile, float& ag, float& a8) {
    const uint32_t wg = ld_u32_a2(pg + 2 + 4 * t);
    const uint32_t w8 = ld_u32_a2(p8 + 2 + 4 * t);
    const int4 m = meta_pair(x, tile, t);
    int ca, cb;
    c_init32<8>(m, &ca, &cb);
    int d[4];
    mma_k32_u8(d, wg & kLow4, w8 & kLow4, (wg >> 4) & kLow4, (w8 >> 4) & kLow4,
               b_word(x, g, t, 32 * tile), b_word(x, g, t, 32 * tile + 16), ca, cb);
    const float fa = __int_as_float(m.x), fb = __int_as_float(m.y);
    ag = fmaf(ld_f16(pg), combine(d[0], d[1], fa, fb), ag);
    a8 = fmaf(ld_f16(p8), combine(d[2], d[3], fa, fb), a8);
  }
};

template <>
struct MmaOps<WeightType::kQ4_1> {  // d @0 · m @2 · qs[16] @4 (4-byte aligned)
  static constexpr int kBB = 20, kBE = 32, kCB = 8, kStages = 4, kTable = 0;
  __device__ static void block(const uint8_t* pg, const uint8_t* p8, const float2*, const float2*,
                               int g, int t, const XView& x, int64_t tile, float& ag, float& a8) {
    const uint32_t wg = ld_u32_a4(pg + 4 + 4 * t);
    const uint32_t w8 = ld_u32_a4(p8 + 4 + 4 * t);
    const int4 m = meta_pair(x, tile, t);
    int d[4];
    mma_k32_u8(d, wg & kLow4, w8 & kLow4, (wg >> 4) & kLow4, (w8 >> 4) & kLow4,
               b_word(x, g, t, 32 * tile), b_word(x, g, t, 32 * tile + 16), kMagic, kMagic);
    const float fa = __int_as_float(m.x), fb = __int_as_float(m.y);
    const float sx = tile_sum_x(x, tile, t);
    ag = fmaf(ld_f16(pg + 2), sx, fmaf(ld_f16(pg), combine(d[0], d[1], fa, fb), ag));
    a8 = fmaf(ld_f16(p8 + 2), sx, fmaf(ld_f16(p8), combine(d[2], d[3], fa, fb), a8));
  }
};

/// Q5_0/Q5_1: codes of columns 4t..4t+3 (low nibbles) and 16+4t.. (high) with their fifth bits.
__device__ __forceinline__ void q5_words(uint32_t w, uint32_t h, int t, uint32_t* lo,
                                         uint32_t* hi) {
  *lo = (w & kLow4) | kernels::spread_bit4((h >> (4 * t)) & 0xFu);
  *hi = ((w >> 4) & kLow4) | kernels::spread_bit4((h >> (16 + 4 * t)) & 0xFu);
}

template <>
struct MmaOps<WeightType::kQ5_0> {  // d @0 · qh u32 @2 · qs[16] @6
  static constexpr int kBB = 22, kBE = 32, kCB = 8, kStages = 4, kTable = 0;
  __device__ static void block(const uint8_t* pg, const uint8_t* p8, const float2*, const float2*,
                               int g, int t, const XView& x, int64_t tile, float& ag, float& a8) {
    uint32_t lg, hg, l8, h8;
    q5_words(ld_u32_a2(pg + 6 + 4 * t), ld_u32_a2(pg + 2), t, &lg, &hg);
    q5_words(ld_u32_a2(p8 + 6 + 4 * t), ld_u32_a2(p8 + 2), t, &l8, &h8);
    const int4 m = meta_pair(x, tile, t);
    int ca, cb;
    c_init32<16>(m, &ca, &cb);
    int d[4];
    mma_k32_u8(d, lg, l8, hg, h8, b_word(x, g, t, 32 * tile), b_word(x, g, t, 32 * tile + 16), ca,
               cb);
    const float fa = __int_as_float(m.x), fb = __int_as_float(m.y);
    ag = fmaf(ld_f16(pg), combine(d[0], d[1], fa, fb), ag);
    a8 = fmaf(ld_f16(p8), combine(d[2], d[3], fa, fb), a8);
  }
};

template <>
struct MmaOps<WeightType::kQ5_1> {  // d @0 · m @2 · qh u32 @4 · qs[16] @8 (8-byte aligned)
  static constexpr int kBB = 24, kBE = 32, kCB = 8, kStages = 4, kTable = 0;
  __device__ static void block(const uint8_t* pg, const uint8_t* p8, const float2*, const float2*,
                               int g, int t, const XView& x, int64_t tile, float& ag, float& a8) {
    uint32_t lg, hg, l8, h8;
    q5_words(ld_u32_a4(pg + 8 + 4 * t), ld_u32_a4(pg + 4), t, &lg, &hg);
    q5_words(ld_u32_a4(p8 + 8 + 4 * t), ld_u32_a4(p8 + 4), t, &l8, &h8);
    const int4 m = meta_pair(x, tile, t);
    int d[4];
    mma_k32_u8(d, lg, l8, hg, h8, b_word(x, g, t, 32 * tile), b_word(x, g, t, 32 * tile + 16),
               kMagic, kMagic);
    const float fa = __int_as_float(m.x), fb = __int_as_float(m.y);
    const float sx = tile_sum_x(x, tile, t);
    ag = fmaf(ld_f16(pg + 2), sx, fmaf(ld_f16(pg), combine(d[0], d[1], fa, fb), ag));
    a8 = fmaf(ld_f16(p8 + 2), sx, fmaf(ld_f16(p8), combine(d[2], d[3], fa, fb), a8));
  }
};

template <>
struct MmaOps<WeightType::kQ8_0> {  // d @0 · qs int8[32] @2
  static constexpr int kBB = 34, kBE = 32, kCB = 4, kStages = 4, kTable = 0;
  __device__ static void block(const uint8_t* pg, const uint8_t* p8, const float2*, const float2*,
                               int g, int t, const XView& x, int64_t tile, float& ag, float& a8) {
    const int4 m = meta_pair(x, tile, t);
    int d[4];
    mma_k32_s8(d, ld_u32_a2(pg + 2 + 4 * t), ld_u32_a2(p8 + 2 + 4 * t),
               ld_u32_a2(pg + 18 + 4 * t), ld_u32_a2(p8 + 18 + 4 * t), b_word(x, g, t, 32 * tile),
               b_word(x, g, t, 32 * tile + 16), kMagic, kMagic);
    const float fa = __int_as_float(m.x), fb = __int_as_float(m.y);
    ag = fmaf(ld_f16(pg), combine(d[0], d[1], fa, fb), ag);
    a8 = fmaf(ld_f16(p8), combine(d[2], d[3], fa, fb), a8);
  }
};

/// Q4_K/Q5_K table entry s (sub-block 0..7): {d·sc_s, dmin·mn_s}.
__device__ __forceinline__ float2 k_affine_coef(const uint8_t* blk, int s) {
  int sc, mn;
  kernels::k_scale_min(blk + 4, s, &sc, &mn);
  return make_float2(ld_f16(blk) * static_cast<float>(sc),
                     ld_f16(blk + 2) * static_cast<float>(mn));
}

/// Adds one K-quant sub-block's MMA result with its coefficients (scale, minimum).
__device__ __forceinline__ void k_affine_add(const int (&d)[4], const int4& m, float2 cg,
                                             float2 c8, float sx, float& ag, float& a8) {
  const float fa = __int_as_float(m.x), fb = __int_as_float(m.y);
  ag = fmaf(-cg.y, sx, fmaf(cg.x, combine(d[0], d[1], fa, fb), ag));
  a8 = fmaf(-c8.y, sx, fmaf(c8.x, combine(d[2], d[3], fa, fb), a8));
}

template <>
struct MmaOps<WeightType::kQ4_K> {  // d @0 · dmin @2 · scales[12] @4 · qs[128] @16
  static constexpr int kBB = 144, kBE = 256, kCB = 1, kStages = 3, kTable = 8;
  __device__ static float2 table_entry(const uint8_t* blk, int s) { return k_affine_coef(blk, s); }
  __device__ static void block(const uint8_t* pg, const uint8_t* p8, const float2* tg,
                               const float2* t8, int g, int t, const XView& x, int64_t tile0,
                               float& ag, float& a8) {
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const uint32_t lg = ld_u32_a4(pg + 16 + 32 * c + 4 * t);
      const uint32_t hg = ld_u32_a4(pg + 32 + 32 * c + 4 * t);
      const uint32_t l8 = ld_u32_a4(p8 + 16 + 32 * c + 4 * t);
      const uint32_t h8 = ld_u32_a4(p8 + 32 + 32 * c + 4 * t);
#pragma unroll
      for (int hn = 0; hn < 2; ++hn) {  // sub-block 2c + hn: low (hn = 0) or high nibbles
        const int s = 2 * c + hn;
        const int64_t tile = tile0 + s;
        const int sh = 4 * hn;
        const int4 m = meta_pair(x, tile, t);
        int d[4];
        mma_k32_u8(d, (lg >> sh) & kLow4, (l8 >> sh) & kLow4, (hg >> sh) & kLow4,
                   (h8 >> sh) & kLow4, b_word(x, g, t, 32 * tile),
                   b_word(x, g, t, 32 * tile + 16), kMagic, kMagic);
        k_affine_add(d, m, tg[s], t8[s], tile_sum_x(x, tile, t), ag, a8);
      }
    }
  }
};

template <>
struct MmaOps<WeightType::kQ5_K> {  // d @0 · dmin @2 · scales @4 · qh[32] @16 · qs[128] @48
  static constexpr int kBB = 176, kBE = 256, kCB = 1, kStages = 3, kTable = 8;
  __device__ static float2 table_entry(const uint8_t* blk, int s) { return k_affine_coef(blk, s); }
  __device__ static uint32_t code(uint32_t w, uint32_t h, int s) {
    return ((w >> (4 * (s & 1))) & kLow4) | (((h >> s) & 0x01010101u) << 4);
  }
  __device__ static void block(const uint8_t* pg, const uint8_t* p8, const float2* tg,
                               const float2* t8, int g, int t, const XView& x, int64_t tile0,
                               float& ag, float& a8) {
    const uint32_t qhl_g = ld_u32_a4(pg + 16 + 4 * t);  // qh[l], l = 4t..4t+3
    const uint32_t qhh_g = ld_u32_a4(pg + 32 + 4 * t);  // qh[l], l = 16+4t..
    const uint32_t qhl_8 = ld_u32_a4(p8 + 16 + 4 * t);
    const uint32_t qhh_8 = ld_u32_a4(p8 + 32 + 4 * t);
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const uint32_t lg = ld_u32_a4(pg + 48 + 32 * c + 4 * t);
      const uint32_t hg = ld_u32_a4(pg + 64 + 32 * c + 4 * t);
      const uint32_t l8 = ld_u32_a4(p8 + 48 + 32 * c + 4 * t);
      const uint32_t h8 = ld_u32_a4(p8 + 64 + 32 * c + 4 * t);
#pragma unroll
      for (int hn = 0; hn < 2; ++hn) {
        const int s = 2 * c + hn;
        const int64_t tile = tile0 + s;
        const int4 m = meta_pair(x, tile, t);
        int d[4];
        mma_k32_u8(d, code(lg, qhl_g, s), code(l8, qhl_8, s), code(hg, qhh_g, s),
                   code(h8, qhh_8, s), b_word(x, g, t, 32 * tile), b_word(x, g, t, 32 * tile + 16),
                   kMagic, kMagic);
        k_affine_add(d, m, tg[s], t8[s], tile_sum_x(x, tile, t), ag, a8);
      }
    }
  }
};

template <>
struct MmaOps<WeightType::kQ6_K> {  // ql[128] @0 · qh[64] @128 · scales int8[16] @192 · d @208
  static constexpr int kBB = 210, kBE = 256, kCB = 1, kStages = 3, kTable = 16;
  __device__ static float2 table_entry(const uint8_t* blk, int s) {
    const float sc = static_cast<float>(reinterpret_cast<const int8_t*>(blk + 192)[s]);
    return make_float2(ld_f16(blk + 208) * sc, 0.0f);
  }
  /// Codes (0..63) of columns l0..l0+3 of 32-column group g2 from ql words qa (ql[64hh + l]),
  /// qb (ql[64hh + 32 + l]) and the qh word h (qh[32hh + l]).
  __device__ static uint32_t code(uint32_t qa, uint32_t qb, uint32_t h, int g2) {
    const uint32_t low = ((g2 & 1) ? qb : qa) >> (4 * (g2 >> 1));
    return (low & kLow4) | (((h >> (2 * g2)) & 0x03030303u) << 4);
  }
  __device__ static void block(const uint8_t* pg, const uint8_t* p8, const float2* tg,
                               const float2* t8, int g, int t, const XView& x, int64_t tile0,
                               float& ag, float& a8) {
#pragma unroll 1
    for (int hh = 0; hh < 2; ++hh) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int l0 = 16 * half + 4 * t;
        const uint32_t qa_g = ld_u32_a2(pg + 64 * hh + l0);
        const uint32_t qb_g = ld_u32_a2(pg + 64 * hh + 32 + l0);
        const uint32_t h_g = ld_u32_a2(pg + 128 + 32 * hh + l0);
        const uint32_t qa_8 = ld_u32_a2(p8 + 64 * hh + l0);
        const uint32_t qb_8 = ld_u32_a2(p8 + 64 * hh + 32 + l0);
        const uint32_t h_8 = ld_u32_a2(p8 + 128 + 32 * hh + l0);
#pragma unroll
        for (int g2 = 0; g2 < 4; ++g2) {
          const int s = 8 * hh + 2 * g2 + half;  // sub-block of 16: columns 16s..16s+15
          const int64_t tile = tile0 + 4 * hh + g2;
          const int4 m = meta_pair(x, tile, t);
          const int sums = half == 0 ? m.z : m.w;
          int d[4];
          mma_k16_u8(d, code(qa_g, qb_g, h_g, g2), code(qa_8, qb_8, h_8, g2),
                     b_word(x, g, t, 32 * tile + 16 * half), kMagic - 32 * lo16(sums),
                     kMagic - 32 * hi16(sums));
          const float fa = __int_as_float(m.x), fb = __int_as_float(m.y);
          ag = fmaf(tg[s].x, combine(d[0], d[1], fa, fb), ag);
          a8 = fmaf(t8[s].x, combine(d[2], d[3], fa, fb), a8);
        }
      }
    }
  }
};

// ---- splitting x' into digits ---------------------------------------------------------------------

/// x'[c..c+3] per the source (kPlain, kRmsNorm with `scale`, kSwiGlu).
__device__ __forceinline__ float4 x_prime4(const XSource& s, int64_t c, float scale) {
  const float4 v = __ldg(reinterpret_cast<const float4*>(s.x + c));
  if (s.kind == XKind::kRmsNorm) {
    const float4 w = __ldg(reinterpret_cast<const float4*>(s.norm_w + c));
    return make_float4(__fmul_rn(__fmul_rn(v.x, scale), w.x), __fmul_rn(__fmul_rn(v.y, scale), w.y),
                       __fmul_rn(__fmul_rn(v.z, scale), w.z), __fmul_rn(__fmul_rn(v.w, scale), w.w));
  }
  if (s.kind == XKind::kSwiGlu) {
    const float4 u = __ldg(reinterpret_cast<const float4*>(s.x2 + c));
    return make_float4(kernels::swiglu_value(v.x, u.x), kernels::swiglu_value(v.y, u.y),
                       kernels::swiglu_value(v.z, u.z), kernels::swiglu_value(v.w, u.w));
  }
  return v;
}

/// The RMSNorm scale 1 / sqrt(Σx²/cols + eps) over the whole x (every thread of the CTA calls
/// it; `red`: 32 floats of shared memory).
__device__ __forceinline__ float rms_scale(const XSource& s, int64_t cols, float* red) {
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < cols / 4; i += blockDim.x) {
    const float4 v = __ldg(reinterpret_cast<const float4*>(s.x) + i);
    ss = fmaf(v.x, v.x, ss);
    ss = fmaf(v.y, v.y, ss);
    ss = fmaf(v.z, v.z, ss);
    ss = fmaf(v.w, v.w, ss);
  }
  ss = kernels::block_sum(ss, red);
  return 1.0f / sqrtf(ss / static_cast<float>(cols) + s.eps);
}

/// Low byte of each of four words, packed (byte k from word k).
__device__ __forceinline__ uint32_t pack_low_bytes(uint32_t a, uint32_t b, uint32_t c,
                                                   uint32_t d) {
  return __byte_perm(__byte_perm(a, b, 0x0040), __byte_perm(c, d, 0x0040), 0x5410);
}

/// One warp splits 128 columns [c0, c0 + 128) (4 tiles; lane l holds columns c0 + 4l..+3 in v;
/// `valid`: whether those columns exist — uniform per 8-lane tile group). All 32 lanes call it.
__device__ __forceinline__ void split_128(float4 v, int64_t c0, bool valid, int8_t* dig,
                                          int64_t stride, int4* meta) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  if (!valid) v = make_float4(0.f, 0.f, 0.f, 0.f);
  // Tile maximum over the 8 lanes of the group, as an exponent: e = floor(log2 max) − 5.
  float am = fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w)));
  am = fmaxf(am, __shfl_xor_sync(kernels::kFullMask, am, 1));
  am = fmaxf(am, __shfl_xor_sync(kernels::kFullMask, am, 2));
  am = fmaxf(am, __shfl_xor_sync(kernels::kFullMask, am, 4));
  const int ea = static_cast<int>((__float_as_uint(am) >> 23) & 0xFFu) - 127;
  const bool flush = ea < -100;  // |x'| < 2^-100 in the whole tile: treated as 0
  const int e = ea - 5;
  const float to_digits = flush ? 0.0f : __uint_as_float(static_cast<uint32_t>(127 - e) << 23);
  float r[4] = {v.x * to_digits, v.y * to_digits, v.z * to_digits, v.w * to_digits};  // |r| < 64
  uint32_t word[4];
  int sums[4];
#pragma unroll
  for (int n = 0; n < 4; ++n) {
    uint32_t bits[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float tr = r[i] + kMagicF;  // round to nearest even: digit in the low mantissa bits
      bits[i] = __float_as_uint(tr);
      r[i] = (r[i] - (tr - kMagicF)) * 128.0f;  // exact: the remainder, scaled to the next digit
    }
    word[n] = pack_low_bytes(bits[0], bits[1], bits[2], bits[3]);
    int s = __dp4a(static_cast<int>(word[n]), 0x01010101, 0);
    s += __shfl_xor_sync(kernels::kFullMask, s, 1);
    s += __shfl_xor_sync(kernels::kFullMask, s, 2);  // sum over the 16-column half of the tile
    sums[n] = s;
  }
  float sx = (v.x + v.y) + (v.z + v.w);
  sx += __shfl_xor_sync(kernels::kFullMask, sx, 1);
  sx += __shfl_xor_sync(kernels::kFullMask, sx, 2);
  sx += __shfl_xor_sync(kernels::kFullMask, sx, 4);
  int other[4];  // the other half's sums
#pragma unroll
  for (int n = 0; n < 4; ++n) other[n] = __shfl_xor_sync(kernels::kFullMask, sums[n], 4);
  if (!valid) return;
  const int64_t c = c0 + 4 * lane;
#pragma unroll
  for (int n = 0; n < 4; ++n) *reinterpret_cast<uint32_t*>(dig + n * stride + c) = word[n];
  // Lanes 0, 1, 2 of each 8-lane tile group (all in the tile's low half) write its meta.
  const int q = lane & 7;
  if (q < 3) {
    const int64_t tile = c / 32;
    const auto f = [&](int n) {
      const int fe = e - 7 * n + 127;
      return flush || fe <= 0 ? 0 : fe << 23;
    };
    const auto pack = [](int a, int b) { return (a & 0xFFFF) | (b << 16); };
    int4 out;
    if (q == 0) {
      out = make_int4(f(0), f(1), pack(sums[0], sums[1]), pack(other[0], other[1]));
    } else if (q == 1) {
      out = make_int4(f(2), f(3), pack(sums[2], sums[3]), pack(other[2], other[3]));
    } else {
      out = make_int4(__float_as_int(sx), 0, 0, 0);
    }
    meta[3 * tile + q] = out;
  }
}

/// The CTA splits x' (all columns) into `dig`/`meta`; ends with __syncthreads.
__device__ __forceinline__ void split_x_cta(const XSource& s, int64_t cols, int8_t* dig,
                                            int4* meta, float* red) {
  const float scale = s.kind == XKind::kRmsNorm ? rms_scale(s, cols, red) : 1.0f;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int nw = static_cast<int>(blockDim.x) >> 5;
  const int64_t stride = cols + 16;
  constexpr int kBatch = 4;  // rounds whose loads are in flight together
  for (int64_t r0 = warp; r0 * 128 < cols; r0 += static_cast<int64_t>(kBatch) * nw) {
    float4 v[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int64_t c = (r0 + static_cast<int64_t>(b) * nw) * 128 + 4 * lane;
      v[b] = c < cols ? x_prime4(s, c, scale) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int64_t base = (r0 + static_cast<int64_t>(b) * nw) * 128;
      if (base < cols) split_128(v[b], base, base + 4 * lane < cols, dig, stride, meta);
    }
  }
  __syncthreads();
}

// ---- the GEMV kernel ------------------------------------------------------------------------------

template <WeightType T>
struct MmaLayout {
  using Ops = MmaOps<T>;
  static constexpr int kRegion = (Ops::kCB * Ops::kBB + 30 + 15) / 16 * 16;  ///< one row
  static constexpr int kStageBytes = kTileRows * kRegion;
  static constexpr int kTableBytes = kTileRows * Ops::kCB * Ops::kTable * 8;
  static constexpr int kWarpBytes = Ops::kStages * kStageBytes + kTableBytes;
  static constexpr int kFixedBytes = kWarps * kWarpBytes + 2 * kWarps * kTileRows * 4 + 32 * 4;
};

/// Shared-memory bytes of the kernel: x' split (unless pre-split), per-warp stages, partials.
template <WeightType T>
int64_t mma_smem_bytes(int64_t cols, bool presplit) {
  return (presplit ? 0 : (x_split_bytes(cols) + 15) / 16 * 16) + MmaLayout<T>::kFixedBytes;
}

template <WeightType T>
__global__ void __launch_bounds__(kThreads) gemv_mma_kernel(const KernelArgs a) {
  using Ops = MmaOps<T>;
  using L = MmaLayout<T>;
  constexpr int kBB = Ops::kBB;
  constexpr int kS = Ops::kStages;
  extern __shared__ __align__(16) uint8_t smem[];

  const bool presplit = a.x.kind == XKind::kPreSplit;
  const int64_t split_bytes = presplit ? 0 : (x_split_bytes(a.cols) + 15) / 16 * 16;
  uint8_t* warp_base = smem + split_bytes;
  float* partial = reinterpret_cast<float*>(warp_base + kWarps * L::kWarpBytes);
  float* red = partial + 2 * kWarps * kTileRows;

  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int g = lane >> 2;
  const int t = lane & 3;
  const int ks = warp % a.ksplit;
  const int rg = warp / a.ksplit;
  const int rgs = kWarps / a.ksplit;
  uint8_t* wsm = warp_base + warp * L::kWarpBytes;
  float2* table = reinterpret_cast<float2*>(wsm + kS * L::kStageBytes);

  const int64_t nb = a.cols / Ops::kBE;  // blocks per row
  const int64_t row_bytes = nb * kBB;
  const int64_t nchunks = ceil_div<int64_t>(nb, Ops::kCB);
  const int64_t tiles_per_block = Ops::kBE / 32;

  // (task, chunk) items of this warp in order; `issue_*` runs kS − 1 items ahead of compute.
  int64_t issue_task = blockIdx.x;
  int64_t issue_chunk = ks;
  const auto normalize = [&](int64_t& task, int64_t& chunk) {
    while (task < a.ntasks && chunk >= nchunks) {
      task += gridDim.x;
      chunk = ks;
    }
  };
  normalize(issue_task, issue_chunk);
  const auto row_ptr = [&](int64_t task, int r) {
    const int64_t row = (task * rgs + rg) * kTileRows + r;
    return a.w + kernels::min64(row, a.rows - 1) * row_bytes;
  };
  // Copies the 16 rows' chunk into stage `buf`: lanes 2r and 2r+1 copy row r's 16-byte aligned
  // span (it may start up to 15 bytes early, inside W; the last piece stops at the chunk's end).
  const auto issue = [&](int buf) {
    if (issue_task < a.ntasks) {
      const int r = lane >> 1;
      const int64_t blk0 = issue_chunk * Ops::kCB;
      const int64_t bytes = kernels::min64(Ops::kCB, nb - blk0) * kBB;
      const uint8_t* start = row_ptr(issue_task, r) + blk0 * kBB;
      const int lead = static_cast<int>(reinterpret_cast<uintptr_t>(start) & 15u);
      const uint8_t* base = start - lead;
      const int span = lead + static_cast<int>(bytes);
      uint8_t* dst = wsm + buf * L::kStageBytes + r * L::kRegion;
      for (int o = (lane & 1) * 16; o < span; o += 32) {
        kernels::cp_async_16(dst + o, base + o, min(16, span - o));
      }
      issue_chunk += a.ksplit;
      normalize(issue_task, issue_chunk);
    }
    kernels::cp_async_commit();
  };

#pragma unroll
  for (int s = 0; s < kS - 1; ++s) issue(s);  // weights only: before the PDL wait
  kernels::grid_dependency_trigger();
  kernels::grid_dependency_wait();

  XView xv;
  xv.stride = a.cols + 16;
  if (presplit) {
    xv.dig = static_cast<const int8_t*>(a.x.split);
    xv.meta = reinterpret_cast<const int4*>(xv.dig + x_split_digit_bytes(a.cols));
  } else {
    int8_t* dig = reinterpret_cast<int8_t*>(smem);
    int4* meta = reinterpret_cast<int4*>(smem + x_split_digit_bytes(a.cols));
    split_x_cta(a.x, a.cols, dig, meta, red);
    xv.dig = dig;
    xv.meta = meta;
  }

  int64_t item = 0;
  int parity = 0;
  for (int64_t task = blockIdx.x; task < a.ntasks; task += gridDim.x, parity ^= 1) {
    float acc_g = 0.0f;
    float acc_8 = 0.0f;
    for (int64_t chunk = ks; chunk < nchunks; chunk += a.ksplit, ++item) {
      issue(static_cast<int>((item + kS - 1) % kS));
      kernels::cp_async_wait<kS - 1>();
      __syncwarp();
      const int buf = static_cast<int>(item % kS);
      const int64_t blk0 = chunk * Ops::kCB;
      const int nblk = static_cast<int>(kernels::min64(Ops::kCB, nb - blk0));
      const uint8_t* stage = wsm + buf * L::kStageBytes;
      const auto region = [&](int r) {
        const uint8_t* start = row_ptr(task, r) + blk0 * kBB;
        return stage + r * L::kRegion + static_cast<int>(reinterpret_cast<uintptr_t>(start) & 15u);
      };
      const uint8_t* pg = region(g);
      const uint8_t* p8 = region(g + 8);
      if constexpr (Ops::kTable > 0) {
        constexpr int kPer = Ops::kCB * Ops::kTable;  // entries per row
        for (int e = lane; e < kTileRows * kPer; e += 32) {
          const int r = e / kPer;
          const int b = (e / Ops::kTable) % Ops::kCB;
          if (b < nblk) table[e] = Ops::table_entry(region(r) + b * kBB, e % Ops::kTable);
        }
        __syncwarp();
      }
      for (int b = 0; b < nblk; ++b) {
        const float2* tg = table + (g * Ops::kCB + b) * Ops::kTable;
        const float2* t8 = table + ((g + 8) * Ops::kCB + b) * Ops::kTable;
        Ops::block(pg + b * kBB, p8 + b * kBB, tg, t8, g, t, xv, (blk0 + b) * tiles_per_block,
                   acc_g, acc_8);
      }
      __syncwarp();  // stage `buf` (and the table) are refilled later
    }
    // Threads t = 0, 1 hold digits (0,1) and (2,3) of rows g, g + 8; t = 2, 3 hold copies.
    if (t >= 2) {
      acc_g = 0.0f;
      acc_8 = 0.0f;
    }
    acc_g += __shfl_xor_sync(kernels::kFullMask, acc_g, 1);
    acc_8 += __shfl_xor_sync(kernels::kFullMask, acc_8, 1);
    const int64_t row0 = (task * rgs + rg) * kTileRows;
    if (a.ksplit == 1) {
      if (t == 0) {
        if (row0 + g < a.rows) kernels::store_row(a.y, row0 + g, acc_g);
        if (row0 + g + 8 < a.rows) kernels::store_row(a.y, row0 + g + 8, acc_8);
      }
    } else {
      float* pb = partial + parity * kWarps * kTileRows;
      if (t == 0) {
        pb[warp * kTileRows + g] = acc_g;
        pb[warp * kTileRows + g + 8] = acc_8;
      }
      kernels::named_barrier(1 + rg, a.ksplit * 32);
      if (ks == 0 && lane < kTileRows && row0 + lane < a.rows) {
        float s = 0.0f;
        for (int k = 0; k < a.ksplit; ++k) s += pb[(rg * a.ksplit + k) * kTileRows + lane];
        kernels::store_row(a.y, row0 + lane, s);
      }
    }
  }
  kernels::cp_async_wait<0>();  // no copy may be in flight when the CTA exits
}

/// The standalone split: CTA b handles columns [1024b, 1024b + 1024).
__global__ void __launch_bounds__(kThreads) prepare_x_kernel(const XSource s, int64_t cols,
                                                             int8_t* dig, int4* meta) {
  __shared__ float red[32];
  kernels::grid_dependency_trigger();
  kernels::grid_dependency_wait();
  const float scale = s.kind == XKind::kRmsNorm ? rms_scale(s, cols, red) : 1.0f;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t base = (static_cast<int64_t>(blockIdx.x) * kWarps + warp) * 128;
  if (base >= cols) return;  // uniform per warp
  const int64_t c = base + 4 * lane;
  const float4 v = c < cols ? x_prime4(s, c, scale) : make_float4(0.f, 0.f, 0.f, 0.f);
  split_128(v, base, c < cols, dig, cols + 16, meta);
}

// ---- host side ------------------------------------------------------------------------------------


constexpr int64_t kMaxSmem = 227 * 1024;

template <typename F>
bool dispatch_quant(WeightType t, F&& f) {
  switch (t) {
    case WeightType::kQ8_0:
      f.template operator()<WeightType::kQ8_0>();
      return true;
    case WeightType::kQ4_0:
      f.template operator()<WeightType::kQ4_0>();
      return true;
    case WeightType::kQ4_1:
      f.template operator()<WeightType::kQ4_1>();
      return true;
    case WeightType::kQ5_0:
      f.template operator()<WeightType::kQ5_0>();
      return true;
    case WeightType::kQ5_1:
      f.template operator()<WeightType::kQ5_1>();
      return true;
    case WeightType::kQ4_K:
      f.template operator()<WeightType::kQ4_K>();
      return true;
    case WeightType::kQ5_K:
      f.template operator()<WeightType::kQ5_K>();
      return true;
    case WeightType::kQ6_K:
      f.template operator()<WeightType::kQ6_K>();
      return true;
    default:
      return false;
  }
}

}  // namespace

bool mma_supported(WeightType t, int64_t cols) {
  bool ok = false;
  dispatch_quant(t, [&]<WeightType T>() {
    ok = cols % MmaOps<T>::kBE == 0 && mma_smem_bytes<T>(cols, true) <= kMaxSmem;
  });
  return ok;
}

Plan mma_plan(WeightType t, int64_t rows, int64_t cols, bool presplit, int sms) {
  Plan p;
  dispatch_quant(t, [&]<WeightType T>() {
    using Ops = MmaOps<T>;
    p.block = kThreads;
    p.rows_per_warp = kTileRows;
    const int64_t smem = mma_smem_bytes<T>(cols, presplit);
    if (smem > kMaxSmem) return;  // grid 0: not possible (caller checks)
    p.smem = static_cast<int>(smem);
    const int ctas =
        std::max(1, ctas_per_sm(reinterpret_cast<const void*>(&gemv_mma_kernel<T>), kThreads, p.smem));
    const int64_t max_grid = static_cast<int64_t>(sms) * ctas;
    const int64_t nchunks = ceil_div<int64_t>(cols / Ops::kBE, Ops::kCB);
    double best = -1.0;
    for (int ks = 1; ks <= kWarps; ks *= 2) {
      const int64_t tasks =
          ceil_div<int64_t>(rows, static_cast<int64_t>(kWarps / ks) * kTileRows);
      const int64_t grid = std::min(tasks, max_grid);
      const double per_cta = static_cast<double>(tasks) / static_cast<double>(grid);
      const double balance = per_cta / std::ceil(per_cta);
      const double fill = static_cast<double>(grid) / static_cast<double>(max_grid);
      const int64_t cpw = ceil_div<int64_t>(nchunks, ks);
      const double col_use = static_cast<double>(nchunks) / static_cast<double>(cpw * ks);
      // Few chunks per warp leave the pipeline mostly empty: prefer >= kStages chunks.
      const double depth = std::min(1.0, static_cast<double>(cpw) / Ops::kStages + 0.25);
      const double row_use =
          static_cast<double>(rows) / static_cast<double>(tasks * (kWarps / ks) * kTileRows);
      const double score = balance * col_use * depth * row_use * std::min(1.0, 0.5 + fill);
      if (score > best + 1e-9) {
        best = score;
        p.ksplit = ks;
        p.ntasks = tasks;
        p.grid = grid;
      }
    }
  });
  return p;
}

void mma_launch(WeightType t, const KernelArgs& a, const Plan& p, cudaStream_t stream) {
  KernelArgs args = a;
  args.ksplit = p.ksplit;
  args.ntasks = p.ntasks;
  void* params[] = {&args};
  dispatch_quant(t, [&]<WeightType T>() {
    launch_with_attrs(reinterpret_cast<const void*>(&gemv_mma_kernel<T>), params,
                      dim3(static_cast<unsigned>(p.grid)), dim3(static_cast<unsigned>(p.block)),
                      static_cast<size_t>(p.smem), a.pdl != 0, stream);
  });
}

void prepare_x_launch(const XSource& x, int64_t cols, void* out, int pdl, cudaStream_t stream) {
  XSource s = x;
  int64_t c = cols;
  auto* dig = static_cast<int8_t*>(out);
  auto* meta = reinterpret_cast<int4*>(dig + x_split_digit_bytes(cols));
  void* params[] = {&s, &c, &dig, &meta};
  const int64_t grid = ceil_div<int64_t>(cols, 128 * kWarps);
  launch_with_attrs(reinterpret_cast<const void*>(&prepare_x_kernel), params,
                    dim3(static_cast<unsigned>(grid)), dim3(kThreads), 0, pdl != 0, stream);
}

}  // namespace decodebench::cuda::gemv_impl
