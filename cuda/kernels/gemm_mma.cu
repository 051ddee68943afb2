// Tensor-core kernel of the batched product (gemm.cuh: gemm_mma_supported says what it computes).
//
// Work: a CTA has 4 warps; a warp owns 32 consecutive rows (two m16 tiles) and a share of their
// columns (ksplit warps split the columns of one 32-row group; their partial sums are added in a
// fixed order). Each warp streams its rows' bytes through shared memory with 16-byte cp.async,
// kStages chunks deep (the staged GEMV's scheme: blocks start at any even address). For every 16
// columns it turns the codes into A fragments (exact small integers, or the F16/BF16 values), loads
// the x pieces of 8·NT sequences as B fragments (L1-cached loads) and issues one MMA per (m-tile,
// n-tile, piece). Quantized types accumulate each sub-block into a fresh register tile and then
// add scale·tile (+ min·Σx) in f32: y = Σ_sub (a_sub·Σ q·x + b_sub·Σ x).
//
// K permutation: the MMA k-slots (2t, 2t+1) and (2t+8, 2t+9) of lane group t (lane & 3) map to
// four consecutive columns col(t) .. col(t)+3 of the block, chosen per type so that a lane reads
// its codes as one 32-bit word; the B fragment for the same slots is one 8-byte load of four
// consecutive x pieces. Any bijection is valid because A and B use the same one.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "cuda/check.hpp"
#include "cuda/kernels/common.cuh"
#include "cuda/kernels/dequant.cuh"
#include "cuda/kernels/gemm_impl.cuh"
#include "cuda/kernels/gemv_device.cuh"
#include "cuda/kernels/gemv_impl.cuh"

