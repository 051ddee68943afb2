// The terminal summary of a run.
#pragma once

#include <cstdio>
#include <string>

#include "core/runner.hpp"

namespace decodebench::app {

/// Prints config, TPOT statistics per pass (µs), phase tables, roofline, ids, verification and
/// warnings to `out`. `color` enables terminal decorations (unused when `out` is not a terminal).
void print_run_report(const RunReport& report, FILE* out, bool color);

/// The report's `kernels` line for a batch-1 step's kernel mix (no newline): GEMVs by kernel and
/// form, matrices in the tiled layout, the x' splits (standalone kernels, of which those that
/// trigger PDL after their wait in parentheses, and splits written by attention), the attention
/// form, e.g. "kernels  GEMVs per step: stream ring 8x2x2 6 · … · x' splits: 7 kernels (7 after
/// their wait), 2 in attention · attention: block".
std::string kernels_line(const KernelMix& k);

}  // namespace decodebench::app
