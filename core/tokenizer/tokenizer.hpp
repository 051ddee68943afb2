// Tokenizers read from GGUF metadata: GPT-2 byte-level BPE (`tokenizer.ggml.model` = "gpt2") and
// SentencePiece BPE (`llama`). Facts: gguf-facts.md §3 and §7.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace decodebench {
namespace gguf {
class Reader;
}

/// Text ↔ token ids for one vocabulary.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  /// Builds the tokenizer a GGUF file describes. Throws decodebench::Error (exit 2) for a missing
  /// or inconsistent vocabulary, or an unsupported `tokenizer.ggml.model` / `tokenizer.ggml.pre`
  /// (the message lists the supported ones).
  static std::unique_ptr<Tokenizer> from_gguf(const gguf::Reader& reader);

  /// Encodes `text`. Control-token texts that appear literally (e.g. "<|im_start|>") become their
  /// ids; everything else goes through the pre-tokenizer and BPE. BOS is prepended when
  /// `add_special` is true and the vocabulary asks for it (`tokenizer.ggml.add_bos_token`).
  /// Throws decodebench::Error (exit 2) for a character (SentencePiece) or byte (byte-level BPE)
  /// that has no piece, no byte token and no unknown token to stand for it: dropping it would
  /// decode another prompt than the one the result records.
  [[nodiscard]] virtual std::vector<int32_t> encode(std::string_view text,
                                                    bool add_special = true) const = 0;

  /// Decodes ids to UTF-8 text (control tokens are not rendered). Invalid UTF-8 from a partial
  /// byte sequence is kept as bytes.
  [[nodiscard]] virtual std::string decode(std::span<const int32_t> ids) const = 0;

  /// The bytes one token contributes to the text, without decode()'s whole-text adjustment
  /// (SentencePiece drops the leading space of the decoded text). For streaming generated text:
  /// append pieces and hold back an incomplete UTF-8 sequence. "" for control tokens and ids out
  /// of range.
  [[nodiscard]] virtual std::string token_piece(int32_t id) const {
    return decode(std::span<const int32_t>(&id, 1));
  }

  /// The stored text of one token (for reports), or "" for an id out of range.
  [[nodiscard]] virtual std::string token_text(int32_t id) const = 0;

  /// True when `id` ends generation (EOS, EOT or a chat end-of-turn token such as <|im_end|>).
  [[nodiscard]] virtual bool is_end_of_generation(int32_t id) const = 0;

  [[nodiscard]] virtual int64_t vocab_size() const = 0;
  [[nodiscard]] virtual int32_t bos_id() const = 0;  ///< -1 when none
  [[nodiscard]] virtual int32_t eos_id() const = 0;  ///< -1 when none
  /// "gpt2" or "llama" (the GGUF model name), plus the pre-tokenizer for gpt2 ("gpt2/smollm").
  [[nodiscard]] virtual std::string kind() const = 0;
};

}  // namespace decodebench