namespace decodebench::cuda::gemm_impl {
namespace {

using kernels::ceil_div;
using kernels::ld_f16;
using kernels::ld_u32_a2;
using kernels::ld_u32_a4;
using kernels::min64;

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kRows = 32;  // rows per warp: two m16 tiles

/// Four codes n0..n3 (bytes of `nib`, each < 128) minus `off` as two bf16x2 words {n0, n1},
/// {n2, n3}: bf16 bits 0x4300 | n are exactly 128 + n, and the subtraction of a small integer is
/// exact.
__device__ __forceinline__ void codes_bf16(uint32_t nib, float off, uint32_t& lo, uint32_t& hi) {
  const __nv_bfloat162 o = __float2bfloat162_rn(off);
  uint32_t a = __byte_perm(nib, 0x43u, 0x4140);
  uint32_t b = __byte_perm(nib, 0x43u, 0x4342);
  const __nv_bfloat162 ha = __hsub2(*reinterpret_cast<const __nv_bfloat162*>(&a), o);
  const __nv_bfloat162 hb = __hsub2(*reinterpret_cast<const __nv_bfloat162*>(&b), o);
  lo = *reinterpret_cast<const uint32_t*>(&ha);
  hi = *reinterpret_cast<const uint32_t*>(&hb);
}

__device__ __forceinline__ uint32_t pack_bf16(float a, float b) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<const uint32_t*>(&h);
}

__device__ __forceinline__ float s8(uint32_t w, int k) {
  return static_cast<float>(static_cast<int8_t>(w >> (8 * k)));
}

/// Per-type tensor-core operations.
///  kBlockElems/kBlockBytes: block geometry (float types: pseudo-blocks of 32 values);
///  kChunkBlocks: blocks per row per pipeline stage; kSubs sub-blocks per block of kStepsPerSub
///  16-column MMA steps each; kScaled: codes need a per-sub-block scale (and kHasMin a minimum
///  times Σx over the 32-column sub-block); kF16: the A operand is f16 (else bf16).
///  col(sub, step, t): first of the four block columns of lane group t; codes(): the A words of
///  one row; scale(): (a, b) of the sub-block, value = a·code + b.
template <WeightType T>
struct MmaOps;

template <bool kIsF16>
struct FloatOps {
  static constexpr int kBlockElems = 32, kBlockBytes = 64, kChunkBlocks = 2;  // 64 columns
  static constexpr int kSubs = 1, kStepsPerSub = 2;
  static constexpr bool kScaled = false, kHasMin = false, kF16 = kIsF16;
  __device__ static int col(int, int step, int t) { return 16 * step + 4 * t; }
  __device__ static void codes(const uint8_t* blk, int sub, int step, int t, uint32_t& lo,
                               uint32_t& hi) {
    const uint2 v = *reinterpret_cast<const uint2*>(blk + 2 * col(sub, step, t));
    lo = v.x;
    hi = v.y;
  }
  __device__ static float2 scale(const uint8_t*, int) { return make_float2(1.0f, 0.0f); }
};
template <>
struct MmaOps<WeightType::kF16> : FloatOps<true> {};
template <>
struct MmaOps<WeightType::kBF16> : FloatOps<false> {};

/// Legacy 32-value blocks: step 0 = columns 4t..4t+3, step 1 = 16+4t..16+4t+3 (low / high
/// nibbles of bytes 4t..4t+3).
struct LegacyGeometry {
  static constexpr int kBlockElems = 32, kSubs = 1, kStepsPerSub = 2;
  static constexpr bool kScaled = true, kF16 = false;
  __device__ static int col(int, int step, int t) { return 16 * step + 4 * t; }
};

template <>
struct MmaOps<WeightType::kQ8_0> : LegacyGeometry {  // d @0 · qs int8[32] @2
  static constexpr int kBlockBytes = 34, kChunkBlocks = 4;
  static constexpr bool kHasMin = false;
  __device__ static void codes(const uint8_t* blk, int, int step, int t, uint32_t& lo,
                               uint32_t& hi) {
    const uint32_t w = ld_u32_a2(blk + 2 + 16 * step + 4 * t);
    lo = pack_bf16(s8(w, 0), s8(w, 1));
    hi = pack_bf16(s8(w, 2), s8(w, 3));
  }
  __device__ static float2 scale(const uint8_t* blk, int) { return make_float2(ld_f16(blk), 0.f); }
};

template <>
struct MmaOps<WeightType::kQ4_0> : LegacyGeometry {  // d @0 · qs[16] @2
  static constexpr int kBlockBytes = 18, kChunkBlocks = 4;
  static constexpr bool kHasMin = false;
  __device__ static void codes(const uint8_t* blk, int, int step, int t, uint32_t& lo,
                               uint32_t& hi) {
    const uint32_t w = ld_u32_a2(blk + 2 + 4 * t);
    codes_bf16((w >> (4 * step)) & 0x0F0F0F0Fu, 136.0f, lo, hi);  // 128 + 8
  }
  __device__ static float2 scale(const uint8_t* blk, int) { return make_float2(ld_f16(blk), 0.f); }
};

template <>
struct MmaOps<WeightType::kQ4_1> : LegacyGeometry {  // d @0 · m @2 · qs[16] @4
  static constexpr int kBlockBytes = 20, kChunkBlocks = 4;
  static constexpr bool kHasMin = true;
  __device__ static void codes(const uint8_t* blk, int, int step, int t, uint32_t& lo,
                               uint32_t& hi) {
    const uint32_t w = ld_u32_a4(blk + 4 + 4 * t);
    codes_bf16((w >> (4 * step)) & 0x0F0F0F0Fu, 128.0f, lo, hi);
  }
  __device__ static float2 scale(const uint8_t* blk, int) {
    return make_float2(ld_f16(blk), ld_f16(blk + 2));
  }
};

template <>
struct MmaOps<WeightType::kQ5_0> : LegacyGeometry {  // d @0 · qh u32 @2 · qs[16] @6
  static constexpr int kBlockBytes = 22, kChunkBlocks = 4;
  static constexpr bool kHasMin = false;
  __device__ static void codes(const uint8_t* blk, int, int step, int t, uint32_t& lo,
                               uint32_t& hi) {
    const uint32_t h = (ld_u32_a2(blk + 2) >> (16 * step + 4 * t)) & 0xFu;
    const uint32_t w = ld_u32_a2(blk + 6 + 4 * t);
    codes_bf16(((w >> (4 * step)) & 0x0F0F0F0Fu) | kernels::spread_bit4(h), 144.0f, lo, hi);
  }
  __device__ static float2 scale(const uint8_t* blk, int) { return make_float2(ld_f16(blk), 0.f); }
};

template <>
struct MmaOps<WeightType::kQ5_1> : LegacyGeometry {  // d @0 · m @2 · qh u32 @4 · qs[16] @8
  static constexpr int kBlockBytes = 24, kChunkBlocks = 4;
  static constexpr bool kHasMin = true;
  __device__ static void codes(const uint8_t* blk, int, int step, int t, uint32_t& lo,
                               uint32_t& hi) {
    const uint32_t h = (ld_u32_a4(blk + 4) >> (16 * step + 4 * t)) & 0xFu;
    const uint32_t w = ld_u32_a4(blk + 8 + 4 * t);
    codes_bf16(((w >> (4 * step)) & 0x0F0F0F0Fu) | kernels::spread_bit4(h), 128.0f, lo, hi);
  }
  __device__ static float2 scale(const uint8_t* blk, int) {
    return make_float2(ld_f16(blk), ld_f16(blk + 2));
  }
};

/// Q4_K / Q5_K: 8 sub-blocks of 32 columns; sub-block s reads nibble s & 1 of bytes
/// 32·(s/2) + l; value = d·sc(s)·q − dmin·mn(s).
struct KAffineGeometry {
  static constexpr int kBlockElems = 256, kChunkBlocks = 1, kSubs = 8, kStepsPerSub = 2;
  static constexpr bool kScaled = true, kHasMin = true, kF16 = false;
  __device__ static int col(int sub, int step, int t) { return 32 * sub + 16 * step + 4 * t; }
  __device__ static float2 scale(const uint8_t* blk, int sub) {
    int sc, mn;
    kernels::k_scale_min(blk + 4, sub, &sc, &mn);
    return make_float2(ld_f16(blk) * static_cast<float>(sc),
                       -(ld_f16(blk + 2) * static_cast<float>(mn)));
  }
};

template <>
struct MmaOps<WeightType::kQ4_K> : KAffineGeometry {  // d · dmin · scales[12] @4 · qs[128] @16
  static constexpr int kBlockBytes = 144;
  __device__ static void codes(const uint8_t* blk, int sub, int step, int t, uint32_t& lo,
                               uint32_t& hi) {
    const uint32_t w = ld_u32_a4(blk + 16 + 32 * (sub >> 1) + 16 * step + 4 * t);
    codes_bf16((w >> (4 * (sub & 1))) & 0x0F0F0F0Fu, 128.0f, lo, hi);
  }
};

template <>
struct MmaOps<WeightType::kQ5_K> : KAffineGeometry {  // ... qh[32] @16 · qs[128] @48
  static constexpr int kBlockBytes = 176;
  __device__ static void codes(const uint8_t* blk, int sub, int step, int t, uint32_t& lo,
                               uint32_t& hi) {
    const int l0 = 16 * step + 4 * t;
    const uint32_t w = ld_u32_a4(blk + 48 + 32 * (sub >> 1) + l0);
    const uint32_t h = (ld_u32_a4(blk + 16 + l0) >> sub) & 0x01010101u;
    codes_bf16(((w >> (4 * (sub & 1))) & 0x0F0F0F0Fu) | (h << 4), 128.0f, lo, hi);
  }
};

template <>
struct MmaOps<WeightType::kQ6_K> {  // ql[128] @0 · qh[64] @128 · scales int8[16] @192 · d @208
  static constexpr int kBlockElems = 256, kBlockBytes = 210, kChunkBlocks = 1;
  static constexpr int kSubs = 16, kStepsPerSub = 1;
  static constexpr bool kScaled = true, kHasMin = false, kF16 = false;
  // Sub-block s = 8h + 2g + i covers columns 128h + 32g + 16i + (0..15) (gguf-facts §2.3).
  __device__ static int col(int sub, int, int t) { return 16 * sub + 4 * t; }
  __device__ static void codes(const uint8_t* blk, int sub, int, int t, uint32_t& lo,
                               uint32_t& hi) {
    const int h = sub >> 3;
    const int g = (sub >> 1) & 3;
    const int l0 = 16 * (sub & 1) + 4 * t;
    const uint32_t w = ld_u32_a2(blk + 64 * h + 32 * (g & 1) + l0);
    const uint32_t q = ld_u32_a2(blk + 128 + 32 * h + l0);
    const uint32_t nib =
        ((w >> (4 * (g >> 1))) & 0x0F0F0F0Fu) | (((q >> (2 * g)) & 0x03030303u) << 4);
    codes_bf16(nib, 160.0f, lo, hi);  // 128 + 32
  }
  __device__ static float2 scale(const uint8_t* blk, int sub) {
    return make_float2(ld_f16(blk + 208) * static_cast<float>(static_cast<int8_t>(blk[192 + sub])),
                       0.0f);
  }
};

/// c += A·B for one m16n8k16 tile (f32 accumulation); A in the row layout, B in the column layout.
template <bool kF16>
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint2 b) {
  if constexpr (kF16) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.x), "r"(b.y));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.x), "r"(b.y));
  }
}

