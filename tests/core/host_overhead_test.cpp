// The host overhead per token: run_pass asks the backend for the GPU's idle time between timed
// steps (Backend::begin_idle_series / idle_series_ns) and for the GPU's own time of the pass's
// middle step (Backend::replayed_step_gpu_us) with that step's token and position; the run report
// and result JSON give the idle times' median, else TPOT − that time. A scripted backend stands in
// for the GPU here; tests/cuda/backend_test.cpp measures it on a device.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/decode/decode_loop.hpp"
#include "core/error.hpp"
#include "core/run_config.hpp"
#include "core/runner.hpp"

namespace decodebench {
namespace {

/// Step i returns token 100 + pos; "graph" mode accepted; replays recorded, 250 µs returned.
class ScriptedBackend : public Backend {
 public:
  [[nodiscard]] std::string name() const override { return "scripted"; }
  [[nodiscard]] std::string device_name() const override { return "none"; }
  [[nodiscard]] int64_t max_positions() const override { return 64; }
  int32_t step(int32_t token, int64_t pos, StepPhases*) override {
    ++steps_in_series_;
    return static_cast<int32_t>(100 + pos + (token == 999 ? 1000 : 0));
  }
  void logits(std::vector<float>& out) override { out.assign(4, 0.0f); }
  ExecReport set_exec_mode(ExecMode mode) override {
    mode_ = mode;
    ExecReport r;
    r.mode = mode;
    r.captured = mode == ExecMode::kGraph && !capture_fails;
    return r;
  }
  double replayed_step_gpu_us(int32_t token, int64_t pos, int replays) override {
    calls.push_back({token, pos, replays});
    return mode_ == ExecMode::kGraph ? 250.0 : -1.0;
  }
  /// Idle series: the gap before the series' step k (k >= 1) is 1000·series + k ns.
  void begin_idle_series() override {
    ++series_;
    steps_in_series_ = 0;
  }
  std::vector<int64_t> idle_series_ns() override {
    std::vector<int64_t> gaps;
    for (int64_t k = 1; k < steps_in_series_ + extra_gaps; ++k) gaps.push_back(1000 * series_ + k);
    return gaps;
  }
  int series_ = 0;
  int64_t steps_in_series_ = 0;
  bool capture_fails = false;  ///< graph mode reports a failed capture (the pass runs eagerly)
  int64_t extra_gaps = 0;      ///< gaps of work that is not a step
  struct Call {
    int32_t token;
    int64_t pos;
    int replays;
  };
  std::vector<Call> calls;

