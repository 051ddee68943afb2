// The exact digit split of x' (gemv_impl.cuh, "x split format") for one warp's 128 columns:
// shared by the standalone split (prepare_x, gemv_mma.cu), the tensor-core GEMV's per-CTA split
// and the attention kernel, which splits its output for the o projection's GEMV. Device code
// only: include from .cu files.
#pragma once

#if !defined(__CUDACC__)
#error "cuda/kernels/x_split.cuh holds device code; include it from .cu files only"
#endif

#include <cstdint>

#include "cuda/kernels/common.cuh"
#include "cuda/kernels/gemv_impl.cuh"

namespace decodebench::cuda::gemv_impl {

constexpr float kMagicF = 12582912.0f;  ///< 1.5·2^23 (rounds a float to an integer)

/// Low byte of each of four words, packed (byte k from word k).
__device__ __forceinline__ uint32_t pack_low_bytes(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  return __byte_perm(__byte_perm(a, b, 0x0040), __byte_perm(c, d, 0x0040), 0x5410);
}

/// Where split_128 also writes the stream layout (gemv_impl.cuh); base == nullptr: not at all.
struct StreamOut {
  int8_t* base = nullptr;  ///< start of the stream layout (x_split_stream_offset)
};

/// One warp splits 128 columns [c0, c0 + 128) (4 tiles; lane l holds columns c0 + 4l..+3 in v;
/// `valid`: whether those columns exist — uniform per 8-lane tile group). All 32 lanes call it.
/// `so`: where the stream layout goes too (prepare_x only; the CTA split leaves it out).
__device__ __forceinline__ void split_128(float4 v, int64_t c0, bool valid, int8_t* dig,
                                          int64_t stride, int4* meta, const StreamOut& so = {}) {
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
      out = make_int4(f(0), f(1), sums[0] + other[0], sums[1] + other[1]);
    } else if (q == 1) {
      out = make_int4(f(2), f(3), sums[2] + other[2], sums[3] + other[3]);
    } else {
      out = make_int4(__float_as_int(sx), pack(sums[0], sums[1]), pack(sums[2], sums[3]), 0);
    }
    meta[3 * tile + q] = out;
    if (so.base != nullptr && q == 0) {
      const auto plane = [&](int p) {
        return reinterpret_cast<int*>(so.base + x_stream_plane_offset(tile, p));
      };
      *plane(0) = f(1);
      *plane(1) = pack(sums[0] + other[0], sums[1] + other[1]);
      *plane(2) = pack(sums[2] + other[2], sums[2]);
      *plane(3) = __float_as_int(sx);
      *plane(4) = pack(sums[0], sums[1]);
    }
  }
  if (so.base != nullptr) {
    const int64_t tile = c / 32;
    const int64_t h = (c / 16) & 1;
#pragma unroll
    for (int n = 0; n < kStreamDigits; ++n) {
      *reinterpret_cast<uint32_t*>(so.base + x_stream_digit_offset(tile, n, static_cast<int>(h)) +
                                   (c & 15)) = word[n];
    }
  }
}

/// Where a pre-split x' of `cols` columns lies in a buffer of x_split_bytes(cols) bytes.
struct SplitOut {
  int8_t* dig = nullptr;  ///< digit rows (stride cols + 16)
  int4* meta = nullptr;   ///< per-tile meta of the mma layout
  StreamOut so;           ///< the stream layout
  int64_t stride = 0;
};

/// The pieces of a pre-split x' buffer `out` (x_split_bytes(cols) bytes) for `cols` columns.
__host__ __device__ inline SplitOut split_out(void* out, int64_t cols) {
  SplitOut o;
  o.dig = static_cast<int8_t*>(out);
  o.meta = reinterpret_cast<int4*>(o.dig + x_split_digit_bytes(cols));
  o.so.base = o.dig + x_split_stream_offset(cols);
  o.stride = cols + 16;
  return o;
}

}  // namespace decodebench::cuda::gemv_impl