template <WeightType T, int NT>
struct Layout {
  using Ops = MmaOps<T>;
  static constexpr int kNv = NT * 8;  // sequences per launch
  // Weights: per warp, 32 rows; a chunk starts at any address ≡ its global address mod 16, so a
  // row region has up to 15 bytes of slack in front.
  static constexpr int kRegion = (Ops::kChunkBlocks * Ops::kBlockBytes + 15 + 15) / 16 * 16;
  static constexpr int kPiecesPerRow = kRegion / 16;
  static constexpr int kWarpStage = kRows * kRegion;
  // x pieces of the chunk's columns, shared by the CTA: [piece][sequence][chunk columns], rows
  // padded by 32 bytes so that the 8 sequences of an 8-byte B load hit distinct banks.
  static constexpr int kChunkCols = Ops::kChunkBlocks * Ops::kBlockElems;
  static constexpr int kXRow = kChunkCols * 2 + 32;
  static constexpr int kXPiecesBytes = kPieces * kNv * kXRow;
  // Σx per 32-column sub-block of the chunk, [sub-block][sequence] (types with minimums).
  static constexpr int kXSums = Ops::kHasMin ? kChunkCols / 32 * kNv * 4 : 0;
  static constexpr int kXStage = kXPiecesBytes + kXSums;
  // Independent MMA accumulators (one per piece) break the dependency chain of the tensor-core
  // pipeline; with many sequences (NT > 2) the registers allow two.
  static constexpr int kChains = NT <= 2 ? kPieces : 2;
  static constexpr int kStage = kWarps * kWarpStage + kXStage;
  static constexpr int kPartial = kWarps * kRows * kNv * 4;
  // Three stages when the CTA stays within 110 KB (two per SM on sm_90), else two.
  static constexpr int kStages = 3 * kStage + kPartial <= 110 * 1024 ? 3 : 2;
  static constexpr int kBytes = kStages * kStage + kPartial;
};

