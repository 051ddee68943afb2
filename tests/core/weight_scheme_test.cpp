// --dtype q4_k_m: the mix rule, the synthetic model it builds, its byte counts and its decode.
#include "core/model/weight_scheme.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/cpu/cpu_backend.hpp"
#include "core/cpu/thread_pool.hpp"
#include "core/error.hpp"
#include "core/model/synthetic.hpp"
#include "core/run_config.hpp"
#include "tests/support/model_configs.hpp"

namespace decodebench {
namespace {

// 8 layers (promoted: 0, 3, 6, 7), rows of whole 256-value blocks, untied LM head.
ModelConfig mix_config(bool tied = false) {
  ModelConfig c = ::decodebench::testing::small_model_config(8, 256, 4, 2, 64, 512, 320);
  c.qkv_bias = true;
  c.tied_embeddings = tied;
  return c;
}

std::set<int64_t> promoted(int64_t n_layers) {
  std::set<int64_t> s;
  for (int64_t l = 0; l < n_layers; ++l) {
    if (q4_k_m_promoted_layer(l, n_layers)) s.insert(l);
  }
  return s;
}

TEST(WeightScheme, PromotedLayersAreTheFirstAndLastEighthAndEveryThirdBetween) {
  EXPECT_EQ(promoted(8), (std::set<int64_t>{0, 3, 6, 7}));
  EXPECT_EQ(promoted(28), (std::set<int64_t>{0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27}));
  EXPECT_EQ(promoted(32),
            (std::set<int64_t>{0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31}));
  EXPECT_EQ(promoted(30), (std::set<int64_t>{0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 26, 27, 28, 29}));
  // Fewer than 8 layers: no first eighth, the last eighth starts at 7n/8.
  EXPECT_EQ(promoted(2), (std::set<int64_t>{1}));
  EXPECT_EQ(promoted(1), (std::set<int64_t>{0}));
}

TEST(WeightScheme, TypeOfEachRole) {
  const WeightScheme mix = WeightScheme::q4_k_m();
  for (int64_t l = 0; l < 8; ++l) {
    const WeightType promoted_type =
        q4_k_m_promoted_layer(l, 8) ? WeightType::kQ6_K : WeightType::kQ4_K;
    EXPECT_EQ(mix.type_of(MatrixRole::kAttnV, l, 8, false), promoted_type) << l;
    EXPECT_EQ(mix.type_of(MatrixRole::kFfnDown, l, 8, false), promoted_type) << l;
    for (MatrixRole r : {MatrixRole::kAttnQ, MatrixRole::kAttnK, MatrixRole::kAttnOutput,
                         MatrixRole::kFfnGate, MatrixRole::kFfnUp}) {
      EXPECT_EQ(mix.type_of(r, l, 8, false), WeightType::kQ4_K) << l;
    }
  }
  EXPECT_EQ(mix.type_of(MatrixRole::kOutput, 0, 8, false), WeightType::kQ6_K);
  EXPECT_EQ(mix.type_of(MatrixRole::kTokenEmbd, 0, 8, false), WeightType::kQ4_K);
  EXPECT_EQ(mix.type_of(MatrixRole::kTokenEmbd, 0, 8, true), WeightType::kQ6_K) << "tied: LM head";
  EXPECT_EQ(mix.label(), "Q4_K_M");
  EXPECT_EQ(mix.flag_name(), "q4_k_m");

  const WeightScheme uniform = WeightType::kQ8_0;
  for (MatrixRole r :
       {MatrixRole::kTokenEmbd, MatrixRole::kOutput, MatrixRole::kAttnV, MatrixRole::kFfnDown}) {
    EXPECT_EQ(uniform.type_of(r, 0, 8, false), WeightType::kQ8_0);
  }
  EXPECT_EQ(uniform.label(), "Q8_0");
  EXPECT_EQ(uniform.flag_name(), "q8_0");
}

TEST(WeightScheme, ParseAndResolve) {
  EXPECT_EQ(parse_weight_scheme("q4_k_m"), WeightScheme::q4_k_m());
  EXPECT_EQ(parse_weight_scheme("bf16"), WeightType::kBF16);
  try {
    (void)parse_weight_scheme("q4_k_s");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    EXPECT_NE(std::string(e.what()).find("q6_k|q4_k_m"), std::string::npos) << e.what();
  }
  RunOptions o;
  o.dtype = "q4_k_m";
  EXPECT_EQ(resolve_run_config(o, 1).dtype, WeightScheme::q4_k_m());  // qwen2.5-7b shape fits
  o.preset = "smollm2-135m";  // hidden 576: not whole blocks of 256
  try {
    (void)resolve_run_config(o, 1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    EXPECT_NE(
        std::string(e.what()).find("--dtype q4_k_m stores blocks of 256 values: hidden (576)"),
        std::string::npos)
        << e.what();
  }
}

// Every matrix of a model with its expected type.
std::map<std::string, WeightType> matrix_types(const Model& m) {
  std::map<std::string, WeightType> out;
  const ModelWeights& w = m.weights;
  out[w.token_embd.name] = w.token_embd.type;
  out[w.output.name] = w.output.type;
  for (const LayerWeights& L : w.layers) {
    for (const TensorView* t : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) {
      out[t->name] = t->type;
    }
  }
  return out;
}

TEST(WeightScheme, SyntheticQ4KMModelHasTheMix) {
  cpu::ThreadPool pool(2);
  const Model m = make_synthetic_model(mix_config(), WeightScheme::q4_k_m(), 5, pool);
  const std::map<std::string, WeightType> types = matrix_types(m);
  ASSERT_EQ(types.size(), 2u + 8 * 7);
  const std::set<std::string> q6 = {
      "output.weight",         "blk.0.attn_v.weight",   "blk.3.attn_v.weight",
      "blk.6.attn_v.weight",   "blk.7.attn_v.weight",   "blk.0.ffn_down.weight",
      "blk.3.ffn_down.weight", "blk.6.ffn_down.weight", "blk.7.ffn_down.weight"};
  for (const auto& [name, type] : types) {
    EXPECT_EQ(type, q6.count(name) ? WeightType::kQ6_K : WeightType::kQ4_K) << name;
  }
  for (const LayerWeights& L : m.weights.layers) {
    for (const TensorView* t : {&L.attn_norm, &L.ffn_norm, &L.bq, &L.bk, &L.bv}) {
      EXPECT_EQ(t->type, WeightType::kF32) << t->name;
    }
  }
  EXPECT_EQ(m.info.file_type, "Q4_K_M");
  ASSERT_EQ(m.info.tensor_types.count("Q6_K"), 1u);
  EXPECT_EQ(m.info.tensor_types.at("Q6_K").count, 9);
  EXPECT_EQ(m.info.tensor_types.at("Q4_K").count, 1 + 8 * 5 + 4 + 4);
  EXPECT_EQ(m.info.tensor_types.at("F32").count, 1 + 8 * 5);

  cpu::ThreadPool pool1(1);
  const Model tied = make_synthetic_model(mix_config(true), WeightScheme::q4_k_m(), 5, pool1);
  EXPECT_EQ(tied.weights.token_embd.type, WeightType::kQ6_K);
  EXPECT_EQ(tied.weights.output.data, tied.weights.token_embd.data);
}

TEST(WeightScheme, MixedWeightsAreThoseOfTheUniformModels) {
  // The values are a pure function of the seed; only their rounding follows the type. So each
  // tensor of the mix is byte-identical to the same tensor of the uniform model of its type.
  cpu::ThreadPool pool(2);
  const Model mix = make_synthetic_model(mix_config(), WeightScheme::q4_k_m(), 9, pool);
  const Model q4 = make_synthetic_model(mix_config(), WeightType::kQ4_K, 9, pool);
  const Model q6 = make_synthetic_model(mix_config(), WeightType::kQ6_K, 9, pool);
  const auto same = [](const TensorView& a, const TensorView& b) {
    return a.type == b.type && a.bytes() == b.bytes() &&
           std::memcmp(a.data, b.data, static_cast<size_t>(a.bytes())) == 0;
  };
  EXPECT_TRUE(same(mix.weights.layers[0].wv, q6.weights.layers[0].wv));
  EXPECT_TRUE(same(mix.weights.layers[1].wv, q4.weights.layers[1].wv));
  EXPECT_TRUE(same(mix.weights.layers[7].w_down, q6.weights.layers[7].w_down));
  EXPECT_TRUE(same(mix.weights.layers[4].wq, q4.weights.layers[4].wq));
  EXPECT_TRUE(same(mix.weights.output, q6.weights.output));
  EXPECT_TRUE(same(mix.weights.token_embd, q4.weights.token_embd));
  EXPECT_TRUE(same(mix.weights.layers[2].attn_norm, q4.weights.layers[2].attn_norm));
}

TEST(WeightScheme, RooflineBytesAreTheSumOfTheTensorsBytes) {
  cpu::ThreadPool pool(2);
  const ModelConfig c = mix_config();
  const Model m = make_synthetic_model(c, WeightScheme::q4_k_m(), 3, pool);
  // Recount from the shapes and the per-tensor types, independently of TensorView::bytes().
  const auto bytes = [](const TensorView& t) {
    const WeightTraits tr = weight_traits(t.type);
    return t.rows * (t.cols / tr.block_elems) * tr.block_bytes;
  };
  int64_t per_token = 0, stored = 0;
  const ModelWeights& w = m.weights;
  for (const LayerWeights& L : w.layers) {
    for (const TensorView* t : {&L.attn_norm, &L.wq, &L.wk, &L.wv, &L.bq, &L.bk, &L.bv, &L.wo,
                                &L.ffn_norm, &L.w_gate, &L.w_up, &L.w_down}) {
      per_token += bytes(*t);
    }
  }
  per_token += bytes(w.output_norm) + bytes(w.output);
  stored = per_token + bytes(w.token_embd);
  per_token += bytes(w.token_embd) / c.vocab;  // one embedding row per step
  EXPECT_EQ(m.info.bytes_per_token, per_token);
  EXPECT_EQ(m.info.weight_bytes, stored);
  EXPECT_EQ(synthetic_weight_bytes(c, WeightScheme::q4_k_m()), stored);
  // The Q6_K tensors make it heavier than uniform Q4_K and lighter than uniform Q6_K.
  const Model q4 = make_synthetic_model(c, WeightType::kQ4_K, 3, pool);
  const Model q6 = make_synthetic_model(c, WeightType::kQ6_K, 3, pool);
  EXPECT_GT(m.info.bytes_per_token, q4.info.bytes_per_token);
  EXPECT_LT(m.info.bytes_per_token, q6.info.bytes_per_token);
  // 9 matrices moved from 144 to 210 bytes per 256 values.
  const int64_t q6_values = 4 * (c.kv_dim() * c.hidden + c.hidden * c.ffn) + c.vocab * c.hidden;
  EXPECT_EQ(m.info.bytes_per_token - q4.info.bytes_per_token, q6_values / 256 * (210 - 144));
}

std::vector<int32_t> decode(const Model& m, int threads, int steps) {
  cpu::CpuBackend b(m, steps + 4, threads);
  std::vector<int32_t> ids;
  int32_t t = b.prefill(std::vector<int32_t>{3, 1, 4, 1});
  ids.push_back(t);
  for (int i = 0; i < steps; ++i) ids.push_back(t = b.step(t, 4 + i, nullptr));
  return ids;
}

TEST(WeightScheme, Q4KMDecodesDeterministicallyOnTheCpu) {
  cpu::ThreadPool pool1(1), pool3(3);
  const Model a = make_synthetic_model(mix_config(), WeightScheme::q4_k_m(), 11, pool1);
  const Model b = make_synthetic_model(mix_config(), WeightScheme::q4_k_m(), 11, pool3);
  const std::vector<int32_t> ids = decode(a, 1, 24);
  EXPECT_EQ(ids, decode(b, 3, 24));
  EXPECT_EQ(ids, decode(a, 2, 24));
  EXPECT_GT(std::set<int32_t>(ids.begin(), ids.end()).size(), 3u) << "not a constant sequence";
  for (int32_t id : ids) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, mix_config().vocab);
  }
}

}  // namespace
}  // namespace decodebench
