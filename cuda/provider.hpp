// Installs the CUDA backend into core's registry (core never includes CUDA headers).
#pragma once

namespace decodebench::cuda {

/// Makes core::cuda_provider() return the CUDA backend's entry points. Called once by app/.
void install_provider();

}  // namespace decodebench::cuda