/// Output of sequence m, row r: scale, bias, residual, segment.
__device__ __forceinline__ void store_out(const MmaArgs& a, int64_t m, int64_t r, float s) {
  s *= a.inv_scale[m];
  if (a.bias != nullptr) s += a.bias[r];
  if (a.residual != nullptr) s += a.residual[m * a.ldr + r];
  if (a.y1 == nullptr || r < a.end0) {
    a.y0[m * a.ld0 + r] = s;
  } else if (a.y2 == nullptr || r < a.end1) {
    a.y1[m * a.ld1 + (r - a.end0)] = s;
  } else {
    a.y2[m * a.ld2 + (r - a.end1)] = s;
  }
}

/// grid (ceil(rows / 128), ksplit): CTA (x, k) computes rows [128x, 128x + 128) over the chunks
/// c ≡ k (mod ksplit); its 4 warps take 32 rows each and share the staged x pieces.
template <WeightType T, int NT>
__global__ void __launch_bounds__(kThreads) gemm_mma_kernel(const MmaArgs a) {
  using Ops = MmaOps<T>;
  using L = Layout<T, NT>;
  constexpr int kBb = Ops::kBlockBytes;
  constexpr int kCb = Ops::kChunkBlocks;
  constexpr int kNv = L::kNv;
  constexpr int kS = L::kStages;
  extern __shared__ __align__(16) uint8_t smem[];

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid >> 5;
  const int lane = tid & 31;
  const int g = lane >> 2;
  const int t = lane & 3;
  const int ks = static_cast<int>(blockIdx.y);
  const int ksplit = static_cast<int>(gridDim.y);
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * (kWarps * kRows) + warp * kRows;
  float* partial = reinterpret_cast<float*>(smem + kS * L::kStage);  // [kWarps][kRows][kNv]

  const int64_t nb = a.cols / Ops::kBlockElems;
  const int64_t nchunks = ceil_div<int64_t>(nb, kCb);
  const int64_t my_chunks = nchunks > ks ? ceil_div<int64_t>(nchunks - ks, ksplit) : 0;
  // Rows past the end re-read the last row (their sums are discarded).
  const auto row_ptr = [&](int i) { return a.w + min64(row0 + i, a.rows - 1) * a.row_bytes; };
  const auto w_stage = [&](int buf) { return smem + buf * L::kStage + warp * L::kWarpStage; };
  const auto x_stage = [&](int buf) { return smem + buf * L::kStage + kWarps * L::kWarpStage; };

  // Weights of local chunk `ci`, this warp's 32 rows: per row the 16-byte aligned span covering
  // the chunk (it starts up to 15 bytes early, inside W; the last piece stops at the chunk's end,
  // zero-filled).
  const auto issue_w = [&](int64_t ci, int buf) {
    const int64_t blk0 = (ks + ci * ksplit) * kCb;
    const int bytes = static_cast<int>(min64(kCb, nb - blk0)) * kBb;
    uint8_t* dst = w_stage(buf);
    for (int q = lane; q < kRows * L::kPiecesPerRow; q += 32) {
      const int i = q / L::kPiecesPerRow;
      const int o = (q % L::kPiecesPerRow) * 16;
      const uint8_t* start = row_ptr(i) + blk0 * kBb;
      const int lead = static_cast<int>(reinterpret_cast<uintptr_t>(start) & 15u);
      const int span = lead + bytes;
      if (o < span)
        kernels::cp_async_16(dst + i * L::kRegion + o, start - lead + o, min(16, span - o));
    }
  };
  // x pieces of local chunk `ci` for the launch's sequences, copied by the whole CTA.
  const auto issue_x = [&](int64_t ci, int buf) {
    const int64_t c0 = (ks + ci * ksplit) * kCb * Ops::kBlockElems;
    const int pieces16 = static_cast<int>(min64(L::kChunkCols, a.cols - c0)) / 8;
    uint8_t* dst = x_stage(buf);
    constexpr int kPer = L::kChunkCols / 8;
    for (int q = tid; q < kPieces * kNv * kPer; q += kThreads) {
      const int row = q / kPer;  // piece · kNv + sequence
      const int o = q % kPer;
      if (o >= pieces16) continue;
      const int p = row / kNv;
      const int v = row % kNv;
      const uint16_t* src = a.pieces + (p * a.mp + a.vec0 + v) * a.cols + c0 + 8 * o;
      kernels::cp_async_16(dst + row * L::kXRow + 16 * o, src, 16);
    }
    if constexpr (Ops::kHasMin) {
      // Σx rows: kNv floats (32·NT bytes) per 32-column sub-block of the chunk.
      constexpr int kPerRow = kNv * 4 / 16;
      const int subs = pieces16 / 4;
      for (int q = tid; q < subs * kPerRow; q += kThreads) {
        const int j = q / kPerRow;
        const int o = q % kPerRow;
        const float* src = a.xsum + (c0 / 32 + j) * a.mp + a.vec0 + 4 * o;
        kernels::cp_async_16(dst + L::kXPiecesBytes + j * kNv * 4 + 16 * o, src, 16);
      }
    }
  };

  constexpr int kChains = L::kChains;
  // Float types accumulate straight into kChains tiles (summed at the end); quantized types into
  // one f32 tile, fed by per-sub-block MMA tiles `c`.
  constexpr int kAccChains = Ops::kScaled ? 1 : kChains;
  float acc[kAccChains][2][NT][4];
#pragma unroll
  for (int k = 0; k < kAccChains; ++k)
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int n = 0; n < NT; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[k][mt][n][e] = 0.0f;

          // Weights first (they do not depend on the preceding kernel), then, after the PDL wait,
          // the x pieces the preceding kernel wrote. Commit groups: W0..W(S-2), X0..X(S-2), then
          // one (W, X) group per chunk; waiting for all but S-1 groups leaves chunk ci complete.
#pragma unroll
  for (int s = 0; s < kS - 1; ++s) {
    if (s < my_chunks) issue_w(s, s);
    kernels::cp_async_commit();
  }
  kernels::grid_dependency_trigger();
  kernels::grid_dependency_wait();
#pragma unroll
  for (int s = 0; s < kS - 1; ++s) {
    if (s < my_chunks) issue_x(s, s);
    kernels::cp_async_commit();
  }

  for (int64_t ci = 0; ci < my_chunks; ++ci) {
    if (ci + kS - 1 < my_chunks) {
      issue_w(ci + kS - 1, static_cast<int>((ci + kS - 1) % kS));
      issue_x(ci + kS - 1, static_cast<int>((ci + kS - 1) % kS));
    }
    kernels::cp_async_commit();
    kernels::cp_async_wait<kS - 1>();
    __syncthreads();  // every thread's copies of chunk ci are visible

    const int buf = static_cast<int>(ci % kS);
    const int64_t blk0 = (ks + ci * ksplit) * kCb;
    const int nblk = static_cast<int>(min64(kCb, nb - blk0));
    const uint8_t* reg[4];  // rows g, g + 8, g + 16, g + 24 of the warp
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int i = g + 8 * r;
      const int lead = static_cast<int>(reinterpret_cast<uintptr_t>(row_ptr(i) + blk0 * kBb) & 15u);
      reg[r] = w_stage(buf) + i * L::kRegion + lead;
    }
    const uint8_t* xs = x_stage(buf);

    // Unrolled over the chunk's blocks (the last chunk may be short) so that independent
    // blocks overlap; K-quant sub-blocks are unrolled while the registers allow.
    constexpr int kSubUnroll = NT <= 2 ? Ops::kSubs : 1;
#pragma unroll
    for (int b = 0; b < kCb; ++b) {
      if (b >= nblk) break;
#pragma unroll kSubUnroll
      for (int sub = 0; sub < Ops::kSubs; ++sub) {
        float c[kChains][2][NT][4];
        if constexpr (Ops::kScaled) {
#pragma unroll
          for (int k = 0; k < kChains; ++k)
#pragma unroll
            for (int mt = 0; mt < 2; ++mt)
#pragma unroll
              for (int n = 0; n < NT; ++n)
#pragma unroll
                for (int e = 0; e < 4; ++e) c[k][mt][n][e] = 0.0f;
        }
#pragma unroll
        for (int step = 0; step < Ops::kStepsPerSub; ++step) {
          uint32_t afr[2][4];
#pragma unroll
          for (int mt = 0; mt < 2; ++mt) {
            Ops::codes(reg[2 * mt] + b * kBb, sub, step, t, afr[mt][0], afr[mt][2]);
            Ops::codes(reg[2 * mt + 1] + b * kBb, sub, step, t, afr[mt][1], afr[mt][3]);
          }
          const int xc = b * Ops::kBlockElems + Ops::col(sub, step, t);  // column in the chunk
#pragma unroll
          for (int p = 0; p < kPieces; ++p) {
#pragma unroll
            for (int n = 0; n < NT; ++n) {
              const uint2 bv =
                  *reinterpret_cast<const uint2*>(xs + (p * kNv + 8 * n + g) * L::kXRow + 2 * xc);
#pragma unroll
              for (int mt = 0; mt < 2; ++mt) {
                if constexpr (Ops::kScaled) {
                  mma16816<Ops::kF16>(c[p % kChains][mt][n], afr[mt], bv);
                } else {
                  mma16816<Ops::kF16>(acc[p % kChains][mt][n], afr[mt], bv);
                }
              }
            }
          }
        }
        if constexpr (Ops::kScaled) {
          float2 sc[4];
#pragma unroll
          for (int r = 0; r < 4; ++r) sc[r] = Ops::scale(reg[r] + b * kBb, sub);
          float2 xsum[NT];
          if constexpr (Ops::kHasMin) {
            const int j = (b * Ops::kBlockElems + 32 * sub) / 32;  // sub-block in the chunk
            const float* xs_sum = reinterpret_cast<const float*>(xs + L::kXPiecesBytes) + j * kNv;
#pragma unroll
            for (int n = 0; n < NT; ++n) {
              xsum[n] = *reinterpret_cast<const float2*>(xs_sum + 8 * n + 2 * t);
            }
          }
          // Pieces in a fixed order: (c0 + c1) + c2.
          float cs[2][NT][4];
#pragma unroll
          for (int mt = 0; mt < 2; ++mt)
#pragma unroll
            for (int n = 0; n < NT; ++n)
#pragma unroll
              for (int e = 0; e < 4; ++e) {
                float v = c[0][mt][n][e];
#pragma unroll
                for (int k = 1; k < kChains; ++k) v += c[k][mt][n][e];
                cs[mt][n][e] = v;
              }
#pragma unroll
          for (int mt = 0; mt < 2; ++mt) {
            const float2 s0 = sc[2 * mt];      // row g of the m-tile
            const float2 s1 = sc[2 * mt + 1];  // row g + 8
#pragma unroll
            for (int n = 0; n < NT; ++n) {
              float* o = acc[0][mt][n];
              o[0] = fmaf(s0.x, cs[mt][n][0], o[0]);
              o[1] = fmaf(s0.x, cs[mt][n][1], o[1]);
              o[2] = fmaf(s1.x, cs[mt][n][2], o[2]);
              o[3] = fmaf(s1.x, cs[mt][n][3], o[3]);
              if constexpr (Ops::kHasMin) {
                o[0] = fmaf(s0.y, xsum[n].x, o[0]);
                o[1] = fmaf(s0.y, xsum[n].y, o[1]);
                o[2] = fmaf(s1.y, xsum[n].x, o[2]);
                o[3] = fmaf(s1.y, xsum[n].y, o[3]);
              }
            }
          }
        }
      }
    }
    __syncthreads();  // every thread is done with stage `buf` before it is refilled
  }

  // C layout: acc[.][mt][n] = rows (16mt + g, 16mt + g + 8) × sequences (8n + 2t, 8n + 2t + 1).
  float* pw = partial + warp * kRows * kNv;
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
    for (int n = 0; n < NT; ++n) {
      float o[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        o[e] = acc[0][mt][n][e];
#pragma unroll
        for (int k = 1; k < kAccChains; ++k) o[e] += acc[k][mt][n][e];
      }
      const int r = 16 * mt + g;
      const int v = 8 * n + 2 * t;
      pw[r * kNv + v] = o[0];
      pw[r * kNv + v + 1] = o[1];
      pw[(r + 8) * kNv + v] = o[2];
      pw[(r + 8) * kNv + v + 1] = o[3];
    }
  }
  __syncthreads();

  // Rows fastest, so that consecutive threads write consecutive addresses.
  for (int e = tid; e < kWarps * kRows * kNv; e += kThreads) {
    const int row = e % (kWarps * kRows);
    const int v = e / (kWarps * kRows);
    const int64_t r = static_cast<int64_t>(blockIdx.x) * (kWarps * kRows) + row;
    const int64_t m = a.vec0 + v;
    if (r >= a.rows || m >= a.batch) continue;
    const float s = partial[((row / kRows) * kRows + row % kRows) * kNv + v];
    if (ksplit == 1) {
      store_out(a, m, r, s);
    } else {
      a.scratch[(static_cast<int64_t>(ks) * kNv + v) * a.rows + r] = s;
    }
  }
}

