// CUDA runtime helpers: error checking, RAII buffers, device detection, the bandwidth probe, and
// graph capture of the decode kernels (fixed shapes, device-side inputs: a captured step must give
// bit-identical results to the same launches run eagerly).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/model/config.hpp"
#include "core/quant/dequant.hpp"
#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/device_info.hpp"
#include "cuda/kernels/argmax.cuh"
#include "cuda/kernels/attention.cuh"
#include "cuda/kernels/bandwidth.cuh"
#include "cuda/kernels/delayed_copy.cuh"
#include "cuda/kernels/embedding.cuh"
#include "cuda/kernels/gemv.cuh"
#include "cuda/kernels/kv_cache.cuh"
#include "cuda/kernels/rms_norm.cuh"
#include "cuda/kernels/rope.cuh"
#include "cuda/kernels/swiglu.cuh"
#include "tests/cuda/cuda_test_util.hpp"

namespace decodebench::cuda {
namespace {

using testing::all_bits_equal;
using testing::download;
using testing::random_floats;
using testing::upload;

// ---- error checking (no device needed) ---------------------------------------------------

TEST(CudaCheck, ThrowsCudaErrorWithCallNameAndLocation) {
  try {
    DB_CUDA_CHECK(cudaErrorInvalidValue);
    FAIL() << "expected a CudaError";
  } catch (const CudaError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.code(), ExitCode::kRuntime);
    EXPECT_EQ(e.status(), cudaErrorInvalidValue);
    EXPECT_EQ(e.call(), "cudaErrorInvalidValue");
    EXPECT_NE(msg.find("cudaErrorInvalidValue"), std::string::npos) << msg;
    EXPECT_NE(msg.find("runtime_test.cpp:"), std::string::npos) << msg;
  }
}

TEST(CudaCheck, ResourceErrorsMapToExitCode3) {
  EXPECT_EQ(exit_code_for(cudaErrorMemoryAllocation), ExitCode::kResources);
  EXPECT_EQ(exit_code_for(cudaErrorNoDevice), ExitCode::kResources);
  EXPECT_EQ(exit_code_for(cudaErrorInsufficientDriver), ExitCode::kResources);
  EXPECT_EQ(exit_code_for(cudaErrorInvalidValue), ExitCode::kRuntime);
  EXPECT_EQ(exit_code_for(cudaErrorLaunchOutOfResources), ExitCode::kRuntime);  // not sticky
  try {
    DB_CUDA_CHECK(cudaErrorMemoryAllocation);
    FAIL() << "expected a CudaError";
  } catch (const Error& e) {  // catchable as the project's error type
    EXPECT_EQ(e.code(), ExitCode::kResources);
  }
}

// A kernel fault leaves the context unusable for the rest of the process (CUDA 13's
// driver_types.h: "the process must be terminated and relaunched"): exit 5, as
// docs/capture-failures.md says, so a suite skips its remaining configurations.
TEST(CudaCheck, StickyErrorsMapToExitCode5) {
  // CUDA 13's list by number (226 cudaErrorContained, 721 cudaErrorTensorMemoryLeak, 810
  // cudaErrorMpsClientTerminated and 911 cudaErrorExternalDevice are newer than some toolkits).
  for (const int err : {226, 700, 702, 710, 714, 715, 716, 717, 718, 719, 721, 810, 911}) {
    EXPECT_EQ(exit_code_for(static_cast<cudaError_t>(err)), ExitCode::kContextUnusable) << err;
  }
  try {
    DB_CUDA_CHECK(cudaErrorIllegalAddress);
    FAIL() << "expected a CudaError";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kContextUnusable);
    EXPECT_NE(std::string(e.what()).find("the CUDA context is unusable: restart the process"),
              std::string::npos)
        << e.what();
  }
}

TEST(CudaCheck, NoThrowVariantReturns) {
  DB_CUDA_CHECK_NOTHROW(cudaErrorInvalidValue);  // prints to stderr, does not throw
  DB_CUDA_CHECK_NOTHROW(cudaSuccess);
  SUCCEED();
}

TEST(DeviceInfo, ExplainsWhenUnavailable) {
  std::string why;
  const bool ok = cuda_device_available(&why);
  if (!ok) {
    EXPECT_FALSE(why.empty());
    std::printf("cuda_device_available: false (%s)\n", why.c_str());
  } else {
    int n = 0;
    EXPECT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
    EXPECT_GT(n, 0);
  }
  EXPECT_EQ(cuda_device_available(nullptr), ok);
}

