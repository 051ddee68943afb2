// Whether a usable CUDA device exists, and why not. Host-only.
#pragma once

#include <string>

namespace decodebench::cuda {

/// True when the CUDA runtime sees at least one device. Otherwise false, and `*reason` (when not
/// null) explains in one line: no NVIDIA driver, a driver older than this runtime (with both
/// versions), no device visible (CUDA_VISIBLE_DEVICES), or the runtime's error name and message.
/// Never throws; used by the GPU tests (GTEST_SKIP with the reason) and by the CUDA backend.
bool cuda_device_available(std::string* reason);

}  // namespace decodebench::cuda
