// The CPU backend against a naive forward pass written here, plus determinism across seeds and
// thread counts.
#include "core/cpu/cpu_backend.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <span>
#include <vector>

#include "core/cpu/thread_pool.hpp"
#include "core/error.hpp"
#include "core/model/synthetic.hpp"
#include "core/quant/dequant.hpp"
#include "tests/support/model_configs.hpp"

namespace decodebench {
namespace {

ModelConfig small_config() {
  ModelConfig c = ::decodebench::testing::small_model_config(2, 64, 4, 2, 16, 96, 300);
  c.rms_eps = 1e-5;
  c.qkv_bias = true;
  return c;
}

using Mat = std::vector<std::vector<double>>;

Mat dense(const TensorView& t) {
  Mat m(t.rows, std::vector<double>(t.cols));
  std::vector<float> row(t.cols);
  for (int64_t r = 0; r < t.rows; ++r) {
    quant::dequantize_row(t.type, t.row(r), row.data(), t.cols);
    for (int64_t c = 0; c < t.cols; ++c) m[r][c] = row[c];
  }
  return m;
}

std::vector<double> matvec(const Mat& m, const std::vector<double>& x) {
  std::vector<double> y(m.size(), 0.0);
  for (size_t r = 0; r < m.size(); ++r) {
    for (size_t c = 0; c < x.size(); ++c) y[r] += m[r][c] * x[c];
  }
  return y;
}

std::vector<double> norm(const std::vector<double>& x, const float* w, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double s = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + eps);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * s * w[i];
  return y;
}

// A straightforward double-precision forward pass over a whole token sequence, written from the
// model description (half-split RoPE, GQA, SwiGLU) without the backend's code.
class NaiveModel {
 public:
  explicit NaiveModel(const Model& m) : m_(m), c_(m.config) {}

