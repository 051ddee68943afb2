// CUDA graph capture and replay of the decode step, with recovery from failed captures.
// Kernels know nothing about graphs: the step is a callable that enqueues work on a stream.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <string>
#include <utility>

#include "core/run_config.hpp"

namespace decodebench::cuda {

/// Move-only owner of a captured graph and its executable instance.
class GraphExec {
 public:
  GraphExec() = default;
  GraphExec(cudaGraph_t graph, cudaGraphExec_t exec) : graph_(graph), exec_(exec) {}
  ~GraphExec();
  GraphExec(GraphExec&& o) noexcept
      : graph_(std::exchange(o.graph_, nullptr)), exec_(std::exchange(o.exec_, nullptr)) {}
  GraphExec& operator=(GraphExec&& o) noexcept;
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;

  [[nodiscard]] bool valid() const { return exec_ != nullptr; }
  [[nodiscard]] size_t nodes() const;
  /// Launches the graph on `stream` (throws CudaError).
  void launch(cudaStream_t stream) const;

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

/// Outcome of one capture attempt.
struct CaptureOutcome {
  GraphExec exec;           ///< valid when the capture succeeded
  std::string failed_call;  ///< the first API call that failed ("" on success)
  std::string error_name;   ///< cudaGetErrorName of that failure
  std::string error_message;
  bool context_healthy = true;  ///< a trivial kernel ran after recovery
  double ms = 0;                ///< capture + instantiate time
};

/// cudaStreamCaptureMode for a CaptureMode.
cudaStreamCaptureMode to_cuda(CaptureMode mode);

/// Captures the work `enqueue` issues on `stream` into a graph and instantiates it.
/// `fault` (for tests and `doctor`) performs one illegal call of that kind in the middle of the
/// capture, after `enqueue_first` and before `enqueue_second`.
/// Never leaves the stream capturing: on any failure the capture is ended, the partial graph
/// destroyed, the error state cleared, the stream synchronised, and the context proven healthy by
/// a trivial kernel (`context_healthy` false when that fails — the caller then stops with exit 5).
/// `scratch` is a device buffer of >= 256 bytes the legacy-stream fault may write.
CaptureOutcome capture_graph(cudaStream_t stream, CaptureMode mode, CaptureFault fault,
                             const std::function<void()>& enqueue_first,
                             const std::function<void()>& enqueue_second, void* scratch);

/// Launches a 1-thread kernel on a fresh stream and on the legacy default stream and synchronises
/// both: true when the context works.
bool context_is_healthy(std::string* why);

/// The graphs of one decode step: `full` (forward + argmax, whose final kernel stores the token in
/// pinned host memory, or a 4-byte D2H copy after it; one launch per token) and the split pair
/// used for phase timing.
struct StepGraphs {
  GraphExec full;
  GraphExec forward;
  GraphExec argmax;
};

}  // namespace decodebench::cuda
