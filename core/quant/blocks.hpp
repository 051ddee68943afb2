// GGUF quantization block layouts (gguf-facts.md §2.2), defined once for the CPU reference and the
// CUDA kernels. Half-precision fields are raw IEEE binary16 bits (uint16_t); see fp16.hpp.
#pragma once

#include <cstdint>

namespace decodebench::quant {

inline constexpr int kQK = 32;    ///< values per legacy block (Q4_0 ... Q8_0)
inline constexpr int kQKK = 256;  ///< values per K-quant super-block

struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK / 2];
};
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK / 2];
};
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK];
};
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qs[kQKK / 2];
};
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQKK / 8];
  uint8_t qs[kQKK / 2];
};
struct BlockQ6_K {
  uint8_t ql[kQKK / 2];
  uint8_t qh[kQKK / 4];
  int8_t scales[kQKK / 16];
  uint16_t d;
};

static_assert(sizeof(BlockQ4_0) == 18, "Q4_0 block is 18 bytes");
static_assert(sizeof(BlockQ4_1) == 20, "Q4_1 block is 20 bytes");
static_assert(sizeof(BlockQ5_0) == 22, "Q5_0 block is 22 bytes");
static_assert(sizeof(BlockQ5_1) == 24, "Q5_1 block is 24 bytes");
static_assert(sizeof(BlockQ8_0) == 34, "Q8_0 block is 34 bytes");
static_assert(sizeof(BlockQ4_K) == 144, "Q4_K block is 144 bytes");
static_assert(sizeof(BlockQ5_K) == 176, "Q5_K block is 176 bytes");
static_assert(sizeof(BlockQ6_K) == 210, "Q6_K block is 210 bytes");

}  // namespace decodebench::quant
