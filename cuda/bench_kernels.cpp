// Kernel benchmark: every measurement is a CUDA graph of many launches (so host launch overhead
// is excluded and back-to-back kernel boundaries are what a decode step sees), replayed
// `iterations` times with CUDA events around each replay; the median replay time divided by the
// launches per graph is reported. GEMV weights are rotated over enough copies that the bytes
// touched per replay exceed the L2 several times, so weights stream from HBM as in a decode step.
#include "cuda/bench_kernels.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/model/config.hpp"
#include "cuda/check.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/device_info.hpp"
#include "cuda/kernels/argmax.cuh"
#include "cuda/kernels/attention.cuh"
#include "cuda/kernels/bandwidth.cuh"
#include "cuda/kernels/embedding.cuh"
#include "cuda/kernels/gemm.cuh"
#include "cuda/kernels/gemv.cuh"
#include "cuda/kernels/kv_cache.cuh"
#include "cuda/kernels/noop.cuh"
#include "cuda/kernels/rms_norm.cuh"
#include "cuda/kernels/rope.cuh"
#include "cuda/kernels/rope_kv.cuh"
#include "cuda/kernels/swiglu.cuh"

namespace decodebench::cuda {

namespace {

using nlohmann::json;

// ---- model shapes ----------------------------------------------------------------------------

/// The shapes of one benchmark model (mirrors bench-configs/presets).
struct ModelShape {
  const char* name;
  int64_t layers, hidden, heads, kv_heads, head_dim, ffn, vocab;
  double theta;
  float eps;
  bool qkv_bias;
  bool tied;
  [[nodiscard]] int64_t q_dim() const { return heads * head_dim; }
  [[nodiscard]] int64_t kv_dim() const { return kv_heads * head_dim; }
};

constexpr ModelShape kQwen7b{"7b", 28, 3584, 28, 4, 128, 18944, 152064, 1e6, 1e-6f, true, false};
constexpr ModelShape kSmol{"smollm2", 30, 576, 9, 3, 64, 1536, 49152, 1e5, 1e-5f, false, true};

const ModelShape& model_by_name(const std::string& name) {
  if (name == kQwen7b.name) return kQwen7b;
  if (name == kSmol.name) return kSmol;
  throw usage_error("bench-kernels: unknown model '" + name + "' (known: 7b, smollm2)");
}

/// One GEMV shape of a model and how often a token reads it in each weight layout ("separate":
/// q, k, v, o, gate, up, down, LM head; "fused": [q;k;v], o, [gate;up], down, LM head).
struct GemvCase {
  std::string model;
  std::string shape;
  int64_t rows = 0, cols = 0;
  bool bias = false, residual = false;
  int64_t per_token_separate = 0;
  int64_t per_token_fused = 0;
};

std::vector<GemvCase> model_gemv_cases(const ModelShape& m) {
  const int64_t L = m.layers;
  const std::string n = m.name;
  return {
      {n, "q,o", m.q_dim(), m.hidden, m.qkv_bias, false, 2 * L, L},
      {n, "k,v", m.kv_dim(), m.hidden, m.qkv_bias, false, 2 * L, 0},
      {n, "qkv", m.q_dim() + 2 * m.kv_dim(), m.hidden, m.qkv_bias, false, 0, L},
      {n, "gate,up", m.ffn, m.hidden, false, false, 2 * L, 0},
      {n, "gate_up", 2 * m.ffn, m.hidden, false, false, 0, L},
      {n, "down", m.hidden, m.ffn, false, true, L, L},
      {n, "lm_head", m.vocab, m.hidden, false, false, 1, 1},
  };
}

// ---- timing ------------------------------------------------------------------------------------

struct Timing {
  double median_ms = 0;
  double min_ms = 0;
  size_t nodes = 0;
};

/// Owner of a captured graph and its executable.
struct OwnedGraph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  OwnedGraph() = default;
  OwnedGraph(const OwnedGraph&) = delete;
  OwnedGraph& operator=(const OwnedGraph&) = delete;
  ~OwnedGraph() {
    if (exec != nullptr) DB_CUDA_CHECK_NOTHROW(cudaGraphExecDestroy(exec));
    if (graph != nullptr) DB_CUDA_CHECK_NOTHROW(cudaGraphDestroy(graph));
  }
};

class GraphTimer {
 public:
  explicit GraphTimer(int iterations) : iterations_(iterations) {}

  [[nodiscard]] cudaStream_t stream() const { return stream_.get(); }

  /// Captures what `enqueue` issues on the stream into one graph and times its replays.
  Timing time(const std::function<void(cudaStream_t)>& enqueue) {
    cudaStream_t s = stream_.get();
    OwnedGraph g;
    DB_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    try {
      enqueue(s);
    } catch (...) {
      cudaGraph_t partial = nullptr;
      (void)cudaStreamEndCapture(s, &partial);
      if (partial != nullptr) (void)cudaGraphDestroy(partial);
      (void)cudaGetLastError();
      throw;
    }
    DB_CUDA_CHECK(cudaStreamEndCapture(s, &g.graph));
    DB_CUDA_CHECK(cudaGraphInstantiate(&g.exec, g.graph, 0));
    Timing t;
    DB_CUDA_CHECK(cudaGraphGetNodes(g.graph, nullptr, &t.nodes));
    for (int w = 0; w < 2; ++w) DB_CUDA_CHECK(cudaGraphLaunch(g.exec, s));
    DB_CUDA_CHECK(cudaStreamSynchronize(s));
    std::vector<float> ms(static_cast<size_t>(iterations_));
    for (auto& m : ms) {
      DB_CUDA_CHECK(cudaEventRecord(start_.get(), s));
      DB_CUDA_CHECK(cudaGraphLaunch(g.exec, s));
      DB_CUDA_CHECK(cudaEventRecord(stop_.get(), s));
      DB_CUDA_CHECK(cudaEventSynchronize(stop_.get()));
      DB_CUDA_CHECK(cudaEventElapsedTime(&m, start_.get(), stop_.get()));
    }
    std::sort(ms.begin(), ms.end());
    const size_t mid = ms.size() / 2;
    t.median_ms = ms.size() % 2 == 1 ? ms[mid] : 0.5 * (static_cast<double>(ms[mid - 1]) + ms[mid]);
    t.min_ms = ms.front();
    return t;
  }

