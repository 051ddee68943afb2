#include "cuda/device_info.hpp"

#include <cuda_runtime_api.h>

#include <cstdlib>

#include "cuda/check.hpp"
#include "cuda/nvml.hpp"

namespace decodebench::cuda {

std::string cuda_version_text(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

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
            cuda_version_text(runtime);
    } else {
      why = "the NVIDIA driver supports CUDA " + cuda_version_text(driver) +
            ", older than this build's CUDA runtime " + cuda_version_text(runtime) +
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

nlohmann::json gpu_environment(int device) {
  cudaDeviceProp p{};
  DB_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  int runtime = 0, driver = 0, sm_khz = 0, mem_khz = 0;
  DB_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  DB_CUDA_CHECK(cudaDriverGetVersion(&driver));
  DB_CUDA_CHECK(cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, device));
  DB_CUDA_CHECK(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device));
  size_t free_bytes = 0, total_bytes = 0;
  DB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  char bus[32] = {0};
  DB_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, device));
  return {{"index", device},
          {"name", p.name},
          {"cc", std::to_string(p.major) + "." + std::to_string(p.minor)},
          {"sm_count", p.multiProcessorCount},
          {"memory_bytes", total_bytes},
          {"memory_free_bytes", free_bytes},
          {"l2_bytes", p.l2CacheSize},
          {"memory_bus_bits", p.memoryBusWidth},
          {"max_sm_clock_mhz", sm_khz / 1000},
          {"max_mem_clock_mhz", mem_khz / 1000},
          {"driver", cuda_version_text(driver)},
          {"runtime", cuda_version_text(runtime)},
          {"pci_bus_id", bus},
          {"nvml", nvml_snapshot(bus)}};
}

}  // namespace decodebench::cuda