/// Adds the column-split partial sums in a fixed order (deterministic) and stores the outputs.
__global__ void __launch_bounds__(256) gemm_reduce_kernel(const MmaArgs a, int nv) {
  kernels::grid_dependency_trigger();
  kernels::grid_dependency_wait();
  const int64_t e = static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x;
  if (e >= nv * a.rows) return;
  const int64_t v = e / a.rows;
  const int64_t r = e % a.rows;
  const int64_t m = a.vec0 + v;
  if (m >= a.batch) return;
  float s = 0.0f;
  for (int k = 0; k < a.ksplit; ++k) s += a.scratch[(k * nv + v) * a.rows + r];
  store_out(a, m, r, s);
}

/// Column splits for a shape (1..8, at most one per chunk): the fewest that fill the last wave of
/// CTAs to >= 85% (waves of two CTAs per SM), else the best filled.
int plan_ksplit(int64_t rows, int64_t chunks) {
  const int64_t ctas = ceil_div<int64_t>(rows, kWarps * kRows);
  const double slots = 2.0 * gemv_impl::sm_count();
  int best = 1;
  double best_fill = 0;
  for (int k = 1; k <= 8 && k <= chunks; ++k) {
    const double waves = static_cast<double>(ctas * k) / slots;
    const double fill = waves / std::ceil(waves);
    if (fill >= 0.85) return k;
    if (fill > best_fill + 1e-9) {
      best_fill = fill;
      best = k;
    }
  }
  return best;
}

