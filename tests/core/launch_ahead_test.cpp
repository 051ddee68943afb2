// Launch-ahead decoding: run_pass enqueues step i + 1 (fed the token the device holds) before it
// waits for step i, when PassSpec::launch_ahead asks for it and nothing stands against it. A
// scripted backend stands in for the GPU: it keeps the device's inputs and the steps in flight as
// a GPU would, and logs every call. tests/cuda/backend_test.cpp runs the CUDA backend's
// enqueue_step / finish_step on a device.
#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "core/backend.hpp"
#include "core/decode/decode_loop.hpp"
#include "core/error.hpp"
#include "core/runner.hpp"

namespace decodebench {
namespace {

/// The step fed `token` at `pos` returns next_token(token, pos): steps computed one at a time and
/// launched ahead give the same ids only if the device's inputs are passed on correctly.
int32_t next_token(int32_t token, int64_t pos) {
  return static_cast<int32_t>((token * 31 + pos * 7) % 1000);
}

class PipelinedBackend : public Backend {
 public:
  [[nodiscard]] std::string name() const override { return "scripted"; }
  [[nodiscard]] std::string device_name() const override { return "none"; }
  [[nodiscard]] int64_t max_positions() const override { return 64; }
  int32_t step(int32_t token, int64_t pos, StepPhases*) override {
    EXPECT_TRUE(flight_.empty()) << "step() with steps in flight";
    log.push_back("S" + std::to_string(pos));
    ++steps_in_series_;
    device_ = {true, next_token(token, pos), pos + 1};
    return device_.token;
  }
  void logits(std::vector<float>& out) override { out.assign(1000, 0.0f); }
  ExecReport set_exec_mode(ExecMode mode) override {
    ExecReport r;
    r.mode = mode;
    r.captured = mode == ExecMode::kGraph && !capture_fails;
    return r;
  }
  [[nodiscard]] std::string launch_ahead_unavailable() const override { return unavailable; }
  void enqueue_step(int32_t token, int64_t pos) override {
    EXPECT_LT(flight_.size(), static_cast<size_t>(kMaxStepsInFlight));
    int32_t in = token;
    if (token == kTokenOnDevice) {
      const Inputs& before = flight_.empty() ? device_ : flight_.back();
      EXPECT_TRUE(before.valid);
      EXPECT_EQ(pos, before.pos) << "a device-fed step must follow the last one";
      in = before.token;
      log.push_back("E" + std::to_string(pos) + "d");
    } else {
      EXPECT_TRUE(flight_.empty()) << "a host-fed step with steps in flight";
      log.push_back("E" + std::to_string(pos));
    }
    if (pos >= max_positions()) throw usage_error("position " + std::to_string(pos) + " is full");
    ++steps_in_series_;
    flight_.push_back({true, next_token(in, pos), pos + 1});
  }
  /// Whether no step is in flight.
  [[nodiscard]] bool idle() const { return flight_.empty(); }
  int32_t finish_step() override {
    EXPECT_FALSE(flight_.empty());
    if (finish_sleep.count() > 0) std::this_thread::sleep_for(finish_sleep);
    device_ = flight_.front();
    flight_.pop_front();
    log.push_back("F");
    return device_.token;
  }
  /// Idle series: the gap before the series' step k (k >= 1) is 1000·series + k ns.
  void begin_idle_series() override {
    ++series_;
    steps_in_series_ = 0;
  }
  std::vector<int64_t> idle_series_ns() override {
    std::vector<int64_t> gaps;
    for (int64_t k = 1; k < steps_in_series_; ++k) gaps.push_back(1000 * series_ + k);
    return gaps;
  }

  std::vector<std::string> log;
  std::string unavailable;  ///< launch_ahead_unavailable()'s answer
  bool capture_fails = false;
  std::chrono::milliseconds finish_sleep{0};
  int series_ = 0;
  int64_t steps_in_series_ = 0;

