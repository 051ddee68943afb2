#include "cuda/device_info.hpp"

#include <cuda_runtime_api.h>

#include <cstdlib>

namespace decodebench::cuda {
namespace {

/// CUDA encodes versions as 1000·major + 10·minor.
std::string version_string(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

}  // namespace

bool cuda_device_available(std::string* reason) {
  std::string why;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaSuccess && count > 0) return true;

  if (err == cudaSuccess || err == cudaErrorNoDevice) {
    why = "no CUDA device found";
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    if (visible != nullptr) why += std::string(" (CUDA_VISIBLE_DEVICES=\"") + visible + "\")";
  } else if (err == cudaErrorInsufficientDriver) {
    int driver = 0;
    int runtime = 0;
    (void)cudaDriverGetVersion(&driver);
    (void)cudaRuntimeGetVersion(&runtime);
    if (driver == 0) {
      why = "no NVIDIA driver is installed (libcuda not found); CUDA runtime " +
            version_string(runtime);
    } else {
      why = "the NVIDIA driver supports CUDA " + version_string(driver) +
            ", older than this build's CUDA runtime " + version_string(runtime) +
            "; update the driver";
    }
  } else {
    why = std::string("CUDA is unusable: cudaGetDeviceCount returned ") + cudaGetErrorName(err) +
          " (" + cudaGetErrorString(err) + ")";
  }
  // A failed cudaGetDeviceCount leaves a (non-sticky) error behind; clear it for later callers.
  (void)cudaGetLastError();
  if (reason != nullptr) *reason = why;
  return false;
}

}  // namespace decodebench::cuda
