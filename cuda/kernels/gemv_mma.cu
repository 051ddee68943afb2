// GEMV for the quantized weight types on the int8 tensor cores: "mma" kernel.
//
// Why: at HBM speed a 4-bit GEMV must turn ~28 weights per clock and SM into products; unpacking
// each code to a float (PRMT + FADD) and multiplying (FFMA) costs ~4 instructions per weight,
// more than the SM can issue. Here the codes stay integers: a warp multiplies 16 rows × 32 codes
// (u8/s8 as stored; the code bias goes into the accumulator's start value) with x' written as
// four signed 7-bit digits per value (x' = 2^e·(X0 + X1/128 + X2/128² + X3/128³), e per 32
// columns, exact to 2^-22 of the tile's largest |x'|) in mma.m16n8k32.s8; integer products and
// sums are exact. Each MMA covers two 16-column pieces of two blocks (k 0..15 against digit
// columns 0..3, k 16..31 against columns 4..7), so all eight result columns are used; per block
// and row the four digit sums are combined in f32 with the block scale (and minimum). Results
// differ from the CPU's f32 dot product only by f32 rounding of per-block terms and the 2^-22
// digit residue.
//
// Layout. A CTA of 8 warps runs a persistent loop over tasks (row tiles of 16 rows per warp
// slot); the warps of a slot split the row's chunks (ksplit) and add their partial sums in a
// fixed order. Each warp streams its 16 rows × `chunk` blocks per stage into shared memory with
// cp.async (blocks are 18, 20, 22, ... bytes: staging keeps the global loads 16-byte and
// coalesced), kStages deep, continuously across tasks. x' is split once per CTA into shared
// memory, or copied there pre-split (prepare_x_launch). The first stages are issued before the
// PDL wait.
#include <algorithm>

#include "core/error.hpp"
#include "cuda/check.hpp"
#include "cuda/kernels/common.cuh"
#include "cuda/kernels/dequant.cuh"
#include "cuda/kernels/gemv_device.cuh"
#include "cuda/kernels/gemv_impl.cuh"
#include "cuda/kernels/x_split.cuh"

namespace decodebench::cuda::gemv_impl {
namespace {

using kernels::ceil_div;
using kernels::ld_f16;
using kernels::ld_u32_a2;
using kernels::ld_u32_a4;

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kTileRows = 16;
constexpr uint32_t kLow4 = 0x0F0F0F0Fu;

// ---- tensor-core MMA wrappers ------------------------------------------------------------------

/// D = A·B + C for one m16n8k32 tile: A = 16 rows × 32 codes (u8, or s8 for kSignedA), B = 32
/// columns × 8 digit columns (s8). Registers as in the PTX fragment layout: thread (g = lane/4,
/// t = lane%4) holds A rows g and g+8 at k = 4t..4t+3 (a0, a1) and k = 16+4t.. (a2, a3), B column
/// g at k = 4t.. (b0) and 16+4t.. (b1), and C/D rows g, g+8 × columns 2t, 2t+1.
template <bool kSignedA>
__device__ __forceinline__ void mma_k32(int (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                        uint32_t a3, uint32_t b0, uint32_t b1, const int (&c)[4]) {
  if constexpr (kSignedA) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%11,%12,%13};\n"
        : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(c[0]), "r"(c[1]), "r"(c[2]),
          "r"(c[3]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%11,%12,%13};\n"
        : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(c[0]), "r"(c[1]), "r"(c[2]),
          "r"(c[3]));
  }
}

/// This thread's two digit columns of C as one value in units of the second digit's scale:
/// da·128 + db (exact in int32: |d| < 2^20); its float rounds to 24 bits when |·| >= 2^24.
__device__ __forceinline__ float combine(int da, int db) {
  return static_cast<float>(da * 128 + db);
}

// ---- x' in split form, in shared memory
// ----------------------------------------------------------
//
// Pairing. One MMA multiplies 16 rows × 32 codes, but x' has only 4 digit columns of the 8. So
// every MMA covers two "pieces" of 16 columns from two different blocks (or sub-blocks): k 0..15
// = piece 0 against digit columns 0..3, k 16..31 = piece 1 against digit columns 4..7 (the B
// operand is zero across the pieces). Thread t then owns piece t/2, digits 2(t%2), 2(t%2)+1, and
// all 32 threads' results are useful. Two MMAs (first and second halves of each block's 32
// columns) accumulate into the same C, so C ends with whole-block sums.

struct XView {
  const int8_t* dig;  ///< [4][stride], shared memory
  int stride;         ///< cols + 16
  const int4* meta;   ///< [cols / 32][3], shared memory
};

