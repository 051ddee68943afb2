#include "core/backend_registry.hpp"

namespace decodebench {

namespace {
std::unique_ptr<CudaProvider>& provider_slot() {
  static std::unique_ptr<CudaProvider> provider;
  return provider;
}
}  // namespace

void set_cuda_provider(std::unique_ptr<CudaProvider> provider) {
  provider_slot() = std::move(provider);
}

CudaProvider* cuda_provider() { return provider_slot().get(); }

}  // namespace decodebench
