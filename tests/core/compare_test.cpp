// `compare` logic on hand-built result and suite documents: matching, verdicts, exit codes, errors.
#include "core/compare/compare.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "core/stats/statistics.hpp"

namespace decodebench {
namespace {

// 1000, 1010, ..., 1630 ns: median 1315.
std::vector<double> ramp(int n = 64, double start = 1000, double step = 10) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(start + step * i);
  return v;
}

std::vector<double> scaled(std::vector<double> v, double factor, double offset = 0) {
  for (double& x : v) x = x * factor + offset;
  return v;
}

// A runs[] element as `decodebench run` writes it (the parts compare reads), stats computed from
// the samples with the same summarize() the runner uses.
nlohmann::json make_run(const std::vector<double>& samples, const std::string& device = "cpu0",
                        const std::string& graph = "cpu", bool with_gpu_ms = false) {
  nlohmann::json key = {{"model", "synthetic:smollm2-135m"},
                        {"shape", "2x576/h9kv3/ffn1536/v49152"},
                        {"dtype", "F16"},
                        {"backend", "cpu"},
                        {"graph", graph},
                        {"batch", 1},
                        {"device", device}};
  key["id"] =
      "model=synthetic:smollm2-135m|shape=2x576/h9kv3/ffn1536/v49152|dtype=F16|backend=cpu|"
      "graph=" +
      graph + "|batch=1|device=" + device;
  double total = 0;
  for (double s : samples) total += s;
  nlohmann::json run = {{"key", key},
                        {"label", graph},
                        {"results",
                         {{"samples_ns", samples},
                          {"stats",
                           {{"tpot_ns", to_json(summarize(samples))},
                            {"tokens_per_s", static_cast<double>(samples.size()) * 1e9 / total}}},
                          {"phases", nullptr},
                          {"phase_samples", nullptr}}}};
  if (with_gpu_ms) {
    const std::vector<double> gpu = scaled(samples, 1e-6);
    run["results"]["phases"] = {{"gpu_ms", to_json(summarize(gpu))}};
    run["results"]["phase_samples"] = {{"gpu_ms", gpu}};
  }
  return run;
}

nlohmann::json make_doc(std::vector<nlohmann::json> runs) {
  return {{"schema_version", "1.0"}, {"runs", runs}};
}

// A suite document of `results` (the parts compare reads).
nlohmann::json make_suite(std::vector<nlohmann::json> results) {
  return {{"schema_version", "1.0"},
          {"suite", {{"name", "s"}}},
          {"configurations", nlohmann::json::array()},
          {"results", results}};
}

CompareReport compare_docs(const nlohmann::json& base, const nlohmann::json& cand,
                           CompareOptions options = {}) {
  return compare_runs(load_runs(base, "base.json"), load_runs(cand, "new.json"), options);
}

const MetricComparison& only_metric(const CompareReport& r) {
  EXPECT_EQ(r.runs.size(), 1u);
  EXPECT_EQ(r.runs.at(0).metrics.size(), 1u);
  return r.runs.at(0).metrics.at(0);
}

// Runs `fn`, expecting decodebench::Error with exit 2 whose message contains every `parts`.
template <typename Fn>
void expect_usage_error(Fn fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    for (const auto& p : parts) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what() << " lacks " << p;
    }
  }
}

// `r` compared `runs` matched runs and gave exactly one note, `note`.
void expect_one_note(const CompareReport& r, size_t runs, const std::string& note) {
  ASSERT_EQ(r.runs.size(), runs);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0], note);
}

TEST(CompareVerdict, DecisionRuleTable) {
  // significant & large → direction; not significant & small → same; otherwise unclear. z > 0:
  // the new run's per-token times tend to be longer (slower).
  EXPECT_EQ(decide_verdict(+20, false, 0.001, +5, true, 0.05, 5), Verdict::kSlower);
  EXPECT_EQ(decide_verdict(-20, false, 0.001, -5, true, 0.05, 5), Verdict::kFaster);
  EXPECT_EQ(decide_verdict(-20, true, 0.001, +5, true, 0.05, 5),
            Verdict::kSlower);  // throughput fell
  EXPECT_EQ(decide_verdict(+20, true, 0.001, -5, true, 0.05, 5), Verdict::kFaster);
  EXPECT_EQ(decide_verdict(+1, false, 0.5, +0.5, true, 0.05, 5), Verdict::kSame);
  EXPECT_EQ(decide_verdict(+20, false, 0.5, +0.5, true, 0.05, 5),
            Verdict::kUnclear);  // not significant
  EXPECT_EQ(decide_verdict(+1, false, 0.001, +5, true, 0.05, 5), Verdict::kUnclear);  // small
  // The test pointing the other way: a slower figure with shorter times, a faster one with
  // longer times (slower or faster tokens/s alike) is unclear, never a regression.
  EXPECT_EQ(decide_verdict(+20, false, 0.001, -5, true, 0.05, 5), Verdict::kUnclear);
  EXPECT_EQ(decide_verdict(-20, false, 0.001, +5, true, 0.05, 5), Verdict::kUnclear);
  EXPECT_EQ(decide_verdict(-20, true, 0.001, -5, true, 0.05, 5), Verdict::kUnclear);
  EXPECT_EQ(decide_verdict(+20, true, 0.001, +5, true, 0.05, 5), Verdict::kUnclear);
  // Not a median (mean, p90, p99, tokens/s): the figure's change alone gives the direction.
  EXPECT_EQ(decide_verdict(+20, false, 0.001, -5, false, 0.05, 5), Verdict::kSlower);
  EXPECT_EQ(decide_verdict(+20, true, 0.001, +5, false, 0.05, 5), Verdict::kFaster);
  EXPECT_TRUE(change_and_test_disagree(+20, false, -5));
  EXPECT_TRUE(change_and_test_disagree(+20, true, +5));
  EXPECT_FALSE(change_and_test_disagree(+20, false, +5));
  EXPECT_FALSE(change_and_test_disagree(-20, true, +5));
  // Threshold 0: the test alone decides; an insignificant change is "same", even a large one.
  EXPECT_EQ(decide_verdict(+20, false, 0.5, +0.5, true, 0.05, 0), Verdict::kSame);
  EXPECT_EQ(decide_verdict(0, false, 0.5, 0, true, 0.05, 0), Verdict::kSame);
  EXPECT_EQ(decide_verdict(+0.1, false, 0.001, +5, true, 0.05, 0), Verdict::kSlower);
  EXPECT_EQ(decide_verdict(-0.1, true, 0.001, +5, true, 0.05, 0), Verdict::kSlower);
  EXPECT_EQ(decide_verdict(+0.1, false, 0.001, -5, true, 0.05, 0), Verdict::kUnclear);
  EXPECT_EQ(decide_verdict(0, false, 0.001, +5, true, 0.05, 0),
            Verdict::kUnclear);  // equal medians
  // Boundaries: |change| = threshold is large; p = alpha is not significant.
  EXPECT_EQ(decide_verdict(+5, false, 0.001, +5, true, 0.05, 5), Verdict::kSlower);
  EXPECT_EQ(decide_verdict(+1, false, 0.05, +2, true, 0.05, 5), Verdict::kSame);
}

