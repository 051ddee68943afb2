// GEMV for the quantized weight types on a pre-split x': "stream" kernel (sm_90 bulk copies).
//
// Why: batch-1 decode must stream each weight byte once at HBM speed. Earlier kernels staged rows
// with per-lane 16-byte cp.async (many instructions, shallow pipelines) and reached 54-62% of the
// read bandwidth with their math skipped. Here each warp streams its rows through shared memory
// with the Hopper bulk-copy engine (cp.async.bulk, one instruction per row piece, completion on
// an mbarrier), two or three pieces of 2048-4096 columns deep, so the warp's instruction stream
// is almost all math.
//
// Math: x' arrives split into signed 7-bit digits per 32-column tile (launch_gemv_prepare_x:
// x'[c] ≈ Σ_n f_n·X_n[c], f_n = 2^(e − 7n)). Lane l of a warp owns tiles l, l + 32, ... of each
// chunk (in a last pass of at most 16 tiles, lanes 16-31 take row 1's tile l − 16 and lanes 0-15
// row 0's): it unpacks the tile's 32 codes of each row into 8 words of bytes and forms the integer
// sums S_n = Σ_c code_c·X_n[c] with dp4a (exact), for the first kDigits (two) digits. A tile's
// dot product is then scale·f_1·(128·S_0 + S_1) (code offsets enter as −offset·ΣX_n, minimums as
// min·Σx'), so results differ from the CPU's f32 dot product by f32 rounding and the digit
// residue, at most 2^-13 of each tile's largest |x'|. The x' digits (loaded once per tile,
// serving kRows rows) come from the split's stream layout, where a warp-wide 16-byte load is
// contiguous: Nsight Compute on the H200 (gate+up, Q4_0) showed the L1 data path as the limit
// (79% busy) with the mma layout's 32- and 48-byte lane strides, 60% with this one. Its tiles
// are grouped by warp-wide pass, so a lane addresses all of its tile's x' numbers from one
// pointer with immediate offsets (about 14 fewer instructions per pass than separate planes).
//
// Weights in GGUF blocks (StreamOps) or in the tiled layout (TiledStreamOps: Q4_0, Q4_1, Q8_0,
// and Q6_K with 32-bit loads; the "stream-tiled" variant): there each tile's codes are one aligned
// 16-byte piece, read with one
// 128-bit shared-memory load instead of 5 (4-bit) or 9 (Q8_0) 32-bit loads and funnel shifts
// (H200, 7B steps: Q4_0 +3.5% over GGUF blocks, Q8_0 +1.8% over the tiled kernel;
// docs/performance.md, round 16).
//
// Layout: a persistent grid of 8-warp CTAs loops over tasks (kRows consecutive rows); the ks
// warps of a slot split a task's chunks and add their partial sums in shared memory in a fixed
// order (deterministic). Piece copies cover the 16-byte aligned span around each row's chunk, so
// any block size works; the matrix end must be 16-byte aligned (stream_supported). Where a row is
// one chunk and a task's rows a 16-byte multiple, they are adjacent and go in one copy
// (whole_rows). Where rows are 16-byte multiples and the ring's slots fit the shared memory
// (ring_request: two of 16 rows, 8 warps of 2; Q8_0 one, 4 warps of 4), the ring form runs instead
// (gemv_ring_kernel: one 32-61 KB copy per group of 16 rows into a CTA-wide ring), and since round
// 44 also on the 32-column GGUF blocks where a group is a 16-byte multiple (ring_gguf_takes: a pad
// after each slot for the decoders' word past a row; Q8_0 there in 8 warps of 2: gguf_ring_shape);
// where they do not (the down projections), its split form (groups of 2 rows, 8 warps on each
// pair, two slots; not for Q8_0: ring_long_request). Since round 51 Q6_K rows of 4-byte multiples
// take both forms where each group's copy is a 16-byte multiple (ring_copyable).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "core/quant/tiled_layout.hpp"
#include "cuda/check.hpp"
#include "cuda/kernels/common.cuh"
#include "cuda/kernels/dequant.cuh"
#include "cuda/kernels/gemv_device.cuh"
#include "cuda/kernels/gemv_digits.cuh"
#include "cuda/kernels/gemv_impl.cuh"

namespace decodebench::cuda::gemv_impl {
namespace {

using kernels::ceil_div;
using kernels::ld_f16;

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
/// Rows per task (they share the lane's x' digits). Measured on the H200: 4 rows gain on the LM
/// head but lose on QKV and the down projection (fewer tasks than warp slots); 7B Q4_0 step 438
/// against 460 tokens/s.
constexpr int kRows = 2;
static_assert(kRows == 2, "a chunk's split last pass gives each half-warp one of two rows");

using kernels::bulk_copy;
using kernels::mbar_arrive_expect_tx;
using kernels::mbar_init;
using kernels::mbar_wait;
using kernels::smem_addr;

// ---- shared-memory reads (32-bit shared addresses: LDS, not generic loads) ---------------------

__device__ __forceinline__ uint32_t lds32(uint32_t a) {
  uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(a));
  return v;
}

__device__ __forceinline__ uint32_t lds16(uint32_t a) {
  unsigned short v;
  asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(v) : "r"(a));
  return v;
}

/// binary16 at shared address a (2-byte aligned) → f32.
__device__ __forceinline__ float lds_f16(uint32_t a) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(lds16(a))));
}

/// 16 bytes at the 16-byte aligned shared address a.
__device__ __forceinline__ uint4 lds128(uint32_t a) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(a));
  return v;
}

/// kN 32-bit words (kN a multiple of 4) at the 16-byte aligned shared address a: 128-bit loads.
template <int kN>
__device__ __forceinline__ void words_at16(uint32_t a, uint32_t (&w)[kN]) {
  static_assert(kN % 4 == 0, "whole 16-byte pieces");
#pragma unroll
  for (int i = 0; i < kN; i += 4) {
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(w[i]), "=r"(w[i + 1]), "=r"(w[i + 2]), "=r"(w[i + 3])
                 : "r"(a + 4 * i));
  }
}

/// kN 32-bit words at byte address q + sh / 8 (q 4-byte aligned, sh = 0, 8, 16 or 24; reads kN + 1
/// aligned words), the alignment split off so a cursor can compute it once per chunk.
template <int kN>
__device__ __forceinline__ void words_from(uint32_t q, uint32_t sh, uint32_t (&w)[kN]) {
  uint32_t prev = lds32(q);
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    const uint32_t next = lds32(q + 4 * (i + 1));
    w[i] = __funnelshift_r(prev, next, sh);
    prev = next;
  }
}

/// kN 32-bit words starting at the 2-byte aligned shared address a.
template <int kN>
__device__ __forceinline__ void words_at(uint32_t a, uint32_t (&w)[kN]) {
  words_from<kN>(a & ~3u, (a & 3u) * 8u, w);
}

/// A lane's place in a row's chunk for the types whose tile is one block (32 columns): its block
/// at pass 0 (shared address b) and, split off once per chunk, the aligned word address q and
/// funnel shift sh of the codes at b + qs. Pass p adds p·32·kBB bytes, a multiple of 4, so q and
/// sh hold for every pass and the per-pass addresses are immediates.
struct BlockCursor {
  uint32_t b, q, sh;
  __device__ static BlockCursor at(uint32_t c, int l, int bb, int qs) {
    const uint32_t b = c + static_cast<uint32_t>(l * bb);
    const uint32_t a = b + static_cast<uint32_t>(qs);
    return BlockCursor{b, a & ~3u, (a & 3u) * 8u};
  }
};

/// A lane's place in a row's chunk for the 256-column block types (Q4_K, Q5_K, Q6_K): tile 32p + l
/// is sub-tile t = l % 8 of block 4p + l / 8, whose address is block(p).
struct SuperCursor {
  uint32_t b;  ///< the lane's block at pass 0
  int t;
  __device__ static SuperCursor at(uint32_t c, int l, int bb) {
    return SuperCursor{c + static_cast<uint32_t>((l >> 3) * bb), l & 7};
  }
  __device__ uint32_t block(int p, int bb) const { return b + static_cast<uint32_t>(p * 4 * bb); }
};

// ---- per-type tile decoders ---------------------------------------------------------------------
// cursor(c, l): lane tile l's place in a row's chunk (c = shared address of the chunk's first
// block), computed once per chunk; dot(u, p, x, n): Σ over tile 32p + l of w·x' (p: the pass, a
// constant once the pass loop is unrolled; n: the pass's tiles, which only the tiled layout's
// decoders need). kBE / kBB: elements / bytes per block; kSx / kLo:
// which x' planes the decoder needs.

// Pipeline shape per type (bench-kernels sweep on the H200, 7B shapes): bigger bulk copies amortize
// their fixed cost; 4-bit types stream 4096 columns per row piece two deep, Q8_0 2048 three deep
// (both keep two CTAs per SM).
template <int kCols, int kDepth, bool kFill = false, bool kSlot = false>
struct Pipe {
  static constexpr int kChunkCols = kCols, kStages = kDepth;
  /// kFillBeforeWait: all kStages pieces are asked for before the PDL wait (a stage is refilled
  /// once consumed), not kStages − 1: HBM delivers them while the GEMV waits for its input.
  /// kSlotMajor: CTA b's slot s takes tasks s·grid + b, s·grid + b + slots·grid, ... (not
  /// b·slots + s, ...), so a last round of fewer tasks than warp slots is spread over many CTAs
  /// (the 7B Q8_0 QKV, o and down projections end in rounds of 192, 736 and 736 tasks for
  /// 528–1,056 slots) instead of filling the first CTAs' slots.
  static constexpr bool kFillBeforeWait = kFill, kSlotMajor = kSlot;
};

template <WeightType T>
struct StreamOps;

template <>  // d f16 @0 · qs int8[32] @2
struct StreamOps<WeightType::kQ8_0> : Pipe<2048, 3> {
  static constexpr int kBE = 32, kBB = 34;
  static constexpr bool kSx = false, kLo = false;
  using Cursor = BlockCursor;
  __device__ static Cursor cursor(uint32_t c, int l) { return BlockCursor::at(c, l, kBB, 2); }
  __device__ static float dot(const Cursor& u, int p, const XTile& x, int) {
    const uint32_t off = static_cast<uint32_t>(p * 32 * kBB);
    uint32_t q[8];
    words_from<8>(u.q + off, u.sh, q);
    return lds_f16(u.b + off) * tile_dot<0>(q, x);
  }
};

/// Q4_0 / Q4_1 / Q5_0 / Q5_1: nibble j (low) is column j, high nibble column j + 16; Q5: the
/// fifth bit of column e is bit e of qh.
template <int kBB_, int kM, int kQh, int kQs, int kOffset>
struct Legacy : Pipe<4096, 2> {
  static constexpr int kBE = 32, kBB = kBB_;
  static constexpr bool kSx = kM >= 0, kLo = false;
  using Cursor = BlockCursor;
  __device__ static Cursor cursor(uint32_t c, int l) { return BlockCursor::at(c, l, kBB, kQs); }
  __device__ static float dot(const Cursor& u, int p, const XTile& x, int) {
    const uint32_t off = static_cast<uint32_t>(p * 32 * kBB);
    const uint32_t b = u.b + off;
    uint32_t w[4];
    words_from<4>(u.q + off, u.sh, w);
    uint32_t q[8];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      q[k] = w[k] & kLow4;
      q[k + 4] = (w[k] >> 4) & kLow4;
    }
    if constexpr (kQh >= 0) {
      uint32_t h[1];
      words_at<1>(b + kQh, h);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        q[k] |= kernels::spread_bit4((h[0] >> (4 * k)) & 0xFu);
        q[k + 4] |= kernels::spread_bit4((h[0] >> (16 + 4 * k)) & 0xFu);
      }
    }
    float v = lds_f16(b) * tile_dot<kOffset>(q, x);
    if constexpr (kM >= 0) v = fmaf(lds_f16(b + kM), x.sx, v);
    return v;
  }
};

template <>  // d @0 · qs[16] @2
struct StreamOps<WeightType::kQ4_0> : Legacy<18, -1, -1, 2, 8> {};
template <>  // d @0 · m @2 · qs[16] @4
struct StreamOps<WeightType::kQ4_1> : Legacy<20, 2, -1, 4, 0> {};
template <>  // d @0 · qh u32 @2 · qs[16] @6
struct StreamOps<WeightType::kQ5_0> : Legacy<22, -1, 2, 6, 16> {};
template <>  // d @0 · m @2 · qh u32 @4 · qs[16] @8
struct StreamOps<WeightType::kQ5_1> : Legacy<24, 2, 4, 8, 0> {};

