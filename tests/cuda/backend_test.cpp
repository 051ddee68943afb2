// The CUDA backend end to end: token identity with the CPU reference, graph replay vs eager,
// capture-fault recovery, cross-thread capture, and input errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "core/cpu/cpu_backend.hpp"
#include "core/cpu/thread_pool.hpp"
#include "core/error.hpp"
#include "core/model/gguf_model.hpp"
#include "core/model/synthetic.hpp"
#include "cuda/cuda_backend.hpp"
#include "tests/cuda/cuda_test_util.hpp"
#include "tests/support/model_configs.hpp"
#include "tests/support/support.hpp"

namespace decodebench::cuda {
namespace {

using testing::expect_switch_error;

ModelConfig test_config() {
  ModelConfig c = ::decodebench::testing::small_model_config(3, 512, 8, 2, 64, 1024, 3000);
  c.context_length = 4096;
  c.qkv_bias = true;
  return c;
}

Model make_model(WeightType dtype, ModelConfig c = test_config()) {
  cpu::ThreadPool pool(4);
  return make_synthetic_model(c, dtype, 42, pool);
}

const std::vector<int32_t> kPrompt = {11, 7, 1999, 42, 5, 300, 2500, 8};

/// Whether this device takes the test model's matrices of `type` with `cols` columns in the tiled
/// layout (asked for 16 rows: the model's row counts times its row bytes are 16-byte multiples,
/// the vocabulary's 3,000 rows of 420 Q6_K bytes too, so Q6_K's matrix ends are aligned).
bool tiled_layout_here(WeightType type, int64_t cols) {
  return gemv_tiled_layout_supported(type, 16, cols);
}

// kPrompt folded into the model's vocabulary (the GGUF fixtures have 256 tokens).
std::vector<int32_t> prompt_for(const Backend& b) {
  std::vector<int32_t> p = kPrompt;
  const auto* cb = dynamic_cast<const CudaBackend*>(&b);
  const int64_t vocab = cb ? cb->vocab() : 3000;
  for (auto& t : p) t = static_cast<int32_t>(t % vocab);
  return p;
}

/// A backend built while environment variable `name` has `value` (nullopt: unset), for switches
/// read once per backend (DECODEBENCH_TOKEN_D2H, DECODEBENCH_SPLIT_TRIGGER).
std::unique_ptr<CudaBackend> backend_with(const Model& m, const CudaBackendOptions& o,
                                          const char* name, std::optional<std::string> value) {
  const decodebench::testing::ScopedVariable v(name, std::move(value));
  return std::make_unique<CudaBackend>(m, o);
}

// Greedy decode of `steps` tokens after the prompt.
std::vector<int32_t> decode(Backend& b, int steps, ExecMode mode = ExecMode::kEager,
                            ExecReport* report = nullptr) {
  std::vector<int32_t> ids;
  int32_t t = b.prefill(prompt_for(b));
  const ExecReport r = b.set_exec_mode(mode);
  if (report) *report = r;
  ids.push_back(t);
  for (int i = 0; i < steps; ++i) {
    t = b.step(t, static_cast<int64_t>(kPrompt.size()) + i, nullptr);
    ids.push_back(t);
  }
  return ids;
}

/// The largest |CPU logit| (the scale) and the largest |GPU − CPU| difference of one step.
struct LogitError {
  double scale = 0;
  double diff = 0;
  [[nodiscard]] double relative() const { return diff / scale; }
};

LogitError logit_error(const std::vector<float>& gpu, const std::vector<float>& cpu) {
  LogitError e;
  for (size_t j = 0; j < cpu.size(); ++j) {
    e.scale = std::max(e.scale, std::fabs(static_cast<double>(cpu[j])));
    e.diff = std::max(e.diff, std::fabs(static_cast<double>(gpu[j]) - cpu[j]));
  }
  return e;
}

// GPU and CPU decode the same model step by step, fed the same (CPU) tokens; each step's
// argmax must agree unless the CPU's top-2 logits are within 1e-3 of the largest |logit| (4e-3
// for quantized weights, whose x' digits may move logits by up to 2e-3 of it): a near tie, where
// f32 rounding order or the digits may pick either.
/// `presplit`: CudaBackendOptions::gemv_presplit. With 1 every quantized GEMV runs on a pre-split
/// x' (for tiled weights the stream-tiled kernel on sm_90 (Q4_0, Q4_1, Q8_0) or the tiled kernel,
/// else the stream kernel on sm_90), which the small test models would not otherwise reach.
/// `layout`: CudaBackendOptions::weight_layout.
void expect_same_tokens_as_cpu(const Model& m, int steps, const std::string& what, int presplit = 0,
                               WeightLayout layout = WeightLayout::kTiled, bool fused = true,
                               bool uniform = true) {
  CudaBackendOptions o;
  o.fused = fused;
  o.max_positions = static_cast<int64_t>(kPrompt.size()) + steps + 1;
  o.gemv_presplit = presplit;
  o.weight_layout = layout;
  const WeightType wt = m.weights.layers.at(0).wq.type;
  const bool quantized = weight_traits(wt).block_elems >= 32;
  const bool tiled =
      layout == WeightLayout::kTiled ||
      (layout == WeightLayout::kAuto &&
       (wt == WeightType::kQ8_0 ||
        ((wt == WeightType::kQ4_0 || wt == WeightType::kQ6_K) && gemv_stream_tiled_available(wt))));
  CudaBackend gpu(m, o);
  cpu::CpuBackend cpu(m, o.max_positions, 4);
  const std::vector<int32_t> prompt = prompt_for(gpu);
  int32_t g = gpu.prefill(prompt);
  int32_t c = cpu.prefill(prompt);
  std::vector<float> gl, cl;
  double worst = 0;
  for (int i = 0; i <= steps; ++i) {
    gpu.logits(gl);
    cpu.logits(cl);
    const LogitError e = logit_error(gl, cl);
    const double scale = e.scale;
    worst = std::max(worst, e.relative());
    if (g != c) {
      std::vector<float> sorted = cl;
      std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
      // A flip is a near tie: the CPU's top two within 1e-3 of the logit scale, or for quantized
      // weights within 4e-3, twice the logit error the two-digit kernels may leave (below).
      const double margin = (sorted[0] - sorted[1]) / scale;
      EXPECT_LT(margin, quantized ? 4e-3 : 1e-3)
          << what << ": step " << i << " GPU " << g << " CPU " << c << " (CPU margin " << margin
          << ", logit error " << e.relative() << ")";
    }
    if (i == steps) break;
    const int64_t pos = static_cast<int64_t>(kPrompt.size()) + i;
    g = gpu.step(c, pos, nullptr);  // both fed the CPU's token
    c = cpu.step(c, pos, nullptr);
  }
  // Logits agree to f32 rounding (different summation orders), relative to the logit scale;
  // where GEMVs read x' pre-split (the stream, tiled and stream-tiled kernels: variants 4, 5, 7)
  // also to its two-digit residue, at most 2^-13 of each 32-column tile's largest |x'| (these
  // models: up to 5.3e-4 on the H200).
  const auto& n = gpu.gemv_variant_counts();
  const bool two_digits = n[4] + n[5] + n[7] > 0;
  EXPECT_LT(worst, two_digits ? 2e-3 : 2e-4)
      << what << ": max logit error relative to the largest logit";
  if (!uniform) return;  // the kernel checks below assume one weight type
  const WeightType type = m.weights.layers.at(0).wq.type;
  int major = 0;
  DB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  if (presplit == 1 && tiled && tiled_layout_here(type, m.config.hidden)) {
    // Every GEMV (all of them of this type, rows of 512 and 1024 columns) ran on a tiled kernel,
    // except a tied LM head: the embedding table stays in GGUF blocks. The stream-tiled kernel
    // (variant 7) for the types it reads on sm_90, else the tiled kernel (5).
    const bool st = major >= 9 && type != WeightType::kQ4_K;
    EXPECT_GT(n[st ? 7 : 5], 0) << what;
    EXPECT_EQ(n[st ? 5 : 7], 0) << what;
    EXPECT_EQ(n[1] + n[2], 0) << what << ": GEMVs not on a pre-split x'";
    if (m.config.tied_embeddings) {
      EXPECT_GT(n[3] + n[4], 0) << what << ": the tied LM head reads GGUF blocks";
    } else {
      EXPECT_EQ(n[3] + n[4], 0) << what << ": GEMVs not on a tiled kernel";
    }
  } else if (presplit == 1 && weight_traits(type).block_elems >= 32) {
    // Every quantized GEMV ran on a pre-split x': the stream kernel (variant 4) on sm_90.
    EXPECT_EQ(n[5] + n[7], 0) << what;
    EXPECT_GT(n[major >= 9 ? 4 : 3], 0) << what;
    if (major >= 9) {
      EXPECT_EQ(n[3], 0) << what << ": the test shapes all suit the stream kernel";
    }
    EXPECT_EQ(n[1], 0) << what << ": staged GEMVs although every input was pre-split";
  }
}

// The Q4_K_M mix keeps V in Q6_K in some layers (here the last of three; the first two stack
// [Wq; Wk; Wv]): Q and K then go up stacked and V apart, and V reads the x' of the QK GEMV: two
// GEMVs, and where x' is pre-split on sm_90 one split kernel for both (V on the tiled layout's
// stream-tiled kernel with --weight-layout auto). Tokens as the CPU's in every form.
TEST(Backend, MixedTypeVReadsTheInputOfTheStackedQK) {
  DB_REQUIRE_CUDA();
  const decodebench::testing::ScopedVariable trigger("DECODEBENCH_SPLIT_TRIGGER", std::nullopt);
  cpu::ThreadPool pool(4);
  const Model m = make_synthetic_model(test_config(), WeightScheme::q4_k_m(), 42, pool);
  int64_t mixed = 0;
  for (const LayerWeights& l : m.weights.layers) mixed += l.wv.type != l.wq.type ? 1 : 0;
  ASSERT_GT(mixed, 0);
  const int64_t layers = m.config.n_layers;
  int major = 0;
  DB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  for (const int presplit : {0, 1}) {
    for (const WeightLayout layout : {WeightLayout::kAuto, WeightLayout::kGguf}) {
      const std::string what = "q4_k_m presplit " + std::to_string(presplit) +
                               (layout == WeightLayout::kAuto ? " auto" : " gguf");
      expect_same_tokens_as_cpu(m, 16, what, presplit, layout, true, false);
      CudaBackendOptions o;
      o.max_positions = 16;
      o.gemv_presplit = presplit;
      o.weight_layout = layout;
      CudaBackend gpu(m, o);
      gpu.prefill(std::vector<int32_t>{1, 2, 3});
      const KernelMix mix = gpu.kernel_mix();
      int64_t gemvs = 0;
      for (const auto& [name, n] : mix.gemv_per_step) gemvs += n;
      // QK, V, o, gate/up, down per mixed layer, QKV, o, gate/up, down per other, the LM head.
      EXPECT_EQ(gemvs, 4 * layers + mixed + 1) << what;
      // Every GEMV pre-split (presplit 1, head_dim 64: no split from attention) by its own split
      // kernel but V, which reads QK's on sm_90 (the stream kernels); none split where the
      // planner keeps these small GEMVs.
      const int64_t own = major >= 9 ? 0 : mixed;
      EXPECT_EQ(mix.x_split_kernels, presplit == 1 ? 4 * layers + 1 + own : 0) << what;
      // Each split precedes a Q4_K or Q6_K GEMV, so by default each lets it launch after its
      // wait (split_trigger_after_wait; DECODEBENCH_SPLIT_TRIGGER is unset here).
      EXPECT_EQ(mix.x_split_kernels_after_wait, mix.x_split_kernels) << what;
    }
  }
}

class BackendDtype : public ::testing::TestWithParam<WeightType> {};

TEST_P(BackendDtype, SameTokensAsCpuOver64Steps) {
  DB_REQUIRE_CUDA();
  const Model m = make_model(GetParam());
  expect_same_tokens_as_cpu(m, 64, weight_traits(GetParam()).name);
}

// Every quantized GEMV pre-split keeps the CPU's tokens for every type: on the stream-tiled
// kernel (Q4_0, Q4_1, Q8_0, Q6_K in the tiled layout, sm_90), the tiled kernel (Q4_K in the tiled
// layout) or the stream kernel (the other types).
TEST_P(BackendDtype, SameTokensAsCpuWithEveryGemvPreSplit) {
  DB_REQUIRE_CUDA();
  const WeightType t = GetParam();
  if (weight_traits(t).block_elems < 32) GTEST_SKIP() << "pre-split x' is for quantized types";
  expect_same_tokens_as_cpu(make_model(t), 64, std::string(weight_traits(t).name) + " presplit", 1);
}

// The same with GGUF blocks on the device (`--weight-layout gguf`): the stream kernel for every
// type.
TEST_P(BackendDtype, SameTokensAsCpuWithEveryGemvPreSplitInGgufBlocks) {
  DB_REQUIRE_CUDA();
  const WeightType t = GetParam();
  if (!tiled_layout_here(t, 512)) GTEST_SKIP() << "no tiled layout: the test above covers it";
  expect_same_tokens_as_cpu(make_model(t), 64,
                            std::string(weight_traits(t).name) + " presplit, gguf blocks", 1,
                            WeightLayout::kGguf);
}

// The automatic layout tiles Q8_0, Q4_0 and Q6_K only.
TEST_P(BackendDtype, SameTokensAsCpuWithEveryGemvPreSplitInTheAutomaticLayout) {
  DB_REQUIRE_CUDA();
  const WeightType t = GetParam();
  if (!tiled_layout_here(t, 512)) GTEST_SKIP() << "no tiled layout: the tests above cover it";
  expect_same_tokens_as_cpu(make_model(t), 16,
                            std::string(weight_traits(t).name) + " presplit, auto layout", 1,
                            WeightLayout::kAuto);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, BackendDtype,
                         ::testing::Values(WeightType::kF32, WeightType::kF16, WeightType::kBF16,
                                           WeightType::kQ8_0, WeightType::kQ4_0, WeightType::kQ4_1,
                                           WeightType::kQ5_0, WeightType::kQ5_1, WeightType::kQ4_K,
                                           WeightType::kQ5_K, WeightType::kQ6_K),
                         [](const auto& info) {
                           return std::string(weight_traits(info.param).name);
                         });

TEST(Backend, TiedEmbeddingsAndQkNormAndGqaShapes) {
  DB_REQUIRE_CUDA();
  ModelConfig c = test_config();
  c.tied_embeddings = true;
  c.qkv_bias = false;
  c.n_heads = 4;
  c.n_kv_heads = 4;
  c.head_dim = 128;
  c.rope_dim = 128;
  expect_same_tokens_as_cpu(make_model(WeightType::kBF16, c), 32, "tied, MHA, head_dim 128");
}

// With tiled weights the embedding table, which a tied LM head shares, stays in GGUF blocks (the
// embedding kernel reads them).
TEST(Backend, TiedEmbeddingsWithTiledWeights) {
  DB_REQUIRE_CUDA();
  ModelConfig c = test_config();
  c.tied_embeddings = true;
  for (const WeightType t : {WeightType::kQ4_0, WeightType::kQ8_0}) {
    expect_same_tokens_as_cpu(make_model(t, c), 32,
                              std::string(weight_traits(t).name) + " tied, presplit", 1);
  }
}

/// Whether the stream kernels' forms are this build's defaults (no switch in the environment).
bool default_gemv_forms() {
  for (const char* name :
       {"DECODEBENCH_GEMV_RING", "DECODEBENCH_GEMV_RING_LONG", "DECODEBENCH_GEMV_RING_GGUF",
        "DECODEBENCH_GEMV_RING_Q6_K", "DECODEBENCH_GEMV_RING_FEW_GROUPS",
        "DECODEBENCH_GEMV_RING_FEW_GROUPS_PER_SM"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return false;  // empty: the default, as ring_request reads it
  }
  return true;
}

// kernel_mix names the GEMV kernels of one step: the test model's 3 layers × (QKV, o, gate/up,
// down) + the LM head, every one pre-split: all tiled (on the stream-tiled kernel on sm_90), or
// all on the stream kernel (sm_90) in GGUF blocks.
TEST(Backend, KernelMixNamesTheGemvKernelsOfAStep) {
  DB_REQUIRE_CUDA();
  const Model m = make_model(WeightType::kQ8_0);
  const int64_t per_step = 4 * m.config.n_layers + 1;
  for (const WeightLayout layout : {WeightLayout::kTiled, WeightLayout::kGguf}) {
    CudaBackendOptions o;
    o.max_positions = 16;
    o.gemv_presplit = 1;
    o.weight_layout = layout;
    CudaBackend gpu(m, o);
    EXPECT_TRUE(gpu.kernel_mix().gemv_per_step.empty()) << "no step ran yet";
    gpu.prefill(std::vector<int32_t>{1, 2, 3});
    const KernelMix mix = gpu.kernel_mix();
    int major = 0;
    DB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
    const std::string kernel = layout == WeightLayout::kTiled
                                   ? (major >= 9 ? "stream-tiled" : "tiled")
                                   : (major >= 9 ? "stream" : "mma");
    ASSERT_EQ(mix.gemv_per_step.size(), 1u);
    EXPECT_EQ(mix.gemv_per_step[0].first, kernel);
    EXPECT_EQ(mix.gemv_per_step[0].second, per_step) << kernel;
    // By form, in order of first launch: Q8_0's ring (4 warps × 1 slot × 4 rows) takes every
    // tiled matrix (rows of 544 and 1,088 bytes); in GGUF blocks the rows under 768 bytes (QKV,
    // o, gate/up and the LM head: 544 bytes) take the 2-row ring (8 warps × 2 slots × 2 rows) and
    // the down projection's 1,088 bytes run per warp. Before sm_90 the tiled kernel has no forms
    // and the mma kernel runs on the pre-split x'.
    const bool tiled = layout == WeightLayout::kTiled;
    const int64_t layers = m.config.n_layers;
    const std::vector<std::pair<std::string, int64_t>> forms =
        major < 9 ? std::vector<std::pair<std::string, int64_t>>{{tiled ? kernel : "mma presplit",
                                                                  per_step}}
        : tiled   ? std::vector<std::pair<std::string, int64_t>>{{kernel + " ring 4x1x4", per_step}}
                  : std::vector<std::pair<std::string, int64_t>>{
                        {kernel + " ring 8x2x2", 3 * layers + 1}, {kernel + " per-warp", layers}};
    if (default_gemv_forms()) {
      EXPECT_EQ(mix.gemv_forms_per_step, forms);
    }
    int64_t forms_total = 0;
    for (const auto& [name, n] : mix.gemv_forms_per_step) forms_total += n;
    EXPECT_EQ(forms_total, per_step);
    EXPECT_EQ(mix.tiled_matrices, layout == WeightLayout::kTiled ? per_step : 0);
    // head_dim 64: the attention kernel writes no split (its warps' 128 columns would span two
    // heads, which several blocks write), so every pre-split x' comes from a split kernel.
    EXPECT_EQ(mix.x_split_kernels, per_step);
    EXPECT_EQ(mix.x_splits_in_attention, 0);
  }
}

// DECODEBENCH_GEMV_DIRECT_SPREAD=1 runs every GEMV of a float model's step in the direct kernel's
// spread form (the run record's forms say so), with the CPU's tokens and logits; set empty (the
// default), none does (the default form, named "direct").
TEST(Backend, DirectSpreadSwitchReachesEveryFloatGemv) {
  DB_REQUIRE_CUDA();
  using decodebench::testing::ScopedVariable;
  for (const WeightType t : {WeightType::kF16, WeightType::kBF16}) {
    const Model m = make_model(t);
    const int64_t per_step = 4 * m.config.n_layers + 1;
    for (const char* v : {"1", ""}) {
      const ScopedVariable spread("DECODEBENCH_GEMV_DIRECT_SPREAD", v);
      const std::string what = std::string(weight_traits(t).name) + " spread '" + v + "'";
      expect_same_tokens_as_cpu(m, 16, what);
      CudaBackendOptions o;
      o.max_positions = 16;
      CudaBackend gpu(m, o);
      gpu.prefill(std::vector<int32_t>{1, 2, 3});
      const std::vector<std::pair<std::string, int64_t>> forms{
          {*v == '1' ? "direct spread" : "direct", per_step}};
      EXPECT_EQ(gpu.kernel_mix().gemv_forms_per_step, forms) << what;
    }
  }
}

// With head_dim 128 the attention kernel writes the o projection's pre-split x' itself: one split
// kernel fewer per layer, and logits bit for bit those of the form with the split kernel, eagerly
// and replayed from a graph; tokens as the CPU's. On a cluster, the form that writes the split
// keeps the cluster merge and the other pushes: the same bits too.
TEST(Backend, AttentionWritesTheOProjectionsSplit) {
  DB_REQUIRE_CUDA();
  ModelConfig c = test_config();
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 128;
  c.rope_dim = 128;
  for (const WeightType t : {WeightType::kQ4_0, WeightType::kQ8_0, WeightType::kQ6_K}) {
    const Model m = make_model(t, c);
    const std::string name = weight_traits(t).name;
    expect_same_tokens_as_cpu(m, 16, name + " head_dim 128, presplit", 1);
    for (const ExecMode mode : {ExecMode::kEager, ExecMode::kGraph}) {
      CudaBackendOptions o;
      // 200 positions of head_dim 128: 4 tiles, attention on a cluster of 4 on sm_90. The backend
      // that writes the split keeps the cluster merge, the other pushes (attention_pushes), and
      // their logits must still agree bit for bit.
      o.max_positions = 200;
      o.gemv_presplit = 1;
      CudaBackend with(m, o);
      o.attention_x_split = false;
      CudaBackend without(m, o);
      const std::string what = name + (mode == ExecMode::kGraph ? " graph" : " eager");
      int32_t tw = with.prefill(prompt_for(with));
      int32_t to = without.prefill(prompt_for(without));
      with.set_exec_mode(mode);
      without.set_exec_mode(mode);
      std::vector<float> lw, lo;
      for (int i = 0; i < 16; ++i) {
        const int64_t pos = static_cast<int64_t>(kPrompt.size()) + i;
        tw = with.step(tw, pos, nullptr);
        to = without.step(to, pos, nullptr);
        with.logits(lw);
        without.logits(lo);
        ASSERT_TRUE(testing::all_bits_equal(lw, lo, what + " step " + std::to_string(i)));
        ASSERT_EQ(tw, to) << what;
      }
      const int64_t layers = c.n_layers;
      const int64_t per_step = 4 * layers + 1;
      EXPECT_EQ(with.kernel_mix().x_splits_in_attention, layers) << what;
      EXPECT_EQ(with.kernel_mix().x_split_kernels, per_step - layers) << what;
      EXPECT_EQ(without.kernel_mix().x_splits_in_attention, 0) << what;
      EXPECT_EQ(without.kernel_mix().x_split_kernels, per_step) << what;
      int major = 0;
      DB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
      EXPECT_EQ(with.kernel_mix().attention, major >= 9 ? "cluster 4" : "block") << what;
      EXPECT_EQ(without.kernel_mix().attention, major >= 9 ? "cluster-push 4" : "block") << what;
    }
  }
}

// DECODEBENCH_ATTENTION picks the attention kernel (a measurement switch): each form gives the
// CPU's logits (within f32 rounding: the forms add the positions in different orders) and the run
// record names the form; a bad value is an error naming the variable. Capacity 300 at head_dim 64
// is three 128-position tiles: a cluster of 3 by default (with the push merge: at head_dim 64
// attention writes no x' split), 3 merged blocks, 3 splits for split-KV.
TEST(Backend, AttentionSwitchPicksTheFormAndKeepsTheLogits) {
  DB_REQUIRE_CUDA();
  const char* was = std::getenv("DECODEBENCH_ATTENTION");  // restored when the test ends
  const decodebench::testing::ScopedVariable restore(
      "DECODEBENCH_ATTENTION", was ? std::optional<std::string>(was) : std::nullopt);
  const Model m = make_model(WeightType::kF32);
  int major = 0;
  DB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  const std::string cluster = major >= 9 ? "cluster 3" : "block";
  const std::string push = major >= 9 ? "cluster-push 3" : "block";
  CudaBackendOptions o;
  o.max_positions = 300;
  // The third word: DECODEBENCH_ATTENTION_TRIGGER (where attention lets the o projection launch).
  // The form's name comes from the backend's AttentionParams, not from the kernel's arguments:
  // with `exit` this checks that the switch reaches launch_attention and that the logits stay
  // right; that the kernels then skip their trigger only a timing shows (performance.md, round 40).
  for (const auto& [value, form, trigger] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"", push, ""},  // F32: no x' split
           {"cluster", cluster, ""},
           {"push", push, ""},
           {"block", "block", ""},
           {"merge", "merge 3", ""},
           {"split", "split-kv 3", ""},
           {"", push + " (trigger at exit)", "exit"},
           {"cluster", cluster + " (trigger at exit)", "exit"},
           {"split", "split-kv 3 (trigger at exit)", "exit"}}) {
    setenv("DECODEBENCH_ATTENTION", value.c_str(), 1);
    const decodebench::testing::ScopedVariable at("DECODEBENCH_ATTENTION_TRIGGER", trigger);
    CudaBackend gpu(m, o);
    cpu::CpuBackend cpu(m, o.max_positions, 4);
    int32_t g = gpu.prefill(kPrompt);
    int32_t c = cpu.prefill(kPrompt);
    gpu.set_exec_mode(ExecMode::kGraph);
    std::vector<float> gl, cl;
    double worst = 0;
    for (int i = 0; i < 40; ++i) {
      const int64_t pos = static_cast<int64_t>(kPrompt.size()) + i;
      g = gpu.step(c, pos, nullptr);  // both fed the CPU's token
      c = cpu.step(c, pos, nullptr);
      gpu.logits(gl);
      cpu.logits(cl);
      worst = std::max(worst, logit_error(gl, cl).relative());
    }
    EXPECT_LT(worst, 1e-4) << "DECODEBENCH_ATTENTION=" << value << " trigger " << trigger;
    EXPECT_EQ(gpu.kernel_mix().attention, form) << "DECODEBENCH_ATTENTION=" << value;
    (void)g;
  }
  setenv("DECODEBENCH_ATTENTION", "clusters", 1);
  expect_switch_error([&] { CudaBackend gpu(m, o); },
                      "DECODEBENCH_ATTENTION: 'clusters' is none of cluster");
}

// Every GEMV variant of every weight type has its own slot in the backend's per-variant counts
// (a missing slot once counted variant 6 as "fallback"), and each has a name. Host-only.
TEST(Backend, EveryGemvVariantHasACountSlotAndAName) {
  for (int t = 0; t < 64; ++t) {  // every GGUF type id in use (BF16 is 30)
    for (const int v : gemv_variants(static_cast<WeightType>(t))) {
      EXPECT_GE(v, 1) << "type " << t;
      EXPECT_LT(static_cast<size_t>(v), CudaBackend::kGemvVariants) << "type " << t;
      EXPECT_STRNE(gemv_variant_name(v), "?") << v;
    }
  }
  EXPECT_EQ(gemv_variants(WeightType::kQ4_0).back(), 7);  // the largest id in use
}

// `--weight-layout` reaches the backend, and the result JSON and the terminal say which GEMV
// kernels a step ran: a 1-layer Q8_0 model whose gate/up (8192×1024), down (1024×4096) and LM
// head (8192×1024) are large enough for a pre-split x' and whose QKV and o are not (staged).
TEST(Backend, WeightLayoutFlagReachesTheRunRecord) {
  DB_REQUIRE_CUDA();
  decodebench::testing::TempDir dir;
  int major = 0;
  DB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  for (const std::string layout : {"auto", "gguf"}) {
    const auto json = dir.path() / (layout + ".json");
    const auto r = decodebench::testing::run_decodebench(
        {"--backend", "cuda",     "--preset",   "qwen2.5-0.5b",
         "--layers",  "1",        "--hidden",   "1024",
         "--heads",   "8",        "--kv-heads", "2",
         "--ffn",     "4096",     "--vocab",    "8192",
         "--untied",  "--dtype",  "q8_0",       "--prompt-tokens",
         "4",         "--tokens", "4",          "--weight-layout",
         layout,      "--json",   json.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto doc = nlohmann::json::parse(decodebench::testing::read_file(json));
    const auto& k = doc["backend"]["kernels"];
    ASSERT_TRUE(k.is_object()) << doc["backend"].dump();
    EXPECT_EQ(k["gemv_per_step"]["staged"], 2) << k.dump();
    const std::string big = layout == "auto" ? (major >= 9 ? "stream-tiled" : "tiled")
                                             : (major >= 9 ? "stream" : "mma");
    EXPECT_EQ(k["gemv_per_step"][big], 3) << k.dump();
    EXPECT_EQ(k["gemv_per_step"].size(), 2u) << k.dump();
    // By form (Q8_0's ring 4 × 1 × 4 takes the tiled rows of 1,088 and 4,352 bytes; in GGUF
    // blocks these Q8_0 rows, at least 1 KiB, run per warp), in order of first launch: QKV and o
    // come first.
    const bool tiled = layout == "auto";
    const std::string big_form =
        major < 9 ? (tiled ? big : "mma presplit") : big + (tiled ? " ring 4x1x4" : " per-warp");
    EXPECT_NE(r.out.find("kernels  GEMVs per step: staged 2 · " + big), std::string::npos) << r.out;
    if (default_gemv_forms()) {
      EXPECT_EQ(k["gemv_forms_per_step"], nlohmann::json({{"staged", 2}, {big_form, 3}}))
          << k.dump();
      EXPECT_NE(r.out.find("kernels  GEMVs per step: staged 2 · " + big_form + " 3 · "),
                std::string::npos)
          << r.out;
    }
    EXPECT_EQ(k["tiled_matrices"], layout == "auto" ? 3 : 0) << k.dump();
    EXPECT_EQ(doc["config"]["weight_layout"]["value"], layout);
    // 8 positions of head_dim 128 are one K tile: the short-context form in one block, which
    // the kernels line names last.
    const char* attention = std::getenv("DECODEBENCH_ATTENTION");
    if (attention == nullptr || *attention == '\0') {
      EXPECT_EQ(k["attention"], "block") << k.dump();
      EXPECT_NE(r.out.find(" · attention: block\n"), std::string::npos) << r.out;
    }
  }
}

// Greedy steps find their inputs on the device (the previous step's argmax kernel wrote them):
// no H2D copy, and tokens and logits bit for bit those of the form that copies every step,
// eagerly and replayed. A step fed anything else copies its inputs.
TEST(Backend, GreedyStepsAdvanceTheirInputsOnTheDevice) {
  DB_REQUIRE_CUDA();
  const Model m = make_model(WeightType::kQ8_0);
  for (const ExecMode mode : {ExecMode::kEager, ExecMode::kGraph}) {
    const std::string what = mode == ExecMode::kGraph ? "graph" : "eager";
    CudaBackendOptions o;
    o.max_positions = static_cast<int64_t>(kPrompt.size()) + 24;
    CudaBackend on(m, o);
    o.device_advance = false;
    CudaBackend off(m, o);
    int32_t t_on = on.prefill(prompt_for(on));
    int32_t t_off = off.prefill(prompt_for(off));
    on.set_exec_mode(mode);
    off.set_exec_mode(mode);
    const int64_t p0 = static_cast<int64_t>(kPrompt.size());
    const int64_t copies_on = on.input_copies();
    const int64_t copies_off = off.input_copies();
    std::vector<float> l_on, l_off;
    for (int64_t i = 0; i < 16; ++i) {
      t_on = on.step(t_on, p0 + i, nullptr);
      t_off = off.step(t_off, p0 + i, nullptr);
      ASSERT_EQ(t_on, t_off) << what << " step " << i;
      on.logits(l_on);
      off.logits(l_off);
      ASSERT_TRUE(testing::all_bits_equal(l_on, l_off, what + " step " + std::to_string(i)));
    }
    // With phase timing (separate forward and argmax graphs or launches) as well.
    for (int64_t i = 16; i < 20; ++i) {
      StepPhases ph_on, ph_off;
      t_on = on.step(t_on, p0 + i, &ph_on);
      t_off = off.step(t_off, p0 + i, &ph_off);
      ASSERT_EQ(t_on, t_off) << what << " phase-timed step " << i;
      on.logits(l_on);
      off.logits(l_off);
      ASSERT_TRUE(testing::all_bits_equal(l_on, l_off, what + " phase-timed " + std::to_string(i)));
    }
    EXPECT_EQ(on.input_copies(), copies_on) << what << ": greedy steps copied their inputs";
    EXPECT_EQ(off.input_copies(), copies_off + 20) << what;
    // Another token, then the same position again: both copied, and results as with copies.
    const int32_t other = (t_on + 1) % 3000;
    t_on = on.step(other, p0 + 20, nullptr);
    t_off = off.step(other, p0 + 20, nullptr);
    EXPECT_EQ(t_on, t_off) << what;
    t_on = on.step(other, p0 + 20, nullptr);
    EXPECT_EQ(t_on, t_off) << what << ": the same step again";
    EXPECT_EQ(on.input_copies(), copies_on + 2) << what;
    on.logits(l_on);
    off.logits(l_off);
    EXPECT_TRUE(testing::all_bits_equal(l_on, l_off, what + " after a copied step"));
  }
}

// The GPU's own step time: the graph replayed back to back at a position of the sequence gives
// a positive time, replays that very step (its logits bit for bit, so the replays did not
// advance their inputs), leaves the KV cache as the step left it (the steps after it give the
// same tokens), and is refused or not measured where it cannot be.
TEST(Backend, ReplayedStepGpuTimeLeavesTheSequenceIntact) {
  DB_REQUIRE_CUDA();
  const Model m = make_model(WeightType::kBF16);
  CudaBackendOptions o;
  o.max_positions = static_cast<int64_t>(kPrompt.size()) + 33;
  CudaBackend gpu(m, o);
  const int64_t p0 = static_cast<int64_t>(kPrompt.size());
  const int64_t mid = 16;  // step 16 is fed ids[16] at position p0 + 16
  std::vector<int32_t> ids = {gpu.prefill(prompt_for(gpu))};
  ASSERT_TRUE(gpu.set_exec_mode(ExecMode::kGraph).captured);
  std::vector<float> at_mid, after;
  for (int64_t i = 0; i < 32; ++i) {
    ids.push_back(gpu.step(ids.back(), p0 + i, nullptr));
    if (i == mid) gpu.logits(at_mid);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const double us = gpu.replayed_step_gpu_us(ids[mid], p0 + mid, 16);
  const double wall_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GT(us, 0.0);
  EXPECT_LT(us * 16, wall_us) << "16 replays took longer on the GPU than on the wall clock";
  gpu.logits(after);
  EXPECT_TRUE(testing::all_bits_equal(after, at_mid, "the last replay's logits"));
  // The steps after it give the tokens of the first decode (they read the KV entry the replays
  // rewrote); the first of them copies its inputs, the others find theirs on the device.
  const int64_t copies = gpu.input_copies();
  int32_t t = ids[mid + 1];
  for (int64_t i = mid + 1; i < 32; ++i) {
    t = gpu.step(t, p0 + i, nullptr);
    EXPECT_EQ(t, ids[static_cast<size_t>(i) + 1]) << "step " << i;
  }
  EXPECT_EQ(gpu.input_copies(), copies + 1);
  EXPECT_THROW(gpu.replayed_step_gpu_us(ids[0], p0, 0), Error);
  EXPECT_THROW(gpu.replayed_step_gpu_us(ids[0], o.max_positions, 4), Error);
  gpu.set_exec_mode(ExecMode::kEager);
  EXPECT_LT(gpu.replayed_step_gpu_us(ids[0], p0, 4), 0.0) << "eager mode has no graph";
}

// The GPU's idle time between steps, read on the GPU's clock: a series begins with no gap, then
// one per step; a host pause between two steps shows in that gap (at least the pause, not much
// more), steps back to back give short gaps, in graph and eager mode, with phase timing too; a
// new series starts empty, and the replays and batched steps record nothing of their own.
TEST(Backend, IdleTimeBetweenStepsIsReadOnTheGpu) {
  DB_REQUIRE_CUDA();
  const Model m = make_model(WeightType::kQ8_0);
  CudaBackendOptions o;
  o.max_positions = static_cast<int64_t>(kPrompt.size()) + 40;
  o.max_batch = 2;
  CudaBackend gpu(m, o);
  const int64_t p0 = static_cast<int64_t>(kPrompt.size());
  int32_t t = gpu.prefill(prompt_for(gpu));
  constexpr auto kPause = std::chrono::microseconds(2000);
  const auto pause = [&] {  // a busy wait: a sleep may overshoot by far more
    const auto until = std::chrono::steady_clock::now() + kPause;
    while (std::chrono::steady_clock::now() < until) {
    }
  };
  for (const ExecMode mode : {ExecMode::kGraph, ExecMode::kEager}) {
    const std::string what = mode == ExecMode::kGraph ? "graph" : "eager";
    gpu.set_exec_mode(mode);
    int64_t pos = p0;
    gpu.begin_idle_series();
    EXPECT_TRUE(gpu.idle_series_ns().empty()) << what;
    // Host clock before each step's call and after its return: the GPU's idle time between steps
    // i and i + 1 lies within [called(i), returned(i + 1)], and exceeds the host's own time
    // between them (returned(i) to called(i + 1)) only by a wake-up and a launch. A fixed bound of
    // pause + 1 ms failed once on an H100 (3.06 ms, round 35): the host's scheduler can stretch
    // a pause; these bounds move with it.
    std::array<std::chrono::steady_clock::time_point, 11> called{}, returned{};
    called[0] = std::chrono::steady_clock::now();
    t = gpu.step(t, pos++, nullptr);
    returned[0] = std::chrono::steady_clock::now();
    EXPECT_TRUE(gpu.idle_series_ns().empty()) << what << ": one step has no gap before it";
    // Steps 1..4 after a pause, 5..8 back to back, 9..10 phase-timed after a pause.
    for (size_t i = 1; i <= 10; ++i) {
      if (i <= 4 || i >= 9) pause();
      StepPhases ph;
      called[i] = std::chrono::steady_clock::now();
      t = gpu.step(t, pos++, i >= 9 ? &ph : nullptr);
      returned[i] = std::chrono::steady_clock::now();
    }
    const std::vector<int64_t> gaps = gpu.idle_series_ns();
    ASSERT_EQ(gaps.size(), 10u) << what;
    const double pause_ns = std::chrono::duration<double, std::nano>(kPause).count();
    for (size_t j = 0; j < gaps.size(); ++j) {
      const bool paused = j < 4 || j >= 8;
      const double g = static_cast<double>(gaps[j]);
      const double host_ns =
          std::chrono::duration<double, std::nano>(returned[j + 1] - called[j]).count();
      EXPECT_LT(g, host_ns) << what << " gap " << j << ": longer than the host's interval";
      const double between_ns =
          std::chrono::duration<double, std::nano>(called[j + 1] - returned[j]).count();
      EXPECT_LT(g, between_ns + 1e6) << what << " gap " << j << ": much more than the host's";
      if (paused) {
        EXPECT_GE(g, pause_ns) << what << " gap " << j;
      } else {
        EXPECT_GT(g, 0.0) << what << " gap " << j;
        EXPECT_LT(g, 0.5 * pause_ns) << what << " gap " << j << " of steps back to back";
      }
    }
    // The replays run the graph (stamping the clock): a series begun after them has no gap
    // before its first step, then one short gap.
    if (mode == ExecMode::kGraph) {
      EXPECT_GT(gpu.replayed_step_gpu_us(t, p0, 4), 0.0);
    }
    gpu.begin_idle_series();
    EXPECT_TRUE(gpu.idle_series_ns().empty()) << what;
    t = gpu.step(t, pos++, nullptr);
    t = gpu.step(t, pos++, nullptr);
    const std::vector<int64_t> after = gpu.idle_series_ns();
    ASSERT_EQ(after.size(), 1u) << what;
    EXPECT_LT(static_cast<double>(after[0]), 0.5 * pause_ns) << what;
    std::printf("%s: gaps of steps back to back %lld %lld %lld %lld ns, after a pause %lld ns\n",
                what.c_str(), static_cast<long long>(gaps[4]), static_cast<long long>(gaps[5]),
                static_cast<long long>(gaps[6]), static_cast<long long>(gaps[7]),
                static_cast<long long>(gaps[0]));
  }
  // Batched steps stamp nothing: a series around them stays empty.
  gpu.set_exec_mode_batch(ExecMode::kEager, 2);
  gpu.begin_idle_series();
  std::vector<int32_t> next(2);
  for (int i = 0; i < 3; ++i) {
    gpu.step_batch(std::vector<int32_t>{1, 2}, std::vector<int64_t>{p0 + i, p0 + i}, next, nullptr);
  }
  EXPECT_TRUE(gpu.idle_series_ns().empty());
}

// DECODEBENCH_TOKEN_D2H's values (host code: runs without a GPU too): unset or empty is the
// kernel's own store to host memory, "copy" the D2H copy after it, anything else exit 2 naming
// the variable.
TEST(Backend, TokenD2hRequestReadsTheSwitch) {
  {
    const decodebench::testing::ScopedVariable unset("DECODEBENCH_TOKEN_D2H", std::nullopt);
    EXPECT_FALSE(token_copy_request());
  }
  {
    const decodebench::testing::ScopedVariable empty("DECODEBENCH_TOKEN_D2H", "");
    EXPECT_FALSE(token_copy_request());
  }
  {
    const decodebench::testing::ScopedVariable copy("DECODEBENCH_TOKEN_D2H", "copy");
    EXPECT_TRUE(token_copy_request());
  }
  const decodebench::testing::ScopedVariable bad("DECODEBENCH_TOKEN_D2H", "Copy");
  expect_switch_error([] { token_copy_request(); }, "DECODEBENCH_TOKEN_D2H: 'Copy' is not copy");
}

// DECODEBENCH_SPLIT_TRIGGER's values (host code: runs without a GPU too): unset or empty is the
// per-type default (after the wait before Q4_K and Q6_K GEMVs), "entry" and "wait" the same
// place for every GEMV, "head" after the wait before the LM head only, anything else exit 2
// naming the variable.
TEST(Backend, SplitTriggerRequestReadsTheSwitch) {
  using decodebench::testing::ScopedVariable;
  const struct {
    std::optional<std::string> value;
    SplitTrigger want;
  } cases[] = {{std::nullopt, SplitTrigger::kDefault},
               {"", SplitTrigger::kDefault},
               {"entry", SplitTrigger::kEntry},
               {"wait", SplitTrigger::kAfterWait},
               {"head", SplitTrigger::kLmHead}};
  for (const auto& c : cases) {
    const ScopedVariable v("DECODEBENCH_SPLIT_TRIGGER", c.value);
    EXPECT_EQ(split_trigger_request(), c.want) << c.value.value_or("(unset)");
  }
  for (const WeightType t : {WeightType::kQ4_0, WeightType::kQ4_K, WeightType::kQ8_0}) {
    for (const bool lm_head : {false, true}) {
      EXPECT_FALSE(split_trigger_after_wait(SplitTrigger::kEntry, t, lm_head));
      EXPECT_TRUE(split_trigger_after_wait(SplitTrigger::kAfterWait, t, lm_head));
      EXPECT_EQ(split_trigger_after_wait(SplitTrigger::kLmHead, t, lm_head), lm_head);
    }
  }
  // The default: after the wait before the Q4_K_M mix's types (round 35, H200), else at entry,
  // the LM head included.
  for (const bool lm_head : {false, true}) {
    EXPECT_TRUE(split_trigger_after_wait(SplitTrigger::kDefault, WeightType::kQ4_K, lm_head));
    EXPECT_TRUE(split_trigger_after_wait(SplitTrigger::kDefault, WeightType::kQ6_K, lm_head));
    for (const WeightType t : {WeightType::kQ4_0, WeightType::kQ4_1, WeightType::kQ8_0,
                               WeightType::kQ5_K, WeightType::kF16}) {
      EXPECT_FALSE(split_trigger_after_wait(SplitTrigger::kDefault, t, lm_head))
          << weight_traits(t).name;
    }
  }
  const ScopedVariable bad("DECODEBENCH_SPLIT_TRIGGER", "after");
  expect_switch_error([] { split_trigger_request(); },
                      "DECODEBENCH_SPLIT_TRIGGER: 'after' is not entry, wait or head");
}

// DECODEBENCH_GEMV_PRESPLIT_MIN's values (host code: runs without a GPU too): unset or empty is
// the default 2 Mi weights, a decimal count from 0 to 2^40 (digits only, leading zeros too) is
// taken, anything else is refused with exit 2 and a message that names the variable and quotes
// the value.
TEST(Backend, PresplitMinRequestReadsTheSwitch) {
  using decodebench::testing::ScopedVariable;
  const struct {
    std::optional<std::string> value;
    int64_t want;
  } cases[] = {
      {std::nullopt, int64_t{2} << 20},    {"", int64_t{2} << 20}, {"0", 0}, {"1048576", 1048576},
      {"1099511627776", int64_t{1} << 40}, {"00000000000001", 1}};
  for (const auto& c : cases) {
    const ScopedVariable v("DECODEBENCH_GEMV_PRESPLIT_MIN", c.value);
    EXPECT_EQ(presplit_min_request(), c.want) << c.value.value_or("(unset)");
  }
  EXPECT_EQ(kPresplitMinElements, int64_t{2} << 20);
  for (const std::string bad : {"-1", "+1", "4M", "1e6", " 1", "1 ", "0x10", "1099511627777",
                                "99999999999999999999", "x"}) {
    const ScopedVariable v("DECODEBENCH_GEMV_PRESPLIT_MIN", bad);
    expect_switch_error([] { (void)presplit_min_request(); },
                        "DECODEBENCH_GEMV_PRESPLIT_MIN: '" + bad + "'");
  }
}

// Each GEMV switch (DECODEBENCH_GEMV_RING*, _DIRECT_SPREAD) with a good value, an empty one (the
// default) and a bad one.
struct GemvSwitchCase {
  const char* name;
  const char* good;
  const char* bad;
};
constexpr GemvSwitchCase kGemvSwitchCases[] = {
    {"DECODEBENCH_GEMV_RING", "16x3", "16x9"},
    {"DECODEBENCH_GEMV_RING_LONG", "2x2", "3x2"},
    {"DECODEBENCH_GEMV_RING_CTAS", "rounds", "4"},
    {"DECODEBENCH_GEMV_RING_MAX_CTAS", "1", "5"},
    {"DECODEBENCH_GEMV_RING_GGUF", "0", "yes"},
    {"DECODEBENCH_GEMV_RING_Q6_K", "1", "on"},
    {"DECODEBENCH_GEMV_RING_FEW_GROUPS", "split:2x4", "split:3"},
    {"DECODEBENCH_GEMV_RING_FEW_GROUPS_PER_SM", "0.5", "1e-3"},
    {"DECODEBENCH_GEMV_DIRECT_SPREAD", "long", "on"},
};

// check_gemv_switches parses every DECODEBENCH_GEMV_RING* switch (host code: runs without a GPU
// too): a bad value is exit 2 naming the variable and quoting the value; good and empty pass.
TEST(Backend, GemvSwitchesAreCheckedWithoutADevice) {
  using decodebench::testing::ScopedVariable;
  for (const auto& c : kGemvSwitchCases) {
    for (const char* ok : {c.good, ""}) {
      const ScopedVariable v(c.name, ok);
      EXPECT_NO_THROW(check_gemv_switches()) << c.name << "='" << ok << "'";
    }
    const ScopedVariable v(c.name, c.bad);
    expect_switch_error([] { check_gemv_switches(); }, std::string(c.name) + ": '" + c.bad + "'");
  }
}

// A float model's GEMVs make no stream plan, where the ring switches are otherwise read (its
// direct plans read only DECODEBENCH_GEMV_DIRECT_SPREAD, at each plan), so the backend checks them
// all when it is made: a BF16 backend refuses each bad value before any upload, and builds with
// the good ones.
TEST(Backend, FloatModelBackendRefusesABadGemvSwitch) {
  DB_REQUIRE_CUDA();
  using decodebench::testing::ScopedVariable;
  const Model m = make_model(WeightType::kBF16);
  CudaBackendOptions o;
  o.max_positions = 64;
  for (const auto& c : kGemvSwitchCases) {
    {
      const ScopedVariable v(c.name, c.good);
      EXPECT_NO_THROW(CudaBackend(m, o)) << c.name << "='" << c.good << "'";
    }
    const ScopedVariable v(c.name, c.bad);
    expect_switch_error([&] { CudaBackend b(m, o); }, std::string(c.name) + ": '" + c.bad + "'");
  }
}

// DECODEBENCH_GEMV_PRESPLIT_MIN moves the test model's Q4_0 GEMVs (3 layers of QKV 768 × 512, o
// 512 × 512, gate/up 2,048 × 512 and down 512 × 1,024; LM head 3,000 × 512: 1.46 Mi) between the
// staged kernel and a pre-split x': by default (2 Mi weights) all 13 are staged and no split kernel
// runs; at 1 Mi the gate/up GEMVs (exactly 1 Mi: the bound is inclusive) and the LM head are not;
// at 0 none is. Each pre-split GEMV has its own split kernel and its matrix in the tiled layout.
// The tokens equal the CPU's in each case.
TEST(Backend, PresplitMinMovesGemvsToAPreSplitInput) {
  DB_REQUIRE_CUDA();
  const Model m = make_model(WeightType::kQ4_0);
  CudaBackendOptions o;
  o.max_positions = static_cast<int64_t>(kPrompt.size()) + 4;
  const struct {
    std::optional<std::string> value;
    int64_t staged;
  } cases[] = {{std::nullopt, 13}, {"1048576", 9}, {"0", 0}};
  for (const auto& c : cases) {
    const std::string what = "DECODEBENCH_GEMV_PRESPLIT_MIN=" + c.value.value_or("(unset)");
    const auto b = backend_with(m, o, "DECODEBENCH_GEMV_PRESPLIT_MIN", c.value);
    b->prefill(prompt_for(*b));
    const KernelMix mix = b->kernel_mix();
    int64_t staged = 0, total = 0;
    for (const auto& [name, n] : mix.gemv_per_step) {
      total += n;
      if (name == "staged") staged += n;
    }
    EXPECT_EQ(total, 13) << what;
    EXPECT_EQ(staged, c.staged) << what;
    // Each GEMV on a pre-split x' reads its own split (head_dim 64: attention writes none) and
    // its matrix went up in the tiled layout (--weight-layout auto; rows of 288 and 576 bytes).
    EXPECT_EQ(mix.x_split_kernels, 13 - c.staged) << what;
    EXPECT_EQ(mix.x_splits_in_attention, 0) << what;
    const bool tiled_here =
        tiled_layout_here(WeightType::kQ4_0, 512) && tiled_layout_here(WeightType::kQ4_0, 1024);
    EXPECT_EQ(mix.tiled_matrices, tiled_here ? 13 - c.staged : 0) << what;
    const decodebench::testing::ScopedVariable v("DECODEBENCH_GEMV_PRESPLIT_MIN", c.value);
    expect_same_tokens_as_cpu(m, 8, what);
  }
}

// The x' split kernels triggering PDL at entry and after their wait: the same tokens and logits
// bit for bit, eagerly and replayed (where the next kernel may launch changes no value it reads:
// it waits for the split either way), and the run record counts the splits of each kind (the
// default for these types: at entry).
TEST(Backend, SplitTriggerPlaceChangesNoLogit) {
  DB_REQUIRE_CUDA();
  for (const WeightType t : {WeightType::kQ4_0, WeightType::kQ8_0}) {
    const Model m = make_model(t);
    CudaBackendOptions o;
    o.max_positions = static_cast<int64_t>(kPrompt.size()) + 24;
    o.gemv_presplit = 1;  // every quantized GEMV reads a split x': the small model has splits
    ASSERT_TRUE(o.pdl);
    const auto entry_ptr = backend_with(m, o, "DECODEBENCH_SPLIT_TRIGGER", "entry");
    const auto wait_ptr = backend_with(m, o, "DECODEBENCH_SPLIT_TRIGGER", "wait");
    CudaBackend& entry = *entry_ptr;
    CudaBackend& wait = *wait_ptr;
    int32_t a = entry.prefill(prompt_for(entry));
    int32_t b = wait.prefill(prompt_for(wait));
    ASSERT_EQ(a, b);
    const int64_t p0 = static_cast<int64_t>(kPrompt.size());
    for (const ExecMode mode : {ExecMode::kEager, ExecMode::kGraph}) {
      const std::string what =
          std::string(weight_traits(t).name) + (mode == ExecMode::kGraph ? " graph" : " eager");
      entry.set_exec_mode(mode);
      wait.set_exec_mode(mode);
      std::vector<float> la, lb;
      for (int64_t i = 0; i < 6; ++i) {
        const int64_t pos = p0 + i + (mode == ExecMode::kGraph ? 6 : 0);
        a = entry.step(a, pos, nullptr);
        b = wait.step(b, pos, nullptr);
        ASSERT_EQ(a, b) << what << " step " << i;
        entry.logits(la);
        wait.logits(lb);
        ASSERT_TRUE(testing::all_bits_equal(la, lb, what + " step " + std::to_string(i)));
      }
      // The run record counts where each split triggered: every one after its wait with
      // "wait", none with "entry" and, for these types, none by default.
      const KernelMix w = wait.kernel_mix();
      EXPECT_GT(w.x_split_kernels, 0) << what << ": no split kernel ran";
      EXPECT_EQ(w.x_split_kernels_after_wait, w.x_split_kernels) << what;
      EXPECT_EQ(entry.kernel_mix().x_split_kernels, w.x_split_kernels) << what;
      EXPECT_EQ(entry.kernel_mix().x_split_kernels_after_wait, 0) << what;
    }
    const auto plain = backend_with(m, o, "DECODEBENCH_SPLIT_TRIGGER", std::nullopt);
    plain->prefill(prompt_for(*plain));
    EXPECT_GT(plain->kernel_mix().x_split_kernels, 0);
    EXPECT_EQ(plain->kernel_mix().x_split_kernels_after_wait, 0) << weight_traits(t).name;
    // "head": only the LM head's split (every GEMV is pre-split here, the LM head too).
    const auto head = backend_with(m, o, "DECODEBENCH_SPLIT_TRIGGER", "head");
    head->prefill(prompt_for(*head));
    EXPECT_EQ(head->kernel_mix().x_split_kernels_after_wait, 1) << weight_traits(t).name;
  }
}

// The token stored in host memory by the argmax kernel and the token copied after it: the same
// tokens and logits bit for bit, eagerly, replayed and phase-timed, and the graph of the kernel's
// form has one node fewer (no copy).
TEST(Backend, TokenStoredByTheKernelEqualsTheCopiedToken) {
  DB_REQUIRE_CUDA();
  const Model m = make_model(WeightType::kQ4_0);
  CudaBackendOptions o;
  o.max_positions = static_cast<int64_t>(kPrompt.size()) + 24;
  const auto stored_ptr = backend_with(m, o, "DECODEBENCH_TOKEN_D2H", std::nullopt);
  const auto copied_ptr = backend_with(m, o, "DECODEBENCH_TOKEN_D2H", "copy");
  CudaBackend& stored = *stored_ptr;
  CudaBackend& copied = *copied_ptr;
  int32_t a = stored.prefill(prompt_for(stored));
  int32_t b = copied.prefill(prompt_for(copied));
  ASSERT_EQ(a, b);
  const int64_t p0 = static_cast<int64_t>(kPrompt.size());
  int64_t nodes[2] = {0, 0};
  int32_t last = a;
  int changes = 0;
  for (const ExecMode mode : {ExecMode::kEager, ExecMode::kGraph}) {
    const std::string what = mode == ExecMode::kGraph ? "graph" : "eager";
    const ExecReport ra = stored.set_exec_mode(mode);
    const ExecReport rb = copied.set_exec_mode(mode);
    if (mode == ExecMode::kGraph) {
      nodes[0] = ra.graph_nodes;
      nodes[1] = rb.graph_nodes;
    }
    std::vector<float> la, lb;
    for (int64_t i = 0; i < 10; ++i) {
      StepPhases pa, pb;
      const int64_t pos = p0 + i + (mode == ExecMode::kGraph ? 10 : 0);
      a = stored.step(a, pos, i >= 8 ? &pa : nullptr);
      b = copied.step(b, pos, i >= 8 ? &pb : nullptr);
      ASSERT_EQ(a, b) << what << " step " << i;
      stored.logits(la);
      copied.logits(lb);
      ASSERT_TRUE(testing::all_bits_equal(la, lb, what + " step " + std::to_string(i)));
      // The token is the argmax of the step's own logits (a store that never landed would leave
      // the previous token: caught wherever the token changes, counted below).
      ASSERT_EQ(a, static_cast<int32_t>(std::max_element(la.begin(), la.end()) - la.begin()))
          << what << " step " << i;
      if (a != last) ++changes;
      last = a;
    }
  }
  EXPECT_GE(changes, 4) << "too few token changes for the check above to see a stale token";
  EXPECT_EQ(nodes[0] + 1, nodes[1]) << "the copy is the one node more";
}

// Steps launched ahead (enqueue_step with the token on the device, then finish_step) give the
// tokens and the final logits of steps run one at a time, eagerly and replayed; each keeps its
// own token slot, so a token the host reads late is not overwritten by the step launched after
// it; and the calls that need no step in flight refuse while one is.
TEST(Backend, LaunchedAheadStepsEqualStepsOneAtATime) {
  DB_REQUIRE_CUDA();
  const Model m = make_model(WeightType::kQ4_0);
  CudaBackendOptions o;
  o.max_positions = static_cast<int64_t>(kPrompt.size()) + 32;
  CudaBackend one(m, o), ahead(m, o);
  EXPECT_EQ(ahead.launch_ahead_unavailable(), "");
  const int32_t first = one.prefill(prompt_for(one));
  ASSERT_EQ(ahead.prefill(prompt_for(ahead)), first);
  const int64_t p0 = static_cast<int64_t>(kPrompt.size());
  constexpr int64_t kSteps = 24;
  for (const ExecMode mode : {ExecMode::kEager, ExecMode::kGraph}) {
    const std::string what = mode == ExecMode::kGraph ? "graph" : "eager";
    one.set_exec_mode(mode);
    ahead.set_exec_mode(mode);
    std::vector<int32_t> want{first};
    for (int64_t i = 0; i < kSteps; ++i) want.push_back(one.step(want.back(), p0 + i, nullptr));
    int changes = 0;
    for (size_t i = 1; i < want.size(); ++i) changes += want[i] != want[i - 1] ? 1 : 0;
    EXPECT_GE(changes, 4) << what << ": too few token changes to see a stale token";
    // The late read below (after step 6 is launched, step 5's token) must differ from the token
    // of the step that could overwrite it.
    ASSERT_NE(want[6], want[7]) << what;
    const int64_t copies = ahead.input_copies();
    std::vector<int32_t> got{first};
    ahead.enqueue_step(first, p0);
    for (int64_t i = 0; i < kSteps; ++i) {
      if (i + 1 < kSteps) ahead.enqueue_step(kTokenOnDevice, p0 + i + 1);
      if (i == 5) {
        // Both steps in flight have finished before the host reads the older one's token.
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      got.push_back(ahead.finish_step());
    }
    EXPECT_EQ(got, want) << what;
    EXPECT_LE(ahead.input_copies() - copies, 1) << what << ": only the first step's inputs";
    std::vector<float> la, lb;
    one.logits(la);
    ahead.logits(lb);
    EXPECT_TRUE(testing::all_bits_equal(la, lb, what + " logits of the last step"));
    // The device holds the next step's inputs: a step one at a time continues the sequence.
    EXPECT_EQ(ahead.step(got.back(), p0 + kSteps, nullptr),
              one.step(want.back(), p0 + kSteps, nullptr))
        << what;
    EXPECT_EQ(ahead.input_copies() - copies, mode == ExecMode::kEager ? 0 : 1)
        << what << " (eager: the prefill left the first step's inputs on the device)";
  }
  // Refusals while steps are in flight, and misuse.
  const auto code_of = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.code();
    }
    return ExitCode::kOk;
  };
  std::vector<float> l;
  EXPECT_EQ(code_of([&] { ahead.finish_step(); }), ExitCode::kRuntime) << "none in flight";
  EXPECT_EQ(code_of([&] { ahead.enqueue_step(kTokenOnDevice, p0 + 3); }), ExitCode::kUsage)
      << "the device holds the inputs of position p0 + 25, not p0 + 3";
  ahead.enqueue_step(first, p0);
  EXPECT_EQ(code_of([&] { ahead.enqueue_step(first, p0 + 1); }), ExitCode::kRuntime)
      << "a host token with a step in flight";
  EXPECT_EQ(code_of([&] { ahead.enqueue_step(kTokenOnDevice, p0 + 2); }), ExitCode::kUsage)
      << "not the position after the last step";
  ahead.enqueue_step(kTokenOnDevice, p0 + 1);
  EXPECT_EQ(code_of([&] { ahead.enqueue_step(kTokenOnDevice, p0 + 2); }), ExitCode::kRuntime)
      << "a third step in flight";
  EXPECT_EQ(code_of([&] { ahead.step(first, p0, nullptr); }), ExitCode::kRuntime);
  EXPECT_EQ(code_of([&] { ahead.logits(l); }), ExitCode::kRuntime);
  EXPECT_EQ(code_of([&] { ahead.idle_series_ns(); }), ExitCode::kRuntime);
  EXPECT_EQ(ahead.finish_step(), one.step(first, p0, nullptr));
  ahead.finish_step();
  // Without device advance there is nothing to launch ahead from.
  CudaBackendOptions no_advance = o;
  no_advance.device_advance = false;
  CudaBackend fixed(m, no_advance);
  EXPECT_EQ(fixed.launch_ahead_unavailable(), "the device does not advance the step's inputs");
  EXPECT_EQ(code_of([&] { fixed.enqueue_step(first, 0); }), ExitCode::kRuntime);
  // The copy form keeps one token buffer: it cannot launch ahead, and says why.
  const decodebench::testing::ScopedVariable copy("DECODEBENCH_TOKEN_D2H", "copy");
  CudaBackend copied(m, o);
  EXPECT_NE(copied.launch_ahead_unavailable().find("DECODEBENCH_TOKEN_D2H=copy"),
            std::string::npos);
  EXPECT_EQ(code_of([&] { copied.enqueue_step(first, 0); }), ExitCode::kRuntime);
}

// --graph on with a capture that fails (an injected cudaMalloc during capture, which the default
// thread-local mode refuses): exit 1 naming the call, before the first decode step, so the user
// does not first wait out --min-time of eager steps (before: a whole eager pass, then the error).
TEST(Backend, GraphOnStopsAtAFailedCaptureBeforeTheSteps) {
  DB_REQUIRE_CUDA();
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = decodebench::testing::run_decodebench(
      {"--backend", "cuda", "--preset", "smollm2-135m", "--layers", "2", "--vocab", "4096",
       "--prompt-tokens", "5", "--tokens", "8", "--graph", "on", "--inject-capture-fault", "alloc",
       "--min-time", "60", "-q"});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("graph capture failed: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("use --graph auto to fall back to eager"), std::string::npos) << r.err;
  EXPECT_LT(s, 30.0) << "the eager steps ran first (--min-time 60)";
}

// `run` reports the host overhead per token of its graph pass (the GPU's idle time between
// steps, with TPOT − the GPU's replayed step as a cross-check), in the JSON and on the terminal;
// eager and phase-timing passes carry none.
TEST(Backend, RunRecordHasTheHostOverheadOfTheGraphPass) {
  DB_REQUIRE_CUDA();
  decodebench::testing::TempDir dir;
  const auto json = dir.path() / "host.json";
  const auto r = decodebench::testing::run_decodebench(
      {"--backend", "cuda", "--preset", "smollm2-135m", "--layers", "2", "--vocab", "4096",
       "--prompt-tokens", "5", "--tokens", "8", "--graph", "both", "--phase-timing", "--json",
       json.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(decodebench::testing::read_file(json));
  int graphs = 0;
  for (const auto& run : doc["runs"]) {
    const auto& res = run["results"];
    const auto& h = res["host_overhead"];
    if (run["label"] != "graph") {
      EXPECT_TRUE(h.is_null()) << run["label"] << ": " << h.dump();
      continue;
    }
    ++graphs;
    ASSERT_TRUE(h.is_object()) << res.dump();
    const double tpot_us = res["stats"]["tpot_ns"]["median"].get<double>() / 1e3;
    EXPECT_DOUBLE_EQ(h["tpot_us_median"].get<double>(), tpot_us);
    EXPECT_GT(h["gpu_step_us"].get<double>(), 0.0);
    EXPECT_NEAR(h["replay_host_us"].get<double>(), tpot_us - h["gpu_step_us"].get<double>(), 1e-6);
    EXPECT_EQ(h["position"], 5 + 3) << "the middle of 8 steps from position 5";
    EXPECT_EQ(h["replays"], 32);
    // 8 steps, 7 gaps between them: the idle times' median is the figure.
    EXPECT_EQ(h["method"], "idle");
    ASSERT_TRUE(h["idle"].is_object()) << h.dump();
    EXPECT_EQ(h["idle"]["steps"], 7);
    EXPECT_DOUBLE_EQ(h["host_us"].get<double>(), h["idle"]["median_us"].get<double>());
    EXPECT_GT(h["host_us"].get<double>(), 0.0);
    EXPECT_LT(h["host_us"].get<double>(), tpot_us) << "the GPU idle longer than a whole step";
    EXPECT_LE(h["idle"]["min_us"].get<double>(), h["idle"]["median_us"].get<double>());
    EXPECT_LE(h["idle"]["median_us"].get<double>(), h["idle"]["max_us"].get<double>());
  }
  EXPECT_EQ(graphs, 1);
  // The graph pass launched its steps ahead (the default); eager and phase-timed passes did not
  // ask, and the speed-up line says so.
  for (const auto& run : doc["runs"]) {
    const bool graph = run["label"] == "graph";
    EXPECT_EQ(run["results"]["launch_ahead"], (nlohmann::json{{"on", graph}, {"why_off", nullptr}}))
        << run["label"];
  }
  EXPECT_NE(r.out.find("(median TPOT; the graph's steps launched ahead, the eager ones one at a "
                       "time)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("steps launched ahead: the token's way to the host and the host's work "
                       "overlap the next step"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("host     graph: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("µs per token outside the GPU's kernels (from one step's last kernel"),
            std::string::npos)
      << r.out;
}

/// A CUDA run of a 2-layer SmolLM2 shape (vocabulary 1024), `tokens` timed steps per round after
/// a 4-token prompt, rounds until 0.05 s are timed: its result document (null when it failed; `r`
/// holds its exit code and output).
nlohmann::json small_cuda_run(const std::string& tokens, decodebench::testing::CommandResult* r) {
  decodebench::testing::TempDir dir;
  const auto json = dir.path() / "run.json";
  *r = decodebench::testing::run_decodebench(
      {"--backend", "cuda", "--preset", "smollm2-135m", "--layers", "2", "--vocab", "1024",
       "--prompt-tokens", "4", "--tokens", tokens, "--min-time", "0.05", "--json", json.string()});
  if (r->exit_code != 0) return nullptr;
  return nlohmann::json::parse(decodebench::testing::read_file(json));
}

// Every timed round of a CUDA run carries the GPU's readings (NVML): as many records as rounds,
// each with the round's steps, its SM clock at the end and the energy over it; the terminal sums
// them up per pass. Where NVML cannot be read the record says why and the test is skipped.
TEST(Backend, RunRecordHasPerRoundGpuTelemetry) {
  DB_REQUIRE_CUDA();
  decodebench::testing::CommandResult r;
  const auto doc = small_cuda_run("32", &r);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto& run0 = doc["runs"][0];
  const auto& t = run0["results"]["telemetry"];
  ASSERT_TRUE(t.is_object()) << run0["results"].dump().substr(0, 400);
  if (t["available"] == false) GTEST_SKIP() << "NVML: " << t["reason"];
  const int64_t rounds = run0["results"]["stopping"]["rounds"];
  ASSERT_EQ(static_cast<int64_t>(t["rounds"].size()), rounds);
  int64_t steps = 0;
  for (const auto& round : t["rounds"]) {
    EXPECT_EQ(round["steps"], 32) << round.dump();
    EXPECT_GT(round["wall_s"].get<double>(), 0.0) << round.dump();
    EXPECT_GT(round["sm_clock_mhz"].get<int64_t>(), 0) << round.dump();
    if (!round["energy_j"].is_null()) {
      EXPECT_GE(round["energy_j"].get<double>(), 0.0);
    }
    steps += round["steps"].get<int64_t>();
  }
  EXPECT_EQ(steps, run0["results"]["timed_steps"].get<int64_t>());
  const std::string label = run0["label"];
  EXPECT_NE(r.out.find("gpu      " + label + ": SM "), std::string::npos) << r.out;
}

// A GPU shared with another process: this test process holds a context on the GPU while
// decodebench runs, so every round's reading lists at least one other compute process and the
// run warns (docs/ci.md: timed runs want the GPU alone).
TEST(Backend, RunWarnsWhenAnotherProcessSharesTheGpu) {
  DB_REQUIRE_CUDA();
  DB_CUDA_CHECK(cudaFree(nullptr));  // creates this process's context if it had none
  // Whether the GPU's process list can be read here at all, asked of another tool: a listing in
  // decodebench that broke then fails the test instead of skipping it.
  std::string listed;
  if (FILE* smi = popen(
          "nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader 2>/dev/null",
          "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, smi) != nullptr) listed += line;
    pclose(smi);
  }
  if (listed.find_first_of("0123456789") == std::string::npos) {
    GTEST_SKIP() << "nvidia-smi lists no compute processes here, not even this test's";
  }
  // Under MPS the clients show as the server: decodebench would not find itself in the list.
  if (listed.find("mps-server") != std::string::npos) GTEST_SKIP() << "MPS: " << listed;
  decodebench::testing::CommandResult r;
  const auto doc = small_cuda_run("16", &r);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto& run0 = doc["runs"][0];
  const auto& t = run0["results"]["telemetry"];
  ASSERT_TRUE(t.is_object()) << run0["results"].dump().substr(0, 400);
  if (t["available"] == false) GTEST_SKIP() << "NVML: " << t["reason"];
  ASSERT_TRUE(t["other_processes_max"].is_number_integer())
      << "nvidia-smi lists " << listed << "; telemetry: " << t.dump();
  EXPECT_GE(t["other_processes_max"].get<int64_t>(), 1) << t.dump();
  ASSERT_FALSE(t["rounds"].empty());
  for (const auto& round : t["rounds"]) {
    EXPECT_GE(round["other_processes"].get<int64_t>(), 1) << round.dump();
  }
  const std::string label = run0["label"];
  bool warned = false;
  for (const auto& w : doc["warnings"]) {
    const std::string text = w.get<std::string>();
    warned = warned || (text.find(label) != std::string::npos &&
                        text.find("other compute process") != std::string::npos);
  }
  EXPECT_TRUE(warned) << doc["warnings"].dump();
  EXPECT_NE((r.out + r.err).find("shared with "), std::string::npos) << r.out << r.err;
}

// Unfused: separate Q, K, V, gate and up matrices, each tiled on its own.
TEST(Backend, TiledWeightsUnfused) {
  DB_REQUIRE_CUDA();
  for (const WeightType t : {WeightType::kQ8_0, WeightType::kQ4_K}) {
    expect_same_tokens_as_cpu(make_model(t), 16,
                              std::string(weight_traits(t).name) + " unfused, presplit", 1,
                              WeightLayout::kTiled, false);
  }
}

TEST(Backend, GraphReplayMatchesEagerFor256Tokens) {
  DB_REQUIRE_CUDA();
  const Model m = make_model(WeightType::kBF16);
  CudaBackendOptions o;
  o.max_positions = static_cast<int64_t>(kPrompt.size()) + 257;
  CudaBackend eager(m, o);
  CudaBackend graph(m, o);
  const auto e = decode(eager, 256, ExecMode::kEager);
  ExecReport report;
  const auto g = decode(graph, 256, ExecMode::kGraph, &report);
  ASSERT_TRUE(report.captured) << report.failed_call << " " << report.error_name;
  EXPECT_GT(report.graph_nodes, 10);
  EXPECT_EQ(e, g);
  // The same backend switching back and forth gives the same tokens too.
  EXPECT_EQ(decode(graph, 256, ExecMode::kEager), e);
}

TEST(Backend, PhaseTimingReportsEveryPhaseAndSameToken) {
  DB_REQUIRE_CUDA();
  const Model m = make_model(WeightType::kF16);
  CudaBackendOptions o;
  o.max_positions = 32;
  CudaBackend b(m, o);
  for (ExecMode mode : {ExecMode::kEager, ExecMode::kGraph}) {
    int32_t t = b.prefill(kPrompt);
    b.set_exec_mode(mode);
    StepPhases p;
    const int32_t with = b.step(t, 8, &p);
    const int32_t without = b.step(t, 8, nullptr);
    EXPECT_EQ(with, without);
    EXPECT_GT(p.launch_ns, 0);
    EXPECT_GT(p.wait_ns + p.argmax_ns, 0);
    EXPECT_GE(p.total_ns, p.h2d_ns + p.launch_ns + p.wait_ns + p.argmax_ns);
    EXPECT_GT(p.gpu_ms, 0.0);
  }
}

class CaptureFaults : public ::testing::TestWithParam<std::tuple<CaptureMode, CaptureFault>> {};

TEST_P(CaptureFaults, RecoversWithTheSameTokensAsACleanRun) {
  DB_REQUIRE_CUDA();
  const auto [mode, fault] = GetParam();
  const Model m = make_model(WeightType::kF16);
  CudaBackendOptions clean;
  clean.max_positions = 40;
  std::vector<int32_t> reference;
  {
    CudaBackend b(m, clean);
    reference = decode(b, 24);
  }
  CudaBackendOptions o = clean;
  o.capture_mode = mode;
  o.inject_fault = fault;
  CudaBackend b(m, o);
  ExecReport report;
  const auto ids = decode(b, 24, ExecMode::kGraph, &report);
  EXPECT_EQ(ids, reference) << capture_mode_name(mode) << " " << capture_fault_name(fault);
  if (!report.captured) {
    EXPECT_EQ(report.recovery, "recovered");
    EXPECT_FALSE(report.failed_call.empty());
    EXPECT_FALSE(report.error_name.empty());
    EXPECT_EQ(report.mode, ExecMode::kEager);
  }
  // Outside relaxed mode every one of these calls is illegal during capture.
  if (mode != CaptureMode::kRelaxed) {
    EXPECT_FALSE(report.captured) << capture_fault_name(fault) << " was accepted in "
                                  << capture_mode_name(mode) << " mode";
  }
  // The context stays usable: a fresh backend still decodes.
  CudaBackend after(m, clean);
  EXPECT_EQ(decode(after, 8), std::vector<int32_t>(reference.begin(), reference.begin() + 9));
}

INSTANTIATE_TEST_SUITE_P(
    ModesAndFaults, CaptureFaults,
    ::testing::Combine(
        ::testing::Values(CaptureMode::kThreadLocal, CaptureMode::kGlobal, CaptureMode::kRelaxed),
        ::testing::Values(CaptureFault::kAlloc, CaptureFault::kLegacySync, CaptureFault::kHostSync,
                          CaptureFault::kEventQuery, CaptureFault::kDeviceSync)),
    [](const auto& info) {
      std::string name = std::string(capture_mode_name(std::get<0>(info.param))) + "_" +
                         capture_fault_name(std::get<1>(info.param));
      for (char& ch : name) {
        if (ch == '-') ch = '_';
      }
      return name;
    });

// Captures the decode step while another thread allocates device memory (a legal call on its
// own). Thread-local capture must not notice; global capture must report the conflict.
ExecReport capture_while_other_thread_allocates(const Model& m, CaptureMode mode,
                                                cudaError_t* other_status) {
  CudaBackendOptions o;
  o.max_positions = 32;
  o.capture_mode = mode;
  CudaBackend b(m, o);
  b.prefill(kPrompt);
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  cudaError_t first = cudaSuccess;
  std::thread other([&] {
    while (!stop.load()) {
      void* p = nullptr;
      const cudaError_t st = cudaMalloc(&p, 1 << 16);
      if (st == cudaSuccess) {
        cudaFree(p);
      } else if (failures.fetch_add(1) == 0) {
        first = st;
      }
      cudaGetLastError();
    }
  });
  // Capture several times so that the other thread's calls overlap an open capture.
  ExecReport report;
  for (int i = 0; i < 20 && (report.captured || i == 0); ++i) {
    CudaBackend fresh(m, o);
    fresh.prefill(kPrompt);
    report = fresh.set_exec_mode(ExecMode::kGraph);
  }
  stop = true;
  other.join();
  *other_status = first;
  return report;
}

TEST(Backend, ThreadLocalCaptureSurvivesAnotherThreadsCudaUse) {
  DB_REQUIRE_CUDA();
  const Model m = make_model(WeightType::kF16);
  cudaError_t other = cudaSuccess;
  const ExecReport r = capture_while_other_thread_allocates(m, CaptureMode::kThreadLocal, &other);
  EXPECT_TRUE(r.captured) << r.failed_call << " " << r.error_name;
  EXPECT_EQ(other, cudaSuccess) << cudaGetErrorName(other);
}

TEST(Backend, GlobalCaptureReportsAnotherThreadsCudaUse) {
  DB_REQUIRE_CUDA();
  const Model m = make_model(WeightType::kF16);
  cudaError_t other = cudaSuccess;
  const ExecReport r = capture_while_other_thread_allocates(m, CaptureMode::kGlobal, &other);
  // Either the other thread's cudaMalloc was refused, or our capture was invalidated — and in
  // both cases the run went on (eager fallback, healthy context).
  EXPECT_TRUE(other != cudaSuccess || !r.captured)
      << "global-mode capture did not notice the other thread";
  if (!r.captured) {
    EXPECT_EQ(r.recovery, "recovered");
  }
}

TEST(Backend, PositionBeyondCapacityIsAnInputError) {
  DB_REQUIRE_CUDA();
  const Model m = make_model(WeightType::kF16);
  CudaBackendOptions o;
  o.max_positions = 10;
  CudaBackend b(m, o);
  b.prefill(kPrompt);
  for (ExecMode mode : {ExecMode::kEager, ExecMode::kGraph}) {
    b.set_exec_mode(mode);
    try {
      b.step(1, 10, nullptr);
      FAIL() << "expected an input error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kUsage);
      EXPECT_NE(std::string(e.what()).find("capacity"), std::string::npos) << e.what();
    }
    EXPECT_NO_THROW(b.step(1, 9, nullptr));  // the last position still works
  }
}

TEST(Backend, NotEnoughDeviceMemoryIsAResourceError) {
  DB_REQUIRE_CUDA();
  const Model m = make_model(WeightType::kF16);
  CudaBackendOptions o;
  o.max_positions = int64_t{1} << 32;  // a KV cache of terabytes
  try {
    CudaBackend b(m, o);
    FAIL() << "expected a resource error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kResources);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("needs"), std::string::npos) << msg;
    EXPECT_NE(msg.find("free"), std::string::npos) << msg;
  }
}

// GGUF fixtures written by the Python gguf package (tests/fixtures/write_arch_gguf.py): llama,
// qwen2 and qwen3 with mixed weight types, decoded on the GPU and the CPU. A GPU host without the
// package can take them written elsewhere: DECODEBENCH_GGUF_FIXTURES names a folder holding
// llama.gguf, qwen2.gguf and qwen3.gguf from that script (the same files, as its weights are
// seeded).
TEST(Backend, GgufFixturesDecodeLikeTheCpu) {
  DB_REQUIRE_CUDA();
  const char* fixtures = std::getenv("DECODEBENCH_GGUF_FIXTURES");
  if (fixtures == nullptr) DB_REQUIRE_PYTHON_GGUF();
  decodebench::testing::TempDir dir;
  for (const char* arch : {"llama", "qwen2", "qwen3"}) {
    const std::string name = std::string(arch) + ".gguf";
    const auto path = fixtures != nullptr ? std::filesystem::path(fixtures) / name : dir / name;
    if (fixtures != nullptr) {
      ASSERT_TRUE(std::filesystem::is_regular_file(path))
          << "DECODEBENCH_GGUF_FIXTURES: " << path << " does not exist";
    } else {
      const auto r = decodebench::testing::run_command(
          {decodebench::testing::python(),
           (decodebench::testing::source_dir() / "tests/fixtures/write_arch_gguf.py").string(),
           "--arch", arch, path.string()});
      ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    }
    const Model m = load_gguf_model(path.string());
    expect_same_tokens_as_cpu(m, 16, arch);
    // Graph replay equals eager execution on the real-architecture paths too (256 steps).
    CudaBackendOptions o;
    o.max_positions =
        std::min<int64_t>(m.config.context_length, static_cast<int64_t>(kPrompt.size()) + 257);
    const int steps = static_cast<int>(o.max_positions - static_cast<int64_t>(kPrompt.size()) - 1);
    CudaBackend eager(m, o), graph(m, o);
    ExecReport report;
    const auto e = decode(eager, steps, ExecMode::kEager);
    const auto g = decode(graph, steps, ExecMode::kGraph, &report);
    EXPECT_TRUE(report.captured) << arch << ": " << report.failed_call;
    EXPECT_EQ(e, g) << arch;
  }
}

TEST(Backend, StatelessStepsMatchTheCpuAtPositionZero) {
  DB_REQUIRE_CUDA();
  // --stateless: every step at position 0 with seq_len 1; GPU and CPU must agree token by token.
  const Model m = make_model(WeightType::kBF16);
  CudaBackendOptions o;
  o.max_positions = 4;
  CudaBackend gpu(m, o);
  cpu::CpuBackend cpu(m, 4, 4);
  gpu.set_exec_mode(ExecMode::kGraph);
  int32_t t = 17;
  for (int i = 0; i < 32; ++i) {
    const int32_t g = gpu.step(t, 0, nullptr);
    const int32_t c = cpu.step(t, 0, nullptr);
    ASSERT_EQ(g, c) << "step " << i;
    t = g;
  }
}

}  // namespace
}  // namespace decodebench::cuda