TEST(Compare, AMedianMovingAgainstTheTokensIsUnclearWithANote) {
  // Baseline: 51 tokens of 1,000,000 ns and 50 of 1,100,000 (median 1,000,000). New: 50 of
  // 900,000 and 51 of 1,060,000 (median 1,060,000). The median rose 6%, yet most new tokens are
  // shorter: U (the new tokens' wins) = 51·51 (1,060k above the 51 baseline 1,000k; 900k wins
  // none) = 2,601 of 10,201, so z < 0, p far below 0.05. Before, the rule read "slower" from the
  // median's sign alone and failed the job (exit 1).
  std::vector<double> base(51, 1'000'000.0), cand(50, 900'000.0);
  base.insert(base.end(), 50, 1'100'000.0);
  cand.insert(cand.end(), 51, 1'060'000.0);
  CompareOptions o;
  o.metrics = {"tpot_median", "tokens_per_s"};
  const CompareReport r = compare_docs(make_doc({make_run(base)}), make_doc({make_run(cand)}), o);
  ASSERT_EQ(r.runs.size(), 1u);
  ASSERT_EQ(r.runs[0].metrics.size(), 2u);
  const MetricComparison& median = r.runs[0].metrics[0];
  EXPECT_NEAR(median.change_pct, 6.0, 1e-9);
  EXPECT_DOUBLE_EQ(median.test.u, 51.0 * 51);
  EXPECT_LT(median.test.z, -3.0);
  EXPECT_LT(median.test.p_value, 1e-3);
  EXPECT_EQ(median.verdict, Verdict::kUnclear);
  // tokens/s agrees with the test (mean step 1,049,505 → 980,792 ns: +7.0%): faster.
  EXPECT_EQ(r.runs[0].metrics[1].verdict, Verdict::kFaster);
  EXPECT_EQ(r.exit_code(), ExitCode::kOk);
  expect_one_note(r, 1,
                  "tpot_median: the change and the rank test point opposite ways in 1 of 1 "
                  "matched run(s): the median moved past the threshold one way while most "
                  "per-token times, by the test, moved the other: unclear, not slower or faster "
                  "(a run of two speeds can do that to a median; look at the per-token samples)");
  // The tail and the throughput keep their own direction: a change that makes most steps 3%
  // shorter and adds a stall of 3 ms every 20 steps is a p99 and tokens/s regression, whatever
  // the test says of the bulk (z < 0).
  std::vector<double> steady(200, 1'000'000.0), stalls;
  for (int i = 0; i < 200; ++i) stalls.push_back(i % 20 == 19 ? 4'000'000.0 : 970'000.0);
  o.metrics = {"tpot_p99", "tokens_per_s", "tpot_mean"};
  const CompareReport tail =
      compare_docs(make_doc({make_run(steady)}), make_doc({make_run(stalls)}), o);
  ASSERT_EQ(tail.runs.size(), 1u);
  // (The rank test's z would be below −3 here; these metrics are tested by resampling their own
  // figures: p99 4 ms against 1 ms, the mean 1.12 ms against 1 ms, in every resample.)
  for (const MetricComparison& m : tail.runs[0].metrics) {
    EXPECT_TRUE(m.bootstrap) << m.metric;
    EXPECT_LT(m.p_value, 0.01) << m.metric;
    EXPECT_EQ(m.verdict, Verdict::kSlower) << m.metric << " " << m.change_pct;
  }
  EXPECT_EQ(tail.exit_code(), ExitCode::kRuntime);
  EXPECT_TRUE(tail.notes.empty());
  // One stall in the baseline (300 ms among 199 steps of 1 ms) makes its mean step 2.5 times as
  // long, so the new run's 10% longer steps raise tokens/s by 127%. That figure hangs on the one
  // stall: 37% of the baseline's resamples (0.995^200) leave it out and show tokens/s 9% lower,
  // so the bootstrap's p is about 0.73 and tokens/s is unclear (before the bootstrap, the rank
  // test's p made it "faster"). The median says slower, and the job fails on it.
  std::vector<double> stalled(199, 1'000'000.0), slow(200, 1'100'000.0);
  stalled.push_back(300'000'000.0);
  o.metrics = {"tokens_per_s", "tpot_median"};
  const CompareReport s =
      compare_docs(make_doc({make_run(stalled)}), make_doc({make_run(slow)}), o);
  ASSERT_EQ(s.runs.size(), 1u);
  const MetricComparison& tps = s.runs[0].metrics[0];
  EXPECT_NEAR(tps.change_pct, 100.0 * (2.495 / 1.1 - 1), 1e-6);
  EXPECT_NEAR(tps.p_value, 2 * std::pow(0.995, 200), 0.07);
  EXPECT_NEAR(tps.boot.ci_low_pct, 100.0 * (1 / 1.1 - 1), 1e-6);
  EXPECT_EQ(tps.verdict, Verdict::kUnclear);
  EXPECT_EQ(s.runs[0].metrics[1].verdict, Verdict::kSlower);
  EXPECT_EQ(s.exit_code(), ExitCode::kRuntime);
}

// Which metrics get the rank test's direction check (MetricSpec::median): the medians, which
// follow the bulk of the tokens as the test does; not the mean, the tail or tokens/s.
TEST(CompareVerdict, OnlyMediansCheckTheTestsDirection) {
  std::vector<std::string> medians, others;
  for (const MetricSpec& m : compare_metrics()) (m.median ? medians : others).push_back(m.name);
  EXPECT_EQ(medians, (std::vector<std::string>{"tpot_median", "gpu_ms", "h2d", "launch", "wait",
                                               "argmax", "phase_total"}));
  EXPECT_EQ(others,
            (std::vector<std::string>{"tpot_mean", "tpot_p90", "tpot_p99", "tokens_per_s"}));
}

TEST(CompareVerdict, ThresholdParsing) {
  EXPECT_DOUBLE_EQ(parse_threshold_percent("5%"), 5.0);
  EXPECT_DOUBLE_EQ(parse_threshold_percent("2.5"), 2.5);
  EXPECT_DOUBLE_EQ(parse_threshold_percent("0"), 0.0);
  for (const char* bad : {"", "%", "five", "-1%", "5%%", "1e9", "nan"}) {
    expect_usage_error([&] { (void)parse_threshold_percent(bad); }, {"--threshold"});
  }
}

TEST(Compare, IdenticalSamplesAreTheSameAndExitZero) {
  const auto doc = make_doc({make_run(ramp())});
  const CompareReport r = compare_docs(doc, doc);
  const MetricComparison& m = only_metric(r);
  EXPECT_EQ(m.metric, "tpot_median");
  EXPECT_DOUBLE_EQ(m.baseline, 1315.0);
  EXPECT_DOUBLE_EQ(m.candidate, 1315.0);
  EXPECT_DOUBLE_EQ(m.change_pct, 0.0);
  EXPECT_DOUBLE_EQ(m.test.p_value, 1.0);
  EXPECT_EQ(m.verdict, Verdict::kSame);
  EXPECT_EQ(r.exit_code(), ExitCode::kOk);
  EXPECT_TRUE(r.only_in_baseline.empty());
  EXPECT_TRUE(r.only_in_candidate.empty());
}

TEST(Compare, TwentyPercentSlowerIsARegression) {
  const CompareReport r =
      compare_docs(make_doc({make_run(ramp())}), make_doc({make_run(scaled(ramp(), 1.2))}));
  const MetricComparison& m = only_metric(r);
  EXPECT_NEAR(m.change_pct, 20.0, 1e-9);
  EXPECT_DOUBLE_EQ(m.candidate, 1315.0 * 1.2);
  EXPECT_LT(m.test.p_value, 1e-6);
  EXPECT_GT(m.test.z, 0.0);  // new samples larger
  EXPECT_EQ(m.n_baseline, 64);
  EXPECT_EQ(m.n_candidate, 64);
  EXPECT_EQ(m.verdict, Verdict::kSlower);
  EXPECT_EQ(r.count(Verdict::kSlower), 1);
  EXPECT_EQ(r.exit_code(), ExitCode::kRuntime);
}

TEST(Compare, TwentyPercentFasterIsNotARegressionAndThroughputAgrees) {
  CompareOptions o;
  o.metrics = {"tpot_median", "tokens_per_s"};
  const CompareReport r =
      compare_docs(make_doc({make_run(ramp())}), make_doc({make_run(scaled(ramp(), 0.8))}), o);
  ASSERT_EQ(r.runs.size(), 1u);
  ASSERT_EQ(r.runs[0].metrics.size(), 2u);
  EXPECT_EQ(r.runs[0].metrics[0].verdict, Verdict::kFaster);
  EXPECT_NEAR(r.runs[0].metrics[0].change_pct, -20.0, 1e-9);
  // tokens/s = n / Σt rises by 1/0.8 − 1 = 25%; higher is better → faster.
  EXPECT_EQ(r.runs[0].metrics[1].metric, "tokens_per_s");
  EXPECT_NEAR(r.runs[0].metrics[1].change_pct, 25.0, 1e-9);
  EXPECT_EQ(r.runs[0].metrics[1].verdict, Verdict::kFaster);
  EXPECT_EQ(r.exit_code(), ExitCode::kOk);
}

TEST(Compare, HeavyOverlapWithinTheThresholdIsTheSame) {
  // new = base + 5 ns: U = Σ(i+1) = 2080 vs E[U] = 2048, σ = 209.84 → z = 0.15, p = 0.88;
  // median 1315 → 1320: +0.38% < 5%.
  const CompareReport r =
      compare_docs(make_doc({make_run(ramp())}), make_doc({make_run(scaled(ramp(), 1.0, 5.0))}));
  const MetricComparison& m = only_metric(r);
  EXPECT_DOUBLE_EQ(m.test.u, 2080.0);
  EXPECT_NEAR(m.test.p_value,
              std::erfc((32.0 - 0.5) / std::sqrt(64.0 * 64 * 129 / 12) / std::sqrt(2.0)), 1e-12);
  EXPECT_GT(m.test.p_value, 0.8);
  EXPECT_NEAR(m.change_pct, 5.0 / 1315.0 * 100.0, 1e-9);
  EXPECT_EQ(m.verdict, Verdict::kSame);
  EXPECT_EQ(r.exit_code(), ExitCode::kOk);
}

TEST(Compare, TinySamplesWithALargeChangeAreUnclear) {
  // Three tokens each, fully separated, +10%: p = 0.0809 (the smallest for 3 vs 3 distinct) is
  // not significant, the change is above 5% → unclear, and unclear is not a regression.
  const CompareReport r = compare_docs(make_doc({make_run({1000, 1010, 1020})}),
                                       make_doc({make_run({1100, 1110, 1120})}));
  const MetricComparison& m = only_metric(r);
  EXPECT_NEAR(m.test.p_value, 0.0808555983700523, 1e-12);
  EXPECT_NEAR(m.change_pct, 100.0 * 100.0 / 1010.0, 1e-9);
  EXPECT_EQ(m.verdict, Verdict::kUnclear);
  EXPECT_EQ(r.exit_code(), ExitCode::kOk);
}

TEST(Compare, TooFewSamplesForTheTestAreUnclearNotTheSame) {
  // One token a side: even complete separation gives p = 1, so a +0.5% change (below 5%) is not
  // evidence of "same": unclear, with a note naming the counts; still exit 0.
  const CompareReport r = compare_docs(make_doc({make_run({1000})}), make_doc({make_run({1005})}));
  const MetricComparison& m = only_metric(r);
  EXPECT_DOUBLE_EQ(m.test.p_value, 1.0);
  EXPECT_NEAR(m.change_pct, 0.5, 1e-9);
  EXPECT_EQ(m.verdict, Verdict::kUnclear);
  EXPECT_EQ(r.exit_code(), ExitCode::kOk);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(
      r.notes[0].find("too few samples for a test in 1 of 1 matched run(s) "
                      "(tpot_median: 1 against 1 samples, smallest p of the rank test without ties "
                      "1, not below "
                      "alpha 0.05)"),
      std::string::npos)
      << r.notes[0];
  // Identical single tokens are no better: unclear.
  EXPECT_EQ(
      only_metric(compare_docs(make_doc({make_run({1000})}), make_doc({make_run({1000})}))).verdict,
      Verdict::kUnclear);
  // Four a side can reach p = 0.0304 < 0.05: an equal pair is the same, with no note.
  const CompareReport four = compare_docs(make_doc({make_run({1000, 1010, 1020, 1030})}),
                                          make_doc({make_run({1000, 1010, 1020, 1030})}));
  EXPECT_EQ(only_metric(four).verdict, Verdict::kSame);
  EXPECT_TRUE(four.notes.empty());
  // A looser alpha makes three a side enough (smallest p 0.0809 < 0.1).
  CompareOptions loose;
  loose.alpha = 0.1;
  const CompareReport three = compare_docs(make_doc({make_run({1000, 1010, 1020})}),
                                           make_doc({make_run({1000, 1010, 1020})}), loose);
  EXPECT_EQ(only_metric(three).verdict, Verdict::kSame);
  EXPECT_TRUE(three.notes.empty());
  // Three tied values a side, +6%: the tie correction gives p = 0.0469 < 0.05, which would read
  // "slower"; with three tokens a side it is unclear, not a regression.
  const CompareReport tied = compare_docs(make_doc({make_run({1000, 1000, 1000})}),
                                          make_doc({make_run({1060, 1060, 1060})}));
  EXPECT_NEAR(only_metric(tied).test.p_value, 0.0469, 1e-4);
  EXPECT_EQ(only_metric(tied).verdict, Verdict::kUnclear);
  EXPECT_EQ(tied.exit_code(), ExitCode::kOk);
  EXPECT_EQ(tied.notes.size(), 1u);
  // The bootstrap has no floor of its own: one token a side resamples to one change (+20%) every
  // time, p = 2 / 2,001. The rank test's floor keeps it unclear too.
  CompareOptions mean;
  mean.metrics = {"tpot_mean", "tpot_p99"};
  const CompareReport one =
      compare_docs(make_doc({make_run({1000})}), make_doc({make_run({1200})}), mean);
  ASSERT_EQ(one.runs.size(), 1u);
  for (const MetricComparison& m : one.runs[0].metrics) {
    EXPECT_TRUE(m.bootstrap) << m.metric;
    EXPECT_DOUBLE_EQ(m.p_value, 2.0 / 2001.0) << m.metric;
    EXPECT_EQ(m.verdict, Verdict::kUnclear) << m.metric;
  }
  EXPECT_EQ(one.exit_code(), ExitCode::kOk);
  ASSERT_EQ(one.notes.size(), 2u);
  EXPECT_NE(one.notes[1].find("too few samples for a test in 1 of 1 matched run(s) (tpot_p99: 1 "
                              "against 1 samples"),
            std::string::npos)
      << one.notes[1];
}

TEST(Compare, SignificantButBelowALargeThresholdIsUnclear) {
  CompareOptions o;
  o.threshold_pct = 25;
  const CompareReport r =
      compare_docs(make_doc({make_run(ramp())}), make_doc({make_run(scaled(ramp(), 1.2))}), o);
  EXPECT_EQ(only_metric(r).verdict, Verdict::kUnclear);
  EXPECT_EQ(r.exit_code(), ExitCode::kOk);
}

TEST(Compare, MatchesByKeyAndReportsUnmatchedRuns) {
  const auto base = make_doc({make_run(ramp(), "cpu0", "cpu"), make_run(ramp(), "cpu0", "eager")});
  const auto cand =
      make_doc({make_run(scaled(ramp(), 1.2), "cpu0", "eager"), make_run(ramp(), "cpu0", "graph")});
  const CompareReport r = compare_docs(base, cand);
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_NE(r.runs[0].id.find("graph=eager"), std::string::npos);
  EXPECT_EQ(r.runs[0].metrics[0].verdict, Verdict::kSlower);
  ASSERT_EQ(r.only_in_baseline.size(), 1u);
  EXPECT_NE(r.only_in_baseline[0].find("graph=cpu"), std::string::npos);
  ASSERT_EQ(r.only_in_candidate.size(), 1u);
  EXPECT_NE(r.only_in_candidate[0].find("graph=graph"), std::string::npos);
}

TEST(Compare, RepeatedKeysMatchInOrder) {
  // Two runs with the same key (e.g. a suite sweeping --tokens): the first matches the first.
  const auto base = make_doc({make_run(ramp()), make_run(ramp())});
  const auto cand = make_doc({make_run(ramp()), make_run(scaled(ramp(), 1.2))});
  const CompareReport r = compare_docs(base, cand);
  ASSERT_EQ(r.runs.size(), 2u);
  EXPECT_EQ(r.runs[0].metrics[0].verdict, Verdict::kSame);
  EXPECT_EQ(r.runs[1].metrics[0].verdict, Verdict::kSlower);
  EXPECT_EQ(r.runs[1].id, r.runs[0].id + "#2");
}

TEST(Compare, SuiteDocumentsAreReadWithTheirFailures) {
  nlohmann::json suite = {
      {"schema_version", "1.0"},
      {"suite", {{"name", "s"}}},
      {"configurations",
       {{{"label", "layers=2"}, {"status", "ok"}, {"error", nullptr}},
        {{"label", "layers=4"}, {"status", "failed"}, {"error", "no CUDA device"}}}},
      {"results", {make_doc({make_run(ramp(), "cpu0", "cpu")})}}};
  const LoadedRuns loaded = load_runs(suite, "suite.json");
  EXPECT_EQ(loaded.kind, "suite");
  ASSERT_EQ(loaded.runs.size(), 1u);
  EXPECT_EQ(loaded.runs[0].origin, "suite.json: results[0]");
  ASSERT_EQ(loaded.failures.size(), 1u);
  EXPECT_NE(loaded.failures[0].find("no CUDA device"), std::string::npos);
  // A suite against a plain result document with the same run.
  const CompareReport r =
      compare_runs(loaded, load_runs(make_doc({make_run(ramp())}), "r.json"), {});
  EXPECT_EQ(only_metric(r).verdict, Verdict::kSame);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("layers=4"), std::string::npos);
}

TEST(Compare, SchemaVersionMismatchIsExit2) {
  auto v2 = make_doc({make_run(ramp())});
  v2["schema_version"] = "2.0";
  expect_usage_error([&] { (void)load_runs(v2, "new.json"); },
                     {"new.json", "schema_version '2.0'", "1.0"});
  nlohmann::json suite = {
      {"schema_version", "0.9"}, {"suite", {}}, {"results", nlohmann::json::array()}};
  expect_usage_error([&] { (void)load_runs(suite, "s.json"); }, {"s.json", "suite schema_version"});
  // A result inside a suite with another version.
  nlohmann::json mixed = {{"schema_version", "1.0"}, {"suite", {}}, {"results", {v2}}};
  expect_usage_error([&] { (void)load_runs(mixed, "m.json"); }, {"m.json: results[0]", "2.0"});
  // The number 1.0 is not the string "1.0" the schema names.
  auto number = make_doc({make_run(ramp())});
  number["schema_version"] = 1.0;
  expect_usage_error([&] { (void)load_runs(number, "n.json"); },
                     {"n.json", "result schema_version is 1.0, not a string"});
  nlohmann::json number_suite = {
      {"schema_version", 1.0}, {"suite", {}}, {"results", nlohmann::json::array()}};
  expect_usage_error([&] { (void)load_runs(number_suite, "ns.json"); },
                     {"ns.json", "suite schema_version is 1.0, not a string"});
}

TEST(Compare, UnknownFormatAndMissingSamplesAreExit2) {
  expect_usage_error(
      [] {
        (void)load_runs(nlohmann::json{{"schema_version", "1.0"}}, "x.json");
      },
      {"x.json", "unknown format"});
  expect_usage_error([] { (void)load_runs(nlohmann::json::array(), "a.json"); },
                     {"a.json", "not a JSON object"});
  auto no_samples = make_doc({make_run(ramp())});
  no_samples["runs"][0]["results"]["samples_ns"] = nlohmann::json::array();
  expect_usage_error([&] { (void)load_runs(no_samples, "n.json"); },
                     {"n.json: runs[0]", "samples"});
  no_samples["runs"][0]["results"].erase("samples_ns");
  expect_usage_error([&] { (void)load_runs(no_samples, "n.json"); }, {"samples"});
  auto no_key = make_doc({make_run(ramp())});
  no_key["runs"][0].erase("key");
  expect_usage_error([&] { (void)load_runs(no_key, "k.json"); }, {"k.json: runs[0]", "key.id"});
}

// compare reports the change from the stored median and tests it on the samples: a file whose two
// disagree (samples scaled by hand: the verdict would say "faster" for 10x slower samples) and
// impossible step or phase times are input errors.
TEST(Compare, SamplesThatContradictTheirStatsAreExit2) {
  auto edited = make_doc({make_run(ramp())});
  auto& samples = edited["runs"][0]["results"]["samples_ns"];
  for (auto& v : samples) v = v.get<double>() * 10;
  expect_usage_error([&] { (void)load_runs(edited, "e.json"); },
                     {"e.json: runs[0]", "tpot_ns.median", "not the median of results.samples_ns"});
  // A median 1 ns off a 7-digit one: both numbers in full, so they visibly differ.
  auto off = make_doc({make_run(ramp(64, 4146170))});
  off["runs"][0]["results"]["stats"]["tpot_ns"]["median"] = 4146486.0;
  expect_usage_error([&] { (void)load_runs(off, "o.json"); },
                     {"median (4146486 ns) is not the median of results.samples_ns (4146485 ns)"});
  // The other stored figures compare reports: tokens/s −1 was reported as a −100% change, a p99
  // of 0 taken as is.
  for (const auto& [path, value, text] :
       {std::tuple{"/tokens_per_s", -1.0, "tokens_per_s (-1) is not the steps per second"},
        std::tuple{"/tpot_ns/p99", 0.0, "tpot_ns.p99 (0 ns) is not the p99"},
        std::tuple{"/tpot_ns/mean", 1e308, "tpot_ns.mean (1e+308 ns) is not the mean"}}) {
    auto doc = make_doc({make_run(ramp())});
    doc["runs"][0]["results"]["stats"][nlohmann::json::json_pointer(path)] = value;
    expect_usage_error([&] { (void)load_runs(doc, "s.json"); },
                       {"s.json: runs[0]", text, "changed after decodebench wrote it"});
  }
  for (const double bad : {-5.0, 0.0}) {
    auto doc = make_doc({make_run(ramp())});
    doc["runs"][0]["results"]["samples_ns"][3] = bad;
    expect_usage_error([&] { (void)load_runs(doc, "b.json"); },
                       {"b.json: runs[0]",
                        bad < 0 ? "samples_ns holds -5 (" : "samples_ns holds 0 (", "positive"});
  }
  CompareOptions o;
  o.metrics = {"gpu_ms"};
  auto phase = make_doc({make_run(ramp(), "g", "eager", true)});
  phase["runs"][0]["results"]["phase_samples"]["gpu_ms"][0] = -1.0;
  expect_usage_error(
      [&] { (void)compare_docs(phase, make_doc({make_run(ramp(), "g", "eager", true)}), o); },
      {"phase_samples.gpu_ms holds", "non-negative"});
  // The stored median of a file decodebench wrote matches (an even count: the mean of the middle
  // two, as summarize() computes it).
  EXPECT_NO_THROW((void)load_runs(make_doc({make_run({400, 100, 300, 200})}), "ok.json"));
}

TEST(Compare, NothingMatchedIsExit2AndShowsKeys) {
  const auto base = make_doc({make_run(ramp(), "Xeon (16 threads)")});
  const auto cand = make_doc({make_run(ramp(), "EPYC (2 threads)")});
  expect_usage_error(
      [&] { (void)compare_docs(base, cand); },
      {"nothing matched", "base.json", "new.json", "Xeon (16 threads)", "EPYC (2 threads)"});
}

TEST(Compare, PhaseMetricsNeedPhaseSamplesOnBothSides) {
  CompareOptions o;
  o.metrics = {"gpu_ms"};
  // Both sides measured: judged on phase_samples.gpu_ms.
  const CompareReport r =
      compare_docs(make_doc({make_run(ramp(), "g", "eager", true)}),
                   make_doc({make_run(scaled(ramp(), 1.2), "g", "eager", true)}), o);
  EXPECT_NEAR(only_metric(r).baseline, 1315.0 * 1e-6, 1e-15);
  EXPECT_EQ(only_metric(r).verdict, Verdict::kSlower);
  // One side only: missing samples.
  expect_usage_error(
      [&] {
        (void)compare_docs(make_doc({make_run(ramp(), "g", "eager", true)}),
                           make_doc({make_run(ramp(), "g", "eager", false)}), o);
      },
      {"missing samples", "gpu_ms", "base.json", "new.json"});
  // Neither side: no run has it → exit 2.
  expect_usage_error(
      [&] { (void)compare_docs(make_doc({make_run(ramp())}), make_doc({make_run(ramp())}), o); },
      {"gpu_ms", "--phase-timing"});
}

TEST(Compare, InvalidOptionsAreExit2) {
  const auto doc = make_doc({make_run(ramp())});
  CompareOptions o;
  o.metrics = {"latency"};
  expect_usage_error([&] { (void)compare_docs(doc, doc, o); }, {"unknown metric 'latency'"});
  o.metrics = {"tpot_median", "tokens_per_s", "tpot_median"};  // its rows would count twice
  expect_usage_error([&] { (void)compare_docs(doc, doc, o); },
                     {"--metric: 'tpot_median' is given twice"});
  o = {};
  o.alpha = 1.5;
  expect_usage_error([&] { (void)compare_docs(doc, doc, o); }, {"--alpha"});
  // Below the bootstrap's smallest p (2 / 200,001 at most resamples) its metrics could never be
  // significant: refused, naming the limit; the rank test's metrics take any alpha.
  o.alpha = 1e-6;
  EXPECT_EQ(only_metric(compare_docs(doc, doc, o)).verdict, Verdict::kSame);
  o.metrics = {"tpot_median", "tpot_p90"};
  expect_usage_error([&] { (void)compare_docs(doc, doc, o); },
                     {"--alpha 1e-06 is below the smallest p the bootstrap of tpot_p90 can give "
                      "(1e-05 with 200000 resamples): use --alpha 1e-05 or more"});
  o.alpha = 1e-5;  // 2 / 200,001 < 1e-5
  EXPECT_EQ(compare_docs(doc, doc, o).runs.at(0).metrics.size(), 2u);
}

// The bootstrap needs 30 samples a side, p99 200 (n · (1 − 0.99) ≥ 2): with 100 steps a side, a
// tripled tail is unclear for p99, with a note, while p90 and the mean decide; with 29 a side all
// three are unclear, and with 30 the mean decides again.
TEST(Compare, TheBootstrapNeedsThirtySamplesASideAndP99TwoHundred) {
  std::vector<double> base(100, 1000.0), cand(100, 1000.0);
  for (int i = 0; i < 20; ++i) cand[static_cast<size_t>(i) * 5] = 3000.0;
  for (int i = 0; i < 15; ++i) base[static_cast<size_t>(i) * 6] = 1100.0;
  CompareOptions o;
  o.metrics = {"tpot_p99", "tpot_p90", "tpot_mean"};
  const CompareReport r = compare_docs(make_doc({make_run(base)}), make_doc({make_run(cand)}), o);
  ASSERT_EQ(r.runs.size(), 1u);
  const auto& m = r.runs[0].metrics;
  ASSERT_EQ(m.size(), 3u);
  EXPECT_NEAR(m[0].change_pct, 100.0 * (3000.0 / 1100.0 - 1), 1e-9);
  EXPECT_LT(m[0].p_value, 0.05);  // the resamples alone would call it significant
  EXPECT_EQ(m[0].verdict, Verdict::kUnclear);
  EXPECT_EQ(m[1].verdict, Verdict::kSlower);
  EXPECT_EQ(m[2].verdict, Verdict::kSlower);
  expect_one_note(r, 1,
                  "too few samples for a test in 1 of 1 matched run(s) (tpot_p99: 100 against 100 "
                  "samples; its bootstrap needs 200 a side): "
                  "unclear whatever the change; time more tokens (--tokens, --min-time)");
  // 29 a side: the same tail; the mean and p90 too are unclear now, one note each.
  base.resize(29);
  cand.resize(29);
  const CompareReport few = compare_docs(make_doc({make_run(base)}), make_doc({make_run(cand)}), o);
  ASSERT_EQ(few.runs.size(), 1u);
  for (const MetricComparison& x : few.runs[0].metrics) {
    EXPECT_EQ(x.verdict, Verdict::kUnclear) << x.metric;
  }
  EXPECT_LT(few.runs[0].metrics[2].p_value, 0.05);  // the mean's resamples alone: significant
  ASSERT_EQ(few.notes.size(), 3u);
  EXPECT_NE(few.notes[0].find("(tpot_mean: 29 against 29 samples; its bootstrap needs 30 a side)"),
            std::string::npos)
      << few.notes[0];
  // 30 a side: the mean decides again (p90, whose resamples now and then hold fewer than 10%
  // stalls, is not significant: unclear without a note).
  base.push_back(1000.0);
  cand.push_back(1000.0);
  const CompareReport enough =
      compare_docs(make_doc({make_run(base)}), make_doc({make_run(cand)}), o);
  EXPECT_EQ(enough.runs.at(0).metrics.at(2).verdict, Verdict::kSlower);
  EXPECT_EQ(enough.notes.size(), 1u);
}

TEST(Compare, RunsWhoseEnvironmentVariablesDifferGetOneNotePerDifference) {
  // Two runs per file; both differ in the same way: one note, counting both. A document without
  // environment.variables (an older writer) is not compared on them.
  // GPU runs (the cpu backend reads none of the variables: no note between two cpu runs).
  const auto doc = [](const nlohmann::json& vars, const std::string& backend = "cuda") {
    auto d = make_doc({make_run(ramp(), "cpu0", "cpu"), make_run(ramp(), "cpu0", "eager")});
    for (auto& run : d["runs"]) run["key"]["backend"] = backend;
    if (!vars.is_null()) d["environment"] = {{"host", "h"}, {"variables", vars}};
    return d;
  };
  const nlohmann::json off = {{"DECODEBENCH_GEMV_RING", "0"}, {"CUDA_VISIBLE_DEVICES", "1"}};
  const nlohmann::json dflt = {{"CUDA_VISIBLE_DEVICES", "1"}};
  CompareReport r = compare_docs(doc(off), doc(dflt));
  expect_one_note(r, 2,
                  "environment variables differ in 2 of 2 matched run(s): DECODEBENCH_GEMV_RING "
                  "'0' in base.json, unset in new.json (the runs may not have run the same "
                  "kernels or timed them alike)");
  EXPECT_TRUE(compare_docs(doc(off), doc(off)).notes.empty());
  EXPECT_TRUE(compare_docs(doc(off, "cpu"), doc(dflt, "cpu")).notes.empty());
  // An older file without the field: what the other records, said as not recorded there.
  r = compare_docs(doc(off), doc(nullptr));
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("CUDA_VISIBLE_DEVICES '1' in base.json; DECODEBENCH_GEMV_RING '0' in "
                            "base.json, not recorded in new.json (an older decodebench)"),
            std::string::npos)
      << r.notes[0];
  EXPECT_TRUE(compare_docs(doc(nlohmann::json::object()), doc(nullptr)).notes.empty());
  EXPECT_TRUE(compare_docs(doc(nullptr), doc(nullptr)).notes.empty());
  EXPECT_TRUE(compare_docs(doc(nlohmann::json::object()), doc(dflt)).notes.size() == 1u);
  EXPECT_NE(compare_docs(doc(nlohmann::json::object()), doc(dflt))
                .notes[0]
                .find("CUDA_VISIBLE_DEVICES unset in base.json, '1' in new.json"),
            std::string::npos);
}

