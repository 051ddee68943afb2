#include "core/stats/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace decodebench {

double percentile_sorted(std::span<const double> sorted, double p) {
  const double h = (static_cast<double>(sorted.size()) - 1.0) * p / 100.0;
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

double Summary::median_noise() const {
  if (count == 0 || median == 0.0) return 0.0;
  return (median_ci_high - median_ci_low) / 2.0 / std::fabs(median);
}

SlowStretch slow_stretch(std::span<const double> values, double median, double tolerance) {
  SlowStretch s;
  if (!(median > 0.0)) return s;
  const double limit = median * (1.0 + tolerance);
  for (size_t i = 0; i < values.size(); ++i) {
    if (!(values[i] > limit)) continue;
    if (s.count == 0) s.first = static_cast<int64_t>(i);
    s.last = static_cast<int64_t>(i);
    s.worst = std::max(s.worst, values[i]);
    ++s.count;
  }
  return s;
}

Summary summarize(std::span<const double> values) {
  Summary s;
  if (values.empty()) return s;
  std::vector<double> v(values.begin(), values.end());
  std::sort(v.begin(), v.end());
  const double n = static_cast<double>(v.size());
  s.count = static_cast<int64_t>(v.size());
  double sum = 0.0;
  for (double x : v) sum += x;
  s.mean = sum / n;
  double ss = 0.0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  s.stddev = v.size() > 1 ? std::sqrt(ss / (n - 1.0)) : 0.0;
  s.min = v.front();
  s.max = v.back();
  s.median = percentile_sorted(v, 50.0);
  s.p90 = percentile_sorted(v, 90.0);
  s.p99 = percentile_sorted(v, 99.0);
  const double half_width = 0.98 * std::sqrt(n);  // 1.96 · √n / 2
  const double j = std::clamp(std::floor(n / 2.0 - half_width), 1.0, n);
  const double k = std::clamp(std::ceil(n / 2.0 + 1.0 + half_width), 1.0, n);
  s.median_ci_low = v[static_cast<size_t>(j) - 1];
  s.median_ci_high = v[static_cast<size_t>(k) - 1];
  return s;
}

nlohmann::json to_json(const Summary& s) {
  return {{"count", s.count},
          {"mean", s.mean},
          {"median", s.median},
          {"p90", s.p90},
          {"p99", s.p99},
          {"min", s.min},
          {"max", s.max},
          // One sample has no spread to estimate (n − 1 = 0): null, not 0.
          {"stddev", s.count >= 2 ? nlohmann::json(s.stddev) : nlohmann::json(nullptr)},
          {"median_ci95", s.count >= kMinSamplesForMedianCi
                              ? nlohmann::json::array({s.median_ci_low, s.median_ci_high})
                              : nlohmann::json(nullptr)}};
}

}  // namespace decodebench
