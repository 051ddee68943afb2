// Per-weight-type device code shared by the embedding and GEMV kernels: exact element dequant
// (bit-identical to quant::dequantize_row) and the "piece" dot products of the staged GEMV.
// Block layouts: core/quant/blocks.hpp; formulas: gguf-facts.md §2.3. Device code only.
//
// GEMV pieces. A row is processed block by block; within a block every lane of a warp owns one
// fixed "piece": kGroups runs of 4 consecutive weights whose x values are one float4 each, at
// column offsets group_col(piece, g) inside the block. Pieces are chosen so that consecutive lanes
// read consecutive float4 of x (coalesced) and each lane reads whole 32-bit words of codes. The
// float types use a pseudo-block of 4 elements (one piece). K-quants take their per-sub-block
// coefficients (d·sc, dmin·mn) from a small table that the warp decodes once per pipeline stage
// (table_entry), instead of every lane decoding 6-bit scales for its 8 weights.
//
// Codes become floats exactly (byte_as_float: one PRMT + one FADD), products and sums are f32
// (FFMA), so the GEMV differs from quant::dot_row only by summation order.
#pragma once

#if !defined(__CUDACC__)
#error "cuda/kernels/dequant.cuh holds device code; include it from .cu files only"
#endif

#include <cuda_fp16.h>

#include <cstdint>

#include "core/quant/blocks.hpp"
#include "core/quant/fp16.hpp"
#include "core/quant/weight_type.hpp"
#include "cuda/kernels/common.cuh"

