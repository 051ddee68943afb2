// Loading a llama / qwen2 / qwen3 model from a GGUF file (gguf-facts.md §3–§6).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/model.hpp"

namespace decodebench {

/// Architectures decodebench can run from GGUF.
inline constexpr const char* kSupportedArchitectures = "llama, qwen2, qwen3";

/// Maps and validates `path`, reads the hyperparameters (defaults as in gguf-facts.md §3: kv heads
/// = heads, head_dim = key_length or hidden/heads, rope base 10000, rope dims = head_dim), the RoPE
/// style per architecture (§5: llama adjacent pairs, qwen2/qwen3 half-split), and binds every
/// tensor as a view into the mapping (norms and biases stored in F16/BF16 are converted to F32
/// copies). `output.weight` absent ⇒ tied LM head. Builds the tokenizer from the metadata.
/// Throws decodebench::Error (exit 2): malformed file (with offset), a missing tensor or key, a
/// tensor whose shape disagrees with the hyperparameters, a vocab_size or tokenizer that does not
/// fit token_embd.weight; UnsupportedError (exit 2) for what decodebench does not run: another
/// architecture (listing the supported ones), general.type other than 'model', a mixture of
/// experts, "unsupported tensor type T in tensor N", RoPE scaling, per-layer head counts, a
/// tokenizer it lacks, a layer tensor it does not compute (e.g. blk.0.attn_output.bias).
Model load_gguf_model(const std::string& path);

/// Whether decodebench can run a GGUF file, as `decodebench inspect` reports it.
struct GgufModelCheck {
  enum class Status {
    kRuns,  ///< load_gguf_model accepts it
    /// not a model decodebench runs: another architecture, no tensors, an adapter, or a tensor
    /// type, tokenizer or RoPE scaling it does not support (UnsupportedError)
    kUnsupported,
    kInvalid,  ///< a supported architecture whose metadata or tensors do not fit together
  };
  Status status = Status::kRuns;
  std::string message;  ///< why not ("" when it runs)
  /// When it runs: tensors of the file the model does not read (outside every layer, e.g. an
  /// extra tensor of another tool), in file order, and their bytes
  std::vector<std::string> unread;
  uint64_t unread_bytes = 0;
};

/// Loads `path` as load_gguf_model does (binding views, no weight data read but F16/BF16 norms
/// and biases) and reports the outcome instead of throwing. A malformed file (gguf::Reader's
/// errors) still throws decodebench::Error (exit 2), and a resource error (exit 3: out of memory)
/// is thrown as it is, not reported as an invalid model.
GgufModelCheck check_gguf_model(const std::string& path);

/// "runs", "unsupported" or "invalid".
const char* gguf_model_status_name(GgufModelCheck::Status status);

/// Name of a `general.file_type` value ("MOSTLY_Q4_1", ...), or "type#N".
std::string file_type_name(int64_t file_type);

}  // namespace decodebench
