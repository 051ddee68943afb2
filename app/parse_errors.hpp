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

/// Makes every integer option of `app` and of its subcommands (CLI11 type INT) take plain decimal
/// values only, through plain_decimal_integer (core/text.hpp) as a transform (a refusal is a
/// CLI::ValidationError "--layers: '0x10' is not a decimal integer (...)").
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
