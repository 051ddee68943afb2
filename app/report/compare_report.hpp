// Text and GitHub-flavoured markdown renderings of a `compare` report.
#pragma once

#include <string>

#include "core/compare/compare.hpp"

namespace decodebench::app {

/// The report's one-line verdict: "N slower, N faster, N same, N unclear in N matched run(s) →
/// REGRESSION (exit 1)" or "... → no regression (exit 0)"; the last line of compare_text.
std::string outcome_line(const CompareReport& report);

/// A terminal table: run, metric, baseline, new, change, p, verdict (latencies in µs, gpu_ms in
/// ms, throughput in tokens/s), then unmatched runs, notes and a one-line verdict.
std::string compare_text(const CompareReport& report);

/// The same as a GitHub-flavoured markdown section (a PR comment or $GITHUB_STEP_SUMMARY): a
/// headline with the outcome, the table, unmatched runs and notes in a collapsed <details>.
std::string compare_markdown(const CompareReport& report);

}  // namespace decodebench::app
