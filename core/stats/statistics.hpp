// Summary statistics of a sample series (latencies in ns, throughputs, ...). Pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>

namespace decodebench {

/// Summary of a series. Percentiles use linear interpolation between order statistics
/// (Hyndman & Fan 1996, definition 7 — numpy's default). `stddev` is the sample standard deviation
/// (n − 1). The 95% confidence interval of the median is distribution-free: order statistics
/// j = ⌊n/2 − 0.98·√n⌋ and k = ⌈n/2 + 1 + 0.98·√n⌉ (1-based, clamped to [1, n]), the normal
/// approximation to the binomial (Conover, Practical Nonparametric Statistics, 3rd ed., §3.2).
/// Below kMinSamplesForMedianCi no interval of order statistics reaches 95% (even [min, max]
/// covers only 1 − 2^(1−n): 93.75% at n = 5): the fields then hold [min, max], which
/// median_noise() uses as a conservative spread, and to_json() writes null for the interval.
/// An empty series gives count 0 and zeros.
/// Fewest samples with a distribution-free 95% interval for the median ([min, max] at n = 6
/// covers 1 − 2^-5 = 96.9%).
constexpr int64_t kMinSamplesForMedianCi = 6;

struct Summary {
  int64_t count = 0;
  double mean = 0, median = 0, p90 = 0, p99 = 0, min = 0, max = 0, stddev = 0;
  double median_ci_low = 0, median_ci_high = 0;

  /// Relative half-width of the median's confidence interval: (high − low) / 2 / median.
  [[nodiscard]] double median_noise() const;
};

/// Summarises `values` (any order; not modified).
Summary summarize(std::span<const double> values);

/// Percentile `p` in [0, 100] of an ascending-sorted, non-empty series (definition 7).
double percentile_sorted(std::span<const double> sorted, double p);

/// The values of a series more than `tolerance` (relative, e.g. 0.05) above `median`: how many,
/// the first and last index (0-based; -1 when none) and the largest. Used to tell a stretch of
/// slow decode steps (a throttled or shared GPU) from noise.
struct SlowStretch {
  int64_t count = 0;
  int64_t first = -1;
  int64_t last = -1;
  double worst = 0;
};

/// Scans `values` (in time order) against `median` (> 0). Empty or non-positive median: count 0.
SlowStretch slow_stretch(std::span<const double> values, double median, double tolerance);

/// {count, mean, median, p90, p99, min, max, stddev (null below 2 samples), median_ci95: [low,
/// high], or null with fewer than kMinSamplesForMedianCi samples}.
nlohmann::json to_json(const Summary& s);

}  // namespace decodebench
