// Small text helpers shared by the CLI and core messages: edit distance for "did you mean"
// suggestions, and byte sizes in the decimal units every report uses.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace decodebench {

/// Edit distance (insertions, deletions, substitutions, adjacent transpositions) between a and b,
/// capped at cap + 1 (Damerau–Levenshtein, optimal string alignment).
int edit_distance(const std::string& a, const std::string& b, int cap);

/// The (at most) `count` names of `candidates` nearest to `word` by edit distance, nearest first
/// (ties in the candidates' order).
std::vector<std::string> nearest_names(const std::string& word,
                                       const std::vector<std::string>& candidates, size_t count);

/// For a value that is none of `names`: " (did you mean 'f16'? names are lower case)" when it
/// differs from one only in case, " (did you mean 'q4_k_m'?)" when one is within 2 edits of it
/// (1 for values of up to 4 characters) and nearer than every other, else "". Appended to an
/// "invalid value" message.
std::string choice_hint(const std::string& value, const std::vector<std::string>& names);

/// Most bytes of a user-given value that an error message echoes (echo_value).
inline constexpr size_t kEchoMaxBytes = 64;

/// Most bytes of a path that an error message echoes whole (echo_path): PATH_MAX, the longest
/// path that can name a file.
inline constexpr size_t kEchoMaxPathBytes = 4096;

/// A user-given value (a flag's value, an argument) as error messages echo it: whole up to
/// `max_bytes`, else its first `max_bytes` bytes (cut back to the start of a UTF-8 character) and
/// "… (N bytes)", so a 100 kB value does not flood the terminal.
std::string echo_value(std::string_view value, size_t max_bytes = kEchoMaxBytes);

/// A path as error messages echo it: whole when it can name a file (up to kEchoMaxPathBytes),
/// else as echo_value() shortens any value.
std::string echo_path(std::string_view path);

/// Puts the value of an integer flag in the plain decimal form CLI11 is to read (CLI11 2.1 reads
/// integers with base-0 strtoll: "0x10" as 16, "010" as 8 and "08" as no integer; later versions
/// also read 0o17, 0b101, 1_000). A plain decimal value (an optional '-', then digits) is
/// rewritten without leading zeros ("08" and "010" are 8 and 10) and returns ""; one beyond int64
/// returns "'N' is out of range (at most ...)"; one that starts like a number (a digit after an
/// optional sign and blanks) and holds no comma ("0x10", "+16", " 16", "16 ", "1e3") returns
/// "'0x10' is not a decimal integer (...)"; anything else ("abc", a comma list) is left as it is,
/// for CLI11 to refuse as no integer ("'abc' is not an integer"). The message follows the flag's
/// name.
std::string plain_decimal_integer(std::string& value);

/// True when `value` is an optional '-' followed by one or more ASCII digits (the form
/// plain_decimal_integer accepts; any magnitude).
bool is_plain_decimal(std::string_view value);

/// A byte count in decimal units, as the run report, make-gguf and the docs print sizes:
/// "1.23 GB" (2 decimals), "12.3 MB", "4.1 kB" (1 decimal), "512 B".
std::string decimal_bytes(uint64_t bytes);

}  // namespace decodebench