 private:
  int iterations_;
  CudaStream stream_;
  CudaEvent start_;
  CudaEvent stop_;
};

// ---- helpers -----------------------------------------------------------------------------------

constexpr size_t kAlign = 256;
size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

int device_attribute(cudaDeviceAttr attr) {
  int device = 0;
  int v = 0;
  DB_CUDA_CHECK(cudaGetDevice(&device));
  DB_CUDA_CHECK(cudaDeviceGetAttribute(&v, attr, device));
  return v;
}

/// A device buffer of `bytes` filled with the byte `pattern` (0x11: small normal f32/f16/bf16
/// values and block scales; 0x3C: floats near 0.0116).
DeviceBuffer filled(size_t bytes, int pattern) {
  DeviceBuffer b(std::max<size_t>(bytes, 16));
  fill_device(b.get(), pattern, b.bytes());
  return b;
}

double round_to(double v, double unit) { return std::round(v / unit) * unit; }

json plan_json(const GemvLaunchInfo& i) {
  return {{"variant", i.variant},
          {"kernel", i.kernel},
          {"staged", i.staged},
          {"column_splits", i.column_splits},
          {"rows_per_warp", i.rows_per_warp},
          {"grid", i.grid},
          {"block", i.block},
          {"smem_bytes", i.smem_bytes},
          {"tasks", i.tasks},
          {"chunk", i.chunk},
          {"form", gemv_form_name(i)}};
}

void progress(const std::string& line) {
  std::fprintf(stderr, "[bench-kernels] %s\n", line.c_str());
  std::fflush(stderr);
}

// Set by guarded() when an error left the CUDA context unusable (exit 5: a kernel fault); the
// guarded work after it is skipped and the document says so. Reset by run_kernel_bench.
bool g_context_lost = false;

/// Runs `f`, recording a decodebench::Error in `errors` (with `what`) instead of propagating it.
/// After one that left the CUDA context unusable nothing more could run: later calls do nothing.
template <typename F>
void guarded(json& errors, const std::string& what, F&& f) {
  if (g_context_lost) return;
  try {
    f();
  } catch (const Error& e) {
    errors.push_back({{"what", what}, {"error", e.what()}});
    progress("ERROR " + what + ": " + e.what());
    if (e.code() == ExitCode::kContextUnusable) {
      g_context_lost = true;
      progress("the CUDA context is unusable: nothing after this is timed");
    }
  }
}

// ---- GEMV section
// --------------------------------------------------------------------------------

struct GemvResult {
  double auto_us = 0;
  double best_us = 0;
  double bytes = 0;
};

class GemvSection {
 public:
  GemvSection(GraphTimer& timer, double stream_gbps, json& out, json& errors)
      : timer_(timer), stream_gbps_(stream_gbps), out_(out), errors_(errors) {
    l2_bytes_ = static_cast<size_t>(device_attribute(cudaDevAttrL2CacheSize));
  }

  /// Times every variant (or the automatic one) of `type` at `c`; returns auto/best µs.
  void run(const GemvCase& c, WeightType type, bool all_variants) {
    const WeightTraits tr = weight_traits(type);
    if (c.cols % tr.block_elems != 0) return;  // shape not representable in this type
    const size_t bytes = static_cast<size_t>(c.rows * row_bytes(type, c.cols));
    const size_t stride = align_up(bytes);
    // Enough copies that one replay touches >= 4× the L2 (at least 2, at most 2048).
    const size_t copies =
        std::clamp<size_t>((4 * l2_bytes_ + stride - 1) / stride, 2, size_t{2048});
    const int per_copy = copies >= 8 ? 1 : static_cast<int>((8 + copies - 1) / copies);
    const int launches = static_cast<int>(copies) * per_copy;
    DeviceBuffer w = filled(stride * copies, 0x11);
    DeviceBuffer x = filled(static_cast<size_t>(c.cols) * 4, 0x3C);
    DeviceBuffer y = filled(static_cast<size_t>(c.rows) * 4, 0x3C);
    DeviceBuffer bias = filled(static_cast<size_t>(c.rows) * 4, 0x3C);

    GemvParams p;
    p.type = type;
    p.rows = c.rows;
    p.cols = c.cols;
    p.x = x.data<float>();
    p.y = y.data<float>();
    p.bias = c.bias ? bias.data<float>() : nullptr;
    p.residual = c.residual ? y.data<float>() : nullptr;
    p.w = w.get();
    const GemvLaunchInfo auto_info = gemv_launch_info(p);
    // What is timed: every variant (or only the automatic one), the automatic one launched with
    // programmatic dependent launch (back-to-back GEMVs overlap prologue and tail), and for the
    // quantized types the mma kernel on an x split once outside the graph.
    struct Run {
      int variant;
      bool pdl;
      bool presplit;
      std::string label;
      int probe = 0;
      bool tiled = false;  ///< the weights read as the tiled layout (the tiled kernels)
    };
    std::vector<Run> runs;
    if (all_variants) {
      // The tiled kernels (5, 6, 7) read only tiled weights on a split x: their runs follow below.
      for (const int v : gemv_variants(type)) {
        if (v < 5) runs.push_back({v, false, false, ""});
      }
    } else {
      runs.push_back({0, false, false, ""});
    }
    runs.push_back({0, true, false, "+pdl"});
    // Load-pipeline ceiling of the automatic kernel on the big 7B shapes (math skipped).
    if (c.model == "7b" && (c.shape == "gate_up" || c.shape == "down")) {
      runs.push_back({0, false, false, "-probe-load", 1});
      runs.push_back({0, false, false, "-probe-math", 2});
    }
    const bool quant = tr.block_elems >= 32;
    DeviceBuffer split;
    if (quant && c.cols % 32 == 0) {
      split = DeviceBuffer(gemv_x_split_bytes(c.cols));
      launch_gemv_prepare_x(GemvInput::kPlain, x.data<float>(), nullptr, nullptr, 0.0f, c.cols,
                            split.get(), false, timer_.stream(), false);
      DB_CUDA_CHECK(cudaStreamSynchronize(timer_.stream()));
      GemvParams q = p;
      q.x_split = split.get();
      q.variant = 0;
      if (gemv_launch_info(q).variant != 0) {
        runs.push_back({0, false, true, "-presplit"});  // the automatic choice on a split x
        runs.push_back({0, true, true, "-presplit+pdl"});
        if (c.model == "7b" && (c.shape == "gate_up" || c.shape == "down")) {
          runs.push_back({0, false, true, "-probe-load", 1});
          // Probe 3 exists only in the stream kernel.
          if (gemv_launch_info(q).variant == 4) runs.push_back({0, false, true, "-probe-x-l1", 3});
        }
        runs.push_back({3, false, true, ""});  // the tensor-core kernel on the same split
      }
      // The tiled kernel on the same split. The buffer's bytes are one repeated value, so they
      // read the same in either layout. Q6_K's tiled layout has the stream-tiled kernel only.
      const bool tiled_kernel = gemv_tiled_supported(type, c.cols);
      if (gemv_tiled_layout_supported(type, c.rows, c.cols)) {
        if (tiled_kernel) runs.push_back({5, false, true, "-presplit", 0, true});
        if (tiled_kernel) runs.push_back({5, true, true, "-presplit+pdl", 0, true});
        if (tiled_kernel && c.model == "7b" && (c.shape == "gate_up" || c.shape == "down")) {
          runs.push_back({5, false, true, "-probe-load", 1, true});
        }
        // The tiled-mma kernel (6: run only when forced, slower; docs/performance.md round 14).
        // Only for types that have it (asking for a variant a type lacks throws: Q4_K).
        const std::vector<int> kinds = gemv_variants(type);
        const auto has = [&](int v) {
          return std::find(kinds.begin(), kinds.end(), v) != kinds.end();
        };
        GemvParams m = p;
        m.x_split = split.get();
        m.tiled = true;
        m.variant = 6;
        if (tiled_kernel && has(6) && gemv_launch_info(m).variant == 6) {  // else the tiled one
          runs.push_back({6, false, true, "-presplit", 0, true});
          runs.push_back({6, true, true, "-presplit+pdl", 0, true});
          if (c.model == "7b" && (c.shape == "gate_up" || c.shape == "down")) {
            runs.push_back({6, false, true, "-probe-load", 1, true});
            runs.push_back({6, false, true, "-probe-math", 2, true});
          }
        }
        // The stream kernel on the tiled layout (7: 128-bit shared-memory loads of the codes).
        GemvParams st = p;
        st.x_split = split.get();
        st.tiled = true;
        st.variant = 7;
        if (has(7) && gemv_launch_info(st).variant == 7) {
          runs.push_back({7, false, true, "-presplit", 0, true});
          runs.push_back({7, true, true, "-presplit+pdl", 0, true});
          if (c.model == "7b" && (c.shape == "gate_up" || c.shape == "down")) {
            runs.push_back({7, false, true, "-probe-load", 1, true});
            runs.push_back({7, false, true, "-probe-x-l1", 3, true});
          }
        }
      }
    }
    GemvResult r;
    r.bytes = static_cast<double>(bytes);
    r.best_us = 1e300;
    for (const Run& run : runs) {
      p.variant = run.variant;
      p.pdl = run.pdl;
      // The stream kernel (variant 4) reads only a pre-split x.
      p.x_split = run.presplit || run.variant == 4 ? split.get() : nullptr;
      p.probe = run.probe;
      p.tiled = run.tiled;
      const GemvLaunchInfo info = gemv_launch_info(p);
      const std::string kernel = std::string(info.kernel) + run.label;
      const std::string what = c.model + " " + c.shape + " " + tr.name + " " + kernel;
      guarded(errors_, what, [&] {
        const Timing t = timer_.time([&](cudaStream_t s) {
          GemvParams q = p;
          for (int i = 0; i < launches; ++i) {
            q.w = w.data<uint8_t>() + static_cast<size_t>(i) % copies * stride;
            launch_gemv(q, s);
          }
        });
        const double us = t.median_ms * 1e3 / launches;
        const double gbps = static_cast<double>(bytes) / (us * 1e-6) / 1e9;
        const bool is_auto = !run.pdl && !run.presplit && run.probe == 0 &&
                             (run.variant == 0 || info.variant == auto_info.variant);
        out_.push_back({{"model", c.model},
                        {"shape", c.shape},
                        {"rows", c.rows},
                        {"cols", c.cols},
                        {"type", tr.name},
                        {"variant", info.variant},
                        {"kernel", kernel},
                        {"pdl", run.pdl},
                        {"presplit", run.presplit},
                        {"probe", run.probe},
                        {"auto", is_auto},
                        {"bytes", bytes},
                        {"launches", launches},
                        {"copies", copies},
                        {"us", round_to(us, 0.001)},
                        {"us_min", round_to(t.min_ms * 1e3 / launches, 0.001)},
                        {"gbps", round_to(gbps, 0.1)},
                        {"pct_stream", round_to(100.0 * gbps / stream_gbps_, 0.1)},
                        {"plan", plan_json(info)}});
        if (is_auto) r.auto_us = us;
        if (!run.pdl && !run.presplit && run.probe == 0) r.best_us = std::min(r.best_us, us);
        char line[256];
        std::snprintf(line, sizeof line, "%-8s %-8s %5s %-18s %9.2f us %7.0f GB/s %5.1f%%",
                      c.model.c_str(), c.shape.c_str(), tr.name, kernel.c_str(), us, gbps,
                      100.0 * gbps / stream_gbps_);
        progress(line);
      });
    }
    p.pdl = false;
    p.x_split = nullptr;
    p.tiled = false;
    p.probe = 0;
    if (r.auto_us > 0) results_[{c.model + "/" + c.shape, tr.name}] = r;
  }

