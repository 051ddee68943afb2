// GGUF strings are bytes, not text: forms of them that JSON and a terminal can take.
#pragma once

#include <string>
#include <string_view>

namespace decodebench::gguf {

/// `s` with every byte that does not start a well-formed UTF-8 sequence (overlongs, surrogates
/// and code points past U+10FFFF included) replaced by U+FFFD: nlohmann::json refuses to dump
/// invalid UTF-8.
std::string valid_utf8(std::string_view s);

/// Printable form for the terminal: newline, tab and carriage return as \n \t \r, quote and
/// backslash escaped, other control characters and invalid bytes as \xNN; at most `max_bytes`
/// of the input shown, then "... (N bytes)".
std::string escape_text(std::string_view s, size_t max_bytes);

}  // namespace decodebench::gguf
