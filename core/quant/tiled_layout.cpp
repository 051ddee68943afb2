// GGUF blocks → the tiled layout (core/quant/tiled_layout.hpp).
#include "core/quant/tiled_layout.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.hpp"

namespace decodebench::quant {

namespace {

/// Bytes per 32-column tile (the GGUF block's bytes per 32 columns).
int64_t tile_bytes(WeightType t) { return row_bytes(t, 32 * 8) / 8; }

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
  const int64_t nt = cols / 32, tb = tile_bytes(t);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < nt; j += 32) {
      const int64_t off = r * rb + j * tb;  // GGUF blocks and tiled groups start alike
      tile_group(t, std::min<int64_t>(32, nt - j), s + off, d + off);
    }
  }
}

}  // namespace decodebench::quant
