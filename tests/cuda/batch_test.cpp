// Batched decode on the CUDA backend (issue 8): sequence i of a batch decodes exactly the tokens
// of a single-sequence run with the same prompt, for the tensor-core products of every type
// family and for the GEMV-loop form; graph replay of a batch equals eager execution; logits of
// each sequence match its single-sequence logits; bad batch inputs are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/cpu/thread_pool.hpp"
#include "core/error.hpp"
#include "core/model/synthetic.hpp"
#include "cuda/check.hpp"
#include "cuda/cuda_backend.hpp"
#include "tests/cuda/cuda_test_util.hpp"
#include "tests/support/model_configs.hpp"
#include "tests/support/support.hpp"

namespace decodebench::cuda {
namespace {

constexpr int kPromptLen = 8;
constexpr int kSteps = 24;

ModelConfig test_config() {
  ModelConfig c = ::decodebench::testing::small_model_config(3, 512, 8, 2, 64, 1024, 3000);
  c.context_length = 4096;
  c.qkv_bias = true;
  return c;
}

Model make_model(WeightType dtype) {
  cpu::ThreadPool pool(4);
  return make_synthetic_model(test_config(), dtype, 42, pool);
}

std::vector<int32_t> prompt(int seq) {
  std::vector<int32_t> p(kPromptLen);
  for (int j = 0; j < kPromptLen; ++j) p[j] = (11 + 389 * j + 977 * seq) % 3000;
  return p;
}

/// Tokens of one sequence decoded alone (prefill's argmax, then kSteps steps).
std::vector<int32_t> single_run(const Model& m, int seq, std::vector<std::vector<float>>* logits) {
  CudaBackendOptions o;
  o.max_positions = kPromptLen + kSteps + 1;
  CudaBackend b(m, o);
  std::vector<int32_t> ids{b.prefill(prompt(seq))};
  for (int i = 0; i < kSteps; ++i) {
    ids.push_back(b.step(ids.back(), kPromptLen + i, nullptr));
    if (logits != nullptr) {
      logits->emplace_back();
      b.logits(logits->back());
    }
  }
  return ids;
}

/// Tokens of `m` sequences decoded in lockstep: ids[i] per sequence.
/// `layout`, `presplit`: CudaBackendOptions::weight_layout and gemv_presplit.
std::vector<std::vector<int32_t>> batch_run(
    const Model& model, int m, ExecMode mode, int gemm_variant,
    std::vector<std::vector<float>>* logits_seq0_last = nullptr,
    WeightLayout layout = WeightLayout::kAuto, int presplit = 0) {
  CudaBackendOptions o;
  o.max_positions = kPromptLen + kSteps + 1;
  o.max_batch = m;
  o.gemm_variant = gemm_variant;
  o.weight_layout = layout;
  o.gemv_presplit = presplit;
  CudaBackend b(model, o);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < m; ++i) prompts.push_back(prompt(i));
  std::vector<int32_t> next(m);
  b.prefill_batch(prompts, next);
  const ExecReport r = b.set_exec_mode_batch(mode, m);
  if (mode == ExecMode::kGraph) {
    EXPECT_TRUE(r.captured) << r.error_name << " " << r.error_message;
  }
  std::vector<std::vector<int32_t>> ids(m);
  for (int i = 0; i < m; ++i) ids[i].push_back(next[i]);
  std::vector<int32_t> tokens(m);
  std::vector<int64_t> pos(m);
  for (int s = 0; s < kSteps; ++s) {
    for (int i = 0; i < m; ++i) {
      tokens[i] = ids[i].back();
      pos[i] = kPromptLen + s;
    }
    b.step_batch(tokens, pos, next, nullptr);
    for (int i = 0; i < m; ++i) ids[i].push_back(next[i]);
    if (logits_seq0_last != nullptr) {
      logits_seq0_last->resize(m);
      for (int i = 0; i < m; ++i) b.logits_batch(i, (*logits_seq0_last)[i]);
    }
  }
  return ids;
}

class BatchDtype : public ::testing::TestWithParam<WeightType> {};

TEST_P(BatchDtype, EverySequenceDecodesItsSingleRunTokens) {
  DB_REQUIRE_CUDA();
  const Model model = make_model(GetParam());
  constexpr int kBatch = 5;
  std::vector<std::vector<float>> last;
  const auto batch = batch_run(model, kBatch, ExecMode::kEager, 0, &last);
  for (int i = 0; i < kBatch; ++i) {
    std::vector<std::vector<float>> single_logits;
    const auto single = single_run(model, i, &single_logits);
    EXPECT_EQ(batch[i], single) << "sequence " << i;
    // The last step's logits agree to f32 rounding, relative to the largest logit.
    const std::vector<float>& a = last[i];
    const std::vector<float>& b = single_logits.back();
    ASSERT_EQ(a.size(), b.size());
    double scale = 0, diff = 0;
    for (size_t j = 0; j < a.size(); ++j) {
      scale = std::max(scale, std::fabs(double{b[j]}));
      diff = std::max(diff, std::fabs(double{a[j]} - b[j]));
    }
    EXPECT_LT(diff / scale, 1e-4) << "sequence " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, BatchDtype,
                         ::testing::Values(WeightType::kF32, WeightType::kF16, WeightType::kBF16,
                                           WeightType::kQ8_0, WeightType::kQ4_0, WeightType::kQ5_1,
                                           WeightType::kQ4_K, WeightType::kQ6_K),
                         [](const auto& info) {
                           return std::string(weight_traits(info.param).name);
                         });

TEST(Batch, GraphReplayEqualsEagerAndGemvLoopEqualsSingleRuns) {
  DB_REQUIRE_CUDA();
  const Model model = make_model(WeightType::kQ4_K);
  const auto eager = batch_run(model, 3, ExecMode::kEager, 0);
  const auto graph = batch_run(model, 3, ExecMode::kGraph, 0);
  EXPECT_EQ(eager, graph);
  const auto loop = batch_run(model, 3, ExecMode::kGraph, 1);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(loop[i], single_run(model, i, nullptr)) << i;
}

// The batched products read GGUF blocks, so a batched backend keeps them even when asked for the
// tiled layout with every GEMV pre-split (tiled bytes read as GGUF blocks would change tokens).
TEST(Batch, TiledLayoutIsForBatchOneBackendsOnly) {
  DB_REQUIRE_CUDA();
  for (const WeightType t : {WeightType::kQ8_0, WeightType::kQ4_0}) {
    const Model model = make_model(t);
    const auto want = batch_run(model, 3, ExecMode::kEager, 0);
    EXPECT_EQ(batch_run(model, 3, ExecMode::kEager, 0, nullptr, WeightLayout::kTiled, 1), want)
        << weight_traits(t).name;
  }
}

TEST(Batch, ThirtyThreeSequencesTakeTwoLaunchesPerProduct) {
  DB_REQUIRE_CUDA();
  const Model model = make_model(WeightType::kBF16);
  const auto batch = batch_run(model, 33, ExecMode::kGraph, 0);
  for (int i : {0, 31, 32}) EXPECT_EQ(batch[i], single_run(model, i, nullptr)) << i;
}

TEST(Batch, SequencesAtDifferentPositionsWithSplitKvAttention) {
  // A capacity above 512 positions takes the split-KV attention path (partials per sequence and
  // the combine kernel). Sequence 0 continues after its 8-token prompt; sequence 1 restarts at
  // position 4 (its prompt's first 4 tokens, then its own 5th): each must match a single run of
  // the same prefix, so every kernel has to use each sequence's own position and length.
  DB_REQUIRE_CUDA();
  const Model model = make_model(WeightType::kQ8_0);
  constexpr int64_t kCapacity = 600;
  constexpr int kRestart = 4;
  const auto single = [&](int seq, int prefix) {
    CudaBackendOptions o;
    o.max_positions = kCapacity;
    CudaBackend b(model, o);
    const std::vector<int32_t> p = prompt(seq);
    std::vector<int32_t> ids{b.prefill(std::vector<int32_t>(p.begin(), p.begin() + prefix))};
    for (int i = 0; i < kSteps; ++i) ids.push_back(b.step(ids.back(), prefix + i, nullptr));
    return ids;
  };
  CudaBackendOptions o;
  o.max_positions = kCapacity;
  o.max_batch = 2;
  CudaBackend b(model, o);
  std::vector<std::vector<int32_t>> prompts{prompt(0), prompt(1)};
  std::vector<int32_t> next(2);
  b.prefill_batch(prompts, next);
  b.set_exec_mode_batch(ExecMode::kGraph, 2);
  // Sequence 1 re-decodes from position kRestart: its first batched step feeds prompt token
  // kRestart, whose argmax is what a single run prefilled with kRestart + 1 tokens returns.
  std::vector<std::vector<int32_t>> ids{{next[0]}, {}};
  std::vector<int32_t> tokens{next[0], prompts[1][kRestart]};
  std::vector<int64_t> pos{kPromptLen, kRestart};
  for (int s = 0; s <= kSteps; ++s) {
    b.step_batch(tokens, pos, next, nullptr);
    if (s < kSteps) ids[0].push_back(next[0]);
    ids[1].push_back(next[1]);
    tokens = {next[0], next[1]};
    pos = {pos[0] + 1, pos[1] + 1};
  }
  EXPECT_EQ(ids[0], single(0, kPromptLen));
  EXPECT_EQ(ids[1], single(1, kRestart + 1));
  // After a batched step, `logits` serves sequence 0; after a single step, `logits_batch(0)` serves
  // that step.
  std::vector<float> a, c;
  b.logits(a);
  b.logits_batch(0, c);
  EXPECT_EQ(a, c);
  b.step(ids[0].back(), pos[0], nullptr);
  b.logits(a);
  b.logits_batch(0, c);
  EXPECT_EQ(a, c);
  EXPECT_THROW(b.logits_batch(1, c), Error);
}

// The push merge (DECODEBENCH_ATTENTION=push) at batch > 1: each cluster is one KV head of one
// sequence, and its blocks push into that cluster's block 0; every sequence's tokens and logits
// must be the cluster form's bit for bit (the same values merged in the same order). A capacity of
// 400 positions gives clusters of 4 blocks; a block takes max(16, ceil(seq_len / 4)) positions, so
// 300-324 positions keep all four busy and 9-32 positions leave blocks 2 and 3 empty (block 1
// too up to 16 positions).
TEST(Batch, PushMergeGivesTheClusterFormsTokensAndLogits) {
  DB_REQUIRE_CUDA();
  int major = 0;
  DB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  if (major < 9) GTEST_SKIP() << "thread-block clusters need compute capability 9 (sm_90)";
  const Model model = make_model(WeightType::kF16);
  constexpr int kBatch = 3;
  constexpr int64_t kCapacity = 400;
  const auto run = [&](const char* form, int prompt_len, std::vector<std::vector<float>>* logits) {
    const ::decodebench::testing::ScopedVariable v("DECODEBENCH_ATTENTION", form);
    CudaBackendOptions o;
    o.max_positions = kCapacity;
    o.max_batch = kBatch;
    CudaBackend b(model, o);
    std::vector<std::vector<int32_t>> prompts(kBatch);
    for (int i = 0; i < kBatch; ++i) {
      for (int j = 0; j < prompt_len; ++j) prompts[i].push_back((7 + 131 * j + 1009 * i) % 3000);
    }
    std::vector<int32_t> next(kBatch);
    b.prefill_batch(prompts, next);
    EXPECT_TRUE(b.set_exec_mode_batch(ExecMode::kGraph, kBatch).captured) << form;
    std::vector<std::vector<int32_t>> ids(kBatch);
    std::vector<int64_t> pos(kBatch);
    for (int s = 0; s < kSteps; ++s) {
      for (int i = 0; i < kBatch; ++i) {
        ids[i].push_back(next[i]);
        pos[i] = prompt_len + s;
      }
      const std::vector<int32_t> tokens = next;
      b.step_batch(tokens, pos, next, nullptr);
    }
    // The form the batched steps ran: the test compares two forms, not one with itself.
    EXPECT_EQ(b.batch_attention_form(),
              std::string(form) == "push" ? "cluster-push 4" : "cluster 4");
    logits->resize(kBatch);
    for (int i = 0; i < kBatch; ++i) {
      ids[i].push_back(next[i]);
      b.logits_batch(i, (*logits)[i]);
    }
    return ids;
  };
  for (const int prompt_len : {300, 8}) {
    std::vector<std::vector<float>> cluster_logits, push_logits;
    const auto cluster = run("cluster", prompt_len, &cluster_logits);
    const auto push = run("push", prompt_len, &push_logits);
    for (int i = 0; i < kBatch; ++i) {
      EXPECT_EQ(push[i], cluster[i]) << "sequence " << i << ", prompt " << prompt_len;
      EXPECT_EQ(push_logits[i], cluster_logits[i]) << "sequence " << i << ", prompt " << prompt_len;
    }
  }
}

TEST(Batch, BadInputsAreRefused) {
  DB_REQUIRE_CUDA();
  const Model model = make_model(WeightType::kBF16);
  CudaBackendOptions o;
  o.max_positions = 16;
  o.max_batch = 2;
  CudaBackend b(model, o);
  std::vector<int32_t> tokens{1, 2, 3}, next(3);
  std::vector<int64_t> pos{0, 0, 0};
  EXPECT_THROW(b.step_batch(tokens, pos, next, nullptr), Error);  // 3 > max_batch
  tokens.resize(2);
  next.resize(2);
  EXPECT_THROW(b.step_batch(tokens, pos, next, nullptr), Error);  // size mismatch
  pos = {0, 16};
  EXPECT_THROW(b.step_batch(tokens, pos, next, nullptr), Error);  // position out of range
  pos = {0, 0};
  b.step_batch(tokens, pos, next, nullptr);
  std::vector<float> l;
  EXPECT_THROW(b.logits_batch(2, l), Error);
  EXPECT_THROW(b.set_exec_mode_batch(ExecMode::kGraph, 3), Error);
  o.max_batch = 257;
  EXPECT_THROW(CudaBackend(model, o), Error);
}

}  // namespace
}  // namespace decodebench::cuda