/// Q4_K / Q5_K: tile j of a chunk is sub-block s = j % 8 of block j / 8; its codes are the low
/// (s even) or high nibbles of qs[32·(s/2) ..], plus bit s of qh[l] for Q5_K; the 6-bit scale
/// and min of sub-block s as in gguf-facts.md §2.3. Blocks are a multiple of 16 bytes, so every
/// block of a chunk starts 16-byte aligned in shared memory (the piece's lead is 0): codes are
/// read with 128-bit loads.
template <int kBB_, int kQh, int kQs>
struct KQuant : Pipe<4096, 2> {
  static constexpr int kBE = 256, kBB = kBB_;
  static constexpr bool kSx = true, kLo = false;
  static_assert(kBB % 16 == 0 && kQs % 16 == 0 && (kQh < 0 || kQh % 16 == 0), "aligned reads");
  using Cursor = SuperCursor;
  __device__ static Cursor cursor(uint32_t c, int l) { return SuperCursor::at(c, l, kBB); }
  __device__ static float dot(const Cursor& u, int p, const XTile& x, int) {
    const uint32_t b = u.block(p, kBB);
    const int s = u.t;  // sub-block
    uint32_t w[8];
    words_at16<8>(b + kQs + 32 * (s >> 1), w);
    uint32_t q[8];
    // Q4_K: the sub-block's nibbles are masked in place, one instruction per word; high nibbles
    // stay multiplied by 16 (codes 0..240, unsigned dp4a) and 1/16 goes into the scale.
    // Q5_K shifts them down: its fifth bit goes above them.
    constexpr bool kInPlace = kQh < 0;
    if constexpr (kInPlace) {
      const uint32_t mask = (s & 1) != 0 ? 0xF0F0F0F0u : kLow4;
#pragma unroll
      for (int k = 0; k < 8; ++k) q[k] = w[k] & mask;
    } else {
      const int sh = 4 * (s & 1);
#pragma unroll
      for (int k = 0; k < 8; ++k) q[k] = (w[k] >> sh) & kLow4;
    }
    if constexpr (kQh >= 0) {
      uint32_t h[8];
      words_at16<8>(b + kQh, h);
#pragma unroll
      for (int k = 0; k < 8; ++k) q[k] |= ((h[k] >> s) & 0x01010101u) << 4;
    }
    // The block's first 16 bytes in one 128-bit load: d and dmin, then the three scale words.
    uint32_t head[4];
    words_at16<4>(b, head);
    int sc, mn;
    kquant_scale_min(head[1], head[2], head[3], s, sc, mn);
    const uint32_t dm = head[0];  // d and dmin
    float d = __half2float(__ushort_as_half(static_cast<unsigned short>(dm & 0xFFFFu))) *
              static_cast<float>(sc);
    const float m = __half2float(__ushort_as_half(static_cast<unsigned short>(dm >> 16))) *
                    static_cast<float>(mn);
    if constexpr (kInPlace) d *= (s & 1) != 0 ? 0.0625f : 1.0f;
    return fmaf(d, tile_dot<0, kInPlace>(q, x), -m * x.sx);
  }
};

template <>  // d @0 · dmin @2 · scales[12] @4 · qs[128] @16
struct StreamOps<WeightType::kQ4_K> : KQuant<144, -1, 16> {};
template <>  // d @0 · dmin @2 · scales[12] @4 · qh[32] @16 · qs[128] @48
struct StreamOps<WeightType::kQ5_K> : KQuant<176, 16, 48> {};

/// Σ over a Q6_K tile of d·scale·(code − 32)·x': q holds the 6-bit codes in column order, 4 per
/// word; load_sc() returns the 16 bits of the two int8 scales (columns 0-15, then 16-31), load_d()
/// the block's d (f32), both read after the dot products, where the GGUF decoder always read them.
/// Both Q6_K decoders (GGUF blocks, tiled layout) use it, so they write the same bits.
template <typename LoadScales, typename LoadD>
__device__ __forceinline__ float q6_k_tile_dot(const uint32_t (&q)[8], const XTile& x,
                                               LoadScales load_sc, LoadD load_d) {
  int lo[kDigits], hi[kDigits];
#pragma unroll
  for (int n = 0; n < kDigits; ++n) {
    int a = -32 * x.lo[n];
    int e = -32 * (x.sum[n] - x.lo[n]);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      a = __dp4a(static_cast<int>(q[k]), static_cast<int>(x.d[n][k]), a);
      e = __dp4a(static_cast<int>(q[k + 4]), static_cast<int>(x.d[n][k + 4]), e);
    }
    lo[n] = a;
    hi[n] = e;
  }
  const uint32_t sc = load_sc();
  const float sc_lo = static_cast<float>(static_cast<int8_t>(sc & 0xFFu));
  const float sc_hi = static_cast<float>(static_cast<int8_t>(sc >> 8));
  const float vlo = digits_value(x, lo);
  const float vhi = digits_value(x, hi);
  return load_d() * fmaf(sc_lo, vlo, sc_hi * vhi);
}

/// Q6_K: tile j = 4h + g of block j / 8 holds columns 128h + 32g + l (l < 32): low bits from
/// ql[64h + 32·(g & 1) + l] (high nibble for g >= 2), high bits (qh[32h + l] >> 2g) & 3, code
/// offset 32, int8 scales per 16 columns.
template <>  // ql[128] @0 · qh[64] @128 · scales int8[16] @192 · d @208
struct StreamOps<WeightType::kQ6_K> : Pipe<4096, 2> {
  static constexpr int kBE = 256, kBB = 210;
  static constexpr bool kSx = false, kLo = true;
  using Cursor = SuperCursor;
  __device__ static Cursor cursor(uint32_t c, int l) { return SuperCursor::at(c, l, kBB); }
  __device__ static float dot(const Cursor& u, int p, const XTile& x, int) {
    const uint32_t b = u.block(p, kBB);
    const int t = u.t;
    const int h = t >> 2;
    const int g = t & 3;
    uint32_t l[8], hb[8];
    words_at<8>(b + 64 * h + 32 * (g & 1), l);
    words_at<8>(b + 128 + 32 * h, hb);
    const int lsh = 4 * (g >> 1);
    uint32_t q[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      q[k] = ((l[k] >> lsh) & kLow4) | (((hb[k] >> (2 * g)) & 0x03030303u) << 4);
    }
    // The two int8 scales are at an even offset.
    return q6_k_tile_dot(
        q, x, [&] { return lds16(b + 192 + 8 * h + 2 * g); }, [&] { return lds_f16(b + 208); });
  }
};

// ---- decoders for the tiled layout (core/quant/tiled_layout.hpp)
// --------------------------------- A chunk is whole tile groups (4096 or 2048 columns: 4 or 2
// groups of 32 tiles), and tile groups take the byte ranges of the GGUF blocks they replace, so the
// kernel copies the same spans; a row's bytes are a multiple of 16 (tiled_layout_supported), so
// every group starts 16-byte aligned in shared memory (Q6_K: rows and groups of 4-byte multiples,
// see its decoder). Group p of a chunk (pass p) holds its n
// tiles' codes as 16-byte pieces, then their scales: tile l's codes are one 128-bit load, where the
// GGUF decoders above assemble them from 5 (4-bit) or 9 (Q8_0) 32-bit loads and funnel shifts.

struct TileCursor {
  uint32_t c;  ///< shared address of the chunk
  int l;       ///< the lane's tile within each group
  __device__ static TileCursor at(uint32_t c, int l) { return TileCursor{c, l}; }
  /// Shared address of group p of the chunk (kBB: bytes per tile).
  __device__ uint32_t group(int p, int bb) const { return c + static_cast<uint32_t>(p * 32 * bb); }
};

template <WeightType T>
struct TiledStreamOps;

/// What the tiled decoders share: 32-column tiles of kBB bytes in pieces of kCols columns, kDepth
/// deep; groups and chunks start 16-byte aligned (the copies' lead is 0), so codes are read with
/// 128-bit loads.
template <int kBB_, int kCols, int kDepth, bool kFill = false, bool kSlot = false>
struct TiledStreamBase : Pipe<kCols, kDepth, kFill, kSlot> {
  static constexpr int kBE = 32, kBB = kBB_;
  static constexpr bool kLo = false;
  static_assert((32 * kBB) % 16 == 0 && (kCols / 32 * kBB) % 16 == 0, "aligned groups");
  using Cursor = TileCursor;
  __device__ static Cursor cursor(uint32_t c, int l) { return TileCursor::at(c, l); }
};

/// Q4_0 (kMin false: scale d, code offset 8) and Q4_1 (d and m, 4 bytes per tile).
template <int kBB_, bool kMin>
struct TiledStream4 : TiledStreamBase<kBB_, 4096, 2> {
  static constexpr bool kSx = kMin;
  __device__ static float dot(const TileCursor& u, int p, const XTile& x, int n) {
    const uint32_t g = u.group(p, kBB_);
    uint32_t q[8];
    unpack4(lds128(g + 16 * u.l), q);
    const uint32_t sc = g + 16 * static_cast<uint32_t>(n);
    if constexpr (kMin) {
      const uint32_t dm = lds32(sc + 4 * u.l);
      return fmaf(half_bits(dm >> 16), x.sx, half_bits(dm) * tile_dot<0>(q, x));
    } else {
      return lds_f16(sc + 2 * u.l) * tile_dot<8>(q, x);
    }
  }
};

template <>
struct TiledStreamOps<WeightType::kQ4_0> : TiledStream4<18, false> {};
template <>
struct TiledStreamOps<WeightType::kQ4_1> : TiledStream4<20, true> {};

