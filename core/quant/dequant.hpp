// CPU dequantization, dot products and quantization for every supported weight type.
// Formulas: gguf-facts.md §2.3 (verified against ggml's dequantize_row_* functions).
#pragma once

#include <cstdint>

#include "core/quant/weight_type.hpp"

namespace decodebench::quant {

/// Dequantizes `n` values of type `t` from `src` into `dst` (f32).
/// `n` must be a multiple of the type's block size. Throws decodebench::Error (exit 2) for an
/// unsupported type.
void dequantize_row(WeightType t, const void* src, float* dst, int64_t n);

/// Returns Σ row[i]·x[i] over `n` values, `row` stored as type `t`, `x` in f32.
/// Accumulates in f32 in a fixed order (block by block), so the result does not depend on threads.
float dot_row(WeightType t, const void* row, const float* x, int64_t n);

/// Quantizes `n` f32 values into type `t` at `dst` (row_bytes(t, n) bytes). Used to build synthetic
/// models; round-to-nearest for f16/bf16, the usual max-abs scaling for block types.
void quantize_row(WeightType t, const float* src, void* dst, int64_t n);

}  // namespace decodebench::quant
