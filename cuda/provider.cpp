#include "cuda/provider.hpp"

#include <cuda_runtime_api.h>

#include <memory>

#include "core/backend_registry.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/device_info.hpp"
#include "cuda/doctor.hpp"
#include "cuda/kernels/bandwidth.cuh"
#include "cuda/nvml.hpp"

namespace decodebench::cuda {

namespace {

class Provider final : public CudaProvider {
 public:
  bool available(std::string* reason) override { return cuda_device_available(reason); }

  std::unique_ptr<Backend> create(const Model& model, const CudaBackendOptions& options) override {
    return std::make_unique<CudaBackend>(model, options);
  }

  nlohmann::json environment() override { return gpu_environment(0); }

  double measure_read_bandwidth_gbps() override {
    // 4 GiB: far beyond the 60 MB L2, so every read comes from HBM.
    return measure_read_bandwidth_gbps(size_t{4} << 30, 20);
  }

  double measure_read_bandwidth_gbps(size_t bytes, int iterations) override {
    CudaStream stream;
    return cuda::measure_read_bandwidth_gbps(bytes, iterations, stream.get());
  }

  nlohmann::json doctor() override { return run_doctor(); }

  std::unique_ptr<GpuTelemetry> telemetry(std::string* why) override {
    char bus[32] = {0};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, 0) != cudaSuccess) {
      if (why) *why = "cudaDeviceGetPCIBusId failed";
      return nullptr;
    }
    return nvml_telemetry(bus, why);
  }
};

}  // namespace

void install_provider() { set_cuda_provider(std::make_unique<Provider>()); }

}  // namespace decodebench::cuda