 private:
  ExecMode mode_ = ExecMode::kEager;
};

PassSpec spec_of(ExecMode mode, int replays) {
  PassSpec s;
  s.label = "graph";
  s.mode = mode;
  s.first_token = 7;
  s.start_pos = 10;
  s.tokens = 6;
  s.gpu_step_replays = replays;
  return s;
}

TEST(HostOverhead, RunPassMeasuresTheMiddleStepWithItsOwnTokenAndPosition) {
  ScriptedBackend b;
  const PassResult r = run_pass(b, spec_of(ExecMode::kGraph, 32));
  // Steps 0..5 at positions 10..15 are fed 7, 110, 111, ..., 114; the middle one is step 2.
  ASSERT_EQ(r.ids, (std::vector<int32_t>{7, 110, 111, 112, 113, 114, 115}));
  ASSERT_EQ(b.calls.size(), 1u);
  EXPECT_EQ(b.calls[0].token, 111);
  EXPECT_EQ(b.calls[0].pos, 12);
  EXPECT_EQ(b.calls[0].replays, 32);
  EXPECT_EQ(r.gpu_step_us, 250.0);
  EXPECT_EQ(r.gpu_step_position, 12);
}

TEST(HostOverhead, StatelessAndStoppedPassesMeasureAStepTheyRan) {
  ScriptedBackend b;
  PassSpec stateless = spec_of(ExecMode::kGraph, 8);
  stateless.stateless = true;  // every step at position 0: 7 → 100 → 100 ...
  const PassResult s = run_pass(b, stateless);
  ASSERT_EQ(b.calls.size(), 1u);
  EXPECT_EQ(b.calls[0].pos, 0);
  EXPECT_EQ(b.calls[0].token, 100);
  EXPECT_EQ(s.gpu_step_position, 0);
  // Stopped at an end-of-generation token after 3 of 6 steps (7 → 110 → 111 → 112): the middle
  // of the steps run, step 1 (fed 110 at position 11).
  PassSpec eos = spec_of(ExecMode::kGraph, 8);
  eos.is_end_of_generation = [](int32_t id) { return id == 112; };
  const PassResult e = run_pass(b, eos);
  ASSERT_TRUE(e.stopped_at_end_of_generation);
  ASSERT_EQ(b.calls.size(), 2u);
  EXPECT_EQ(b.calls[1].token, 110);
  EXPECT_EQ(b.calls[1].pos, 11);
}

// The report's host overhead is median TPOT − the GPU's step time, and the JSON carries both.
TEST(HostOverhead, ReportAndJsonGiveTpotMinusTheGpuStep) {
  ScriptedBackend b;
  PassResult r = run_pass(b, spec_of(ExecMode::kGraph, 32));
  r.samples_ns = {400'000, 260'000, 250'500, 300'000, 255'000};  // median 260 µs
  const PassReport p = make_pass_report(r, 1000);
  ASSERT_TRUE(p.host_overhead_us.has_value());
  EXPECT_DOUBLE_EQ(*p.host_overhead_us, 260.0 - 250.0);
  EXPECT_EQ(p.host_overhead_method, "replay");  // no idle times measured
  RunReport report;
  report.passes.push_back(p);
  const nlohmann::json h = result_json(report)["runs"][0]["results"]["host_overhead"];
  ASSERT_TRUE(h.is_object()) << h.dump();
  EXPECT_DOUBLE_EQ(h["host_us"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(h["gpu_step_us"].get<double>(), 250.0);
  EXPECT_DOUBLE_EQ(h["tpot_us_median"].get<double>(), 260.0);
  EXPECT_EQ(h["position"], 12);
  EXPECT_EQ(h["replays"], 32);
  EXPECT_EQ(h["method"], "replay");
  EXPECT_TRUE(h["idle"].is_null());
  EXPECT_DOUBLE_EQ(h["replay_host_us"].get<double>(), 10.0);
  // Not measured: no figure.
  PassResult none = run_pass(b, spec_of(ExecMode::kGraph, 0));
  EXPECT_FALSE(make_pass_report(none, 1000).host_overhead_us.has_value());
}

// The idle time before a step counts only when the loop did nothing but decode since the last
// timed step: a round's first step has none, and steps after a verified one do not count.
TEST(HostOverhead, IdleTimesCountOnlyStepsAfterPlainDecoding) {
  ScriptedBackend b;
  PassSpec spec = spec_of(ExecMode::kGraph, 0);
  spec.measure_idle = true;
  spec.warmup = 3;  // warm-up steps are not in the series: it begins with the round
  const PassResult plain = run_pass(b, spec);
  EXPECT_EQ(b.series_, 1);
  EXPECT_EQ(plain.idle_ns, (std::vector<int64_t>{1001, 1002, 1003, 1004, 1005}));

  // The CPU reference checks the first two steps' logits: the gaps after steps 0 and 1 go.
  ScriptedBackend reference;
  spec.reference = &reference;
  spec.verify_tokens = 2;
  EXPECT_EQ(run_pass(b, spec).idle_ns, (std::vector<int64_t>{2003, 2004, 2005}));
  // --verify-argmax reads every step's logits in the first round: none counts.
  spec.verify_tokens = 0;
  spec.verify_argmax = true;
  spec.keep_going = true;  // the scripted logits disagree with its ids: count, do not throw
  EXPECT_TRUE(run_pass(b, spec).idle_ns.empty());
  // Not asked: no series.
  spec.verify_argmax = false;
  spec.measure_idle = false;
  EXPECT_TRUE(run_pass(b, spec).idle_ns.empty());
  EXPECT_EQ(b.series_, 3);
}

// A round cut short by an end-of-generation token has its own gaps only; a series with more
// gaps than steps (stamps of other work) cannot be matched to steps and gives none; a graph pass
// whose capture failed ran eagerly, where the GPU also waits inside each step: none either.
TEST(HostOverhead, IdleTimesOfShortRoundsStrayStampsAndFailedCaptures) {
  ScriptedBackend b;
  PassSpec spec = spec_of(ExecMode::kGraph, 0);
  spec.measure_idle = true;
  spec.is_end_of_generation = [](int32_t id) { return id == 112; };  // after 3 of 6 steps
  EXPECT_EQ(run_pass(b, spec).idle_ns, (std::vector<int64_t>{1001, 1002}));
  spec.is_end_of_generation = nullptr;
  b.extra_gaps = 1;
  EXPECT_TRUE(run_pass(b, spec).idle_ns.empty());
  b.extra_gaps = 0;
  EXPECT_EQ(run_pass(b, spec).idle_ns.size(), 5u);
  b.capture_fails = true;
  const PassResult eager = run_pass(b, spec);
  EXPECT_FALSE(eager.exec.captured);
  EXPECT_TRUE(eager.idle_ns.empty());
  EXPECT_EQ(b.series_, 3) << "no series begun for the pass that fell back to eager";
}

// Each round is a series of its own, its first step without a gap; the pass keeps them in order.
TEST(HostOverhead, EveryRoundIsASeries) {
  ScriptedBackend b;
  PassSpec spec = spec_of(ExecMode::kGraph, 0);
  spec.measure_idle = true;
  spec.tokens = 3;
  spec.max_noise = 1e-12;  // never met: rounds repeat until the time budget
  spec.min_time_s = 0;
  // ... which counts from round 0's end: spent once round 1 is done.
  spec.max_time_s = 1e-12;
  const PassResult r = run_pass(b, spec);
  ASSERT_EQ(r.stopping.rounds, 2) << r.stopping.rule;
  EXPECT_EQ(r.idle_ns, (std::vector<int64_t>{1001, 1002, 2001, 2002}));
}

// With idle times the host overhead is their median (method "idle"), the replay figure stays as
// a cross-check; the JSON and the terminal line carry both.
TEST(HostOverhead, IdleMedianIsTheFigureAndTheReplayItsCheck) {
  ScriptedBackend b;
  PassResult r = run_pass(b, spec_of(ExecMode::kGraph, 32));
  r.samples_ns = {400'000, 260'000, 250'500, 300'000, 255'000};  // median 260 µs
  r.idle_ns = {4'000, 9'000, 3'000, 5'000, 70'000};              // median 5 µs
  const PassReport p = make_pass_report(r, 1000);
  ASSERT_TRUE(p.host_overhead_us.has_value());
  EXPECT_DOUBLE_EQ(*p.host_overhead_us, 5.0);
  EXPECT_EQ(p.host_overhead_method, "idle");
  ASSERT_TRUE(p.replay_host_overhead_us.has_value());
  EXPECT_DOUBLE_EQ(*p.replay_host_overhead_us, 10.0);
  RunReport report;
  report.passes.push_back(p);
  const nlohmann::json h = result_json(report)["runs"][0]["results"]["host_overhead"];
  EXPECT_DOUBLE_EQ(h["host_us"].get<double>(), 5.0);
  EXPECT_EQ(h["method"], "idle");
  EXPECT_EQ(h["idle"]["steps"], 5);
  EXPECT_DOUBLE_EQ(h["idle"]["median_us"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(h["idle"]["min_us"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(h["idle"]["max_us"].get<double>(), 70.0);
  EXPECT_DOUBLE_EQ(h["replay_host_us"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(h["gpu_step_us"].get<double>(), 250.0);

  // Idle times without a replay (a backend that measures only those): replay fields null.
  r.gpu_step_us = -1.0;
  r.gpu_step_position = -1;
  RunReport only_idle;
  only_idle.passes.push_back(make_pass_report(r, 1000));
  const nlohmann::json i = result_json(only_idle)["runs"][0]["results"]["host_overhead"];
  EXPECT_DOUBLE_EQ(i["host_us"].get<double>(), 5.0);
  EXPECT_TRUE(i["replay_host_us"].is_null());
  EXPECT_TRUE(i["gpu_step_us"].is_null());
  EXPECT_TRUE(i["position"].is_null());
}

TEST(HostOverhead, NotMeasuredWhenNotAskedOrWhenTheBackendCannotTell) {
  ScriptedBackend b;
  const PassResult off = run_pass(b, spec_of(ExecMode::kGraph, 0));
  EXPECT_TRUE(b.calls.empty());
  EXPECT_LT(off.gpu_step_us, 0.0);
  EXPECT_EQ(off.gpu_step_position, -1);
  const PassResult eager = run_pass(b, spec_of(ExecMode::kEager, 32));
  ASSERT_EQ(b.calls.size(), 1u);  // asked, but eager mode has no graph to replay
  EXPECT_LT(eager.gpu_step_us, 0.0);
  EXPECT_EQ(eager.gpu_step_position, -1);
}

TEST(HostOverhead, BaseBackendRefusesZeroReplaysAndOtherwiseCannotTell) {
  struct Plain : ScriptedBackend {
    double replayed_step_gpu_us(int32_t t, int64_t p, int n) override {
      return Backend::replayed_step_gpu_us(t, p, n);
    }
  } b;
  EXPECT_LT(b.replayed_step_gpu_us(1, 0, 4), 0.0);
  try {
    b.replayed_step_gpu_us(1, 0, 0);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    EXPECT_NE(std::string(e.what()).find("replays must be >= 1, got 0"), std::string::npos);
  }
}

// The CPU backend has no graph: its runs carry no host overhead, in the report or the JSON.
TEST(HostOverhead, CpuRunsReportNone) {
  RunOptions o;
  o.preset = "smollm2-135m";
  o.layers = 1;
  o.vocab = 256;
  o.ffn = 128;
  o.tokens = 3;
  o.warmup = 0;
  o.prompt_tokens = 2;
  o.backend = "cpu";
  o.threads = 2;
  const RunReport r = execute_run(resolve_run_config(o, 2));
  ASSERT_EQ(r.passes.size(), 1u);
  EXPECT_FALSE(r.passes[0].host_overhead_us.has_value());
  const nlohmann::json doc = result_json(r);
  ASSERT_TRUE(doc["runs"][0]["results"].contains("host_overhead")) << doc["runs"][0].dump();
  EXPECT_TRUE(doc["runs"][0]["results"]["host_overhead"].is_null());
}

}  // namespace
}  // namespace decodebench