  /// Per-token GEMV time of a model in the separate and fused layouts (sums over its shapes).
  void summarize(const ModelShape& m, WeightType type, json& out) const {
    const char* tname = weight_traits(type).name;
    for (const bool fused : {false, true}) {
      double auto_us = 0, best_us = 0, bytes = 0;
      bool complete = true;
      for (const GemvCase& c : model_gemv_cases(m)) {
        const int64_t n = fused ? c.per_token_fused : c.per_token_separate;
        if (n == 0) continue;
        const auto it = results_.find({c.model + "/" + c.shape, tname});
        if (it == results_.end()) {
          complete = false;
          break;
        }
        auto_us += static_cast<double>(n) * it->second.auto_us;
        best_us += static_cast<double>(n) * it->second.best_us;
        bytes += static_cast<double>(n) * it->second.bytes;
      }
      if (!complete) continue;
      const double gbps = bytes / (auto_us * 1e-6) / 1e9;
      const double best_gbps = bytes / (best_us * 1e-6) / 1e9;
      out.push_back(
          {{"model", m.name},
           {"type", tname},
           {"layout", fused ? "fused" : "separate"},
           {"bytes", bytes},
           {"us", round_to(auto_us, 0.01)},
           {"gbps", round_to(gbps, 0.1)},
           {"pct_stream", round_to(100.0 * gbps / stream_gbps_, 0.1)},
           {"best_variants_us", round_to(best_us, 0.01)},
           {"best_variants_pct_stream", round_to(100.0 * best_gbps / stream_gbps_, 0.1)}});
    }
  }

 private:
  GraphTimer& timer_;
  double stream_gbps_;
  json& out_;
  json& errors_;
  size_t l2_bytes_ = 0;
  std::map<std::pair<std::string, std::string>, GemvResult> results_;
};

// ---- other per-step kernels
// ----------------------------------------------------------------------

std::vector<double> inv_freq(const ModelShape& m) {
  std::vector<double> inv(static_cast<size_t>(m.head_dim / 2));
  for (size_t i = 0; i < inv.size(); ++i) {
    inv[i] = std::pow(m.theta, -2.0 * static_cast<double>(i) / static_cast<double>(m.head_dim));
  }
  return inv;
}

/// Per-token inputs in device memory (token, pos, seq_len), as the backend's StepInputs.
struct DeviceInputs {
  DeviceBuffer buf{16};
  void set(int32_t token, int32_t pos, int32_t seq_len) const {
    const int32_t v[4] = {token, pos, seq_len, 0};
    copy_to_device(buf.get(), v, sizeof v);
  }
  [[nodiscard]] const int32_t* token() const { return buf.data<int32_t>(); }
  [[nodiscard]] const int32_t* pos() const { return buf.data<int32_t>() + 1; }
  [[nodiscard]] const int32_t* seq_len() const { return buf.data<int32_t>() + 2; }
};

class OpsSection {
 public:
  OpsSection(GraphTimer& timer, json& out, json& errors)
      : timer_(timer), out_(out), errors_(errors) {}