/// Q8_0: columns 0-15 of the group's tiles, then columns 16-31, then the scales. Pieces of one
/// group (1024 columns), four deep: 7B steps on the H200 2,485.4 / 2,490.1 µs against 2,528.0 /
/// 2,520.9 with the GGUF decoder's 2048 × 3, 2,505.6 / 2,503.6 with 2048 × 2 and 2,572.7 /
/// 2,574.8 with 1024 × 6 (docs/performance.md, round 16; the 4-bit types' 4096 × 2 beat 2048 × 4,
/// 3072 × 3 and 4096 × 3 there).
/// Every stage before the PDL wait and slot-major tasks (Pipe), measured on the H200
/// (docs/performance.md, round 19): 7B Q8_0 step 2,610 → 2,554 µs with both (−2.2%; each alone
/// −1.0% and −1.7%); the 4-bit types gained with neither.
template <>
struct TiledStreamOps<WeightType::kQ8_0> : TiledStreamBase<34, 1024, 4, true, true> {
  static constexpr bool kSx = false;
  __device__ static float dot(const Cursor& u, int p, const XTile& x, int n) {
    const uint32_t g = u.group(p, kBB);
    const uint32_t n16 = 16 * static_cast<uint32_t>(n);
    const uint4 a = lds128(g + 16 * u.l);
    const uint4 b = lds128(g + n16 + 16 * u.l);
    const uint32_t q[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    return lds_f16(g + 2 * n16 + 2 * u.l) * tile_dot<0>(q, x);
  }
};

/// Q6_K (round 26; measured in round 27: see stream_tiled_default): a group of 32 tiles (4 blocks,
/// 840 bytes) holds the tiles' low 4 bits (16 bytes each, Q4_0's nibble order), their top 2 bits (8
/// bytes each), their two int8 scales, then the 4 blocks' d (core/quant/tiled_layout.hpp). Rows are
/// 2,940 bytes at 3,584 columns, so parts are only 4-byte aligned and codes are read with 32-bit
/// loads: 6 per tile and row, where the GGUF decoder above reads 18 words for 32 bytes of ql and 32
/// of qh and funnel-shifts them: a pass of 2 rows is 169-171 SASS instructions per lane against its
/// 261 (docs/probes/sass_blocks.py; docs/performance.md, round 26). The sums are the GGUF
/// decoder's, term for term: both write the same bits.
template <>
struct TiledStreamOps<WeightType::kQ6_K> : Pipe<4096, 2> {
  static constexpr int kBE = 256, kBB = 210;
  static constexpr bool kSx = false, kLo = true;
  using Cursor = TileCursor;
  __device__ static Cursor cursor(uint32_t c, int l) { return TileCursor::at(c, l); }
  __device__ static float dot(const Cursor& u, int p, const XTile& x, int n) {
    const uint32_t g = u.c + static_cast<uint32_t>(p * 4 * kBB);  // group p of the chunk
    const uint32_t l = static_cast<uint32_t>(u.l), nn = static_cast<uint32_t>(n);
    uint32_t w[4], hb[2];
#pragma unroll
    for (int k = 0; k < 4; ++k) w[k] = lds32(g + 16 * l + 4 * k);
    hb[0] = lds32(g + 16 * nn + 8 * l);
    hb[1] = lds32(g + 16 * nn + 8 * l + 4);
    // Code word m (columns 4m .. 4m + 3): low 4 bits from word m % 4 (high nibbles for m >= 4),
    // top 2 bits from bits 2k of hb[m / 4], k = m % 4, moved to bits 4-5 of each byte.
    uint32_t q[8];
#pragma unroll
    for (int m = 0; m < 8; ++m) {
      const int k = m & 3;
      const uint32_t h = hb[m >> 2];
      const uint32_t top = (k < 2 ? h << (4 - 2 * k) : h >> (2 * k - 4)) & 0x30303030u;
      const uint32_t low = (m < 4 ? w[m] : w[m - 4] >> 4) & kLow4;
      q[m] = low | top;
    }
    return q6_k_tile_dot(
        q, x, [&] { return lds16(g + 24 * nn + 2 * l); },
        [&] { return lds_f16(g + 26 * nn + 2 * (l >> 3)); });
  }
};

/// Whether the stream kernel reads type T in the tiled layout.
template <WeightType T>
constexpr bool kTiledStream = T == WeightType::kQ4_0 || T == WeightType::kQ4_1 ||
                              T == WeightType::kQ8_0 || T == WeightType::kQ6_K;

/// The decoders of the stream kernel: GGUF blocks, or the tiled layout (kTiled).
template <WeightType T, bool kTiled>
struct OpsFor {
  using type = StreamOps<T>;
};
template <WeightType T>
struct OpsFor<T, true> {
  using type = TiledStreamOps<T>;
};

// ---- the kernel ---------------------------------------------------------------------------------

constexpr int kMaxStages = 4;

/// Bytes of one row piece's stage region for `cb` blocks of kBB bytes: the piece starts up to 15
/// bytes before its chunk (16-byte aligned cover), may end up to 15 bytes after it, and words_at
/// reads one word past the last it needs.
__host__ __device__ constexpr int region_bytes(int cb, int bb) {
  return (cb * bb + 15 + 15 + 4 + 15) / 16 * 16;
}

/// Dynamic shared memory: per warp `stages` × kRows regions, then per warp kMaxStages mbarriers,
/// then 2 × kWarps × kRows partial sums.
__host__ __device__ constexpr int stream_smem(int cb, int bb, int stages) {
  return kWarps * stages * kRows * region_bytes(cb, bb) + kWarps * kMaxStages * 8 +
         2 * kWarps * kRows * 4;
}

/// Adds to acc[i] the dot product of row i's chunk (shared address chunk[i] of its first block,
/// `tiles` tiles of at most kTilesPerChunk) with x' (gx: the chunk's first group of the stream
/// layout), for kR rows (an even number). Lane l takes tiles l, l + 32, ...; a last pass of at
/// most 16 tiles (3,584 columns: 112 tiles, 3.5 passes) gives lanes 0-15 rows 0, 2, ... and lanes
/// 16-31 rows 1, 3, ... instead of half the warp idling over every row, so each pair of rows is
/// summed as with kR = 2, bit for bit. acc[i] holds the lane's partial sum (warp_sum completes it).
template <typename Ops, int kTilesPerChunk, int kR = kRows>
__device__ __forceinline__ void chunk_dot(const uint32_t (&chunk)[kR], int tiles, const int8_t* gx,
                                          int lane, float (&acc)[kR]) {
  static_assert(kR % 2 == 0, "rows in pairs");
  // Each lane's place in every row's chunk, and for a split last pass in the rows of its
  // half-warp: computed once per chunk.
  typename Ops::Cursor cur[kR];
#pragma unroll
  for (int i = 0; i < kR; ++i) cur[i] = Ops::cursor(chunk[i], lane);
#pragma unroll
  for (int jj = 0; jj < kTilesPerChunk; jj += 32) {
    // This pass's 32 tiles are one group of the stream layout (chunks start at multiples of 32
    // tiles).
    const int8_t* g = gx + jj / kStreamGroupTiles * kStreamGroupBytes;
    if (tiles - jj > 0 && tiles - jj <= 16) {
      if (jj + (lane & 15) < tiles) {
        const XTile x = load_x_tile<Ops::kSx, Ops::kLo>(g, lane & 15);
        const bool second = lane >= 16;
#pragma unroll
        for (int i = 0; i < kR; i += 2) {
          const typename Ops::Cursor half =
              Ops::cursor(second ? chunk[i + 1] : chunk[i], lane & 15);
          const float v = Ops::dot(half, jj / 32, x, tiles - jj);
          acc[i] += second ? 0.0f : v;
          acc[i + 1] += second ? v : 0.0f;
        }
      }
    } else if (jj + lane < tiles) {
      const XTile x = load_x_tile<Ops::kSx, Ops::kLo>(g, lane);
      const int n = min(32, tiles - jj);
#pragma unroll
      for (int i = 0; i < kR; ++i) acc[i] += Ops::dot(cur[i], jj / 32, x, n);
    }
  }
}

/// kTiled: the weights are in the tiled layout (TiledStreamOps), else GGUF blocks (StreamOps).
template <WeightType T, bool kTiled>
__global__ void __launch_bounds__(kThreads, 2) gemv_stream_kernel(const KernelArgs a) {
  using Ops = typename OpsFor<T, kTiled>::type;
  constexpr int kBB = Ops::kBB;
  constexpr int kTilesPerBlock = Ops::kBE / 32;
  extern __shared__ __align__(128) uint8_t smem[];

  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int ks = a.ksplit;
  const int kidx = warp % ks;  // this warp's share of a task's chunks
  const int slot = warp / ks;  // task slot within the CTA
  const int slots = kWarps / ks;
  static_assert(Ops::kStages <= kMaxStages, "one mbarrier per stage");
  constexpr int cb = Ops::kChunkCols / Ops::kBE;  // blocks per chunk
  constexpr int nst = Ops::kStages;               // pipeline depth
  constexpr int region = region_bytes(cb, kBB);
  constexpr int stage_bytes = kRows * region;
  constexpr int kTilesPerChunk = cb * kTilesPerBlock;
  static_assert(kTilesPerChunk % kStreamGroupTiles == 0, "chunks start at x' group boundaries");
  uint8_t* stages = smem + warp * nst * stage_bytes;
  uint64_t* bars =
      reinterpret_cast<uint64_t*>(smem + kWarps * nst * stage_bytes) + warp * kMaxStages;
  float* partial =
      reinterpret_cast<float*>(smem + kWarps * nst * stage_bytes + kWarps * kMaxStages * 8);

  const int64_t nb = a.cols / Ops::kBE;
  const int64_t row_bytes = nb * kBB;
  const int64_t nchunks = ceil_div<int64_t>(nb, cb);
  // Chunks kidx, kidx + ks, ... of every task; my_chunks per task (may be 0).
  const int64_t my_chunks = nchunks > kidx ? ceil_div<int64_t>(nchunks - kidx, ks) : 0;
  const int64_t task0 = Ops::kSlotMajor ? static_cast<int64_t>(slot) * gridDim.x + blockIdx.x
                                        : static_cast<int64_t>(blockIdx.x) * slots + slot;
  const int64_t task_step = static_cast<int64_t>(gridDim.x) * slots;
  const int64_t my_tasks = task0 < a.ntasks ? ceil_div<int64_t>(a.ntasks - task0, task_step) : 0;
  const int64_t items = my_tasks * my_chunks;

  if (lane == 0) {
    for (int s = 0; s < nst; ++s) mbar_init(&bars[s], 1);
    kernels::mbar_init_fence();
  }
  __syncwarp();

  // Lane 0 issues items in order, nst − 1 ahead of the consumer (nst with kFillBeforeWait): for the
  // next item (the task whose first row is issue_row, at byte issue_row_off; its local chunk
  // issue_c, first block issue_blk) it copies each row's chunk as its 16-byte aligned cover. Byte
  // offsets are 32-bit (stream_supported: the matrix is below 4 GiB) and advance incrementally:
  // this bookkeeping is executed by the whole warp, so it is kept short.
  const uint32_t row_bytes32 = static_cast<uint32_t>(row_bytes);
  const uint32_t last_row_off = static_cast<uint32_t>(a.rows - 1) * row_bytes32;
  const uint32_t rows32 = static_cast<uint32_t>(a.rows);
  const uint32_t task_row_step = static_cast<uint32_t>(task_step) * kRows;
  // Whole rows in one chunk (rows of at most kChunkCols columns, no column split, a task's kRows
  // rows a 16-byte multiple): a task's rows are one contiguous range, copied at once, row i at
  // i · row_bytes. Half the copies for the same bytes: 7B steps on the H200, Q4_0 1,745.8 /
  // 1,743.7 → 1,687.6 / 1,687.4 µs, Q4_K_M 2,127.3 / 2,129.3 → 2,104.9 / 2,111.1
  // (docs/performance.md, round 23). Rows of 8 bytes past a 16-byte multiple (SmolLM2's Q4_1 LM
  // head: 360 bytes) qualify too: a task starts at an even row, so at a 16-byte boundary, and
  // a task of one row would need an odd row count, which stream_supported refuses for them (the
  // matrix would not end on a 16-byte boundary); row 1 then sits 8 bytes past a boundary in the
  // stage, an offset the per-piece form's lead bytes also give (H100, that LM head alone: 15.0 →
  // 14.0 µs; docs/performance.md, round 41). The even row count, stream_supported's rule, is
  // checked here too, so the copy length stays a 16-byte multiple however the kernel is reached.
  const bool whole_rows =
      ks == 1 && nchunks == 1 && (row_bytes % 16 == 0 || (row_bytes % 8 == 0 && a.rows % 2 == 0));
  uint32_t issue_row = static_cast<uint32_t>(task0) * kRows;  // first row of the item's task
  uint32_t issue_row_off = issue_row * row_bytes32;
  uint32_t issue_blk = static_cast<uint32_t>(kidx) * cb;  // first block of the item's chunk
  int64_t issued = 0, issue_c = 0;
  int issue_s = 0;  // stage of the next item
  const auto issue = [&]() {
    if (issued >= items) return;
    if (lane == 0 && whole_rows) {
      const uint32_t len = min(static_cast<uint32_t>(kRows), rows32 - issue_row) * row_bytes32;
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
      mbar_arrive_expect_tx(&bars[issue_s], len);
      bulk_copy(stages + issue_s * stage_bytes, a.w + issue_row_off, len, &bars[issue_s]);
    } else if (lane == 0) {
      const uint32_t cofs = issue_blk * kBB;
      const uint32_t clen = min(static_cast<uint32_t>(cb), static_cast<uint32_t>(nb) - issue_blk) *
                            static_cast<uint32_t>(kBB);
      uint32_t a0[kRows], len[kRows];
      uint32_t total = 0;
#pragma unroll
      for (int i = 0; i < kRows; ++i) {
        // Rows past the end re-read the last row (their results are not stored).
        const uint32_t roff =
            issue_row + i < rows32 ? issue_row_off + i * row_bytes32 : last_row_off;
        const uint32_t start = roff + cofs;
        a0[i] = start & ~15u;
        len[i] = ((start + clen + 15u) & ~15u) - a0[i];
        total += len[i];
      }
      // Earlier generic-proxy reads of this stage are ordered before the async-proxy refill.
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
      mbar_arrive_expect_tx(&bars[issue_s], total);
#pragma unroll
      for (int i = 0; i < kRows; ++i) {
        bulk_copy(stages + issue_s * stage_bytes + i * region, a.w + a0[i], len[i], &bars[issue_s]);
      }
    }
    ++issued;
    if (++issue_s == nst) issue_s = 0;
    issue_blk += static_cast<uint32_t>(ks * cb);
    if (++issue_c == my_chunks) {
      issue_c = 0;
      issue_blk = static_cast<uint32_t>(kidx) * cb;
      issue_row += task_row_step;
      issue_row_off += task_row_step * row_bytes32;
    }
  };

  // Weights do not depend on earlier kernels: start streaming before the PDL wait.
  constexpr bool fill = Ops::kFillBeforeWait;
  for (int s = 0; s < (fill ? nst : nst - 1); ++s) issue();
  kernels::grid_dependency_trigger();
  kernels::grid_dependency_wait();

  const int8_t* sx = static_cast<const int8_t*>(a.x.split) + x_split_stream_offset(a.cols);
  const uint32_t stages_addr = smem_addr(stages);
  // Tiled weights: the bias or residual of the row this lane stores (kernels::row_addend) is
  // read when its task begins (the first task's here, after the PDL wait, the next one's after
  // each store), not in the store. H200, 7B steps, build against build reading it in the store:
  // Q8_0 −0.7%, Q4_0 −0.5%; on GGUF blocks (Q4_K_M) +0.35%, no measurable gain (passes spread
  // up to 0.3%), so those keep the read in the store (docs/performance.md, round 21).
  constexpr bool kEarlyAddend = kTiled;
  const bool adder = kidx == 0 && lane < kRows;
  float add = 0.0f;
  const auto load_add = [&](int64_t tk) {
    const int64_t r = (task0 + tk * task_step) * kRows + lane;
    if (adder && tk < my_tasks && r < a.rows) add = kernels::row_addend(a.y, r);
  };
  const auto store = [&](int64_t r, float v) {
    if constexpr (kEarlyAddend) {
      kernels::store_row_added(a.y, r, v, add);
    } else {
      kernels::store_row(a.y, r, v);
    }
  };
  if constexpr (kEarlyAddend) load_add(0);

  float acc[kRows];
#pragma unroll
  for (int i = 0; i < kRows; ++i) acc[i] = 0.0f;

  // Tasks with no chunk for this warp (ks > nchunks) still take part in the slot's reduction.
  int cs = 0;         // stage of the item being consumed
  uint32_t cpar = 0;  // and the parity of the mbarrier phase it waits for
  uint32_t crow = static_cast<uint32_t>(task0) * kRows;  // first row of the current task
  for (int64_t tk = 0; tk < my_tasks; ++tk, crow += task_row_step) {
    uint32_t blk0 = static_cast<uint32_t>(kidx) * cb;  // first block of the current chunk
    for (int64_t c = 0; c < my_chunks; ++c, blk0 += static_cast<uint32_t>(ks * cb)) {
      if (!fill) issue();  // the stage consumed last, refilled nst − 1 items ahead
      mbar_wait(&bars[cs], cpar);
      const int tiles =
          static_cast<int>(min(static_cast<uint32_t>(cb), static_cast<uint32_t>(nb) - blk0)) *
          kTilesPerBlock;
      if (a.probe != 1) {
        // Shared address of each row's chunk: the stage region plus the piece's lead bytes (the
        // low 4 bits of its global offset).
        uint32_t chunk[kRows];
#pragma unroll
        for (int i = 0; i < kRows; ++i) {
          const uint32_t row = min(crow + i, rows32 - 1);
          const uint32_t lead = (row * row_bytes32 + blk0 * kBB) & 15u;
          chunk[i] =
              stages_addr + cs * stage_bytes + (whole_rows ? i * row_bytes32 : i * region + lead);
        }
        // Probe 3: every chunk reads the first chunk's x' (L1-resident): the cost of the math
        // alone.
        const int64_t tile0 = a.probe == 3 ? 0 : static_cast<int64_t>(blk0) * kTilesPerBlock;
        // The ring kernel's chunk_dot, written out: a build calling it here (the ring form off)
        // ran the 7B Q4_0 step 1.5% slower than the build before (H200, docs/performance.md,
        // round 24). Each lane's place in both rows' chunks, and for a split last pass (below)
        // in the row of its half-warp: computed once per chunk.
        typename Ops::Cursor cur[kRows];
#pragma unroll
        for (int i = 0; i < kRows; ++i) cur[i] = Ops::cursor(chunk[i], lane);
#pragma unroll
        for (int jj = 0; jj < kTilesPerChunk; jj += 32) {
          // This pass's 32 tiles are one group of the stream layout (chunks start at multiples
          // of 32 tiles).
          const int8_t* g = sx + (tile0 + jj) / kStreamGroupTiles * kStreamGroupBytes;
          if (tiles - jj > 0 && tiles - jj <= 16) {
            // A last pass of at most 16 tiles (3584 columns: 112 tiles, 3.5 passes): lanes 0-15
            // take row 0, lanes 16-31 row 1, instead of half the warp idling over both rows.
            if (jj + (lane & 15) < tiles) {
              const XTile x = load_x_tile<Ops::kSx, Ops::kLo>(g, lane & 15);
              const bool second = lane >= 16;
              const typename Ops::Cursor half =
                  Ops::cursor(second ? chunk[1] : chunk[0], lane & 15);
              const float v = Ops::dot(half, jj / 32, x, tiles - jj);
              acc[0] += second ? 0.0f : v;
              acc[1] += second ? v : 0.0f;
            }
          } else if (jj + lane < tiles) {
            const XTile x = load_x_tile<Ops::kSx, Ops::kLo>(g, lane);
            const int n = min(32, tiles - jj);
#pragma unroll
            for (int i = 0; i < kRows; ++i) acc[i] += Ops::dot(cur[i], jj / 32, x, n);
          }
        }
      }
      __syncwarp();       // every lane is done with stage cs before lane 0 refills it
      if (fill) issue();  // stage cs itself, nst items ahead
      if (++cs == nst) {
        cs = 0;
        cpar ^= 1;
      }
    }
    // Task done: reduce over the warp, then over the slot's ks warps in a fixed order.
    const int64_t task = task0 + tk * task_step;
#pragma unroll
    for (int i = 0; i < kRows; ++i) acc[i] = kernels::warp_sum(acc[i]);
    if (ks == 1) {
      if (lane < kRows) {
        float v = acc[0];
#pragma unroll
        for (int i = 1; i < kRows; ++i) v = lane == i ? acc[i] : v;
        const int64_t r = task * kRows + lane;
        if (r < a.rows) store(r, v);
      }
    } else {
      float* part = partial + (tk & 1) * kWarps * kRows;
      if (lane == 0) {
#pragma unroll
        for (int i = 0; i < kRows; ++i) part[warp * kRows + i] = acc[i];
      }
      kernels::named_barrier(1 + slot, 32 * ks);
      if (kidx == 0 && lane < kRows) {
        float v = 0.0f;
        for (int k = 0; k < ks; ++k) v += part[(slot * ks + k) * kRows + lane];
        const int64_t r = task * kRows + lane;
        if (r < a.rows) store(r, v);
      }
    }
    if constexpr (kEarlyAddend) load_add(tk + 1);
#pragma unroll
    for (int i = 0; i < kRows; ++i) acc[i] = 0.0f;
  }
}

// ---- the ring kernel (whole rows) --------------------------------------------------------------
// Where rows are 16-byte multiples and two slots of a group fit the shared memory (the 7B QKV, o,
// gate/up and LM-head matrices of Q4_0, Q8_0 and Q4_K; groups of 32-column GGUF blocks that are
// 16-byte multiples, such as SmolLM2's Q4_1 LM head, with ring_slot_pad after each slot:
// ring_gguf_takes; Q6_K groups that are 16-byte multiples: ring_copyable), a CTA of kRW warps
// streams groups of kRW · kRows consecutive rows (32 KiB for 16 Q4_0 rows of 3,584 columns) with
// one bulk copy each into a ring of `slots` shared-memory slots, instead of each warp copying its
// own two rows (4 KB). A standalone probe of the 7B step's weight stream
// (docs/probes/persistent_stream.cu) streamed 32-64 KiB copies at 81% of the read bandwidth against
// 58-75% for 8-16 KiB ones. Warp w takes rows 2w and 2w + 1 of each group (the stream kernel's
// math, chunk_dot; with 4 rows per warp, kR = 4, rows 4w to 4w + 3); the last warp done with a slot
// (a counter per slot) refills it with the CTA's group `slots` ahead. CTA b takes groups b,
// b + grid, ...

//
// Long rows (the down projections: 16 rows of 10,656 bytes do not fit two slots) take the split
// form (kPairs < kRW): groups of 2 · kPairs rows, kRW / kPairs warps on each pair of rows, each
// taking a contiguous share of the row's 32-tile passes; the last warp done with a slot adds
// the warps' partial sums of each row in warp order (deterministic) and stores the rows.

constexpr int kMaxRingSlots = 4;
constexpr int kMaxRingWarps = 16;

/// Dynamic shared memory of the ring kernel: the slots, then kMaxRingSlots mbarriers and counters,
/// then for the split form (`split`) every slot's partial sums (a float per warp and row).
__host__ __device__ constexpr int ring_smem(int slot_bytes, int slots, bool split = false) {
  return slots * slot_bytes + kMaxRingSlots * (8 + 8) +
         (split ? kMaxRingSlots * kMaxRingWarps * kRows * 4 : 0);
}

/// Bytes after each ring slot: the 32-column GGUF blocks' decoders read one word past a row's last
/// block (the per-warp form's regions leave room for it), so where those blocks run in the ring
/// (DECODEBENCH_GEMV_RING_GGUF) a slot's last row must not reach into the next slot, which a copy
/// may be filling. 16 keeps the slots 16-byte aligned. The tiled layout and the K-quants read
/// nothing past a row: 0.
template <typename Ops, bool kTiled>
__host__ __device__ constexpr uint32_t ring_slot_pad() {
  return kTiled || Ops::kBE == 256 ? 0u : 16u;
}

/// kMinCtas: the CTAs per SM the compiler must leave registers for (__launch_bounds__; ring_ctas).
template <WeightType T, bool kTiled, int kRW, int kPairs = kRW, int kR = kRows,
          int kMinCtas = 16 / kRW>
__global__ void __launch_bounds__(kRW * 32, kMinCtas) gemv_ring_kernel(const KernelArgs a) {
  using Ops = typename OpsFor<T, kTiled>::type;
  constexpr int kTilesPerBlock = Ops::kBE / 32;
  constexpr int kTilesPerChunk = Ops::kChunkCols / Ops::kBE * kTilesPerBlock;
  constexpr int kChunkBytes = Ops::kChunkCols / Ops::kBE * Ops::kBB;
  constexpr int kSplit = kRW / kPairs;  // warps on one pair of rows
  // Rows per warp: kR in the whole-row form, a pair in the split form.
  constexpr uint32_t kGroupRows = kPairs * (kSplit > 1 ? kRows : kR);
  static_assert(kRW % kPairs == 0 && kRW <= kMaxRingWarps, "whole pairs of rows per group");
  static_assert(kR == kRows || (kSplit == 1 && kR == 4), "4 rows per warp: whole-row form only");
  static_assert(kTilesPerChunk % 32 == 0 && 32 % kTilesPerBlock == 0, "passes of whole blocks");
  extern __shared__ __align__(128) uint8_t smem[];

  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int slots = a.ring_slots;
  const uint32_t nb = static_cast<uint32_t>(a.cols / Ops::kBE);
  const uint32_t row_bytes = nb * static_cast<uint32_t>(Ops::kBB);
  const uint32_t slot_bytes = kGroupRows * row_bytes + ring_slot_pad<Ops, kTiled>();
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + slots * slot_bytes);
  uint32_t* done = reinterpret_cast<uint32_t*>(full + kMaxRingSlots);
  // Split form: partial sums [slot][warp][row of the pair].
  float* partial = reinterpret_cast<float*>(done + 2 * kMaxRingSlots);
  const uint32_t rows = static_cast<uint32_t>(a.rows);
  const uint32_t groups = (rows + kGroupRows - 1) / kGroupRows;
  const uint32_t mine = blockIdx.x < groups ? (groups - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;

  if (threadIdx.x == 0) {
    for (int s = 0; s < slots; ++s) {
      mbar_init(&full[s], 1);
      done[s] = 0;
    }
    kernels::mbar_init_fence();
  }
  __syncthreads();

  // Group k of this CTA into slot s: its rows are one contiguous byte range (32-bit offsets:
  // stream_supported keeps the matrix below 4 GiB).
  const auto issue = [&](uint32_t k, int s) {
    const uint32_t r0 = (blockIdx.x + k * gridDim.x) * kGroupRows;
    const uint32_t len = min(kGroupRows, rows - r0) * row_bytes;
    // Earlier generic-proxy reads of this slot are ordered before the async-proxy refill.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    mbar_arrive_expect_tx(&full[s], len);
    bulk_copy(smem + s * slot_bytes, a.w + r0 * row_bytes, len, &full[s]);
  };
  // Weights do not depend on earlier kernels: every slot is asked for before the PDL wait.
  if (threadIdx.x == 0) {
    for (int s = 0; s < slots && static_cast<uint32_t>(s) < mine; ++s) issue(s, s);
  }
  kernels::grid_dependency_trigger();
  kernels::grid_dependency_wait();

  const int8_t* sx = static_cast<const int8_t*>(a.x.split) + x_split_stream_offset(a.cols);
  const uint32_t ring = smem_addr(smem);
  const int tiles = static_cast<int>(nb) * kTilesPerBlock;
  if constexpr (kSplit > 1) {
    // Warp w takes pair w / kSplit of each group and its share part of the row's passes: shares
    // of ⌊passes / kSplit⌋ or one more, contiguous, so x' is read once per pair.
    const int pair = warp / kSplit;
    const int part = warp % kSplit;
    const int passes = (tiles + 31) / 32;
    const int t0 = part * passes / kSplit * 32;
    const int t1 = min(tiles, (part + 1) * passes / kSplit * 32);
    int s = 0;
    uint32_t parity = 0, use = 0;
    for (uint32_t k = 0; k < mine; ++k) {
      const uint32_t g0 = (blockIdx.x + k * gridDim.x) * kGroupRows;  // the group's first row
      const uint32_t row0 = g0 + pair * kRows;
      // Row g0 + lane's bias or residual, read while the slot's bytes arrive: whichever warp
      // ends up last stores the rows with it, and its refill then waits on no global load.
      float add = 0.0f;
      if (lane < static_cast<int>(kGroupRows) && g0 + lane < rows) {
        add = kernels::row_addend(a.y, g0 + lane);
      }
      mbar_wait(&full[s], parity);
      float acc[kRows];
#pragma unroll
      for (int i = 0; i < kRows; ++i) acc[i] = 0.0f;
      if (row0 < rows && a.probe != 1) {
        const uint32_t row_addr = ring + s * slot_bytes + pair * kRows * row_bytes;
        for (int t = t0; t < t1; t += kTilesPerChunk) {
          const uint32_t off = static_cast<uint32_t>(t / kTilesPerBlock * Ops::kBB);
          uint32_t chunk[kRows];
#pragma unroll
          for (int i = 0; i < kRows; ++i) chunk[i] = row_addr + i * row_bytes + off;
          chunk_dot<Ops, kTilesPerChunk>(chunk, min(kTilesPerChunk, t1 - t),
                                         sx + t / kStreamGroupTiles * kStreamGroupBytes, lane, acc);
        }
      }
#pragma unroll
      for (int i = 0; i < kRows; ++i) acc[i] = kernels::warp_sum(acc[i]);
      float* part_s = partial + s * kMaxRingWarps * kRows;
      if (lane == 0) {
#pragma unroll
        for (int i = 0; i < kRows; ++i) part_s[warp * kRows + i] = acc[i];
      }
      __syncwarp();  // every lane is done with slot s
      uint32_t before = 0;
      if (lane == 0) {
        // release: this warp's reads of the slot and its partial sums; acquire (the last warp):
        // every other warp's.
        asm volatile("atom.acq_rel.cta.shared::cta.add.u32 %0, [%1], 1;\n"
                     : "=r"(before)
                     : "r"(smem_addr(&done[s]))
                     : "memory");
      }
      before = __shfl_sync(0xFFFFFFFFu, before, 0);
      if (before == (use + 1) * kRW - 1) {
        __syncwarp();  // lane 0's acquire orders the other lanes' reads of the partial sums
        // Lane r adds row r's partial sums in warp order and stores it with its bias or residual.
        if (lane < static_cast<int>(kGroupRows) && g0 + lane < rows) {
          const int pr = lane / kRows, i = lane % kRows;
          float v = 0.0f;
#pragma unroll
          for (int j = 0; j < kSplit; ++j) v += part_s[(pr * kSplit + j) * kRows + i];
          kernels::store_row_added(a.y, g0 + lane, v, add);
        }
        __syncwarp();  // the partial sums of slot s are read before its next group can write them
        if (lane == 0 && k + slots < mine) issue(k + slots, s);
      }
      if (++s == slots) {
        s = 0;
        parity ^= 1;
        ++use;
      }
    }
    return;
  }
  int s = 0;
  uint32_t parity = 0, use = 0;
  for (uint32_t k = 0; k < mine; ++k) {
    const uint32_t row0 = (blockIdx.x + k * gridDim.x) * kGroupRows + warp * kR;
    // The row's bias or residual, read while the slot's bytes arrive.
    float add = 0.0f;
    if (lane < kR && row0 + lane < rows) add = kernels::row_addend(a.y, row0 + lane);
    mbar_wait(&full[s], parity);
    float acc[kR];
#pragma unroll
    for (int i = 0; i < kR; ++i) acc[i] = 0.0f;
    if (row0 < rows && a.probe != 1) {
      // Rows past the end read bytes of the slot no copy wrote; their sums are not stored. A row
      // of several chunks (Q8_0's groups of 1,024 columns) is taken chunk by chunk.
      const uint32_t row_addr = ring + s * slot_bytes + warp * kR * row_bytes;
      for (int c = 0; c * kTilesPerChunk < tiles; ++c) {
        uint32_t chunk[kR];
#pragma unroll
        for (int i = 0; i < kR; ++i) {
          chunk[i] = row_addr + i * row_bytes + c * static_cast<uint32_t>(kChunkBytes);
        }
        chunk_dot<Ops, kTilesPerChunk, kR>(
            chunk, min(kTilesPerChunk, tiles - c * kTilesPerChunk),
            sx + c * (kTilesPerChunk / kStreamGroupTiles) * kStreamGroupBytes, lane, acc);
      }
    }
    __syncwarp();  // every lane is done with slot s
    if (lane == 0) {
      // acq_rel: this warp's reads of the slot happen before the last warp's refill.
      uint32_t before;
      asm volatile("atom.acq_rel.cta.shared::cta.add.u32 %0, [%1], 1;\n"
                   : "=r"(before)
                   : "r"(smem_addr(&done[s]))
                   : "memory");
      if (before == (use + 1) * kRW - 1 && k + slots < mine) issue(k + slots, s);
    }
#pragma unroll
    for (int i = 0; i < kR; ++i) acc[i] = kernels::warp_sum(acc[i]);
    if (lane < kR && row0 + lane < rows) {
      float v = lane == 0 ? acc[0] : acc[1];
#pragma unroll
      for (int i = 2; i < kR; ++i) v = lane == i ? acc[i] : v;
      kernels::store_row_added(a.y, row0 + lane, v, add);
    }
    if (++s == slots) {
      s = 0;
      parity ^= 1;
      ++use;
    }
  }
}

}  // namespace

