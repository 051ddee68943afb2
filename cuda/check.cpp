#include "cuda/check.hpp"

#include <cstdio>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace decodebench::cuda {
namespace {

std::string describe(cudaError_t err, const char* call, const char* file, int line) {
  std::string msg = "CUDA call failed: ";
  msg += call;
  msg += " returned ";
  msg += cudaGetErrorName(err);
  msg += " (";
  msg += cudaGetErrorString(err);
  msg += ")";
  // The device is context for multi-GPU hosts; asking for it must not mask the original error.
  int device = -1;
  if (cudaGetDevice(&device) == cudaSuccess) {
    msg += " on device " + std::to_string(device);
  }
  msg += " at ";
  msg += file;
  msg += ":" + std::to_string(line);
  if (exit_code_for(err) == ExitCode::kContextUnusable) {
    // The call that reports a kernel fault is seldom the kernel that faulted.
    msg +=
        "; the CUDA context is unusable: restart the process (compute-sanitizer on the same "
        "command names the faulting kernel)";
  }
  return msg;
}

}  // namespace

ExitCode exit_code_for(cudaError_t err) noexcept {
  // Sticky errors that older toolkits do not name, by their stable numbers (driver_types.h).
  switch (static_cast<int>(err)) {
    case 226:  // cudaErrorContained
    case 721:  // cudaErrorTensorMemoryLeak
    case 810:  // cudaErrorMpsClientTerminated
    case 911:  // cudaErrorExternalDevice
      return ExitCode::kContextUnusable;
    default:
      break;
  }
  switch (err) {
    case cudaErrorMemoryAllocation:
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
      return ExitCode::kResources;
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
      return ExitCode::kContextUnusable;
    default:
      return ExitCode::kRuntime;
  }
}

void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  throw CudaError(exit_code_for(err), describe(err, call, file, line), err, call);
}

void report_cuda_error(cudaError_t err, const char* call, const char* file, int line) noexcept {
  try {
    const std::string msg = describe(err, call, file, line);
    std::fprintf(stderr, "decodebench: %s\n", msg.c_str());
  } catch (...) {
    std::fprintf(stderr, "decodebench: CUDA call failed: %s (%s:%d)\n", call, file, line);
  }
}

void raise_dynamic_smem(const void* kernel, int bytes) {
  using Raised = std::tuple<const void*, int, int>;  // kernel, device, bytes
  const auto covers = [&](const std::vector<Raised>& list, int device) {
    for (const auto& [k, d, b] : list) {
      if (k == kernel && d == device && b >= bytes) return true;
    }
    return false;
  };
  int device = 0;
  DB_CUDA_CHECK(cudaGetDevice(&device));
  // Eager steps launch per layer: a thread's own copy answers without the lock.
  thread_local std::vector<Raised> seen;
  if (covers(seen, device)) return;
  static std::mutex mu;
  static std::vector<Raised> raised;
  {
    const std::lock_guard<std::mutex> lock(mu);
    if (!covers(raised, device)) {
      DB_CUDA_CHECK(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
      raised.emplace_back(kernel, device, bytes);
    }
  }
  seen.emplace_back(kernel, device, bytes);
}

}  // namespace decodebench::cuda
