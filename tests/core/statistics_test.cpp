// Summary statistics against hand-computed values (numpy's defaults for percentiles).
#include "core/stats/statistics.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace decodebench {
namespace {

TEST(Statistics, HandComputedSeries) {
  // 1..10 shuffled: mean 5.5, median 5.5, p90 = 9.1 (h = 9·0.9 = 8.1 → 9 + 0.1·1),
  // p99 = 9.91, sample stddev = sqrt(82.5 / 9).
  const std::vector<double> v = {7, 1, 10, 3, 5, 2, 9, 4, 8, 6};
  const Summary s = summarize(v);
  EXPECT_EQ(s.count, 10);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_DOUBLE_EQ(s.median, 5.5);
  EXPECT_NEAR(s.p90, 9.1, 1e-12);
  EXPECT_NEAR(s.p99, 9.91, 1e-12);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 10);
  EXPECT_NEAR(s.stddev, std::sqrt(82.5 / 9.0), 1e-12);
  // n = 10: j = floor(5 − 0.98·√10) = floor(1.901) = 1, k = ceil(6 + 3.099) = 10 → [1, 10].
  EXPECT_EQ(s.median_ci_low, 1);
  EXPECT_EQ(s.median_ci_high, 10);
}

TEST(Statistics, MedianCiNarrowsWithMoreSamples) {
  std::vector<double> v;
  for (int i = 1; i <= 1000; ++i) v.push_back(i);
  const Summary s = summarize(v);
  // j = floor(500 − 30.99) = 469, k = ceil(501 + 30.99) = 532.
  EXPECT_EQ(s.median_ci_low, 469);
  EXPECT_EQ(s.median_ci_high, 532);
  EXPECT_NEAR(s.median_noise(), (532.0 - 469.0) / 2.0 / 500.5, 1e-12);
}

TEST(Statistics, SingleValueAndEmpty) {
  const std::vector<double> one = {42};
  const Summary s = summarize(one);
  EXPECT_EQ(s.count, 1);
  EXPECT_EQ(s.median, 42);
  EXPECT_EQ(s.p99, 42);
  EXPECT_EQ(s.stddev, 0);
  const Summary e = summarize(std::vector<double>{});
  EXPECT_EQ(e.count, 0);
}

TEST(Statistics, JsonHasEveryField) {
  const std::vector<double> v = {1, 2, 3};
  const auto j = to_json(summarize(v));
  for (const char* k :
       {"count", "mean", "median", "p90", "p99", "min", "max", "stddev", "median_ci95"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_EQ(j["median"], 2.0);
}

}  // namespace
}  // namespace decodebench
