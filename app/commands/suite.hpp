// `decodebench suite FILE` and command-line sweeps (`decodebench --layers 2,4 --dtype f16,bf16`).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "core/run_config.hpp"
#include "core/suite/suite.hpp"

namespace decodebench::app {

/// Run flags parsed the way `decodebench [run] ARGS` parses them.
struct ParsedRunArgs {
  RunOptions options;
  bool quiet = false;
  bool verbose = false;
};

/// Parses `args` (argv without the program name; a leading "run" is allowed) with the run
/// command's flags (add_run_flags, bind_flags). Throws decodebench::Error (exit 2) with CLI11's
/// message for an unknown flag or a bad value; `suite_file`: the arguments come from a suite
/// file's keys, and a flag without a value given one is told to take true or false.
ParsedRunArgs parse_run_args(std::vector<std::string> args, bool suite_file = false);

/// Adds `suite FILE [--json OUT|-] [--backend B] [--threads N] [--list] [-q] [-v]`. Sets
/// `*exit_code` to 0 when every configuration succeeded, else to the exit code of the first that
/// failed (failures are recorded in the document and the suite continues).
void setup_suite(CLI::App& app, int* exit_code);

/// Runs the points of a command-line sweep (expand_sweep() returned more than one) as a suite named
/// "sweep": a summary table, and with --json one suite document. `args` is the original argv
/// without the program name. Returns the exit code (as for `suite`). Throws decodebench::Error
/// (exit 2) for bad flags in any point, before anything runs.
int sweep_command(const std::vector<SweepPoint>& points, const std::vector<std::string>& args);

}  // namespace decodebench::app