template <WeightType T, int NT>
void launch_typed(const MmaArgs& args, cudaStream_t stream) {
  using L = Layout<T, NT>;
  const auto* kernel = reinterpret_cast<const void*>(&gemm_mma_kernel<T, NT>);
  raise_dynamic_smem(kernel, L::kBytes);
  const int64_t chunks =
      ceil_div<int64_t>(args.cols / MmaOps<T>::kBlockElems, MmaOps<T>::kChunkBlocks);
  MmaArgs a = args;
  a.ksplit = plan_ksplit(a.rows, chunks);
  if (a.ksplit > 1 && (a.scratch == nullptr ||
                       a.scratch_floats < static_cast<int64_t>(a.ksplit) * L::kNv * a.rows)) {
    throw runtime_error("GEMM: the column-split plan needs scratch (gemm_scratch_bytes)");
  }
  const dim3 grid(static_cast<unsigned>(ceil_div<int64_t>(a.rows, kWarps * kRows)),
                  static_cast<unsigned>(a.ksplit));
  void* params[] = {&a};
  gemv_impl::launch_with_attrs(kernel, params, grid, dim3(kThreads), static_cast<size_t>(L::kBytes),
                               a.pdl != 0, stream);
  if (a.ksplit > 1) {
    int nv = L::kNv;
    void* rparams[] = {&a, &nv};
    gemv_impl::launch_with_attrs(reinterpret_cast<const void*>(&gemm_reduce_kernel), rparams,
                                 dim3(static_cast<unsigned>(ceil_div<int64_t>(nv * a.rows, 256))),
                                 dim3(256), 0, a.pdl != 0, stream);
  }
}

