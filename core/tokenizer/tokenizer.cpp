#include "core/tokenizer/tokenizer.hpp"

#include <algorithm>
#include <limits>

#include "core/error.hpp"
#include "core/gguf/printable.hpp"
#include "core/gguf/reader.hpp"
#include "core/tokenizer/unicode.hpp"
#include "core/tokenizer/vocab.hpp"
#include "core/tokenizer/vocab_tokenizer.hpp"

namespace decodebench {
namespace tokenizer {
namespace {

// Chat end-of-turn markers that end generation even when the file names another EOS.
constexpr std::string_view kEndOfTurnNames[] = {"<|im_end|>", "<|eot_id|>", "<|end|>",
                                                "<end_of_turn>", "<|endoftext|>"};

// "<0x41>" -> 0x41, or -1.
int parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  int value = 0;
  for (char ch : text.substr(3, 2)) {
    value <<= 4;
    if (ch >= '0' && ch <= '9') {
      value |= ch - '0';
    } else if (ch >= 'A' && ch <= 'F') {
      value |= ch - 'A' + 10;
    } else if (ch >= 'a' && ch <= 'f') {
      value |= ch - 'a' + 10;
    } else {
      return -1;
    }
  }
  return value;
}

}  // namespace

void SpecialMatcher::add(std::string_view text, int32_t id) {
  if (text.empty()) return;
  int32_t node = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<uint8_t>(text[i]);
    int32_t next = -1;
    if (node == 0) {
      next = root_[byte] - 1;
    } else {
      for (const auto& [b, child] : nodes_[static_cast<size_t>(node)].children) {
        if (b == byte) next = child;
      }
    }
    if (next < 0) {
      next = static_cast<int32_t>(nodes_.size());
      nodes_.emplace_back();
      if (node == 0) {
        root_[byte] = next + 1;
      } else {
        nodes_[static_cast<size_t>(node)].children.emplace_back(byte, next);
      }
    }
    node = next;
  }
  // A duplicated text keeps its first (lowest) id.
  if (nodes_[static_cast<size_t>(node)].token < 0) nodes_[static_cast<size_t>(node)].token = id;
}

std::pair<int32_t, size_t> SpecialMatcher::match(std::string_view text, size_t pos) const {
  std::pair<int32_t, size_t> best{-1, 0};
  int32_t node = root_[static_cast<uint8_t>(text[pos])] - 1;
  size_t i = pos + 1;
  while (node >= 0) {
    const Node& n = nodes_[static_cast<size_t>(node)];
    if (n.token >= 0) best = {n.token, i - pos};
    if (i == text.size()) break;
    const auto byte = static_cast<uint8_t>(text[i]);
    int32_t next = -1;
    for (const auto& [b, child] : n.children) {
      if (b == byte) next = child;
    }
    node = next;
    ++i;
  }
  return best;
}

VocabTokenizer::VocabTokenizer(VocabData& data, std::string kind)
    : tokens_(std::move(data.tokens)), kind_(std::move(kind)) {
  types_.resize(tokens_.size(), TokenType::kNormal);
  for (size_t i = 0; i < data.token_types.size(); ++i) {
    types_[i] = static_cast<TokenType>(data.token_types[i]);
  }
  ids_.reserve(tokens_.size());
  byte_tokens_.fill(-1);
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const auto id = static_cast<int32_t>(i);
    ids_.emplace(tokens_[i], id);  // a duplicated text keeps its first id
    const TokenType t = types_[i];
    if (t == TokenType::kControl || t == TokenType::kUserDefined) specials_.add(tokens_[i], id);
    if (t == TokenType::kByte) {
      const int b = parse_byte_token(tokens_[i]);
      if (b >= 0 && byte_tokens_[static_cast<size_t>(b)] < 0) {
        byte_tokens_[static_cast<size_t>(b)] = id;
      }
    }
    if (t == TokenType::kControl || t == TokenType::kUserDefined) {
      for (std::string_view name : kEndOfTurnNames) {
        if (tokens_[i] == name) end_of_generation_.insert(id);
      }
    }
  }
  bos_ = static_cast<int32_t>(data.bos_id);
  eos_ = static_cast<int32_t>(data.eos_id);
  unk_ = static_cast<int32_t>(data.unk_id);
  for (int64_t id : {data.eos_id, data.eot_id, data.eom_id}) {
    if (id >= 0) end_of_generation_.insert(static_cast<int32_t>(id));
  }
}

