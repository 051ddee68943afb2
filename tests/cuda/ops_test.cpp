// Element-wise decode kernels against the CPU reference ops: embedding, RMSNorm, RoPE, KV append,
// SwiGLU.
//
// Tolerances:
//  * embedding, KV append: bit-exact (same f32 operations in the same order).
//  * RMSNorm: |gpu − cpu| <= 1e-5·|cpu| + 1e-7 (only the sum of squares is ordered differently).
//  * RoPE: |gpu − cpu| <= 1e-6·(|a| + |b|) of the input pair (device double sin/cos may round to a
//    different float than glibc's; the float arithmetic is the CPU's); dims past rope_dim exact.
//  * SwiGLU: |gpu − cpu| <= 1e-6·|cpu| + 1e-30 (device expf is within 2 ulp).
#include "core/cpu/ops.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/model/config.hpp"
#include "core/quant/dequant.hpp"
#include "core/quant/weight_type.hpp"
#include "cuda/kernels/embedding.cuh"
#include "cuda/kernels/kv_cache.cuh"
#include "cuda/kernels/rms_norm.cuh"
#include "cuda/kernels/rope.cuh"
#include "cuda/kernels/rope_kv.cuh"
#include "cuda/kernels/swiglu.cuh"
#include "tests/cuda/cuda_test_util.hpp"