template <WeightType T>
void launch_nt(const MmaArgs& a, int nt, cudaStream_t stream) {
  switch (nt) {
    case 1:
      return launch_typed<T, 1>(a, stream);
    case 2:
      return launch_typed<T, 2>(a, stream);
    case 3:
      return launch_typed<T, 3>(a, stream);
    default:
      return launch_typed<T, 4>(a, stream);
  }
}

}  // namespace

namespace {

/// Calls f.template operator()<T>() for the kernel's types; false for any other type.
template <typename F>
bool dispatch_mma_type(WeightType type, F&& f) {
  return kernels::dispatch_half_or_quant_type(type, f);
}

template <WeightType T>
int smem_for(int nt) {
  switch (nt) {
    case 1:
      return Layout<T, 1>::kBytes;
    case 2:
      return Layout<T, 2>::kBytes;
    case 3:
      return Layout<T, 3>::kBytes;
    default:
      return Layout<T, 4>::kBytes;
  }
}

int device_smem_optin() {
  static const int bytes = [] {
    int dev = 0;
    int v = 0;
    DB_CUDA_CHECK(cudaGetDevice(&dev));
    DB_CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    return v;
  }();
  return bytes;
}

/// Chunk columns of the kernel for `type` (0 for other types).
int64_t chunk_cols(WeightType type) {
  int64_t cols = 0;
  dispatch_mma_type(type, [&]<WeightType T>() {
    cols = int64_t{MmaOps<T>::kChunkBlocks} * MmaOps<T>::kBlockElems;
  });
  return cols;
}

}  // namespace

