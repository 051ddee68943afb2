// Weight storage types: ids equal to ggml's tensor type ids (gguf-facts.md §2.1), so a GGUF
// tensor's type field converts directly. Included by host code and by CUDA kernels (no std::string
// here).
#pragma once

#include <cstddef>
#include <cstdint>

namespace decodebench {

/// Storage type of a weight tensor. Values are the GGUF/ggml type ids.
enum class WeightType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kBF16 = 30,
};

/// Block geometry of a weight type: `block_elems` values are stored in `block_bytes` bytes.
struct WeightTraits {
  int64_t block_elems;
  int64_t block_bytes;
  const char* name;  ///< GGUF spelling: "F32", "Q4_K", ...
};

/// Traits of a supported type, or {0, 0, nullptr} for an id decodebench does not support.
constexpr WeightTraits weight_traits(WeightType t) {
  // One type a line reads as a table.
  // clang-format off
  switch (t) {
    case WeightType::kF32: return {1, 4, "F32"};
    case WeightType::kF16: return {1, 2, "F16"};
    case WeightType::kBF16: return {1, 2, "BF16"};
    case WeightType::kQ4_0: return {32, 18, "Q4_0"};
    case WeightType::kQ4_1: return {32, 20, "Q4_1"};
    case WeightType::kQ5_0: return {32, 22, "Q5_0"};
    case WeightType::kQ5_1: return {32, 24, "Q5_1"};
    case WeightType::kQ8_0: return {32, 34, "Q8_0"};
    case WeightType::kQ4_K: return {256, 144, "Q4_K"};
    case WeightType::kQ5_K: return {256, 176, "Q5_K"};
    case WeightType::kQ6_K: return {256, 210, "Q6_K"};
  }
  // clang-format on
  return {0, 0, nullptr};
}

/// True when `id` is a type decodebench can dequantize and multiply.
constexpr bool is_supported_weight_type(uint32_t id) {
  return weight_traits(static_cast<WeightType>(id)).name != nullptr;
}

/// Bytes of a row of `n` values; `n` must be a multiple of the block size.
constexpr int64_t row_bytes(WeightType t, int64_t n) {
  const WeightTraits tr = weight_traits(t);
  return n / tr.block_elems * tr.block_bytes;
}

/// Every supported type, in id order (for tests and help text).
inline constexpr WeightType kAllWeightTypes[] = {
    WeightType::kF32,  WeightType::kF16,  WeightType::kQ4_0, WeightType::kQ4_1,
    WeightType::kQ5_0, WeightType::kQ5_1, WeightType::kQ8_0, WeightType::kQ4_K,
    WeightType::kQ5_K, WeightType::kQ6_K, WeightType::kBF16};

}  // namespace decodebench
