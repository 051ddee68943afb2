// Summary statistics against hand-computed values (numpy's defaults for percentiles).
#include "core/stats/statistics.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/runner.hpp"

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
  EXPECT_TRUE(to_json(s)["stddev"].is_null());  // no spread from one sample
  EXPECT_EQ(to_json(summarize(std::vector<double>{1, 3}))["stddev"], std::sqrt(2.0));
  const Summary e = summarize(std::vector<double>{});
  EXPECT_EQ(e.count, 0);
}

// Below 6 samples no interval of order statistics covers 95% of the median's distribution
// ([min, max]: 1 − 2^(1−n), 93.75% at n = 5), so the JSON has null there; from 6 on [min, max]
// covers 96.9% and the interval is written.
TEST(Statistics, MedianCiIsNullBelowSixSamples) {
  const std::vector<double> five = {5, 1, 4, 2, 3};
  const Summary s5 = summarize(five);
  EXPECT_EQ(s5.median_ci_low, 1);  // kept for the conservative median_noise()
  EXPECT_EQ(s5.median_ci_high, 5);
  EXPECT_NEAR(s5.median_noise(), (5.0 - 1.0) / 2.0 / 3.0, 1e-12);
  EXPECT_TRUE(to_json(s5)["median_ci95"].is_null());
  const std::vector<double> six = {6, 1, 5, 2, 4, 3};
  const auto j6 = to_json(summarize(six));
  ASSERT_TRUE(j6["median_ci95"].is_array()) << j6;
  EXPECT_EQ(j6["median_ci95"][0], 1);
  EXPECT_EQ(j6["median_ci95"][1], 6);
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

TEST(Statistics, SlowStretchFindsStepsAboveTheTolerance) {
  // Median 100: 105 is not above 5%, 105.5 and 130 are; indices 2 and 5.
  const std::vector<double> v = {100, 99, 105.5, 105, 101, 130, 100};
  const SlowStretch s = slow_stretch(v, 100.0, 0.05);
  EXPECT_EQ(s.count, 2);
  EXPECT_EQ(s.first, 2);
  EXPECT_EQ(s.last, 5);
  EXPECT_EQ(s.worst, 130);
  EXPECT_EQ(slow_stretch(v, 200.0, 0.05).count, 0);
  EXPECT_EQ(slow_stretch(v, 200.0, 0.05).first, -1);
  EXPECT_EQ(slow_stretch(v, 0.0, 0.05).count, 0);
  EXPECT_EQ(slow_stretch({}, 100.0, 0.05).count, 0);
}

// The H200 case of round 8: 128 steps of 3.79 ms, 30 of them (79..108) at 4.2 ms.
TEST(Statistics, SlowStepsWarningNamesTheStretch) {
  std::vector<int64_t> ns(128, 3'790'000);
  for (size_t i = 79; i <= 108; ++i) ns[i] = 4'200'000;
  ns[100] = 4'310'000;
  const std::string w = slow_steps_warning("graph", ns);
  EXPECT_NE(w.find("pass 'graph': 30 of 128 timed steps (steps 79 to 108, counted from 0)"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("median 3790.0 µs, up to 4310.0 µs"), std::string::npos) << w;
  // mean = (98·3.79 + 29·4.2 + 4.31) / 128 ms = 3.887 ms: tokens/s 2.5% below the median's.
  EXPECT_NE(w.find("2.5% below"), std::string::npos) << w;
}

TEST(Statistics, SlowStepsWarningIgnoresSteadyShortAndSparseSeries) {
  std::vector<int64_t> steady(128, 1'000'000);
  // Half the steps 4% slower: the median is 1.02 ms, so none is more than 5% above it.
  for (size_t i = 0; i < steady.size(); i += 2) steady[i] = 1'040'000;
  EXPECT_EQ(slow_steps_warning("graph", steady), "");
  std::vector<int64_t> sparse(128, 1'000'000);
  for (size_t i : {3u, 50u, 90u, 120u, 127u, 10u}) sparse[i] = 3'000'000;  // 6 < 5% of 128
  EXPECT_EQ(slow_steps_warning("graph", sparse), "");
  std::vector<int64_t> few(19, 1'000'000);
  for (size_t i = 0; i < 10; ++i) few[i] = 2'000'000;  // under 20 steps: no judgement
  EXPECT_EQ(slow_steps_warning("graph", few), "");
  std::vector<int64_t> seven = sparse;
  seven[60] = 3'000'000;  // 7 = ceil(5% of 128) slow steps, mean 10.9% above the median
  EXPECT_NE(slow_steps_warning("eager", seven), "");
  std::vector<int64_t> mild(128, 1'000'000);
  for (size_t i = 0; i < 7; ++i) mild[i] = 1'060'000;  // 7 slow steps, mean 0.3% above: steady
  EXPECT_EQ(slow_steps_warning("graph", mild), "");
}

}  // namespace
}  // namespace decodebench
