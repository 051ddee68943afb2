// `decodebench doctor` and `decodebench bandwidth`: GPU health and streaming bandwidth.
#pragma once

#include <CLI/CLI.hpp>

namespace decodebench::app {

/// Adds `doctor [--json PATH|-]`: GPU facts, a capture-mode × fault matrix, cross-thread capture,
/// replay vs eager; exit 0 when healthy, 1 with a one-line verdict otherwise, 3 without a GPU.
void setup_doctor(CLI::App& app, int* exit_code);

/// Adds `bandwidth [--size-mib N] [--iterations N] [--json PATH|-]`: the device's measured
/// streaming read bandwidth in GB/s.
void setup_bandwidth(CLI::App& app, int* exit_code);

}  // namespace decodebench::app
