// GGUF strings are bytes, not text: forms of them that JSON and a terminal can take.
#pragma once

#include <string>
#include <string_view>

namespace decodebench::gguf {

/// `s` with every byte that does not start a well-formed UTF-8 sequence (overlongs, surrogates
/// and code points past U+10FFFF included) replaced by U+FFFD: nlohmann::json refuses to dump
/// invalid UTF-8.
std::string valid_utf8(std::string_view s);

/// Most bytes of a string from a file that an error message shows (escape_text; tensor names are
/// at most 63).
inline constexpr size_t kMessageStringBytes = 200;

/// Printable form for the terminal: newline, tab and carriage return as \n \t \r, quote and
/// backslash escaped, other control characters and invalid bytes as \xNN, the C1 controls
/// U+0080..U+009F (a terminal reads U+009B as CSI) as \u0080..\u009f; at most `max_bytes`
/// of the input shown, then "... (N bytes)".
std::string escape_text(std::string_view s, size_t max_bytes);

}  // namespace decodebench::gguf