namespace {

/// Calls f.template operator()<T, kTiled>() for quantized type t in the requested layout; a type
/// the tiled stream kernel does not read is refused (false) without instantiating it.
template <typename F>
bool dispatch_stream(WeightType t, bool tiled, F&& f) {
  bool ok = false;
  kernels::dispatch_quant_type(t, [&]<WeightType T>() {
    if (!tiled) {
      f.template operator()<T, false>();
      ok = true;
    } else if constexpr (kTiledStream<T>) {
      f.template operator()<T, true>();
      ok = true;
    }
  });
  return ok;
}

}  // namespace

bool stream_supported(WeightType t, const void* w, int64_t rows, int64_t cols, int major,
                      bool tiled) {
  if (major < 9) return false;  // bulk copies and mbarrier transaction counts: sm_90
  if (tiled && !quant::tiled_layout_supported(t, cols)) return false;
  bool ok = false;
  const bool known = dispatch_stream(t, tiled, [&]<WeightType T, bool kTiled>() {
    using Ops = typename OpsFor<T, kTiled>::type;
    const int64_t end =
        reinterpret_cast<int64_t>(w) + rows * (cols / Ops::kBE) * static_cast<int64_t>(Ops::kBB);
    ok = cols % Ops::kBE == 0 && (reinterpret_cast<uintptr_t>(w) & 15u) == 0 && (end & 15) == 0;
    // The kernel's byte offsets within the matrix are 32-bit.
    ok = ok && rows * (cols / Ops::kBE) * static_cast<int64_t>(Ops::kBB) < (int64_t{1} << 32) - 64;
    // The pipeline's shared memory must fit a block (not so on every GPU).
    ok = ok && stream_smem(Ops::kChunkCols / Ops::kBE, Ops::kBB, Ops::kStages) <= smem_optin();
  });
  return known && ok;
}