 private:
  struct Inputs {
    bool valid = false;
    int32_t token = 0;
    int64_t pos = 0;
  };
  Inputs device_;  ///< the inputs the device holds after the last finished step
  std::deque<Inputs> flight_;
};

PassSpec ahead_spec() {
  PassSpec s;
  s.label = "graph";
  s.mode = ExecMode::kGraph;
  s.first_token = 7;
  s.start_pos = 10;
  s.tokens = 4;
  s.warmup = 2;
  s.launch_ahead = true;
  return s;
}

std::vector<int32_t> expected_ids(int32_t first, int64_t pos, int64_t n) {
  std::vector<int32_t> ids{first};
  for (int64_t i = 0; i < n; ++i) ids.push_back(next_token(ids.back(), pos + i));
  return ids;
}

TEST(LaunchAhead, EachStepIsEnqueuedBeforeThePreviousTokenIsAwaited) {
  PipelinedBackend b;
  const PassResult r = run_pass(b, ahead_spec());
  EXPECT_TRUE(r.launched_ahead);
  EXPECT_EQ(r.launch_ahead_off, "");
  // Two warm-up steps one at a time, then the round: step 10 fed the host's token, each later
  // step fed the device's, enqueued before its predecessor finishes; the last enqueues nothing.
  EXPECT_EQ(b.log, (std::vector<std::string>{"S10", "S11", "E10", "E11d", "F", "E12d", "F", "E13d",
                                             "F", "F"}));
  EXPECT_EQ(r.ids, expected_ids(7, 10, 4));
  EXPECT_EQ(r.samples_ns.size(), 4u);

  // The same pass one step at a time gives the same ids.
  PipelinedBackend one;
  PassSpec off = ahead_spec();
  off.launch_ahead = false;
  const PassResult s = run_pass(one, off);
  EXPECT_FALSE(s.launched_ahead);
  EXPECT_EQ(s.launch_ahead_off, "") << "not asked: no reason to give";
  EXPECT_EQ(s.ids, r.ids);
  EXPECT_EQ(one.log, (std::vector<std::string>{"S10", "S11", "S10", "S11", "S12", "S13"}));
}

// A sample is the time between the host's receipts of two tokens: each spans a finish_step.
TEST(LaunchAhead, SamplesSpanTheWaitForEachToken) {
  PipelinedBackend b;
  b.finish_sleep = std::chrono::milliseconds(3);
  const PassResult r = run_pass(b, ahead_spec());
  ASSERT_EQ(r.samples_ns.size(), 4u);
  int64_t sum = 0;
  for (const int64_t ns : r.samples_ns) {
    EXPECT_GE(ns, 3'000'000);
    sum += ns;
  }
  EXPECT_LE(sum, r.wall_ns);
}

// Every round starts from the host's first token; ids come from the first round.
TEST(LaunchAhead, EveryRoundStartsFromTheFirstToken) {
  PipelinedBackend b;
  PassSpec spec = ahead_spec();
  spec.warmup = 0;
  spec.tokens = 3;
  spec.max_noise = 1e-12;   // never met: rounds repeat until the time budget
  spec.max_time_s = 1e-12;  // ... spent once round 1 is done
  spec.measure_idle = true;
  const PassResult r = run_pass(b, spec);
  ASSERT_EQ(r.stopping.rounds, 2);
  EXPECT_EQ(b.log, (std::vector<std::string>{"E10", "E11d", "F", "E12d", "F", "F", "E10", "E11d",
                                             "F", "E12d", "F", "F"}));
  EXPECT_EQ(r.ids, expected_ids(7, 10, 3));
  EXPECT_EQ(r.samples_ns.size(), 6u);
  // Every gap counts: nothing is verified between launched-ahead steps.
  EXPECT_EQ(r.idle_ns, (std::vector<int64_t>{1001, 1002, 2001, 2002}));
}

// At an end-of-generation token the step launched after it is finished and dropped; its gap was
// the GPU's idle time all the same, so the round's series still matches its steps.
TEST(LaunchAhead, EndOfGenerationDropsTheStepLaunchedAfterIt) {
  PipelinedBackend b;
  PassSpec spec = ahead_spec();
  spec.warmup = 0;
  spec.tokens = 6;
  spec.measure_idle = true;
  const std::vector<int32_t> ids = expected_ids(7, 10, 6);
  const int32_t eos = ids[2];  // step 1's output
  spec.is_end_of_generation = [eos](int32_t id) { return id == eos; };
  const PassResult r = run_pass(b, spec);
  EXPECT_TRUE(r.stopped_at_end_of_generation);
  EXPECT_EQ(r.ids, std::vector<int32_t>(ids.begin(), ids.begin() + 3));
  EXPECT_EQ(r.samples_ns.size(), 2u);
  EXPECT_EQ(b.log, (std::vector<std::string>{"E10", "E11d", "F", "E12d", "F", "F"}));
  EXPECT_EQ(r.idle_ns, (std::vector<int64_t>{1001, 1002}));
}

// Where the host must act between steps, or the backend cannot, the pass runs one step at a time
// and says why.
TEST(LaunchAhead, PassesThatNeedTheHostBetweenStepsRunOneAtATime) {
  const auto run_with = [](const std::function<void(PassSpec&, PipelinedBackend&)>& change) {
    PipelinedBackend b;
    PassSpec spec = ahead_spec();
    change(spec, b);
    const PassResult r = run_pass(b, spec);
    EXPECT_FALSE(r.launched_ahead);
    for (const std::string& call : b.log) EXPECT_EQ(call[0], 'S') << call;
    return r.launch_ahead_off;
  };
  EXPECT_EQ(run_with([](PassSpec& s, PipelinedBackend&) { s.phase_timing = true; }),
            "phase timing synchronises inside each step");
  EXPECT_EQ(run_with([](PassSpec& s, PipelinedBackend&) {
              s.verify_argmax = true;
              s.keep_going = true;  // the scripted logits disagree with its ids
            }),
            "verification reads the first round's logits after each step, so the whole pass runs "
            "one step at a time");
  PipelinedBackend reference;
  EXPECT_EQ(run_with([&](PassSpec& s, PipelinedBackend&) {
              s.reference = &reference;
              s.verify_tokens = 1;
            }),
            "verification reads the first round's logits after each step, so the whole pass runs "
            "one step at a time");
  EXPECT_EQ(run_with([](PassSpec& s, PipelinedBackend&) { s.stateless = true; }),
            "--stateless runs every step at position 0");
  EXPECT_EQ(run_with([](PassSpec&, PipelinedBackend& b) { b.capture_fails = true; }),
            "the graph capture failed and the steps run eagerly");
  EXPECT_EQ(run_with([](PassSpec&, PipelinedBackend& b) { b.unavailable = "no device advance"; }),
            "no device advance");
}

// --graph on: a failed capture is the error before any step, so a user does not wait out a whole
// eager pass (--min-time) to learn it; without require_graph the pass runs eagerly as before.
TEST(LaunchAhead, ARequiredGraphWhoseCaptureFailsThrowsBeforeAnyStep) {
  PipelinedBackend b;
  b.capture_fails = true;
  PassSpec s = ahead_spec();
  s.require_graph = true;
  try {
    (void)run_pass(b, s);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kRuntime);
    EXPECT_EQ(std::string(e.what()).rfind("graph capture failed: ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("use --graph auto to fall back to eager"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(b.log.empty()) << "steps ran before the error: " << b.log.size();
  // The batched loop too (a backend that takes batch 2 and fails its capture).
  struct Batched : PipelinedBackend {
    ExecReport set_exec_mode_batch(ExecMode mode, int64_t) override { return set_exec_mode(mode); }
  } batched;
  batched.capture_fails = true;
  s.batch = 2;
  s.first_tokens = {7, 8};
  s.launch_ahead = false;
  try {
    (void)run_pass(batched, s);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kRuntime) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("graph capture failed: ", 0), 0u) << e.what();
  }
  EXPECT_TRUE(batched.log.empty());
  PipelinedBackend fallback;
  fallback.capture_fails = true;
  const PassResult r = run_pass(fallback, ahead_spec());
  EXPECT_FALSE(r.exec.captured);
  EXPECT_EQ(r.ids, expected_ids(7, 10, 4));
  // A captured graph is not affected.
  PipelinedBackend ok;
  s = ahead_spec();
  s.require_graph = true;
  EXPECT_EQ(run_pass(ok, s).ids, expected_ids(7, 10, 4));
}

// The loop launches an eager pass ahead when asked (the runner asks for graph passes only); a pass
// of no steps enqueues none.
TEST(LaunchAhead, EagerPassesLaunchAheadWhenAskedAndEmptyPassesEnqueueNothing) {
  {
    PipelinedBackend b;
    PassSpec spec = ahead_spec();
    spec.mode = ExecMode::kEager;
    const PassResult r = run_pass(b, spec);
    EXPECT_TRUE(r.launched_ahead);
    EXPECT_EQ(r.ids, expected_ids(7, 10, 4));
  }
  PipelinedBackend b;
  PassSpec none = ahead_spec();
  none.tokens = 0;
  none.warmup = 0;
  const PassResult r = run_pass(b, none);
  EXPECT_TRUE(b.log.empty()) << b.log[0];
  EXPECT_TRUE(r.samples_ns.empty());
}

// Whatever throws in a round (here the per-step callback, and an enqueue past the KV-cache
// capacity), the steps in flight are finished first, and the error propagates.
TEST(LaunchAhead, AnErrorMidRoundLeavesNoStepInFlight) {
  PipelinedBackend b;
  PassSpec spec = ahead_spec();
  spec.warmup = 0;
  spec.on_step = [](int64_t done, int64_t) {
    if (done == 2) throw runtime_error("stop here");
  };
  EXPECT_THROW(run_pass(b, spec), Error);
  // Steps 10 and 11 finished, 12 was enqueued before 11's token arrived: finished by the drain.
  EXPECT_EQ(b.log, (std::vector<std::string>{"E10", "E11d", "F", "E12d", "F", "F"}));
  EXPECT_TRUE(b.idle());
  PipelinedBackend c;
  spec.on_step = nullptr;
  spec.start_pos = 62;  // steps at 62..65 of a 64-position cache: the enqueue of 64 throws
  try {
    run_pass(c, spec);
    ADD_FAILURE() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage) << e.what();
  }
  EXPECT_TRUE(c.idle());
}

// The base Backend cannot launch ahead: it says so, and its enqueue/finish throw (exit 1).
TEST(LaunchAhead, TheBaseBackendRunsEachStepToCompletion) {
  struct Plain : PipelinedBackend {
    [[nodiscard]] std::string launch_ahead_unavailable() const override {
      return Backend::launch_ahead_unavailable();
    }
    void enqueue_step(int32_t t, int64_t p) override { Backend::enqueue_step(t, p); }
    int32_t finish_step() override { return Backend::finish_step(); }
  } b;
  EXPECT_EQ(b.launch_ahead_unavailable(), "the scripted backend runs each step to completion");
  for (int i = 0; i < 2; ++i) {
    try {
      if (i == 0) b.enqueue_step(1, 0);
      if (i == 1) b.finish_step();
      FAIL() << "expected an Error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kRuntime);
      EXPECT_NE(std::string(e.what()).find("runs each step to completion"), std::string::npos);
    }
  }
  const PassResult r = run_pass(b, ahead_spec());
  EXPECT_FALSE(r.launched_ahead);
  EXPECT_EQ(r.launch_ahead_off, "the scripted backend runs each step to completion");
}

// The result JSON says whether a pass launched ahead and, where it was asked for, why not.
TEST(LaunchAhead, ResultJsonSaysWhetherAndWhyNot) {
  PipelinedBackend b;
  RunReport on;
  on.passes.push_back(make_pass_report(run_pass(b, ahead_spec()), 1000));
  const nlohmann::json a = result_json(on)["runs"][0]["results"]["launch_ahead"];
  EXPECT_EQ(a, (nlohmann::json{{"on", true}, {"why_off", nullptr}}));
  PassSpec stateless = ahead_spec();
  stateless.stateless = true;
  RunReport off;
  off.passes.push_back(make_pass_report(run_pass(b, stateless), 1000));
  const nlohmann::json o = result_json(off)["runs"][0]["results"]["launch_ahead"];
  EXPECT_EQ(
      o, (nlohmann::json{{"on", false}, {"why_off", "--stateless runs every step at position 0"}}));
}

}  // namespace
}  // namespace decodebench
