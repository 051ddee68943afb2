// Views of a model's weight tensors. The bytes live elsewhere (a GGUF mapping or a synthetic
// model's buffers); a view never owns them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/quant/weight_type.hpp"

namespace decodebench {

/// A 2-D weight of `rows` × `cols` stored row-major in `type` (GGUF dims {cols, rows}: ne0 = cols
/// is contiguous). A 1-D tensor (norm weight, bias) has rows = 1. An absent optional tensor has
/// data == nullptr.
struct TensorView {
  std::string name;
  WeightType type = WeightType::kF32;
  const void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;

  [[nodiscard]] bool present() const { return data != nullptr; }
  [[nodiscard]] int64_t row_bytes() const { return decodebench::row_bytes(type, cols); }
  [[nodiscard]] int64_t bytes() const { return rows * row_bytes(); }
  [[nodiscard]] const void* row(int64_t r) const {
    return static_cast<const uint8_t*>(data) + r * row_bytes();
  }
  /// The f32 values of a 1-D F32 tensor (norms, biases are always stored as F32 in a Model).
  [[nodiscard]] const float* f32() const { return static_cast<const float*>(data); }
};

/// The tensors of one transformer layer. Matrices map `cols` inputs to `rows` outputs.
struct LayerWeights {
  TensorView attn_norm;       ///< [hidden] F32
  TensorView wq, wk, wv;      ///< [q_dim × hidden], [kv_dim × hidden] ×2
  TensorView bq, bk, bv;      ///< optional biases [q_dim], [kv_dim], F32
  TensorView q_norm, k_norm;  ///< optional per-head norms [head_dim], F32 (qwen3)
  TensorView wo;              ///< [hidden × q_dim]
  TensorView ffn_norm;        ///< [hidden] F32
  TensorView w_gate, w_up;    ///< [ffn × hidden]
  TensorView w_down;          ///< [hidden × ffn]
};

/// All tensors of a model. `output` is the LM head [vocab × hidden]; for tied embeddings it views
/// the same bytes as `token_embd`.
struct ModelWeights {
  TensorView token_embd;  ///< [vocab × hidden]
  std::vector<LayerWeights> layers;
  TensorView output_norm;  ///< [hidden] F32
  TensorView output;       ///< [vocab × hidden]
};

}  // namespace decodebench
