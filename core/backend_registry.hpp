// How core reaches the CUDA backend without including CUDA: the cuda/ library installs a provider
// at start-up (app/main wires it when built with CUDA); a CPU-only build has none.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/backend.hpp"
#include "core/model/model.hpp"
#include "core/run_config.hpp"
#include "core/telemetry.hpp"

namespace decodebench {

/// Construction options of a CUDA backend.
struct CudaBackendOptions {
  int64_t max_positions = 0;  ///< KV-cache capacity (per sequence)
  int64_t max_batch = 1;      ///< sequences a step_batch may hold (KV-cache slots), 1..256
  CaptureMode capture_mode = CaptureMode::kThreadLocal;
  CaptureFault inject_fault = CaptureFault::kNone;
  int device = 0;
  /// Fused kernels: RMSNorm inside the GEMVs, stacked QKV and gate/up GEMVs, SwiGLU inside the
  /// gate/up GEMV (direct / staged kernels) or the down projection's input, RoPE with the KV
  /// append (fewer launches per layer).
  bool fused = true;
  /// With `fused`: the attention kernel also writes the o projection's pre-split x' where that
  /// GEMV runs on one (AttentionParams::x_split), instead of a split kernel before it. Off only
  /// to compare both forms (tests: bit-identical logits).
  bool attention_x_split = true;
  /// Batch-1 steps advance their own inputs on the device: the argmax kernel writes the next
  /// greedy step's token id, position and seq_len, so a step fed the previous step's output at
  /// the next position needs no H2D copy (any other step copies its inputs as before). Off only
  /// to compare both forms (tests: identical tokens and logits).
  bool device_advance = true;
  /// Programmatic dependent launch: a kernel starts (loads weights) while its predecessor ends.
  bool pdl = true;
  /// Batched products (step_batch): 0 = automatic (tensor-core kernel where it exists), 1 = one
  /// GEMV per sequence (bit-identical to single-sequence decode), 2 = force the tensor-core kernel.
  int gemm_variant = 0;
  /// Quantized batch-1 GEMVs with x' split once per GEMV by its own small kernel (then the stream
  /// kernel on sm_90, else the tensor-core kernel): 0 = automatic (GEMVs of >= 4M weights), 1 =
  /// every quantized GEMV (tests), 2 = none (fused staged kernels only).
  int gemv_presplit = 0;
  /// Device layout of the quantized matrices whose batch-1 GEMVs run on a pre-split x'
  /// (WeightLayout): tiled ones (row bytes a multiple of 16, batch 1) are multiplied by the
  /// stream-tiled kernel (Q4_0, Q4_1, Q8_0 on sm_90: bulk copies, 128-bit code loads) or the tiled
  /// kernel (Q4_K, older GPUs: loads straight into registers); GGUF blocks by the stream kernel.
  WeightLayout weight_layout = WeightLayout::kAuto;
};

/// Entry points of the CUDA backend.
class CudaProvider {
 public:
  virtual ~CudaProvider() = default;
  /// True when a usable device exists; otherwise `reason` says why (no device, driver too old...).
  virtual bool available(std::string* reason) = 0;
  /// Uploads the model and preallocates everything. Throws decodebench::Error: exit 3 when the
  /// device lacks memory (naming device, free and needed bytes).
  virtual std::unique_ptr<Backend> create(const Model& model,
                                          const CudaBackendOptions& options) = 0;
  /// The `environment.gpu` JSON: name, compute capability, driver/runtime versions, memory, clocks.
  virtual nlohmann::json environment() = 0;
  /// Streaming read bandwidth of the device, GB/s (10^9 bytes/s), measured now.
  virtual double measure_read_bandwidth_gbps() = 0;
  /// Streaming read bandwidth over a buffer of `bytes`, median of `iterations` reads, GB/s.
  virtual double measure_read_bandwidth_gbps(size_t bytes, int iterations) = 0;
  /// Clock, energy and throttling readings of the device the backend runs on (the result's
  /// per-round telemetry), or nullptr when the device's management library (NVML) is missing or
  /// does not know it (`why` says why). Never throws.
  virtual std::unique_ptr<GpuTelemetry> telemetry(std::string* why) = 0;
  /// The `decodebench doctor` report (see cuda/doctor.hpp); throws Error (exit 5) only when the
  /// context cannot run anything.
  virtual nlohmann::json doctor() = 0;
};

/// Installs the provider (called once from app/main when built with CUDA).
void set_cuda_provider(std::unique_ptr<CudaProvider> provider);

/// The installed provider, or nullptr in a CPU-only build.
CudaProvider* cuda_provider();

}  // namespace decodebench