namespace decodebench::cuda {
namespace {

using testing::all_bits_equal;
using testing::all_near;
using testing::download;
using testing::poke;
using testing::random_floats;
using testing::upload;

// ---- embedding ---------------------------------------------------------------------------

class EmbeddingAllTypes : public ::testing::TestWithParam<WeightType> {};

TEST_P(EmbeddingAllTypes, BitExactToDequantizeRow) {
  DB_REQUIRE_CUDA();
  const WeightType t = GetParam();
  const bool legacy = weight_traits(t).block_elems <= 32;
  for (const int64_t cols : {int64_t{256}, int64_t{3584}, legacy ? int64_t{96} : int64_t{512}}) {
    const int64_t vocab = 9;
    const int64_t rb = row_bytes(t, cols);
    std::vector<uint8_t> table(static_cast<size_t>(vocab * rb));
    const std::vector<float> w =
        random_floats(static_cast<size_t>(vocab * cols), 77u + cols, -3, 3);
    for (int64_t r = 0; r < vocab; ++r) {
      quant::quantize_row(t, w.data() + r * cols, table.data() + r * rb, cols);
    }
    DeviceBuffer d_table = upload(table);
    DeviceBuffer d_token(sizeof(int32_t));
    DeviceBuffer d_out(static_cast<size_t>(cols) * sizeof(float));
    for (const int32_t token : {0, 5, static_cast<int32_t>(vocab - 1)}) {
      poke(d_token.get(), token);
      launch_embedding(t, d_table.get(), cols, d_token.data<int32_t>(), d_out.data<float>(),
                       nullptr);
      testing::sync();
      const std::vector<float> got = download<float>(d_out.get(), static_cast<size_t>(cols));
      std::vector<float> want(static_cast<size_t>(cols));
      quant::dequantize_row(t, table.data() + token * rb, want.data(), cols);
      EXPECT_TRUE(all_bits_equal(got, want,
                                 std::string(weight_traits(t).name) + " cols=" +
                                     std::to_string(cols) + " token=" + std::to_string(token)));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, EmbeddingAllTypes, ::testing::ValuesIn(kAllWeightTypes),
                         [](const ::testing::TestParamInfo<WeightType>& info) {
                           return std::string(weight_traits(info.param).name);
                         });

TEST(Embedding, RejectsUnsupportedType) {
  try {
    launch_embedding(static_cast<WeightType>(11), reinterpret_cast<const void*>(0x1000), 256,
                     reinterpret_cast<const int32_t*>(0x1000), reinterpret_cast<float*>(0x1000),
                     nullptr);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
  }
}

// ---- RMSNorm -------------------------------------------------------------------------------

void check_rms_norm(int64_t rows, int64_t n, bool in_place) {
  const float eps = 1e-6f;
  const std::vector<float> x = random_floats(static_cast<size_t>(rows * n), 11u + n, -4, 4);
  const std::vector<float> w = random_floats(static_cast<size_t>(n), 12u + n, 0.5f, 1.5f);
  DeviceBuffer d_x = upload(x);
  DeviceBuffer d_w = upload(w);
  DeviceBuffer d_y(static_cast<size_t>(rows * n) * sizeof(float));
  float* y = in_place ? d_x.data<float>() : d_y.data<float>();
  launch_rms_norm(d_x.data<float>(), d_w.data<float>(), y, rows, n, eps, nullptr);
  testing::sync();
  const std::vector<float> got = download<float>(y, static_cast<size_t>(rows * n));
  std::vector<float> want(static_cast<size_t>(rows * n));
  for (int64_t r = 0; r < rows; ++r) {
    cpu::rms_norm(x.data() + r * n, w.data(), want.data() + r * n, n, eps);
  }
  EXPECT_TRUE(all_near(
      got, want, [&](size_t i) { return 1e-5 * std::fabs(want[i]) + 1e-7; },
      "rms_norm rows=" + std::to_string(rows) + " n=" + std::to_string(n) +
          (in_place ? " in place" : "")));
}

TEST(RmsNorm, MatchesCpu) {
  DB_REQUIRE_CUDA();
  check_rms_norm(1, 4096, false);
  check_rms_norm(1, 896, true);
  check_rms_norm(1, 18944, false);
  check_rms_norm(1, 5, false);
  check_rms_norm(28, 128, true);  // qwen3 per-head QK-norm
  check_rms_norm(8, 256, false);
  check_rms_norm(3, 100, true);
}

// ---- RoPE ----------------------------------------------------------------------------------

std::vector<double> inv_freq_table(int64_t rope_dim, double theta) {
  std::vector<double> inv(static_cast<size_t>(rope_dim / 2));
  for (int64_t i = 0; i < rope_dim / 2; ++i) {
    inv[i] = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(rope_dim));
  }
  return inv;
}

void check_rope(int64_t n_heads, int64_t n_kv, int64_t head_dim, int64_t rope_dim, int32_t pos,
                RopeStyle style) {
  const std::vector<double> inv = inv_freq_table(rope_dim, 1000000.0);
  const std::vector<float> q = random_floats(static_cast<size_t>(n_heads * head_dim), 21u + pos);
  const std::vector<float> k = random_floats(static_cast<size_t>(n_kv * head_dim), 22u + pos);
  DeviceBuffer d_q = upload(q);
  DeviceBuffer d_k = upload(k);
  DeviceBuffer d_inv = upload(inv);
  DeviceBuffer d_pos(sizeof(int32_t));
  poke(d_pos.get(), pos);
  launch_rope(d_q.data<float>(), d_k.data<float>(), n_heads, n_kv, head_dim, rope_dim,
              d_pos.data<int32_t>(), d_inv.data<double>(), style, nullptr);
  testing::sync();
  const std::vector<float> gq = download<float>(d_q.get(), q.size());
  const std::vector<float> gk = download<float>(d_k.get(), k.size());
  std::vector<float> wq = q;
  std::vector<float> wk = k;
  cpu::rope(wq.data(), n_heads, head_dim, rope_dim, pos, inv.data(), style);
  cpu::rope(wk.data(), n_kv, head_dim, rope_dim, pos, inv.data(), style);

  // Tolerance from the magnitude of the element's input pair.
  const auto pair_tol = [&](const std::vector<float>& in) {
    return [&in, head_dim, rope_dim, style](size_t i) {
      const int64_t d = static_cast<int64_t>(i) % head_dim;
      if (d >= rope_dim) return 0.0;  // untouched: exact
      const int64_t half = rope_dim / 2;
      int64_t partner;
      if (style == RopeStyle::kAdjacent) {
        partner = d ^ 1;
      } else {
        partner = d < half ? d + half : d - half;
      }
      const size_t base = i - static_cast<size_t>(d);
      return 1e-6 * (std::fabs(in[base + d]) + std::fabs(in[base + partner]));
    };
  };
  const std::string what = std::string("rope ") + rope_style_name(style) +
                           " head_dim=" + std::to_string(head_dim) +
                           " rope_dim=" + std::to_string(rope_dim) + " pos=" + std::to_string(pos);
  EXPECT_TRUE(all_near(gq, wq, pair_tol(q), what + " q"));
  EXPECT_TRUE(all_near(gk, wk, pair_tol(k), what + " k"));
}

TEST(Rope, MatchesCpuBothStyles) {
  DB_REQUIRE_CUDA();
  for (const RopeStyle style : {RopeStyle::kAdjacent, RopeStyle::kHalfSplit}) {
    for (const int32_t pos : {0, 1, 17, 4095, 30000, 131071}) {
      check_rope(12, 4, 128, 128, pos, style);
      check_rope(4, 1, 64, 32, pos, style);  // partial rotation (rope_dim < head_dim)
      check_rope(16, 8, 256, 256, pos, style);
    }
  }
}

// ---- KV append -----------------------------------------------------------------------------

TEST(KvAppend, WritesOnePositionAndFlagsOutOfRange) {
  DB_REQUIRE_CUDA();
  const int64_t n_kv = 4, head_dim = 64, capacity = 16;
  const size_t cache_n = static_cast<size_t>(n_kv * capacity * head_dim);
  const std::vector<float> sentinel(cache_n, -7.0f);
  const std::vector<float> k = random_floats(static_cast<size_t>(n_kv * head_dim), 31);
  const std::vector<float> v = random_floats(static_cast<size_t>(n_kv * head_dim), 32);
  DeviceBuffer d_k = upload(k);
  DeviceBuffer d_v = upload(v);
  DeviceBuffer d_kc = upload(sentinel);
  DeviceBuffer d_vc = upload(sentinel);
  DeviceBuffer d_pos(sizeof(int32_t));
  DeviceBuffer d_err = upload(std::vector<int32_t>{0});

  std::vector<float> want_k = sentinel;
  std::vector<float> want_v = sentinel;
  for (const int32_t pos : {0, 5, static_cast<int32_t>(capacity - 1)}) {
    poke(d_pos.get(), pos);
    launch_kv_append(d_k.data<float>(), d_v.data<float>(), d_kc.data<float>(), d_vc.data<float>(),
                     n_kv, head_dim, capacity, d_pos.data<int32_t>(), d_err.data<int32_t>(),
                     nullptr);
    for (int64_t h = 0; h < n_kv; ++h) {
      for (int64_t d = 0; d < head_dim; ++d) {
        want_k[(h * capacity + pos) * head_dim + d] = k[h * head_dim + d];
        want_v[(h * capacity + pos) * head_dim + d] = v[h * head_dim + d];
      }
    }
  }
  testing::sync();
  EXPECT_TRUE(all_bits_equal(download<float>(d_kc.get(), cache_n), want_k, "k cache"));
  EXPECT_TRUE(all_bits_equal(download<float>(d_vc.get(), cache_n), want_v, "v cache"));
  EXPECT_EQ(download<int32_t>(d_err.get(), 1)[0], 0);

  for (const int32_t pos : {static_cast<int32_t>(capacity), -1, 1 << 30}) {
    poke(d_err.get(), int32_t{0});
    poke(d_pos.get(), pos);
    launch_kv_append(d_k.data<float>(), d_v.data<float>(), d_kc.data<float>(), d_vc.data<float>(),
                     n_kv, head_dim, capacity, d_pos.data<int32_t>(), d_err.data<int32_t>(),
                     nullptr);
    testing::sync();
    EXPECT_EQ(download<int32_t>(d_err.get(), 1)[0], kDeviceErrorKvPosition) << "pos " << pos;
    EXPECT_TRUE(all_bits_equal(download<float>(d_kc.get(), cache_n), want_k,
                               "k cache unchanged after pos " + std::to_string(pos)));
  }
  // A null error pointer is allowed: out-of-range positions are then silently dropped.
  launch_kv_append(d_k.data<float>(), d_v.data<float>(), d_kc.data<float>(), d_vc.data<float>(),
                   n_kv, head_dim, capacity, d_pos.data<int32_t>(), nullptr, nullptr);
  testing::sync();
}

// ---- fused RoPE + KV append (+ QK-norm) -------------------------------------------------------
//
// Against the CPU sequence rms_norm per head (optional) → rope → cache write. Tolerance: as for
// RoPE, 2e-6·(|a| + |b|) of the (normed) input pair, which also covers the QK-norm's different
// sum-of-squares order (a few ulp on the scale); v and untouched cache entries bit-exact.

void check_rope_kv(int64_t n_heads, int64_t n_kv, int64_t head_dim, int64_t rope_dim, int32_t pos,
                   RopeStyle style, bool qk_norm, int64_t capacity) {
  const std::vector<double> inv = inv_freq_table(rope_dim, 1000000.0);
  const std::vector<float> q = random_floats(static_cast<size_t>(n_heads * head_dim), 51u + pos);
  const std::vector<float> k = random_floats(static_cast<size_t>(n_kv * head_dim), 52u + pos);
  const std::vector<float> v = random_floats(static_cast<size_t>(n_kv * head_dim), 53u + pos);
  const std::vector<float> qn = random_floats(static_cast<size_t>(head_dim), 54, 0.5f, 1.5f);
  const std::vector<float> kn = random_floats(static_cast<size_t>(head_dim), 55, 0.5f, 1.5f);
  const size_t cache_n = static_cast<size_t>(n_kv * capacity * head_dim);
  const std::vector<float> sentinel(cache_n, -7.0f);
  DeviceBuffer d_q = upload(q), d_k = upload(k), d_v = upload(v), d_qn = upload(qn),
               d_kn = upload(kn), d_inv = upload(inv), d_kc = upload(sentinel),
               d_vc = upload(sentinel);
  DeviceBuffer d_pos(sizeof(int32_t));
  DeviceBuffer d_err = upload(std::vector<int32_t>{0});
  poke(d_pos.get(), pos);
  RopeKvParams p;
  p.q = d_q.data<float>();
  p.k = d_k.data<float>();
  p.v = d_v.data<float>();
  p.k_cache = d_kc.data<float>();
  p.v_cache = d_vc.data<float>();
  p.n_heads = n_heads;
  p.n_kv_heads = n_kv;
  p.head_dim = head_dim;
  p.rope_dim = rope_dim;
  p.capacity = capacity;
  p.d_pos = d_pos.data<int32_t>();
  p.d_inv_freq = d_inv.data<double>();
  p.style = style;
  p.q_norm = qk_norm ? d_qn.data<float>() : nullptr;
  p.k_norm = qk_norm ? d_kn.data<float>() : nullptr;
  p.eps = 1e-6f;
  p.d_error = d_err.data<int32_t>();
  p.pdl = true;
  launch_rope_kv_append(p, nullptr);
  testing::sync();

  std::vector<float> wq = q, wk = k;
  if (qk_norm) {
    for (int64_t h = 0; h < n_heads; ++h) {
      cpu::rms_norm(wq.data() + h * head_dim, qn.data(), wq.data() + h * head_dim, head_dim, 1e-6f);
    }
    for (int64_t h = 0; h < n_kv; ++h) {
      cpu::rms_norm(wk.data() + h * head_dim, kn.data(), wk.data() + h * head_dim, head_dim, 1e-6f);
    }
  }
  const std::vector<float> nq = wq, nk = wk;  // rope inputs, for the tolerance
  cpu::rope(wq.data(), n_heads, head_dim, rope_dim, pos, inv.data(), style);
  cpu::rope(wk.data(), n_kv, head_dim, rope_dim, pos, inv.data(), style);
  const bool in_range = pos >= 0 && pos < capacity;
  std::vector<float> want_vc = sentinel;
  if (in_range) {
    for (int64_t h = 0; h < n_kv; ++h) {
      for (int64_t d = 0; d < head_dim; ++d) {
        want_vc[(h * capacity + pos) * head_dim + d] = v[h * head_dim + d];
      }
    }
  }
  const auto pair_tol = [&](const std::vector<float>& in) {
    return [&in, head_dim, rope_dim, style](size_t i) {
      const int64_t d = static_cast<int64_t>(i) % head_dim;
      if (d >= rope_dim) return 2e-6 * std::fabs(in[i]);  // normed only
      const int64_t half = rope_dim / 2;
      const int64_t partner =
          style == RopeStyle::kAdjacent ? (d ^ 1) : (d < half ? d + half : d - half);
      const size_t base = i - static_cast<size_t>(d);
      return 2e-6 * (std::fabs(in[base + d]) + std::fabs(in[base + partner])) + 1e-30;
    };
  };
  const std::string what = std::string("rope_kv ") + rope_style_name(style) +
                           (qk_norm ? " qk-norm" : "") + " hd=" + std::to_string(head_dim) +
                           " rope_dim=" + std::to_string(rope_dim) + " pos=" + std::to_string(pos);
  EXPECT_TRUE(all_near(download<float>(d_q.get(), q.size()), wq, pair_tol(nq), what + " q"));
  // The K cache entry: compare the written row against the CPU's rotated k.
  const std::vector<float> got_kc = download<float>(d_kc.get(), cache_n);
  std::vector<float> got_k(static_cast<size_t>(n_kv * head_dim)), exp_k = wk;
  if (in_range) {
    for (int64_t h = 0; h < n_kv; ++h) {
      for (int64_t d = 0; d < head_dim; ++d) {
        got_k[h * head_dim + d] = got_kc[(h * capacity + pos) * head_dim + d];
      }
    }
    EXPECT_TRUE(all_near(got_k, exp_k, pair_tol(nk), what + " k cache row"));
  }
  // Everything else in the caches: untouched (sentinel) or, for v, bit-exact.
  std::vector<float> kc_rest = got_kc;
  if (in_range) {
    for (int64_t h = 0; h < n_kv; ++h) {
      for (int64_t d = 0; d < head_dim; ++d) kc_rest[(h * capacity + pos) * head_dim + d] = -7.0f;
    }
  }
  EXPECT_TRUE(all_bits_equal(kc_rest, sentinel, what + " k cache elsewhere"));
  EXPECT_TRUE(all_bits_equal(download<float>(d_vc.get(), cache_n), want_vc, what + " v cache"));
  EXPECT_EQ(download<int32_t>(d_err.get(), 1)[0], in_range ? 0 : kDeviceErrorKvPosition) << what;
}

TEST(RopeKv, MatchesTheSeparateKernelsOnTheCpu) {
  DB_REQUIRE_CUDA();
  for (const RopeStyle style : {RopeStyle::kAdjacent, RopeStyle::kHalfSplit}) {
    for (const bool norm : {false, true}) {
      for (const int32_t pos : {0, 1, 17, 255}) {
        check_rope_kv(9, 3, 64, 64, pos, style, norm, 256);     // SmolLM2
        check_rope_kv(28, 4, 128, 128, pos, style, norm, 300);  // Qwen2.5-7B
        check_rope_kv(4, 1, 64, 32, pos, style, norm, 300);     // partial rotation
        check_rope_kv(16, 8, 256, 256, pos, style, norm, 256);
        check_rope_kv(4, 2, 16, 16, pos, style, norm, 256);  // GGUF fixture dims
      }
    }
  }
  // Out-of-range positions: q is rotated, nothing is written, the error bit is set.
  check_rope_kv(9, 3, 64, 64, 256, RopeStyle::kHalfSplit, false, 256);
  check_rope_kv(9, 3, 64, 64, -1, RopeStyle::kHalfSplit, true, 256);
}

// ---- SwiGLU --------------------------------------------------------------------------------

TEST(SwiGlu, MatchesCpu) {
  DB_REQUIRE_CUDA();
  for (const int64_t n : {int64_t{1}, int64_t{4864}, int64_t{18947}}) {
    const std::vector<float> gate = random_floats(static_cast<size_t>(n), 41, -20, 20);
    const std::vector<float> up = random_floats(static_cast<size_t>(n), 42, -3, 3);
    DeviceBuffer d_g = upload(gate);
    DeviceBuffer d_u = upload(up);
    DeviceBuffer d_o(static_cast<size_t>(n) * sizeof(float));
    launch_swiglu(d_g.data<float>(), d_u.data<float>(), d_o.data<float>(), n, nullptr);
    testing::sync();
    std::vector<float> want(static_cast<size_t>(n));
    cpu::swiglu(gate.data(), up.data(), want.data(), n);
    EXPECT_TRUE(all_near(
        download<float>(d_o.get(), static_cast<size_t>(n)), want,
        [&](size_t i) { return 1e-6 * std::fabs(want[i]) + 1e-30; },
        "swiglu n=" + std::to_string(n)));
  }
}

}  // namespace
}  // namespace decodebench::cuda
