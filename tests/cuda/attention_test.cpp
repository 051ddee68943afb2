// Decode attention against cpu::attention: GQA, single-split and split-KV paths, short and long
// contexts, head dims 64/128/256, more than 8 query heads per KV head.
//
// Tolerance: |gpu − cpu| <= 1e-4 · max|V| + 1e-6. The output is a convex combination of V rows;
// the two sides differ in exp/normalization rounding and summation order (online softmax, split
// merge), which stays orders of magnitude below this, while a wrong head, position range or
// split merge moves outputs by a sizable fraction of |V|.
#include "cuda/kernels/attention.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/cpu/ops.hpp"
#include "core/error.hpp"
#include "cuda/kernels/kv_cache.cuh"
#include "tests/cuda/cuda_test_util.hpp"

namespace decodebench::cuda {
namespace {

using testing::all_near;
using testing::download;
using testing::poke;
using testing::random_floats;
using testing::upload;

struct Case {
  int64_t n_heads, n_kv_heads, head_dim, capacity;
  int splits;    ///< 0: attention_splits(capacity)
  int path = 0;  ///< AttentionParams::path
};

/// Runs the case for each seq_len (same device buffers: the launch shape is fixed per case).
void check_attention(const Case& c, const std::vector<int32_t>& seq_lens) {
  const int splits = c.splits > 0 ? c.splits : attention_splits(c.capacity);
  const size_t cache_n = static_cast<size_t>(c.n_kv_heads * c.capacity * c.head_dim);
  const uint32_t seed = static_cast<uint32_t>(c.n_heads * 131 + c.head_dim * 7 + c.capacity);
  // Scaled q makes the softmax peaky enough to test the running max.
  const std::vector<float> q =
      random_floats(static_cast<size_t>(c.n_heads * c.head_dim), seed, -3.0f, 3.0f);
  const std::vector<float> k = random_floats(cache_n, seed + 1);
  const std::vector<float> v = random_floats(cache_n, seed + 2);
  DeviceBuffer d_q = upload(q);
  DeviceBuffer d_k = upload(k);
  DeviceBuffer d_v = upload(v);
  DeviceBuffer d_out(static_cast<size_t>(c.n_heads * c.head_dim) * sizeof(float));
  DeviceBuffer d_scratch(static_cast<size_t>(std::max<int64_t>(
                             attention_scratch_floats(c.n_heads, c.head_dim, splits), 4)) *
                         sizeof(float));
  DeviceBuffer d_seq(sizeof(int32_t));
  DeviceBuffer d_err = upload(std::vector<int32_t>{0});

  AttentionParams p;
  p.q = d_q.data<float>();
  p.k_cache = d_k.data<float>();
  p.v_cache = d_v.data<float>();
  p.out = d_out.data<float>();
  p.n_heads = c.n_heads;
  p.n_kv_heads = c.n_kv_heads;
  p.head_dim = c.head_dim;
  p.capacity = c.capacity;
  p.d_seq_len = d_seq.data<int32_t>();
  p.splits = splits;
  p.scratch = d_scratch.data<float>();
  p.d_error = d_err.data<int32_t>();
  p.path = c.path;

  std::vector<float> scratch(static_cast<size_t>(c.capacity) + 1);
  for (const int32_t seq_len : seq_lens) {
    poke(d_seq.get(), seq_len);
    launch_attention(p, nullptr);
    testing::sync();
    const std::vector<float> got =
        download<float>(d_out.get(), static_cast<size_t>(c.n_heads * c.head_dim));
    const int64_t eff = std::clamp<int64_t>(seq_len, 0, c.capacity);
    std::vector<float> want(got.size(), 0.0f);
    if (eff > 0) {
      cpu::attention(q.data(), k.data(), v.data(), want.data(), c.n_heads, c.n_kv_heads, c.head_dim,
                     c.capacity, eff, scratch.data());
    }
    const std::string what =
        "attention Hq=" + std::to_string(c.n_heads) + " Hkv=" + std::to_string(c.n_kv_heads) +
        " hd=" + std::to_string(c.head_dim) + " cap=" + std::to_string(c.capacity) +
        " splits=" + std::to_string(splits) + " seq_len=" + std::to_string(seq_len) +
        (attention_uses_short_path(p) ? " short-path" : " split-kv");
    EXPECT_TRUE(all_near(
        got, want, [](size_t) { return 1e-4 + 1e-6; }, what));
    const int32_t err = download<int32_t>(d_err.get(), 1)[0];
    EXPECT_EQ(err, seq_len > c.capacity ? kDeviceErrorSeqLen : 0) << what;
    poke(d_err.get(), int32_t{0});
  }
}

TEST(Attention, GqaSplitKv) {
  DB_REQUIRE_CUDA();
  // Qwen2.5-7B-like: 28 query heads over 4 KV heads (group 7), head_dim 128.
  check_attention({28, 4, 128, 5000, 0}, {1, 7, 63, 64, 65, 300, 2048, 4999, 5000});
}

TEST(Attention, SingleSplitLongContext) {
  DB_REQUIRE_CUDA();
  // splits = 1: one block per KV head walks every tile (online softmax across many tiles).
  check_attention({8, 2, 128, 5000, 1}, {1, 7, 300, 5000});
  check_attention({8, 8, 64, 3000, 1}, {1, 129, 3000});
  check_attention({4, 1, 256, 2000, 1}, {1, 33, 2000});
}

TEST(Attention, HeadDims) {
  DB_REQUIRE_CUDA();
  check_attention({8, 8, 64, 300, 0}, {1, 7, 300});
  check_attention({16, 8, 256, 1500, 0}, {1, 7, 300, 1500});
  check_attention({12, 3, 128, 128, 0}, {1, 128});  // capacity 128: a single split
  check_attention({4, 2, 16, 300, 0}, {1, 7, 300});  // the GGUF test fixtures' head dims
  check_attention({4, 2, 32, 700, 0}, {1, 513, 700});
  check_attention({4, 4, 32, 200, 1}, {1, 200});
}

TEST(Attention, LargeGroupsUseSeveralBlocks) {
  DB_REQUIRE_CUDA();
  // 16 query heads per KV head: two blocks of 8 along z. And group sizes 3 and 5.
  check_attention({32, 2, 128, 700, 0}, {1, 513, 700});
  check_attention({15, 5, 64, 400, 0}, {7, 400});
  check_attention({40, 8, 128, 400, 0}, {300});
}

TEST(Attention, EmptyAndOverlongSequences) {
  DB_REQUIRE_CUDA();
  // seq_len 0 gives zeros; seq_len > capacity is clamped and flagged.
  check_attention({8, 2, 128, 1000, 0}, {0, 1000, 1001, 70000});
  check_attention({8, 2, 128, 1000, 1}, {0, 1200});
}

TEST(Attention, ShortContextPathAgreesWithSplitKv) {
  DB_REQUIRE_CUDA();
  // The same cases forced onto each path; SmolLM2-like (9/3 heads of 64) and Qwen-like shapes,
  // a context that spans several 32-position tiles per warp, and seq_len 0 / > capacity.
  for (const int path : {1, 2}) {
    check_attention({9, 3, 64, 256, 0, path}, {0, 1, 31, 32, 33, 129, 256, 300});
    check_attention({28, 4, 128, 256, 0, path}, {1, 129, 256});
    check_attention({8, 2, 256, 512, 0, path}, {1, 255, 512});
    check_attention({4, 2, 16, 64, 0, path}, {1, 17, 64});
    check_attention({6, 2, 32, 3000, 0, path}, {1, 1000, 3000});
  }
}

TEST(Attention, SplitHelpers) {
  EXPECT_EQ(attention_splits(1), 1);
  EXPECT_EQ(attention_splits(128), 1);
  EXPECT_EQ(attention_splits(129), 2);
  EXPECT_EQ(attention_splits(5000), 40);
  EXPECT_EQ(attention_splits(1 << 20), 64);
  EXPECT_EQ(attention_scratch_floats(28, 128, 1), 0);
  EXPECT_EQ(attention_scratch_floats(28, 128, 40), 40 * 28 * 130);
}

TEST(Attention, RejectsUnsupportedHeadDim) {
  AttentionParams p;
  p.head_dim = 96;
  try {
    launch_attention(p, nullptr);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    EXPECT_NE(std::string(e.what()).find("unsupported head_dim: 96"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace decodebench::cuda
