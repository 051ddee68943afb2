// The command-line front end: subcommand registration and the top-level error handler.
#pragma once

namespace decodebench::app {

/// Parses argv, runs the chosen subcommand and returns the process exit code (README "Exit codes").
/// Never throws: decodebench::Error maps to its code, CLI usage errors to 2, anything else to 1.
int main_entry(int argc, char** argv);

}  // namespace decodebench::app
