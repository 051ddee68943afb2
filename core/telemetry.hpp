// GPU telemetry per round of timed steps: clocks, temperature, energy, the time the GPU was held
// below its application clocks and the other compute processes on it, read from the device (NVML,
// cuda/nvml.cpp) before the first round and after each one, outside the timed steps. A run can
// then tell a slow round caused by power or thermal limits, or by a shared GPU, from one caused by
// the kernels.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace decodebench {

/// One reading of a GPU's clocks and counters. Fields the device does not report are -1;
/// `reasons_known` is false when the clock event reasons could not be read.
struct GpuReading {
  int64_t sm_clock_mhz = -1;   ///< current SM clock, MHz
  int64_t mem_clock_mhz = -1;  ///< current memory clock, MHz
  int64_t temperature_c = -1;  ///< GPU temperature, °C
  /// Energy since the driver loaded, mJ (nvmlDeviceGetTotalEnergyConsumption; the driver updates
  /// it every 20–100 ms, so differences over shorter intervals are coarse).
  int64_t energy_mj = -1;
  /// Time the GPU was held below its application clocks by its power limit, ns, cumulative
  /// (nvmlDeviceGetViolationStatus with NVML_PERF_POLICY_POWER).
  int64_t power_violation_ns = -1;
  /// The same for thermal limits (NVML_PERF_POLICY_THERMAL).
  int64_t thermal_violation_ns = -1;
  /// Clock event reasons active now ("sw_power_cap", "hw_slowdown", ...; "gpu_idle" included).
  std::vector<std::string> throttle_reasons;
  bool reasons_known = false;
  /// Compute processes with a context on the GPU besides this one (other_processes below, from
  /// nvmlDeviceGetComputeRunningProcesses); -1 when unknown (see other_processes).
  int64_t other_processes = -1;
};

/// How many of the processes `listed` (PIDs of the compute processes NVML lists on a GPU) are
/// other than this one (PID `self_pid`), for a process that holds a context on that GPU. NVML
/// lists PIDs as the host numbers them. In the host's PID namespace (`host_pids`) this process
/// must be among them: if it is not (an MPS client, a list NVML filters), the list cannot be
/// trusted and the count is unknown. Inside a container (`host_pids` false) its own PID means
/// nothing to the list, so one listed PID is taken for this process. Returns -1 when unknown,
/// and for an empty list.
int64_t other_processes(const std::vector<uint32_t>& listed, uint32_t self_pid, bool host_pids);

/// A source of readings of one GPU (the CUDA backend's device, through NVML).
class GpuTelemetry {
 public:
  virtual ~GpuTelemetry() = default;
  /// Reads the clocks and counters now. Never throws: what cannot be read is -1.
  virtual GpuReading read() = 0;
};

/// What the GPU did during one round of timed steps: clocks, temperature and active clock event
/// reasons at the round's end; energy and throttled time as the counters' increase over the
/// round (from the reading before it). -1: not reported by the device.
struct RoundTelemetry {
  int64_t round = 0;          ///< 0-based
  int64_t steps = 0;          ///< timed steps in the round
  double wall_s = 0;          ///< the round's wall time (its steps and the work between them), s
  double median_step_us = 0;  ///< median of the round's step times, µs
  int64_t sm_clock_mhz = -1;
  int64_t mem_clock_mhz = -1;
  int64_t temperature_c = -1;
  double energy_j = -1;                       ///< energy used during the round, J
  double mean_power_w = -1;                   ///< energy_j / wall_s, W
  double power_throttled_ms = -1;             ///< time held below application clocks by power, ms
  double thermal_throttled_ms = -1;           ///< ... by temperature, ms
  std::vector<std::string> throttle_reasons;  ///< active at the round's end (gpu_idle left out)
  bool reasons_known = false;
  /// The round checked steps between its timed steps (--verify, --verify-argmax: logits
  /// downloads and CPU reference steps), so its wall time and energy hold that work too.
  bool verified = false;
  /// Most compute processes besides this one seen on the GPU by the readings before and after
  /// the round (GpuReading::other_processes); -1 when neither could list them.
  int64_t other_processes = -1;
};

/// A pass's telemetry over all its rounds. -1: not reported (for energy: by any round).
struct TelemetrySummary {
  int64_t rounds = 0;
  double wall_s = 0;  ///< Σ round wall times, s
  /// Σ energies of the rounds without verification (RoundTelemetry::verified), J; -1 when every
  /// round verified (one round of a --verify pass) or one of them has no energy reading
  double energy_j = -1;
  double mean_power_w = -1;      ///< energy_j / those rounds' wall time, W
  double joules_per_token = -1;  ///< energy_j / tokens decoded in those rounds (all sequences), J
  int64_t energy_rounds = 0;     ///< rounds the energy figures cover
  int64_t verified_rounds = 0;   ///< rounds left out of them as verified
  int64_t sm_clock_min_mhz = -1, sm_clock_max_mhz = -1;  ///< over the rounds' end readings
  int64_t mem_clock_min_mhz = -1, mem_clock_max_mhz = -1;
  int64_t temperature_min_c = -1, temperature_max_c = -1;
  double power_throttled_ms = -1;             ///< Σ over the rounds
  double thermal_throttled_ms = -1;           ///< Σ over the rounds
  std::vector<std::string> throttle_reasons;  ///< seen at any round's end, sorted, no duplicates
  int64_t other_processes_max = -1;  ///< most other compute processes in a round; -1: unknown
};

/// Totals and ranges of `rounds` (RoundTelemetry of one pass) where every step decodes
/// `sequences` tokens.
TelemetrySummary summarize_telemetry(const std::vector<RoundTelemetry>& rounds, int64_t sequences);

/// A warning for the pass labelled `label` when the GPU was held below its application clocks by
/// its power or thermal limits during the timed rounds, a limiting clock event reason was active
/// at a round's end, or the SM clock at the rounds' ends varied by more than 2%: the step times
/// then include the GPU's own slowdown. "" when none of that happened.
std::string telemetry_warning(const std::string& label, const TelemetrySummary& s);

/// A warning for the pass or passes `label` (labels joined by ", ") when the readings around their
/// timed rounds saw `others` other compute processes on the GPU at most
/// (TelemetrySummary::other_processes_max): their kernels and copies share the GPU's SMs and memory
/// bandwidth with the timed steps, and decodebench cannot tell how much they ran. "" when `others`
/// is 0 or unknown (-1).
std::string sharing_warning(const std::string& label, int64_t others);

/// The round record from the readings before (`before`) and after (`after`) a round of `steps`
/// step times `step_ns` (ns) that took `wall_s` seconds. Counter differences are -1 where either
/// reading lacks the counter or it went backwards (a driver reload).
RoundTelemetry round_telemetry(int64_t round, const std::vector<int64_t>& step_ns, double wall_s,
                               const GpuReading& before, const GpuReading& after);

}  // namespace decodebench
