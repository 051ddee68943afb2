// Loading a llama / qwen2 / qwen3 model from a GGUF file (gguf-facts.md §3–§6).
#pragma once

#include <string>

#include "core/model/model.hpp"

namespace decodebench {

/// Architectures decodebench can run from GGUF.
inline constexpr const char* kSupportedArchitectures = "llama, qwen2, qwen3";

/// Maps and validates `path`, reads the hyperparameters (defaults as in gguf-facts.md §3: kv heads
/// = heads, head_dim = key_length or hidden/heads, rope base 10000, rope dims = head_dim), the RoPE
/// style per architecture (§5: llama adjacent pairs, qwen2/qwen3 half-split), and binds every
/// tensor as a view into the mapping (norms and biases stored in F16/BF16 are converted to F32
/// copies). `output.weight` absent ⇒ tied LM head. Builds the tokenizer from the metadata.
/// Throws decodebench::Error (exit 2): malformed file (with offset), unsupported architecture
/// (listing the supported ones), "unsupported tensor type T in tensor N", a missing tensor or key,
/// a tensor whose shape disagrees with the hyperparameters, unsupported RoPE scaling.
Model load_gguf_model(const std::string& path);

/// Name of a `general.file_type` value ("MOSTLY_Q4_1", ...), or "type#N".
std::string file_type_name(int64_t file_type);

}  // namespace decodebench
