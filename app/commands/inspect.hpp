// `decodebench inspect FILE [--json PATH|-]`: reports what a GGUF file holds
// (core/gguf/inspect.hpp).
#pragma once

#include <CLI/CLI.hpp>

namespace decodebench::app {

/// Adds the `inspect` subcommand to `app`. Its callback reads and validates FILE, prints the
/// terminal report to stdout (unless `--json -` sends the JSON document there instead) and writes
/// the JSON document when --json is given; `--dump NAME --dump-out PATH` also writes tensor NAME
/// dequantized to raw little-endian f32 (gguf::dequantize_tensor); each file written is named on
/// stderr ("decodebench: wrote PATH (N bytes, M f32 values)"). It throws decodebench::Error:
/// exit 2 for a missing, malformed or unsupported file, an unknown or unsupported --dump tensor, or
/// an unwritable --json / --dump-out destination.
void setup_inspect(CLI::App& app);

}  // namespace decodebench::app
