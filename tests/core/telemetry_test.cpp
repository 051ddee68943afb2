// Per-round GPU telemetry without a GPU: round records from two readings (hand-computed), the
// pass totals and the warnings (the GPU held back; other processes on it), the decode loop
// reading a scripted source before the first round and after each one (batch 1 and batched), and
// the result JSON's telemetry object.
#include "core/telemetry.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cpu/cpu_backend.hpp"
#include "core/cpu/thread_pool.hpp"
#include "core/decode/decode_loop.hpp"
#include "core/model/synthetic.hpp"
#include "core/run_config.hpp"
#include "core/runner.hpp"
#include "tests/support/model_configs.hpp"
#include "tests/support/run_options.hpp"

namespace decodebench {
namespace {

GpuReading reading(int64_t energy_mj, int64_t power_ns, int64_t thermal_ns, int64_t sm_mhz) {
  GpuReading r;
  r.sm_clock_mhz = sm_mhz;
  r.mem_clock_mhz = 3201;
  r.temperature_c = 50;
  r.energy_mj = energy_mj;
  r.power_violation_ns = power_ns;
  r.thermal_violation_ns = thermal_ns;
  r.reasons_known = true;
  return r;
}

TEST(Telemetry, RoundRecordFromTwoReadings) {
  GpuReading before = reading(1'000, 5'000'000, 0, 1980);
  GpuReading after = reading(3'500, 7'000'000, 0, 1755);
  after.throttle_reasons = {"gpu_idle", "sw_power_cap"};
  // Step times 4, 1, 3, 2 µs: median 2.5 µs; 2.5 J over 0.5 s: 5 W; 2 ms held by power.
  const RoundTelemetry t = round_telemetry(3, {4000, 1000, 3000, 2000}, 0.5, before, after);
  EXPECT_EQ(t.round, 3);
  EXPECT_EQ(t.steps, 4);
  EXPECT_DOUBLE_EQ(t.wall_s, 0.5);
  EXPECT_DOUBLE_EQ(t.median_step_us, 2.5);
  EXPECT_EQ(t.sm_clock_mhz, 1755);  // the round's end
  EXPECT_EQ(t.mem_clock_mhz, 3201);
  EXPECT_EQ(t.temperature_c, 50);
  EXPECT_DOUBLE_EQ(t.energy_j, 2.5);
  EXPECT_DOUBLE_EQ(t.mean_power_w, 5.0);
  EXPECT_DOUBLE_EQ(t.power_throttled_ms, 2.0);
  EXPECT_DOUBLE_EQ(t.thermal_throttled_ms, 0.0);
  EXPECT_TRUE(t.reasons_known);
  EXPECT_EQ(t.throttle_reasons, std::vector<std::string>{"sw_power_cap"});  // gpu_idle left out
}

TEST(Telemetry, MissingOrBackwardCountersAreUnknown) {
  GpuReading before = reading(5'000, -1, 10, -1);
  GpuReading after = reading(4'000, 100, -1, -1);  // energy went backwards: a driver reload
  after.reasons_known = false;
  const RoundTelemetry t = round_telemetry(0, {}, 0.25, before, after);
  EXPECT_EQ(t.steps, 0);
  EXPECT_DOUBLE_EQ(t.median_step_us, 0.0);
  EXPECT_EQ(t.sm_clock_mhz, -1);
  EXPECT_DOUBLE_EQ(t.energy_j, -1);
  EXPECT_DOUBLE_EQ(t.mean_power_w, -1);
  EXPECT_DOUBLE_EQ(t.power_throttled_ms, -1);
  EXPECT_DOUBLE_EQ(t.thermal_throttled_ms, -1);
  EXPECT_FALSE(t.reasons_known);
}

TEST(Telemetry, PassTotalsRangesAndWarning) {
  const GpuReading a = reading(0, 0, 0, 1980), b = reading(2'000, 0, 0, 1980),
                   c = reading(5'000, 0, 0, 1980);
  std::vector<RoundTelemetry> rounds = {round_telemetry(0, {1000, 1000}, 1.0, a, b),
                                        round_telemetry(1, {1000, 1000}, 1.0, b, c)};
  rounds[1].temperature_c = 61;
  // 5 J over 2 s and 4 steps of 3 sequences.
  TelemetrySummary s = summarize_telemetry(rounds, 3);
  EXPECT_EQ(s.rounds, 2);
  EXPECT_DOUBLE_EQ(s.wall_s, 2.0);
  EXPECT_DOUBLE_EQ(s.energy_j, 5.0);
  EXPECT_DOUBLE_EQ(s.mean_power_w, 2.5);
  EXPECT_DOUBLE_EQ(s.joules_per_token, 5.0 / 12.0);
  EXPECT_EQ(s.sm_clock_min_mhz, 1980);
  EXPECT_EQ(s.sm_clock_max_mhz, 1980);
  EXPECT_EQ(s.temperature_min_c, 50);
  EXPECT_EQ(s.temperature_max_c, 61);
  EXPECT_DOUBLE_EQ(s.power_throttled_ms, 0.0);
  EXPECT_EQ(telemetry_warning("graph", s), "") << "steady clocks, no throttling";

  // Throttled by power for 3.5 ms in round 1, a limiting reason, the SM clock down 10%.
  rounds[1].power_throttled_ms = 3.5;
  rounds[1].throttle_reasons = {"sw_power_cap"};
  rounds[1].sm_clock_mhz = 1782;
  s = summarize_telemetry(rounds, 1);
  EXPECT_DOUBLE_EQ(s.joules_per_token, 5.0 / 4.0);
  EXPECT_EQ(s.sm_clock_min_mhz, 1782);
  const std::string w = telemetry_warning("graph", s);
  EXPECT_NE(w.find("graph: during the timed rounds the GPU was held below its application clocks "
                   "for 3.5 ms by its power limit"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("reported sw_power_cap at a round's end"), std::string::npos) << w;
  EXPECT_NE(w.find("SM clock at 1782–1980 MHz"), std::string::npos) << w;

  // A verified first round (--verify: CPU reference steps between its timed steps) is left out
  // of the energy figures, not of the clocks or the time held back: 3 J over round 1's 1 s and
  // its 2 steps.
  rounds[0].verified = true;
  s = summarize_telemetry(rounds, 1);
  EXPECT_DOUBLE_EQ(s.energy_j, 3.0);
  EXPECT_DOUBLE_EQ(s.mean_power_w, 3.0);
  EXPECT_DOUBLE_EQ(s.joules_per_token, 1.5);
  EXPECT_EQ(s.energy_rounds, 1);
  EXPECT_EQ(s.verified_rounds, 1);
  EXPECT_DOUBLE_EQ(s.wall_s, 2.0);
  EXPECT_DOUBLE_EQ(s.power_throttled_ms, 3.5);
  // Its only round verified: no energy figure at all.
  s = summarize_telemetry({rounds[0]}, 1);
  EXPECT_DOUBLE_EQ(s.energy_j, -1);
  EXPECT_DOUBLE_EQ(s.mean_power_w, -1);
  EXPECT_DOUBLE_EQ(s.joules_per_token, -1);
  EXPECT_EQ(s.energy_rounds, 0);
  EXPECT_EQ(s.verified_rounds, 1);
  rounds[0].verified = false;

  // One round without an energy reading: no energy total.
  rounds[0].energy_j = -1;
  EXPECT_DOUBLE_EQ(summarize_telemetry(rounds, 1).energy_j, -1);
  EXPECT_DOUBLE_EQ(summarize_telemetry(rounds, 1).joules_per_token, -1);
  EXPECT_EQ(summarize_telemetry({}, 1).rounds, 0);
}

TEST(Telemetry, OtherProcessesOnTheGpu) {
  // NVML's list of compute processes, this process being PID 40 in the host's PID namespace.
  EXPECT_EQ(other_processes({}, 40, true), -1) << "this process holds a context: the list is blind";
  EXPECT_EQ(other_processes({40}, 40, true), 0);
  EXPECT_EQ(other_processes({40, 7, 9}, 40, true), 2);
  EXPECT_EQ(other_processes({7, 40, 7}, 40, true), 1) << "a PID listed twice is one process";
  EXPECT_EQ(other_processes({7, 9}, 40, true), -1) << "this process missing: not a full list";
  // Inside a container NVML lists host PIDs: this process is one of them under another number.
  EXPECT_EQ(other_processes({}, 40, false), -1);
  EXPECT_EQ(other_processes({1201}, 40, false), 0);
  EXPECT_EQ(other_processes({1201, 1305, 1307}, 40, false), 2);
  EXPECT_EQ(other_processes({1201, 1305, 1305}, 40, false), 1);
  EXPECT_EQ(other_processes({40, 1201}, 40, false), 1) << "a host PID equal to ours is not ours";

  // A round takes the more of its two readings; unknown readings stay unknown.
  GpuReading before = reading(0, 0, 0, 1980), after = reading(0, 0, 0, 1980);
  EXPECT_EQ(round_telemetry(0, {1000}, 0.1, before, after).other_processes, -1);
  before.other_processes = 0;
  after.other_processes = 2;
  EXPECT_EQ(round_telemetry(0, {1000}, 0.1, before, after).other_processes, 2);
  EXPECT_EQ(round_telemetry(0, {1000}, 0.1, after, before).other_processes, 2);
  after.other_processes = -1;
  EXPECT_EQ(round_telemetry(0, {1000}, 0.1, before, after).other_processes, 0);

  // The pass: the most in any round, and a warning only when that is above 0.
  std::vector<RoundTelemetry> rounds = {round_telemetry(0, {1000}, 0.1, before, before),
                                        round_telemetry(1, {1000}, 0.1, before, before)};
  TelemetrySummary s = summarize_telemetry(rounds, 1);
  EXPECT_EQ(s.other_processes_max, 0);
  EXPECT_EQ(sharing_warning("graph", s.other_processes_max), "");
  EXPECT_EQ(telemetry_warning("graph", s), "") << "sharing has a warning of its own";
  rounds[0].other_processes = -1;
  rounds[1].other_processes = -1;
  s = summarize_telemetry(rounds, 1);
  EXPECT_EQ(s.other_processes_max, -1);
  EXPECT_EQ(sharing_warning("graph", s.other_processes_max), "") << "unknown is not a warning";
  rounds[1].other_processes = 1;
  s = summarize_telemetry(rounds, 1);
  EXPECT_EQ(s.other_processes_max, 1);
  std::string w = sharing_warning("graph", s.other_processes_max);
  EXPECT_EQ(w.rfind("graph: 1 other compute process was seen on the GPU in the readings around "
                    "the timed rounds (NVML): whatever it runs shares the GPU with the timed steps",
                    0),
            0u)
      << w;
  rounds[0].other_processes = 3;
  w = sharing_warning("graph, eager", summarize_telemetry(rounds, 1).other_processes_max);
  EXPECT_NE(w.find("graph, eager: 3 other compute processes were seen on the GPU"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("whatever they run share the GPU"), std::string::npos) << w;
}

/// Energy +100 mJ and power violation +1 ms per reading; counts its readings.
class ScriptedTelemetry final : public GpuTelemetry {
 public:
  GpuReading read() override {
    ++reads;
    return reading(100 * reads, 1'000'000 * reads, 0, 1980);
  }
  int64_t reads = 0;
};

ModelConfig small_config() {
  ModelConfig c = ::decodebench::testing::small_model_config(2, 64, 4, 2, 16, 96, 300);
  c.rms_eps = 1e-5;
  return c;
}

TEST(Telemetry, DecodeLoopReadsBeforeAndAfterEveryRound) {
  cpu::ThreadPool pool(2);
  const Model m = make_synthetic_model(small_config(), WeightType::kF32, 3, pool);
  for (const int64_t batch : {1, 2}) {
    cpu::CpuBackend b(m, 32, 2, batch);
    std::vector<int32_t> firsts(static_cast<size_t>(batch));
    if (batch > 1) b.prefill_batch(std::vector<std::vector<int32_t>>{{1, 2, 3}, {4, 5, 6}}, firsts);
    PassSpec spec;
    spec.label = "cpu";
    spec.start_pos = 3;
    spec.tokens = 3;
    spec.batch = batch;
    if (batch > 1) spec.first_tokens = firsts;
    spec.min_time_s = 1e-3;  // a few rounds of 3 steps
    ScriptedTelemetry source;
    spec.telemetry = &source;
    const PassResult r = run_pass(b, spec);
    const std::string what = "batch " + std::to_string(batch);
    ASSERT_GE(r.stopping.rounds, 1) << what;
    ASSERT_EQ(static_cast<int64_t>(r.telemetry.size()), r.stopping.rounds) << what;
    EXPECT_EQ(source.reads, r.stopping.rounds + 1) << what << ": one reading before the first";
    int64_t steps = 0;
    for (size_t i = 0; i < r.telemetry.size(); ++i) {
      const RoundTelemetry& t = r.telemetry[i];
      EXPECT_EQ(t.round, static_cast<int64_t>(i)) << what;
      EXPECT_EQ(t.steps, 3) << what;
      EXPECT_DOUBLE_EQ(t.energy_j, 0.1) << what;
      EXPECT_DOUBLE_EQ(t.power_throttled_ms, 1.0) << what;
      EXPECT_GT(t.wall_s, 0.0) << what;
      EXPECT_GT(t.median_step_us, 0.0) << what;
      steps += t.steps;
    }
    EXPECT_EQ(steps, static_cast<int64_t>(r.samples_ns.size())) << what;
    for (const RoundTelemetry& t : r.telemetry) EXPECT_FALSE(t.verified) << what;

    // With the argmax checked (in the first round only), that round is marked verified.
    // A round preempted for longer than min_time_s on a loaded machine ends the pass alone, so
    // the pass is rerun with a longer minimum until it has two rounds.
    spec.verify_argmax = true;
    PassResult v;
    for (spec.min_time_s = 5e-3; spec.min_time_s < 2; spec.min_time_s *= 4) {
      v = run_pass(b, spec);  // rounds of 3 steps of a 2-layer model: several
      if (v.telemetry.size() >= 2) break;
    }
    ASSERT_GE(v.telemetry.size(), 2u) << what;
    EXPECT_TRUE(v.telemetry[0].verified) << what;
    for (size_t i = 1; i < v.telemetry.size(); ++i) EXPECT_FALSE(v.telemetry[i].verified) << what;
    spec.verify_argmax = false;
    spec.min_time_s = 1e-3;

    spec.telemetry = nullptr;  // no source, no records
    EXPECT_TRUE(run_pass(b, spec).telemetry.empty()) << what;
  }
}

TEST(Telemetry, ResultJsonTelemetryObject) {
  RunReport r = execute_run(resolve_run_config(::decodebench::testing::tiny_cpu_run_options(), 1));
  EXPECT_TRUE(result_json(r)["runs"][0]["results"]["telemetry"].is_null()) << "CPU: not asked";

  r.telemetry_asked = true;
  r.telemetry_unavailable = "libnvidia-ml.so.1 not found";
  nlohmann::json t = result_json(r)["runs"][0]["results"]["telemetry"];
  EXPECT_EQ(t["available"], false);
  EXPECT_EQ(t["reason"], "libnvidia-ml.so.1 not found");

  r.telemetry_unavailable.clear();
  GpuReading a = reading(0, 0, -1, 1980), b = reading(1'500, 0, -1, 1980);
  b.throttle_reasons = {"gpu_idle"};
  r.passes[0].pass.telemetry = {round_telemetry(0, {2000, 4000}, 0.75, a, b)};
  t = result_json(r)["runs"][0]["results"]["telemetry"];
  EXPECT_EQ(t["available"], true);
  ASSERT_EQ(t["rounds"].size(), 1u);
  const auto& round = t["rounds"][0];
  EXPECT_EQ(round["steps"], 2);
  EXPECT_DOUBLE_EQ(round["median_step_us"].get<double>(), 3.0);
  EXPECT_EQ(round["sm_clock_mhz"], 1980);
  EXPECT_DOUBLE_EQ(round["energy_j"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(round["mean_power_w"].get<double>(), 2.0);
  EXPECT_TRUE(round["thermal_throttled_ms"].is_null()) << "not reported";
  EXPECT_EQ(round["throttle_reasons"], nlohmann::json::array());
  EXPECT_DOUBLE_EQ(t["energy_j"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(t["joules_per_token"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(t["power_throttled_ms"].get<double>(), 0.0);
  EXPECT_TRUE(t["thermal_throttled_ms"].is_null());
  EXPECT_EQ(round["verified"], false);
  EXPECT_EQ(t["energy_rounds"], 1);
  EXPECT_TRUE(round["other_processes"].is_null()) << "NVML could not list them";
  EXPECT_TRUE(t["other_processes_max"].is_null());
  a.other_processes = 0;
  b.other_processes = 2;
  r.passes[0].pass.telemetry = {round_telemetry(0, {2000, 4000}, 0.75, a, b)};
  t = result_json(r)["runs"][0]["results"]["telemetry"];
  EXPECT_EQ(t["rounds"][0]["other_processes"], 2);
  EXPECT_EQ(t["other_processes_max"], 2);
  // The same round verified: the round keeps its own energy, the pass has no energy figure.
  r.passes[0].pass.telemetry[0].verified = true;
  t = result_json(r)["runs"][0]["results"]["telemetry"];
  EXPECT_EQ(t["rounds"][0]["verified"], true);
  EXPECT_DOUBLE_EQ(t["rounds"][0]["energy_j"].get<double>(), 1.5);
  EXPECT_TRUE(t["energy_j"].is_null());
  EXPECT_TRUE(t["joules_per_token"].is_null());
  EXPECT_TRUE(t["mean_power_w"].is_null());
  EXPECT_EQ(t["energy_rounds"], 0);
}

}  // namespace
}  // namespace decodebench
