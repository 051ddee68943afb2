#include "core/compare/bootstrap.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"

namespace decodebench {

namespace {

constexpr uint64_t kSeed = 0x6465636f64656265;  // "decodebe": any fixed value keeps reports stable
constexpr int64_t kMaxResamples = 200'000;

// An index in [0, n) from 64 random bits by multiply-shift (Lemire, "Fast random integer
// generation in an interval", ACM TOMACS 29(1), 2019), without its rejection step: the bias is at
// most n / 2^64. std::uniform_int_distribution is not used, as its mapping differs between
// standard libraries.
size_t index_below(std::mt19937_64& rng, size_t n) {
  return static_cast<size_t>((static_cast<unsigned __int128>(rng()) * n) >> 64);
}

using Figures = std::array<double, 4>;  // indexed by ResampledStatistic

// One sample, sorted once; each draw() gives the four statistics of one resample of it.
class Resampler {
 public:
  explicit Resampler(std::span<const double> values)
      : sorted_(values.begin(), values.end()), counts_(values.size()) {
    std::sort(sorted_.begin(), sorted_.end());
  }

  Figures draw(std::mt19937_64& rng) {
    const size_t n = sorted_.size();
    std::fill(counts_.begin(), counts_.end(), 0u);
    for (size_t i = 0; i < n; ++i) ++counts_[index_below(rng, n)];
    double sum = 0;
    for (size_t i = 0; i < n; ++i) sum += counts_[i] * sorted_[i];
    Figures f;
    f[static_cast<size_t>(ResampledStatistic::kMean)] = sum / static_cast<double>(n);
    f[static_cast<size_t>(ResampledStatistic::kTokensPerS)] = static_cast<double>(n) * 1e9 / sum;
    f[static_cast<size_t>(ResampledStatistic::kP90)] = percentile_of_counts(sorted_, counts_, 90);
    f[static_cast<size_t>(ResampledStatistic::kP99)] = percentile_of_counts(sorted_, counts_, 99);
    return f;
  }

 private:
  std::vector<double> sorted_;
  std::vector<uint32_t> counts_;
};

}  // namespace

int64_t bootstrap_min_samples(ResampledStatistic statistic) {
  switch (statistic) {
    case ResampledStatistic::kP99:
      return 200;
    default:
      return 30;
  }
}

double percentile_of_counts(std::span<const double> sorted, std::span<const uint32_t> counts,
                            double p) {
  size_t n = 0;
  for (const uint32_t c : counts) n += c;
  const double h = (static_cast<double>(n) - 1.0) * p / 100.0;  // as percentile_sorted()
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, n - 1);
  // The value of 0-based rank r lies in the first value, from the top, at which the copies
  // counted so far reach n − r (p90 and p99 sit near the top: a short walk).
  double v_hi = 0, v_lo = 0;
  bool have_hi = false;
  size_t above = 0;
  for (size_t i = sorted.size(); i-- > 0;) {
    above += counts[i];
    if (!have_hi && above >= n - hi) {
      v_hi = sorted[i];
      have_hi = true;
    }
    if (above >= n - lo) {
      v_lo = sorted[i];
      break;
    }
  }
  return v_lo + (h - static_cast<double>(lo)) * (v_hi - v_lo);
}

int64_t bootstrap_resamples(double alpha) {
  if (!(alpha > 0.0 && alpha < 1.0)) {
    throw usage_error("bootstrap: alpha must lie in (0, 1) (got " + std::to_string(alpha) + ")");
  }
  return static_cast<int64_t>(
      std::clamp(std::ceil(20.0 / alpha), 2000.0, static_cast<double>(kMaxResamples)));
}

double bootstrap_smallest_p(double alpha) {
  return 2.0 / static_cast<double>(bootstrap_resamples(alpha) + 1);
}

BootstrapTest test_of_changes(std::vector<double> changes, double alpha) {
  if (changes.empty() || !(alpha > 0.0 && alpha < 1.0)) {
    throw usage_error("bootstrap: no resampled changes, or alpha outside (0, 1)");
  }
  const auto b = static_cast<int64_t>(changes.size());
  int64_t at_or_below = 0, at_or_above = 0;
  for (const double x : changes) {
    at_or_below += x <= 0 ? 1 : 0;
    at_or_above += x >= 0 ? 1 : 0;
  }
  std::sort(changes.begin(), changes.end());
  // The interval's order statistics: p < alpha exactly when it excludes 0 (bootstrap.hpp), so k
  // is the largest count on the far side whose p, computed as below, is < alpha: about
  // ⌈alpha · (B + 1) / 2⌉ − 2, then stepped so that rounding cannot split the two.
  const auto p_of = [&](int64_t far) {
    return std::min(1.0, 2.0 * static_cast<double>(far + 1) / static_cast<double>(b + 1));
  };
  int64_t k = static_cast<int64_t>(std::ceil(alpha * static_cast<double>(b + 1) / 2.0)) - 2;
  while (k >= 0 && !(p_of(k) < alpha)) --k;
  while (k + 1 < b && p_of(k + 1) < alpha) ++k;
  k = std::clamp<int64_t>(k, 0, (b - 1) / 2);
  BootstrapTest t;
  t.ci_low_pct = changes[static_cast<size_t>(k)];
  t.ci_high_pct = changes[static_cast<size_t>(b - 1 - k)];
  t.p_value = p_of(std::min(at_or_below, at_or_above));
  return t;
}

BootstrapTests bootstrap_changes(std::span<const double> candidate,
                                 std::span<const double> baseline, double alpha, int threads) {
  if (candidate.empty() || baseline.empty()) {
    throw usage_error("bootstrap: each sample needs at least one value (got " +
                      std::to_string(candidate.size()) + " and " + std::to_string(baseline.size()) +
                      ")");
  }
  BootstrapTests out;
  out.resamples = bootstrap_resamples(alpha);
  const auto b_count = static_cast<size_t>(out.resamples);
  std::array<std::vector<double>, 4> changes;
  for (auto& c : changes) c.resize(b_count);
  // Blocks of resamples, each with its own seed, spread over threads: the same changes whatever
  // the number of threads.
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (out.resamples + kBlock - 1) / kBlock;
  std::atomic<int64_t> next{0};
  const auto work = [&] {
    Resampler c(candidate), b(baseline);
    for (int64_t blk; (blk = next.fetch_add(1)) < blocks;) {
      std::mt19937_64 rng(kSeed + static_cast<uint64_t>(blk) * 0x9E3779B97F4A7C15ull);
      const int64_t end = std::min(out.resamples, (blk + 1) * kBlock);
      for (int64_t i = blk * kBlock; i < end; ++i) {
        const Figures fc = c.draw(rng);
        const Figures fb = b.draw(rng);
        for (size_t s = 0; s < 4; ++s) {
          changes[s][static_cast<size_t>(i)] = (fc[s] - fb[s]) / fb[s] * 100.0;
        }
      }
    }
  };
  if (threads <= 0) {
    const int64_t draws = out.resamples * static_cast<int64_t>(candidate.size() + baseline.size());
    threads = draws < 4'000'000 ? 1 : static_cast<int>(std::thread::hardware_concurrency());
  }
  threads = static_cast<int>(std::clamp<int64_t>(threads, 1, blocks));
  {
    std::vector<std::jthread> pool;
    for (int i = 1; i < threads; ++i) pool.emplace_back(work);
    work();
  }
  for (size_t s = 0; s < 4; ++s) out.tests[s] = test_of_changes(std::move(changes[s]), alpha);
  return out;
}

}  // namespace decodebench
