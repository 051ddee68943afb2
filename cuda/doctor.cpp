#include "cuda/doctor.hpp"

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/cpu/thread_pool.hpp"
#include "core/error.hpp"
#include "core/model/synthetic.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/device_info.hpp"
#include "cuda/graph.hpp"
#include "cuda/kernels/health.cuh"

namespace decodebench::cuda {

namespace {

// A small Qwen2-style model: big enough to exercise every kernel, small enough to build in
// milliseconds.
Model doctor_model() {
  ModelConfig c;
  c.n_layers = 2;
  c.hidden = 256;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 64;
  c.rope_dim = 64;
  c.ffn = 512;
  c.vocab = 1000;
  c.context_length = 256;
  c.qkv_bias = true;
  cpu::ThreadPool pool(2);
  return make_synthetic_model(c, WeightType::kF16, 1234, pool);
}

constexpr int kPrompt = 4;
constexpr int kSteps = 8;

std::vector<int32_t> decode(Backend& b, ExecMode mode, ExecReport* report, int steps = kSteps) {
  std::vector<int32_t> ids;
  int32_t t = b.prefill(std::vector<int32_t>{1, 2, 3, 4});
  const ExecReport r = b.set_exec_mode(mode);
  if (report) *report = r;
  ids.push_back(t);
  for (int i = 0; i < steps; ++i) ids.push_back(t = b.step(t, kPrompt + i, nullptr));
  return ids;
}

struct CrossThreadResult {
  bool captured = false;
  std::string capture_error;
  std::string other_thread_error;
  bool context_healthy = true;  ///< false: the failed capture left the context unusable
};

// Thread A captures a graph; while A's capture is open, thread B allocates and frees device
// memory (legal on its own). In global mode B's call is refused; thread-local and relaxed modes
// let both proceed.
CrossThreadResult cross_thread_probe(CaptureMode mode) {
  CrossThreadResult r;
  CudaStream stream;
  std::mutex m;
  std::condition_variable cv;
  int phase = 0;
  bool released = false;  // the capture is over: B stops waiting for phase 1
  cudaError_t other = cudaSuccess;
  std::thread b([&] {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return phase == 1 || released; });
    if (phase != 1) return;  // the capture never reached its first half
    void* p = nullptr;
    other = cudaMalloc(&p, 1 << 20);
    if (other == cudaSuccess) cudaFree(p);
    cudaGetLastError();
    phase = 2;
    cv.notify_all();
  });
  // However the capture ends (a capture that never began, or an exception), B must be let go and
  // joined: else it waits forever, or a joinable thread's destructor aborts the process.
  const auto release = [&] {
    {
      const std::lock_guard<std::mutex> lock(m);
      released = true;
    }
    cv.notify_all();
    if (b.joinable()) b.join();
  };
  CaptureOutcome out;
  try {
    out = capture_graph(
        stream.get(), mode, CaptureFault::kNone,
        [&] {
          launch_health_probe(stream.get());
          std::unique_lock<std::mutex> lock(m);
          phase = 1;
          cv.notify_all();
          cv.wait(lock, [&] { return phase == 2; });
        },
        [&] { launch_health_probe(stream.get()); }, nullptr);
  } catch (...) {
    release();
    throw;
  }
  release();
  r.captured = out.exec.valid();
  r.context_healthy = out.context_healthy;
  if (!r.captured) {
    r.capture_error = out.failed_call + ": " + out.error_name;
    if (!r.context_healthy) r.capture_error += " (" + out.error_message + ")";
  }
  if (other != cudaSuccess)
    r.other_thread_error = std::string("cudaMalloc: ") + cudaGetErrorName(other);
  return r;
}

}  // namespace

