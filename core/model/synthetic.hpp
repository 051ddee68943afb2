// Synthetic models: Qwen2/Llama-style weights that are a pure function of (shape, dtype, seed).
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/model.hpp"
#include "core/model/weight_scheme.hpp"

namespace decodebench {

namespace cpu {
class ThreadPool;
}

/// Bytes the synthetic model's weights will occupy (to check memory before generating), each
/// matrix counted in the type `scheme` gives it. Equals the model's info.weight_bytes for a shape
/// that make_synthetic_model() accepts.
int64_t synthetic_weight_bytes(const ModelConfig& config, const WeightScheme& scheme);

/// Generates a synthetic model. Each value u is uniform(-1, 1) from a counter-based hash of
/// (seed, tensor name, element index), scaled per tensor so activations keep unit scale at any
/// depth: embeddings √3·u (unit variance); projections sqrt(3 / fan_in)·u (unit output variance
/// for unit-variance inputs), the residual branches (attn_output, ffn_down) further by
/// 1/sqrt(2·layers); layer norms 1 + 0.1·u; the final norm u (signed, so a tied LM head does not
/// just repeat the input token); biases 0.1·u; the untied LM head 4·sqrt(3 / hidden)·u (logits
/// with std ≈ 4, so the argmax is not flat). The values do not depend on the storage: each matrix
/// is rounded to the type `scheme` gives it (one type, or the Q4_K_M mix; norms and biases stay
/// F32), so every backend sees the same weights. info.file_type is scheme.label() ("Q4_K_M");
/// info.tensor_types counts the tensors and bytes per type.
/// Rows are generated in parallel on `pool`; the result does not depend on the thread count.
/// Throws decodebench::Error (exit 2) for an invalid shape, an unsupported dtype, or rows that are
/// not whole blocks of a type the scheme uses (check_weight_scheme_fits).
Model make_synthetic_model(const ModelConfig& config, const WeightScheme& scheme, uint64_t seed,
                           cpu::ThreadPool& pool);

/// `n` prompt token ids in [0, vocab) drawn from `seed` (the synthetic prompt).
std::vector<int32_t> synthetic_prompt(int64_t n, int64_t vocab, uint64_t seed);

/// Uniform(-1, 1) value number `index` of the stream `key` (splitmix64 finaliser; Steele et al.
/// 2014). Exposed for tests.
float synthetic_uniform(uint64_t key, uint64_t index);

}  // namespace decodebench
