#include "core/tokenizer/pretokenize.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

#include "core/tokenizer/unicode.hpp"

namespace decodebench::tokenizer {
namespace {

struct Char {
  uint32_t cp;
  uint32_t offset;  // byte offset in the text
  uint8_t flags;
};

struct NamedPre {
  std::string_view name;
  PreTokenizer kind;
};

// "default" and "gpt-2" are what the GPT-2 converters write; "llama-v3" is an older spelling.
constexpr std::array<NamedPre, 9> kNames = {{
    {"gpt2", PreTokenizer::kGpt2},
    {"gpt-2", PreTokenizer::kGpt2},
    {"default", PreTokenizer::kGpt2},
    {"starcoder", PreTokenizer::kStarcoder},
    {"smollm", PreTokenizer::kStarcoder},
    {"llama-bpe", PreTokenizer::kLlama3},
    {"llama3", PreTokenizer::kLlama3},
    {"llama-v3", PreTokenizer::kLlama3},
    {"qwen2", PreTokenizer::kQwen2},
}};

// A view of the characters [0, n) that one matcher may look at: lookahead stops at n, as it does
// when a regex runs on an already split piece.
class Cursor {
 public:
  Cursor(const Char* c, size_t n) : c_(c), n_(n) {}
  [[nodiscard]] size_t size() const { return n_; }
  [[nodiscard]] uint32_t cp(size_t i) const { return i < n_ ? c_[i].cp : 0xFFFFFFFF; }
  [[nodiscard]] bool letter(size_t i) const { return i < n_ && (c_[i].flags & unicode::kLetter); }
  [[nodiscard]] bool number(size_t i) const { return i < n_ && (c_[i].flags & unicode::kNumber); }
  [[nodiscard]] bool space(size_t i) const {
    return i < n_ && (c_[i].flags & unicode::kWhitespace);
  }
  /// [^\s\p{L}\p{N}]
  [[nodiscard]] bool other(size_t i) const {
    return i < n_ && !(c_[i].flags & (unicode::kWhitespace | unicode::kLetter | unicode::kNumber));
  }
  [[nodiscard]] bool newline(size_t i) const { return cp(i) == '\r' || cp(i) == '\n'; }

  template <typename Pred>
  [[nodiscard]] size_t run_end(size_t i, Pred pred) const {
    while (pred(i)) ++i;
    return i;
  }

