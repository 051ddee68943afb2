// The percentile bootstrap of a change (core/compare/bootstrap.hpp) against cases whose resampled
// distribution is known exactly.
#include "core/compare/bootstrap.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/error.hpp"
#include "core/stats/statistics.hpp"

namespace decodebench {
namespace {

TEST(Bootstrap, ResamplesGrowAsAlphaShrinks) {
  EXPECT_EQ(bootstrap_resamples(0.05), 2000);
  EXPECT_EQ(bootstrap_resamples(0.01), 2000);
  EXPECT_EQ(bootstrap_resamples(0.001), 20000);
  EXPECT_EQ(bootstrap_resamples(1e-4), 200000);
  EXPECT_EQ(bootstrap_resamples(1e-9), 200000);
  for (double bad : {0.0, 1.0, -0.1, std::nan("")}) {
    EXPECT_THROW((void)bootstrap_resamples(bad), Error) << bad;
  }
  EXPECT_DOUBLE_EQ(bootstrap_smallest_p(0.05), 2.0 / 2001.0);
  EXPECT_DOUBLE_EQ(bootstrap_smallest_p(1e-6), 2.0 / 200001.0);
  EXPECT_EQ(bootstrap_min_samples(ResampledStatistic::kMean), 30);
  EXPECT_EQ(bootstrap_min_samples(ResampledStatistic::kTokensPerS), 30);
  EXPECT_EQ(bootstrap_min_samples(ResampledStatistic::kP90), 30);
  EXPECT_EQ(bootstrap_min_samples(ResampledStatistic::kP99), 200);
}

// The walk over counts gives what percentile_sorted() gives on the resample written out.
TEST(Bootstrap, PercentileOfCountsIsThatOfTheWrittenOutResample) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t n = 1 + rng() % 40;
    std::vector<double> sorted;
    double v = 100;
    for (size_t i = 0; i < n; ++i) sorted.push_back(v += 1 + rng() % 3);
    std::vector<uint32_t> counts(n, 0);
    std::vector<double> resample;
    const size_t draws = 1 + rng() % 60;
    for (size_t i = 0; i < draws; ++i) ++counts[rng() % n];
    for (size_t i = 0; i < n; ++i) resample.insert(resample.end(), counts[i], sorted[i]);
    for (double p : {0.0, 50.0, 90.0, 99.0, 100.0}) {
      EXPECT_DOUBLE_EQ(percentile_of_counts(sorted, counts, p), percentile_sorted(resample, p))
          << "n " << n << " draws " << draws << " p " << p;
    }
  }
}

TEST(Bootstrap, ConstantSamplesGiveTheirChangeInEveryResample) {
  // Every resample of 1,000 ns against 1,100 ns is +10%: the interval is [10, 10], and no
  // resample falls at or below 0, so p = 2 · (0 + 1) / (2,000 + 1).
  const std::vector<double> base(50, 1000.0), cand(30, 1100.0);
  for (auto s : {ResampledStatistic::kMean, ResampledStatistic::kP90, ResampledStatistic::kP99}) {
    const BootstrapTests all = bootstrap_changes(cand, base, 0.05);
    EXPECT_EQ(all.resamples, 2000);
    const BootstrapTest& t = all.of(s);
    EXPECT_NEAR(t.ci_low_pct, 10.0, 1e-9);
    EXPECT_NEAR(t.ci_high_pct, 10.0, 1e-9);
    EXPECT_DOUBLE_EQ(t.p_value, 2.0 / 2001.0);
  }
  // tokens/s falls by 1 − 1/1.1.
  const BootstrapTest tps = bootstrap_changes(cand, base, 0.05).of(ResampledStatistic::kTokensPerS);
  EXPECT_NEAR(tps.ci_low_pct, 100.0 * (1 / 1.1 - 1), 1e-9);
  EXPECT_DOUBLE_EQ(tps.p_value, 2.0 / 2001.0);
  // Equal constant samples: every change is 0, on both sides at once: p = 1.
  const BootstrapTest same = bootstrap_changes(base, base, 0.05).of(ResampledStatistic::kMean);
  EXPECT_DOUBLE_EQ(same.p_value, 1.0);
  EXPECT_DOUBLE_EQ(same.ci_low_pct, 0.0);
  EXPECT_DOUBLE_EQ(same.ci_high_pct, 0.0);
}

