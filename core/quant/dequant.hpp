// CPU dequantization, dot products and quantization for every supported weight type.
// Formulas: gguf-facts.md §2.3 (verified against ggml's dequantize_row_* functions).
#pragma once

#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "core/quant/weight_type.hpp"

namespace decodebench::quant {

/// Dequantizes `n` values of type `t` from `src` (row_bytes(t, n) bytes) into `dst` (n f32).
/// Uses the f32 operations of gguf-facts.md §2.3 in the order written there (e.g. Q4_1: d·q + m,
/// Q4_K: (d·sc)·q − dmin·mn), so results equal the gguf Python package's bit for bit.
/// Throws decodebench::Error (exit 2) for an unsupported type ("unsupported tensor type Q2_K") or
/// when `n` is negative or not a multiple of the type's block size. `src` may sit at any address
/// (a row of a GGUF file with general.alignment 1): a misaligned row is copied first.
void dequantize_row(WeightType t, const void* src, float* dst, int64_t n);

/// Returns Σ row[i]·x[i] over `n` values, `row` stored as type `t` (row_bytes(t, n) bytes), `x`
/// in f32. Accumulates in f32 in a fixed order (lanes of i mod 16 for float types; per block a
/// scale-factored lane sum, see core/quant/detail.hpp), so the result is bit-identical across
/// threads, calls and pointer alignments. It may differ from dequantize-then-dot by rounding.
/// Same errors as dequantize_row.
float dot_row(WeightType t, const void* row, const float* x, int64_t n);

/// Quantizes `n` f32 values into type `t` at `dst` (row_bytes(t, n) bytes). Used to build synthetic
/// models. F32: copy; F16/BF16: round-to-nearest-even (NaN stays NaN, overflow → inf);
/// Q8_0/Q4_0/Q5_0: max-abs scaling, Q4_1/Q5_1: min/max scaling (the same rules, and for finite
/// input the same bytes, as gguf.quants.quantize); Q4_K/Q5_K/Q6_K: closed-form per-sub-block
/// scales (and mins) rounded up onto the 6-bit (Q6_K: 8-bit) grid of the super-block d/dmin, so no
/// value is clipped (algorithm in core/quant/quantize.cpp). Input must be finite for block types,
/// and block scales must fit f16 (|x| up to ~1e6; larger scales overflow to inf).
/// Same errors as dequantize_row.
void quantize_row(WeightType t, const float* src, void* dst, int64_t n);

/// GGUF spelling of a ggml type id ("Q4_K", "IQ4_XS", ...; gguf-facts.md §2.1), or "#<id>" for an
/// id ggml does not define.
std::string type_label(uint32_t id);

/// The error for a type decodebench cannot handle: exit 2, "unsupported tensor type <label>".
/// Callers (the GGUF loader) add the tensor name.
Error unsupported_type_error(uint32_t id);

}  // namespace decodebench::quant