 private:
  const Char* c_;
  size_t n_;
};

// Length of the contraction at i ('s 't 're 've 'm 'll 'd), 0 when none.
size_t contraction(const Cursor& c, size_t i, bool ignore_case) {
  if (c.cp(i) != '\'') return 0;
  const auto at = [&](size_t k) -> uint32_t {
    uint32_t v = c.cp(i + k);
    if (ignore_case && v >= 'A' && v <= 'Z') v += 'a' - 'A';
    return v;
  };
  const uint32_t a = at(1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  const uint32_t b = at(2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// \s+(?!\S)|\s+ at a whitespace character: the whole run when it reaches the end, otherwise the
// run minus its last character (which then prefixes the next word), but at least one character.
size_t whitespace_tail(const Cursor& c, size_t i) {
  const size_t end = c.run_end(i, [&](size_t k) { return c.space(k); });
  if (end == c.size()) return end - i;
  return end - i >= 2 ? end - i - 1 : 1;
}

// One match of the GPT-2 regex at i (i < size); returns its length in characters.
size_t match_gpt2(const Cursor& c, size_t i) {
  if (size_t n = contraction(c, i, false)) return n;
  // " ?X+" for X in letters, numbers, others: the optional space is taken only when X follows.
  const auto optional_space_run = [&](auto pred) -> size_t {
    const size_t start = (c.cp(i) == ' ' && pred(i + 1)) ? i + 1 : i;
    if (!pred(start)) return 0;
    return c.run_end(start, pred) - i;
  };
  if (size_t n = optional_space_run([&](size_t k) { return c.letter(k); })) return n;
  if (size_t n = optional_space_run([&](size_t k) { return c.number(k); })) return n;
  if (size_t n = optional_space_run([&](size_t k) { return c.other(k); })) return n;
  if (c.space(i)) return whitespace_tail(c, i);
  return 1;  // unreachable: every character is a letter, number, other or whitespace
}

// One match of the Llama 3 / Qwen2 regex at i; `max_digits` is 3 (Llama 3) or 1 (Qwen2).
size_t match_llama3(const Cursor& c, size_t i, size_t max_digits) {
  if (size_t n = contraction(c, i, true)) return n;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  {
    const bool lead = !c.newline(i) && !c.letter(i) && !c.number(i) && c.letter(i + 1);
    const size_t start = lead ? i + 1 : i;
    if (c.letter(start)) return c.run_end(start, [&](size_t k) { return c.letter(k); }) - i;
  }
  // \p{N}{1,max}
  if (c.number(i)) {
    const size_t end = c.run_end(i, [&](size_t k) { return c.number(k); });
    return std::min(end - i, max_digits);
  }
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
  {
    const size_t start = (c.cp(i) == ' ' && c.other(i + 1)) ? i + 1 : i;
    if (c.other(start)) {
      const size_t end = c.run_end(start, [&](size_t k) { return c.other(k); });
      return c.run_end(end, [&](size_t k) { return c.newline(k); }) - i;
    }
  }
  if (!c.space(i)) return 1;  // unreachable, see match_gpt2
  // \s*[\r\n]+ : the whitespace run up to and including its last \r or \n.
  const size_t end = c.run_end(i, [&](size_t k) { return c.space(k); });
  for (size_t k = end; k > i; --k) {
    if (c.newline(k - 1)) return k - i;
  }
  return whitespace_tail(c, i);
}

template <typename Matcher>
void split_with(const Char* chars, size_t n, const Matcher& match, std::vector<size_t>& cuts) {
  const Cursor cursor(chars, n);
  size_t i = 0;
  while (i < n) {
    i += match(cursor, i);
    cuts.push_back(i);
  }
}

}  // namespace

std::optional<PreTokenizer> pre_tokenizer_from_name(std::string_view name) {
  if (name.empty()) return PreTokenizer::kGpt2;
  for (const auto& entry : kNames) {
    if (entry.name == name) return entry.kind;
  }
  return std::nullopt;
}

std::string supported_pre_tokenizers() {
  std::string out;
  for (const auto& entry : kNames) {
    if (!out.empty()) out += ", ";
    out += entry.name;
  }
  return out;
}

std::vector<std::string_view> pre_tokenize(PreTokenizer kind, std::string_view text) {
  std::vector<Char> chars;
  chars.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const auto d = unicode::decode_utf8(text, pos);
    chars.push_back({d.cp, static_cast<uint32_t>(pos), unicode::flags(d.cp)});
    pos += d.len;
  }
  // Cut points as character indices (exclusive ends of pieces).
  std::vector<size_t> cuts;
  const size_t n = chars.size();
  switch (kind) {
    case PreTokenizer::kGpt2:
      split_with(chars.data(), n, match_gpt2, cuts);
      break;
    case PreTokenizer::kStarcoder: {
      // First every number character becomes its own piece; the GPT-2 regex then runs on each
      // stretch in between, unable to look past it.
      size_t start = 0;
      while (start < n) {
        if (chars[start].flags & unicode::kNumber) {
          cuts.push_back(++start);
          continue;
        }
        size_t end = start;
        while (end < n && !(chars[end].flags & unicode::kNumber)) ++end;
        const size_t before = cuts.size();
        split_with(chars.data() + start, end - start, match_gpt2, cuts);
        for (size_t k = before; k < cuts.size(); ++k) cuts[k] += start;
        start = end;
      }
      break;
    }
    case PreTokenizer::kLlama3:
      split_with(
          chars.data(), n, [](const Cursor& c, size_t i) { return match_llama3(c, i, 3); }, cuts);
      break;
    case PreTokenizer::kQwen2:
      split_with(
          chars.data(), n, [](const Cursor& c, size_t i) { return match_llama3(c, i, 1); }, cuts);
      break;
  }
  std::vector<std::string_view> pieces;
  pieces.reserve(cuts.size());
  size_t begin = 0;
  for (size_t cut : cuts) {
    const size_t end = cut < n ? chars[cut].offset : text.size();
    pieces.push_back(text.substr(begin, end - begin));
    begin = end;
  }
  return pieces;
}

}  // namespace decodebench::tokenizer
