// Command-line parse errors (CLI11's) as messages a user can act on.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace decodebench::app {

/// The message for a CLI11 parse error of `app` (the parser that threw; `named`: the subcommand
/// the user named, or nullptr). The first unknown flag (else the first unexpected word) is named
/// as typed, with the closest known flag or command when one is near ("--layer" → "did you mean
/// --layers?"); words after "--" and negative numbers are not flags;
/// "Could not convert: --tokens = abc" becomes "--tokens: 'abc' is not an integer". Any other
/// error keeps CLI11's text. Never throws.
std::string parse_error_message(const CLI::App& app, const CLI::App* named,
                                const CLI::ParseError& e);

/// Edit distance (insertions, deletions, substitutions, adjacent transpositions) between a and b,
/// capped at cap + 1 (Damerau–Levenshtein, optimal string alignment).
int edit_distance(const std::string& a, const std::string& b, int cap);

}  // namespace decodebench::app