namespace {

/// The ring form's shape: warps per CTA, slots, rows per warp.
struct RingShape {
  int warps = 0;  ///< 0: the ring forms off
  int slots = 0;
  int rows = kRows;
  bool by_default = false;  ///< DECODEBENCH_GEMV_RING unset or empty
};

/// The ring form's default shape for type t, measured on the H200 (7B steps, median TPOT):
/// 8 warps of 2 rows and 2 slots (round 24: Q4_0 −2.0%, Q8_0 −3.1%, Q4_K_M −2.0% against the
/// per-warp form; 8 × 3 tied, 16 × 2 and 16 × 3 gained less), except Q8_0: 4 warps of 4 rows
/// and 1 slot (round 27: 2,276–2,285 µs against 2,360–2,363; its groups of 16 rows of 3,584
/// columns are 61 KB, so two slots held one CTA per SM, one slot three). With 4 rows per warp
/// Q4_0 and Q4_K_M lost 2–4% (4 × 2 × 4: 1,726 against 1,657 µs; 2,061–2,069 against 2,026–2,028).
/// On 32-column GGUF blocks Q8_0's default becomes 8 warps of 2 rows and 2 slots
/// (gguf_ring_shape: no GGUF-block kernel has 4 rows per warp).
/// DECODEBENCH_GEMV_RING overrides it for every type, for measurements: "0" turns the ring forms
/// off (the split form too: the per-warp kernel everywhere); "WxS" asks for W = 8 or 16 warps of
/// 2 rows and S = 1 to kMaxRingSlots slots; "WxSxR" also gives the rows per warp R: 2 (W = 8 or
/// 16) or 4 (W = 4 or 8). Any other value throws decodebench::Error (exit 2).
RingShape ring_request(WeightType t) {
  const char* e = std::getenv("DECODEBENCH_GEMV_RING");
  if (e == nullptr || *e == '\0') {
    return t == WeightType::kQ8_0 ? RingShape{4, 1, 4, true} : RingShape{8, 2, kRows, true};
  }
  if (std::string(e) == "0") return {0, 0, kRows};
  int w = 0, s = 0, r = kRows;
  char sep = 0, end = 0;
  // "WxS" fills 2 fields, "WxSxR" 4 (with sep == 'x'); anything after them fills one more.
  const int n = std::sscanf(e, "%dx%d%c%d%c", &w, &s, &sep, &r, &end);
  const bool form_ok = n == 2 || (n == 4 && sep == 'x');
  const bool shape_ok = (r == 2 && (w == 8 || w == 16)) || (r == 4 && (w == 4 || w == 8));
  if (!form_ok || !shape_ok || s < 1 || s > kMaxRingSlots) {
    throw usage_error(std::string("DECODEBENCH_GEMV_RING: '") + e +
                      "' is neither 0 (the ring form off) nor WxS (W = 8 or 16 warps, S = 1 to " +
                      std::to_string(kMaxRingSlots) +
                      " slots) nor WxSxR (R = 2 rows per warp with W = 8 or 16, or R = 4 with W "
                      "= 4 or 8)");
  }
  return {w, s, r};
}

/// Which matrices in the 32-column GGUF blocks (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0: rows the tiled
/// layout does not take, such as SmolLM2's 576 columns, and Q4_1 and the Q5 types, which stay in
/// GGUF blocks by default) the ring's whole-row form may take: DECODEBENCH_GEMV_RING_GGUF unset or
/// empty: kAuto (ring_gguf_takes); "0": none; "1": every one whose groups it can copy. Any other
/// value throws decodebench::Error (exit 2).
enum class RingGguf { kAuto, kOff, kAll };
RingGguf ring_gguf_request() {
  const char* e = std::getenv("DECODEBENCH_GEMV_RING_GGUF");
  if (e == nullptr || *e == '\0') return RingGguf::kAuto;
  if (std::string(e) == "0") return RingGguf::kOff;
  if (std::string(e) == "1") return RingGguf::kAll;
  throw usage_error(std::string("DECODEBENCH_GEMV_RING_GGUF: '") + e +
                    "' is neither 0 (no ring form on 32-column GGUF blocks) nor 1 (the ring form "
                    "on every matrix in 32-column GGUF blocks it can copy); unset: the default");
}

/// The default (kAuto) for a matrix of `rows` rows of row_bytes bytes in 32-column GGUF blocks of
/// type t, as measured on H100s (median TPOT against DECODEBENCH_GEMV_RING_GGUF=0, alternated;
/// docs/performance.md, rounds 44 to 46): the ring for Q4_1, Q5_0 and Q5_1 at any row length (7B
/// steps in their default GGUF blocks: Q4_1 2,197 → 2,130 µs, Q5_0 2,378 → 2,337, Q5_1 2,551–2,561
/// → 2,489–2,495; Qwen2.5-0.5B Q4_1 568–571 → 549; the SmolLM2 shape, where only the LM head moves,
/// −0.4 to −0.8%) and for Q4_0 rows under 1 KiB (SmolLM2's 324-byte rows 462.2–462.4 → 457.7–457.8
/// µs, Qwen2.5-0.5B's 504-byte rows 558.5–558.6 → 549.0–549.2), but not for longer Q4_0 rows
/// (7B Q4_0 with --weight-layout gguf, 2,016-byte rows: 2,046 → 2,068 µs, branch build 26fb6c2
/// with the variable 1). 1 KiB lies between the rows measured faster (504 bytes) and slower
/// (2,016); Q4_0 rows that long mostly go up in the tiled layout (CudaBackend::tiled). Q8_0 rows
/// under 768 bytes too, in the 2-row shape gguf_ring_shape gives them (SmolLM2's Q8_0 LM head,
/// 612-byte rows: 14.3 → 12.6 µs alone, the SmolLM2-shape Q8_0 step 484.0 → 482.2 µs), but, in
/// matrices under kRingGgufManyRows rows (below), not the Qwen2.5-0.5B shape's 952-byte rows (its o
/// projection and LM head in GGUF blocks: step 577.4–577.7 → 583.1 µs with the ring, round 45) nor
/// longer ones (7B Q8_0 with --weight-layout gguf, 3,808-byte rows: 3,095–3,100 → 3,123 µs with the
/// variable 1, round 45; in the tiled layout two slots of 16 such rows held one CTA per SM: round
/// 27). 768 lies between the 612 bytes measured faster and the 952 measured slower. Longer Q8_0
/// rows take it where the matrix has at least kRingGgufManyRows rows (the LM heads of 65,536-token
/// and larger vocabularies): alone (bench-kernels, PDL, round 46) the ring was faster there at each
/// row length measured (65,536 × 896 23.3 → 22.7 µs, 151,936 × 896 52.4–52.6 → 50.5–50.6, 65,536 ×
/// 3,584 84.3–84.5 → 83.7–83.8, 152,064 × 3,584 193.6–193.7 → 188.1–188.4) and slower or even on
/// matrices of fewer rows of those lengths (896 × 896 1.59 → 1.90, 32,768 × 896 11.7 → 12.5, 45,056
/// × 896 16.2 both, 37,888 × 3,584 48.9 → 50.3–50.4, 49,152 × 3,584 63.4–63.5 → 64.1–64.2); the
/// Qwen2.5-0.5B-shape Q8_0 step, its LM head on the ring and its o projection per warp, 580.5 →
/// 578.8–579.1 µs. Not Q4_0: its GEMVs alone gained with the ring at most row counts (4,608 × 3,584
/// too) while its 7B step lost (round 44), and with the ring on its LM head alone that step did not
/// move (2,045.5–2,045.8 → 2,043.4–2,046.8 µs).
constexpr int64_t kRingGgufManyRows = 65536;
constexpr bool ring_gguf_takes(WeightType t, int64_t rows, int64_t row_bytes) {
  return t == WeightType::kQ4_1 || t == WeightType::kQ5_0 || t == WeightType::kQ5_1 ||
         (t == WeightType::kQ4_0 && row_bytes < 1024) ||
         (t == WeightType::kQ8_0 && (row_bytes < 768 || rows >= kRingGgufManyRows));
}

/// Whether Q6_K rows that are not 16-byte multiples may take the ring forms (round 51):
/// DECODEBENCH_GEMV_RING_Q6_K unset or empty: the default (true); "0": no (the per-warp form, as
/// before round 51); "1": yes. Any other value throws decodebench::Error (exit 2). Q6_K's
/// 210-byte blocks make the 7B shape's rows 2,940 bytes (3,584 columns) and 15,540 (18,944); its
/// decoders read 16- and 32-bit words only (the GGUF blocks' funnel-shifted, the tiled layout's
/// aligned), so rows of a 4-byte multiple can lie back to back in a slot, where the group's copy,
/// and the last group's, are 16-byte multiples (ring_copyable). Measured on an H100
/// (docs/performance.md, round 51; median TPOT, alternated with "0"): 7B Q4_K_M 2,225.7 / 2,225.8
/// → 2,198.6 / 2,194.9 µs (its Q6_K LM head 155.9 → 147.6 µs alone, the 14 Q6_K down projections
/// 25.9 → 23.2 µs each in the split form of 2 pairs); a Qwen2.5-1.5B-shaped Q4_K_M model (its Q6_K
/// LM head of 1,260-byte rows) 1,075.4–1,077.2 → 1,065.2–1,065.5 µs.
bool ring_q6_k_request() {
  const char* e = std::getenv("DECODEBENCH_GEMV_RING_Q6_K");
  if (e == nullptr || *e == '\0') return true;
  if (std::string(e) == "0") return false;
  if (std::string(e) == "1") return true;
  throw usage_error(std::string("DECODEBENCH_GEMV_RING_Q6_K: '") + e +
                    "' is neither 0 (Q6_K rows that are not 16-byte multiples per warp) nor 1 "
                    "(the ring forms where their groups can be copied); unset: the default");
}

/// Where the whole-row ring form's groups of a matrix would leave more than an eighth of the SMs
/// (Q4_K: any SM) without a CTA (ring_few_groups), the split form of at most this many row pairs
/// takes it instead (round 52), where one of its groups can be copied and every warp of a pair of
/// rows gets at least one 32-tile pass (split_takes_few_groups). Measured on an H100
/// (docs/performance.md, round 52; median TPOT against the whole-row form, alternated; the first
/// figures with the rule before its 7/8 threshold, none of whose moves here the threshold changes;
/// as adopted, 1.5B Q4_0 889.9 / 890.3 → 855.1 / 855.4 µs):
/// - moved by this default: a Qwen2.5-1.5B-shaped Q4_0 step 888.5 / 891.3 → 848.3 / 852.5 µs and
///   Q4_K_M 964.8 → 948.3 µs (their down projections, 96 groups of 16 rows on 132 SMs: 1 pair),
///   Qwen2.5-0.5B Q4_0 548.2 → 525.4 µs (down, 56 groups: 2 pairs), 7B Q4_K_M 2,197.5 → 2,170.9
///   µs (its 14 Q6_K v projections, 32 groups: 2 pairs);
/// - left out: 4 pairs (rows of 1,536 columns; measured before the threshold, with the 1.5B
///   QKV and o: 1.5B Q4_K_M 948.3 → 966.8 µs), and matrices whose groups leave fewer SMs idle
///   except Q4_K's (kFewGroupsPerSmQ4_K).
inline constexpr int kFewGroupsPairs = 2;

/// The few-group threshold (ring_few_groups) in whole-row groups per SM: below 7/8 of the SMs,
/// more than an eighth of them without a CTA (round 52). The 3B shape's down projections (128
/// groups on 132 SMs) stay above it for every type but Q4_K: in the split form its tiled Q4_0 step
/// ran slower on an H100 (round 52: 1,283.1 / 1,275.7 → 1,311.3 / 1,312.4 µs; round 53: 1,283.4 /
/// 1,283.0 → 1,319.0 / 1,319.2 µs). Round 53 also measured 3 per SM, which moves the 7B q/o and
/// QKV GEMVs (224 and 288 groups) to the split form of 2 pairs: slower on an H100 (7B Q4_0
/// 1,902.3 / 1,903.1 → 1,937.7 / 1,937.7 µs, Q4_K_M 2,189.1 → 2,221.6, Q8_0 with its own 2 slots
/// 2,950.3 → 2,978.2).
inline constexpr double kFewGroupsPerSm = 0.875;

/// Q4_K's few-group threshold: below one whole-row group per SM, so the 3B shape's
/// Q4_K down projections (128 groups of 16 rows of 11,008 columns on 132 SMs, one 99 KB copy per
/// CTA) take the split form of 1 pair. Measured on H100s (median TPOT of the Qwen2.5-3B-shaped
/// Q4_K_M step, 18 of whose 36 down projections are Q4_K, alternated): round 52 1,502.2 / 1,502.1
/// → 1,476.1 / 1,475.6 µs, round 53 1,502.2 / 1,502.1 → 1,475.3 / 1,480.3 µs (−1.5 to −1.8%)
/// and, as adopted, 1,502.3 / 1,502.1 → 1,475.4 / 1,475.8 µs.
inline constexpr double kFewGroupsPerSmQ4_K = 1.0;

/// What matrices of few whole-row groups take (ring_few_groups_request): the split form of at most
/// `pairs` row pairs (0: the whole-row form), with `slots` slots (0: those of
/// DECODEBENCH_GEMV_RING_LONG's shape), where the whole-row groups number fewer than `per_sm`
/// times the SMs (0: the type's default, few_groups_per_sm).
struct FewGroups {
  int pairs = kFewGroupsPairs;
  int slots = 0;
  double per_sm = 0;
};

/// The few-group threshold of type t in whole-row groups per SM: `f.per_sm` where set, else
/// kFewGroupsPerSmQ4_K for Q4_K and kFewGroupsPerSm for the other types.
constexpr double few_groups_per_sm(WeightType t, const FewGroups& f) {
  if (f.per_sm > 0) return f.per_sm;
  return t == WeightType::kQ4_K ? kFewGroupsPerSmQ4_K : kFewGroupsPerSm;
}

/// The split form for matrices of few whole-row groups, from DECODEBENCH_GEMV_RING_FEW_GROUPS (a
/// measurement switch): unset or empty → at most kFewGroupsPairs pairs; "whole" → 0 (the whole-row
/// form wherever it fits, as before round 52); "split:P" (P = 1, 2 or 4) → at most P; "split:PxS"
/// also S = 1 to kMaxRingSlots slots. Without S the split form tries DECODEBENCH_GEMV_RING_LONG's
/// pairs first and takes its slots (its "0" turns this off too, as does Q8_0's split form being
/// off); with S it tries the fewest pairs first, whatever DECODEBENCH_GEMV_RING_LONG says, Q8_0
/// included. The threshold, in whole-row groups per SM, from
/// DECODEBENCH_GEMV_RING_FEW_GROUPS_PER_SM: a decimal (digits, at most one '.') above 0 and at
/// most 64, for every type;
/// unset, each type's default (few_groups_per_sm). Any other value of either throws
/// decodebench::Error (exit 2).
FewGroups ring_few_groups_request() {
  FewGroups f;
  const char* e = std::getenv("DECODEBENCH_GEMV_RING_FEW_GROUPS");
  if (e != nullptr && *e != '\0') {
    const std::string v(e);
    const bool split = v.size() >= 7 && v.compare(0, 6, "split:") == 0 &&
                       (v[6] == '1' || v[6] == '2' || v[6] == '4');
    const bool slots = split && v.size() == 9 && v[7] == 'x' && v[8] >= '1' &&
                       v[8] <= static_cast<char>('0' + kMaxRingSlots);
    if (v == "whole") {
      f.pairs = 0;
    } else if (split && (v.size() == 7 || slots)) {
      f.pairs = v[6] - '0';
      f.slots = slots ? v[8] - '0' : 0;
    } else {
      throw usage_error("DECODEBENCH_GEMV_RING_FEW_GROUPS: '" + v +
                        "' is neither whole (the whole-row ring form wherever it fits) nor "
                        "split:P or split:PxS (P = 1, 2 or 4: the split form of at most P row "
                        "pairs for matrices whose whole-row groups leave SMs idle; S = 1 to " +
                        std::to_string(kMaxRingSlots) + " slots); unset: the default");
    }
  }
  const char* t = std::getenv("DECODEBENCH_GEMV_RING_FEW_GROUPS_PER_SM");
  if (t != nullptr && *t != '\0') {
    // A plain decimal only: strtod alone would also take signs, spaces, exponents and hex.
    const std::string v(t);
    const bool plain = v.find_first_not_of("0123456789.") == std::string::npos &&
                       v.find_first_of("0123456789") != std::string::npos &&
                       v.find('.') == v.rfind('.');
    char* end = nullptr;
    errno = 0;
    const double x = plain ? std::strtod(t, &end) : 0.0;
    if (!plain || end == t || *end != '\0' || errno != 0 || !(x > 0.0 && x <= 64.0)) {
      throw usage_error(
          std::string("DECODEBENCH_GEMV_RING_FEW_GROUPS_PER_SM: '") + t +
          "' is not a decimal number of whole-row groups per SM above 0 and at most 64 "
          "(below it a matrix takes the split form); unset: 1 for Q4_K, 0.875 "
          "for the other types");
    }
    f.per_sm = x;
  }
  return f;
}

/// Whether `groups` whole-row ring groups number fewer than `per_sm` times the `sms` SMs
/// (few_groups_per_sm; by default 0.875, more than an eighth of the SMs without a CTA, and 1 for
/// Q4_K). The 1.5B down projection's 96 groups on 132 SMs do, the 3B shape's 128 only for Q4_K.
constexpr bool ring_few_groups(int64_t groups, int sms, double per_sm) {
  return static_cast<double>(groups) < per_sm * sms;
}

/// Whether the split form of `pairs` row pairs may take a matrix of `cols` columns of few
/// whole-row groups (ring_few_groups), asked for with at most `max_pairs`
/// (ring_few_groups_request): each of the 8 / pairs warps on a pair of rows then has at least one
/// of the row's ⌈cols / 1024⌉ passes of 32 tiles (the 1.5B down projection's 9 passes: 1 pair;
/// 4,864 columns, 5 passes: 2 pairs; 1,536 columns, 2 passes: 4).
constexpr bool split_takes_few_groups(int64_t cols, int pairs, int max_pairs) {
  return pairs >= 1 && pairs <= max_pairs && (cols + 1023) / 1024 >= 8 / pairs;
}

/// Whether every group of `group_rows` rows of `row_bytes` bytes of a matrix of `rows` rows, the
/// last (partial) one too, is a 16-byte multiple: cp.async.bulk copies 16-byte multiples between
/// 16-byte aligned addresses, so each group can be one copy into a slot that starts aligned.
constexpr bool groups_copyable(int64_t rows, int64_t row_bytes, int64_t group_rows) {
  return group_rows > 0 && group_rows * row_bytes % 16 == 0 &&
         (rows % group_rows) * row_bytes % 16 == 0;
}

/// Whether groups of `group_rows` rows of `row_bytes` bytes can be packed ring slots: rows of
/// 16-byte multiples always; with `word_rows` (Q6_K, ring_q6_k_request) rows of 4-byte multiples
/// whose groups are copyable (groups_copyable).
constexpr bool ring_copyable(int64_t rows, int64_t row_bytes, int64_t group_rows, bool word_rows) {
  if (row_bytes % 16 == 0) return true;
  return word_rows && row_bytes % 4 == 0 && groups_copyable(rows, row_bytes, group_rows);
}

/// The ring shape on 32-column GGUF blocks: the requested one, except that Q8_0's default (4 rows
/// per warp, which the GGUF-block ring kernels are not built for) becomes 8 warps of 2 rows and 2
/// slots there.
constexpr RingShape gguf_ring_shape(WeightType t, RingShape requested) {
  if (t == WeightType::kQ8_0 && requested.by_default) return {8, 2, kRows, true};
  return requested;
}

/// The split ring form's default shape for long rows of type t {row pairs per group, slots},
/// measured on the H200 (7B steps, median TPOT, round 27): 1 pair (8 warps on each pair of rows)
/// and 2 slots: Q4_0 1,624–1,633 µs against 1,655–1,657 with the form off, Q4_K_M 2,013–2,014
/// against 2,021–2,023 (1 × 4: 1,637–1,643 and 2,015–2,017; 2 × 4 lost 6% and 3%). Off for Q8_0,
/// whose default ring shape (4 × 1 × 4) ran 1.4% slower with it (2,311–2,314 µs against
/// 2,276–2,285; with 8 × 2 × 2 it gained 1.5%). Types not measured with it (Q4_1, Q5_K, Q6_K)
/// take 1 × 2; where 2 rows are not a 16-byte multiple (the 7B Q6_K down projection's 15,540-byte
/// rows) stream_plan takes 2 pairs (round 51, H100: the fastest forms of bench-kernels' 7B Q6_K
/// GEMVs summed to 66.0% of the read bandwidth with 2 × 2, 65.7–65.8% with 2 × 3, 63.0–63.5%
/// with 2 × 1 and 60.3–60.4% with 4 × 1).
/// DECODEBENCH_GEMV_RING_LONG overrides it for every type: "0" turns it off, "PxS" asks for P =
/// 1, 2 or 4 pairs (8 / P warps per pair) and S = 1 to kMaxRingSlots slots; any other value
/// throws decodebench::Error (exit 2).
std::pair<int, int> ring_long_request(WeightType t) {
  const char* e = std::getenv("DECODEBENCH_GEMV_RING_LONG");
  if (e == nullptr || *e == '\0') {
    return t == WeightType::kQ8_0 ? std::pair<int, int>{0, 0} : std::pair<int, int>{1, 2};
  }
  if (std::string(e) == "0") return {0, 0};
  int pairs = 0, s = 0;
  char end = 0;
  if (std::sscanf(e, "%dx%d%c", &pairs, &s, &end) != 2 ||
      (pairs != 1 && pairs != 2 && pairs != 4) || s < 1 || s > kMaxRingSlots) {
    throw usage_error(std::string("DECODEBENCH_GEMV_RING_LONG: '") + e +
                      "' is neither 0 (the split ring form off) nor PxS (P = 1, 2 or 4 row "
                      "pairs per group, S = 1 to " +
                      std::to_string(kMaxRingSlots) + " slots)");
  }
  return {pairs, s};
}

/// CTAs per SM the registers of the default 8-warp ring kernels (the whole-row form of 2 rows per
/// warp and the split form of 1 pair) are sized for, where the type has a choice (Q4_0 in the
/// tiled layout, Q4_K in GGUF blocks): 2 lets them use up to 128 registers, 3 caps them at 80.
/// docs/performance.md, rounds 34 and 35: Q4_0 takes 3 (7B steps 0.4–1.7% faster on H100s in four
/// sessions, 1.7–2.3% on the H200; its split form then fits 4 CTAs per SM instead of 2), Q4_K 2
/// (with 3 the 7B Q4_K_M steps ran 2.4–3.0% slower on H100s). DECODEBENCH_GEMV_RING_CTAS = 2 or 3
/// overrides it for both types, for measurements; `rounds` (returned as kRingCtasByRounds) picks
/// per matrix for Q4_K (ring_ctas_by_rounds; round 35: 7B Q4_K_M 0.4–0.6% slower than the
/// default on an H100, so not a default) and leaves Q4_0 at 3 (the rule would take 2 for its down
/// projections, which measured slower in the step); any other value throws decodebench::Error
/// (exit 2). Other forms and types keep their budget whatever it says (has_ring_budget; the plan's
/// ring_ctas says what ran).
constexpr int kRingCtasByRounds = -1;  // not a budget: ring_ctas == 0 means "not a ring plan"
int ring_ctas(WeightType t) {
  const char* e = std::getenv("DECODEBENCH_GEMV_RING_CTAS");
  if (e == nullptr || *e == '\0') return t == WeightType::kQ4_0 ? 3 : 2;
  const std::string v(e);
  if (v == "2" || v == "3") return v[0] - '0';
  if (v == "rounds") return t == WeightType::kQ4_0 ? 3 : kRingCtasByRounds;
  throw usage_error("DECODEBENCH_GEMV_RING_CTAS: '" + v +
                    "' is neither 2, 3 nor rounds (the CTAs per SM the ring kernels' registers "
                    "are sized for)");
}

/// The `rounds` budget for one matrix of `ntasks` row groups on `sms` SMs, where the kernel with
/// registers for 2 CTAs per SM fits `ctas2` of them on an SM and the one for 3 fits `ctas3`: 3
/// when its grid streams the groups in fewer CTA-rounds of bytes, i.e. ⌈ntasks / G⌉ · G with
/// G = min(ntasks, sms · ctas) is smaller (each round of G CTAs reads G groups from HBM in about
/// the same time per group, so a last round that is mostly empty costs as much as a full one);
/// else 2. Example, 132 SMs: Q4_K's 7B QKV (288 groups of 16 rows) takes 3 (one round of 288
/// against two of 264); its gate/up (2,368 groups: 9 · 264 = 6 · 396) and o (224) keep 2.
/// A question asked in round 34 (docs/performance.md: Q4_K's QKV ran 16% faster alone with 3,
/// its gate/up slower) and answered in round 35: in the 7B Q4_K_M step it was 0.4–0.6% slower
/// (H100).
int ring_ctas_by_rounds(int64_t ntasks, int sms, int ctas2, int ctas3) {
  const auto cost = [&](int ctas) {
    const int64_t grid = std::min<int64_t>(ntasks, static_cast<int64_t>(sms) * std::max(1, ctas));
    return ceil_div<int64_t>(ntasks, grid) * grid;
  };
  return cost(ctas3) < cost(ctas2) ? 3 : 2;
}

/// A ring plan's register budget: 2 for a form without the choice (`has_budget` false), else
/// `budget` (ring_ctas), or by ring_ctas_by_rounds for `rounds`, with ctas_for(b) = CTAs per SM
/// of the kernel whose registers are sized for b.
template <typename CtasFor>
int plan_ring_ctas(bool has_budget, int budget, int64_t ntasks, int sms, const CtasFor& ctas_for) {
  if (!has_budget) return 2;
  if (budget != kRingCtasByRounds) return budget;
  return ring_ctas_by_rounds(ntasks, sms, ctas_for(2), ctas_for(3));
}

/// The types (and layouts) whose ring kernels have a register budget for 3 CTAs per SM
/// (ring_ctas): Q4_0 in the tiled layout and Q4_K in GGUF blocks. Only they instantiate it.
template <WeightType T, bool kTiled>
constexpr bool kRingBudgetType = (T == WeightType::kQ4_0 && kTiled) ||
                                 (T == WeightType::kQ4_K && !kTiled);

/// Whether the ring kernel of type T (layout kTiled) with `warps` warps, `pairs` row pairs and
/// `rows` rows per warp has that budget: the 8-warp 2-row whole-row form and the split form of 1
/// pair.
template <WeightType T, bool kTiled>
constexpr bool has_ring_budget(int warps, int pairs, int rows) {
  return kRingBudgetType<T, kTiled> && warps == 8 && rows == kRows && (pairs == 8 || pairs == 1);
}

/// DECODEBENCH_GEMV_RING_MAX_CTAS = 1 to 4, for measurements: the ring's whole-row form gets
/// its dynamic shared memory padded so that at most that many CTAs fit an SM (the split and
/// per-warp forms are not touched); unset: no padding. Any other value throws decodebench::Error
/// (exit 2).
int ring_max_ctas() {
  const char* e = std::getenv("DECODEBENCH_GEMV_RING_MAX_CTAS");
  if (e == nullptr || *e == '\0') return 0;
  const std::string v(e);
  if (v.size() == 1 && v[0] >= '1' && v[0] <= '4') return v[0] - '0';
  throw usage_error("DECODEBENCH_GEMV_RING_MAX_CTAS: '" + v +
                    "' is not 1 to 4 (the most CTAs per SM of the ring's whole-row form)");
}

/// `smem` (bytes of dynamic shared memory per CTA) raised so that no more than n CTAs fit an SM by
/// shared memory (n = 0: unchanged); registers may allow fewer still. For n = 1 to 4 the result
/// stays below the opt-in limit on sm_90 (at most 115,713 bytes); the min() keeps it there on any
/// GPU.
int64_t smem_for_max_ctas(int64_t smem, int n) {
  if (n == 0) return smem;
  const int64_t per_cta = smem_per_sm() / (n + 1) + 1;  // n + 1 CTAs of this no longer fit
  return std::max(smem, std::min<int64_t>(per_cta - smem_reserved_per_cta(), smem_optin()));
}

/// The ring kernel of `warps` warps and `pairs` row pairs per group (pairs == warps: the
/// whole-row form, `rows` rows per warp; fewer: the split form, 8 warps of 2 rows only), with
/// registers sized for `ctas` CTAs per SM: 3 where has_ring_budget allows it, else the default
/// (2). Reads no environment: the plan has chosen.
template <WeightType T, bool kTiled>
const void* ring_kernel(int warps, int pairs, int rows = kRows, int ctas = 2) {
  if constexpr (kRingBudgetType<T, kTiled>) {
    if (ctas == 3 && has_ring_budget<T, kTiled>(warps, pairs, rows)) {
      return pairs == 8
                 ? reinterpret_cast<const void*>(&gemv_ring_kernel<T, kTiled, 8, 8, kRows, 3>)
                 : reinterpret_cast<const void*>(&gemv_ring_kernel<T, kTiled, 8, 1, kRows, 3>);
    }
  }
  if (warps == 16 && rows == kRows) {
    return reinterpret_cast<const void*>(&gemv_ring_kernel<T, kTiled, 16>);
  }
  // Only the decoders that read nothing past a row take the split form and 4 rows per warp
  // (stream_plan).
  if constexpr (kTiled || OpsFor<T, kTiled>::type::kBE == 256) {
    if (rows == 4 && pairs == warps) {
      if (warps == 4) return reinterpret_cast<const void*>(&gemv_ring_kernel<T, kTiled, 4, 4, 4>);
      if (warps == 8) return reinterpret_cast<const void*>(&gemv_ring_kernel<T, kTiled, 8, 8, 4>);
    }
    switch (pairs) {
      case 1:
        return reinterpret_cast<const void*>(&gemv_ring_kernel<T, kTiled, 8, 1>);
      case 2:
        return reinterpret_cast<const void*>(&gemv_ring_kernel<T, kTiled, 8, 2>);
      case 4:
        return reinterpret_cast<const void*>(&gemv_ring_kernel<T, kTiled, 8, 4>);
      default:
        break;
    }
  }
  // A split plan must never run the whole-row kernel: its slots would be 16 rows in shared
  // memory sized for 2 · pairs.
  if (pairs != warps || rows != kRows) {
    throw runtime_error(std::string("GEMV: no ring kernel for ") + weight_traits(T).name +
                        " with " + std::to_string(warps) + " warps, " + std::to_string(pairs) +
                        " row pairs and " + std::to_string(rows) + " rows per warp");
  }
  return reinterpret_cast<const void*>(&gemv_ring_kernel<T, kTiled, 8>);
}

}  // namespace

