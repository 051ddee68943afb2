// CPU reference operators against hand-computed values.
#include "core/cpu/ops.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/cpu/thread_pool.hpp"
#include "core/model/config.hpp"

namespace decodebench::cpu {
namespace {

TEST(RmsNorm, HandComputed) {
  // x = [3, 4]: mean(x²) = 12.5; 1/sqrt(12.5 + 0.5) = 1/sqrt(13).
  const float x[2] = {3.0f, 4.0f};
  const float w[2] = {1.0f, 2.0f};
  float y[2];
  rms_norm(x, w, y, 2, 0.5f);
  EXPECT_FLOAT_EQ(y[0], 3.0f / std::sqrt(13.0f));
  EXPECT_FLOAT_EQ(y[1], 8.0f / std::sqrt(13.0f));
}

TEST(RmsNorm, InPlace) {
  float x[4] = {1, 1, 1, 1};
  const float w[4] = {1, 1, 1, 1};
  rms_norm(x, w, x, 4, 0.0f);
  for (float v : x) EXPECT_FLOAT_EQ(v, 1.0f);
}

TEST(RopeInvFreq, MatchesFormula) {
  ModelConfig c;
  c.rope_dim = 4;
  c.rope_theta = 10000.0;
  const auto inv = rope_inv_freq(c);
  ASSERT_EQ(inv.size(), 2u);
  EXPECT_DOUBLE_EQ(inv[0], 1.0);
  EXPECT_DOUBLE_EQ(inv[1], 0.01);  // 10000^(-2/4)
  c.rope_freq_divisors = {1.0f, 4.0f};
  EXPECT_DOUBLE_EQ(rope_inv_freq(c)[1], 0.0025);
}

TEST(Rope, HalfSplitRotatesPairsIAndIPlusHalf) {
  // One head of 4 values, rope_dim 4: pairs (x0, x2) with inv_freq 1 and (x1, x3) with 0.01.
  std::vector<float> x = {1, 2, 3, 4};
  const double inv[2] = {1.0, 0.01};
  rope(x.data(), 1, 4, 4, 1, inv, RopeStyle::kHalfSplit);
  EXPECT_NEAR(x[0], 1 * std::cos(1.0) - 3 * std::sin(1.0), 1e-6);
  EXPECT_NEAR(x[2], 1 * std::sin(1.0) + 3 * std::cos(1.0), 1e-6);
  EXPECT_NEAR(x[1], 2 * std::cos(0.01) - 4 * std::sin(0.01), 1e-6);
  EXPECT_NEAR(x[3], 2 * std::sin(0.01) + 4 * std::cos(0.01), 1e-6);
}

TEST(Rope, AdjacentRotatesNeighbours) {
  std::vector<float> x = {1, 2, 3, 4};
  const double inv[2] = {1.0, 0.01};
  rope(x.data(), 1, 4, 4, 2, inv, RopeStyle::kAdjacent);
  EXPECT_NEAR(x[0], 1 * std::cos(2.0) - 2 * std::sin(2.0), 1e-6);
  EXPECT_NEAR(x[1], 1 * std::sin(2.0) + 2 * std::cos(2.0), 1e-6);
  EXPECT_NEAR(x[2], 3 * std::cos(0.02) - 4 * std::sin(0.02), 1e-6);
  EXPECT_NEAR(x[3], 3 * std::sin(0.02) + 4 * std::cos(0.02), 1e-6);
}

TEST(Rope, PositionZeroIsIdentityAndDimsPastRopeDimUntouched) {
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  const double inv[1] = {1.0};
  rope(x.data(), 1, 6, 2, 0, inv, RopeStyle::kHalfSplit);
  EXPECT_EQ(x, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  rope(x.data(), 1, 6, 2, 3, inv, RopeStyle::kHalfSplit);
  EXPECT_EQ(x[2], 3);
  EXPECT_EQ(x[5], 6);
}

TEST(Attention, SinglePositionReturnsV) {
  // seq_len 1: softmax of one score is 1, so out = v.
  const float q[2] = {0.3f, -0.7f};
  const float k[2] = {5.0f, 1.0f};
  const float v[2] = {2.0f, -3.0f};
  float out[2], scratch[1];
  attention(q, k, v, out, 1, 1, 2, 1, 1, scratch);
  EXPECT_FLOAT_EQ(out[0], 2.0f);
  EXPECT_FLOAT_EQ(out[1], -3.0f);
}

TEST(Attention, TwoPositionsHandComputed) {
  // head_dim 2, scale 1/sqrt(2). q = [1, 0]; k0 = [0, 0] (score 0), k1 = [sqrt(2)·ln 3, 0]
  // (score ln 3). softmax = [1/4, 3/4]; out = 1/4·v0 + 3/4·v1.
  const float q[2] = {1.0f, 0.0f};
  const float k[4] = {0.0f, 0.0f, static_cast<float>(std::sqrt(2.0) * std::log(3.0)), 0.0f};
  const float v[4] = {4.0f, 8.0f, 0.0f, -4.0f};
  float out[2], scratch[2];
  attention(q, k, v, out, 1, 1, 2, 2, 2, scratch);
  EXPECT_NEAR(out[0], 1.0f, 1e-6);
  EXPECT_NEAR(out[1], 2.0f - 3.0f, 1e-6);
}

TEST(Attention, GqaMapsConsecutiveQueryHeadsToOneKvHead) {
  // 4 query heads, 2 KV heads, head_dim 1, one position: heads 0,1 read KV head 0; 2,3 read 1.
  const float q[4] = {1, 1, 1, 1};
  const float k[2] = {0, 0};  // [kv_head][capacity=1][1]
  const float v[2] = {10, 20};
  float out[4], scratch[1];
  attention(q, k, v, out, 4, 2, 1, 1, 1, scratch);
  EXPECT_EQ(out[0], 10);
  EXPECT_EQ(out[1], 10);
  EXPECT_EQ(out[2], 20);
  EXPECT_EQ(out[3], 20);
}

TEST(Attention, OnlyFirstSeqLenPositionsCount) {
  // capacity 3, seq_len 1: the value at position 1 (huge) must not leak in.
  const float q[1] = {1};
  const float k[3] = {0, 100, 100};
  const float v[3] = {7, 1000, 1000};
  float out[1], scratch[3];
  attention(q, k, v, out, 1, 1, 1, 3, 1, scratch);
  EXPECT_EQ(out[0], 7);
}

TEST(SwiGlu, HandComputed) {
  const float g[3] = {0.0f, 1.0f, -2.0f};
  const float u[3] = {5.0f, 2.0f, 3.0f};
  float out[3];
  swiglu(g, u, out, 3);
  EXPECT_FLOAT_EQ(out[0], 0.0f);
  EXPECT_NEAR(out[1], 2.0f / (1.0f + std::exp(-1.0f)), 1e-6);
  EXPECT_NEAR(out[2], 3.0f * -2.0f / (1.0f + std::exp(2.0f)), 1e-6);
}

TEST(Gemv, F32HandComputedAndThreadIndependent) {
  // W = [[1, 2, 3], [4, 5, 6]], x = [1, 0, -1] → y = [-2, -2].
  const float w[6] = {1, 2, 3, 4, 5, 6};
  TensorView t;
  t.type = WeightType::kF32;
  t.data = w;
  t.rows = 2;
  t.cols = 3;
  const float x[3] = {1, 0, -1};
  float y1[2], y2[2];
  ThreadPool one(1), two(2);
  gemv(t, x, y1, one);
  gemv(t, x, y2, two);
  EXPECT_EQ(y1[0], -2);
  EXPECT_EQ(y1[1], -2);
  EXPECT_EQ(y1[0], y2[0]);
  EXPECT_EQ(y1[1], y2[1]);
}

TEST(Argmax, TiesGoToLowestIndex) {
  const float x[5] = {1, 3, 2, 3, 3};
  EXPECT_EQ(argmax(x, 5), 1);
}

TEST(Argmax, AllEqualIsZero) {
  const std::vector<float> x(1000, 0.5f);
  EXPECT_EQ(argmax(x.data(), 1000), 0);
}

TEST(Argmax, FirstNanWins) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float x[5] = {1, 9, nan, 10, nan};
  EXPECT_EQ(argmax(x, 5), 2);
  const float y[2] = {nan, 1};
  EXPECT_EQ(argmax(y, 2), 0);
}

TEST(Argmax, NegativeInfinityAndLastIndex) {
  const float inf = std::numeric_limits<float>::infinity();
  const float all_neg_inf[3] = {-inf, -inf, -inf};
  EXPECT_EQ(argmax(all_neg_inf, 3), 0);
  const float last[4] = {-inf, -1, -0.5f, 0};
  EXPECT_EQ(argmax(last, 4), 3);
}

TEST(ThreadPool, CoversEveryIndexOnce) {
  ThreadPool pool(3);
  std::vector<int> hits(1001, 0);
  pool.parallel_for(1001, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) ++hits[i];
  });
  for (int h : hits) EXPECT_EQ(h, 1);
}

TEST(ThreadPool, PropagatesExceptions) {
  ThreadPool pool(2);
  EXPECT_THROW(pool.parallel_for(100,
                                 [](int64_t b, int64_t) {
                                   if (b > 0) throw std::runtime_error("worker failed");
                                 }),
               std::runtime_error);
}

}  // namespace
}  // namespace decodebench::cpu
