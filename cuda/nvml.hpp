// GPU facts from NVML, loaded at run time with dlopen so that the binary has no link dependency
// on the driver's libnvidia-ml and still runs (reporting "unavailable") where it is missing.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/telemetry.hpp"

namespace decodebench::cuda {

/// {available, sm_clock_mhz, mem_clock_mhz, max_sm_clock_mhz, max_mem_clock_mhz,
/// throttle_reasons[], persistence_mode, ecc, temperature_c, power_limit_w, power_w,
/// compute_process_pids[], pid, host_pid_namespace} for the GPU at PCI bus id `pci_bus_id`:
/// compute_process_pids are the processes with a context on it as the host numbers them (this
/// one's included when it holds one), "unavailable" when NVML cannot list them or the list's record
/// size is unknown (cuda/nvml.cpp); `pid` is this process's own, which differs from its host PID
/// inside a container (host_pid_namespace false). When NVML cannot
/// be loaded or queried: {available: false, reason}. Fields NVML refuses are "unavailable".
nlohmann::json nvml_snapshot(const char* pci_bus_id);

/// Readings of the GPU at PCI bus id `pci_bus_id` (clocks, temperature, energy counter, power and
/// thermal violation times, clock event reasons, other compute processes counted by
/// other_processes in core/telemetry.hpp), NVML kept loaded for the object's life. Returns
/// nullptr when NVML cannot be loaded or does not know the device (`why`, if given, says why).
std::unique_ptr<GpuTelemetry> nvml_telemetry(const char* pci_bus_id, std::string* why);

}  // namespace decodebench::cuda