nlohmann::json run_doctor() {
  nlohmann::json report;
  report["gpu"] = gpu_environment(0);
  const Model model = doctor_model();
  CudaBackendOptions base;
  base.max_positions = kPrompt + 64 + 1;

  // Reference: a clean eager run.
  std::vector<int32_t> reference;
  {
    CudaBackend b(model, base);
    reference = decode(b, ExecMode::kEager, nullptr);
  }

  bool healthy = true;
  bool poisoned = false;
  std::string first_problem;
  nlohmann::json matrix = nlohmann::json::array();
  const CaptureMode modes[] = {CaptureMode::kThreadLocal, CaptureMode::kGlobal,
                               CaptureMode::kRelaxed};
  const CaptureFault faults[] = {CaptureFault::kNone,       CaptureFault::kAlloc,
                                 CaptureFault::kLegacySync, CaptureFault::kHostSync,
                                 CaptureFault::kEventQuery, CaptureFault::kDeviceSync};
  for (CaptureMode mode : modes) {
    for (CaptureFault fault : faults) {
      nlohmann::json row = {{"capture_mode", capture_mode_name(mode)},
                            {"fault", capture_fault_name(fault)}};
      if (poisoned) {
        row["outcome"] = "skipped";
        matrix.push_back(row);
        continue;
      }
      CudaBackendOptions o = base;
      o.capture_mode = mode;
      o.inject_fault = fault;
      try {
        CudaBackend b(model, o);
        ExecReport er;
        const auto ids = decode(b, ExecMode::kGraph, &er);
        row["outcome"] = er.captured ? "captured" : "recovered";
        row["failed_call"] = er.failed_call;
        row["error"] = er.error_name;
        row["tokens_match"] = ids == reference;
        if (ids != reference) {
          healthy = false;
          if (first_problem.empty()) {
            first_problem = std::string("tokens differ after ") + capture_fault_name(fault) +
                            " in " + capture_mode_name(mode) + " mode";
          }
        }
        if (fault == CaptureFault::kNone && !er.captured) {
          healthy = false;
          if (first_problem.empty()) {
            first_problem = std::string("a clean capture fails in ") + capture_mode_name(mode) +
                            " mode (" + er.failed_call + ": " + er.error_name + ")";
          }
        }
      } catch (const Error& e) {
        row["outcome"] = e.code() == ExitCode::kContextUnusable ? "poisoned" : "error";
        row["error"] = e.what();
        healthy = false;
        poisoned = e.code() == ExitCode::kContextUnusable;
        // The verdict names what an exit code of 5 is about, whatever failed before.
        if (first_problem.empty() || poisoned) first_problem = e.what();
      }
      matrix.push_back(row);
    }
  }
  report["matrix"] = matrix;

  nlohmann::json cross = nlohmann::json::array();
  if (!poisoned) {
    for (CaptureMode mode : modes) {
      const CrossThreadResult r = cross_thread_probe(mode);
      cross.push_back({{"capture_mode", capture_mode_name(mode)},
                       {"captured", r.captured},
                       {"capture_error", r.capture_error},
                       {"other_thread_error", r.other_thread_error}});
      if (!r.context_healthy) {
        // The verdict names what the exit code (5) is about, whatever failed before.
        healthy = false;
        poisoned = true;
        first_problem = std::string("the CUDA context is unusable after the cross-thread probe (") +
                        capture_mode_name(mode) + ": " + r.capture_error + ")";
        break;
      }
      if (mode == CaptureMode::kThreadLocal && (!r.captured || !r.other_thread_error.empty())) {
        healthy = false;
        if (first_problem.empty()) {
          first_problem = "thread-local capture disturbed by another thread's CUDA use";
        }
      }
    }
  }
  report["cross_thread"] = cross;

  bool replay_ok = false;
  if (!poisoned) {
    try {
      CudaBackend eager(model, base);
      CudaBackend graph(model, base);
      const auto e = decode(eager, ExecMode::kEager, nullptr, 64);
      ExecReport er;
      const auto g = decode(graph, ExecMode::kGraph, &er, 64);
      replay_ok = er.captured && e == g;
      if (!replay_ok) {
        healthy = false;
        if (first_problem.empty()) first_problem = "graph replay differs from eager execution";
      }
    } catch (const Error& e) {
      // The report still says what ran: a kernel fault here (exit 5) leaves the check unrun.
      if (e.code() != ExitCode::kContextUnusable) throw;
      healthy = false;
      poisoned = true;
      first_problem = e.what();  // the verdict names what the exit code (5) is about
    }
  }
  // Not run on an unusable context: null, not false (which would read as a replay that differs).
  report["replay_matches_eager"] = poisoned ? nlohmann::json(nullptr) : nlohmann::json(replay_ok);
  report["context_unusable"] = poisoned;
  report["healthy"] = healthy;
  report["verdict"] = healthy ? "healthy: graph capture, fault recovery and replay all work"
                              : "unhealthy: " + first_problem;
  return report;
}

}  // namespace decodebench::cuda
