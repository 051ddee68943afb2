// The percentile bootstrap of a change in a statistic of two samples (used by `compare` for the
// mean, p90, p99 and tokens/s, which the rank test does not test).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace decodebench {

/// The statistic of a series of per-token times (ns) that a bootstrap resamples, as the runner
/// reports it: the mean; the 90th and 99th percentiles (Hyndman & Fan 1996, definition 7, as
/// percentile_sorted()); tokens/s = count · 1e9 / Σ times.
enum class ResampledStatistic { kMean, kP90, kP99, kTokensPerS };

/// The fewest samples a side for a bootstrap test of `statistic`: 30, and 200 for p99 (n · (1 −
/// 0.99) ≥ 2). With fewer, the percentile bootstrap's interval is too narrow and the test too
/// eager: in simulated A/A pairs of lognormal samples (σ 0.5) at alpha 0.05, the mean came out
/// significant in 11% of pairs of 8 samples and 4.5% of 30, p99 in 10.5% of pairs of 48 and 3.5%
/// of 200 (docs/ci.md).
int64_t bootstrap_min_samples(ResampledStatistic statistic);

/// The test of one statistic.
struct BootstrapTest {
  /// The resampled changes' interval in percent, (s(new*) − s(base*)) / s(base*) · 100: the order
  /// statistics k from each end, k = ⌈alpha · (B + 1) / 2⌉ − 1 (1-based; at least 1; moved by one
  /// where floating-point rounding of p would otherwise disagree), about
  /// the 100·alpha/2 and 100·(1 − alpha/2) percentiles (the percentile interval, Efron &
  /// Tibshirani, An Introduction to the Bootstrap, 1993, ch. 13), chosen so that it excludes 0
  /// exactly when p < alpha (for alpha above 2 / (B + 1), the smallest p)
  double ci_low_pct = 0, ci_high_pct = 0;
  /// Two-sided p of "no change": the smallest alpha whose interval excludes 0, as a Monte Carlo
  /// p-value (Davison & Hinkley, Bootstrap Methods and their Application, 1997, ch. 4):
  /// min(1, 2 · (min(#{Δ* ≤ 0}, #{Δ* ≥ 0}) + 1) / (B + 1)). At least 2 / (B + 1).
  double p_value = 1;
};

/// All four statistics' tests from one set of resamples.
struct BootstrapTests {
  int64_t resamples = 0;  ///< B: resampled pairs
  std::array<BootstrapTest, 4> tests;

  [[nodiscard]] const BootstrapTest& of(ResampledStatistic s) const {
    return tests[static_cast<size_t>(s)];
  }
};

/// Resamples for a significance level `alpha` in (0, 1): max(2,000, ⌈20 / alpha⌉), at most
/// 200,000, so that the smallest p, 2 / (B + 1), lies a tenth of alpha or more below it down to
/// alpha = 1e-4 (2,000 resamples at alpha 0.05: smallest p 0.001). Throws decodebench::Error
/// (exit 2) for alpha outside (0, 1).
int64_t bootstrap_resamples(double alpha);

/// The smallest p bootstrap_changes() can give at `alpha`: 2 / (bootstrap_resamples(alpha) + 1).
/// Below alpha ≈ 1e-5 it is not below alpha, and no bootstrap test can be significant.
double bootstrap_smallest_p(double alpha);

/// Percentile bootstrap of the change in every ResampledStatistic from `baseline` to `candidate`
/// (per-token times in ns, each > 0): each of the B = bootstrap_resamples(alpha) rounds draws
/// each sample's size with replacement from each sample independently (Efron & Tibshirani 1993,
/// ch. 8, the two-sample problem), and the four statistics come from the same draws.
/// Deterministic for given inputs, whatever `threads` (0: the machine's; fixed seeds of
/// std::mt19937_64, whose output the C++ standard fixes, per block of resamples, and our own
/// index mapping), so a report can be rerun. Cost: O(B · (n1 + n2)), spread over the threads
/// from 4 million draws on (a second or so for two 100,000-token runs on two cores at alpha
/// 0.05; ten times as long at 0.001). Throws decodebench::Error (exit 2) when a sample is empty
/// or alpha is outside (0, 1).
BootstrapTests bootstrap_changes(std::span<const double> candidate,
                                 std::span<const double> baseline, double alpha, int threads = 0);

/// The test of B resampled changes (any order; percent): their interval and p as BootstrapTest
/// defines them. Throws decodebench::Error (exit 2) when `changes` is empty or alpha is outside
/// (0, 1).
BootstrapTest test_of_changes(std::vector<double> changes, double alpha);

/// Percentile `p` in [0, 100] (definition 7, as percentile_sorted()) of the series holding
/// counts[i] copies of sorted[i]: a resample as the bootstrap draws it (how often each value was
/// drawn), without writing it out. `sorted` ascending, `counts` of the same length, Σ counts ≥ 1.
double percentile_of_counts(std::span<const double> sorted, std::span<const uint32_t> counts,
                            double p);

}  // namespace decodebench
