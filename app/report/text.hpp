// Text from outside the program (generated tokens, error messages, environment variables) made safe
// for the terminal, and the warnings about variables that printing needs.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace decodebench::app {

/// `text` on one line: newline, carriage return and tab become spaces; every other control byte
/// (0x00-0x1F, 0x7F) becomes a visible escape such as "\x1b", so a model's output cannot move the
/// cursor or recolour the terminal. Longer than `max_bytes` (of the escaped text): cut at the last
/// UTF-8 character boundary that fits and "…" appended. Other bytes pass unchanged (UTF-8 or not).
/// Throws nothing but std::bad_alloc.
std::string printable_line(std::string_view text, size_t max_bytes);

/// An error or warning message made safe for the terminal: control bytes other than newline
/// become escapes such as "\x1b", and bytes that are not part of valid UTF-8 (a GGUF string such
/// as an architecture name 'llam\xff') become "\xff". Valid UTF-8 passes unchanged.
std::string printable_message(std::string_view text);

/// Prints each of unknown_variable_warnings(environ) (a set variable that looks like one of
/// decodebench's but is not read: a misspelled measurement switch) to stderr as "decodebench:
/// warning: ..." and returns them, for commands that do not go through the run's warnings
/// (bench-kernels, doctor).
std::vector<std::string> print_unknown_variable_warnings();

}  // namespace decodebench::app