  void run(const ModelShape& m) {
    constexpr int kLaunches = 200;
    const auto floats = [](int64_t n) { return filled(static_cast<size_t>(n) * 4, 0x3C); };
    DeviceBuffer x = floats(std::max(m.hidden, m.ffn));
    DeviceBuffer xn = floats(std::max(m.hidden, m.ffn));
    DeviceBuffer w = floats(std::max(m.hidden, m.ffn));
    DeviceBuffer q = floats(m.q_dim());
    DeviceBuffer k = floats(m.kv_dim());
    DeviceBuffer v = floats(m.kv_dim());
    DeviceBuffer g = floats(m.ffn);
    DeviceBuffer u = floats(m.ffn);
    DeviceBuffer a = floats(m.ffn);
    DeviceBuffer err = filled(16, 0);
    const std::vector<double> inv = inv_freq(m);
    DeviceBuffer d_inv(inv.size() * sizeof(double));
    copy_to_device(d_inv.get(), inv.data(), inv.size() * sizeof(double));
    DeviceInputs in;
    in.set(1, 100, 101);
    const int64_t capacity = 256;
    DeviceBuffer kc = floats(m.kv_dim() * capacity);
    DeviceBuffer vc = floats(m.kv_dim() * capacity);

    measure(m, "noop", "1 block x 32 threads (graph node floor)", 0, kLaunches,
            [&](cudaStream_t s) { launch_noop(1, 32, s); });
    measure(m, "rms_norm", "1 x " + std::to_string(m.hidden), 8.0 * m.hidden, kLaunches,
            [&](cudaStream_t s) {
              launch_rms_norm(x.data<float>(), w.data<float>(), xn.data<float>(), 1, m.hidden,
                              m.eps, s);
            });
    measure(m, "qk_norm", std::to_string(m.heads) + " x " + std::to_string(m.head_dim),
            8.0 * m.q_dim(), kLaunches, [&](cudaStream_t s) {
              launch_rms_norm(q.data<float>(), w.data<float>(), q.data<float>(), m.heads,
                              m.head_dim, m.eps, s);
            });
    measure(m, "rope", "q+k heads " + std::to_string(m.heads) + "+" + std::to_string(m.kv_heads),
            8.0 * (m.q_dim() + m.kv_dim()), kLaunches, [&](cudaStream_t s) {
              launch_rope(q.data<float>(), k.data<float>(), m.heads, m.kv_heads, m.head_dim,
                          m.head_dim, in.pos(), d_inv.data<double>(), RopeStyle::kHalfSplit, s);
            });
    {
      RopeKvParams rk;
      rk.q = q.data<float>();
      rk.k = k.data<float>();
      rk.v = v.data<float>();
      rk.k_cache = kc.data<float>();
      rk.v_cache = vc.data<float>();
      rk.n_heads = m.heads;
      rk.n_kv_heads = m.kv_heads;
      rk.head_dim = m.head_dim;
      rk.rope_dim = m.head_dim;
      rk.capacity = capacity;
      rk.d_pos = in.pos();
      rk.d_inv_freq = d_inv.data<double>();
      rk.d_error = err.data<int32_t>();
      measure(m, "rope_kv_append", "fused rope + kv append", 16.0 * m.kv_dim(), kLaunches,
              [&](cudaStream_t s) { launch_rope_kv_append(rk, s); });
      rk.pdl = true;
      measure(m, "rope_kv_append", "fused rope + kv append, pdl", 16.0 * m.kv_dim(), kLaunches,
              [&](cudaStream_t s) { launch_rope_kv_append(rk, s); });
    }
    measure(m, "kv_append", "capacity 256", 16.0 * m.kv_dim(), kLaunches, [&](cudaStream_t s) {
      launch_kv_append(k.data<float>(), v.data<float>(), kc.data<float>(), vc.data<float>(),
                       m.kv_heads, m.head_dim, capacity, in.pos(), err.data<int32_t>(), s);
    });
    measure(m, "swiglu", std::to_string(m.ffn), 12.0 * m.ffn, kLaunches, [&](cudaStream_t s) {
      launch_swiglu(g.data<float>(), u.data<float>(), a.data<float>(), m.ffn, s);
    });
    {
      DeviceBuffer logits = floats(m.vocab);
      DeviceBuffer scratch(argmax_scratch_bytes(m.vocab, 1));
      DeviceBuffer next(16);
      measure(m, "argmax", std::to_string(m.vocab), 4.0 * m.vocab, kLaunches, [&](cudaStream_t s) {
        launch_argmax(logits.data<float>(), m.vocab, scratch.get(), scratch.bytes(),
                      next.data<int32_t>(), s);
      });
    }
    {
      DeviceBuffer split(gemv_x_split_bytes(std::max(m.hidden, m.ffn)));
      measure(m, "gemv_prepare_x", "rmsnorm " + std::to_string(m.hidden), 8.0 * m.hidden, kLaunches,
              [&](cudaStream_t s) {
                launch_gemv_prepare_x(GemvInput::kRmsNorm, x.data<float>(), nullptr,
                                      w.data<float>(), m.eps, m.hidden, split.get(), false, s,
                                      false);
              });
      measure(m, "gemv_prepare_x", "swiglu " + std::to_string(m.ffn), 8.0 * m.ffn, kLaunches,
              [&](cudaStream_t s) {
                launch_gemv_prepare_x(GemvInput::kSwiGlu, g.data<float>(), u.data<float>(), nullptr,
                                      0.0f, m.ffn, split.get(), false, s, false);
              });
    }
    attention(m, {128, 1024, 8192}, d_inv.data<double>());
  }

  /// Decode attention with each layer's own cache (rotated over the model's layers); at the
  /// whole-step benchmark's setting also the decode step's form (RoPE + KV append fused, PDL;
  /// `d_inv`: the RoPE inverse frequencies).
  void attention(const ModelShape& m, const std::vector<int32_t>& seq_lens, const double* d_inv) {
    struct Case {
      int64_t capacity;
      int32_t seq_len;
    };
    std::vector<Case> cases;
    cases.push_back({256, 129});  // the whole-step benchmark's setting
    for (const int32_t s : seq_lens) cases.push_back({s, s});
    cases.push_back({8192, 128});  // a large workspace at a short context (capacity-driven splits)
    for (const Case& c : cases) {
      const int64_t per_layer = m.kv_dim() * c.capacity;
      DeviceBuffer kc = filled(static_cast<size_t>(per_layer * m.layers) * 4, 0x3C);
      DeviceBuffer vc = filled(static_cast<size_t>(per_layer * m.layers) * 4, 0x3C);
      DeviceBuffer q = filled(static_cast<size_t>(m.q_dim()) * 4, 0x3C);
      DeviceBuffer o(static_cast<size_t>(m.q_dim()) * 4);
      const int splits = attention_splits(c.capacity);
      DeviceBuffer scratch(static_cast<size_t>(std::max<int64_t>(
                               attention_scratch_floats(m.heads, m.head_dim, splits), 4)) *
                           4);
      DeviceInputs in;
      in.set(1, c.seq_len - 1, c.seq_len);
      AttentionParams p;
      p.q = q.data<float>();
      p.out = o.data<float>();
      p.n_heads = m.heads;
      p.n_kv_heads = m.kv_heads;
      p.head_dim = m.head_dim;
      p.capacity = c.capacity;
      p.d_seq_len = in.seq_len();
      p.splits = splits;
      p.scratch = scratch.data<float>();
      const int launches = static_cast<int>(m.layers) * 4;
      // Both kernels where the short-context one is reasonable, else the automatic choice.
      const std::vector<int> paths =
          c.capacity <= 1024 ? std::vector<int>{1, 2, 3, 5} : std::vector<int>{0};
      DeviceBuffer kn = filled(static_cast<size_t>(m.kv_dim()) * 4, 0x3C);
      DeviceBuffer vn = filled(static_cast<size_t>(m.kv_dim()) * 4, 0x3C);
      DeviceBuffer err = filled(16, 0);
      const bool step_form = c.capacity == 256;  // the first case
      for (const int path : step_form ? std::vector<int>{1, 2, 3, 5, 0} : paths) {
        p.path = path;
        const bool fused = step_form && path == 0;
        if (fused) {
          p.d_error = err.data<int32_t>();
          p.k_new = kn.data<float>();
          p.v_new = vn.data<float>();
          p.d_pos = in.pos();
          p.d_inv_freq = d_inv;
          p.rope_dim = m.head_dim;
          p.pdl = true;
        }
        const int cluster = attention_cluster_blocks(p);
        const std::string detail =
            "seq_len " + std::to_string(c.seq_len) + " capacity " + std::to_string(c.capacity) +
            (fused ? " fused rope + kv append, pdl, " + attention_form_name(p)
             : !attention_uses_short_path(p) ? " split-kv splits " + std::to_string(splits)
             : cluster > 1
                 ? " short-path " + attention_form_name(p)  // "cluster 2", "cluster-push 2"
                 : " short-path");
        measure(
            m, "attention", detail, 8.0 * static_cast<double>(m.kv_dim()) * c.seq_len, launches,
            [&](cudaStream_t s) {
              for (int i = 0; i < launches; ++i) {
                AttentionParams pi = p;
                pi.k_cache = kc.data<float>() + (i % m.layers) * per_layer;
                pi.v_cache = vc.data<float>() + (i % m.layers) * per_layer;
                launch_attention(pi, s);
              }
            },
            /*enqueue_is_all=*/true);
      }
    }
  }