// ---- RAII types ----------------------------------------------------------------------------

TEST(DeviceBuffer, AllocatesMovesAndFrees) {
  DB_REQUIRE_CUDA();
  DeviceBuffer a(1024);
  EXPECT_EQ(a.bytes(), 1024u);
  EXPECT_NE(a.get(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.get()) % 256, 0u);
  void* p = a.get();
  DeviceBuffer b(std::move(a));
  EXPECT_EQ(b.get(), p);
  EXPECT_EQ(a.get(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from state is defined
  DeviceBuffer c;
  c = std::move(b);
  EXPECT_EQ(c.data<void>(), p);
  c.reset();
  EXPECT_TRUE(c.empty());
  PinnedBuffer h(64);
  EXPECT_NE(h.get(), nullptr);
  CudaStream s;
  CudaEvent e0, e1;
  e0.record(s.get());
  e1.record(s.get());
  e1.synchronize();
  EXPECT_GE(CudaEvent::elapsed_ms(e0, e1), 0.0f);
}

TEST(DeviceBuffer, OutOfMemoryIsAResourceError) {
  DB_REQUIRE_CUDA();
  try {
    DeviceBuffer huge(size_t{1} << 50);  // 1 PiB
    FAIL() << "expected an out-of-memory error";
  } catch (const CudaError& e) {
    EXPECT_EQ(e.code(), ExitCode::kResources) << e.what();
    EXPECT_EQ(e.status(), cudaErrorMemoryAllocation) << e.what();
  }
  (void)cudaGetLastError();
}

constexpr size_t kProbeBytes = 64;

/// What a copy on a non-blocking stream reads of kProbeBytes of device memory (old: bytes 0x11)
/// right after `write` set them (new: bytes 0x22), while a 20 ms kernel holds the legacy stream:
/// launched on it (`on_legacy`) or on a blocking stream, which the legacy stream waits for. Returns
/// the number of new bytes seen (kProbeBytes: all). The decode step's stream and the tests'
/// streams are non-blocking.
template <typename Write>
int new_bytes_seen(bool on_legacy, Write write) {
  DeviceBuffer dst(kProbeBytes), seen(kProbeBytes), spin_dst(16), spin_src(16);
  fill_device(dst.get(), 0x11, kProbeBytes);
  struct BlockingStream {  // default flags: the legacy stream waits for its work
    cudaStream_t s = nullptr;
    BlockingStream() { DB_CUDA_CHECK(cudaStreamCreate(&s)); }
    ~BlockingStream() { DB_CUDA_CHECK_NOTHROW(cudaStreamDestroy(s)); }
    BlockingStream(const BlockingStream&) = delete;
    BlockingStream& operator=(const BlockingStream&) = delete;
  } blocking;
  launch_delayed_copy(spin_dst.get(), spin_src.get(), 4, 20'000'000,
                      on_legacy ? cudaStreamLegacy : blocking.s);
  write(dst.get(), kProbeBytes);
  const CudaStream reader;
  DB_CUDA_CHECK(
      cudaMemcpyAsync(seen.get(), dst.get(), kProbeBytes, cudaMemcpyDeviceToDevice, reader.get()));
  reader.synchronize();
  testing::sync();
  const std::vector<uint8_t> v = download<uint8_t>(seen.get(), kProbeBytes);
  return static_cast<int>(std::count(v.begin(), v.end(), uint8_t{0x22}));
}

// copy_to_device and fill_device return only once their bytes are in device memory, so work on a
// non-blocking stream issued next reads them, even while the legacy stream is held up by a kernel
// on itself or on a blocking stream. From pageable memory a plain cudaMemcpy landed as well on an
// H100 (round 42), so that case alone would not notice copy_to_device losing its synchronization;
// from pinned memory the copy returns at once and lands behind the kernel, so it does. What the
// plain calls do is printed, not asserted (documented as possibly returning before the bytes land:
// CUDA Runtime API, "API synchronization behavior"); a graph in the PDL chain test read such a
// copy's old bytes while another process shared the GPU (docs/performance.md, round 42).
TEST(DeviceBuffer, CopyAndFillLandBeforeTheyReturn) {
  DB_REQUIRE_CUDA();
  const std::vector<uint8_t> fresh(kProbeBytes, 0x22);
  PinnedBuffer pinned(kProbeBytes);
  std::memset(pinned.get(), 0x22, kProbeBytes);
  const int all = static_cast<int>(kProbeBytes);
  for (const bool on_legacy : {true, false}) {
    const std::string where = on_legacy ? "kernel on the legacy stream" : "on a blocking stream";
    EXPECT_EQ(
        new_bytes_seen(on_legacy, [&](void* d, size_t n) { copy_to_device(d, fresh.data(), n); }),
        all)
        << "copy_to_device, " << where;
    EXPECT_EQ(
        new_bytes_seen(on_legacy, [&](void* d, size_t n) { copy_to_device(d, pinned.get(), n); }),
        all)
        << "copy_to_device from pinned memory, " << where;
    EXPECT_EQ(new_bytes_seen(on_legacy, [](void* d, size_t n) { fill_device(d, 0x22, n); }), all)
        << "fill_device, " << where;
    const int raw_pinned = new_bytes_seen(on_legacy, [&](void* d, size_t n) {
      DB_CUDA_CHECK(cudaMemcpyAsync(d, pinned.get(), n, cudaMemcpyHostToDevice, cudaStreamLegacy));
    });
    std::printf("without the synchronization, %s: pinned copy %d of %d new bytes seen\n",
                where.c_str(), raw_pinned, all);
    const int raw_copy = new_bytes_seen(on_legacy, [&](void* d, size_t n) {
      DB_CUDA_CHECK(cudaMemcpy(d, fresh.data(), n, cudaMemcpyHostToDevice));
    });
    const int raw_fill =
        new_bytes_seen(on_legacy, [](void* d, size_t n) { DB_CUDA_CHECK(cudaMemset(d, 0x22, n)); });
    std::printf("plain calls, %s: cudaMemcpy %d of %d new bytes seen, cudaMemset %d\n",
                where.c_str(), raw_copy, all, raw_fill);
  }
}

// ---- bandwidth probe -----------------------------------------------------------------------

TEST(Bandwidth, MeasuresAPlausibleRate) {
  DB_REQUIRE_CUDA();
  CudaStream s;
  const double gbps = measure_read_bandwidth_gbps(size_t{512} << 20, 5, s.get());
  std::printf("read bandwidth (512 MiB, median of 5): %.1f GB/s\n", gbps);
  EXPECT_GT(gbps, 50.0);
  EXPECT_LT(gbps, 20000.0);
}

// ---- graph capture of a miniature decode step ----------------------------------------------

/// A two-layer-free miniature of the decode step using every kernel family once.
class MiniStep {
 public:
  static constexpr int64_t kHidden = 256, kHeads = 4, kKvHeads = 2, kHeadDim = 64, kFfn = 512;
  static constexpr int64_t kVocab = 1000, kCapacity = 300;

  MiniStep() {
    const auto matrix = [](WeightType t, int64_t rows, int64_t cols, uint32_t seed) {
      std::vector<float> w = random_floats(static_cast<size_t>(rows * cols), seed, -0.5f, 0.5f);
      std::vector<uint8_t> bytes(static_cast<size_t>(rows * row_bytes(t, cols)));
      for (int64_t r = 0; r < rows; ++r) {
        quant::quantize_row(t, w.data() + r * cols, bytes.data() + r * row_bytes(t, cols), cols);
      }
      return upload(bytes);
    };
    embd_ = matrix(WeightType::kQ8_0, kVocab, kHidden, 1);
    wq_ = matrix(WeightType::kF16, kHeads * kHeadDim, kHidden, 2);
    wk_ = matrix(WeightType::kQ4_K, kKvHeads * kHeadDim, kHidden, 3);
    wv_ = matrix(WeightType::kBF16, kKvHeads * kHeadDim, kHidden, 4);
    wo_ = matrix(WeightType::kQ6_K, kHidden, kHeads * kHeadDim, 5);
    wg_ = matrix(WeightType::kQ5_0, kFfn, kHidden, 6);
    wu_ = matrix(WeightType::kQ4_1, kFfn, kHidden, 7);
    wd_ = matrix(WeightType::kQ5_K, kHidden, kFfn, 8);
    head_ = matrix(WeightType::kQ4_0, kVocab, kHidden, 9);
    norm_w_ = upload(random_floats(kHidden, 10, 0.5f, 1.5f));
    std::vector<double> inv(kHeadDim / 2);
    for (int64_t i = 0; i < kHeadDim / 2; ++i) inv[i] = std::pow(10000.0, -2.0 * i / kHeadDim);
    inv_freq_ = upload(inv);
    const auto floats = [](int64_t n) { return DeviceBuffer(static_cast<size_t>(n) * 4); };
    x_ = floats(kHidden);
    xn_ = floats(kHidden);
    q_ = floats(kHeads * kHeadDim);
    k_ = floats(kKvHeads * kHeadDim);
    v_ = floats(kKvHeads * kHeadDim);
    att_ = floats(kHeads * kHeadDim);
    gate_ = floats(kFfn);
    up_ = floats(kFfn);
    logits_ = floats(kVocab);
    kc_ = floats(kKvHeads * kCapacity * kHeadDim);
    vc_ = floats(kKvHeads * kCapacity * kHeadDim);
    splits_ = attention_splits(kCapacity);
    attn_scratch_ =
        floats(std::max<int64_t>(attention_scratch_floats(kHeads, kHeadDim, splits_), 1));
    argmax_bytes_ = argmax_scratch_bytes(kVocab, 1);
    argmax_scratch_ = DeviceBuffer(argmax_bytes_);
    inputs_ = DeviceBuffer(3 * sizeof(int32_t));  // token, pos, seq_len
    next_ = DeviceBuffer(sizeof(int32_t));
    err_ = upload(std::vector<int32_t>{0});
  }

  void reset_cache() {
    fill_device(kc_.get(), 0, kc_.bytes());
    fill_device(vc_.get(), 0, vc_.bytes());
  }

  void set_inputs(int32_t token, int32_t pos) {
    const int32_t in[3] = {token, pos, pos + 1};
    copy_to_device(inputs_.get(), in, sizeof(in));
  }

  /// Enqueues the step on `s`: launches only, fixed pointers and shapes.
  void enqueue(cudaStream_t s) {
    const int32_t* d_token = inputs_.data<int32_t>();
    const int32_t* d_pos = d_token + 1;
    const int32_t* d_seq = d_token + 2;
    const auto gemv = [&](WeightType t, const DeviceBuffer& w, int64_t rows, int64_t cols,
                          const float* in, float* out, const float* residual) {
      GemvParams p;
      p.type = t;
      p.w = w.get();
      p.rows = rows;
      p.cols = cols;
      p.x = in;
      p.y = out;
      p.residual = residual;
      launch_gemv(p, s);
    };
    float* x = x_.data<float>();
    float* xn = xn_.data<float>();
    launch_embedding(WeightType::kQ8_0, embd_.get(), kHidden, d_token, x, s);
    launch_rms_norm(x, norm_w_.data<float>(), xn, 1, kHidden, 1e-6f, s);
    gemv(WeightType::kF16, wq_, kHeads * kHeadDim, kHidden, xn, q_.data<float>(), nullptr);
    gemv(WeightType::kQ4_K, wk_, kKvHeads * kHeadDim, kHidden, xn, k_.data<float>(), nullptr);
    gemv(WeightType::kBF16, wv_, kKvHeads * kHeadDim, kHidden, xn, v_.data<float>(), nullptr);
    launch_rms_norm(q_.data<float>(), norm_w_.data<float>(), q_.data<float>(), kHeads, kHeadDim,
                    1e-6f, s);
    launch_rope(q_.data<float>(), k_.data<float>(), kHeads, kKvHeads, kHeadDim, kHeadDim, d_pos,
                inv_freq_.data<double>(), RopeStyle::kHalfSplit, s);
    launch_kv_append(k_.data<float>(), v_.data<float>(), kc_.data<float>(), vc_.data<float>(),
                     kKvHeads, kHeadDim, kCapacity, d_pos, err_.data<int32_t>(), s);
    AttentionParams ap;
    ap.q = q_.data<float>();
    ap.k_cache = kc_.data<float>();
    ap.v_cache = vc_.data<float>();
    ap.out = att_.data<float>();
    ap.n_heads = kHeads;
    ap.n_kv_heads = kKvHeads;
    ap.head_dim = kHeadDim;
    ap.capacity = kCapacity;
    ap.d_seq_len = d_seq;
    ap.splits = splits_;
    ap.scratch = attn_scratch_.data<float>();
    ap.d_error = err_.data<int32_t>();
    launch_attention(ap, s);
    gemv(WeightType::kQ6_K, wo_, kHidden, kHeads * kHeadDim, att_.data<float>(), x, x);
    launch_rms_norm(x, norm_w_.data<float>(), xn, 1, kHidden, 1e-6f, s);
    gemv(WeightType::kQ5_0, wg_, kFfn, kHidden, xn, gate_.data<float>(), nullptr);
    gemv(WeightType::kQ4_1, wu_, kFfn, kHidden, xn, up_.data<float>(), nullptr);
    launch_swiglu(gate_.data<float>(), up_.data<float>(), gate_.data<float>(), kFfn, s);
    gemv(WeightType::kQ5_K, wd_, kHidden, kFfn, gate_.data<float>(), x, x);
    launch_rms_norm(x, norm_w_.data<float>(), xn, 1, kHidden, 1e-6f, s);
    gemv(WeightType::kQ4_0, head_, kVocab, kHidden, xn, logits_.data<float>(), nullptr);
    launch_argmax(logits_.data<float>(), kVocab, argmax_scratch_.get(), argmax_bytes_,
                  next_.data<int32_t>(), s);
  }

  std::vector<float> logits() const { return download<float>(logits_.get(), kVocab); }
  int32_t next() const { return download<int32_t>(next_.get(), 1)[0]; }
  int32_t error_word() const { return download<int32_t>(err_.get(), 1)[0]; }
  int splits() const { return splits_; }

 private:
  DeviceBuffer embd_, wq_, wk_, wv_, wo_, wg_, wu_, wd_, head_, norm_w_, inv_freq_;
  DeviceBuffer x_, xn_, q_, k_, v_, att_, gate_, up_, logits_, kc_, vc_, attn_scratch_;
  DeviceBuffer argmax_scratch_, inputs_, next_, err_;
  size_t argmax_bytes_ = 0;
  int splits_ = 1;
};

TEST(GraphCapture, CapturedStepMatchesEagerBitForBit) {
  DB_REQUIRE_CUDA();
  MiniStep step;
  CudaStream stream;
  constexpr int kSteps = 6;
  const int32_t prompt[kSteps] = {3, 141, 59, 265, 358, 979};

  // Eager reference: a short sequence (the KV cache grows, seq_len is read on the device).
  step.reset_cache();
  std::vector<std::vector<float>> eager_logits;
  std::vector<int32_t> eager_next;
  for (int i = 0; i < kSteps; ++i) {
    step.set_inputs(prompt[i], i);
    step.enqueue(stream.get());
    stream.synchronize();
    eager_logits.push_back(step.logits());
    eager_next.push_back(step.next());
  }
  EXPECT_GT(step.splits(), 1) << "capacity 300 should use the split-KV path";

  // Capture once (global mode: the strictest), replay for the same inputs.
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  DB_CUDA_CHECK(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeGlobal));
  try {
    step.enqueue(stream.get());
  } catch (...) {
    (void)cudaStreamEndCapture(stream.get(), &graph);
    throw;
  }
  DB_CUDA_CHECK(cudaStreamEndCapture(stream.get(), &graph));
  DB_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));

  step.reset_cache();
  for (int i = 0; i < kSteps; ++i) {
    step.set_inputs(prompt[i], i);
    DB_CUDA_CHECK(cudaGraphLaunch(exec, stream.get()));
    stream.synchronize();
    EXPECT_TRUE(all_bits_equal(step.logits(), eager_logits[static_cast<size_t>(i)],
                               "graph vs eager logits, step " + std::to_string(i)));
    EXPECT_EQ(step.next(), eager_next[static_cast<size_t>(i)]) << "step " << i;
  }
  EXPECT_EQ(step.error_word(), 0);
  DB_CUDA_CHECK(cudaGraphExecDestroy(exec));
  DB_CUDA_CHECK(cudaGraphDestroy(graph));
}

}  // namespace
}  // namespace decodebench::cuda
