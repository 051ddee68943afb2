// Small text helpers shared by the CLI and core messages: edit distance for "did you mean"
// suggestions, and byte sizes in the decimal units every report uses.
#pragma once

#include <cstdint>
#include <string>
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

/// A byte count in decimal units, as the run report, make-gguf and the docs print sizes:
/// "1.23 GB" (2 decimals), "12.3 MB", "4.1 kB" (1 decimal), "512 B".
std::string decimal_bytes(uint64_t bytes);

}  // namespace decodebench
