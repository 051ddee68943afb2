// Internal: the tokenizer classes behind make_tokenizer (vocab.hpp). VocabTokenizer holds what
// both vocabulary kinds share (special-token matching, BOS, decoding of non-normal tokens); the
// subclasses implement byte-level BPE (bpe.cpp) and SentencePiece BPE (spm.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/tokenizer/pretokenize.hpp"
#include "core/tokenizer/tokenizer.hpp"
#include "core/tokenizer/vocab.hpp"

namespace decodebench::tokenizer {

/// Byte trie of the special (control and user-defined) token texts, for leftmost-longest
/// matching in the input.
class SpecialMatcher {
 public:
  /// Registers a token text (empty texts are ignored; a repeated text keeps its first id).
  void add(std::string_view text, int32_t id);
  /// Longest special token starting at `pos`: its id and byte length, or {-1, 0}.
  [[nodiscard]] std::pair<int32_t, size_t> match(std::string_view text, size_t pos) const;
  /// True when no token was added.
  [[nodiscard]] bool empty() const { return nodes_.size() <= 1; }

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children;  // few per node; linear search
    int32_t token = -1;
  };
  std::array<int32_t, 256> root_{};  // child index + 1 per first byte (0 = none)
  std::vector<Node> nodes_{1};       // nodes_[0] is the root (its children live in root_)
};

/// Shared part of both tokenizers.
class VocabTokenizer : public Tokenizer {
 public:
  /// Takes the tokens out of `data` (validated by make_tokenizer); `kind` is what kind() returns.
  VocabTokenizer(VocabData& data, std::string kind);

  [[nodiscard]] std::vector<int32_t> encode(std::string_view text,
                                            bool add_special = true) const override;
  [[nodiscard]] std::string decode(std::span<const int32_t> ids) const override;
  [[nodiscard]] std::string token_piece(int32_t id) const override;
  [[nodiscard]] std::string token_text(int32_t id) const override;
  [[nodiscard]] bool is_end_of_generation(int32_t id) const override;
  [[nodiscard]] int64_t vocab_size() const override { return static_cast<int64_t>(tokens_.size()); }
  [[nodiscard]] int32_t bos_id() const override { return bos_; }
  [[nodiscard]] int32_t eos_id() const override { return eos_; }
  [[nodiscard]] std::string kind() const override { return kind_; }

 protected:
  /// Encodes a stretch of text that holds no special token. `after_special` is true for the first
  /// stretch and for one that follows a special token.
  virtual void encode_fragment(std::string_view text, bool after_special,
                               std::vector<int32_t>& out) const = 0;
  /// Appends the bytes a normal token stands for.
  virtual void append_normal(int32_t id, std::string& out) const = 0;
  /// Appends the bytes a user-defined token stands for (default: its text).
  virtual void append_user_defined(int32_t id, std::string& out) const;
  /// Whether decode() drops one leading space (SentencePiece's add_space_prefix).
  [[nodiscard]] virtual bool strip_leading_space() const { return false; }

  [[nodiscard]] TokenType type(int32_t id) const { return types_[static_cast<size_t>(id)]; }
  /// Id of the token with exactly this text, or -1.
  [[nodiscard]] int32_t find(std::string_view text) const;
  void append_piece(int32_t id, std::string& out) const;

  std::vector<std::string> tokens_;
  std::vector<TokenType> types_;
  // Views into tokens_, which is never resized after construction.
  std::unordered_map<std::string_view, int32_t> ids_;
  std::array<int32_t, 256> byte_tokens_{};  ///< id of the <0xNN> byte token per byte, or -1
  int32_t bos_ = -1;
  int32_t eos_ = -1;
  int32_t unk_ = -1;
  bool add_bos_ = false;

 private:
  std::string kind_;
  SpecialMatcher specials_;
  std::unordered_set<int32_t> end_of_generation_;
};

/// GPT-2 byte-level BPE (`tokenizer.ggml.model` = "gpt2").
class BpeTokenizer final : public VocabTokenizer {
 public:
  /// Builds the byte map and the merge table (merges whose parts or result are no tokens are
  /// dropped). Throws Error (exit 2) for a merge without a separating space.
  BpeTokenizer(VocabData& data, PreTokenizer pre);

 protected:
  void encode_fragment(std::string_view text, bool after_special,
                       std::vector<int32_t>& out) const override;
  void append_normal(int32_t id, std::string& out) const override;

 private:
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  void encode_piece(std::string_view piece, std::vector<int32_t>& out) const;

  PreTokenizer pre_;
  bool ignore_merges_ = false;                  ///< whole-piece vocabulary hit wins (Llama 3)
  std::array<int32_t, 256> byte_symbol_{};      ///< token of each byte's mapped code point
  std::unordered_map<uint64_t, Merge> merges_;  ///< (left id, right id) -> rank and result
};

/// SentencePiece BPE (`tokenizer.ggml.model` = "llama").
class SpmTokenizer final : public VocabTokenizer {
 public:
  /// Takes the scores; BOS, EOS and unknown fall back to "<s>", "</s>", "<unk>" when absent.
  explicit SpmTokenizer(VocabData& data);

 protected:
  void encode_fragment(std::string_view text, bool after_special,
                       std::vector<int32_t>& out) const override;
  void append_normal(int32_t id, std::string& out) const override;
  void append_user_defined(int32_t id, std::string& out) const override;
  [[nodiscard]] bool strip_leading_space() const override { return add_space_prefix_; }

 private:
  /// Id of a token that merges may produce (normal, user-defined or undefined type), or -1.
  [[nodiscard]] int32_t find_piece(std::string_view text) const;

  std::vector<float> scores_;
  bool add_space_prefix_ = true;
};

}  // namespace decodebench::tokenizer
