// GPT-2 byte-level BPE: pre-tokenize, map each byte of a piece to its stand-in code point
// (gguf-facts.md §7), then apply merges in rank order (lower index in tokenizer.ggml.merges
// first; ties go to the leftmost pair).
#include <algorithm>
#include <cstdio>
#include <string>

#include "core/error.hpp"
#include "core/gguf/printable.hpp"
#include "core/tokenizer/unicode.hpp"
#include "core/tokenizer/vocab_tokenizer.hpp"

namespace decodebench::tokenizer {
namespace {

std::string kind_name(const VocabData& data) {
  return "gpt2/" + (data.pre.empty() ? std::string("default") : data.pre);
}

}  // namespace

BpeTokenizer::BpeTokenizer(VocabData& data, PreTokenizer pre)
    : VocabTokenizer(data, kind_name(data)), pre_(pre) {
  // Llama 3's tokenizer sets ignore_merges: a piece that is itself a token is emitted whole.
  ignore_merges_ = pre == PreTokenizer::kLlama3;
  add_bos_ = data.add_bos.value_or(false);
  for (int b = 0; b < 256; ++b) {
    std::string mapped;
    unicode::append_utf8(mapped, unicode::byte_to_codepoint(static_cast<uint8_t>(b)));
    byte_symbol_[static_cast<size_t>(b)] = find(mapped);
  }
  merges_.reserve(data.merges.size());
  std::string joined;
  for (size_t rank = 0; rank < data.merges.size(); ++rank) {
    const std::string& m = data.merges[rank];
    // Split at the first space after position 0: a token may itself start with a space.
    const size_t space = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    if (space == std::string::npos) {
      throw usage_error("tokenizer.ggml.merges[" + std::to_string(rank) + "] = \"" +
                        gguf::escape_text(m, gguf::kMessageStringBytes) +
                        "\" is not of the form \"left right\"");
    }
    const std::string_view left(m.data(), space);
    const std::string_view right(m.data() + space + 1, m.size() - space - 1);
    joined.assign(left).append(right);
    const int32_t l = find(left);
    const int32_t r = find(right);
    const int32_t result = find(joined);
    // A merge whose parts or result are not tokens can never apply; the first of duplicates wins.
    if (l < 0 || r < 0 || result < 0) continue;
    merges_.emplace(pair_key(l, r), Merge{static_cast<int32_t>(rank), result});
  }
}

void BpeTokenizer::encode_fragment(std::string_view text, bool /*after_special*/,
                                   std::vector<int32_t>& out) const {
  for (std::string_view piece : pre_tokenize(pre_, text)) encode_piece(piece, out);
}

void BpeTokenizer::encode_piece(std::string_view piece, std::vector<int32_t>& out) const {
  if (ignore_merges_) {
    std::string mapped;
    for (char ch : piece) {
      unicode::append_utf8(mapped, unicode::byte_to_codepoint(static_cast<uint8_t>(ch)));
    }
    if (const int32_t id = find(mapped); id >= 0) {
      out.push_back(id);
      return;
    }
  }
  // Symbols form a doubly linked list over the piece's bytes; a merge folds the right symbol
  // into the left one. Candidates wait in a min-heap on (rank, position) and are checked for
  // staleness when popped, so each merge costs O(log n).
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
  };
  struct Candidate {
    int32_t rank;
    int32_t left;
    int32_t left_id;
    int32_t right_id;
    int32_t result;
  };
  const auto later = [](const Candidate& a, const Candidate& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
  };
  const auto n = static_cast<int32_t>(piece.size());
  std::vector<Symbol> symbols(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    const auto byte = static_cast<uint8_t>(piece[static_cast<size_t>(i)]);
    symbols[static_cast<size_t>(i)] = {byte_symbol_[byte], i - 1, i + 1 < n ? i + 1 : -1};
  }
  std::vector<Candidate> heap;
  const auto push = [&](int32_t left) {
    if (left < 0) return;
    const int32_t right = symbols[static_cast<size_t>(left)].next;
    if (right < 0) return;
    const int32_t a = symbols[static_cast<size_t>(left)].id;
    const int32_t b = symbols[static_cast<size_t>(right)].id;
    if (a < 0 || b < 0) return;
    const auto it = merges_.find(pair_key(a, b));
    if (it == merges_.end()) return;
    heap.push_back({it->second.rank, left, a, b, it->second.result});
    std::push_heap(heap.begin(), heap.end(), later);
  };
  for (int32_t i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const Candidate c = heap.back();
    heap.pop_back();
    Symbol& left = symbols[static_cast<size_t>(c.left)];
    if (left.id != c.left_id || left.next < 0) continue;  // left symbol changed or was absorbed
    Symbol& right = symbols[static_cast<size_t>(left.next)];
    if (right.id != c.right_id) continue;
    left.id = c.result;
    left.next = right.next;
    if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = c.left;
    right.id = -2;  // absorbed; never matches a candidate again
    push(left.prev);
    push(c.left);
  }
  for (int32_t i = n > 0 ? 0 : -1; i >= 0; i = symbols[static_cast<size_t>(i)].next) {
    const int32_t id = symbols[static_cast<size_t>(i)].id;
    if (id >= 0) {
      out.push_back(id);
    } else if (unk_ >= 0) {
      out.push_back(unk_);  // a byte without a token: only in a broken vocabulary
    } else {
      // Dropping it would decode a different prompt than the one the result records. A symbol
      // without a token never merged, so it is still the single byte piece[i].
      const auto byte = static_cast<uint8_t>(piece[static_cast<size_t>(i)]);
      int known = 0;
      for (const int32_t t : byte_symbol_) known += t >= 0 ? 1 : 0;
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", byte);
      throw usage_error(
          "the prompt holds byte " + std::string(hex) +
          (piece.size() <= 40 ? " (in '" + std::string(piece) + "')" : std::string()) +
          ", which this vocabulary has no token for, and it has no unknown token: it has tokens "
          "for " +
          std::to_string(known) +
          " of the 256 byte values (a byte-level BPE vocabulary needs all 256; the filler "
          "tokenizer of `decodebench make-gguf` files holds the ASCII bytes only)");
    }
  }
}

void BpeTokenizer::append_normal(int32_t id, std::string& out) const {
  const std::string& text = tokens_[static_cast<size_t>(id)];
  for (size_t pos = 0; pos < text.size();) {
    const auto d = unicode::decode_utf8(text, pos);
    const int b = unicode::codepoint_to_byte(d.cp);
    if (b >= 0) {
      out.push_back(static_cast<char>(b));
    } else {
      out.append(text, pos, d.len);  // not a byte stand-in: keep the character as it is
    }
    pos += d.len;
  }
}

}  // namespace decodebench::tokenizer