// A probe or Debug build times other code: matched runs whose documents record different
// tool.build_type get one note per difference; a document without it (older) is not compared.
TEST(Compare, RunsOfDifferentBuildTypesAreNoted) {
  const auto doc = [](const char* build_type) {
    auto d = make_doc({make_run(ramp(), "cpu0", "cpu"), make_run(ramp(), "cpu0", "eager")});
    if (build_type != nullptr) {
      d["tool"] = {{"name", "decodebench"}, {"version", "0.1.0"}, {"build_type", build_type}};
    }
    return d;
  };
  const char* probe = "Release (probe build: DECODEBENCH_X_DIGITS=1)";
  expect_one_note(compare_docs(doc(probe), doc("Release")), 2,
                  "build types differ in 2 of 2 matched run(s): tool.build_type 'Release (probe "
                  "build: DECODEBENCH_X_DIGITS=1)' in base.json, 'Release' in new.json (other "
                  "code: a probe or Debug build times other kernels)");
  EXPECT_TRUE(compare_docs(doc("Release"), doc("Release")).notes.empty());
  EXPECT_TRUE(compare_docs(doc(probe), doc(nullptr)).notes.empty());
  // The cpu backend's runs too: a Debug build's CPU reference is slower code.
  const CompareReport r = compare_docs(doc("Debug"), doc("Release"));
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("'Debug' in base.json, 'Release' in new.json"), std::string::npos);
}

