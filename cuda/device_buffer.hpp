// Move-only RAII owners of CUDA resources: device memory, pinned host memory, a stream, an event;
// and host-to-device copies and fills that are done when they return. Host-only (g++ compiles it);
// every failure throws decodebench::Error through DB_CUDA_CHECK.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace decodebench::cuda {

/// Device memory from cudaMalloc (256-byte aligned), freed on destruction. Never allocates inside
/// a decode step: buffers are created once with the workspace.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  /// Allocates `bytes` bytes (0 allowed: no allocation). Throws Error (exit 3) when out of memory.
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  [[nodiscard]] size_t bytes() const { return bytes_; }
  [[nodiscard]] bool empty() const { return ptr_ == nullptr; }
  [[nodiscard]] void* get() const { return ptr_; }
  /// The memory as an array of T (no check that bytes() is a multiple of sizeof(T)); data() is the
  /// untyped void*.
  template <typename T = void>
  [[nodiscard]] T* data() const {
    return static_cast<T*>(ptr_);
  }
  /// Frees the memory now (idempotent).
  void reset() noexcept;

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

/// Copies `bytes` bytes from host memory at `src` to device memory at `dst` and returns only once
/// they are there. Plain cudaMemcpy is not enough before work on a non-blocking stream (every
/// stream here is one): from pageable memory it returns once the source is staged, "but the DMA to
/// final destination may not have completed" (CUDA Runtime API, "API synchronization behavior"),
/// and its legacy stream is not one that non-blocking streams wait for. A kernel launched right
/// after it could then read the old bytes, which happened to a test's graph launch while another
/// process shared the GPU (docs/performance.md, round 42).
/// Contract, for this and fill_device: it runs on the legacy stream, so it does not wait for work
/// already queued on a non-blocking stream (synchronize the one that last used `dst` first); its
/// synchronization also waits for earlier work on blocking streams and reports an error left by
/// earlier kernels as its own; it must not be called while this thread, or any thread in global
/// mode, captures a graph. 0 bytes: no CUDA call. Throws CudaError (a decodebench::Error).
void copy_to_device(void* dst, const void* src, size_t bytes);

/// Sets `bytes` bytes of device memory at `dst` to the byte `value` and returns only once they are
/// set (cudaMemset is asynchronous for device memory, on the legacy stream). The contract and
/// errors are copy_to_device's.
void fill_device(void* dst, int value, size_t bytes);

/// Page-locked host memory from cudaMallocHost (for async copies), freed on destruction.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  /// Allocates `bytes` bytes (0 allowed). Throws Error (exit 3) when out of memory.
  explicit PinnedBuffer(size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  [[nodiscard]] size_t bytes() const { return bytes_; }
  [[nodiscard]] void* get() const { return ptr_; }
  template <typename T = void>
  [[nodiscard]] T* data() const {
    return static_cast<T*>(ptr_);
  }
  void reset() noexcept;

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

/// A non-blocking stream (cudaStreamNonBlocking: no implicit sync with the legacy stream, as graph
/// capture requires), destroyed on destruction.
class CudaStream {
 public:
  /// Creates the stream on the current device.
  CudaStream();
  ~CudaStream();
  CudaStream(CudaStream&& other) noexcept;
  CudaStream& operator=(CudaStream&& other) noexcept;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  [[nodiscard]] cudaStream_t get() const { return stream_; }
  /// Blocks until all work on the stream is done; throws on an asynchronous error.
  void synchronize() const;

 private:
  cudaStream_t stream_ = nullptr;
};

/// A CUDA event. Timing events by default; pass cudaEventDisableTiming for pure synchronization.
class CudaEvent {
 public:
  explicit CudaEvent(unsigned flags = cudaEventDefault);
  ~CudaEvent();
  CudaEvent(CudaEvent&& other) noexcept;
  CudaEvent& operator=(CudaEvent&& other) noexcept;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  [[nodiscard]] cudaEvent_t get() const { return event_; }
  /// Records the event on `stream`.
  void record(cudaStream_t stream) const;
  /// Blocks until the event has completed.
  void synchronize() const;
  /// Milliseconds between `start` and `end` (both recorded and completed; timing events).
  [[nodiscard]] static float elapsed_ms(const CudaEvent& start, const CudaEvent& end);

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace decodebench::cuda
