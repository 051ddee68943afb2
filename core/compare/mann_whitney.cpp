#include "core/compare/mann_whitney.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace decodebench {

MannWhitney mann_whitney_u(std::span<const double> x, std::span<const double> y) {
  if (x.empty() || y.empty()) {
    throw usage_error("Mann-Whitney U test: each sample needs at least one value (got " +
                      std::to_string(x.size()) + " and " + std::to_string(y.size()) + ")");
  }
  const double n1 = static_cast<double>(x.size());
  const double n2 = static_cast<double>(y.size());
  const double n = n1 + n2;
  // Pool (value, from x?) and sort by value; ties get the mean of the ranks they span.
  std::vector<std::pair<double, bool>> pooled;
  pooled.reserve(x.size() + y.size());
  for (double v : x) pooled.emplace_back(v, true);
  for (double v : y) pooled.emplace_back(v, false);
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  double rank_sum_x = 0;
  double tie_term = 0;  // Σ (t³ − t)
  for (size_t i = 0; i < pooled.size();) {
    size_t j = i;
    while (j + 1 < pooled.size() && pooled[j + 1].first == pooled[i].first) ++j;
    const double mid_rank = (static_cast<double>(i + j) / 2.0) + 1.0;  // 1-based ranks i+1..j+1
    for (size_t k = i; k <= j; ++k) {
      if (pooled[k].second) rank_sum_x += mid_rank;
    }
    const double t = static_cast<double>(j - i + 1);
    tie_term += t * t * t - t;
    i = j + 1;
  }
  MannWhitney r;
  r.u = rank_sum_x - n1 * (n1 + 1.0) / 2.0;
  r.mean = n1 * n2 / 2.0;
  const double variance = n1 * n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
  r.sigma = variance > 0 ? std::sqrt(variance) : 0.0;
  if (r.sigma == 0.0) return r;  // every value equal (or N = 1 after ties): no evidence
  const double distance = std::max(0.0, std::fabs(r.u - r.mean) - 0.5);
  r.z = std::copysign(distance / r.sigma, r.u - r.mean);
  r.p_value = std::min(1.0, std::erfc(std::fabs(r.z) / std::sqrt(2.0)));
  return r;
}

double smallest_p_value(int64_t n1, int64_t n2) {
  if (n1 < 1 || n2 < 1) {
    throw usage_error("Mann-Whitney U test: each sample needs at least one value (got " +
                      std::to_string(n1) + " and " + std::to_string(n2) + ")");
  }
  const double a = static_cast<double>(n1);
  const double b = static_cast<double>(n2);
  const double sigma = std::sqrt(a * b * (a + b + 1.0) / 12.0);
  const double z = std::max(0.0, a * b / 2.0 - 0.5) / sigma;
  return std::min(1.0, std::erfc(z / std::sqrt(2.0)));
}

}  // namespace decodebench