 private:
  /// Times `launches` back-to-back calls of `one` (or one call of `one` that enqueues them all).
  void measure(const ModelShape& m, const std::string& op, const std::string& detail, double bytes,
               int launches, const std::function<void(cudaStream_t)>& one,
               bool enqueue_is_all = false) {
    guarded(errors_, std::string(m.name) + " " + op + " " + detail, [&] {
      const Timing t = timer_.time([&](cudaStream_t s) {
        if (enqueue_is_all) {
          one(s);
        } else {
          for (int i = 0; i < launches; ++i) one(s);
        }
      });
      const double us = t.median_ms * 1e3 / launches;
      const double gbps = bytes > 0 ? bytes / (us * 1e-6) / 1e9 : 0.0;
      out_.push_back({{"model", m.name},
                      {"op", op},
                      {"detail", detail},
                      {"launches", launches},
                      {"nodes_per_launch", static_cast<double>(t.nodes) / launches},
                      {"us", round_to(us, 0.001)},
                      {"us_min", round_to(t.min_ms * 1e3 / launches, 0.001)},
                      {"bytes", bytes},
                      {"gbps", round_to(gbps, 0.1)}});
      char line[256];
      std::snprintf(line, sizeof line, "%-8s %-10s %8.2f us  %s", m.name, op.c_str(), us,
                    detail.c_str());
      progress(line);
    });
  }

  GraphTimer& timer_;
  json& out_;
  json& errors_;
};

// ---- whole decode steps
// ----------------------------------------------------------------------------

/// Synthetic device weights and workspace of one model in the backend's layout, and the decode
/// step as enqueue_forward issues it (baseline), for timing as one graph.
class StepModel {
 public:
  StepModel(const ModelShape& m, WeightType type, WeightType head_type, int64_t capacity)
      : m_(m),
        type_(type),
        head_type_(head_type),
        capacity_(capacity),
        trigger_(split_trigger_request()) {
    const int64_t qkv_rows = m.q_dim() + 2 * m.kv_dim();
    // Per layer: [Wq;Wk;Wv] and [Wgate;Wup] stacked, so fused launchers can use them as one
    // matrix; the separate launches use row ranges of them.
    qkv_bytes_ = align_up(static_cast<size_t>(qkv_rows * row_bytes(type, m.hidden)));
    o_bytes_ = align_up(static_cast<size_t>(m.hidden * row_bytes(type, m.q_dim())));
    gu_bytes_ = align_up(static_cast<size_t>(2 * m.ffn * row_bytes(type, m.hidden)));
    down_bytes_ = align_up(static_cast<size_t>(m.hidden * row_bytes(type, m.ffn)));
    layer_bytes_ = qkv_bytes_ + o_bytes_ + gu_bytes_ + down_bytes_;
    head_bytes_ = align_up(static_cast<size_t>(m.vocab * row_bytes(head_type, m.hidden)));
    weights_ = filled(layer_bytes_ * static_cast<size_t>(m.layers) + head_bytes_, 0x11);
    vectors_ =
        filled(static_cast<size_t>(m.layers * (2 * m.hidden + qkv_rows) + m.hidden) * 4, 0x3C);
    const auto floats = [](int64_t n) { return filled(static_cast<size_t>(n) * 4, 0x3C); };
    x_ = floats(m.hidden);
    xn_ = floats(m.hidden);
    q_ = floats(qkv_rows);  // q, then k and v (the fused QKV output)
    att_ = floats(m.q_dim());
    gu_ = floats(2 * m.ffn);  // gate, then up
    act_ = floats(m.ffn);
    logits_ = floats(m.vocab);
    const int64_t kv = m.layers * m.kv_dim() * capacity;
    k_cache_ = floats(kv);
    v_cache_ = floats(kv);
    splits_ = attention_splits(capacity);
    attn_scratch_ =
        floats(std::max<int64_t>(attention_scratch_floats(m.heads, m.head_dim, splits_), 4));
    argmax_scratch_ = DeviceBuffer(argmax_scratch_bytes(m.vocab, 1));
    next_ = DeviceBuffer(16);
    err_ = filled(16, 0);
    split_ = DeviceBuffer(gemv_x_split_bytes(std::max(m.ffn, m.hidden) / 32 * 32 + 32));
    const std::vector<double> inv = inv_freq(m);
    inv_freq_ = DeviceBuffer(inv.size() * sizeof(double));
    copy_to_device(inv_freq_.get(), inv.data(), inv.size() * sizeof(double));
  }

  void set_inputs(int32_t token, int32_t pos) const { in_.set(token, pos, pos + 1); }

  /// The logits of the last step (synchronous copy).
  [[nodiscard]] std::vector<float> logits() const {
    std::vector<float> v(static_cast<size_t>(m_.vocab));
    DB_CUDA_CHECK(cudaDeviceSynchronize());
    DB_CUDA_CHECK(
        cudaMemcpy(v.data(), logits_.get(), v.size() * sizeof(float), cudaMemcpyDeviceToHost));
    return v;
  }

  /// Weight bytes one token reads (all layer matrices, the LM head, one embedding row).
  [[nodiscard]] double bytes_per_token() const {
    const double layer = static_cast<double>(
        (m_.q_dim() + 2 * m_.kv_dim()) * row_bytes(type_, m_.hidden) +
        m_.hidden * row_bytes(type_, m_.q_dim()) + 2 * m_.ffn * row_bytes(type_, m_.hidden) +
        m_.hidden * row_bytes(type_, m_.ffn));
    return layer * static_cast<double>(m_.layers) +
           static_cast<double>(m_.vocab * row_bytes(head_type_, m_.hidden) +
                               row_bytes(head_type_, m_.hidden));
  }