int32_t VocabTokenizer::find(std::string_view text) const {
  const auto it = ids_.find(text);
  return it == ids_.end() ? -1 : it->second;
}

std::vector<int32_t> VocabTokenizer::encode(std::string_view text, bool add_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (add_special && add_bos_ && bos_ >= 0) out.push_back(bos_);
  bool after_special = true;
  size_t start = 0;  // first byte of the pending plain-text fragment
  if (!specials_.empty()) {
    for (size_t pos = 0; pos < text.size();) {
      const auto [id, len] = specials_.match(text, pos);
      if (id < 0) {
        ++pos;
        continue;
      }
      if (pos > start) {
        encode_fragment(text.substr(start, pos - start), after_special, out);
      }
      out.push_back(id);
      after_special = true;
      pos += len;
      start = pos;
    }
  }
  if (start < text.size()) encode_fragment(text.substr(start), after_special, out);
  return out;
}

void VocabTokenizer::append_user_defined(int32_t id, std::string& out) const {
  out += tokens_[static_cast<size_t>(id)];
}

void VocabTokenizer::append_piece(int32_t id, std::string& out) const {
  if (id < 0 || static_cast<size_t>(id) >= tokens_.size()) return;
  switch (type(id)) {
    case TokenType::kControl:
    case TokenType::kUnused:
      return;
    case TokenType::kUnknown:
      out += "\xE2\x81\x87";  // U+2047, what SentencePiece prints for an unknown piece
      return;
    case TokenType::kUserDefined:
      append_user_defined(id, out);
      return;
    case TokenType::kByte: {
      const int b = parse_byte_token(tokens_[static_cast<size_t>(id)]);
      if (b >= 0) {
        out.push_back(static_cast<char>(b));
        return;
      }
      break;  // not of the form <0xNN>: decode it as a normal token
    }
    default:
      break;
  }
  append_normal(id, out);
}

std::string VocabTokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  for (int32_t id : ids) append_piece(id, out);
  if (strip_leading_space() && !out.empty() && out.front() == ' ') out.erase(0, 1);
  return out;
}

std::string VocabTokenizer::token_piece(int32_t id) const {
  std::string out;
  append_piece(id, out);
  return out;
}

std::string VocabTokenizer::token_text(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= tokens_.size()) return "";
  return tokens_[static_cast<size_t>(id)];
}

bool VocabTokenizer::is_end_of_generation(int32_t id) const {
  return end_of_generation_.count(id) != 0;
}

}  // namespace tokenizer