  // Logits after feeding tokens[0..n) at positions 0..n-1.
  std::vector<double> run(const std::vector<int32_t>& tokens) {
    const int64_t hd = c_.head_dim, half = c_.rope_dim / 2;
    std::vector<std::vector<std::vector<double>>> keys(c_.n_layers), values(c_.n_layers);
    std::vector<double> logits;
    for (size_t p = 0; p < tokens.size(); ++p) {
      std::vector<double> x = dense(m_.weights.token_embd)[tokens[p]];
      for (int64_t l = 0; l < c_.n_layers; ++l) {
        const LayerWeights& w = m_.weights.layers[l];
        auto h = norm(x, w.attn_norm.f32(), c_.rms_eps);
        auto q = matvec(dense(w.wq), h), k = matvec(dense(w.wk), h), v = matvec(dense(w.wv), h);
        for (int64_t i = 0; i < c_.q_dim(); ++i) q[i] += w.bq.f32()[i];
        for (int64_t i = 0; i < c_.kv_dim(); ++i) k[i] += w.bk.f32()[i], v[i] += w.bv.f32()[i];
        auto rotate = [&](std::vector<double>& vec, int64_t heads) {
          for (int64_t hh = 0; hh < heads; ++hh) {
            for (int64_t i = 0; i < half; ++i) {
              const double theta =
                  static_cast<double>(p) *
                  std::pow(c_.rope_theta, -2.0 * i / static_cast<double>(c_.rope_dim));
              const double a = vec[hh * hd + i], b = vec[hh * hd + i + half];
              vec[hh * hd + i] = a * std::cos(theta) - b * std::sin(theta);
              vec[hh * hd + i + half] = a * std::sin(theta) + b * std::cos(theta);
            }
          }
        };
        rotate(q, c_.n_heads);
        rotate(k, c_.n_kv_heads);
        keys[l].push_back(k);
        values[l].push_back(v);
        std::vector<double> att(c_.q_dim(), 0.0);
        for (int64_t hq = 0; hq < c_.n_heads; ++hq) {
          const int64_t kvh = hq / (c_.n_heads / c_.n_kv_heads);
          std::vector<double> s(p + 1);
          double mx = -1e300;
          for (size_t t = 0; t <= p; ++t) {
            double d = 0;
            for (int64_t i = 0; i < hd; ++i) d += q[hq * hd + i] * keys[l][t][kvh * hd + i];
            s[t] = d / std::sqrt(static_cast<double>(hd));
            mx = std::max(mx, s[t]);
          }
          double z = 0;
          for (auto& e : s) z += (e = std::exp(e - mx));
          for (size_t t = 0; t <= p; ++t) {
            for (int64_t i = 0; i < hd; ++i)
              att[hq * hd + i] += s[t] / z * values[l][t][kvh * hd + i];
          }
        }
        const auto o = matvec(dense(w.wo), att);
        for (int64_t i = 0; i < c_.hidden; ++i) x[i] += o[i];
        h = norm(x, w.ffn_norm.f32(), c_.rms_eps);
        const auto g = matvec(dense(w.w_gate), h), u = matvec(dense(w.w_up), h);
        std::vector<double> a(c_.ffn);
        for (int64_t i = 0; i < c_.ffn; ++i) a[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
        const auto d = matvec(dense(w.w_down), a);
        for (int64_t i = 0; i < c_.hidden; ++i) x[i] += d[i];
      }
      logits = matvec(dense(m_.weights.output), norm(x, m_.weights.output_norm.f32(), c_.rms_eps));
    }
    return logits;
  }

 private:
  const Model& m_;
  const ModelConfig& c_;
};

class CpuBackendVsNaive : public ::testing::TestWithParam<WeightType> {};

TEST_P(CpuBackendVsNaive, TwoLayerLogitsMatchNaiveForwardPass) {
  const ModelConfig c = small_config();
  cpu::ThreadPool pool(2);
  const Model m = make_synthetic_model(c, GetParam(), 7, pool);
  const std::vector<int32_t> tokens = {5, 17, 299, 0, 42};
  cpu::CpuBackend backend(m, 8, 2);
  for (size_t i = 0; i < tokens.size(); ++i) {
    backend.step(tokens[i], static_cast<int64_t>(i), nullptr);
  }
  std::vector<float> got;
  backend.logits(got);
  const std::vector<double> want = NaiveModel(m).run(tokens);
  ASSERT_EQ(got.size(), want.size());
  double max_abs = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    max_abs = std::max(max_abs, std::fabs(got[i] - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  // Both sides use the same stored (rounded) weights; f32 accumulation over ~100-term dot
  // products keeps the relative error well below 1e-4.
  EXPECT_LT(max_abs, 1e-4 * scale) << "max abs " << max_abs << " scale " << scale;
  EXPECT_GT(scale, 1.0) << "logits should not be flat";
  EXPECT_LT(scale, 1e3) << "logits should stay in a sane range";
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CpuBackendVsNaive,
                         ::testing::Values(WeightType::kF32, WeightType::kF16, WeightType::kBF16),
                         [](const auto& info) {
                           return std::string(weight_traits(info.param).name);
                         });

std::vector<int32_t> decode(const Model& m, int threads, int steps) {
  cpu::CpuBackend b(m, steps + 4, threads);
  std::vector<int32_t> ids;
  int32_t t = b.prefill(std::vector<int32_t>{3, 1, 4, 1});
  ids.push_back(t);
  for (int i = 0; i < steps; ++i) ids.push_back(t = b.step(t, 4 + i, nullptr));
  return ids;
}

TEST(CpuBackend, SameSeedSameTokensAcrossThreadCountsAndDtypes) {
  for (WeightType dtype : {WeightType::kF32, WeightType::kF16, WeightType::kBF16}) {
    cpu::ThreadPool pool1(1), pool3(3);
    const Model a = make_synthetic_model(small_config(), dtype, 11, pool1);
    const Model b = make_synthetic_model(small_config(), dtype, 11, pool3);
    const auto ids1 = decode(a, 1, 24);
    EXPECT_EQ(ids1, decode(b, 3, 24)) << weight_traits(dtype).name;
    EXPECT_EQ(ids1, decode(a, 2, 24)) << weight_traits(dtype).name;
  }
}

TEST(CpuBackend, DifferentSeedDifferentWeights) {
  cpu::ThreadPool pool(2);
  const Model a = make_synthetic_model(small_config(), WeightType::kF32, 1, pool);
  const Model b = make_synthetic_model(small_config(), WeightType::kF32, 2, pool);
  EXPECT_NE(a.weights.layers[0].wq.f32()[0], b.weights.layers[0].wq.f32()[0]);
}

TEST(CpuBackend, SyntheticDecodeIsNotAConstantSequence) {
  // The synthetic weights are scaled so that greedy decoding moves between tokens (a model that
  // repeats one token would make token-identity checks weak).
  cpu::ThreadPool pool(2);
  const Model m = make_synthetic_model(small_config(), WeightType::kBF16, 0, pool);
  const auto ids = decode(m, 2, 32);
  std::vector<int32_t> distinct(ids);
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  EXPECT_GE(distinct.size(), 4u);
}

TEST(CpuBackend, ActivationsStayFiniteOverEightyLayers) {
  ModelConfig c = small_config();
  c.n_layers = 80;
  cpu::ThreadPool pool(2);
  const Model m = make_synthetic_model(c, WeightType::kBF16, 3, pool);
  cpu::CpuBackend b(m, 4, 2);
  b.step(1, 0, nullptr);
  b.step(2, 1, nullptr);
  std::vector<float> logits;
  b.logits(logits);
  float lo = logits[0], hi = logits[0];
  for (float v : logits) {
    ASSERT_TRUE(std::isfinite(v));
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_GT(hi - lo, 1.0f) << "logits are flat";
}

TEST(CpuBackend, PositionBeyondCapacityIsAnInputError) {
  cpu::ThreadPool pool(1);
  const Model m = make_synthetic_model(small_config(), WeightType::kF32, 0, pool);
  cpu::CpuBackend b(m, 2, 1);
  try {
    b.step(1, 2, nullptr);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    EXPECT_NE(std::string(e.what()).find("capacity"), std::string::npos);
  }
  EXPECT_THROW(b.step(300, 0, nullptr), Error);  // token outside the vocabulary
}

// ---- Batched decode (step_batch) -------------------------------------------------------------

// One sequence decoded alone (slot 0, `step`): each step's output id and logits.
struct SingleRun {
  std::vector<int32_t> ids;                // prefill argmax, then each step's output
  std::vector<std::vector<float>> logits;  // per decode step
};

SingleRun decode_alone(const Model& m, const std::vector<int32_t>& prompt, int steps) {
  cpu::CpuBackend b(m, static_cast<int64_t>(prompt.size()) + steps, 2);
  SingleRun run;
  int32_t t = b.prefill(prompt);
  run.ids.push_back(t);
  for (int i = 0; i < steps; ++i) {
    t = b.step(t, static_cast<int64_t>(prompt.size()) + i, nullptr);
    run.ids.push_back(t);
    run.logits.emplace_back();
    b.logits(run.logits.back());
  }
  return run;
}

class CpuStepBatch : public ::testing::TestWithParam<WeightType> {};

TEST_P(CpuStepBatch, SequenceIMatchesASingleSequenceRunBitForBit) {
  constexpr int kSteps = 20;
  constexpr int64_t kBatch = 3;
  cpu::ThreadPool pool(2);
  const Model m = make_synthetic_model(small_config(), GetParam(), 5, pool);
  const std::vector<std::vector<int32_t>> prompts = {
      {3, 1, 4, 1, 5}, {9, 2, 6, 5, 3}, {299, 0, 42, 17, 8}};
  std::vector<SingleRun> alone;
  for (const auto& p : prompts) alone.push_back(decode_alone(m, p, kSteps));
  // Different prompts must lead to different generations, or the test proves little.
  EXPECT_NE(alone[0].ids, alone[1].ids);
  EXPECT_NE(alone[1].ids, alone[2].ids);

  const int64_t prompt_len = static_cast<int64_t>(prompts[0].size());
  cpu::CpuBackend b(m, prompt_len + kSteps, 2, kBatch);
  EXPECT_EQ(b.max_batch(), kBatch);
  std::vector<int32_t> tokens(kBatch), next(kBatch);
  b.prefill_batch(prompts, tokens);
  for (int64_t s = 0; s < kBatch; ++s)
    EXPECT_EQ(tokens[s], alone[s].ids[0]) << "prefill, seq " << s;
  std::vector<int64_t> positions(kBatch);
  std::vector<float> logits;
  for (int i = 0; i < kSteps; ++i) {
    std::fill(positions.begin(), positions.end(), prompt_len + i);
    b.step_batch(tokens, positions, next, nullptr);
    for (int64_t s = 0; s < kBatch; ++s) {
      ASSERT_EQ(next[s], alone[s].ids[i + 1]) << "seq " << s << " step " << i;
      b.logits_batch(s, logits);
      ASSERT_EQ(logits, alone[s].logits[i]) << "logits of seq " << s << " step " << i;
    }
    tokens = next;
  }
  // `logits` serves sequence 0 of the last batch.
  b.logits(logits);
  EXPECT_EQ(logits, alone[0].logits.back());
}

TEST_P(CpuStepBatch, SequencesAtDifferentPositionsStayIndependent) {
  // Slot i only ever sees sequence i's KV entries, whatever the other slots hold: sequence 0 has a
  // 3-token prompt, sequence 1 a 1-token prompt, and they then decode side by side at different
  // positions.
  cpu::ThreadPool pool(2);
  const Model m = make_synthetic_model(small_config(), GetParam(), 6, pool);
  const SingleRun a = decode_alone(m, {7, 7, 7}, 4);
  const SingleRun c = decode_alone(m, {1}, 4);
  cpu::CpuBackend b(m, 16, 2, 2);
  std::vector<int32_t> one(1);
  for (int64_t p = 0; p < 2; ++p) {
    b.step_batch(std::vector<int32_t>{7}, std::vector<int64_t>{p}, one, nullptr);
  }
  std::vector<int32_t> next(2);
  b.step_batch(std::vector<int32_t>{7, 1}, std::vector<int64_t>{2, 0}, next, nullptr);
  EXPECT_EQ(next[0], a.ids[0]);
  EXPECT_EQ(next[1], c.ids[0]);
  std::vector<float> logits;
  for (int i = 0; i < 4; ++i) {
    const std::vector<int32_t> tok = {next[0], next[1]};
    b.step_batch(tok, std::vector<int64_t>{3 + i, 1 + i}, next, nullptr);
    EXPECT_EQ(next[0], a.ids[i + 1]) << "step " << i;
    EXPECT_EQ(next[1], c.ids[i + 1]) << "step " << i;
    // Bit for bit, so a sequence's RoPE, KV write or attention at another one's position shows.
    b.logits_batch(0, logits);
    EXPECT_EQ(logits, a.logits[static_cast<size_t>(i)]) << "sequence 0, step " << i;
    b.logits_batch(1, logits);
    EXPECT_EQ(logits, c.logits[static_cast<size_t>(i)]) << "sequence 1, step " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CpuStepBatch,
                         ::testing::Values(WeightType::kF32, WeightType::kQ8_0),
                         [](const auto& info) {
                           return std::string(weight_traits(info.param).name);
                         });

void expect_usage_error(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected a usage error containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(CpuBackend, BatchedInputsAreCheckedBeforeAnythingRuns) {
  cpu::ThreadPool pool(1);
  const Model m = make_synthetic_model(small_config(), WeightType::kF32, 0, pool);
  cpu::CpuBackend b(m, 4, 1, 3);
  std::vector<int32_t> none, three_tok = {1, 2, 3}, three_out(3), four_tok = {1, 2, 3, 4},
                             four_out(4);
  std::vector<int64_t> no_pos, three_pos = {0, 0, 0}, two_pos = {0, 0}, four_pos = {0, 0, 0, 0};
  expect_usage_error([&] { b.step_batch(none, no_pos, std::span<int32_t>(), nullptr); },
                     "1 to 3 sequences, got 0");
  expect_usage_error([&] { b.step_batch(four_tok, four_pos, four_out, nullptr); },
                     "1 to 3 sequences, got 4");
  expect_usage_error([&] { b.step_batch(three_tok, two_pos, three_out, nullptr); },
                     "as many positions and outputs");
  expect_usage_error(
      [&] { b.step_batch(three_tok, three_pos, std::span<int32_t>(three_out).first(2), nullptr); },
      "as many positions and outputs");
  std::vector<int64_t> bad_pos = {0, 4, 0};
  expect_usage_error([&] { b.step_batch(three_tok, bad_pos, three_out, nullptr); }, "capacity");
  std::vector<int64_t> neg_pos = {0, 0, -1};
  expect_usage_error([&] { b.step_batch(three_tok, neg_pos, three_out, nullptr); }, "capacity");
  std::vector<int32_t> bad_tok = {1, 300, 2};
  expect_usage_error([&] { b.step_batch(bad_tok, three_pos, three_out, nullptr); }, "300");
  // check_batch_inputs itself, as every backend uses it.
  expect_usage_error([&] { check_batch_inputs(none, no_pos, none, 8, 300, 4); }, "got 0");
  expect_usage_error([&] { check_batch_inputs(three_tok, three_pos, three_out, 2, 300, 4); },
                     "1 to 2 sequences, got 3");
  EXPECT_NO_THROW(check_batch_inputs(three_tok, three_pos, three_out, 3, 300, 4));

  // Logits of a sequence outside the last step's batch; graph mode; batch above the slots.
  std::vector<float> logits;
  std::vector<int32_t> two_tok = {1, 2}, two_out(2);
  b.step_batch(two_tok, two_pos, two_out, nullptr);
  EXPECT_NO_THROW(b.logits_batch(1, logits));
  expect_usage_error([&] { b.logits_batch(2, logits); }, "sequence 2");
  expect_usage_error([&] { b.logits_batch(-1, logits); }, "sequence -1");
  b.step(1, 0, nullptr);
  expect_usage_error([&] { b.logits_batch(1, logits); }, "sequence 1");
  expect_usage_error([&] { b.set_exec_mode_batch(ExecMode::kGraph, 2); }, "--graph off");
  expect_usage_error([&] { b.set_exec_mode_batch(ExecMode::kEager, 4); }, "got 4");
  expect_usage_error([&] { b.set_exec_mode_batch(ExecMode::kEager, 0); }, "got 0");
  EXPECT_EQ(b.set_exec_mode_batch(ExecMode::kEager, 3).mode, ExecMode::kEager);
}

TEST(CpuBackend, MaxBatchOutsideOneTo256IsAUsageError) {
  cpu::ThreadPool pool(1);
  const Model m = make_synthetic_model(small_config(), WeightType::kF32, 0, pool);
  expect_usage_error([&] { cpu::CpuBackend b(m, 4, 1, 0); }, "[1, 256]");
  expect_usage_error([&] { cpu::CpuBackend b(m, 4, 1, 257); }, "[1, 256]");
  EXPECT_EQ(cpu::CpuBackend(m, 4, 1).max_batch(), 1);
  // A backend of batch 1 refuses larger batches with the same rule.
  cpu::CpuBackend one(m, 4, 1);
  std::vector<int32_t> tok = {1, 2}, out(2);
  std::vector<int64_t> pos = {0, 0};
  expect_usage_error([&] { one.step_batch(tok, pos, out, nullptr); }, "1 to 1 sequences, got 2");
}

// Each sequence slot of a batch holds its KV cache, its logits row, its activation rows (x, xn
// and proj of the hidden size, q and att, k and v, gate, up and act of the FFN size) and an
// attention score row per KV head.
TEST(CpuBackend, WorkspaceCountsKvCacheLogitsAndActivationsPerSlot) {
  const ModelConfig c = small_config();
  const int64_t one = cpu::CpuBackend::workspace_bytes(c, 10);
  const int64_t four = cpu::CpuBackend::workspace_bytes(c, 10, 4);
  const int64_t kv_per_slot = 2 * c.n_layers * c.n_kv_heads * 10 * c.head_dim * 4;
  const int64_t activations =
      (3 * c.hidden + 2 * c.n_heads * c.head_dim + 2 * c.n_kv_heads * c.head_dim + 3 * c.ffn) * 4;
  const int64_t scores = c.n_kv_heads * 10 * 4;
  EXPECT_EQ(one, cpu::CpuBackend::workspace_bytes(c, 10, 1));
  EXPECT_EQ(four - one, 3 * (kv_per_slot + c.vocab * 4 + activations + scores));
}

}  // namespace
}  // namespace decodebench