namespace decodebench::cuda::kernels {

// ---- loads from a block at a 2-byte aligned address (global or shared) ----------------------

__device__ __forceinline__ uint32_t ld_u16(const uint8_t* p) {
  return *reinterpret_cast<const uint16_t*>(p);
}

/// 32-bit little-endian word at a 2-byte aligned address.
__device__ __forceinline__ uint32_t ld_u32_a2(const uint8_t* p) {
  const uint16_t* q = reinterpret_cast<const uint16_t*>(p);
  return static_cast<uint32_t>(q[0]) | (static_cast<uint32_t>(q[1]) << 16);
}

/// 32-bit word at a 4-byte aligned address.
__device__ __forceinline__ uint32_t ld_u32_a4(const uint8_t* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

/// binary16 at a 2-byte aligned address → f32 (hardware conversion, exact for finite values).
__device__ __forceinline__ float ld_f16(const uint8_t* p) {
  return __half2float(__ushort_as_half(*reinterpret_cast<const unsigned short*>(p)));
}

/// binary16 → f32 with quant::f16_to_f32 (bit-identical to the CPU, NaN payloads included).
__device__ __forceinline__ float ld_f16_exact(const uint8_t* p) {
  return quant::f16_to_f32(*reinterpret_cast<const uint16_t*>(p));
}

/// Moves bit j of t (t < 16) to bit 4 of byte j, for j < 4 (no carries: the four shifted copies of
/// t occupy disjoint bit ranges before the mask).
__device__ __forceinline__ uint32_t spread_bit4(uint32_t t) {
  return (t * 0x02040810u) & 0x10101010u;
}

/// Unpacks the 6-bit scale and min of sub-block s (0..7) of a Q4_K/Q5_K super-block from its 12
/// scale bytes `b` (gguf-facts.md §2.3).
__device__ __forceinline__ void k_scale_min(const uint8_t* b, int s, int* sc, int* mn) {
  if (s < 4) {
    *sc = b[s] & 63;
    *mn = b[s + 4] & 63;
  } else {
    *sc = (b[s + 4] & 0xF) | ((b[s - 4] >> 6) << 4);
    *mn = (b[s + 4] >> 4) | ((b[s] >> 6) << 4);
  }
}

/// Per-type device code; specialised once per supported WeightType.
///  kBlockElems/kBlockBytes: GEMV block geometry (float types: a pseudo-block of 4 elements);
///  kPieces: pieces per block (32 / kPieces blocks per warp step); kGroups: float4 groups per
///  piece; kChunkBlocks: blocks per row per pipeline stage (about 512-640 bytes); kTable: needs the
///  per-stage coefficient table (4 float4 entries per block); elem(row, e): element e of a row,
///  exactly as quant::dequantize_row computes it.
template <WeightType T>
struct QuantOps;

// ---- float types -----------------------------------------------------------------------------

template <>
struct QuantOps<WeightType::kF32> {
  static constexpr int kBlockElems = 4, kBlockBytes = 16, kPieces = 1, kGroups = 1;
  static constexpr int kChunkBlocks = 32;
  static constexpr bool kTable = false;
  __device__ static int group_col(int, int) { return 0; }
  __device__ static float dot(const uint8_t* blk, int, const float4* x, float4) {
    const float4 w = *reinterpret_cast<const float4*>(blk);
    float p = w.x * x[0].x;
    p = fmaf(w.y, x[0].y, p);
    p = fmaf(w.z, x[0].z, p);
    return fmaf(w.w, x[0].w, p);
  }
  __device__ static float elem(const uint8_t* row, int64_t e) {
    return reinterpret_cast<const float*>(row)[e];
  }
};

template <>
struct QuantOps<WeightType::kF16> {
  static constexpr int kBlockElems = 4, kBlockBytes = 8, kPieces = 1, kGroups = 1;
  static constexpr int kChunkBlocks = 64;
  static constexpr bool kTable = false;
  __device__ static int group_col(int, int) { return 0; }
  __device__ static float dot(const uint8_t* blk, int, const float4* x, float4) {
    const uint2 u = *reinterpret_cast<const uint2*>(blk);
    const float2 a = __half22float2(*reinterpret_cast<const __half2*>(&u.x));
    const float2 b = __half22float2(*reinterpret_cast<const __half2*>(&u.y));
    float p = a.x * x[0].x;
    p = fmaf(a.y, x[0].y, p);
    p = fmaf(b.x, x[0].z, p);
    return fmaf(b.y, x[0].w, p);
  }
  __device__ static float elem(const uint8_t* row, int64_t e) { return ld_f16_exact(row + 2 * e); }
};

template <>
struct QuantOps<WeightType::kBF16> {
  static constexpr int kBlockElems = 4, kBlockBytes = 8, kPieces = 1, kGroups = 1;
  static constexpr int kChunkBlocks = 64;
  static constexpr bool kTable = false;
  __device__ static int group_col(int, int) { return 0; }
  __device__ static float dot(const uint8_t* blk, int, const float4* x, float4) {
    const uint2 u = *reinterpret_cast<const uint2*>(blk);
    float p = __uint_as_float(u.x << 16) * x[0].x;
    p = fmaf(__uint_as_float(u.x & 0xFFFF0000u), x[0].y, p);
    p = fmaf(__uint_as_float(u.y << 16), x[0].z, p);
    return fmaf(__uint_as_float(u.y & 0xFFFF0000u), x[0].w, p);
  }
  __device__ static float elem(const uint8_t* row, int64_t e) {
    return quant::bf16_to_f32(*reinterpret_cast<const uint16_t*>(row + 2 * e));
  }
};

// ---- legacy 32-value blocks: piece k (0..3) = codes 4k..4k+3 and 16+4k..16+4k+3 -----------------

/// Column offsets of the two groups of piece k in a 32-value block.
__device__ __forceinline__ int legacy_group_col(int k, int g) { return 4 * k + 16 * g; }

template <>
struct QuantOps<WeightType::kQ8_0> {  // d f16 @0 · qs int8[32] @2
  static constexpr int kBlockElems = 32, kBlockBytes = 34, kPieces = 4, kGroups = 2;
  static constexpr int kChunkBlocks = 16;
  static constexpr bool kTable = false;
  __device__ static int group_col(int k, int g) { return legacy_group_col(k, g); }
  __device__ static float dot(const uint8_t* blk, int k, const float4* x, float4) {
    // int8 → uint8 by flipping the sign bit, then subtract 128 exactly.
    const uint32_t w0 = ld_u32_a2(blk + 2 + 4 * k) ^ 0x80808080u;
    const uint32_t w1 = ld_u32_a2(blk + 18 + 4 * k) ^ 0x80808080u;
    float p = dot4_bytes(w0, x[0], 128.0f, 0.0f);
    p = dot4_bytes(w1, x[1], 128.0f, p);
    return ld_f16(blk) * p;
  }
  __device__ static float elem(const uint8_t* row, int64_t e) {
    const uint8_t* blk = row + (e / 32) * kBlockBytes;
    const int j = static_cast<int>(e % 32);
    const float q = static_cast<float>(static_cast<int8_t>(blk[2 + j]));
    return __fmul_rn(ld_f16_exact(blk), q);
  }
};

template <>
struct QuantOps<WeightType::kQ4_0> {  // d f16 @0 · qs u8[16] @2
  static constexpr int kBlockElems = 32, kBlockBytes = 18, kPieces = 4, kGroups = 2;
  static constexpr int kChunkBlocks = 32;
  static constexpr bool kTable = false;
  __device__ static int group_col(int k, int g) { return legacy_group_col(k, g); }
  __device__ static float dot(const uint8_t* blk, int k, const float4* x, float4) {
    const uint32_t w = ld_u32_a2(blk + 2 + 4 * k);
    float p = dot4_bytes(w & 0x0F0F0F0Fu, x[0], 8.0f, 0.0f);
    p = dot4_bytes((w >> 4) & 0x0F0F0F0Fu, x[1], 8.0f, p);
    return ld_f16(blk) * p;
  }
  __device__ static float elem(const uint8_t* row, int64_t e) {
    const uint8_t* blk = row + (e / 32) * kBlockBytes;
    const int j = static_cast<int>(e % 32);
    const int byte = blk[2 + (j & 15)];
    const int q = (j < 16 ? (byte & 0xF) : (byte >> 4)) - 8;
    return __fmul_rn(ld_f16_exact(blk), static_cast<float>(q));
  }
};

template <>
struct QuantOps<WeightType::kQ4_1> {  // d f16 @0 · m f16 @2 · qs u8[16] @4 (4-byte aligned)
  static constexpr int kBlockElems = 32, kBlockBytes = 20, kPieces = 4, kGroups = 2;
  static constexpr int kChunkBlocks = 32;
  static constexpr bool kTable = false;
  __device__ static int group_col(int k, int g) { return legacy_group_col(k, g); }
  __device__ static float dot(const uint8_t* blk, int k, const float4* x, float4) {
    const uint32_t w = ld_u32_a4(blk + 4 + 4 * k);
    float p = dot4_bytes(w & 0x0F0F0F0Fu, x[0], 0.0f, 0.0f);
    p = dot4_bytes((w >> 4) & 0x0F0F0F0Fu, x[1], 0.0f, p);
    const float xs = hsum4(x[0]) + hsum4(x[1]);
    return fmaf(ld_f16(blk), p, ld_f16(blk + 2) * xs);
  }
  __device__ static float elem(const uint8_t* row, int64_t e) {
    const uint8_t* blk = row + (e / 32) * kBlockBytes;
    const int j = static_cast<int>(e % 32);
    const int byte = blk[4 + (j & 15)];
    const int q = j < 16 ? (byte & 0xF) : (byte >> 4);
    return __fadd_rn(__fmul_rn(ld_f16_exact(blk), static_cast<float>(q)), ld_f16_exact(blk + 2));
  }
};

template <>
struct QuantOps<WeightType::kQ5_0> {  // d f16 @0 · qh u32 @2 · qs u8[16] @6
  static constexpr int kBlockElems = 32, kBlockBytes = 22, kPieces = 4, kGroups = 2;
  static constexpr int kChunkBlocks = 24;
  static constexpr bool kTable = false;
  __device__ static int group_col(int k, int g) { return legacy_group_col(k, g); }
  __device__ static float dot(const uint8_t* blk, int k, const float4* x, float4) {
    const uint32_t h = ld_u32_a2(blk + 2);
    const uint32_t w = ld_u32_a2(blk + 6 + 4 * k);
    const uint32_t lo = (w & 0x0F0F0F0Fu) | spread_bit4((h >> (4 * k)) & 0xFu);
    const uint32_t hi = ((w >> 4) & 0x0F0F0F0Fu) | spread_bit4((h >> (16 + 4 * k)) & 0xFu);
    float p = dot4_bytes(lo, x[0], 16.0f, 0.0f);
    p = dot4_bytes(hi, x[1], 16.0f, p);
    return ld_f16(blk) * p;
  }
  __device__ static float elem(const uint8_t* row, int64_t e) {
    const uint8_t* blk = row + (e / 32) * kBlockBytes;
    const int j = static_cast<int>(e % 32);
    const uint32_t h = ld_u32_a2(blk + 2);
    const int byte = blk[6 + (j & 15)];
    const int q = ((j < 16 ? (byte & 0xF) : (byte >> 4)) | static_cast<int>(((h >> j) & 1u) << 4));
    return __fmul_rn(ld_f16_exact(blk), static_cast<float>(q - 16));
  }
};

template <>
struct QuantOps<WeightType::kQ5_1> {  // d f16 @0 · m f16 @2 · qh u32 @4 · qs u8[16] @8 (8-aligned)
  static constexpr int kBlockElems = 32, kBlockBytes = 24, kPieces = 4, kGroups = 2;
  static constexpr int kChunkBlocks = 24;
  static constexpr bool kTable = false;
  __device__ static int group_col(int k, int g) { return legacy_group_col(k, g); }
  __device__ static float dot(const uint8_t* blk, int k, const float4* x, float4) {
    const uint32_t h = ld_u32_a4(blk + 4);
    const uint32_t w = ld_u32_a4(blk + 8 + 4 * k);
    const uint32_t lo = (w & 0x0F0F0F0Fu) | spread_bit4((h >> (4 * k)) & 0xFu);
    const uint32_t hi = ((w >> 4) & 0x0F0F0F0Fu) | spread_bit4((h >> (16 + 4 * k)) & 0xFu);
    float p = dot4_bytes(lo, x[0], 0.0f, 0.0f);
    p = dot4_bytes(hi, x[1], 0.0f, p);
    const float xs = hsum4(x[0]) + hsum4(x[1]);
    return fmaf(ld_f16(blk), p, ld_f16(blk + 2) * xs);
  }
  __device__ static float elem(const uint8_t* row, int64_t e) {
    const uint8_t* blk = row + (e / 32) * kBlockBytes;
    const int j = static_cast<int>(e % 32);
    const uint32_t h = ld_u32_a2(blk + 4);
    const int byte = blk[8 + (j & 15)];
    const int q = ((j < 16 ? (byte & 0xF) : (byte >> 4)) | static_cast<int>(((h >> j) & 1u) << 4));
    return __fadd_rn(__fmul_rn(ld_f16_exact(blk), static_cast<float>(q)), ld_f16_exact(blk + 2));
  }
};

// ---- K-quants (256-value super-blocks) ------------------------------------------------------
// Q4_K/Q5_K piece p (0..31): c = p / 8, m = p % 8 → codes from qs[32c + 4m .. +3]; low nibbles
// are elements 64c + 4m.. (sub-block 2c), high nibbles 64c + 32 + 4m.. (sub-block 2c + 1).
// Table entry c = {d·sc(2c), dmin·mn(2c), d·sc(2c+1), dmin·mn(2c+1)}.

/// Table entry c (0..3) of a Q4_K/Q5_K super-block (d f16 @0, dmin f16 @2, scales u8[12] @4).
__device__ __forceinline__ float4 k_affine_entry(const uint8_t* blk, int c) {
  const float d = ld_f16(blk);
  const float dmin = ld_f16(blk + 2);
  int sc0, mn0, sc1, mn1;
  k_scale_min(blk + 4, 2 * c, &sc0, &mn0);
  k_scale_min(blk + 4, 2 * c + 1, &sc1, &mn1);
  return make_float4(d * static_cast<float>(sc0), dmin * static_cast<float>(mn0),
                     d * static_cast<float>(sc1), dmin * static_cast<float>(mn1));
}

/// Q4_K/Q5_K element e of a super-block with codes already unpacked: (d·sc)·q − dmin·mn, the
/// CPU's operation order.
__device__ __forceinline__ float k_affine_elem(const uint8_t* blk, int s, int q) {
  int sc, mn;
  k_scale_min(blk + 4, s, &sc, &mn);
  const float dl = __fmul_rn(ld_f16_exact(blk), static_cast<float>(sc));
  const float ml = __fmul_rn(ld_f16_exact(blk + 2), static_cast<float>(mn));
  return __fsub_rn(__fmul_rn(dl, static_cast<float>(q)), ml);
}

template <>
struct QuantOps<WeightType::kQ4_K> {  // d @0 · dmin @2 · scales[12] @4 · qs[128] @16 (16-aligned)
  static constexpr int kBlockElems = 256, kBlockBytes = 144, kPieces = 32, kGroups = 2;
  static constexpr int kChunkBlocks = 4;
  static constexpr bool kTable = true;
  __device__ static int group_col(int p, int g) { return 64 * (p >> 3) + 4 * (p & 7) + 32 * g; }
  __device__ static int table_index(int p) { return p >> 3; }
  __device__ static float4 table_entry(const uint8_t* blk, int entry) {
    return k_affine_entry(blk, entry);
  }
  __device__ static float dot(const uint8_t* blk, int p, const float4* x, float4 t) {
    const uint32_t w = ld_u32_a4(blk + 16 + 32 * (p >> 3) + 4 * (p & 7));
    const float p0 = dot4_bytes(w & 0x0F0F0F0Fu, x[0], 0.0f, 0.0f);
    const float p1 = dot4_bytes((w >> 4) & 0x0F0F0F0Fu, x[1], 0.0f, 0.0f);
    float r = t.x * p0;
    r = fmaf(-t.y, hsum4(x[0]), r);
    r = fmaf(t.z, p1, r);
    return fmaf(-t.w, hsum4(x[1]), r);
  }
  __device__ static float elem(const uint8_t* row, int64_t e) {
    const uint8_t* blk = row + (e / 256) * kBlockBytes;
    const int j = static_cast<int>(e % 256);
    const int c = j / 64, t = (j / 32) & 1, l = j & 31;
    const int byte = blk[16 + 32 * c + l];
    return k_affine_elem(blk, j / 32, t ? (byte >> 4) : (byte & 0xF));
  }
};

template <>
struct QuantOps<WeightType::kQ5_K> {  // d @0 · dmin @2 · scales @4 · qh[32] @16 · qs[128] @48
  static constexpr int kBlockElems = 256, kBlockBytes = 176, kPieces = 32, kGroups = 2;
  static constexpr int kChunkBlocks = 3;
  static constexpr bool kTable = true;
  __device__ static int group_col(int p, int g) { return 64 * (p >> 3) + 4 * (p & 7) + 32 * g; }
  __device__ static int table_index(int p) { return p >> 3; }
  __device__ static float4 table_entry(const uint8_t* blk, int entry) {
    return k_affine_entry(blk, entry);
  }
  __device__ static float dot(const uint8_t* blk, int p, const float4* x, float4 t) {
    const int c = p >> 3, m = p & 7;
    const uint32_t w = ld_u32_a4(blk + 48 + 32 * c + 4 * m);
    const uint32_t h = ld_u32_a4(blk + 16 + 4 * m);  // qh[l] for l = 4m..4m+3
    const uint32_t lo = (w & 0x0F0F0F0Fu) | (((h >> (2 * c)) & 0x01010101u) << 4);
    const uint32_t hi = ((w >> 4) & 0x0F0F0F0Fu) | (((h >> (2 * c + 1)) & 0x01010101u) << 4);
    const float p0 = dot4_bytes(lo, x[0], 0.0f, 0.0f);
    const float p1 = dot4_bytes(hi, x[1], 0.0f, 0.0f);
    float r = t.x * p0;
    r = fmaf(-t.y, hsum4(x[0]), r);
    r = fmaf(t.z, p1, r);
    return fmaf(-t.w, hsum4(x[1]), r);
  }
  __device__ static float elem(const uint8_t* row, int64_t e) {
    const uint8_t* blk = row + (e / 256) * kBlockBytes;
    const int j = static_cast<int>(e % 256);
    const int c = j / 64, t = (j / 32) & 1, l = j & 31, s = j / 32;
    const int byte = blk[48 + 32 * c + l];
    const int q = (t ? (byte >> 4) : (byte & 0xF)) | (((blk[16 + l] >> s) & 1) << 4);
    return k_affine_elem(blk, s, q);
  }
};

// Q6_K piece p (0..15): hh = p / 8, m = p % 8 → elements 128hh + 32g + 4m .. +3 for g = 0..3
// (low 4 bits: ql[64hh + 32(g & 1) + 4m ..], low nibble for g < 2; high 2 bits:
// qh[32hh + 4m ..] >> 2g). Table entry 2hh + (m >= 4) = {d·scales[8hh + 2g + (m >= 4)], g = 0..3}.
template <>
struct QuantOps<WeightType::kQ6_K> {  // ql[128] @0 · qh[64] @128 · scales int8[16] @192 · d @208
  static constexpr int kBlockElems = 256, kBlockBytes = 210, kPieces = 16, kGroups = 4;
  static constexpr int kChunkBlocks = 2;
  static constexpr bool kTable = true;
  __device__ static int group_col(int p, int g) { return 128 * (p >> 3) + 32 * g + 4 * (p & 7); }
  __device__ static int table_index(int p) { return 2 * (p >> 3) + ((p & 7) >= 4 ? 1 : 0); }
  __device__ static float4 table_entry(const uint8_t* blk, int entry) {
    const float d = ld_f16(blk + 208);
    const int8_t* sc = reinterpret_cast<const int8_t*>(blk + 192) + 8 * (entry >> 1) + (entry & 1);
    return make_float4(d * static_cast<float>(sc[0]), d * static_cast<float>(sc[2]),
                       d * static_cast<float>(sc[4]), d * static_cast<float>(sc[6]));
  }
  __device__ static float dot(const uint8_t* blk, int p, const float4* x, float4 t) {
    const int hh = p >> 3, m = p & 7;
    const uint32_t w1 = ld_u32_a2(blk + 64 * hh + 4 * m);
    const uint32_t w2 = ld_u32_a2(blk + 64 * hh + 32 + 4 * m);
    const uint32_t h = ld_u32_a2(blk + 128 + 32 * hh + 4 * m);
    const uint32_t q0 = (w1 & 0x0F0F0F0Fu) | ((h << 4) & 0x30303030u);
    const uint32_t q1 = (w2 & 0x0F0F0F0Fu) | ((h << 2) & 0x30303030u);
    const uint32_t q2 = ((w1 >> 4) & 0x0F0F0F0Fu) | (h & 0x30303030u);
    const uint32_t q3 = ((w2 >> 4) & 0x0F0F0F0Fu) | ((h >> 2) & 0x30303030u);
    float r = t.x * dot4_bytes(q0, x[0], 32.0f, 0.0f);
    r = fmaf(t.y, dot4_bytes(q1, x[1], 32.0f, 0.0f), r);
    r = fmaf(t.z, dot4_bytes(q2, x[2], 32.0f, 0.0f), r);
    return fmaf(t.w, dot4_bytes(q3, x[3], 32.0f, 0.0f), r);
  }
  __device__ static float elem(const uint8_t* row, int64_t e) {
    const uint8_t* blk = row + (e / 256) * kBlockBytes;
    const int j = static_cast<int>(e % 256);
    const int hh = j / 128, g = (j / 32) & 3, l = j & 31;
    const int lb = blk[64 * hh + 32 * (g & 1) + l];
    const int low = g < 2 ? (lb & 0xF) : (lb >> 4);
    const int high = (blk[128 + 32 * hh + l] >> (2 * g)) & 3;
    const float dl =
        __fmul_rn(ld_f16_exact(blk + 208),
                  static_cast<float>(reinterpret_cast<const int8_t*>(blk + 192)[j / 16]));
    return __fmul_rn(dl, static_cast<float>((low | (high << 4)) - 32));
  }
};

/// Calls `f.template operator()<T>()` (a lambda `[&]<WeightType T>() {...}`) with the runtime type
/// `t` as the template argument T, for the 8 block-quantized types (Q8_0 ... Q6_K). Returns false
/// (calls nothing) for any other id.
template <typename F>
bool dispatch_quant_type(WeightType t, F&& f) {
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

/// As dispatch_quant_type, plus F16 and BF16 (the types the tensor-core kernels take).
template <typename F>
bool dispatch_half_or_quant_type(WeightType t, F&& f) {
  switch (t) {
    case WeightType::kF16:
      f.template operator()<WeightType::kF16>();
      return true;
    case WeightType::kBF16:
      f.template operator()<WeightType::kBF16>();
      return true;
    default:
      return dispatch_quant_type(t, f);
  }
}

/// As dispatch_quant_type, for all 11 supported types (F32, F16, BF16 too): the one place a
/// runtime type becomes a compile-time one, so only the supported instantiations exist.
template <typename F>
bool dispatch_weight_type(WeightType t, F&& f) {
  if (t == WeightType::kF32) {
    f.template operator()<WeightType::kF32>();
    return true;
  }
  return dispatch_half_or_quant_type(t, f);
}

}  // namespace decodebench::cuda::kernels
