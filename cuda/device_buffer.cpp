#include "cuda/device_buffer.hpp"

#include <utility>

#include "cuda/check.hpp"

namespace decodebench::cuda {

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes > 0) DB_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
}

DeviceBuffer::~DeviceBuffer() { reset(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::reset() noexcept {
  if (ptr_ != nullptr) DB_CUDA_CHECK_NOTHROW(cudaFree(ptr_));
  ptr_ = nullptr;
  bytes_ = 0;
}

void copy_to_device(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  DB_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, cudaStreamLegacy));
  DB_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
}

void fill_device(void* dst, int value, size_t bytes) {
  if (bytes == 0) return;
  DB_CUDA_CHECK(cudaMemsetAsync(dst, value, bytes, cudaStreamLegacy));
  DB_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
}

PinnedBuffer::PinnedBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes > 0) DB_CUDA_CHECK(cudaMallocHost(&ptr_, bytes));
}

PinnedBuffer::~PinnedBuffer() { reset(); }

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void PinnedBuffer::reset() noexcept {
  if (ptr_ != nullptr) DB_CUDA_CHECK_NOTHROW(cudaFreeHost(ptr_));
  ptr_ = nullptr;
  bytes_ = 0;
}

CudaStream::CudaStream() {
  DB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

CudaStream::~CudaStream() {
  if (stream_ != nullptr) DB_CUDA_CHECK_NOTHROW(cudaStreamDestroy(stream_));
}

CudaStream::CudaStream(CudaStream&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)) {}

CudaStream& CudaStream::operator=(CudaStream&& other) noexcept {
  if (this != &other) {
    if (stream_ != nullptr) DB_CUDA_CHECK_NOTHROW(cudaStreamDestroy(stream_));
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

void CudaStream::synchronize() const { DB_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

CudaEvent::CudaEvent(unsigned flags) { DB_CUDA_CHECK(cudaEventCreateWithFlags(&event_, flags)); }

CudaEvent::~CudaEvent() {
  if (event_ != nullptr) DB_CUDA_CHECK_NOTHROW(cudaEventDestroy(event_));
}

CudaEvent::CudaEvent(CudaEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

CudaEvent& CudaEvent::operator=(CudaEvent&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) DB_CUDA_CHECK_NOTHROW(cudaEventDestroy(event_));
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

void CudaEvent::record(cudaStream_t stream) const {
  DB_CUDA_CHECK(cudaEventRecord(event_, stream));
}

void CudaEvent::synchronize() const { DB_CUDA_CHECK(cudaEventSynchronize(event_)); }

float CudaEvent::elapsed_ms(const CudaEvent& start, const CudaEvent& end) {
  float ms = 0.0f;
  DB_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, end.event_));
  return ms;
}

}  // namespace decodebench::cuda
