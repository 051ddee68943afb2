// SentencePiece BPE: spaces become U+2581 "▁" (plus one leading "▁" with add_space_prefix), the
// text starts as single characters, and the adjacent pair whose concatenation is the
// highest-scoring vocabulary piece is merged until none is left (ties: leftmost). Characters
// without a piece fall back to their <0xNN> byte tokens, else to the unknown token.
#include <algorithm>
#include <cstdio>
#include <string>

#include "core/error.hpp"
#include "core/tokenizer/unicode.hpp"
#include "core/tokenizer/vocab_tokenizer.hpp"

namespace decodebench::tokenizer {
namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581

}  // namespace

SpmTokenizer::SpmTokenizer(VocabData& data)
    : VocabTokenizer(data, "llama"), scores_(std::move(data.scores)) {
  add_bos_ = data.add_bos.value_or(true);
  add_space_prefix_ = data.add_space_prefix.value_or(true);
  // Files without the keys: SentencePiece's conventional names rather than fixed ids.
  if (bos_ < 0) bos_ = find("<s>");
  if (eos_ < 0) eos_ = find("</s>");
  if (unk_ < 0) unk_ = find("<unk>");
  for (int b = 0; b < 256; ++b) {
    if (byte_tokens_[static_cast<size_t>(b)] >= 0) continue;
    static constexpr char kHex[] = "0123456789ABCDEF";
    const std::string name = std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">";
    byte_tokens_[static_cast<size_t>(b)] = find(name);
  }
}

int32_t SpmTokenizer::find_piece(std::string_view text) const {
  const int32_t id = find(text);
  if (id < 0) return -1;
  const TokenType t = type(id);
  return (t == TokenType::kNormal || t == TokenType::kUserDefined || t == TokenType::kUndefined)
             ? id
             : -1;
}

void SpmTokenizer::encode_fragment(std::string_view text, bool after_special,
                                   std::vector<int32_t>& out) const {
  std::string s;
  s.reserve(text.size() + 8);
  if (add_space_prefix_ && after_special) s += kSpaceMark;
  for (char ch : text) {
    if (ch == ' ') {
      s += kSpaceMark;
    } else {
      s.push_back(ch);
    }
  }
  // Symbols are byte ranges of `s` in a doubly linked list; candidates wait in a max-heap on
  // (score, -position) and are checked for staleness (both sides unchanged) when popped.
  struct Symbol {
    uint32_t offset;
    uint32_t len;  // 0 once absorbed into its left neighbour
    int32_t prev;
    int32_t next;
  };
  struct Candidate {
    float score;
    int32_t left;
    int32_t right;
    uint32_t len;
  };
  const auto worse = [](const Candidate& a, const Candidate& b) {
    return a.score != b.score ? a.score < b.score : a.left > b.left;
  };
  std::vector<Symbol> symbols;
  symbols.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) {
    const uint32_t len = unicode::decode_utf8(s, pos).len;
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({static_cast<uint32_t>(pos), len, index - 1, index + 1});
    pos += len;
  }
  if (symbols.empty()) return;
  symbols.back().next = -1;
  const std::string_view view(s);
  std::vector<Candidate> heap;
  const auto push = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[static_cast<size_t>(left)];
    const Symbol& r = symbols[static_cast<size_t>(right)];
    const int32_t id = find_piece(view.substr(l.offset, l.len + r.len));
    if (id < 0) return;
    heap.push_back({scores_[static_cast<size_t>(id)], left, right, l.len + r.len});
    std::push_heap(heap.begin(), heap.end(), worse);
  };
  for (size_t i = 0; i + 1 < symbols.size(); ++i) {
    push(static_cast<int32_t>(i), static_cast<int32_t>(i + 1));
  }
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), worse);
    const Candidate c = heap.back();
    heap.pop_back();
    Symbol& left = symbols[static_cast<size_t>(c.left)];
    Symbol& right = symbols[static_cast<size_t>(c.right)];
    if (left.len == 0 || right.len == 0 || left.next != c.right || left.len + right.len != c.len) {
      continue;  // stale: one side was merged since this candidate was pushed
    }
    left.len += right.len;
    right.len = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = c.left;
    push(left.prev, c.left);
    push(c.left, left.next);
  }
  for (int32_t i = 0; i >= 0; i = symbols[static_cast<size_t>(i)].next) {
    const Symbol& sym = symbols[static_cast<size_t>(i)];
    const std::string_view piece = view.substr(sym.offset, sym.len);
    if (const int32_t id = find_piece(piece); id >= 0) {
      out.push_back(id);
      continue;
    }
    const bool all_bytes = std::all_of(piece.begin(), piece.end(), [&](char ch) {
      return byte_tokens_[static_cast<uint8_t>(ch)] >= 0;
    });
    if (all_bytes) {
      for (char ch : piece) out.push_back(byte_tokens_[static_cast<uint8_t>(ch)]);
    } else if (unk_ >= 0) {
      out.push_back(unk_);  // no byte fallback: the whole character is one unknown token
    } else {
      // Dropping it would decode a different prompt than the one the result records. The
      // character as the user typed it: a space (SentencePiece's U+2581 mark) or its code point.
      char cp[16];
      std::snprintf(cp, sizeof cp, "U+%04X", unicode::decode_utf8(piece, 0).cp);
      const bool space = piece == kSpaceMark;
      if (space && sym.offset == 0 && add_space_prefix_ && after_special) {
        // Not a space the user typed: the one add_space_prefix puts before the text.
        throw usage_error(
            "this SentencePiece vocabulary puts a space before the prompt and after each "
            "special token in it (tokenizer.ggml.add_space_prefix) but has no piece for it "
            "(U+2581), and it has neither <0xNN> byte tokens for it nor an unknown token");
      }
      const bool printable = piece.size() > 1 || (piece[0] > 0x20 && piece[0] < 0x7F);
      const std::string what = space       ? std::string("a space (U+2581 in the vocabulary)")
                               : printable ? std::string(cp) + " '" + std::string(piece) + "'"
                                           : std::string(cp);
      throw usage_error("the prompt holds " + what +
                        ", which this SentencePiece vocabulary has no piece for, and it has "
                        "neither <0xNN> byte tokens for it nor an unknown token");
    }
  }
}

void SpmTokenizer::append_normal(int32_t id, std::string& out) const {
  const std::string& text = tokens_[static_cast<size_t>(id)];
  for (size_t pos = 0; pos < text.size();) {
    if (text.compare(pos, kSpaceMark.size(), kSpaceMark) == 0) {
      out.push_back(' ');
      pos += kSpaceMark.size();
    } else {
      out.push_back(text[pos++]);
    }
  }
}

void SpmTokenizer::append_user_defined(int32_t id, std::string& out) const {
  append_normal(id, out);
}

}  // namespace decodebench::tokenizer