  /// The decode step with no fused kernel, the reference for enqueue_fused's forms: RMSNorm
  /// kernels, Q, K and V GEMVs, RoPE and the KV append as kernels of their own, attention, the o
  /// GEMV, gate and up GEMVs, SwiGLU, the down GEMV, then the final norm, the LM head and the
  /// argmax. Not the backend's step (even with --fusion off its attention does RoPE and the
  /// append): the run record's kernels line names what a real step launches.
  void enqueue_baseline(cudaStream_t s) const {
    const float eps = m_.eps;
    float* x = x_.data<float>();
    float* xn = xn_.data<float>();
    float* q = q_.data<float>();
    float* k = q + m_.q_dim();
    float* v = k + m_.kv_dim();
    float* gate = gu_.data<float>();
    float* up = gate + m_.ffn;
    const auto gemv = [&](WeightType t, const uint8_t* w, int64_t rows, int64_t cols,
                          const float* in, float* out, const float* bias, const float* residual) {
      GemvParams p;
      p.type = t;
      p.w = w;
      p.rows = rows;
      p.cols = cols;
      p.x = in;
      p.y = out;
      p.bias = bias;
      p.residual = residual;
      launch_gemv(p, s);
    };
    launch_embedding(head_type_, head(), m_.hidden, in_.token(), x, s);
    const int64_t kv_layer = m_.kv_dim() * capacity_;
    const int64_t rb = row_bytes(type_, m_.hidden);
    for (int64_t l = 0; l < m_.layers; ++l) {
      const LayerPtrs L = layer(l);
      launch_rms_norm(x, L.attn_norm, xn, 1, m_.hidden, eps, s);
      gemv(type_, L.qkv, m_.q_dim(), m_.hidden, xn, q, L.bias, nullptr);
      gemv(type_, L.qkv + m_.q_dim() * rb, m_.kv_dim(), m_.hidden, xn, k,
           L.bias ? L.bias + m_.q_dim() : nullptr, nullptr);
      gemv(type_, L.qkv + (m_.q_dim() + m_.kv_dim()) * rb, m_.kv_dim(), m_.hidden, xn, v,
           L.bias ? L.bias + m_.q_dim() + m_.kv_dim() : nullptr, nullptr);
      launch_rope(q, k, m_.heads, m_.kv_heads, m_.head_dim, m_.head_dim, in_.pos(),
                  inv_freq_.data<double>(), RopeStyle::kHalfSplit, s);
      float* kc = k_cache_.data<float>() + l * kv_layer;
      float* vc = v_cache_.data<float>() + l * kv_layer;
      launch_kv_append(k, v, kc, vc, m_.kv_heads, m_.head_dim, capacity_, in_.pos(),
                       err_.data<int32_t>(), s);
      AttentionParams ap;
      ap.q = q;
      ap.k_cache = kc;
      ap.v_cache = vc;
      ap.out = att_.data<float>();
      ap.n_heads = m_.heads;
      ap.n_kv_heads = m_.kv_heads;
      ap.head_dim = m_.head_dim;
      ap.capacity = capacity_;
      ap.d_seq_len = in_.seq_len();
      ap.scratch = attn_scratch_.data<float>();
      ap.splits = splits_;
      launch_attention(ap, s);
      gemv(type_, L.o, m_.hidden, m_.q_dim(), att_.data<float>(), x, nullptr, x);
      launch_rms_norm(x, L.ffn_norm, xn, 1, m_.hidden, eps, s);
      gemv(type_, L.gu, m_.ffn, m_.hidden, xn, gate, nullptr, nullptr);
      gemv(type_, L.gu + m_.ffn * rb, m_.ffn, m_.hidden, xn, up, nullptr, nullptr);
      launch_swiglu(gate, up, act_.data<float>(), m_.ffn, s);
      gemv(type_, L.down, m_.hidden, m_.ffn, act_.data<float>(), x, nullptr, x);
    }
    launch_rms_norm(x, output_norm(), xn, 1, m_.hidden, eps, s);
    gemv(head_type_, head(), m_.vocab, m_.hidden, xn, logits_.data<float>(), nullptr, nullptr);
    launch_argmax(logits_.data<float>(), m_.vocab, argmax_scratch_.get(), argmax_scratch_.bytes(),
                  next_.data<int32_t>(), s);
  }

  /// The decode step with the fused launchers: per layer [norm→QKV GEMV (stacked weights, three
  /// output segments)] → [RoPE + KV append] → [attention] → [o GEMV + residual] → [norm→gate/up
  /// GEMV storing SwiGLU(gate, up) (direct / staged kernels; else two segments)] → [down GEMV +
  /// residual, forming SwiGLU in its input in the two-segment case] (6 kernels; 7 with
  /// `presplit`, which splits SwiGLU(gate, up) once in its own kernel for the quantized down
  /// GEMV). `pdl`: every launch carries the programmatic-dependent-launch attribute.
  void enqueue_fused(cudaStream_t s, bool pdl, bool presplit,
                     bool rope_in_attention = false) const {
    const float eps = m_.eps;
    float* x = x_.data<float>();
    float* q = q_.data<float>();
    float* k = q + m_.q_dim();
    float* v = k + m_.kv_dim();
    float* gate = gu_.data<float>();
    float* up = gate + m_.ffn;
    launch_embedding(head_type_, head(), m_.hidden, in_.token(), x, s, pdl);
    const int64_t kv_layer = m_.kv_dim() * capacity_;
    for (int64_t l = 0; l < m_.layers; ++l) {
      const LayerPtrs L = layer(l);
      GemvParams qkv;
      qkv.type = type_;
      qkv.w = L.qkv;
      qkv.rows = m_.q_dim() + 2 * m_.kv_dim();
      qkv.cols = m_.hidden;
      qkv.x = x;
      qkv.input = GemvInput::kRmsNorm;
      qkv.norm_w = L.attn_norm;
      qkv.eps = eps;
      qkv.y = q;
      qkv.y1 = k;
      qkv.y2 = v;
      qkv.y_end0 = m_.q_dim();
      qkv.y_end1 = m_.q_dim() + m_.kv_dim();
      qkv.bias = L.bias;
      qkv.pdl = pdl;
      launch_gemv(qkv, s);
      float* kc = k_cache_.data<float>() + l * kv_layer;
      float* vc = v_cache_.data<float>() + l * kv_layer;
      RopeKvParams rk;
      rk.q = q;
      rk.k = k;
      rk.v = v;
      rk.k_cache = kc;
      rk.v_cache = vc;
      rk.n_heads = m_.heads;
      rk.n_kv_heads = m_.kv_heads;
      rk.head_dim = m_.head_dim;
      rk.rope_dim = m_.head_dim;
      rk.capacity = capacity_;
      rk.d_pos = in_.pos();
      rk.d_inv_freq = inv_freq_.data<double>();
      rk.style = RopeStyle::kHalfSplit;
      rk.d_error = err_.data<int32_t>();
      rk.pdl = pdl;
      if (!rope_in_attention) launch_rope_kv_append(rk, s);
      AttentionParams ap;
      ap.q = q;
      ap.k_cache = kc;
      ap.v_cache = vc;
      ap.out = att_.data<float>();
      ap.n_heads = m_.heads;
      ap.n_kv_heads = m_.kv_heads;
      ap.head_dim = m_.head_dim;
      ap.capacity = capacity_;
      ap.d_seq_len = in_.seq_len();
      ap.scratch = attn_scratch_.data<float>();
      ap.splits = splits_;
      ap.pdl = pdl;
      ap.d_error = err_.data<int32_t>();
      if (rope_in_attention) {  // 5 kernels per layer: RoPE + KV append inside attention
        ap.k_new = k;
        ap.v_new = v;
        ap.d_pos = in_.pos();
        ap.d_inv_freq = inv_freq_.data<double>();
        ap.rope_dim = m_.head_dim;
        ap.rope_style = RopeStyle::kHalfSplit;
      }
      launch_attention(ap, s);
      GemvParams o;
      o.type = type_;
      o.w = L.o;
      o.rows = m_.hidden;
      o.cols = m_.q_dim();
      o.x = att_.data<float>();
      o.y = x;
      o.residual = x;
      o.pdl = pdl;
      launch_gemv(o, s);
      GemvParams gu;
      gu.type = type_;
      gu.w = L.gu;
      gu.rows = 2 * m_.ffn;
      gu.cols = m_.hidden;
      gu.x = x;
      gu.input = GemvInput::kRmsNorm;
      gu.norm_w = L.ffn_norm;
      gu.eps = eps;
      gu.pdl = pdl;
      GemvParams dn;
      dn.type = type_;
      dn.w = L.down;
      dn.rows = m_.hidden;
      dn.cols = m_.ffn;
      dn.x = gate;
      dn.y = x;
      dn.residual = x;
      dn.pdl = pdl;
      // As the backend: the direct and staged kernels store SwiGLU(gate, up) themselves, and the
      // down projection reads it as a plain x.
      GemvParams act = gu;
      act.y = gate;
      act.swiglu_out = true;
      if (!presplit && gemv_swiglu_out_supported(act)) {
        launch_gemv(act, s);
        launch_gemv(dn, s);
        continue;
      }
      gu.y = gate;
      gu.y1 = up;
      gu.y_end0 = m_.ffn;
      launch_gemv(gu, s);
      dn.x2 = up;
      dn.input = GemvInput::kSwiGlu;
      if (presplit) {
        // Where the decode step's split kernel triggers (CudaBackend::enqueue_gemv).
        launch_gemv_prepare_x(GemvInput::kSwiGlu, gate, up, nullptr, 0.0f, m_.ffn, split_.get(),
                              pdl, s, pdl && split_trigger_after_wait(trigger_, type_, false));
        dn.x_split = split_.get();
      }
      launch_gemv(dn, s);
    }
    GemvParams lm;
    lm.type = head_type_;
    lm.w = head();
    lm.rows = m_.vocab;
    lm.cols = m_.hidden;
    lm.x = x;
    lm.input = GemvInput::kRmsNorm;
    lm.norm_w = output_norm();
    lm.eps = eps;
    lm.y = logits_.data<float>();
    lm.pdl = pdl;
    launch_gemv(lm, s);
    launch_argmax(logits_.data<float>(), m_.vocab, argmax_scratch_.get(), argmax_scratch_.bytes(),
                  next_.data<int32_t>(), s, pdl);
  }