bool mma_type_supported(WeightType type) {
  bool ok = false;
  dispatch_mma_type(type, [&]<WeightType T>() { ok = MmaOps<T>::kBlockElems > 0; });
  return ok;
}

bool mma_fits(WeightType type, int64_t batch) {
  const int nt = static_cast<int>(std::min<int64_t>(kMaxVectorsPerLaunch, padded_batch(batch)) / 8);
  int bytes = 0;
  if (!dispatch_mma_type(type, [&]<WeightType T>() { bytes = smem_for<T>(nt); })) return false;
  return bytes <= device_smem_optin();
}

int64_t mma_scratch_floats(WeightType type, int64_t rows, int64_t cols) {
  const int64_t cc = chunk_cols(type);
  if (cc == 0) return 0;
  const int k = plan_ksplit(rows, ceil_div<int64_t>(cols, cc));
  return k > 1 ? static_cast<int64_t>(k) * kMaxVectorsPerLaunch * rows : 0;
}

void mma_launch(WeightType type, const MmaArgs& a, int nt, cudaStream_t stream) {
  const bool known = dispatch_mma_type(type, [&]<WeightType T>() { launch_nt<T>(a, nt, stream); });
  if (!known) {
    throw usage_error("batched GEMM: unsupported weight type #" +
                      std::to_string(static_cast<uint32_t>(type)));
  }
}

}  // namespace decodebench::cuda::gemm_impl
