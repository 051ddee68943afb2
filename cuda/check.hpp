// Turning CUDA runtime errors into decodebench::Error at the call site. Usable from host .cpp files
// (g++) and from .cu files (nvcc): no fmt or spdlog here.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "core/error.hpp"

namespace decodebench::cuda {

/// A failed CUDA runtime call: a decodebench::Error (exit code from exit_code_for) that also keeps
/// the cudaError_t and the call's text, for callers that react to specific errors (graph capture).
class CudaError : public Error {
 public:
  CudaError(ExitCode code, const std::string& message, cudaError_t status, const char* call)
      : Error(code, message), status_(status), call_(call) {}
  [[nodiscard]] cudaError_t status() const noexcept { return status_; }
  /// The source text of the failed call, e.g. "cudaMalloc(&ptr_, bytes)".
  [[nodiscard]] const std::string& call() const noexcept { return call_; }

 private:
  cudaError_t status_;
  std::string call_;
};

/// Exit code for a CUDA error: kResources for out-of-memory, no device and a driver too old for
/// this runtime; kContextUnusable for the sticky errors, after which every later CUDA call of the
/// process fails the same way (a kernel fault: illegal address or instruction, misaligned
/// address, launch failure or timeout, device assert; the list of CUDA 13's driver_types.h,
/// whose text for each says "the process must be terminated and relaunched"), so a suite skips
/// what is left instead of failing each configuration with a misleading error; kRuntime for
/// everything else.
[[nodiscard]] ExitCode exit_code_for(cudaError_t err) noexcept;

/// The one reporter behind DB_CUDA_CHECK: throws CudaError whose message names the call,
/// the error (cudaGetErrorName and cudaGetErrorString), the current device and file:line.
[[noreturn]] void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line);

/// The no-throw reporter behind DB_CUDA_CHECK_NOTHROW (destructors): writes the same message to
/// stderr and returns.
void report_cuda_error(cudaError_t err, const char* call, const char* file, int line) noexcept;

/// Raises `kernel`'s dynamic shared-memory limit (cudaFuncAttributeMaxDynamicSharedMemorySize)
/// to at least `bytes` on the current device, once per kernel and device: the attribute is set
/// per device, so a process that launches on a second GPU raises it there too. Thread-safe.
/// Throws CudaError when the runtime refuses (e.g. more than the device's opt-in limit).
void raise_dynamic_smem(const void* kernel, int bytes);

}  // namespace decodebench::cuda

/// Evaluates a CUDA runtime call; throws CudaError (a decodebench::Error) unless it returns
/// cudaSuccess.
#define DB_CUDA_CHECK(call)                                                           \
  do {                                                                                \
    const cudaError_t db_cuda_err_ = (call);                                          \
    if (db_cuda_err_ != cudaSuccess) {                                                \
      ::decodebench::cuda::throw_cuda_error(db_cuda_err_, #call, __FILE__, __LINE__); \
    }                                                                                 \
  } while (0)

/// As DB_CUDA_CHECK but reports to stderr instead of throwing (for destructors and cleanup).
#define DB_CUDA_CHECK_NOTHROW(call)                                                    \
  do {                                                                                 \
    const cudaError_t db_cuda_err_ = (call);                                           \
    if (db_cuda_err_ != cudaSuccess) {                                                 \
      ::decodebench::cuda::report_cuda_error(db_cuda_err_, #call, __FILE__, __LINE__); \
    }                                                                                  \
  } while (0)

/// Alias of DB_CUDA_CHECK_NOTHROW.
#define DB_CUDA_CHECK_NOEXCEPT(call) DB_CUDA_CHECK_NOTHROW(call)

/// After a kernel launch: throws when the launch failed (bad configuration, no kernel image for
/// the device, ...). cudaGetLastError also clears a non-sticky error.
#define DB_CUDA_CHECK_LAUNCH() DB_CUDA_CHECK(cudaGetLastError())