std::unique_ptr<Tokenizer> make_tokenizer(VocabData data) {
  const size_t n = data.tokens.size();
  if (n == 0) {
    throw usage_error("tokenizer.ggml.tokens is missing or empty: the file has no vocabulary");
  }
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    throw usage_error("tokenizer.ggml.tokens has " + std::to_string(n) + " entries, too many");
  }
  if (!data.scores.empty() && data.scores.size() != n) {
    throw usage_error("tokenizer.ggml.scores has " + std::to_string(data.scores.size()) +
                      " entries but tokenizer.ggml.tokens has " + std::to_string(n));
  }
  if (!data.token_types.empty() && data.token_types.size() != n) {
    throw usage_error("tokenizer.ggml.token_type has " + std::to_string(data.token_types.size()) +
                      " entries but tokenizer.ggml.tokens has " + std::to_string(n));
  }
  const std::pair<const char*, int64_t*> special_ids[] = {
      {"tokenizer.ggml.bos_token_id", &data.bos_id},
      {"tokenizer.ggml.eos_token_id", &data.eos_id},
      {"tokenizer.ggml.unknown_token_id", &data.unk_id},
      {"tokenizer.ggml.eot_token_id", &data.eot_id},
      {"tokenizer.ggml.eom_token_id", &data.eom_id},
      {"tokenizer.ggml.padding_token_id", &data.pad_id}};
  for (const auto& [key, id] : special_ids) {
    if (*id >= static_cast<int64_t>(n)) {
      throw usage_error(std::string(key) + " = " + std::to_string(*id) +
                        " is out of range: the vocabulary has " + std::to_string(n) + " tokens");
    }
    if (*id < -1) *id = -1;
  }
  if (data.model == "gpt2") {
    const auto pre = tokenizer::pre_tokenizer_from_name(data.pre);
    if (!pre) {
      throw unsupported_error("tokenizer.ggml.pre = \"" +
                              gguf::escape_text(data.pre, gguf::kMessageStringBytes) +
                              "\" is not supported; supported pre-tokenizers: " +
                              tokenizer::supported_pre_tokenizers());
    }
    return std::make_unique<tokenizer::BpeTokenizer>(data, *pre);
  }
  if (data.model == "llama") {
    if (data.scores.empty()) {
      throw usage_error(
          "tokenizer.ggml.scores is missing: a SentencePiece (llama) vocabulary needs scores");
    }
    return std::make_unique<tokenizer::SpmTokenizer>(data);
  }
  throw unsupported_error("tokenizer.ggml.model = \"" +
                          gguf::escape_text(data.model, gguf::kMessageStringBytes) +
                          "\" is not supported; supported tokenizer models: gpt2, llama");
}

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const gguf::Reader& reader) {
  VocabData data;
  const auto model = reader.get_string("tokenizer.ggml.model");
  if (!model) {
    throw usage_error(reader.path() +
                      ": tokenizer.ggml.model is missing: the file has no vocabulary");
  }
  data.model = *model;
  data.pre = reader.get_string("tokenizer.ggml.pre").value_or("");
  data.tokens = reader.get_string_array("tokenizer.ggml.tokens");
  for (double s : reader.get_float_array("tokenizer.ggml.scores")) {
    data.scores.push_back(static_cast<float>(s));
  }
  for (int64_t t : reader.get_int_array("tokenizer.ggml.token_type")) {
    data.token_types.push_back(static_cast<int32_t>(std::clamp<int64_t>(
        t, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max())));
  }
  data.merges = reader.get_string_array("tokenizer.ggml.merges");
  const std::pair<const char*, int64_t*> ids[] = {
      {"tokenizer.ggml.bos_token_id", &data.bos_id},
      {"tokenizer.ggml.eos_token_id", &data.eos_id},
      {"tokenizer.ggml.unknown_token_id", &data.unk_id},
      {"tokenizer.ggml.eot_token_id", &data.eot_id},
      {"tokenizer.ggml.eom_token_id", &data.eom_id},
      {"tokenizer.ggml.padding_token_id", &data.pad_id}};
  for (const auto& [key, id] : ids) {
    if (const auto v = reader.get_uint(key)) {
      *id = static_cast<int64_t>(
          std::min<uint64_t>(*v, static_cast<uint64_t>(std::numeric_limits<int64_t>::max())));
    }
  }
  data.add_bos = reader.get_bool("tokenizer.ggml.add_bos_token");
  data.add_space_prefix = reader.get_bool("tokenizer.ggml.add_space_prefix");
  try {
    return make_tokenizer(std::move(data));
  } catch (const Error& e) {
    throw Error(e.code(), reader.path() + ": " + e.what());
  }
}

}  // namespace decodebench