TEST(Bootstrap, OneStallDecidesTheMeanOnlyWhenItIsDrawn) {
  // Baseline: 99 steps of 1,000 ns and one stall of 3,000 (mean 1,020); new: 100 of 1,010. A
  // resample of the baseline that draws the stall k times has the mean 1,000 + 20·k: with k = 0
  // (probability 0.99^100 = 0.366) the change is +1%, with k ≥ 1 it is below 0 (never 0). So
  // #{Δ* ≥ 0} ≈ 0.366 · B and p ≈ 2 · 0.366 = 0.732 (the standard error of a share of 2,000
  // draws is 0.011: 0.022 on p). The figure's change is −0.98%, yet the rank test would find the
  // new run slower (every new step is longer than 99 of the 100 baseline steps): the bootstrap
  // asks about the mean, which hangs on one stall, not about the bulk.
  std::vector<double> base(99, 1000.0), cand(100, 1010.0);
  base.push_back(3000.0);
  const BootstrapTest t = bootstrap_changes(cand, base, 0.05).of(ResampledStatistic::kMean);
  const double share_above = std::pow(0.99, 100);  // 0.366
  EXPECT_NEAR(t.p_value, 2.0 * share_above, 0.07);
  EXPECT_GT(t.p_value, 0.05);
  // The interval spans both: +1% (no stall drawn) down to the change with three or four stalls
  // (1,010 / 1,060 or 1,010 / 1,080: four or more come in 1.8% of resamples, so the 2.5th
  // percentile is three stalls, or four in a run of 2,000 with a few more of them; this seed's
  // run has 2.7%: the exact mixture of draws is the seed's).
  EXPECT_NEAR(t.ci_high_pct, 1.0, 1e-9);
  EXPECT_LE(t.ci_low_pct, 100.0 * (1010.0 / 1060.0 - 1) + 1e-9);
  EXPECT_GE(t.ci_low_pct, 100.0 * (1010.0 / 1080.0 - 1) - 1e-9);
}

TEST(Bootstrap, AShiftOfTheWholeSampleIsSignificantAndItsIntervalHoldsIt) {
  // 1,000 .. 2,990 ns against 1.2 times it: the mean, p90 and p99 all rise by exactly 20%. The
  // resampled means vary by about 577 / √200 = 41 ns (2%), far from cancelling 20%, so no
  // resample lands at or below 0: p = 2 / 2,001. The 95% interval holds 20% and lies within a
  // few standard errors of it.
  std::vector<double> base, cand;
  for (int i = 0; i < 200; ++i) {
    base.push_back(1000.0 + 10.0 * i);
    cand.push_back(1.2 * (1000.0 + 10.0 * i));
  }
  for (auto s : {ResampledStatistic::kMean, ResampledStatistic::kP90, ResampledStatistic::kP99}) {
    const BootstrapTest t = bootstrap_changes(cand, base, 0.05).of(s);
    EXPECT_DOUBLE_EQ(t.p_value, 2.0 / 2001.0);
    EXPECT_LT(t.ci_low_pct, 20.0);
    EXPECT_GT(t.ci_high_pct, 20.0);
    EXPECT_GT(t.ci_low_pct, 5.0);
    EXPECT_LT(t.ci_high_pct, 35.0);
  }
  // The same inputs give the same report: a fixed seed.
  const BootstrapTest a = bootstrap_changes(cand, base, 0.05).of(ResampledStatistic::kP99);
  const BootstrapTest b = bootstrap_changes(cand, base, 0.05).of(ResampledStatistic::kP99);
  EXPECT_EQ(a.ci_low_pct, b.ci_low_pct);
  EXPECT_EQ(a.ci_high_pct, b.ci_high_pct);
  EXPECT_EQ(a.p_value, b.p_value);
}

