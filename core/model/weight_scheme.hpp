// How a synthetic model stores its weight matrices: one type for every matrix (`--dtype q8_0`),
// or a per-tensor mix in the manner of llama.cpp's quantization presets (`--dtype q4_k_m`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/config.hpp"
#include "core/quant/weight_type.hpp"

namespace decodebench {

/// The role of a weight matrix; a mix picks a type per role (and per layer).
enum class MatrixRole {
  kTokenEmbd,   ///< token_embd.weight [vocab × hidden]
  kOutput,      ///< output.weight, the LM head [vocab × hidden]
  kAttnQ,       ///< blk.N.attn_q.weight
  kAttnK,       ///< blk.N.attn_k.weight
  kAttnV,       ///< blk.N.attn_v.weight
  kAttnOutput,  ///< blk.N.attn_output.weight
  kFfnGate,     ///< blk.N.ffn_gate.weight
  kFfnUp,       ///< blk.N.ffn_up.weight
  kFfnDown,     ///< blk.N.ffn_down.weight
};

/// True for the layers whose attn_v and ffn_down the Q4_K_M mix stores in Q6_K: the first eighth
/// (layer < n/8), the last eighth (layer >= 7n/8) and every third layer between, starting two
/// layers after the first eighth ((layer − n/8) mod 3 = 2), all divisions rounding down.
/// 28 layers: 0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27; 8 layers: 0, 3, 6, 7.
/// (The layer rule of llama.cpp's Q4_K_M preset, as documented for its quantize tool.)
bool q4_k_m_promoted_layer(int64_t layer, int64_t n_layers);

/// The storage of a synthetic model's matrices. Norm weights and biases are always F32.
///
/// Uniform: every matrix is stored in `type`. Q4_K_M (`--dtype q4_k_m`): Q4_K everywhere except
///   - output.weight (the LM head): Q6_K; with tied embeddings the shared token_embd.weight is the
///     LM head and is Q6_K too, otherwise token_embd.weight is Q4_K;
///   - attn_v.weight and ffn_down.weight of the layers where q4_k_m_promoted_layer() holds: Q6_K.
/// Both types store blocks of 256 values, so hidden, heads·head_dim and ffn must be multiples of
/// 256. (llama.cpp's quantize tool falls back to other types for rows that are not whole blocks;
/// decodebench refuses such shapes instead.)
struct WeightScheme {
  enum class Mix { kUniform, kQ4_K_M };

  WeightType type = WeightType::kBF16;  ///< the type of every matrix (uniform); the mix's base
  Mix mix = Mix::kUniform;

  constexpr WeightScheme() = default;
  /// A uniform scheme (implicit, so a WeightType can be passed wherever a scheme is expected).
  constexpr WeightScheme(WeightType t) : type(t) {}  // NOLINT(google-explicit-constructor)
  /// The Q4_K_M mix.
  static constexpr WeightScheme q4_k_m() {
    WeightScheme s(WeightType::kQ4_K);
    s.mix = Mix::kQ4_K_M;
    return s;
  }

  /// Storage type of the matrix with `role` in layer `layer` of `n_layers` (`layer` is ignored for
  /// kTokenEmbd and kOutput). `tied`: the token embedding matrix is also the LM head.
  [[nodiscard]] WeightType type_of(MatrixRole role, int64_t layer, int64_t n_layers,
                                   bool tied) const;
  /// "BF16", "Q8_0", "Q4_K_M": the GGUF spelling (reported as the model's file_type).
  [[nodiscard]] std::string label() const;
  /// "bf16", "q4_k_m": the --dtype spelling.
  [[nodiscard]] std::string flag_name() const;
  /// Every type a matrix may get, in WeightType id order.
  [[nodiscard]] std::vector<WeightType> types() const;

  friend constexpr bool operator==(const WeightScheme&, const WeightScheme&) = default;
};

/// Parses a --dtype value: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k, q4_k_m.
/// Throws decodebench::Error (exit 2) naming `flag` and listing the valid names.
WeightScheme parse_weight_scheme(const std::string& name, const std::string& flag = "--dtype");

/// Checks that every matrix of `config` holds whole blocks per row in each type `scheme` may use:
/// hidden (rows of Q/K/V/gate/up/LM head/embedding), heads·head_dim (attn_output) and ffn
/// (ffn_down) must be multiples of the block size. Throws decodebench::Error (exit 2):
/// "--dtype q4_k_m stores blocks of 256 values: hidden (576) must be a multiple of 256".
void check_weight_scheme_fits(const ModelConfig& config, const WeightScheme& scheme);

}  // namespace decodebench
