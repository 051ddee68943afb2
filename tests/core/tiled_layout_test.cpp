// The tiled device layout (core/quant/tiled_layout.hpp): where each code, scale and min of a GGUF
// row lands, checked byte by byte on rows built by hand, and which row lengths have the layout.
#include "core/quant/tiled_layout.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "core/quant/dequant.hpp"
#include "core/quant/fp16.hpp"
#include "core/quant/weight_type.hpp"

namespace decodebench::quant {
namespace {

/// Row bytes with byte i = (i * 37 + seed) mod 256: every byte differs from its neighbours, so a
/// copy from a wrong offset shows.
std::vector<uint8_t> pattern(size_t n, int seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>((i * 37 + seed) % 256);
  return v;
}

TEST(TiledLayout, WhichRowsHaveIt) {
  EXPECT_TRUE(tiled_layout_supported(WeightType::kQ4_0, 3584));   // 112 tiles, 2016 bytes
  EXPECT_TRUE(tiled_layout_supported(WeightType::kQ4_0, 18944));  // 10656 bytes
  EXPECT_FALSE(tiled_layout_supported(WeightType::kQ4_0, 576));   // SmolLM2: 324 bytes
  EXPECT_FALSE(tiled_layout_supported(WeightType::kQ4_0, 896));   // 504 bytes
  EXPECT_TRUE(tiled_layout_supported(WeightType::kQ4_1, 128));    // 80 bytes
  EXPECT_FALSE(tiled_layout_supported(WeightType::kQ4_1, 96));    // 60 bytes
  EXPECT_TRUE(tiled_layout_supported(WeightType::kQ8_0, 256));    // 272 bytes
  EXPECT_FALSE(tiled_layout_supported(WeightType::kQ8_0, 128));   // 136 bytes
  EXPECT_TRUE(tiled_layout_supported(WeightType::kQ4_K, 256));    // 144 bytes
  EXPECT_FALSE(tiled_layout_supported(WeightType::kQ4_0, 100));   // not whole blocks
  EXPECT_FALSE(tiled_layout_supported(WeightType::kQ4_0, 0));
  // Q6_K: rows of a multiple of 4 bytes (210 per block: an even block count).
  EXPECT_TRUE(tiled_layout_supported(WeightType::kQ6_K, 3584));   // 2940 bytes
  EXPECT_TRUE(tiled_layout_supported(WeightType::kQ6_K, 18944));  // 15540 bytes
  EXPECT_TRUE(tiled_layout_supported(WeightType::kQ6_K, 512));    // 420 bytes
  EXPECT_FALSE(tiled_layout_supported(WeightType::kQ6_K, 768));   // 630 bytes
  EXPECT_FALSE(tiled_layout_supported(WeightType::kQ6_K, 256));   // 210 bytes
  EXPECT_FALSE(tiled_layout_supported(WeightType::kQ6_K, 1000));  // not whole blocks
  for (WeightType t : {WeightType::kF32, WeightType::kF16, WeightType::kBF16, WeightType::kQ5_0,
                       WeightType::kQ5_1, WeightType::kQ5_K}) {
    EXPECT_FALSE(tiled_layout_supported(t, 4096)) << weight_traits(t).name;
    EXPECT_EQ(tiled_code_pieces(t), 0) << weight_traits(t).name;
  }
  EXPECT_EQ(tiled_code_pieces(WeightType::kQ8_0), 2);
  EXPECT_EQ(tiled_code_pieces(WeightType::kQ4_K), 1);
  EXPECT_EQ(tiled_code_pieces(WeightType::kQ6_K), 1);
}

// Q4_0, 2 rows of 256 columns (8 blocks of 18 bytes: d @0, qs @2; one group of 8 tiles per row):
// tile j's codes at 16·j, its d at 128 + 2·j, per row.
TEST(TiledLayout, Q4_0CodesThenScales) {
  const int64_t cols = 256, rb = 144;
  const std::vector<uint8_t> src = pattern(2 * rb, 5);
  std::vector<uint8_t> dst(src.size(), 0xEE);
  tile_rows(WeightType::kQ4_0, 2, cols, src.data(), dst.data());
  for (int64_t r = 0; r < 2; ++r) {
    for (int64_t j = 0; j < 8; ++j) {
      for (int k = 0; k < 16; ++k) {
        ASSERT_EQ(dst[r * rb + 16 * j + k], src[r * rb + 18 * j + 2 + k])
            << r << " " << j << " " << k;
      }
      EXPECT_EQ(dst[r * rb + 128 + 2 * j], src[r * rb + 18 * j]);
      EXPECT_EQ(dst[r * rb + 128 + 2 * j + 1], src[r * rb + 18 * j + 1]);
    }
  }
}

// Q4_1, 1 row of 128 columns (4 blocks of 20 bytes: d @0, m @2, qs @4): codes at 16·j, then d and
// m together at 64 + 4·j.
TEST(TiledLayout, Q4_1CodesThenScaleAndMin) {
  const std::vector<uint8_t> src = pattern(80, 11);
  std::vector<uint8_t> dst(80, 0xEE);
  tile_rows(WeightType::kQ4_1, 1, 128, src.data(), dst.data());
  for (int j = 0; j < 4; ++j) {
    EXPECT_EQ(0, std::memcmp(&dst[16 * j], &src[20 * j + 4], 16)) << j;
    EXPECT_EQ(0, std::memcmp(&dst[64 + 4 * j], &src[20 * j], 4)) << j;
  }
}

// Q8_0, 1 row of 256 columns (8 blocks of 34 bytes: d @0, qs @2): columns 0-15 of tile j at
// 16·j, columns 16-31 at 128 + 16·j, d at 256 + 2·j.
TEST(TiledLayout, Q8_0TwoCodePlanesThenScales) {
  const std::vector<uint8_t> src = pattern(272, 3);
  std::vector<uint8_t> dst(272, 0xEE);
  tile_rows(WeightType::kQ8_0, 1, 256, src.data(), dst.data());
  for (int j = 0; j < 8; ++j) {
    EXPECT_EQ(0, std::memcmp(&dst[16 * j], &src[34 * j + 2], 16)) << j;
    EXPECT_EQ(0, std::memcmp(&dst[128 + 16 * j], &src[34 * j + 18], 16)) << j;
    EXPECT_EQ(0, std::memcmp(&dst[256 + 2 * j], &src[34 * j], 2)) << j;
  }
}

// Q4_K, 1 row of 512 columns (2 blocks of 144 bytes: d, dmin, scales[12] @0-15, qs[128] @16).
// Sub-block s, column k is the low (s even) or high (s odd) nibble of qs[32·(s/2) + k]; in the
// tiled layout tile 8b + s byte k holds column k (low nibble) and k + 16 (high). Heads at 256.
TEST(TiledLayout, Q4_KSubBlocksInQ4_0OrderThenHeads) {
  const std::vector<uint8_t> src = pattern(288, 17);
  std::vector<uint8_t> dst(288, 0xEE);
  tile_rows(WeightType::kQ4_K, 1, 512, src.data(), dst.data());
  const auto code = [&](int b, int s, int k) {  // column k of sub-block s of block b, from GGUF
    const uint8_t byte = src[144 * b + 16 + 32 * (s / 2) + k];
    return (s % 2 == 0 ? byte : byte >> 4) & 0xF;
  };
  for (int b = 0; b < 2; ++b) {
    for (int s = 0; s < 8; ++s) {
      for (int k = 0; k < 16; ++k) {
        const uint8_t got = dst[16 * (8 * b + s) + k];
        ASSERT_EQ(got & 0xF, code(b, s, k)) << b << " " << s << " " << k;
        ASSERT_EQ(got >> 4, code(b, s, k + 16)) << b << " " << s << " " << k;
      }
    }
    EXPECT_EQ(0, std::memcmp(&dst[256 + 16 * b], &src[144 * b], 16)) << b;
  }
  // A hand-made block: sub-block 1 (high nibbles of qs[0..31]) column 3 = 0xA, column 19 = 0x5.
  std::vector<uint8_t> one(144, 0);
  one[16 + 3] = 0xA0;
  one[16 + 19] = 0x50;
  std::vector<uint8_t> out(144, 0xEE);
  tile_rows(WeightType::kQ4_K, 1, 256, one.data(), out.data());
  EXPECT_EQ(out[16 * 1 + 3], 0x5A);  // tile 1, byte 3: column 3 low, column 19 high
  EXPECT_EQ(out[16 * 0 + 3], 0x00);  // sub-block 0 takes the low nibbles: zero here
}

// Q4_0, 1 row of 1536 columns (48 tiles): group 0 holds tiles 0-31 (codes at 16·j, d at
// 512 + 2·j), group 1 starts at 32·18 = 576 and holds tiles 32-47 (codes at 576 + 16·(j − 32), d
// at 576 + 256 + 2·(j − 32)).
TEST(TiledLayout, Q4_0GroupsOf32TilesAndAShortLastGroup) {
  const std::vector<uint8_t> src = pattern(864, 23);
  std::vector<uint8_t> dst(864, 0xEE);
  tile_rows(WeightType::kQ4_0, 1, 1536, src.data(), dst.data());
  for (int j = 0; j < 48; ++j) {
    const int g = j < 32 ? 0 : 576, i = j % 32, n = j < 32 ? 32 : 16;
    EXPECT_EQ(0, std::memcmp(&dst[g + 16 * i], &src[18 * j + 2], 16)) << j;
    EXPECT_EQ(0, std::memcmp(&dst[g + 16 * n + 2 * i], &src[18 * j], 2)) << j;
  }
  // Q8_0, 1 row of 1280 columns (40 tiles of 34 bytes): group 1 (8 tiles) at 32·34 = 1088,
  // columns 16-31 of its tile i at 1088 + 128 + 16·i, d at 1088 + 256 + 2·i.
  const std::vector<uint8_t> s8 = pattern(1360, 29);
  std::vector<uint8_t> d8(1360, 0xEE);
  tile_rows(WeightType::kQ8_0, 1, 1280, s8.data(), d8.data());
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(0, std::memcmp(&d8[1088 + 16 * i], &s8[34 * (32 + i) + 2], 16)) << i;
    EXPECT_EQ(0, std::memcmp(&d8[1088 + 128 + 16 * i], &s8[34 * (32 + i) + 18], 16)) << i;
    EXPECT_EQ(0, std::memcmp(&d8[1088 + 256 + 2 * i], &s8[34 * (32 + i)], 2)) << i;
  }
}

/// Value of column c of a Q6_K row in the tiled layout (`cols` columns), read as the layout's
/// comment says: group g = c / 1024 at 840·g bytes with n tiles; tile i's low 4 bits at 16·i (byte
/// c % 16, high nibble for c % 32 >= 16), top 2 bits in its hi word j at 16·n + 8·i (byte b, bits
/// 2k for c % 32 = 16j + 4k + b), int8 scales at 24·n + 2·i, d at 26·n + 2·(i / 8).
float tiled_q6_k_value(const uint8_t* row, int64_t cols, int64_t c) {
  const int64_t tile = c / 32, g = tile / 32, i = tile % 32, cc = c % 32;
  const int64_t n = std::min<int64_t>(32, cols / 32 - 32 * g);
  const uint8_t* grp = row + 840 * g;
  const int lo = (grp[16 * i + cc % 16] >> (cc < 16 ? 0 : 4)) & 0xF;
  const int j = static_cast<int>(cc / 16), k = static_cast<int>(cc / 4 % 4),
            b = static_cast<int>(cc % 4);
  const int top = (grp[16 * n + 8 * i + 4 * j + b] >> (2 * k)) & 0x3;
  const int8_t sc = static_cast<int8_t>(grp[24 * n + 2 * i + cc / 16]);
  uint16_t d = 0;
  std::memcpy(&d, grp + 26 * n + 2 * (i / 8), 2);
  return f16_to_f32(d) * static_cast<float>(sc) * static_cast<float>((lo | (top << 4)) - 32);
}

// Q6_K (ql[128] @0, qh[64] @128, scales int8[16] @192, d @208 per 256 columns), rows of 3,584
// columns (14 blocks, 2,940 bytes: groups of 32, 32, 32 and 16 tiles, the second row starting 4
// bytes past a 16-byte boundary): every column read from the tiled layout equals the GGUF row's
// dequantized value, bit for bit, on quantized random rows; and a hand-made block puts one code's
// bits where the layout says.
TEST(TiledLayout, Q6_KLowBitsTopBitsScalesThenD) {
  const int64_t cols = 3584, rows = 2, rb = row_bytes(WeightType::kQ6_K, cols);
  ASSERT_EQ(rb, 2940);
  std::vector<float> x(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::sin(0.37f * static_cast<float>(i)) * (1.0f + static_cast<float>(i % 97) / 13.0f);
  std::vector<uint8_t> src(static_cast<size_t>(rows * rb));
  for (int64_t r = 0; r < rows; ++r) {
    quantize_row(WeightType::kQ6_K, x.data() + r * cols, src.data() + r * rb, cols);
  }
  std::vector<uint8_t> dst(src.size(), 0xEE);
  tile_rows(WeightType::kQ6_K, rows, cols, src.data(), dst.data());
  std::vector<float> want(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_row(WeightType::kQ6_K, src.data() + r * rb, want.data(), cols);
    for (int64_t c = 0; c < cols; ++c) {
      const float got = tiled_q6_k_value(dst.data() + r * rb, cols, c);
      ASSERT_EQ(std::memcmp(&got, &want[static_cast<size_t>(c)], 4), 0)
          << "row " << r << " column " << c << ": " << got << " vs "
          << want[static_cast<size_t>(c)];
    }
  }
  // By hand, in a row of 512 columns: column 200 is column c = 8 of tile 6 (h = 1, g = 2) of
  // block 0: its low 4 bits are the high nibble of ql[64 + 8], its top 2 bits bits 4-5 of
  // qh[32 + 8], its scale scales[8 + 4]. Tiled (one group of 16 tiles): tile 6's byte 8, low
  // nibble; top bits at c = 8 = 16·0 + 4·2 + 0: word 0, byte 0, bits 4-5.
  std::vector<uint8_t> one(420, 0);
  one[64 + 8] = 0xB0;        // low 4 bits 0xB (high nibble: g >= 2)
  one[128 + 32 + 8] = 0x20;  // (0x20 >> 4) & 3 = 2
  one[192 + 12] = 0x85;      // int8 −123
  one[208] = 0x00;
  one[209] = 0x3C;  // d = 1.0
  std::vector<uint8_t> out(420, 0xEE);
  tile_rows(WeightType::kQ6_K, 1, 512, one.data(), out.data());
  // One group of n = 16 tiles: lo at 0, hi at 256, scales at 384, d at 416.
  EXPECT_EQ(out[16 * 6 + 8], 0x0B);
  EXPECT_EQ(out[256 + 8 * 6 + 0], 0x20);  // word 0, byte 0, bits 2k = 4
  EXPECT_EQ(out[384 + 2 * 6], 0x85);
  EXPECT_EQ(out[416], 0x00);
  EXPECT_EQ(out[417], 0x3C);
  EXPECT_EQ(tiled_q6_k_value(out.data(), 512, 200),
            -123.0f * static_cast<float>((0xB | (2 << 4)) - 32));
}

TEST(TiledLayout, RejectsRowsWithoutIt) {
  std::vector<uint8_t> buf(1024);
  try {
    tile_rows(WeightType::kQ6_K, 1, 256, buf.data(), buf.data() + 512);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kRuntime);
    EXPECT_NE(std::string(e.what()).find("Q6_K"), std::string::npos) << e.what();
  }
  EXPECT_THROW(tile_rows(WeightType::kQ4_0, 1, 576, buf.data(), buf.data() + 512), Error);
  EXPECT_THROW(tile_rows(WeightType::kQ4_0, -1, 256, buf.data(), buf.data() + 512), Error);
}

}  // namespace
}  // namespace decodebench::quant
