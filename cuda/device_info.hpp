// Whether a usable CUDA device exists, and why not. Host-only.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace decodebench::cuda {

/// True when the CUDA runtime sees at least one device. Otherwise false, and `*reason` (when not
/// null) explains in one line: no NVIDIA driver, a driver older than this runtime (with both
/// versions), no device visible (CUDA_VISIBLE_DEVICES), or the runtime's error name and message.
/// Never throws; used by the GPU tests (GTEST_SKIP with the reason) and by the CUDA backend.
bool cuda_device_available(std::string* reason);

/// The `environment.gpu` JSON of `device`: name, compute capability, SM count, memory, L2, clocks,
/// driver and runtime versions, PCI bus id, and an NVML snapshot (clocks, throttle reasons,
/// persistence mode, ECC, temperature, power) or "unavailable". Throws CudaError.
nlohmann::json gpu_environment(int device);

/// "13.0" from a CUDA version number such as 13000 (1000·major + 10·minor).
std::string cuda_version_text(int version);

}  // namespace decodebench::cuda