/// Per-lane constants of the fragment layout.
struct Lane {
  int g;              ///< lane / 4: A rows g, g + 8; B column g
  int t;              ///< lane % 4
  int piece;          ///< t / 2: which piece of each MMA this thread's results belong to
  bool low;           ///< g < 4: this lane's B column is a digit of piece 0
  const int8_t* dig;  ///< digit row (g % 4) + 4t
};

__device__ __forceinline__ uint32_t lds_u32(const int8_t* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

/// B words for an MMA whose pieces start at x columns c0 (piece 0) and c1 (piece 1); `two`:
/// whether piece 1 exists.
__device__ __forceinline__ void b_words(const Lane& l, int64_t c0, int64_t c1, bool two,
                                        uint32_t* b0, uint32_t* b1) {
  const uint32_t v = lds_u32(l.dig + (l.low ? c0 : c1));
  *b0 = l.low ? v : 0u;
  *b1 = (l.low || !two) ? 0u : v;
}

/// Accumulator start for this thread's two columns: −kBias·(digit sums of its piece), so that C
/// ends as Σ (code − kBias)·digit.
template <int kBias>
__device__ __forceinline__ void c_init(int sa, int sb, int (&c)[4]) {
  c[0] = -kBias * sa;
  c[1] = -kBias * sb;
  c[2] = c[0];
  c[3] = c[1];
}

/// Σ x' over a tile (only threads t % 2 == 0 add it, once per row and piece).
__device__ __forceinline__ float tile_sum_x(const XView& x, int64_t tile, const Lane& l) {
  return (l.t & 1) == 0 ? __int_as_float(x.meta[3 * tile + 2].x) : 0.0f;
}

/// Adds this thread's digits of C (rows g, g+8) with the rows' scales: f_a·D_a + f_b·D_b =
/// f_b·(128·D_a + D_b), since f_a = 128·f_b.
__device__ __forceinline__ void epilogue(const int (&d)[4], const int4& m, float sg, float s8,
                                         float& ag, float& a8) {
  const float fb = __int_as_float(m.y);
  ag = fmaf(sg * fb, combine(d[0], d[1]), ag);
  a8 = fmaf(s8 * fb, combine(d[2], d[3]), a8);
}

// ---- per-type code ------------------------------------------------------------------------------
// stage(pg, p8, nblk, tg, t8, l, x, tile0, ag, a8): adds the stage's nblk blocks of row g (pg) and
// row g + 8 (p8) times x' (32-column tiles from tile0) to the rows' accumulators. tg/t8: the rows'
// coefficient tables (K-quants: kTable entries per block). kCB: the most blocks per stage.

/// Legacy 32-value blocks with 4-bit codes (+ an optional fifth bit): Q4_0, Q4_1, Q5_0, Q5_1.
template <int kBB_, int kD, int kM, int kQh, int kQs, int kBias, bool kA4>
struct Legacy4 {
  static constexpr int kBB = kBB_, kBE = 32, kCB = 8, kStages = 4, kTable = 0;
  __device__ static uint32_t ld(const uint8_t* p) { return kA4 ? ld_u32_a4(p) : ld_u32_a2(p); }
  /// Codes of columns 4t..4t+3 (lo) and 16+4t.. (hi) of a block.
  __device__ static void words(const uint8_t* blk, int t, uint32_t* lo, uint32_t* hi) {
    const uint32_t w = ld(blk + kQs + 4 * t);
    *lo = w & kLow4;
    *hi = (w >> 4) & kLow4;
    if constexpr (kQh >= 0) {
      const uint32_t h = ld(blk + kQh);
      *lo |= kernels::spread_bit4((h >> (4 * t)) & 0xFu);
      *hi |= kernels::spread_bit4((h >> (16 + 4 * t)) & 0xFu);
    }
  }
  __device__ static void stage(const uint8_t* pg, const uint8_t* p8, int nblk, const float2*,
                               const float2*, const Lane& l, const XView& x, int64_t tile0,
                               float& ag, float& a8) {
#pragma unroll 2
    for (int b = 0; b < nblk; b += 2) {
      const bool two = b + 1 < nblk;
      const uint8_t* qg = pg + b * kBB;
      const uint8_t* q8 = p8 + b * kBB;
      uint32_t lg0, hg0, l80, h80, lg1 = 0, hg1 = 0, l81 = 0, h81 = 0;
      words(qg, l.t, &lg0, &hg0);
      words(q8, l.t, &l80, &h80);
      if (two) {
        words(qg + kBB, l.t, &lg1, &hg1);
        words(q8 + kBB, l.t, &l81, &h81);
      }
      const int64_t t0 = tile0 + b;
      const int64_t tile = two ? t0 + l.piece : t0;
      const int4 m = x.meta[3 * tile + (l.t & 1)];
      int c[4];
      c_init<kBias>(m.z, m.w, c);
      uint32_t b0, b1;
      int d[4];
      b_words(l, 32 * t0, 32 * t0 + 32, two, &b0, &b1);
      mma_k32<false>(d, lg0, l80, lg1, l81, b0, b1, c);
      b_words(l, 32 * t0 + 16, 32 * t0 + 48, two, &b0, &b1);
      mma_k32<false>(d, hg0, h80, hg1, h81, b0, b1, d);
      if (l.piece == 0 || two) {
        const uint8_t* bg = qg + l.piece * kBB;
        const uint8_t* b8 = q8 + l.piece * kBB;
        epilogue(d, m, ld_f16(bg + kD), ld_f16(b8 + kD), ag, a8);
        if constexpr (kM >= 0) {
          const float sx = tile_sum_x(x, tile, l);
          ag = fmaf(ld_f16(bg + kM), sx, ag);
          a8 = fmaf(ld_f16(b8 + kM), sx, a8);
        }
      }
    }
  }
};

template <WeightType T>
struct MmaOps;

template <>  // d @0 · qs[16] @2
struct MmaOps<WeightType::kQ4_0> : Legacy4<18, 0, -1, -1, 2, 8, false> {};
template <>  // d @0 · m @2 · qs[16] @4 (4-byte aligned)
struct MmaOps<WeightType::kQ4_1> : Legacy4<20, 0, 2, -1, 4, 0, true> {};
template <>  // d @0 · qh u32 @2 · qs[16] @6
struct MmaOps<WeightType::kQ5_0> : Legacy4<22, 0, -1, 2, 6, 16, false> {};
template <>  // d @0 · m @2 · qh u32 @4 · qs[16] @8 (8-byte aligned)
struct MmaOps<WeightType::kQ5_1> : Legacy4<24, 0, 2, 4, 8, 0, true> {};

template <>
struct MmaOps<WeightType::kQ8_0> {  // d @0 · qs int8[32] @2
  static constexpr int kBB = 34, kBE = 32, kCB = 4, kStages = 4, kTable = 0;
  __device__ static void stage(const uint8_t* pg, const uint8_t* p8, int nblk, const float2*,
                               const float2*, const Lane& l, const XView& x, int64_t tile0,
                               float& ag, float& a8) {
#pragma unroll 2
    for (int b = 0; b < nblk; b += 2) {
      const bool two = b + 1 < nblk;
      const uint8_t* qg = pg + b * kBB;
      const uint8_t* q8 = p8 + b * kBB;
      const int64_t t0 = tile0 + b;
      const int64_t tile = two ? t0 + l.piece : t0;
      const int4 m = x.meta[3 * tile + (l.t & 1)];
      int c[4];
      c_init<0>(m.z, m.w, c);
      uint32_t b0, b1;
      int d[4];
      const int o = 2 + 4 * l.t;
      b_words(l, 32 * t0, 32 * t0 + 32, two, &b0, &b1);
      mma_k32<true>(d, ld_u32_a2(qg + o), ld_u32_a2(q8 + o), two ? ld_u32_a2(qg + kBB + o) : 0u,
                    two ? ld_u32_a2(q8 + kBB + o) : 0u, b0, b1, c);
      b_words(l, 32 * t0 + 16, 32 * t0 + 48, two, &b0, &b1);
      mma_k32<true>(d, ld_u32_a2(qg + o + 16), ld_u32_a2(q8 + o + 16),
                    two ? ld_u32_a2(qg + kBB + o + 16) : 0u,
                    two ? ld_u32_a2(q8 + kBB + o + 16) : 0u, b0, b1, d);
      if (l.piece == 0 || two) {
        epilogue(d, m, ld_f16(qg + l.piece * kBB), ld_f16(q8 + l.piece * kBB), ag, a8);
      }
    }
  }
};

/// Q4_K/Q5_K table entry s (sub-block 0..7): {d·sc_s, dmin·mn_s}.
__device__ __forceinline__ float2 k_affine_coef(const uint8_t* blk, int s) {
  int sc, mn;
  kernels::k_scale_min(blk + 4, s, &sc, &mn);
  return make_float2(ld_f16(blk) * static_cast<float>(sc),
                     ld_f16(blk + 2) * static_cast<float>(mn));
}

/// Q4_K (kQh = false) and Q5_K (kQh = true): one super-block of 256 per stage; sub-blocks 2c and
/// 2c+1 (low / high nibbles of the same 32 code bytes) are the two pieces of MMA pair c.
template <int kBB_, int kQs, bool kQh>
struct KAffine {
  static constexpr int kBB = kBB_, kBE = 256, kCB = 1, kStages = 3, kTable = 8;
  __device__ static float2 table_entry(const uint8_t* blk, int s) { return k_affine_coef(blk, s); }
  __device__ static uint32_t code(uint32_t w, uint32_t h, int s) {
    uint32_t q = (w >> (4 * (s & 1))) & kLow4;
    if constexpr (kQh) q |= ((h >> s) & 0x01010101u) << 4;
    return q;
  }
  __device__ static void stage(const uint8_t* pg, const uint8_t* p8, int, const float2* tg,
                               const float2* t8, const Lane& l, const XView& x, int64_t tile0,
                               float& ag, float& a8) {
    const int t = l.t;
    uint32_t hlg = 0, hhg = 0, hl8 = 0, hh8 = 0;
    if constexpr (kQh) {
      hlg = ld_u32_a4(pg + 16 + 4 * t);  // qh[l], l = 4t..4t+3
      hhg = ld_u32_a4(pg + 32 + 4 * t);  // qh[l], l = 16+4t..
      hl8 = ld_u32_a4(p8 + 16 + 4 * t);
      hh8 = ld_u32_a4(p8 + 32 + 4 * t);
    }
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const uint32_t wlg = ld_u32_a4(pg + kQs + 32 * c + 4 * t);
      const uint32_t whg = ld_u32_a4(pg + kQs + 16 + 32 * c + 4 * t);
      const uint32_t wl8 = ld_u32_a4(p8 + kQs + 32 * c + 4 * t);
      const uint32_t wh8 = ld_u32_a4(p8 + kQs + 16 + 32 * c + 4 * t);
      const int64_t t0 = tile0 + 2 * c;
      const int64_t tile = t0 + l.piece;
      const int s = 2 * c + l.piece;
      const int4 m = x.meta[3 * tile + (t & 1)];
      int cc[4];
      c_init<0>(m.z, m.w, cc);
      uint32_t b0, b1;
      int d[4];
      b_words(l, 32 * t0, 32 * t0 + 32, true, &b0, &b1);
      mma_k32<false>(d, code(wlg, hlg, 2 * c), code(wl8, hl8, 2 * c), code(wlg, hlg, 2 * c + 1),
                     code(wl8, hl8, 2 * c + 1), b0, b1, cc);
      b_words(l, 32 * t0 + 16, 32 * t0 + 48, true, &b0, &b1);
      mma_k32<false>(d, code(whg, hhg, 2 * c), code(wh8, hh8, 2 * c), code(whg, hhg, 2 * c + 1),
                     code(wh8, hh8, 2 * c + 1), b0, b1, d);
      epilogue(d, m, tg[s].x, t8[s].x, ag, a8);
      const float sx = tile_sum_x(x, tile, l);
      ag = fmaf(-tg[s].y, sx, ag);
      a8 = fmaf(-t8[s].y, sx, a8);
    }
  }
};

