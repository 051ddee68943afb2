// The terminal summary of a run.
#pragma once

#include <cstdio>

#include "core/runner.hpp"

namespace decodebench::app {

/// Prints config, TPOT statistics per pass (µs), phase tables, roofline, ids, verification and
/// warnings to `out`. `color` enables terminal decorations (unused when `out` is not a terminal).
void print_run_report(const RunReport& report, FILE* out, bool color);

}  // namespace decodebench::app
