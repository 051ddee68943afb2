// A model ready for a backend: configuration, weight views and facts for the report.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "core/model/config.hpp"
#include "core/model/weights.hpp"
#include "core/tokenizer/tokenizer.hpp"

namespace decodebench {

/// Count and bytes of the tensors stored in one type.
struct TensorTypeStats {
  int64_t count = 0;
  int64_t bytes = 0;
};

/// Facts about a model for the JSON `model` section.
struct ModelInfo {
  std::string source;        ///< "synthetic" or "gguf"
  std::string path;          ///< GGUF file path ("" for synthetic)
  std::string name;          ///< general.name, or the preset/shape description
  std::string file_type;     ///< general.file_type name for GGUF, storage dtype for synthetic
  int64_t parameters = 0;    ///< weight values (tied LM head counted once)
  int64_t weight_bytes = 0;  ///< bytes of all weight tensors (tied LM head counted once)
  /// Weight bytes one decode step reads: every layer tensor, the final norm, the LM head, and one
  /// embedding row.
  int64_t bytes_per_token = 0;
  std::map<std::string, TensorTypeStats> tensor_types;  ///< keyed by type name ("Q4_1")
};

/// A loaded model. Weight views point into `storage` (owned buffers or a GGUF mapping), which the
/// Model keeps alive.
struct Model {
  ModelConfig config;
  ModelWeights weights;
  ModelInfo info;
  std::shared_ptr<const void> storage;
  std::shared_ptr<const Tokenizer> tokenizer;  ///< GGUF models only
};

/// Fills `parameters`, `weight_bytes`, `bytes_per_token` and `tensor_types` of `model.info` from
/// its weights.
void compute_model_info(Model& model);

}  // namespace decodebench