template <>  // d @0 · dmin @2 · scales[12] @4 · qs[128] @16
struct MmaOps<WeightType::kQ4_K> : KAffine<144, 16, false> {};
template <>  // d @0 · dmin @2 · scales @4 · qh[32] @16 · qs[128] @48
struct MmaOps<WeightType::kQ5_K> : KAffine<176, 48, true> {};

template <>
struct MmaOps<WeightType::kQ6_K> {  // ql[128] @0 · qh[64] @128 · scales int8[16] @192 · d @208
  static constexpr int kBB = 210, kBE = 256, kCB = 1, kStages = 3, kTable = 16;
  __device__ static float2 table_entry(const uint8_t* blk, int s) {
    const float sc = static_cast<float>(reinterpret_cast<const int8_t*>(blk + 192)[s]);
    return make_float2(ld_f16(blk + 208) * sc, 0.0f);
  }
  /// Codes (0..63) of 4 columns of 32-column group g2 from ql words qa (ql[64hh + l]), qb
  /// (ql[64hh + 32 + l]) and the qh word h (qh[32hh + l]).
  __device__ static uint32_t code(uint32_t qa, uint32_t qb, uint32_t h, int g2) {
    const uint32_t low = ((g2 & 1) ? qb : qa) >> (4 * (g2 >> 1));
    return (low & kLow4) | (((h >> (2 * g2)) & 0x03030303u) << 4);
  }
  __device__ static void stage(const uint8_t* pg, const uint8_t* p8, int, const float2* tg,
                               const float2* t8, const Lane& l, const XView& x, int64_t tile0,
                               float& ag, float& a8) {
    const int t = l.t;
#pragma unroll 1
    for (int hh = 0; hh < 2; ++hh) {
      // Half 0 (columns l = 4t..) is piece 0, half 1 (l = 16+4t..) piece 1 of each tile's MMA.
      const uint32_t qa0g = ld_u32_a2(pg + 64 * hh + 4 * t);
      const uint32_t qb0g = ld_u32_a2(pg + 64 * hh + 32 + 4 * t);
      const uint32_t h0g = ld_u32_a2(pg + 128 + 32 * hh + 4 * t);
      const uint32_t qa1g = ld_u32_a2(pg + 64 * hh + 16 + 4 * t);
      const uint32_t qb1g = ld_u32_a2(pg + 64 * hh + 48 + 4 * t);
      const uint32_t h1g = ld_u32_a2(pg + 128 + 32 * hh + 16 + 4 * t);
      const uint32_t qa08 = ld_u32_a2(p8 + 64 * hh + 4 * t);
      const uint32_t qb08 = ld_u32_a2(p8 + 64 * hh + 32 + 4 * t);
      const uint32_t h08 = ld_u32_a2(p8 + 128 + 32 * hh + 4 * t);
      const uint32_t qa18 = ld_u32_a2(p8 + 64 * hh + 16 + 4 * t);
      const uint32_t qb18 = ld_u32_a2(p8 + 64 * hh + 48 + 4 * t);
      const uint32_t h18 = ld_u32_a2(p8 + 128 + 32 * hh + 16 + 4 * t);
#pragma unroll
      for (int g2 = 0; g2 < 4; ++g2) {
        const int64_t tile = tile0 + 4 * hh + g2;  // columns 128hh + 32g2 .. +31
        const int s = 8 * hh + 2 * g2 + l.piece;   // 16-column sub-block of this thread's piece
        const int4 m = x.meta[3 * tile + (t & 1)];
        const int4 e = x.meta[3 * tile + 2];
        const int packed = (t & 1) == 0 ? e.y : e.z;  // Σlo of this thread's digit pair
        const int lo_a = static_cast<int>(static_cast<int16_t>(packed));
        const int lo_b = packed >> 16;
        int cc[4];
        if (l.piece == 0) {
          c_init<32>(lo_a, lo_b, cc);
        } else {
          c_init<32>(m.z - lo_a, m.w - lo_b, cc);
        }
        uint32_t b0, b1;
        int d[4];
        b_words(l, 32 * tile, 32 * tile + 16, true, &b0, &b1);
        mma_k32<false>(d, code(qa0g, qb0g, h0g, g2), code(qa08, qb08, h08, g2),
                       code(qa1g, qb1g, h1g, g2), code(qa18, qb18, h18, g2), b0, b1, cc);
        epilogue(d, m, tg[s].x, t8[s].x, ag, a8);
      }
    }
  }
};

