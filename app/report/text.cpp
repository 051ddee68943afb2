#include "app/report/text.hpp"

#include <unistd.h>  // environ

#include <cstdio>

#include "core/result/environment.hpp"
#include "core/tokenizer/unicode.hpp"

namespace decodebench::app {

std::string printable_line(std::string_view text, size_t max_bytes) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto b = static_cast<unsigned char>(ch);
    if (ch == '\n' || ch == '\r' || ch == '\t') {
      out += ' ';
    } else if (b < 0x20 || b == 0x7F) {
      char esc[5];
      std::snprintf(esc, sizeof esc, "\\x%02x", b);
      out += esc;
    } else {
      out += ch;
    }
  }
  if (out.size() <= max_bytes) return out;
  size_t cut = max_bytes;
  // Back up over UTF-8 continuation bytes (10xxxxxx) so no character is split.
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
  out.resize(cut);
  return out + "…";
}

std::string printable_message(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const auto b = static_cast<unsigned char>(text[pos]);
    const unicode::Decoded d = unicode::decode_utf8(text, pos);
    // decode_utf8 gives an invalid byte length 1 (a valid character of length 1 is ASCII); C1
    // controls (U+0080-U+009F, e.g. U+009B, a terminal's CSI) are escaped byte by byte too.
    const bool invalid = (b >= 0x80 && d.len == 1) || (d.cp >= 0x80 && d.cp <= 0x9F);
    if (invalid || (b < 0x20 && b != '\n') || b == 0x7F) {
      for (size_t k = 0; k < (invalid ? d.len : 1); ++k) {
        char esc[5];
        std::snprintf(esc, sizeof esc, "\\x%02x", static_cast<unsigned char>(text[pos + k]));
        out += esc;
      }
      pos += invalid ? d.len : 1;
      continue;
    }
    out.append(text.substr(pos, d.len));
    pos += d.len;
  }
  return out;
}

std::vector<std::string> print_unknown_variable_warnings() {
  std::vector<std::string> warnings = unknown_variable_warnings(environ);
  for (const std::string& w : warnings) {
    std::fprintf(stderr, "decodebench: warning: %s\n", printable_message(w).c_str());
  }
  return warnings;
}

}  // namespace decodebench::app
