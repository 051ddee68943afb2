// The "tiled" device layout of quantized weight rows: every 32-column tile's codes in 16-byte
// aligned pieces, the scales of 32 tiles after their codes. Why: the quantized GEMV can then load
// weights straight into registers with coalesced 16-byte loads (lane l of a warp reads tile l's
// codes; the warp reads 512 contiguous bytes), as the F16/BF16 direct kernel does. GGUF blocks (18,
// 20, 34 bytes) put codes at 2-byte alignment, so kernels on that layout stage rows through shared
// memory first. The layout keeps each row's byte count (row_bytes), so stacked and sliced
// matrices work as before; the host repacks at upload (tile_rows). Includable from nvcc.
//
// A row of T = cols / 32 tiles is cut into groups of 32 tiles (1,024 columns; the last group may
// hold fewer, n = min(32, T − 32g)). Group g starts at 32·g·B bytes into the row (B = bytes per
// tile of the type: 18, 20, 34, 18) and holds, back to back:
//   Q4_0: codes[n][16], then d[n] (f16)
//   Q4_1: codes[n][16], then dm[n] (d f16, m f16: 4 bytes per tile)
//   Q8_0: codes[n][16] of columns 0-15, codes[n][16] of columns 16-31, then d[n] (f16)
//   Q4_K: codes[n][16], then the n / 8 blocks' 16-byte heads (d, dmin, scales[12] as in GGUF)
//   Q6_K: lo[n][16], hi[n][8], scales[n][2] (int8), then d[n / 8] (f16, one per 256 columns)
// so a warp reading one group (lane l: tile l's codes and scale) reads one contiguous range. Every
// part starts 16-byte aligned when the row does; row_bytes(type, cols) % 16 == 0 is required,
// except for Q6_K (210 bytes per 256 columns, 26.25 per tile): its parts start 4-byte aligned when
// the row does, and row_bytes % 4 == 0 (cols % 512 == 0) is required.
// 4-bit codes: byte k of a tile holds column k in its low nibble and column k + 16 in its high
// nibble (GGUF's Q4_0 order; Q4_K sub-blocks are rearranged into it; Q6_K's low 4 bits too). Q6_K's
// top 2 bits of column c = 16j + 4k + b (j < 2, k < 4, b < 4) are bits 2k and 2k + 1 of byte b of
// the tile's hi word j, so the decoder shifts each word's bits into place for the 4 columns of one
// 32-bit code word at once; its scales are the two int8 scales of the tile's columns 0-15 and
// 16-31. Block formats: gguf-facts.md §2.3.
#pragma once

#include <cstdint>

#include "core/quant/weight_type.hpp"

namespace decodebench::quant {

/// 16-byte code pieces per 32-column tile in the tiled layout: 2 for Q8_0, 1 for the 4-bit types
/// it holds and for Q6_K's low 4 bits (its top 2 bits follow in 8 bytes per tile), 0 for a type
/// it does not hold.
constexpr int tiled_code_pieces(WeightType t) {
  switch (t) {
    case WeightType::kQ4_0:
    case WeightType::kQ4_1:
    case WeightType::kQ4_K:
    case WeightType::kQ6_K:
      return 1;
    case WeightType::kQ8_0:
      return 2;
    default:
      return 0;
  }
}

/// Whether rows of `cols` values of type `t` have a tiled layout: Q4_0, Q4_1, Q8_0, Q4_K or Q6_K,
/// cols a positive multiple of the block size, and a row byte count that is a multiple of 16 (Q4_0
/// and Q8_0: cols % 256 == 0; Q4_1: cols % 128 == 0; Q4_K: always) or, for Q6_K, of 4 (cols % 512
/// == 0).
constexpr bool tiled_layout_supported(WeightType t, int64_t cols) {
  const WeightTraits tr = weight_traits(t);
  const int64_t align = t == WeightType::kQ6_K ? 4 : 16;
  return tiled_code_pieces(t) > 0 && cols > 0 && cols % tr.block_elems == 0 &&
         row_bytes(t, cols) % align == 0;
}

/// Rewrites `rows` rows of `cols` values of type `t` from GGUF blocks (`src`) into the tiled
/// layout (`dst`, the same rows · row_bytes(t, cols) bytes; must not overlap src). Pure data
/// movement: every code, scale and min keeps its bits.
/// Throws decodebench::Error (exit 1) when !tiled_layout_supported(t, cols) or rows < 0.
void tile_rows(WeightType t, int64_t rows, int64_t cols, const void* src, void* dst);

}  // namespace decodebench::quant
