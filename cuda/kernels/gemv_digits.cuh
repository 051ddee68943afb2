// The digit math shared by the quantized GEMV kernels on a pre-split x' (gemv_stream.cu,
// gemv_tiled.cu): loading a lane's 32-column x' tile from the split's stream layout
// (gemv_impl.cuh) and the exact integer dot products of 32 codes with its digits (dp4a).
// Device code only: include from .cu files.
#pragma once

#if !defined(__CUDACC__)
#error "cuda/kernels/gemv_digits.cuh holds device code; include it from .cu files only"
#endif

#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/kernels/gemv_impl.cuh"

namespace decodebench::cuda::gemv_impl {

/// x' digits used (of the 3 the stream layout holds). Two leave a residue of at most 2^-13 of
/// the tile's largest |x'| (finer than x' in f16 for values above 1/4 of it) and need a third
/// fewer dp4a than three (below 2^-20): 7B steps on the H200 gained 3.1% (Q4_0), 5.9% (Q4_K_M)
/// and 3.6% (Q8_0) in tokens/s (docs/performance.md, round 21). The tiled-mma kernel keeps three.
/// A probe build (cmake -DDECODEBENCH_X_DIGITS=1 to 3, which --version and the JSON's
/// tool.build_type then name: docs/measurement-switches.md) measures another count. One digit
/// (residue up to 2^-6 of the tile's largest |x'|, about 4x coarser than llama.cpp's 8-bit x')
/// took 1.0-2.6% off the 7B steps with logits 110-130 times further from the CPU's, which would
/// exceed the GEMV and backend tests' bounds, derived for two (docs/performance.md, round 46).
#if defined(DECODEBENCH_X_DIGITS) && !defined(DECODEBENCH_PROBE_BUILD)
#error "DECODEBENCH_X_DIGITS: set the CMake cache variable, so the binary names its probe build"
#endif
#ifdef DECODEBENCH_X_DIGITS
constexpr int kDigits = DECODEBENCH_X_DIGITS;
#else
constexpr int kDigits = 2;
#endif
static_assert(kDigits >= 1 && kDigits <= 3, "the stream layout holds three digits");
constexpr uint32_t kLow4 = 0x0F0F0F0Fu;
static_assert(kStreamGroupTiles == 32, "a warp-wide pass reads one group of the x' layout");

/// The lane's x' tile: kDigits × 8 words of digits and the tile's numbers (stream layout planes).
struct XTile {
  uint32_t d[kDigits][8];
  int sum[kDigits];  ///< Σ X_n over the tile
  int lo[kDigits];   ///< Σ X_n over the tile's columns 0..15 (kLo only)
  float f1, f2;      ///< f_1, f_2 (f_0 = 128·f_1)
  float sx;          ///< Σ x' over the tile (f32; kSx only)
};

/// 16 bytes at p + kOff (data written by earlier kernels, read-only here; volatile: never moved
/// above the PDL wait): the offset stays an immediate of the load.
template <int kOff>
__device__ __forceinline__ uint4 ldg16_at(const int8_t* p) {
  uint4 v;
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4 + %5];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p), "n"(kOff));
  return v;
}

/// 4 bytes at p + kOff (read-only data), as ldg16_at.
template <int kOff>
__device__ __forceinline__ int ldg4_at(const int8_t* p) {
  int v;
  asm volatile("ld.global.nc.u32 %0, [%1 + %2];\n" : "=r"(v) : "l"(p), "n"(kOff));
  return v;
}

/// Digit n's two 16-byte halves of the lane's tile (d = group + lane · 16).
template <int n>
__device__ __forceinline__ void load_digit(const int8_t* d, uint32_t (&w)[8]) {
  constexpr int kPiece = kStreamGroupTiles * 16;  // one digit half over the group
  const uint4 a = ldg16_at<(2 * n) * kPiece>(d);
  const uint4 b = ldg16_at<(2 * n + 1) * kPiece>(d);
  w[0] = a.x;
  w[1] = a.y;
  w[2] = a.z;
  w[3] = a.w;
  w[4] = b.x;
  w[5] = b.y;
  w[6] = b.z;
  w[7] = b.w;
}

