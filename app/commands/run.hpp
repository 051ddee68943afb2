// `decodebench [run]`: the main command (decode a synthetic or GGUF model and time each step).
#pragma once

#include <CLI/CLI.hpp>

#include "core/run_config.hpp"

namespace decodebench::app {

/// Flags of the run command, bound to a RunOptions after parsing.
struct RunFlags {
  RunOptions options;
  // Flags whose presence matters (CLI11 binds them as counts).
  CLI::Option* tied = nullptr;
  CLI::Option* untied = nullptr;
  CLI::Option* qkv_bias = nullptr;
  CLI::Option* no_qkv_bias = nullptr;
  CLI::Option* ignore_eos = nullptr;
  CLI::Option* stateless = nullptr;
  CLI::Option* phase_timing = nullptr;
  CLI::Option* verify_argmax = nullptr;
  CLI::Option* keep_going = nullptr;
  bool quiet = false;
  bool verbose = false;
};

/// Adds the run flags to `app` (the root command and the `run` subcommand share them).
void add_run_flags(CLI::App& app, RunFlags& flags);

/// Copies the presence flags (--tied-embeddings, --phase-timing, ...) into `flags.options` after
/// parsing. Throws decodebench::Error (exit 2) for exclusive pairs given together.
void bind_flags(RunFlags& flags);

/// Resolves the flags, executes the run, prints the report and writes the JSON.
/// Returns the exit code (0, or 4 when a verification failed under --keep-going).
/// Throws decodebench::Error for everything else.
int run_command(RunFlags& flags);

}  // namespace decodebench::app
