// Command-line parse errors (CLI11's) as messages a user can act on.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace decodebench::app {

/// The message for a CLI11 parse error of `app` (the parser that threw; `named`: the subcommand
/// the user named, or nullptr). The first unknown flag (else the first unexpected word) is named
/// as typed, with the closest known flag or command when one is near ("--layer" → "did you mean
/// --layers?"); words after "--" and negative numbers are not flags;
/// "Could not convert: --tokens = abc" becomes "--tokens: 'abc' is not an integer". Any other
/// error keeps CLI11's text. Never throws.
/// With `args` (the words parsed, in order), an extra word right after a flag that takes no
/// value is named as that flag's value: "--phase-timing takes no value (got 'yes')".
std::string parse_error_message(const CLI::App& app, const CLI::App* named,
                                const CLI::ParseError& e,
                                const std::vector<std::string>* args = nullptr);

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

/// Makes every integer option of `app` and of its subcommands (CLI11 type INT) take plain decimal
/// values only, through plain_decimal_integer as a transform (a refusal is a CLI::ValidationError
/// "--layers: '0x10' is not a decimal integer (...)").
void require_decimal_integers(CLI::App& app);

/// The message for the main run's flags given before `command` ("decodebench --layers 2 compare
/// A B"), which the root parser took and the command would silently ignore; "" when none was
/// given. `root` is the parsed root app (its options counted), `args` the command line without
/// argv[0]. The flags are named as typed, in their order; one that `command` has too is to go
/// after it, one it lacks to be left out:
/// "--layers was given before 'compare', which takes no flags before it; 'compare' has no
/// --layers". Never throws.
std::string flags_before_command_message(const CLI::App& root, const CLI::App& command,
                                         const std::vector<std::string>& args);

/// The same message for a command line that names a command after main-run flags, found in the
/// words themselves (no parse: a comma-list sweep, "--layers 2,4 compare A B", is expanded before
/// the parser runs and would otherwise report the command as an unexpected argument); "" when
/// `args` (without argv[0]) does not start with a flag or names no command after it (a word that
/// is the value of the flag before it does not count). Never throws.
std::string command_after_flags_message(const CLI::App& root, const std::vector<std::string>& args);

}  // namespace decodebench::app