// Runs of one key pair by their settings first (config: tokens, seed, fusion, ...), so two
// sweeps pair point by point whatever their order; what is left pairs in order with a note
// naming the settings that differ.
TEST(Compare, RunsPairBySettingsFirstAndDifferencesAreNoted) {
  // A result document holding one run with the given fusion and --tokens, and samples.
  const auto result = [](const std::string& fusion, int tokens, double scale) {
    auto d = make_doc({make_run(scaled(ramp(), scale))});
    d["config"] = {{"fusion", {{"value", fusion}, {"origin", "flag"}}},
                   {"tokens", {{"value", tokens}, {"origin", "flag"}}},
                   {"json", {{"value", "x.json"}, {"origin", "flag"}}}};
    return d;
  };
  // fusion on (1.0×) and off (2.0×) in one file, off and on in the other, unchanged: both same.
  const auto base = make_suite({result("on", 8, 1.0), result("off", 8, 2.0)});
  const auto cand = make_suite({result("off", 8, 2.0), result("on", 8, 1.0)});
  CompareReport r = compare_runs(load_runs(base, "a.json"), load_runs(cand, "b.json"), {});
  ASSERT_EQ(r.runs.size(), 2u);
  for (const auto& run : r.runs) EXPECT_EQ(run.metrics[0].verdict, Verdict::kSame) << run.id;
  EXPECT_TRUE(r.notes.empty()) << r.notes[0];
  // Paired on purpose: fusion off against on (one run each), a note says so.
  r = compare_runs(load_runs(result("off", 8, 2.0), "off.json"),
                   load_runs(result("on", 8, 1.0), "on.json"), {});
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_EQ(r.runs[0].metrics[0].verdict, Verdict::kFaster);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0],
            "settings differ in 1 of 1 matched run(s): fusion 'off' in off.json, 'on' in on.json "
            "(not the same workload; pair them on purpose, or compare files of the same settings)");
  // --tokens 4,8 against --tokens 8: the 8 pairs with the 8; the 4 is unmatched, no note.
  r = compare_runs(load_runs(make_suite({result("on", 4, 0.8), result("on", 8, 1.0)}), "tk.json"),
                   load_runs(result("on", 8, 1.0), "t8.json"), {});
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_EQ(r.runs[0].metrics[0].verdict, Verdict::kSame);
  EXPECT_EQ(r.runs[0].id, r.runs[0].key["id"].get<std::string>() + "#2");
  EXPECT_EQ(r.only_in_baseline.size(), 1u);
  EXPECT_TRUE(r.notes.empty()) << r.notes[0];
  // Steps launched ahead against one at a time: another workload, noted as such. What a pass
  // did counts (results.launch_ahead.on), not the flag; a result written before launch-ahead
  // existed ran one step at a time.
  auto ahead = result("on", 8, 1.0), one = result("on", 8, 1.1), old = result("on", 8, 1.1);
  ahead["runs"][0]["results"]["launch_ahead"] = {{"on", true}, {"why_off", nullptr}};
  one["runs"][0]["results"]["launch_ahead"] = {{"on", false}, {"why_off", "verified"}};
  one["config"]["launch_ahead"] = {{"value", "on"}, {"origin", "default"}};
  for (const auto& [base, name] : {std::pair{one, "one.json"}, std::pair{old, "old.json"}}) {
    r = compare_runs(load_runs(base, name), load_runs(ahead, "ahead.json"), {});
    ASSERT_EQ(r.notes.size(), 1u) << name;
    EXPECT_NE(
        r.notes[0].find(std::string("launch_ahead 'off' in ") + name + ", 'on' in ahead.json"),
        std::string::npos)
        << r.notes[0];
  }
  EXPECT_TRUE(compare_runs(load_runs(one, "a.json"), load_runs(old, "b.json"), {}).notes.empty());
}