// ---- splitting x' into digits
// ---------------------------------------------------------------------

/// x'[c..c+3] per the source (kPlain, kRmsNorm with `scale`, kSwiGlu).
__device__ __forceinline__ float4 x_prime4(const XSource& s, int64_t c, float scale) {
  const float4 v = __ldg(reinterpret_cast<const float4*>(s.x + c));
  if (s.kind == XKind::kRmsNorm) {
    const float4 w = __ldg(reinterpret_cast<const float4*>(s.norm_w + c));
    return make_float4(__fmul_rn(__fmul_rn(v.x, scale), w.x), __fmul_rn(__fmul_rn(v.y, scale), w.y),
                       __fmul_rn(__fmul_rn(v.z, scale), w.z),
                       __fmul_rn(__fmul_rn(v.w, scale), w.w));
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

/// The CTA splits x' (all columns) into `dig`/`meta`; ends with __syncthreads.
__device__ __forceinline__ void split_x_cta(const XSource& s, int64_t cols, int8_t* dig, int4* meta,
                                            float* red) {
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

// ---- the GEMV kernel
// ------------------------------------------------------------------------------

template <WeightType T>
struct MmaLayout {
  using Ops = MmaOps<T>;
  static_assert(Ops::kCB * Ops::kBB <= 482, "a stage row must fit 32 pieces of 16 bytes");
  static constexpr int kRegion = (Ops::kCB * Ops::kBB + 30 + 15) / 16 * 16;  ///< one row
  static constexpr int kStageBytes = kTileRows * kRegion;
  static constexpr int kTableBytes = kTileRows * Ops::kCB * Ops::kTable * 8;
  static constexpr int kWarpBytes = Ops::kStages * kStageBytes + kTableBytes;
  static constexpr int kFixedBytes = kWarps * kWarpBytes + 2 * kWarps * kTileRows * 4 + 32 * 4;
};

/// Shared-memory bytes of the kernel: x' split, per-warp stages, partials.
template <WeightType T>
int64_t mma_smem_bytes(int64_t cols) {
  return x_split_mma_bytes(cols) + MmaLayout<T>::kFixedBytes;
}

template <WeightType T>
__global__ void __launch_bounds__(kThreads, 2) gemv_mma_kernel(const KernelArgs a) {
  using Ops = MmaOps<T>;
  using L = MmaLayout<T>;
  constexpr int kBB = Ops::kBB;
  constexpr int kS = Ops::kStages;
  extern __shared__ __align__(16) uint8_t smem[];

  const int64_t split_bytes = x_split_mma_bytes(a.cols);
  uint8_t* warp_base = smem + split_bytes;
  float* partial = reinterpret_cast<float*>(warp_base + kWarps * L::kWarpBytes);
  float* red = partial + 2 * kWarps * kTileRows;
  int8_t* dig = reinterpret_cast<int8_t*>(smem);
  int4* meta = reinterpret_cast<int4*>(smem + x_split_digit_bytes(a.cols));

  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int ks = warp % a.ksplit;
  const int rg = warp / a.ksplit;
  const int rgs = kWarps / a.ksplit;
  uint8_t* wsm = warp_base + warp * L::kWarpBytes;
  float2* table = reinterpret_cast<float2*>(wsm + kS * L::kStageBytes);
  Lane ln;
  ln.g = lane >> 2;
  ln.t = lane & 3;
  ln.piece = ln.t >> 1;
  ln.low = ln.g < 4;
  const int stride = static_cast<int>(a.cols) + 16;
  ln.dig = dig + (ln.g & 3) * stride + 4 * ln.t;

  const int cb = a.chunk;                // blocks per stage (<= Ops::kCB)
  const int64_t nb = a.cols / Ops::kBE;  // blocks per row
  const int64_t row_bytes = nb * kBB;
  const int64_t nchunks = ceil_div<int64_t>(nb, cb);
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
  // Copies the 16 rows' chunk into stage `buf`. Each row's span is 16-byte aligned (it may start
  // up to 15 bytes early, inside W; the last piece stops at the chunk's end). Lanes take
  // consecutive 16-byte pieces of consecutive rows, so one cp.async instruction covers a few
  // whole rows (few cache lines) rather than a sliver of 16 rows.
  const auto issue = [&](int buf) {
    if (issue_task < a.ntasks && a.probe != 2) {
      const int64_t blk0 = issue_chunk * cb;
      const int bytes = static_cast<int>(kernels::min64(cb, nb - blk0) * kBB);
      const int pieces = (bytes + 30) / 16;  // per row, whatever the lead (<= 32: bytes <= 482)
      const int rows_per_pass = 32 / pieces;
      const int lr = lane / pieces;
      const int o = (lane % pieces) * 16;
      if (lr < rows_per_pass) {
        uint8_t* dst = wsm + buf * L::kStageBytes + o;
        for (int r = lr; r < kTileRows; r += rows_per_pass) {
          const uint8_t* start = row_ptr(issue_task, r) + blk0 * kBB;
          const int lead = static_cast<int>(reinterpret_cast<uintptr_t>(start) & 15u);
          const int span = lead + bytes;
          if (o < span) {
            kernels::cp_async_16(dst + r * L::kRegion, start - lead + o, min(16, span - o));
          }
        }
      }
    }
    if (issue_task < a.ntasks) {
      issue_chunk += a.ksplit;
      normalize(issue_task, issue_chunk);
    }
    kernels::cp_async_commit();
  };

#pragma unroll
  for (int s = 0; s < kS - 1; ++s) issue(s);  // weights only: before the PDL wait
  kernels::grid_dependency_trigger();
  kernels::grid_dependency_wait();

  if (a.x.kind == XKind::kPreSplit) {
    // Copy the split x' (written by prepare_x) into shared memory: one round trip.
    const auto* src = static_cast<const uint8_t*>(a.x.split);
    const int64_t n16 = x_split_mma_bytes(a.cols) / 16;
    for (int64_t i = threadIdx.x; i < n16; i += kThreads) {
      kernels::cp_async_16(smem + 16 * i, src + 16 * i, 16);
    }
    kernels::cp_async_commit();
    kernels::cp_async_wait<0>();
    __syncthreads();
  } else {
    split_x_cta(a.x, a.cols, dig, meta, red);
  }
  XView xv;
  xv.dig = dig;
  xv.stride = stride;
  xv.meta = meta;

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
      const int64_t blk0 = chunk * cb;
      const int nblk = static_cast<int>(kernels::min64(cb, nb - blk0));
      const uint8_t* stage = wsm + buf * L::kStageBytes;
      const auto region = [&](int r) {
        const uint8_t* start = row_ptr(task, r) + blk0 * kBB;
        return stage + r * L::kRegion + static_cast<int>(reinterpret_cast<uintptr_t>(start) & 15u);
      };
      if (a.probe != 1) {
        if constexpr (Ops::kTable > 0) {
          static_assert(Ops::kCB == 1, "the table holds one block per row");
          for (int e = lane; e < kTileRows * Ops::kTable; e += 32) {  // kCB == 1
            table[e] = Ops::table_entry(region(e / Ops::kTable), e % Ops::kTable);
          }
          __syncwarp();
        }
        Ops::stage(region(ln.g), region(ln.g + 8), nblk, table + ln.g * Ops::kTable,
                   table + (ln.g + 8) * Ops::kTable, ln, xv, blk0 * tiles_per_block, acc_g, acc_8);
      }
      __syncwarp();  // stage `buf` (and the table) are refilled later
    }
    // Each thread holds two digits of one piece for rows g, g + 8: sum the four threads.
    acc_g += __shfl_xor_sync(kernels::kFullMask, acc_g, 1);
    acc_8 += __shfl_xor_sync(kernels::kFullMask, acc_8, 1);
    acc_g += __shfl_xor_sync(kernels::kFullMask, acc_g, 2);
    acc_8 += __shfl_xor_sync(kernels::kFullMask, acc_8, 2);
    const int64_t row0 = (task * rgs + rg) * kTileRows;
    if (a.ksplit == 1) {
      if (ln.t == 0) {
        if (row0 + ln.g < a.rows) kernels::store_row(a.y, row0 + ln.g, acc_g);
        if (row0 + ln.g + 8 < a.rows) kernels::store_row(a.y, row0 + ln.g + 8, acc_8);
      }
    } else {
      float* pb = partial + parity * kWarps * kTileRows;
      if (ln.t == 0) {
        pb[warp * kTileRows + ln.g] = acc_g;
        pb[warp * kTileRows + ln.g + 8] = acc_8;
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

/// The standalone split: CTA b handles columns [1024b, 1024b + 1024). `trigger_after_wait` != 0:
/// the next kernel may launch once this CTA is past its PDL wait, not at its entry
/// (prepare_x_launch).
__global__ void __launch_bounds__(kThreads)
    prepare_x_kernel(const XSource s, int64_t cols, int8_t* dig, int4* meta, StreamOut so,
                     int trigger_after_wait) {
  __shared__ float red[32];
  const int t = static_cast<int>(threadIdx.x);
  const int warp = t >> 5;
  const int lane = t & 31;
  const int64_t base = (static_cast<int64_t>(blockIdx.x) * kWarps + warp) * 128;
  const int64_t c = base + 4 * lane;
  const bool rms = s.kind == XKind::kRmsNorm;
  // The RMSNorm weights of this thread's columns do not depend on earlier kernels.
  const float4 w = rms && c < cols ? __ldg(reinterpret_cast<const float4*>(s.norm_w + c))
                                   : make_float4(0.f, 0.f, 0.f, 0.f);
  if (trigger_after_wait == 0) kernels::grid_dependency_trigger();
  kernels::grid_dependency_wait();
  if (trigger_after_wait != 0) kernels::grid_dependency_trigger();
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
  if (rms) {
    // One pass over x for the sum of squares keeps this thread's own columns (float4 index
    // c / 4 = blockIdx.x · blockDim.x + t is one of those it reads, as blockDim.x = kWarps · 32,
    // prepare_x_launch). The loads go out in batches of kBatch: a plain loop kept one load in
    // flight per thread, so an x of 3,584 columns cost four memory round trips in a row (H200,
    // 7B Q4_0 step: docs/performance.md, round 18). The sum still takes i = t, t + nt, t + 2nt, ...
    // in order.
    constexpr int kBatch = 4;
    const int64_t own = c / 4;
    const int64_t n4 = cols / 4;
    const int64_t nt = blockDim.x;
    float ss = 0.0f;
    for (int64_t i0 = t; i0 < n4; i0 += kBatch * nt) {
      float4 xb[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int64_t i = i0 + b * nt;
        xb[b] = i < n4 ? __ldg(reinterpret_cast<const float4*>(s.x) + i)
                       : make_float4(0.f, 0.f, 0.f, 0.f);
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int64_t i = i0 + b * nt;
        if (i >= n4) break;
        if (i == own) v = xb[b];
        ss = fmaf(xb[b].x, xb[b].x, ss);
        ss = fmaf(xb[b].y, xb[b].y, ss);
        ss = fmaf(xb[b].z, xb[b].z, ss);
        ss = fmaf(xb[b].w, xb[b].w, ss);
      }
    }
    ss = kernels::block_sum(ss, red);
    const float scale = 1.0f / sqrtf(ss / static_cast<float>(cols) + s.eps);  // as rms_scale
    v = make_float4(__fmul_rn(__fmul_rn(v.x, scale), w.x), __fmul_rn(__fmul_rn(v.y, scale), w.y),
                    __fmul_rn(__fmul_rn(v.z, scale), w.z), __fmul_rn(__fmul_rn(v.w, scale), w.w));
  } else if (c < cols) {
    v = x_prime4(s, c, 1.0f);
  }
  if (base >= cols) return;  // uniform per warp
  split_128(v, base, c < cols, dig, cols + 16, meta, so);
}

// ---- host side
// ------------------------------------------------------------------------------------

constexpr int64_t kMaxSmem = 227 * 1024;

}  // namespace

bool mma_supported(WeightType t, int64_t cols) {
  bool ok = false;
  kernels::dispatch_quant_type(t, [&]<WeightType T>() {
    ok = cols % MmaOps<T>::kBE == 0 && mma_smem_bytes<T>(cols) <= kMaxSmem;
  });
  return ok;
}

Plan mma_plan(WeightType t, int64_t rows, int64_t cols, bool presplit, int sms) {
  (void)presplit;  // the split lives in shared memory either way
  Plan p;
  kernels::dispatch_quant_type(t, [&]<WeightType T>() {
    using Ops = MmaOps<T>;
    p.block = kThreads;
    p.rows_per_warp = kTileRows;
    const int64_t smem = mma_smem_bytes<T>(cols);
    if (smem > kMaxSmem) return;  // grid 0: not possible (caller checks)
    p.smem = static_cast<int>(smem);
    const int ctas = std::max(
        1, ctas_per_sm(reinterpret_cast<const void*>(&gemv_mma_kernel<T>), kThreads, p.smem));
    const int64_t max_grid = static_cast<int64_t>(sms) * ctas;
    const int64_t nb = cols / Ops::kBE;
    // Blocks per stage: the type's maximum, fewer (an even number) for short rows so that a row
    // still has about 8 chunks to spread over the warps.
    int cb = Ops::kCB;
    if (Ops::kCB > 1) cb = static_cast<int>(std::clamp<int64_t>(nb / 8 / 2 * 2, 2, Ops::kCB));
    p.chunk = cb;
    const int64_t nchunks = ceil_div<int64_t>(nb, cb);
    double best = -1.0;
    for (int ks = 1; ks <= kWarps; ks *= 2) {
      const int64_t tasks = ceil_div<int64_t>(rows, static_cast<int64_t>(kWarps / ks) * kTileRows);
      const int64_t grid = std::min(tasks, max_grid);
      const double per_cta = static_cast<double>(tasks) / static_cast<double>(grid);
      const double balance = per_cta / std::ceil(per_cta);
      const double fill = static_cast<double>(grid) / static_cast<double>(max_grid);
      const int64_t cpw = ceil_div<int64_t>(nchunks, ks);
      const double col_use = static_cast<double>(nchunks) / static_cast<double>(cpw * ks);
      // Few chunks per warp leave the pipeline mostly empty.
      const double depth = std::min(1.0, static_cast<double>(cpw) / Ops::kStages + 0.5);
      const double row_use =
          static_cast<double>(rows) / static_cast<double>(tasks * (kWarps / ks) * kTileRows);
      const double score = balance * col_use * depth * row_use * std::min(1.0, 0.2 + fill);
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
  args.chunk = p.chunk;
  void* params[] = {&args};
  kernels::dispatch_quant_type(t, [&]<WeightType T>() {
    launch_with_attrs(reinterpret_cast<const void*>(&gemv_mma_kernel<T>), params,
                      dim3(static_cast<unsigned>(p.grid)), dim3(static_cast<unsigned>(p.block)),
                      static_cast<size_t>(p.smem), a.pdl != 0, stream);
  });
}

void prepare_x_launch(const XSource& x, int64_t cols, void* out, int pdl, cudaStream_t stream,
                      int trigger_after_wait) {
  XSource s = x;
  int64_t c = cols;
  const SplitOut o = split_out(out, cols);
  int8_t* dig = o.dig;
  int4* meta = o.meta;
  StreamOut so = o.so;
  void* params[] = {&s, &c, &dig, &meta, &so, &trigger_after_wait};
  const int64_t grid = ceil_div<int64_t>(cols, 128 * kWarps);
  launch_with_attrs(reinterpret_cast<const void*>(&prepare_x_kernel), params,
                    dim3(static_cast<unsigned>(grid)), dim3(kThreads), 0, pdl != 0, stream);
}

}  // namespace decodebench::cuda::gemv_impl
