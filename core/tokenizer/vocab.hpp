// The vocabulary a tokenizer is built from, as plain data: what Tokenizer::from_gguf reads from
// the `tokenizer.ggml.*` keys (gguf-facts.md §3), so that tests can build tokenizers by hand.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tokenizer/tokenizer.hpp"

namespace decodebench {

/// `tokenizer.ggml.token_type` values.
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

/// Vocabulary data. Special ids are -1 when the key is absent.
struct VocabData {
  std::string model;                 ///< tokenizer.ggml.model: "gpt2" or "llama"
  std::string pre;                   ///< tokenizer.ggml.pre ("" when absent)
  std::vector<std::string> tokens;   ///< tokenizer.ggml.tokens
  std::vector<float> scores;         ///< tokenizer.ggml.scores (empty when absent)
  std::vector<int32_t> token_types;  ///< tokenizer.ggml.token_type (empty: all normal)
  std::vector<std::string> merges;   ///< tokenizer.ggml.merges, "left right"
  int64_t bos_id = -1;
  int64_t eos_id = -1;
  int64_t unk_id = -1;
  int64_t eot_id = -1;
  int64_t eom_id = -1;
  int64_t pad_id = -1;
  std::optional<bool> add_bos;           ///< tokenizer.ggml.add_bos_token
  std::optional<bool> add_space_prefix;  ///< tokenizer.ggml.add_space_prefix
};

/// Builds the tokenizer for `data`. Throws decodebench::Error (exit 2) naming the GGUF key for
/// an unsupported model or pre-tokenizer (listing the supported ones), a missing tokens array,
/// scores/types whose length differs from the tokens, a malformed merge, or a special id out of
/// range.
std::unique_ptr<Tokenizer> make_tokenizer(VocabData data);

}  // namespace decodebench