void check_stream_switches() {
  // Every request parses its variable whatever the type; Q4_0 stands for all of them.
  (void)ring_request(WeightType::kQ4_0);
  (void)ring_long_request(WeightType::kQ4_0);
  (void)ring_ctas(WeightType::kQ4_0);
  (void)ring_max_ctas();
  (void)ring_gguf_request();
  (void)ring_q6_k_request();
  (void)ring_few_groups_request();
}

Plan stream_plan(WeightType t, int64_t rows, int64_t cols, int sms, bool tiled) {
  Plan p;
  const bool known = dispatch_stream(t, tiled, [&]<WeightType T, bool kTiled>() {
    using Ops = typename OpsFor<T, kTiled>::type;
    const int64_t nb = cols / Ops::kBE;
    const int cb = Ops::kChunkCols / Ops::kBE;
    const int64_t row_bytes = nb * Ops::kBB;
    const RingShape requested = ring_request(T);
    const auto [long_pairs, long_slots] = ring_long_request(T);  // checked on every plan
    const int budget = ring_ctas(T);                             // likewise
    const int max_ctas = ring_max_ctas();                        // likewise
    const RingGguf gguf_ring = ring_gguf_request();              // likewise
    const bool q6_k_ring = ring_q6_k_request();                  // likewise
    const FewGroups few = ring_few_groups_request();             // likewise
    const bool word_rows = T == WeightType::kQ6_K && q6_k_ring;
    // Packed slots (no pad) only for decoders that read nothing past a row's last block (the
    // tiled layout and the 256-column K-quants); the 32-column GGUF blocks' decoders read one word
    // past it, so they take the ring with a pad after each slot (ring_slot_pad), as below.
    constexpr bool kReadsWithinRow = kTiled || Ops::kBE == 256;
    const auto [ring_warps, ring_slots, ring_rows, by_default] =
        kReadsWithinRow ? requested : gguf_ring_shape(T, requested);
    const int64_t group_rows = static_cast<int64_t>(ring_warps) * ring_rows;
    // The 32-column GGUF blocks (ring_gguf_takes by default, DECODEBENCH_GEMV_RING_GGUF):
    // whole-row groups whose copies, the last group's too, are 16-byte multiples, with a pad
    // after each slot (ring_slot_pad). Rows of 8 bytes past a 16-byte multiple qualify in groups
    // of an even number of rows (SmolLM2's Q4_1 LM head: 16 rows of 360 bytes, 5,760 bytes).
    // Two rows per warp only: ring_kernel builds the 4-row kernels for the other layouts alone
    // (gguf_ring_shape gives Q8_0 8 x 2 x 2 here; an asked-for 4-row shape keeps the per-warp
    // form).
    const bool gguf_wanted = gguf_ring == RingGguf::kAll ||
                             (gguf_ring == RingGguf::kAuto && ring_gguf_takes(T, rows, row_bytes));
    const bool gguf_rows = !kReadsWithinRow && gguf_wanted && ring_rows == kRows &&
                           groups_copyable(rows, row_bytes, group_rows);
    const bool packed_rows =
        kReadsWithinRow && ring_warps > 0 && ring_copyable(rows, row_bytes, group_rows, word_rows);
    // The whole-row form: where its slots fit the shared memory (in 64 bits: a long row must not
    // wrap into a small slot).
    const int64_t whole_smem = smem_for_max_ctas(
        static_cast<int64_t>(ring_slots) * (group_rows * row_bytes + ring_slot_pad<Ops, kTiled>()) +
            ring_smem(0, 0),
        max_ctas);
    const bool whole_fits = (packed_rows || gguf_rows) && whole_smem <= smem_optin();
    // Fills `p` with a ring plan: `warps` warps on `pairs` pairs (pairs == warps: the whole-row
    // form, `rows_per_warp` rows each), `slots` slots of groups of `group_rows` rows.
    const auto ring_plan = [&](int warps, int pairs, int rows_per_warp, int64_t smem, int slots,
                               int64_t group_rows) {
      p.block = warps * 32;
      p.rows_per_warp = rows_per_warp;
      p.chunk = cb;
      p.smem = static_cast<int>(smem);
      p.ring_slots = slots;
      p.ring_pairs = pairs;
      p.ntasks = ceil_div<int64_t>(rows, group_rows);
      const auto ctas_for = [&](int budget_ctas) {
        return ctas_per_sm(ring_kernel<T, kTiled>(warps, pairs, rows_per_warp, budget_ctas),
                           p.block, p.smem);
      };
      p.ring_ctas = plan_ring_ctas(has_ring_budget<T, kTiled>(warps, pairs, rows_per_warp), budget,
                                   p.ntasks, sms, ctas_for);
      const int ctas = std::max(1, ctas_for(p.ring_ctas));
      p.grid = std::min<int64_t>(p.ntasks, static_cast<int64_t>(sms) * ctas);
      p.ksplit = warps / pairs;
    };
    const auto whole_rows = [&]() {
      if (!whole_fits) return false;
      ring_plan(ring_warps, ring_warps, ring_rows, whole_smem, ring_slots, group_rows);
      return true;
    };
    // Rows too long for that: the split form, groups of 2 · pairs rows (fewer pairs where the
    // requested groups do not fit their slots; more, up to 4, where no fewer make groups that
    // ring_copyable allows: the 7B Q6_K down projection's 2 rows are 31,080 bytes, 4 rows
    // 62,160). DECODEBENCH_GEMV_RING=0 turns both forms off. `few_groups`: only shapes that give
    // every warp of a pair a pass (split_takes_few_groups).
    // With its own slots (split:PxS) the few-group split form tries the fewest pairs first and
    // does not depend on DECODEBENCH_GEMV_RING_LONG (Q8_0 too, whose long-row split is off).
    const auto split_rows = [&](bool few_groups) {
      const bool own = few_groups && few.slots > 0;
      if (!kReadsWithinRow || ring_warps <= 0 || (long_pairs <= 0 && !own) ||
          (row_bytes % 16 != 0 && !word_rows)) {
        return false;
      }
      const int tries[] = {own ? 1 : long_pairs, own ? 2 : long_pairs / 2, own ? 4 : long_pairs / 4,
                           long_pairs * 2, long_pairs * 4};
      for (const int pairs : tries) {
        if (pairs < 1 || pairs > 4) continue;
        if (few_groups && !split_takes_few_groups(cols, pairs, few.pairs)) continue;
        const int64_t group_rows = static_cast<int64_t>(pairs) * kRows;
        if (!ring_copyable(rows, row_bytes, group_rows, word_rows)) continue;
        const int slots = own ? few.slots : long_slots;
        const int64_t smem =
            static_cast<int64_t>(slots) * group_rows * row_bytes + ring_smem(0, 0, true);
        if (smem > smem_optin()) continue;
        ring_plan(8, pairs, kRows, smem, slots, group_rows);
        return true;
      }
      return false;
    };
    // Whole-row groups that leave SMs idle give way to the split form where it can take the
    // matrix (kFewGroupsPairs), unless DECODEBENCH_GEMV_RING asked for a ring shape; elsewhere the
    // whole-row form comes first, and rows too long for it take the split form as before.
    if (few.pairs > 0 && by_default && packed_rows && whole_fits &&
        ring_few_groups(ceil_div<int64_t>(rows, group_rows), sms, few_groups_per_sm(T, few)) &&
        split_rows(true)) {
      return;
    }
    if (whole_rows() || split_rows(false)) return;
    p.block = kThreads;
    p.rows_per_warp = kRows;
    p.chunk = cb;
    p.smem = stream_smem(cb, Ops::kBB, Ops::kStages);
    const int ctas =
        std::max(1, ctas_per_sm(reinterpret_cast<const void*>(&gemv_stream_kernel<T, kTiled>),
                                kThreads, p.smem));
    const int64_t max_grid = static_cast<int64_t>(sms) * ctas;
    const int64_t tasks = ceil_div<int64_t>(rows, kRows);
    const int64_t nchunks = ceil_div<int64_t>(nb, cb);
    const double target_warps = static_cast<double>(sms) * 16.0;  // enough bytes in flight
    // Estimated time ∝ chunk steps on the busiest warp ÷ how well the GPU is filled.
    double best = 1e300;
    for (int ks = 1; ks <= kWarps; ks *= 2) {
      if (ks > 1 && nchunks < ks) break;
      const int64_t slots = kWarps / ks;
      const int64_t grid = std::min(ceil_div<int64_t>(tasks, slots), max_grid);
      const int64_t rounds = ceil_div<int64_t>(tasks, grid * slots);
      const double steps = static_cast<double>(rounds * ceil_div<int64_t>(nchunks, ks));
      const double active = static_cast<double>(std::min(tasks * ks, grid * kWarps));
      const double est = steps / std::min(1.0, active / target_warps) * (1.0 + 0.02 * ks);
      if (est < best) {
        best = est;
        p.ksplit = ks;
        p.grid = grid;
        p.ntasks = tasks;
      }
    }
  });
  if (!known) {
    throw runtime_error(std::string("GEMV: the stream kernel does not read ") +
                        weight_traits(t).name + " in the tiled layout");
  }
  return p;
}

void stream_launch(WeightType t, const KernelArgs& a, const Plan& p, cudaStream_t stream,
                   bool tiled) {
  KernelArgs args = a;
  args.ksplit = p.ksplit;
  args.ntasks = p.ntasks;
  args.ring_slots = p.ring_slots;
  void* params[] = {&args};
  const bool known = dispatch_stream(t, tiled, [&]<WeightType T, bool kTiled>() {
    const void* kernel =
        p.ring_slots > 0
            ? ring_kernel<T, kTiled>(p.block / 32, p.ring_pairs, p.rows_per_warp, p.ring_ctas)
            : reinterpret_cast<const void*>(&gemv_stream_kernel<T, kTiled>);
    launch_with_attrs(kernel, params, dim3(static_cast<unsigned>(p.grid)),
                      dim3(static_cast<unsigned>(p.block)), static_cast<size_t>(p.smem), a.pdl != 0,
                      stream);
  });
  if (!known) {
    throw runtime_error(std::string("GEMV: the stream kernel does not read ") +
                        weight_traits(t).name + " in the tiled layout");
  }
}

}  // namespace decodebench::cuda::gemv_impl
