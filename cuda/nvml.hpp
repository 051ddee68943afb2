// GPU facts from NVML, loaded at run time with dlopen so that the binary has no link dependency
// on the driver's libnvidia-ml and still runs (reporting "unavailable") where it is missing.
#pragma once

#include <nlohmann/json.hpp>

namespace decodebench::cuda {

/// {available, sm_clock_mhz, mem_clock_mhz, max_sm_clock_mhz, max_mem_clock_mhz,
/// throttle_reasons[], persistence_mode, ecc, temperature_c, power_limit_w, power_w} for the GPU
/// at PCI bus id `pci_bus_id`. When NVML cannot be loaded or queried: {available: false, reason}.
/// Fields NVML refuses are "unavailable".
nlohmann::json nvml_snapshot(const char* pci_bus_id);

}  // namespace decodebench::cuda
