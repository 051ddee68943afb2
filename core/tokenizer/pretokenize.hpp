// Pre-tokenizers of byte-level BPE vocabularies (`tokenizer.ggml.pre`): they split text into
// pieces before BPE runs on each piece. Each is a hand-written matcher with the semantics of the
// regex that llama.cpp / Hugging Face use for that vocabulary (leftmost alternative wins,
// greedy quantifiers with backtracking), over the Unicode classes of unicode.hpp.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace decodebench::tokenizer {

enum class PreTokenizer {
  /// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  kGpt2,
  /// Every \p{N} code point is its own piece, then kGpt2 on the rest (StarCoder, SmolLM).
  kStarcoder,
  /// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
  /// \s*[\r\n]+|\s+(?!\S)|\s+ (Llama 3)
  kLlama3,
  /// As kLlama3 with \p{N} instead of \p{N}{1,3} (Qwen2/2.5/3).
  kQwen2,
};

/// The pre-tokenizer for a `tokenizer.ggml.pre` value, or nullopt when unsupported.
/// An empty name means the key is absent and selects kGpt2.
std::optional<PreTokenizer> pre_tokenizer_from_name(std::string_view name);

/// The accepted `tokenizer.ggml.pre` values, comma-separated (for error messages).
std::string supported_pre_tokenizers();

/// Splits `text` into consecutive non-empty pieces that together cover it exactly.
/// Invalid UTF-8 bytes count as one "other" character each.
std::vector<std::string_view> pre_tokenize(PreTokenizer kind, std::string_view text);

}  // namespace decodebench::tokenizer