// At the boundary: of 2,000 changes, 49 at or below 0 give p = 2 · 50 / 2,001 = 0.04998 < 0.05
// and an interval clear of 0; 50 give p = 0.05097 and an interval that holds 0 (the percentile
// interval's interpolated 2.5th percentile, between the 50th and 51st values, would exclude it).
TEST(Bootstrap, TheIntervalEndsWhereTheTestTurns) {
  for (int below : {48, 49, 50, 51}) {
    std::vector<double> changes;
    for (int i = 0; i < 2000; ++i) changes.push_back(i < below ? -1.0 - i : 1.0 + i);
    const BootstrapTest up = test_of_changes(changes, 0.05);
    EXPECT_DOUBLE_EQ(up.p_value, 2.0 * (below + 1) / 2001.0) << below;
    EXPECT_EQ(up.p_value < 0.05, below <= 49) << below;
    EXPECT_EQ(up.ci_low_pct > 0, below <= 49) << below << " " << up.ci_low_pct;
    // The mirror image: the interval's top end turns below 0 at the same count.
    for (double& c : changes) c = -c;
    const BootstrapTest down = test_of_changes(changes, 0.05);
    EXPECT_DOUBLE_EQ(down.p_value, up.p_value) << below;
    EXPECT_EQ(down.ci_high_pct < 0, below <= 49) << below << " " << down.ci_high_pct;
  }
  // Exactly 0 counts on both sides: 2,000 zeros give p = 1 and the interval [0, 0].
  const BootstrapTest zeros = test_of_changes(std::vector<double>(2000, 0.0), 0.05);
  EXPECT_DOUBLE_EQ(zeros.p_value, 1.0);
  EXPECT_DOUBLE_EQ(zeros.ci_low_pct, 0.0);
  EXPECT_DOUBLE_EQ(zeros.ci_high_pct, 0.0);
  EXPECT_THROW((void)test_of_changes({}, 0.05), Error);
}

// The interval's end points are the order statistics that make "excludes 0" and "p < alpha" one
// statement, at any alpha: a verdict never shows a p above alpha with an interval clear of 0.
TEST(Bootstrap, TheIntervalExcludesZeroExactlyWhenPIsBelowAlpha) {
  std::mt19937 rng(11);
  int significant = 0, near = 0;
  for (int trial = 0; trial < 150; ++trial) {
    // A baseline of 30 steps at 1,000 ns with a few stalls and a new run of 30 at 1,000 + a shift:
    // the share of resamples on either side of 0 varies from case to case, often near alpha.
    std::vector<double> base(30, 1000.0), cand(30, 1000.0 + 5.0 * (rng() % 8));
    for (int i = 0; i < 1 + static_cast<int>(rng() % 3); ++i) base[rng() % 30] = 1200.0;
    for (const double alpha : {0.05, 0.2}) {
      const BootstrapTests all = bootstrap_changes(cand, base, alpha);
      for (const BootstrapTest& t : all.tests) {
        const bool clear = t.ci_low_pct > 0 || t.ci_high_pct < 0;
        EXPECT_EQ(t.p_value < alpha, clear)
            << "trial " << trial << " alpha " << alpha << " p " << t.p_value << " [" << t.ci_low_pct
            << ", " << t.ci_high_pct << "]";
        significant += t.p_value < alpha ? 1 : 0;
        near += t.p_value > alpha / 2 && t.p_value < 2 * alpha ? 1 : 0;
      }
    }
  }
  // The cases cover both outcomes and p near alpha.
  EXPECT_GT(significant, 50);
  EXPECT_GT(near, 20);
}

// Blocks of resamples carry their own seeds: the threads that run them change nothing.
TEST(Bootstrap, TheThreadCountChangesNothing) {
  std::mt19937 rng(3);
  // 1,000 a side: 2,000 resamples of 2,000 draws, so threads = 0 takes the machine's threads.
  std::vector<double> base, cand;
  for (int i = 0; i < 1000; ++i) {
    base.push_back(1000.0 + rng() % 200);
    cand.push_back(1010.0 + rng() % 200);
  }
  const BootstrapTests one = bootstrap_changes(cand, base, 0.05, 1);
  for (int threads : {2, 3, 7, 0}) {
    const BootstrapTests many = bootstrap_changes(cand, base, 0.05, threads);
    ASSERT_EQ(many.resamples, one.resamples);
    for (size_t s = 0; s < 4; ++s) {
      EXPECT_EQ(many.tests[s].ci_low_pct, one.tests[s].ci_low_pct) << threads << " " << s;
      EXPECT_EQ(many.tests[s].ci_high_pct, one.tests[s].ci_high_pct) << threads << " " << s;
      EXPECT_EQ(many.tests[s].p_value, one.tests[s].p_value) << threads << " " << s;
    }
  }
}

TEST(Bootstrap, EmptySamplesAreAnError) {
  const std::vector<double> one = {1.0}, none;
  EXPECT_THROW((void)bootstrap_changes(none, one, 0.05), Error);
  EXPECT_THROW((void)bootstrap_changes(one, none, 0.05), Error);
}

}  // namespace
}  // namespace decodebench