 private:
  struct LayerPtrs {
    const uint8_t* qkv;
    const uint8_t* o;
    const uint8_t* gu;
    const uint8_t* down;
    const float* attn_norm;
    const float* ffn_norm;
    const float* bias;  ///< [q;k;v] bias or null
  };

  [[nodiscard]] LayerPtrs layer(int64_t l) const {
    const uint8_t* base = weights_.data<uint8_t>() + static_cast<size_t>(l) * layer_bytes_;
    const float* vec = vectors_.data<float>() + l * (2 * m_.hidden + m_.q_dim() + 2 * m_.kv_dim());
    LayerPtrs p{};
    p.qkv = base;
    p.o = base + qkv_bytes_;
    p.gu = p.o + o_bytes_;
    p.down = p.gu + gu_bytes_;
    p.attn_norm = vec;
    p.ffn_norm = vec + m_.hidden;
    p.bias = m_.qkv_bias ? vec + 2 * m_.hidden : nullptr;
    return p;
  }
  [[nodiscard]] const uint8_t* head() const {
    return weights_.data<uint8_t>() + static_cast<size_t>(m_.layers) * layer_bytes_;
  }
  [[nodiscard]] const float* output_norm() const {
    return vectors_.data<float>() + m_.layers * (2 * m_.hidden + m_.q_dim() + 2 * m_.kv_dim());
  }

  const ModelShape& m_;
  WeightType type_, head_type_;
  int64_t capacity_;
  SplitTrigger trigger_;  ///< DECODEBENCH_SPLIT_TRIGGER, read once as the backend does
  size_t qkv_bytes_ = 0, o_bytes_ = 0, gu_bytes_ = 0, down_bytes_ = 0, layer_bytes_ = 0,
         head_bytes_ = 0;
  DeviceBuffer weights_, vectors_;
  DeviceBuffer x_, xn_, q_, att_, gu_, act_, logits_, k_cache_, v_cache_, attn_scratch_;
  DeviceBuffer argmax_scratch_, next_, err_, inv_freq_, split_;
  DeviceInputs in_;
  int splits_ = 1;
};

void run_step(GraphTimer& timer, double stream_gbps, const ModelShape& m, WeightType type,
              WeightType head_type, json& out, json& errors) {
  const std::string what = std::string(m.name) + " step " + weight_traits(type).name + "/" +
                           weight_traits(head_type).name;
  guarded(errors, what, [&] {
    if (m.hidden % weight_traits(type).block_elems != 0 ||
        m.ffn % weight_traits(type).block_elems != 0 ||
        m.hidden % weight_traits(head_type).block_elems != 0) {
      return;
    }
    const int64_t capacity = 256;
    StepModel model(m, type, head_type, capacity);
    model.set_inputs(1, 128);  // the 129th token: 128 positions of context
    const double bytes = model.bytes_per_token();
    std::vector<float> reference;  // logits of the baseline step
    const auto run = [&](const char* variant, const std::function<void(cudaStream_t)>& enqueue) {
      guarded(errors, what + " " + variant, [&] {
        const Timing t = timer.time(enqueue);
        // The step recomputes everything from the same inputs on every replay: compare its
        // logits with the baseline's (different summation orders: small relative differences).
        const std::vector<float> logits = model.logits();
        double diff = 0.0, scale = 0.0;
        if (reference.empty()) {
          reference = logits;
        } else {
          for (size_t i = 0; i < logits.size(); ++i) {
            const double d = std::fabs(static_cast<double>(logits[i]) - reference[i]);
            diff = std::isnan(d) ? INFINITY : std::max(diff, d);
            scale = std::max(scale, std::fabs(static_cast<double>(reference[i])));
          }
        }
        const double us = t.median_ms * 1e3;
        const double gbps = bytes / (us * 1e-6) / 1e9;
        out.push_back({{"model", m.name},
                       {"type", weight_traits(type).name},
                       {"head_type", weight_traits(head_type).name},
                       {"variant", variant},
                       {"seq_len", 129},
                       {"capacity", capacity},
                       {"nodes", t.nodes},
                       {"us", round_to(us, 0.01)},
                       {"us_min", round_to(t.min_ms * 1e3, 0.01)},
                       {"us_per_node", round_to(us / static_cast<double>(t.nodes), 0.001)},
                       {"tok_s", round_to(1e6 / us, 0.1)},
                       {"bytes", bytes},
                       {"gbps", round_to(gbps, 0.1)},
                       {"pct_stream", round_to(100.0 * gbps / stream_gbps, 0.1)},
                       {"logits_max_abs_diff_vs_baseline", diff},
                       {"logits_max_abs", scale}});
        char line[256];
        std::snprintf(line, sizeof line,
                      "%s %-18s %8.1f us/token %7.1f tok/s %4zu nodes %6.0f GB/s  diff %.3g",
                      what.c_str(), variant, us, 1e6 / us, t.nodes, gbps, diff);
        progress(line);
      });
    };
    run("baseline", [&](cudaStream_t s) { model.enqueue_baseline(s); });
    run("fused", [&](cudaStream_t s) { model.enqueue_fused(s, false, false); });
    run("fused+pdl", [&](cudaStream_t s) { model.enqueue_fused(s, true, false); });
    run("fused+pdl+attnrope", [&](cudaStream_t s) { model.enqueue_fused(s, true, false, true); });
    if (weight_traits(type).block_elems >= 32) {
      run("fused+pdl+presplit", [&](cudaStream_t s) { model.enqueue_fused(s, true, true); });
    }
  });
}

}  // namespace

std::vector<std::string> kernel_bench_models() { return {kQwen7b.name, kSmol.name}; }

