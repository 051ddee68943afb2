// GGUF blocks → the tiled layout (core/quant/tiled_layout.hpp).
#include "core/quant/tiled_layout.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.hpp"

namespace decodebench::quant {

namespace {

/// Bytes per 32 tiles (1,024 columns: the GGUF blocks a group of the tiled layout replaces).
int64_t group_bytes(WeightType t) { return row_bytes(t, 1024); }

/// One group of `n` tiles of GGUF blocks at `s` (the group's first block) → `d`.
void tile_group(WeightType t, int64_t n, const uint8_t* s, uint8_t* d) {
  uint8_t* codes = d;
  uint8_t* scales = d + n * 16 * tiled_code_pieces(t);  // scales / heads after the codes
  switch (t) {
    case WeightType::kQ4_0:  // d @0 · qs[16] @2
      for (int64_t j = 0; j < n; ++j) {
        std::memcpy(codes + 16 * j, s + 18 * j + 2, 16);
        std::memcpy(scales + 2 * j, s + 18 * j, 2);
      }
      return;
    case WeightType::kQ4_1:  // d @0 · m @2 · qs[16] @4
      for (int64_t j = 0; j < n; ++j) {
        std::memcpy(codes + 16 * j, s + 20 * j + 4, 16);
        std::memcpy(scales + 4 * j, s + 20 * j, 4);
      }
      return;
    case WeightType::kQ8_0:  // d @0 · qs int8[32] @2
      for (int64_t j = 0; j < n; ++j) {
        std::memcpy(codes + 16 * j, s + 34 * j + 2, 16);
        std::memcpy(codes + 16 * (n + j), s + 34 * j + 18, 16);
        std::memcpy(scales + 2 * j, s + 34 * j, 2);
      }
      return;
    case WeightType::kQ4_K:  // d @0 · dmin @2 · scales[12] @4 · qs[128] @16
      for (int64_t b = 0; b < n / 8; ++b) {
        const uint8_t* blk = s + 144 * b;
        std::memcpy(scales + 16 * b, blk, 16);
        for (int sub = 0; sub < 8; ++sub) {
          // Sub-block `sub`: column k is the low (sub even) or high nibble of qs[32·(sub/2) + k].
          const uint8_t* qs = blk + 16 + 32 * (sub / 2);
          const int sh = 4 * (sub & 1);
          uint8_t* out = codes + 16 * (8 * b + sub);
          for (int k = 0; k < 16; ++k) {
            const int lo = (qs[k] >> sh) & 0xF;
            const int hi = (qs[k + 16] >> sh) & 0xF;
            out[k] = static_cast<uint8_t>(lo | (hi << 4));
          }
        }
      }
      return;
    case WeightType::kQ6_K: {  // ql[128] @0 · qh[64] @128 · scales int8[16] @192 · d @208
      uint8_t* hi = d + 16 * n;
      uint8_t* sc = d + 24 * n;
      uint8_t* dd = d + 26 * n;
      for (int64_t b = 0; b < n / 8; ++b) {
        const uint8_t* blk = s + 210 * b;
        std::memcpy(dd + 2 * b, blk + 208, 2);
        for (int t = 0; t < 8; ++t) {
          // Tile t = 4h + g holds columns 32t + c (c < 32) of the block: low 4 bits from
          // ql[64h + 32·(g & 1) + c] (high nibble for g >= 2), top 2 bits (qh[32h + c] >> 2g) & 3.
          const int h = t >> 2, g = t & 3;
          const auto low4 = [&](int c) {
            return (blk[64 * h + 32 * (g & 1) + c] >> (4 * (g >> 1))) & 0xF;
          };
          const auto top2 = [&](int c) { return (blk[128 + 32 * h + c] >> (2 * g)) & 0x3; };
          const int64_t tile = 8 * b + t;
          for (int k = 0; k < 16; ++k) {
            codes[16 * tile + k] = static_cast<uint8_t>(low4(k) | (low4(k + 16) << 4));
          }
          uint8_t* out = hi + 8 * tile;
          std::memset(out, 0, 8);
          for (int c = 0; c < 32; ++c) {  // c = 16j + 4k + byte: bits 2k of byte `byte` of word j
            const int j = c / 16, k = (c / 4) % 4, byte = c % 4;
            out[4 * j + byte] = static_cast<uint8_t>(out[4 * j + byte] | (top2(c) << (2 * k)));
          }
          sc[2 * tile] = blk[192 + 8 * h + 2 * g];
          sc[2 * tile + 1] = blk[192 + 8 * h + 2 * g + 1];
        }
      }
      return;
    }
    default:
      return;
  }
}

}  // namespace

void tile_rows(WeightType t, int64_t rows, int64_t cols, const void* src, void* dst) {
  if (!tiled_layout_supported(t, cols) || rows < 0) {
    const char* name = weight_traits(t).name;
    throw runtime_error(std::string("tiled layout: ") + (name != nullptr ? name : "unknown type") +
                        " rows of " + std::to_string(cols) + " columns (" + std::to_string(rows) +
                        " rows) have no tiled layout");
  }
  const int64_t rb = row_bytes(t, cols);
  const auto* s = static_cast<const uint8_t*>(src);
  auto* d = static_cast<uint8_t*>(dst);
  const int64_t nt = cols / 32, gb = group_bytes(t);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < nt; j += 32) {
      const int64_t off = r * rb + j / 32 * gb;  // GGUF blocks and tiled groups start alike
      tile_group(t, std::min<int64_t>(32, nt - j), s + off, d + off);
    }
  }
}

}  // namespace decodebench::quant
