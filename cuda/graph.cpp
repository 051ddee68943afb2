#include "cuda/graph.hpp"

#include <chrono>
#include <cstring>

#include "cuda/check.hpp"
#include "cuda/kernels/health.cuh"

namespace decodebench::cuda {

GraphExec::~GraphExec() {
  if (exec_) DB_CUDA_CHECK_NOEXCEPT(cudaGraphExecDestroy(exec_));
  if (graph_) DB_CUDA_CHECK_NOEXCEPT(cudaGraphDestroy(graph_));
}

GraphExec& GraphExec::operator=(GraphExec&& o) noexcept {
  if (this != &o) {
    if (exec_) DB_CUDA_CHECK_NOEXCEPT(cudaGraphExecDestroy(exec_));
    if (graph_) DB_CUDA_CHECK_NOEXCEPT(cudaGraphDestroy(graph_));
    graph_ = std::exchange(o.graph_, nullptr);
    exec_ = std::exchange(o.exec_, nullptr);
  }
  return *this;
}

size_t GraphExec::nodes() const {
  size_t n = 0;
  if (graph_) DB_CUDA_CHECK(cudaGraphGetNodes(graph_, nullptr, &n));
  return n;
}

void GraphExec::launch(cudaStream_t stream) const { DB_CUDA_CHECK(cudaGraphLaunch(exec_, stream)); }

cudaStreamCaptureMode to_cuda(CaptureMode mode) {
  switch (mode) {
    case CaptureMode::kGlobal:
      return cudaStreamCaptureModeGlobal;
    case CaptureMode::kRelaxed:
      return cudaStreamCaptureModeRelaxed;
    case CaptureMode::kThreadLocal:
      break;
  }
  return cudaStreamCaptureModeThreadLocal;
}

bool context_is_healthy(std::string* why) {
  cudaStream_t s = nullptr;
  cudaError_t st = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (st == cudaSuccess) st = launch_health_probe(s);
  if (st == cudaSuccess) st = cudaStreamSynchronize(s);
  // The legacy default stream must work too (a fault may have tangled it into the capture);
  // decodebench's own copies of weights go through it.
  if (st == cudaSuccess) st = launch_health_probe(cudaStreamLegacy);
  if (st == cudaSuccess) st = cudaStreamSynchronize(cudaStreamLegacy);
  if (s) cudaStreamDestroy(s);
  if (st != cudaSuccess && why) {
    *why = std::string(cudaGetErrorName(st)) + " (" + cudaGetErrorString(st) + ")";
  }
  return st == cudaSuccess;
}

namespace {

struct FaultResult {
  cudaError_t status = cudaSuccess;
  const char* call = "";
  void* allocation = nullptr;  // a successful relaxed-mode cudaMalloc, freed after the capture
};

// Performs one call that is illegal inside a (global or thread-local) stream capture.
FaultResult inject_fault(CaptureFault fault, cudaStream_t stream, cudaEvent_t event,
                         void* scratch) {
  FaultResult r;
  switch (fault) {
    case CaptureFault::kNone:
      break;
    case CaptureFault::kAlloc:
      r.call = "cudaMalloc";
      r.status = cudaMalloc(&r.allocation, 256);
      break;
    case CaptureFault::kLegacySync:
      // The legacy default stream waits on work of the capture and is synchronised: code that
      // mixes stream 0 into a captured sequence. (A plain synchronous cudaMemcpy is legal next
      // to decodebench's non-blocking capture stream, so it would not exercise the failure.)
      r.call = "cudaStreamWaitEvent(cudaStreamLegacy, captured event)";
      r.status = cudaEventRecord(event, stream);
      if (r.status == cudaSuccess) r.status = cudaStreamWaitEvent(cudaStreamLegacy, event, 0);
      if (r.status == cudaSuccess) {
        r.call = "cudaStreamSynchronize(cudaStreamLegacy)";
        r.status = cudaStreamSynchronize(cudaStreamLegacy);
      }
      (void)scratch;
      break;
    case CaptureFault::kHostSync:
      r.call = "cudaStreamSynchronize (capturing stream)";
      r.status = cudaStreamSynchronize(stream);
      break;
    case CaptureFault::kEventQuery:
      r.call = "cudaEventQuery (event recorded in the capture)";
      r.status = cudaEventRecord(event, stream);
      if (r.status == cudaSuccess) r.status = cudaEventQuery(event);
      break;
    case CaptureFault::kDeviceSync:
      r.call = "cudaDeviceSynchronize";
      r.status = cudaDeviceSynchronize();
      break;
  }
  return r;
}

}  // namespace

CaptureOutcome capture_graph(cudaStream_t stream, CaptureMode mode, CaptureFault fault,
                             const std::function<void()>& enqueue_first,
                             const std::function<void()>& enqueue_second, void* scratch) {
  CaptureOutcome out;
  const auto t0 = std::chrono::steady_clock::now();
  cudaEvent_t event = nullptr;
  if (fault == CaptureFault::kEventQuery || fault == CaptureFault::kLegacySync) {
    DB_CUDA_CHECK(cudaEventCreate(&event));
  }
  // Everything queued before the capture must be done: a capture starts from a quiet stream.
  DB_CUDA_CHECK(cudaStreamSynchronize(stream));

  cudaGraph_t graph = nullptr;
  FaultResult fr;
  const auto fail = [&](const std::string& call, cudaError_t st, const std::string& message) {
    if (!out.failed_call.empty()) return;  // keep the first failure
    out.failed_call = call;
    out.error_name = cudaGetErrorName(st);
    out.error_message = message;
  };

  cudaError_t st = cudaStreamBeginCapture(stream, to_cuda(mode));
  if (st != cudaSuccess) {
    fail("cudaStreamBeginCapture", st, cudaGetErrorString(st));
  } else {
    try {
      enqueue_first();
      fr = inject_fault(fault, stream, event, scratch);
      if (fr.status != cudaSuccess) {
        fail(fr.call, fr.status, cudaGetErrorString(fr.status));
      } else {
        enqueue_second();
      }
    } catch (const CudaError& e) {
      fail(e.call(), e.status(), e.what());
    }
    // Always end the capture, even when it is invalidated, so the stream is usable again.
    st = cudaStreamEndCapture(stream, &graph);
    if (st != cudaSuccess) fail("cudaStreamEndCapture", st, cudaGetErrorString(st));
  }

  if (out.failed_call.empty() && graph != nullptr) {
    cudaGraphExec_t exec = nullptr;
    st = cudaGraphInstantiate(&exec, graph, 0);
    if (st != cudaSuccess) {
      fail("cudaGraphInstantiate", st, cudaGetErrorString(st));
    } else {
      out.exec = GraphExec(graph, exec);
      graph = nullptr;
    }
  }
  if (!out.failed_call.empty()) {
    // Recovery: no partial graph, no capture left open, no sticky error from the failed call.
    if (graph) cudaGraphDestroy(graph);
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &status) == cudaSuccess &&
        status != cudaStreamCaptureStatusNone) {
      cudaGraph_t dangling = nullptr;
      cudaStreamEndCapture(stream, &dangling);
      if (dangling) cudaGraphDestroy(dangling);
    }
    cudaGetLastError();
    cudaStreamSynchronize(stream);
    cudaGetLastError();
    std::string why;
    out.context_healthy = context_is_healthy(&why);
    if (!out.context_healthy) out.error_message += "; after recovery the context fails: " + why;
  }
  if (fr.allocation) cudaFree(fr.allocation);
  if (event) cudaEventDestroy(event);
  out.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace decodebench::cuda