// The key's shape holds layers, hidden, heads, kv_heads, ffn and vocab; the model's other fields
// (head_dim, Q/K/V bias, ...) and its bytes per token count as settings: another model under the
// same key pairs last and is named in a note (a newcomer's run of --head-dim 128 against the
// default was compared as the same workload, silently, and called a regression).
TEST(Compare, ModelFieldsOutsideTheKeyAreNotedAndPairFirstByEquality) {
  const auto result = [](int head_dim, bool bias, double scale) {
    auto d = make_doc({make_run(scaled(ramp(), scale))});
    d["model"] = {{"bytes_per_token", 1000 * head_dim + (bias ? 1 : 0)},
                  {"shape",
                   {{"layers", 2},
                    {"hidden", 576},
                    {"head_dim", head_dim},
                    {"qkv_bias", bias},
                    {"rope_theta", 10000.0}}}};
    return d;
  };
  // One model against itself: no note.
  CompareReport r = compare_runs(load_runs(result(64, false, 1.0), "a.json"),
                                 load_runs(result(64, false, 1.0), "b.json"), {});
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_TRUE(r.notes.empty()) << r.notes[0];
  // head_dim 64 against 128: compared (a use of compare), and the note names both fields.
  r = compare_runs(load_runs(result(64, false, 1.0), "a.json"),
                   load_runs(result(128, false, 1.3), "b.json"), {});
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_EQ(r.runs[0].metrics[0].verdict, Verdict::kSlower);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0],
            "settings differ in 1 of 1 matched run(s): model.bytes_per_token '64000' in a.json, "
            "'128000' in b.json; model.head_dim '64' in a.json, '128' in b.json (not the same "
            "workload; pair them on purpose, or compare files of the same settings)");
  // Two models under one key in each file, in the other order: each pairs with its own.
  const auto base = make_suite({result(64, false, 1.0), result(64, true, 2.0)});
  const auto cand = make_suite({result(64, true, 2.0), result(64, false, 1.0)});
  r = compare_runs(load_runs(base, "a.json"), load_runs(cand, "b.json"), {});
  ASSERT_EQ(r.runs.size(), 2u);
  for (const auto& c : r.runs) EXPECT_EQ(c.metrics[0].verdict, Verdict::kSame) << c.id;
  EXPECT_TRUE(r.notes.empty()) << r.notes[0];
  // A document without the model (hand-made or trimmed) is compared as before, without a note.
  r = compare_runs(load_runs(make_doc({make_run(ramp())}), "old.json"),
                   load_runs(result(128, false, 1.0), "b.json"), {});
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_TRUE(r.notes.empty()) << r.notes[0];
}

