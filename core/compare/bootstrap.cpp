#include "core/compare/bootstrap.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/stats/statistics.hpp"

namespace decodebench {

namespace {

constexpr uint64_t kSeed = 0x6465636f64656265;  // "decodebe": any fixed value keeps reports stable

// An index in [0, n) from 64 random bits by multiply-shift (Lemire, "Fast random integer
// generation in an interval", ACM TOMACS 29(1), 2019), without its rejection step: the bias is at
// most n / 2^64. std::uniform_int_distribution is not used, as its mapping differs between
// standard libraries.
size_t index_below(std::mt19937_64& rng, size_t n) {
  return static_cast<size_t>((static_cast<unsigned __int128>(rng()) * n) >> 64);
}

// One sample, sorted once; each draw() is the statistic of one resample of it.
class Resampler {
 public:
  Resampler(std::span<const double> values, ResampledStatistic statistic)
      : sorted_(values.begin(), values.end()), statistic_(statistic), counts_(values.size()) {
    std::sort(sorted_.begin(), sorted_.end());
  }

  double draw(std::mt19937_64& rng) {
    const size_t n = sorted_.size();
    if (statistic_ == ResampledStatistic::kMean || statistic_ == ResampledStatistic::kTokensPerS) {
      double sum = 0;
      for (size_t i = 0; i < n; ++i) sum += sorted_[index_below(rng, n)];
      return statistic_ == ResampledStatistic::kMean ? sum / static_cast<double>(n)
                                                     : static_cast<double>(n) * 1e9 / sum;
    }
    std::fill(counts_.begin(), counts_.end(), 0u);
    for (size_t i = 0; i < n; ++i) ++counts_[index_below(rng, n)];
    return percentile_of_counts(sorted_, counts_, statistic_ == ResampledStatistic::kP90 ? 90 : 99);
  }

 private:
  std::vector<double> sorted_;
  ResampledStatistic statistic_;
  std::vector<uint32_t> counts_;
};

}  // namespace

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
  return static_cast<int64_t>(std::clamp(std::ceil(20.0 / alpha), 2000.0, 200000.0));
}

BootstrapTest bootstrap_change(std::span<const double> candidate, std::span<const double> baseline,
                               ResampledStatistic statistic, double alpha) {
  if (candidate.empty() || baseline.empty()) {
    throw usage_error("bootstrap: each sample needs at least one value (got " +
                      std::to_string(candidate.size()) + " and " + std::to_string(baseline.size()) +
                      ")");
  }
  BootstrapTest t;
  t.resamples = bootstrap_resamples(alpha);
  std::vector<double> changes(static_cast<size_t>(t.resamples));
  // Blocks of resamples, each with its own seed, spread over threads: the same changes whatever
  // the number of threads (a 100,000-token run takes seconds per metric on one core).
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (t.resamples + kBlock - 1) / kBlock;
  std::atomic<int64_t> next{0};
  const auto work = [&] {
    Resampler c(candidate, statistic), b(baseline, statistic);
    for (int64_t blk; (blk = next.fetch_add(1)) < blocks;) {
      std::mt19937_64 rng(kSeed + static_cast<uint64_t>(blk) * 0x9E3779B97F4A7C15ull);
      const int64_t end = std::min(t.resamples, (blk + 1) * kBlock);
      for (int64_t i = blk * kBlock; i < end; ++i) {
        const double sc = c.draw(rng);
        const double sb = b.draw(rng);
        changes[static_cast<size_t>(i)] = (sc - sb) / sb * 100.0;
      }
    }
  };
  const int64_t draws = t.resamples * static_cast<int64_t>(candidate.size() + baseline.size());
  const int threads =
      draws < 4'000'000
          ? 1
          : static_cast<int>(std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, blocks));
  {
    std::vector<std::jthread> pool;
    for (int i = 1; i < threads; ++i) pool.emplace_back(work);
    work();
  }
  int64_t at_or_below = 0, at_or_above = 0;
  for (const double d : changes) {
    at_or_below += d <= 0 ? 1 : 0;
    at_or_above += d >= 0 ? 1 : 0;
  }
  std::sort(changes.begin(), changes.end());
  t.ci_low_pct = percentile_sorted(changes, 100.0 * alpha / 2.0);
  t.ci_high_pct = percentile_sorted(changes, 100.0 * (1.0 - alpha / 2.0));
  const double tail = static_cast<double>(std::min(at_or_below, at_or_above) + 1);
  t.p_value = std::min(1.0, 2.0 * tail / static_cast<double>(t.resamples + 1));
  return t;
}

}  // namespace decodebench