/// Loads tile l of the stream layout's group at g (gemv_impl.cuh). Lanes reading consecutive
/// tiles read consecutive 16-byte pieces (four L1 wavefronts per warp-wide load), and every load
/// is one address plus an immediate offset. kSx / kLo: whether the decoder needs Σx' / the
/// low-half digit sums.
template <bool kSx, bool kLo>
__device__ __forceinline__ XTile load_x_tile(const int8_t* g, int l) {
  constexpr int kPlane = kStreamGroupTiles * 4;
  XTile x;
  const int8_t* d = g + l * 16;
  load_digit<0>(d, x.d[0]);
  if constexpr (kDigits > 1) load_digit<1>(d, x.d[kDigits > 1 ? 1 : 0]);
  if constexpr (kDigits > 2) load_digit<2>(d, x.d[kDigits - 1]);
  const int8_t* pl = g + l * 4;
  x.f1 = __int_as_float(ldg4_at<kStreamPlaneBase>(pl));
  x.f2 = x.f1 * 0.0078125f;  // f_2 = f_1 / 128 (exact)
  const int s01 = ldg4_at<kStreamPlaneBase + kPlane>(pl);
  // Digit 2's sums, only where they are used (the load is volatile: it would stay otherwise).
  int s2 = 0;
  if constexpr (kDigits > 2) s2 = ldg4_at<kStreamPlaneBase + 2 * kPlane>(pl);
  // Digit sums are packed as int16 pairs: sign-extend.
  x.sum[0] = static_cast<int16_t>(s01 & 0xFFFF);
  if constexpr (kDigits > 1) x.sum[kDigits > 1 ? 1 : 0] = s01 >> 16;
  if constexpr (kDigits > 2) x.sum[kDigits - 1] = static_cast<int16_t>(s2 & 0xFFFF);
  if constexpr (kSx) x.sx = __int_as_float(ldg4_at<kStreamPlaneBase + 3 * kPlane>(pl));
  if constexpr (kLo) {
    const int lo01 = ldg4_at<kStreamPlaneBase + 4 * kPlane>(pl);
    x.lo[0] = static_cast<int16_t>(lo01 & 0xFFFF);
    if constexpr (kDigits > 1) x.lo[kDigits > 1 ? 1 : 0] = lo01 >> 16;
    if constexpr (kDigits > 2) x.lo[kDigits - 1] = s2 >> 16;
  }
  return x;
}

/// The binary16 in the low 16 bits of u → f32.
__device__ __forceinline__ float half_bits(uint32_t u) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(u & 0xFFFFu)));
}

/// 4-bit codes of a tile (byte k: column k low, column k + 16 high) → 8 words of bytes in column
/// order.
__device__ __forceinline__ void unpack4(const uint4& w, uint32_t (&q)[8]) {
  q[0] = w.x & kLow4;
  q[1] = w.y & kLow4;
  q[2] = w.z & kLow4;
  q[3] = w.w & kLow4;
  q[4] = (w.x >> 4) & kLow4;
  q[5] = (w.y >> 4) & kLow4;
  q[6] = (w.z >> 4) & kLow4;
  q[7] = (w.w >> 4) & kLow4;
}

/// The 6-bit scale and min of sub-block s (0..7) of a Q4_K/Q5_K block from its three scale words
/// w1..w3 (the block's bytes 4-15): sub-blocks 0-3 keep 6 bits in bytes s of w1 (scale) and w2
/// (min); 4-7 take 4 bits from byte s − 4 of w3 and the top 2 bits of w1 and w2 (gguf-facts.md
/// §2.3).
__device__ __forceinline__ void kquant_scale_min(uint32_t w1, uint32_t w2, uint32_t w3, int s,
                                                 int& sc, int& mn) {
  const uint32_t sh8 = 8u * static_cast<uint32_t>(s & 3);
  const int b0 = static_cast<int>((w1 >> sh8) & 0xFFu);
  const int b1 = static_cast<int>((w2 >> sh8) & 0xFFu);
  const int b2 = static_cast<int>((w3 >> sh8) & 0xFFu);
  sc = s < 4 ? b0 & 63 : (b2 & 0xF) | ((b0 >> 6) << 4);
  mn = s < 4 ? b1 & 63 : (b2 >> 4) | ((b1 >> 6) << 4);
}

/// f_0·s_0 + f_1·s_1 (+ f_2·s_2 with three digits) for integer digit sums s (|s_n| <= 2^18).
__device__ __forceinline__ float digits_value(const XTile& x, const int (&s)[kDigits]) {
  if constexpr (kDigits == 1) {
    return x.f1 * static_cast<float>(s[0] * 128);
  } else if constexpr (kDigits == 2) {
    return x.f1 * static_cast<float>(s[0] * 128 + s[kDigits - 1]);
  } else {
    return fmaf(x.f1, static_cast<float>(s[0] * 128 + s[kDigits > 1 ? 1 : 0]),
                x.f2 * static_cast<float>(s[kDigits - 1]));
  }
}

/// Σ_c (code_c − kOffset)·x'_c over the whole tile (codes: 8 words of bytes in column order).
/// c + Σ_k a_k·b_k over the four bytes, a unsigned (0..255) and b signed (PTX dp4a.u32.s32).
__device__ __forceinline__ int dp4a_us(uint32_t a, uint32_t b, int c) {
  int d;
  asm("dp4a.u32.s32 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

/// kUnsigned: codes are unsigned bytes up to 255 (else 0..127, where signed and unsigned agree).
template <int kOffset, bool kUnsigned = false>
__device__ __forceinline__ float tile_dot(const uint32_t (&q)[8], const XTile& x) {
  int s[kDigits];
#pragma unroll
  for (int n = 0; n < kDigits; ++n) {
    int a = -kOffset * x.sum[n];
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      a = kUnsigned ? dp4a_us(q[k], x.d[n][k], a)
                    : __dp4a(static_cast<int>(q[k]), static_cast<int>(x.d[n][k]), a);
    }
    s[n] = a;
  }
  return digits_value(x, s);
}

}  // namespace decodebench::cuda::gemv_impl
