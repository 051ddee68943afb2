// `decodebench compare BASE.json NEW.json`: performance-regression check of two result or suite
// documents.
#pragma once

#include <CLI/CLI.hpp>

namespace decodebench::app {

/// Adds `compare BASE NEW [--threshold 5%] [--metric NAME[,NAME]] [--alpha 0.05]
/// [--format text|md|json] [--output PATH] [-q]`. Sets `*exit_code` to 0 when no (run, metric)
/// is slower, 1 when one is; data and usage errors throw decodebench::Error (exit 2).
void setup_compare(CLI::App& app, int* exit_code);

}  // namespace decodebench::app
