#include "core/tokenizer/unicode.hpp"

#include <algorithm>
#include <array>

namespace decodebench::unicode {
namespace {

// ASCII is by far the most common input; a direct table avoids the binary search for it.
const std::array<uint8_t, 128>& ascii_flags() {
  static const std::array<uint8_t, 128> table = [] {
    std::array<uint8_t, 128> t{};
    for (size_t i = 0; i < kRangeCount && kRanges[i].first < 128; ++i) {
      for (uint32_t cp = kRanges[i].first; cp <= kRanges[i].last && cp < 128; ++cp) {
        t[cp] = kRanges[i].flags;
      }
    }
    return t;
  }();
  return table;
}

struct ByteMap {
  std::array<uint32_t, 256> to_cp{};
  std::array<int16_t, 512> from_cp{};  // every mapped code point is below U+0200
};

// Printable bytes (0x21-0x7E, 0xA1-0xAC, 0xAE-0xFF) map to themselves; the other 68 bytes map,
// in increasing order, to U+0100, U+0101, ... (gguf-facts.md §7).
const ByteMap& byte_map() {
  static const ByteMap map = [] {
    ByteMap m;
    m.from_cp.fill(-1);
    uint32_t next = 0x100;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable =
          (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      m.to_cp[b] = printable ? b : next++;
      m.from_cp[m.to_cp[b]] = static_cast<int16_t>(b);
    }
    return m;
  }();
  return map;
}

}  // namespace

uint8_t flags(uint32_t cp) {
  if (cp < 128) return ascii_flags()[cp];
  const CodepointRange* end = kRanges + kRangeCount;
  const CodepointRange* it = std::upper_bound(
      kRanges, end, cp, [](uint32_t v, const CodepointRange& r) { return v < r.first; });
  if (it == kRanges) return 0;
  --it;
  return cp <= it->last ? it->flags : 0;
}

Decoded decode_utf8(std::string_view s, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t b0 = byte(pos);
  if (b0 < 0x80) return {b0, 1};
  uint32_t len = 0;
  uint32_t cp = 0;
  uint32_t min = 0;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return {0xFFFD, 1};
  }
  if (pos + len > s.size()) return {0xFFFD, 1};
  for (uint32_t i = 1; i < len; ++i) {
    const uint8_t b = byte(pos + i);
    if ((b & 0xC0) != 0x80) return {0xFFFD, 1};
    cp = (cp << 6) | (b & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not valid UTF-8.
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0xFFFD, 1};
  return {cp, len};
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

uint32_t byte_to_codepoint(uint8_t b) { return byte_map().to_cp[b]; }

int codepoint_to_byte(uint32_t cp) {
  return cp < byte_map().from_cp.size() ? byte_map().from_cp[cp] : -1;
}

}  // namespace decodebench::unicode
