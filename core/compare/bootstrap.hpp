// The percentile bootstrap of a change in one statistic of two samples (used by `compare` for the
// mean, p90, p99 and tokens/s, which the rank test does not test).
#pragma once

#include <cstdint>
#include <span>

namespace decodebench {

/// The statistic of a series of per-token times (ns) that a bootstrap resamples, as the runner
/// reports it: the mean; the 90th and 99th percentiles (Hyndman & Fan 1996, definition 7, as
/// percentile_sorted()); tokens/s = count · 1e9 / Σ times.
enum class ResampledStatistic { kMean, kP90, kP99, kTokensPerS };

/// Result of bootstrap_change().
struct BootstrapTest {
  int64_t resamples = 0;  ///< B: resampled pairs
  /// The (1 − alpha) percentile interval of the change in percent, (s(new*) − s(base*)) /
  /// s(base*) · 100 over the B resampled pairs (Efron & Tibshirani, An Introduction to the
  /// Bootstrap, 1993, ch. 13): the 100·alpha/2 and 100·(1 − alpha/2) percentiles
  double ci_low_pct = 0, ci_high_pct = 0;
  /// Two-sided achieved significance level of "no change" (Efron & Tibshirani 1993, ch. 16):
  /// min(1, 2 · (min(#{Δ* ≤ 0}, #{Δ* ≥ 0}) + 1) / (B + 1)); p < alpha exactly when fewer than
  /// about alpha/2 of the resampled changes fall on the far side of 0. At least 2 / (B + 1).
  double p_value = 1;
};

/// Percentile `p` in [0, 100] (definition 7, as percentile_sorted()) of the series holding
/// counts[i] copies of sorted[i]: a resample as the bootstrap draws it (how often each value was
/// drawn), without writing it out. `sorted` ascending, `counts` of the same length, Σ counts ≥ 1.
double percentile_of_counts(std::span<const double> sorted, std::span<const uint32_t> counts,
                            double p);

/// Resamples for a significance level `alpha` in (0, 1): max(2,000, ⌈20 / alpha⌉), at most
/// 200,000, so that the smallest p, 2 / (B + 1), lies a tenth of alpha or more below it down to
/// alpha = 1e-4 (2,000 resamples at alpha 0.05: smallest p 0.001).
int64_t bootstrap_resamples(double alpha);

/// Percentile bootstrap of the change in `statistic` from `baseline` to `candidate` (per-token
/// times, any unit for the mean and percentiles; ns for tokens/s): each of the B =
/// bootstrap_resamples(alpha) rounds draws each sample's size with replacement from each sample
/// independently (Efron & Tibshirani 1993, ch. 8, two-sample problem). Deterministic for given
/// inputs, whatever the number of threads (fixed seeds of std::mt19937_64 per block of
/// resamples, whose output the C++ standard fixes, and our own index mapping), so a report can be
/// rerun. Cost: O(B · (n1 + n2)), spread over the machine's threads for large samples. Throws
/// decodebench::Error (exit 2) when a sample is empty or alpha is outside (0, 1). Values must be
/// finite and the baseline's statistic positive in every resample (per-token times are > 0).
BootstrapTest bootstrap_change(std::span<const double> candidate, std::span<const double> baseline,
                               ResampledStatistic statistic, double alpha);

}  // namespace decodebench