/// Batched products: for each shape, type and batch size M, launch_gemm (split inputs prepared
/// once outside the graph, as the backend shares them between the products of one input) against
/// the automatic GEMV run M times.
void run_gemm_section(GraphTimer& timer, double stream_gbps, const GemvCase& c, WeightType type,
                      const std::vector<int64_t>& batches, json& out) {
  const WeightTraits tr = weight_traits(type);
  if (!gemm_mma_supported(type, c.cols)) return;
  const size_t bytes = static_cast<size_t>(c.rows * row_bytes(type, c.cols));
  const size_t stride = align_up(bytes);
  const size_t l2 = static_cast<size_t>(device_attribute(cudaDevAttrL2CacheSize));
  const size_t copies = std::clamp<size_t>((4 * l2 + stride - 1) / stride, 2, size_t{256});
  const int launches = static_cast<int>(copies);
  int64_t max_batch = 1;
  for (const int64_t b : batches) max_batch = std::max(max_batch, b);
  DeviceBuffer w = filled(stride * copies, 0x11);
  DeviceBuffer x = filled(static_cast<size_t>(max_batch * c.cols) * 4, 0x3C);
  DeviceBuffer y = filled(static_cast<size_t>(max_batch * c.rows) * 4, 0x3C);
  DeviceBuffer split(gemm_x_split_bytes(max_batch, c.cols));
  DeviceBuffer scratch(std::max<size_t>(16, gemm_scratch_bytes(type, c.rows, c.cols)));
  // The GEMV reference: one automatic GEMV (what batch 1 runs).
  GemvParams g;
  g.type = type;
  g.rows = c.rows;
  g.cols = c.cols;
  g.x = x.data<float>();
  g.y = y.data<float>();
  const Timing tg = timer.time([&](cudaStream_t s) {
    for (int i = 0; i < launches; ++i) {
      g.w = w.data<uint8_t>() + static_cast<size_t>(i) % copies * stride;
      launch_gemv(g, s);
    }
  });
  const double gemv_us = tg.median_ms * 1e3 / launches;
  for (const int64_t m : batches) {
    launch_gemm_prepare_x(type, x.data<float>(), c.cols, m, c.cols, split.get(), false,
                          timer.stream());
    DB_CUDA_CHECK(cudaStreamSynchronize(timer.stream()));
    GemmParams p;
    p.type = type;
    p.rows = c.rows;
    p.cols = c.cols;
    p.batch = m;
    p.x = x.data<float>();
    p.ldx = c.cols;
    p.x_split = split.get();
    p.y = y.data<float>();
    p.ldy = c.rows;
    p.variant = 2;
    p.scratch = scratch.get();
    p.scratch_bytes = scratch.bytes();
    const Timing t = timer.time([&](cudaStream_t s) {
      for (int i = 0; i < launches; ++i) {
        p.w = w.data<uint8_t>() + static_cast<size_t>(i) % copies * stride;
        launch_gemm(p, s);
      }
    });
    const double us = t.median_ms * 1e3 / launches;
    const double gbps = static_cast<double>(bytes) / (us * 1e-6) / 1e9;
    out.push_back({{"model", c.model},
                   {"shape", c.shape},
                   {"rows", c.rows},
                   {"cols", c.cols},
                   {"type", tr.name},
                   {"batch", m},
                   {"kernel", "mma"},
                   {"us", round_to(us, 0.001)},
                   {"gemv_us", round_to(gemv_us, 0.001)},
                   {"bytes", bytes},
                   {"gbps", round_to(gbps, 0.1)},
                   {"pct_stream", round_to(100.0 * gbps / stream_gbps, 0.1)},
                   {"us_per_seq", round_to(us / static_cast<double>(m), 0.001)},
                   {"vs_gemv", round_to(us / (static_cast<double>(m) * gemv_us), 0.001)}});
    char line[256];
    std::snprintf(line, sizeof line,
                  "%-8s %-8s %5s M=%-3lld %9.2f us %7.0f GB/s %5.1f%%  (GEMV %7.2f us)",
                  c.model.c_str(), c.shape.c_str(), tr.name, static_cast<long long>(m), us, gbps,
                  100.0 * gbps / stream_gbps, gemv_us);
    progress(line);
  }
}

json run_kernel_bench(const KernelBenchOptions& o) {
  if (o.iterations < 1) throw usage_error("bench-kernels: --iterations must be >= 1");
  std::vector<const ModelShape*> models;
  for (const std::string& name : o.models) models.push_back(&model_by_name(name));
  for (const GemvShapeArg& s : o.shapes) {
    if (s.rows <= 0 || s.cols <= 0 || s.rows > (int64_t{1} << 30) || s.cols > (int64_t{1} << 30)) {
      throw usage_error("bench-kernels: invalid GEMV shape " + std::to_string(s.rows) + "x" +
                        std::to_string(s.cols));
    }
  }
  check_cuda_switches();  // a bad DECODEBENCH_* switch: one error before any device work
  g_context_lost = false;
  std::string why;
  if (!cuda_device_available(&why)) throw resource_error("bench-kernels: " + why);
  DB_CUDA_CHECK(cudaSetDevice(0));
  std::vector<WeightType> types = o.types;
  if (types.empty()) types.assign(std::begin(kAllWeightTypes), std::end(kAllWeightTypes));

  json doc;
  doc["schema"] = "decodebench.bench-kernels/1";
  doc["gpu"] = gpu_environment(0);
  json errors = json::array();
  GraphTimer timer(o.iterations);

  progress("measuring the streaming read bandwidth ...");
  const double stream_gbps = measure_read_bandwidth_gbps(o.bandwidth_bytes, 20, timer.stream());
  doc["stream_read_gbps"] = round_to(stream_gbps, 0.1);
  progress("streaming read: " + std::to_string(static_cast<int>(stream_gbps)) + " GB/s");
  json type_names = json::array();
  for (const WeightType t : types) type_names.push_back(weight_traits(t).name);
  json model_names = json::array();
  for (const ModelShape* m : models) model_names.push_back(m->name);
  doc["settings"] = {{"iterations", o.iterations},
                     {"types", type_names},
                     {"models", model_names},
                     {"all_variants", o.all_variants},
                     {"bandwidth_bytes", o.bandwidth_bytes}};

  json gemv = json::array();
  json per_token = json::array();
  if (o.gemv) {
    GemvSection section(timer, stream_gbps, gemv, errors);
    for (const ModelShape* m : models) {
      for (const GemvCase& c : model_gemv_cases(*m)) {
        for (const WeightType t : types) {
          guarded(errors, c.model + " " + c.shape, [&] { section.run(c, t, o.all_variants); });
        }
      }
      for (const WeightType t : types) section.summarize(*m, t, per_token);
    }
    for (const GemvShapeArg& s : o.shapes) {
      const std::string name = std::to_string(s.rows) + "x" + std::to_string(s.cols);
      const GemvCase c{"custom", name, s.rows, s.cols, false, false, 0, 0};
      for (const WeightType t : types) {
        guarded(errors, name, [&] { section.run(c, t, o.all_variants); });
      }
    }
  }
  doc["gemv"] = gemv;
  doc["gemv_per_token"] = per_token;

  json gemm = json::array();
  if (o.gemm) {
    for (const int64_t b : o.batches) {
      if (b < 1 || b > 256) throw usage_error("bench-kernels: --batches must be in 1..256");
    }
    for (const ModelShape* m : models) {
      for (const GemvCase& c : model_gemv_cases(*m)) {
        if (c.shape == "q,o" || c.shape == "k,v" || c.shape == "gate,up") continue;  // stacked
        for (const WeightType t : types) {
          guarded(errors, c.model + " " + c.shape + " gemm",
                  [&] { run_gemm_section(timer, stream_gbps, c, t, o.batches, gemm); });
        }
      }
    }
  }
  doc["gemm"] = gemm;

  json ops = json::array();
  if (o.ops) {
    OpsSection section(timer, ops, errors);
    for (const ModelShape* m : models) section.run(*m);
  }
  doc["ops"] = ops;

  json steps = json::array();
  if (o.layers) {
    for (const ModelShape* m : models) {
      std::vector<std::pair<WeightType, WeightType>> pairs;
      if (!o.types.empty()) {
        for (const WeightType t : o.types) pairs.emplace_back(t, t);
      } else if (m == &kSmol) {
        pairs = {{WeightType::kQ4_1, WeightType::kQ8_0}, {WeightType::kF16, WeightType::kF16}};
      } else {
        pairs = {{WeightType::kBF16, WeightType::kBF16},
                 {WeightType::kQ8_0, WeightType::kQ8_0},
                 {WeightType::kQ4_0, WeightType::kQ4_0},
                 {WeightType::kQ4_K, WeightType::kQ4_K}};
      }
      for (const auto& [t, h] : pairs) run_step(timer, stream_gbps, *m, t, h, steps, errors);
    }
  }
  doc["layers"] = steps;
  doc["errors"] = errors;
  doc["context_unusable"] = g_context_lost;
  return doc;
}

}  // namespace decodebench::cuda
