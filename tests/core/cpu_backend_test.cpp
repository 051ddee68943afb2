// The CPU backend against a naive forward pass written here, plus determinism across seeds and
// thread counts.
#include "core/cpu/cpu_backend.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/cpu/thread_pool.hpp"
#include "core/error.hpp"
#include "core/model/synthetic.hpp"
#include "core/quant/dequant.hpp"

namespace decodebench {
namespace {

ModelConfig small_config() {
  ModelConfig c;
  c.n_layers = 2;
  c.hidden = 64;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 16;
  c.rope_dim = 16;
  c.ffn = 96;
  c.vocab = 300;
  c.context_length = 64;
  c.rope_theta = 10000.0;
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
                         [](const auto& info) { return std::string(weight_traits(info.param).name); });

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

}  // namespace
}  // namespace decodebench