// Pairing at known start positions: a setting that differs across a whole file (--tokens 4 against
// 5) still lets a sweep's other axis pair point by point (seed with seed), a setting one file does
// not record (an older writer) is not compared, and repeats of identical runs pair in order.
TEST(Compare, PairingByFewestDifferingSettings) {
  const auto run = [](const nlohmann::json& settings, double scale) {
    auto d = make_doc({make_run(scaled(ramp(), scale))});
    d["runs"][0]["results"]["start_position"] = 16;
    d["config"] = nlohmann::json::object();
    for (const auto& [k, v] : settings.items()) d["config"][k] = {{"value", v}};
    return d;
  };
  // seed 1 is 1.0×, seed 2 is 2.0× in both files; the new file times 5 tokens instead of 4.
  const auto base =
      make_suite({run({{"seed", 1}, {"tokens", 4}}, 1.0), run({{"seed", 2}, {"tokens", 4}}, 2.0)});
  const auto cand =
      make_suite({run({{"seed", 2}, {"tokens", 5}}, 2.0), run({{"seed", 1}, {"tokens", 5}}, 1.0)});
  CompareReport r = compare_runs(load_runs(base, "a.json"), load_runs(cand, "b.json"), {});
  ASSERT_EQ(r.runs.size(), 2u);
  for (const auto& c : r.runs) EXPECT_EQ(c.metrics[0].verdict, Verdict::kSame) << c.id;
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0].rfind("settings differ in 2 of 2 matched run(s): tokens '4' in a.json, "
                             "'5' in b.json (",
                             0),
            0u)
      << r.notes[0];
  // weight_layout recorded by one file only: not a difference, and the sweep pairs by seed.
  const auto older = make_suite({run({{"seed", 2}}, 2.0), run({{"seed", 1}}, 1.0)});
  const auto newer = make_suite({run({{"seed", 1}, {"weight_layout", "auto"}}, 1.0),
                                 run({{"seed", 2}, {"weight_layout", "auto"}}, 2.0)});
  r = compare_runs(load_runs(older, "old.json"), load_runs(newer, "new.json"), {});
  ASSERT_EQ(r.runs.size(), 2u);
  for (const auto& c : r.runs) EXPECT_EQ(c.metrics[0].verdict, Verdict::kSame) << c.id;
  EXPECT_TRUE(r.notes.empty()) << r.notes[0];
  // A/A with repeats: identical runs pair in order, the second with the second.
  const auto aa = make_suite({run({{"seed", 1}}, 1.0), run({{"seed", 1}}, 1.3)});
  r = compare_runs(load_runs(aa, "x.json"), load_runs(aa, "y.json"), {});
  ASSERT_EQ(r.runs.size(), 2u);
  EXPECT_EQ(r.runs[1].id, r.runs[0].id + "#2");
  for (const auto& c : r.runs) EXPECT_EQ(c.metrics[0].verdict, Verdict::kSame) << c.id;
}

