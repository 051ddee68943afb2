#include "core/telemetry.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

#include "core/stats/statistics.hpp"

namespace decodebench {

namespace {

/// after − before of a cumulative counter, or -1 when either is unknown or it went backwards.
int64_t counter_delta(int64_t before, int64_t after) {
  return before < 0 || after < 0 || after < before ? -1 : after - before;
}

}  // namespace

int64_t other_processes(const std::vector<uint32_t>& listed, uint32_t self_pid, bool host_pids) {
  if (listed.empty()) return -1;
  // A process with several contexts on the GPU (or listed twice) counts once.
  std::set<uint32_t> pids(listed.begin(), listed.end());
  if (host_pids) {
    if (pids.erase(self_pid) == 0) return -1;
  } else {
    pids.erase(pids.begin());  // this process, under its host PID
  }
  return static_cast<int64_t>(pids.size());
}

RoundTelemetry round_telemetry(int64_t round, const std::vector<int64_t>& step_ns, double wall_s,
                               const GpuReading& before, const GpuReading& after) {
  RoundTelemetry t;
  t.round = round;
  t.steps = static_cast<int64_t>(step_ns.size());
  t.wall_s = wall_s;
  if (!step_ns.empty()) {
    const std::vector<double> s(step_ns.begin(), step_ns.end());
    t.median_step_us = summarize(s).median / 1e3;
  }
  t.sm_clock_mhz = after.sm_clock_mhz;
  t.mem_clock_mhz = after.mem_clock_mhz;
  t.temperature_c = after.temperature_c;
  const int64_t energy = counter_delta(before.energy_mj, after.energy_mj);
  if (energy >= 0) {
    t.energy_j = static_cast<double>(energy) / 1e3;
    if (wall_s > 0) t.mean_power_w = t.energy_j / wall_s;
  }
  const int64_t power = counter_delta(before.power_violation_ns, after.power_violation_ns);
  if (power >= 0) t.power_throttled_ms = static_cast<double>(power) / 1e6;
  const int64_t thermal = counter_delta(before.thermal_violation_ns, after.thermal_violation_ns);
  if (thermal >= 0) t.thermal_throttled_ms = static_cast<double>(thermal) / 1e6;
  t.reasons_known = after.reasons_known;
  for (const std::string& r : after.throttle_reasons) {
    if (r != "gpu_idle") t.throttle_reasons.push_back(r);
  }
  t.other_processes = std::max(before.other_processes, after.other_processes);
  return t;
}

TelemetrySummary summarize_telemetry(const std::vector<RoundTelemetry>& rounds, int64_t sequences) {
  TelemetrySummary s;
  s.rounds = static_cast<int64_t>(rounds.size());
  if (rounds.empty()) return s;
  double energy = 0, power_ms = 0, thermal_ms = 0;
  bool energy_known = true, power_known = true, thermal_known = true;
  int64_t tokens = 0;
  std::set<std::string> reasons;
  const auto range = [](int64_t v, int64_t& lo, int64_t& hi) {
    if (v < 0) return;
    lo = lo < 0 ? v : std::min(lo, v);
    hi = std::max(hi, v);
  };
  double energy_wall_s = 0;
  for (const RoundTelemetry& r : rounds) {
    s.wall_s += r.wall_s;
    // A verified round's wall time holds CPU reference steps and logits downloads (seconds on a
    // 7B model, with the GPU idle): its energy is not the timed steps'.
    if (!r.verified) {
      tokens += r.steps * sequences;
      energy_known = energy_known && r.energy_j >= 0;
      energy += r.energy_j;
      energy_wall_s += r.wall_s;
      ++s.energy_rounds;
    } else {
      ++s.verified_rounds;
    }
    power_known = power_known && r.power_throttled_ms >= 0;
    power_ms += r.power_throttled_ms;
    thermal_known = thermal_known && r.thermal_throttled_ms >= 0;
    thermal_ms += r.thermal_throttled_ms;
    range(r.sm_clock_mhz, s.sm_clock_min_mhz, s.sm_clock_max_mhz);
    range(r.mem_clock_mhz, s.mem_clock_min_mhz, s.mem_clock_max_mhz);
    range(r.temperature_c, s.temperature_min_c, s.temperature_max_c);
    reasons.insert(r.throttle_reasons.begin(), r.throttle_reasons.end());
    s.other_processes_max = std::max(s.other_processes_max, r.other_processes);
  }
  if (energy_known && s.energy_rounds > 0) {
    s.energy_j = energy;
    if (energy_wall_s > 0) s.mean_power_w = energy / energy_wall_s;
    if (tokens > 0) s.joules_per_token = energy / static_cast<double>(tokens);
  } else {
    s.energy_rounds = 0;
  }
  if (power_known) s.power_throttled_ms = power_ms;
  if (thermal_known) s.thermal_throttled_ms = thermal_ms;
  s.throttle_reasons.assign(reasons.begin(), reasons.end());
  return s;
}

std::string telemetry_warning(const std::string& label, const TelemetrySummary& s) {
  const auto ms = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f ms", v);
    return std::string(buf);
  };
  std::vector<std::string> clauses;
  std::string held;
  if (s.power_throttled_ms > 0) held = ms(s.power_throttled_ms) + " by its power limit";
  if (s.thermal_throttled_ms > 0) {
    held += (held.empty() ? "" : " and ") + ms(s.thermal_throttled_ms) + " by temperature";
  }
  if (!held.empty()) clauses.push_back("was held below its application clocks for " + held);
  static const std::set<std::string> kLimiting = {"sw_power_cap", "hw_slowdown", "sw_thermal",
                                                  "hw_thermal", "hw_power_brake"};
  std::string limiting;
  for (const std::string& r : s.throttle_reasons) {
    if (kLimiting.count(r)) limiting += (limiting.empty() ? "" : ", ") + r;
  }
  if (!limiting.empty()) clauses.push_back("reported " + limiting + " at a round's end");
  if (s.sm_clock_min_mhz > 0 &&
      static_cast<double>(s.sm_clock_min_mhz) < 0.98 * static_cast<double>(s.sm_clock_max_mhz)) {
    clauses.push_back("ran its SM clock at " + std::to_string(s.sm_clock_min_mhz) + "–" +
                      std::to_string(s.sm_clock_max_mhz) + " MHz at the rounds' ends");
  }
  if (clauses.empty()) return "";
  std::string text = label + ": during the timed rounds the GPU ";
  for (size_t i = 0; i < clauses.size(); ++i) text += (i == 0 ? "" : "; it ") + clauses[i];
  return text + "; the step times include the GPU's own slowdown (runs[].results.telemetry)";
}

std::string sharing_warning(const std::string& label, int64_t others) {
  if (others <= 0) return "";
  return label + ": " + std::to_string(others) + " other compute process" +
         (others == 1 ? " was" : "es were") +
         " seen on the GPU in the readings around the timed rounds (NVML): whatever " +
         (others == 1 ? "it runs shares" : "they run share") +
         " the GPU with the timed steps, so the step times may include it; give timed runs the "
         "GPU alone (nvidia-smi lists its processes; runs[].results.telemetry.rounds[]"
         ".other_processes)";
}

}  // namespace decodebench