TEST(Compare, JsonReportCarriesEveryComparison) {
  const CompareReport r =
      compare_docs(make_doc({make_run(ramp())}), make_doc({make_run(scaled(ramp(), 1.2))}));
  const nlohmann::json j = compare_json(r);
  EXPECT_EQ(j["schema_version"], "1.1");
  EXPECT_EQ(j["baseline"], "base.json");
  EXPECT_EQ(j["new"], "new.json");
  EXPECT_EQ(j["summary"]["slower"], 1);
  EXPECT_EQ(j["summary"]["matched_runs"], 1);
  EXPECT_EQ(j["exit_code"], 1);
  ASSERT_EQ(j["comparisons"].size(), 1u);
  const auto& c = j["comparisons"][0];
  EXPECT_EQ(c["verdict"], "slower");
  EXPECT_EQ(c["metric"], "tpot_median");
  EXPECT_EQ(c["unit"], "ns");
  EXPECT_NEAR(c["change_pct"].get<double>(), 20.0, 1e-9);
  EXPECT_DOUBLE_EQ(c["baseline"].get<double>(), 1315.0);
  EXPECT_EQ(c["n_new"], 64);
  EXPECT_EQ(c["test"], "mann-whitney");
  EXPECT_DOUBLE_EQ(c["u"].get<double>(), r.runs[0].metrics[0].test.u);
  EXPECT_GT(c["z"].get<double>(), 3.0);
  EXPECT_TRUE(c["resamples"].is_null());
  EXPECT_TRUE(c["ci_pct"].is_null());
  // A bootstrap metric: u and z null, its resamples and interval given; p = 2 / 2,001 (the means
  // of 1.2 times the ramp never come near the baseline's in a resample).
  CompareOptions o;
  o.metrics = {"tpot_mean"};
  const nlohmann::json b = compare_json(
      compare_docs(make_doc({make_run(ramp())}), make_doc({make_run(scaled(ramp(), 1.2))}), o));
  const auto& m = b["comparisons"][0];
  EXPECT_EQ(m["test"], "bootstrap");
  EXPECT_TRUE(m["u"].is_null());
  EXPECT_TRUE(m["z"].is_null());
  EXPECT_EQ(m["resamples"], 2000);
  EXPECT_DOUBLE_EQ(m["p_value"].get<double>(), 2.0 / 2001.0);
  ASSERT_EQ(m["ci_pct"].size(), 2u);
  EXPECT_LT(m["ci_pct"][0].get<double>(), 20.0);
  EXPECT_GT(m["ci_pct"][1].get<double>(), 20.0);
  EXPECT_EQ(m["verdict"], "slower");
}

}  // namespace
}  // namespace decodebench
