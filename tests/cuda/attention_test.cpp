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
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/cpu/ops.hpp"
#include "core/error.hpp"
#include "core/model/config.hpp"
#include "cuda/kernels/delayed_copy.cuh"
#include "cuda/kernels/gemv.cuh"
#include "cuda/kernels/kv_cache.cuh"
#include "tests/cuda/cuda_test_util.hpp"
#include "tests/support/support.hpp"

namespace decodebench::cuda {
namespace {

using testing::all_near;
using testing::download;
using testing::expect_switch_error;
using testing::poke;
using testing::random_floats;
using testing::upload;

struct Case {
  int64_t n_heads, n_kv_heads, head_dim, capacity;
  int splits;    ///< 0: attention_splits(capacity)
  int path = 0;  ///< AttentionParams::path
};

/// Scratch for `splits` split-KV splits or the merge form's short-context blocks (path 4).
size_t scratch_bytes(const Case& c, int splits) {
  const int n = std::max(splits, attention_short_splits(c.capacity, c.head_dim));
  return static_cast<size_t>(
             std::max<int64_t>(attention_scratch_floats(c.n_heads, c.head_dim, n), 4)) *
         sizeof(float);
}

/// A case's random q, K and V (host copies for the CPU reference), its device buffers and launch
/// parameters (seq_len read from d_seq; no error word).
struct CaseRig {
  int splits;
  std::vector<float> q, k, v;
  DeviceBuffer d_q, d_k, d_v, d_out, d_scratch, d_seq, d_count;
  AttentionParams p;

  explicit CaseRig(const Case& c)
      : splits(c.splits > 0 ? c.splits : attention_splits(c.capacity)),
        // Scaled q makes the softmax peaky enough to test the running max.
        q(random_floats(static_cast<size_t>(c.n_heads * c.head_dim), seed(c), -3.0f, 3.0f)),
        k(random_floats(cache_floats(c), seed(c) + 1)),
        v(random_floats(cache_floats(c), seed(c) + 2)),
        d_q(upload(q)),
        d_k(upload(k)),
        d_v(upload(v)),
        d_out(static_cast<size_t>(c.n_heads * c.head_dim) * sizeof(float)),
        d_scratch(scratch_bytes(c, splits)),
        d_seq(sizeof(int32_t)),
        d_count(upload(std::vector<uint32_t>(static_cast<size_t>(c.n_heads), 0u))) {
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
    p.path = c.path;
    p.merge_count = d_count.data<unsigned>();
  }
  static uint32_t seed(const Case& c) {
    return static_cast<uint32_t>(c.n_heads * 131 + c.head_dim * 7 + c.capacity);
  }
  static size_t cache_floats(const Case& c) {
    return static_cast<size_t>(c.n_kv_heads * c.capacity * c.head_dim);
  }
};

/// Runs the case for each seq_len (same device buffers: the launch shape is fixed per case).
void check_attention(const Case& c, const std::vector<int32_t>& seq_lens) {
  CaseRig rig(c);
  DeviceBuffer d_err = upload(std::vector<int32_t>{0});
  AttentionParams p = rig.p;
  p.d_error = d_err.data<int32_t>();

  std::vector<float> scratch(static_cast<size_t>(c.capacity) + 1);
  for (const int32_t seq_len : seq_lens) {
    poke(rig.d_seq.get(), seq_len);
    launch_attention(p, nullptr);
    testing::sync();
    const std::vector<float> got =
        download<float>(rig.d_out.get(), static_cast<size_t>(c.n_heads * c.head_dim));
    const int64_t eff = std::clamp<int64_t>(seq_len, 0, c.capacity);
    std::vector<float> want(got.size(), 0.0f);
    if (eff > 0) {
      cpu::attention(rig.q.data(), rig.k.data(), rig.v.data(), want.data(), c.n_heads, c.n_kv_heads,
                     c.head_dim, c.capacity, eff, scratch.data());
    }
    const std::string what =
        "attention Hq=" + std::to_string(c.n_heads) + " Hkv=" + std::to_string(c.n_kv_heads) +
        " hd=" + std::to_string(c.head_dim) + " cap=" + std::to_string(c.capacity) +
        " splits=" + std::to_string(rig.splits) + " seq_len=" + std::to_string(seq_len) +
        (attention_uses_short_path(p) ? " short-path" : " split-kv");
    EXPECT_TRUE(all_near(
        got, want, [](size_t) { return 1e-4 + 1e-6; }, what));
    const int32_t err = download<int32_t>(d_err.get(), 1)[0];
    EXPECT_EQ(err, seq_len > c.capacity ? kDeviceErrorSeqLen : 0) << what;
    poke(d_err.get(), int32_t{0});
    // The merge form's counts are back at 0 for the next launch.
    const std::vector<uint32_t> counts =
        download<uint32_t>(rig.d_count.get(), static_cast<size_t>(c.n_heads));
    EXPECT_EQ(*std::max_element(counts.begin(), counts.end()), 0u) << what;
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
  check_attention({12, 3, 128, 128, 0}, {1, 128});   // capacity 128: a single split
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
  // The same cases forced onto each path (1 split-KV, 2 one block, 3 a cluster of blocks on
  // sm_90, 4 the same blocks without a cluster, merged by the last one); SmolLM2-like (9/3 heads of
  // 64) and Qwen-like shapes, a context that spans several 32-position tiles per warp, clusters of
  // 1 to 8 blocks with empty ones (seq_len 1, 17), and seq_len 0 / > capacity.
  for (const int path : {1, 2, 3, 4, 5}) {
    check_attention({9, 3, 64, 256, 0, path}, {0, 1, 31, 32, 33, 129, 256, 300});
    check_attention({28, 4, 128, 256, 0, path}, {1, 129, 256});
    check_attention({8, 2, 256, 512, 0, path}, {1, 255, 512});
    check_attention({4, 2, 16, 64, 0, path}, {1, 17, 64});
    check_attention({6, 2, 32, 3000, 0, path}, {1, 1000, 3000});
  }
}

/// A graph of what launch_attention(p) enqueues, captured on `stream`; the caller destroys it.
cudaGraph_t capture_attention(const AttentionParams& p, cudaStream_t stream) {
  cudaGraph_t g = nullptr;
  DB_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  launch_attention(p, stream);
  DB_CUDA_CHECK(cudaStreamEndCapture(stream, &g));
  return g;
}

/// Kernel launches launch_attention makes for `p`: the nodes of a graph captured around it.
size_t attention_launches(const AttentionParams& p) {
  const CudaStream stream;
  cudaGraph_t g = capture_attention(p, stream.get());
  size_t n = 0;
  DB_CUDA_CHECK(cudaGraphGetNodes(g, nullptr, &n));
  DB_CUDA_CHECK(cudaGraphDestroy(g));
  return n;
}

// The short-context forms are one launch each (the cluster and merge forms merge their splits
// themselves); split-KV with 2 splits adds the combine kernel.
TEST(Attention, ShortContextFormsAreOneLaunch) {
  DB_REQUIRE_CUDA();
  for (const int path : {1, 2, 3, 4, 5}) {
    CaseRig rig({9, 3, 64, 256, 0, path});
    EXPECT_EQ(attention_launches(rig.p), path == 1 ? 2u : 1u) << "path " << path;
  }
}

/// The fused form (RoPE + KV append + optional QK-norm in the attention kernel) against the CPU
/// sequence rms_norm per head → rope → cache write → cpu::attention. `extra`: seq_len − (pos + 1)
/// (rows after this token's are read from the cache as they are). `late`: q, k_new and v_new hold
/// NaN until a predecessor (launch_delayed_copy) writes them 50 µs after letting the attention
/// kernel start (PDL), so any read of them before the PDL wait shows in the output.
void check_fused_rope(const Case& c, int32_t pos, bool qk_norm, RopeStyle style, int extra = 0,
                      bool late = false) {
  const int splits = c.splits > 0 ? c.splits : attention_splits(c.capacity);
  const int64_t hd = c.head_dim;
  const size_t cache_n = static_cast<size_t>(c.n_kv_heads * c.capacity * hd);
  const uint32_t seed = static_cast<uint32_t>(c.n_heads * 17 + hd + pos);
  const std::vector<float> q = random_floats(static_cast<size_t>(c.n_heads * hd), seed, -3, 3);
  const std::vector<float> kn = random_floats(static_cast<size_t>(c.n_kv_heads * hd), seed + 1);
  const std::vector<float> vn = random_floats(static_cast<size_t>(c.n_kv_heads * hd), seed + 2);
  std::vector<float> k = random_floats(cache_n, seed + 3);
  std::vector<float> v = random_floats(cache_n, seed + 4);
  const std::vector<float> qw = random_floats(static_cast<size_t>(hd), seed + 5, 0.5f, 1.5f);
  const std::vector<float> kw = random_floats(static_cast<size_t>(hd), seed + 6, 0.5f, 1.5f);
  std::vector<double> inv(static_cast<size_t>(hd / 2));
  for (int64_t i = 0; i < hd / 2; ++i) {
    inv[static_cast<size_t>(i)] = std::pow(10000.0, -2.0 * static_cast<double>(i) / hd);
  }
  DeviceBuffer d_q = upload(q), d_kn = upload(kn), d_vn = upload(vn), d_k = upload(k),
               d_v = upload(v), d_qw = upload(qw), d_kw = upload(kw), d_inv = upload(inv);
  DeviceBuffer d_out(static_cast<size_t>(c.n_heads * hd) * sizeof(float));
  DeviceBuffer d_scratch(scratch_bytes(c, splits));
  DeviceBuffer d_count = upload(std::vector<uint32_t>(static_cast<size_t>(c.n_heads), 0u));
  DeviceBuffer d_seq = upload(std::vector<int32_t>{pos + 1 + extra});
  DeviceBuffer d_pos = upload(std::vector<int32_t>{pos});
  DeviceBuffer d_err = upload(std::vector<int32_t>{0});
  AttentionParams p;
  p.q = d_q.data<float>();
  p.k_cache = d_k.data<float>();
  p.v_cache = d_v.data<float>();
  p.out = d_out.data<float>();
  p.n_heads = c.n_heads;
  p.n_kv_heads = c.n_kv_heads;
  p.head_dim = hd;
  p.capacity = c.capacity;
  p.d_seq_len = d_seq.data<int32_t>();
  p.splits = splits;
  p.scratch = d_scratch.data<float>();
  p.d_error = d_err.data<int32_t>();
  p.path = c.path;
  p.merge_count = d_count.data<unsigned>();
  p.k_new = d_kn.data<float>();
  p.v_new = d_vn.data<float>();
  p.d_pos = d_pos.data<int32_t>();
  p.d_inv_freq = d_inv.data<double>();
  p.rope_dim = hd;
  p.rope_style = style;
  p.q_norm = qk_norm ? d_qw.data<float>() : nullptr;
  p.k_norm = qk_norm ? d_kw.data<float>() : nullptr;
  p.eps = 1e-6f;
  p.pdl = true;
  const CudaStream stream;
  const size_t nq = q.size();
  const size_t nkv = kn.size();
  DeviceBuffer d_late((nq + 2 * nkv) * sizeof(float));
  std::vector<float> all = q;
  all.insert(all.end(), kn.begin(), kn.end());
  all.insert(all.end(), vn.begin(), vn.end());
  const DeviceBuffer d_all = upload(all);
  if (late) {
    fill_device(d_late.get(), 0xFF, d_late.bytes());  // NaN
    p.q = d_late.data<float>();
    p.k_new = p.q + nq;
    p.v_new = p.q + nq + nkv;
    launch_delayed_copy(d_late.get(), d_all.get(), d_late.bytes(), 50000, stream.get());
  }
  launch_attention(p, stream.get());
  testing::sync();

  std::vector<float> wq = q, wk = kn;
  if (qk_norm) {
    for (int64_t h = 0; h < c.n_heads; ++h) {
      cpu::rms_norm(wq.data() + h * hd, qw.data(), wq.data() + h * hd, hd, 1e-6f);
    }
    for (int64_t h = 0; h < c.n_kv_heads; ++h) {
      cpu::rms_norm(wk.data() + h * hd, kw.data(), wk.data() + h * hd, hd, 1e-6f);
    }
  }
  cpu::rope(wq.data(), c.n_heads, hd, hd, pos, inv.data(), style);
  cpu::rope(wk.data(), c.n_kv_heads, hd, hd, pos, inv.data(), style);
  for (int64_t h = 0; h < c.n_kv_heads; ++h) {
    for (int64_t d = 0; d < hd; ++d) {
      k[static_cast<size_t>((h * c.capacity + pos) * hd + d)] = wk[static_cast<size_t>(h * hd + d)];
      v[static_cast<size_t>((h * c.capacity + pos) * hd + d)] = vn[static_cast<size_t>(h * hd + d)];
    }
  }
  std::vector<float> want(static_cast<size_t>(c.n_heads * hd));
  std::vector<float> scratch(static_cast<size_t>(c.capacity) + 1);
  cpu::attention(wq.data(), k.data(), v.data(), want.data(), c.n_heads, c.n_kv_heads, hd,
                 c.capacity, pos + 1 + extra, scratch.data());
  const std::string what = "fused rope attention Hq=" + std::to_string(c.n_heads) +
                           " Hkv=" + std::to_string(c.n_kv_heads) + " hd=" + std::to_string(hd) +
                           " cap=" + std::to_string(c.capacity) + " pos=" + std::to_string(pos) +
                           " seq_len=" + std::to_string(pos + 1 + extra) +
                           (qk_norm ? " qk-norm" : "") + (late ? " late inputs" : "") + " " +
                           rope_style_name(style) +
                           (attention_uses_short_path(p) ? " short-path" : " split-kv");
  EXPECT_TRUE(all_near(
      download<float>(d_out.get(), want.size()), want, [](size_t) { return 1e-4 + 1e-6; }, what));
  // The appended cache rows: k within RoPE rounding, v exact; the rest untouched.
  EXPECT_TRUE(all_near(
      download<float>(d_k.get(), cache_n), k,
      [&](size_t i) { return 4e-6 * (std::fabs(k[i]) + 1.0); }, what + " k cache"));
  EXPECT_TRUE(testing::all_bits_equal(download<float>(d_v.get(), cache_n), v, what + " v cache"));
  EXPECT_EQ(download<int32_t>(d_err.get(), 1)[0], 0) << what;
}

TEST(Attention, FusedRopeAndKvAppend) {
  DB_REQUIRE_CUDA();
  for (const int path : {1, 2, 3, 4, 5}) {
    for (const bool norm : {false, true}) {
      check_fused_rope({9, 3, 64, 256, 0, path}, 128, norm, RopeStyle::kHalfSplit);
      check_fused_rope({28, 4, 128, 300, 0, path}, 0, norm, RopeStyle::kHalfSplit);
      check_fused_rope({28, 4, 128, 300, 0, path}, 299, norm, RopeStyle::kAdjacent);
      check_fused_rope({4, 2, 16, 64, 0, path}, 40, norm, RopeStyle::kAdjacent);
    }
    // seq_len past this token: the rows after it come from the cache (loaded after the wait).
    check_fused_rope({28, 4, 128, 300, 0, path}, 100, false, RopeStyle::kHalfSplit, 37);
    check_fused_rope({9, 3, 64, 256, 0, path}, 0, true, RopeStyle::kHalfSplit, 200);
  }
  // Several query heads per block (the kernel's 8-group form; on a GPU of ~132 SMs): long
  // split-KV, and a cluster of 7 blocks with 2 heads each.
  check_fused_rope({28, 4, 128, 5000, 0, 0}, 4000, true, RopeStyle::kAdjacent);
  check_fused_rope({40, 8, 128, 400, 0, 3}, 300, false, RopeStyle::kHalfSplit, 20);
  check_fused_rope({40, 8, 128, 400, 0, 5}, 300, false, RopeStyle::kHalfSplit, 20);
}

TEST(Attention, FusedFormReadsItsInputsAfterThePdlWait) {
  DB_REQUIRE_CUDA();
  const CudaStream stream;
  DB_REQUIRE_PDL_OVERLAP(stream);
  // Each case first with its inputs in place (which also loads the kernels), then late.
  for (const bool late : {false, true}) {
    for (const int path : {1, 2, 3, 4, 5}) {
      check_fused_rope({28, 4, 128, 256, 0, path}, 128, true, RopeStyle::kHalfSplit, 0, late);
      check_fused_rope({9, 3, 64, 256, 0, path}, 40, false, RopeStyle::kAdjacent, 0, late);
    }
    check_fused_rope({28, 4, 128, 5000, 0, 0}, 4000, false, RopeStyle::kHalfSplit, 0, late);
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
  // Short-context blocks: one per K tile of 8192 / head_dim positions, at most 8.
  EXPECT_EQ(attention_short_splits(256, 64), 2);
  EXPECT_EQ(attention_short_splits(256, 128), 4);
  EXPECT_EQ(attention_short_splits(300, 64), 3);
  EXPECT_EQ(attention_short_splits(64, 128), 1);
  EXPECT_EQ(attention_short_splits(5000, 128), 8);
}

// DECODEBENCH_ATTENTION's values map to AttentionParams::path; anything else is an error naming
// the variable (exit 2). Host code only: runs without a GPU too.
TEST(Attention, PathRequestReadsTheSwitch) {
  const char* before = std::getenv("DECODEBENCH_ATTENTION");
  const std::string saved = before != nullptr ? before : "";
  for (const auto& [value, path] : std::vector<std::pair<std::string, int>>{
           {"", 0}, {"split", 1}, {"block", 2}, {"cluster", 3}, {"merge", 4}, {"push", 5}}) {
    setenv("DECODEBENCH_ATTENTION", value.c_str(), 1);
    EXPECT_EQ(attention_path_request(), path) << value;
  }
  unsetenv("DECODEBENCH_ATTENTION");
  EXPECT_EQ(attention_path_request(), 0);
  setenv("DECODEBENCH_ATTENTION", "Merge", 1);
  expect_switch_error([] { (void)attention_path_request(); },
                      "DECODEBENCH_ATTENTION: 'Merge' is none of cluster");
  if (before != nullptr) {
    setenv("DECODEBENCH_ATTENTION", saved.c_str(), 1);
  } else {
    unsetenv("DECODEBENCH_ATTENTION");
  }
}

// DECODEBENCH_ATTENTION_TRIGGER's values map to AttentionParams::trigger_at_exit; anything else
// is an error naming the variable (exit 2). Host code only: runs without a GPU too.
TEST(Attention, TriggerRequestReadsTheSwitch) {
  for (const auto& [value, at_exit] :
       std::vector<std::pair<std::string, bool>>{{"", false}, {"wait", false}, {"exit", true}}) {
    const decodebench::testing::ScopedVariable v("DECODEBENCH_ATTENTION_TRIGGER", value);
    EXPECT_EQ(attention_trigger_request(), at_exit) << value;
  }
  {
    const decodebench::testing::ScopedVariable unset("DECODEBENCH_ATTENTION_TRIGGER", std::nullopt);
    EXPECT_FALSE(attention_trigger_request());
  }
  // The run record names it after the form (split-KV: no device query), and only with PDL.
  AttentionParams p;
  p.path = 1;
  p.splits = 3;
  p.trigger_at_exit = true;
  EXPECT_EQ(attention_form_name(p), "split-kv 3");
  p.pdl = true;
  EXPECT_EQ(attention_form_name(p), "split-kv 3 (trigger at exit)");
  p.trigger_at_exit = false;
  EXPECT_EQ(attention_form_name(p), "split-kv 3");
  const decodebench::testing::ScopedVariable bad("DECODEBENCH_ATTENTION_TRIGGER", "end");
  expect_switch_error([] { (void)attention_trigger_request(); },
                      "DECODEBENCH_ATTENTION_TRIGGER: 'end' is neither wait");
}

TEST(Attention, ShortContextsRunOnClustersOnSm90) {
  DB_REQUIRE_CUDA();
  int major = 0;
  DB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  AttentionParams p;
  p.head_dim = 128;  // K tiles of 64 positions
  p.capacity = 256;
  EXPECT_EQ(attention_cluster_blocks(p), major >= 9 ? 4 : 1);  // automatic short form
  p.head_dim = 64;                                             // tiles of 128
  EXPECT_EQ(attention_cluster_blocks(p), major >= 9 ? 2 : 1);
  p.head_dim = 128;
  p.capacity = 5000;
  EXPECT_EQ(attention_cluster_blocks(p), 1);  // split-KV
  p.capacity = 64;
  EXPECT_EQ(attention_cluster_blocks(p), 1);  // one tile: one block
  p.capacity = 512;
  p.path = 2;
  EXPECT_EQ(attention_cluster_blocks(p), 1);
  p.path = 3;
  EXPECT_EQ(attention_cluster_blocks(p), major >= 9 ? 8 : 1);
  p.path = 4;  // the merge form: the same blocks, no cluster, on any GPU
  EXPECT_EQ(attention_cluster_blocks(p), 1);
  EXPECT_EQ(attention_merge_splits(p), 8);
  EXPECT_EQ(attention_form_name(p), "merge 8");
  p.path = 3;
  EXPECT_EQ(attention_form_name(p), major >= 9 ? "cluster 8" : "block");
  p.path = 5;  // the cluster form with the push merge
  EXPECT_EQ(attention_cluster_blocks(p), major >= 9 ? 8 : 1);
  EXPECT_EQ(attention_form_name(p), major >= 9 ? "cluster-push 8" : "block");
  // Automatic: the push merge at batch 1 unless attention writes the o projection's x' split.
  p.path = 0;
  EXPECT_EQ(attention_form_name(p), major >= 9 ? "cluster-push 8" : "block");
  EXPECT_EQ(attention_pushes(p), major >= 9);
  float split_buffer[4];
  p.x_split = split_buffer;  // only its presence is read here
  EXPECT_EQ(attention_form_name(p), major >= 9 ? "cluster 8" : "block");
  EXPECT_FALSE(attention_pushes(p));
  p.x_split = nullptr;
  p.batch = 2;  // batched steps keep the cluster form
  EXPECT_FALSE(attention_pushes(p));
  EXPECT_EQ(attention_form_name(p), major >= 9 ? "cluster 8" : "block");
  p.batch = 1;
  p.path = 5;
  EXPECT_EQ(attention_pushes(p), major >= 9);
  p.path = 3;
  EXPECT_FALSE(attention_pushes(p));
  p.path = 2;
  EXPECT_EQ(attention_form_name(p), "block");
}

// The push merge (path 5: the other blocks store their partials into block 0's shared memory,
// st.async on an mbarrier there) merges the same values in the same order as the cluster form
// (path 3): the same output bits and the same x' split bytes, for clusters of 2 to 8 blocks,
// with empty blocks (seq_len 1, 17), several query heads per block (z-spread heads, and 8 heads of
// 256: a receive buffer above 48 KB) and head_dim 64 to 256; eagerly and replayed from a graph
// with PDL, whose one kernel node has dynamic shared memory with the push merge only.
TEST(Attention, PushMergeGivesTheClusterFormsBits) {
  DB_REQUIRE_CUDA();
  int major = 0;
  DB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  if (major < 9) GTEST_SKIP() << "thread-block clusters need compute capability 9 (sm_90)";
  const struct {
    Case c;
    std::vector<int32_t> seq_lens;
  } cases[] = {{{9, 3, 64, 256, 0, 3}, {1, 17, 129, 256}},
               {{28, 4, 128, 256, 0, 3}, {1, 65, 200, 256}},
               {{40, 8, 128, 400, 0, 3}, {300, 400}},
               {{8, 2, 256, 512, 0, 3}, {1, 255, 512}},
               {{16, 4, 128, 512, 0, 3}, {17, 512}},
               // 8 query heads of 256 per block on a GPU of ~132 SMs: block 0 receives 57,792
               // bytes, more than the default 48 KB of dynamic shared memory.
               {{256, 32, 256, 512, 0, 3}, {300}}};
  for (const auto& [c, seq_lens] : cases) {
    CaseRig rig(c);
    const int64_t cols = c.n_heads * c.head_dim;
    const bool split = c.head_dim >= 128;
    DeviceBuffer d_split(split ? gemv_x_split_bytes(cols) : 16);
    for (const int32_t seq_len : seq_lens) {
      poke(rig.d_seq.get(), seq_len);
      std::vector<float> out[2];
      std::vector<uint8_t> bytes[2];
      for (const int path : {3, 5}) {
        AttentionParams p = rig.p;
        p.path = path;
        p.pdl = true;
        if (split) {
          p.x_split = d_split.get();
          fill_device(d_split.get(), 0x5A, gemv_x_split_bytes(cols));
        }
        EXPECT_EQ(attention_form_name(p).rfind(path == 5 ? "cluster-push " : "cluster ", 0), 0u)
            << attention_form_name(p);
        const CudaStream stream;
        launch_attention(p, stream.get());  // eager, then replayed into the same buffers
        stream.synchronize();
        const std::vector<float> eager =
            download<float>(rig.d_out.get(), static_cast<size_t>(cols));
        fill_device(rig.d_out.get(), 0xFF, static_cast<size_t>(cols) * 4);
        cudaGraph_t g = capture_attention(p, stream.get());
        cudaGraphExec_t exec = nullptr;
        // One kernel node; only the push merge asks for dynamic shared memory (block 0's receive
        // buffer), so a launch that silently ignored the push would show here.
        size_t nodes = 0;
        DB_CUDA_CHECK(cudaGraphGetNodes(g, nullptr, &nodes));
        ASSERT_EQ(nodes, 1u);
        cudaGraphNode_t node = nullptr;
        DB_CUDA_CHECK(cudaGraphGetNodes(g, &node, &nodes));
        cudaKernelNodeParams kp{};
        DB_CUDA_CHECK(cudaGraphKernelNodeGetParams(node, &kp));
        if (path == 5) {
          EXPECT_GT(kp.sharedMemBytes, 0u);
        } else {
          EXPECT_EQ(kp.sharedMemBytes, 0u);
        }
        DB_CUDA_CHECK(cudaGraphInstantiate(&exec, g, 0));
        DB_CUDA_CHECK(cudaGraphLaunch(exec, stream.get()));
        stream.synchronize();
        DB_CUDA_CHECK(cudaGraphExecDestroy(exec));
        DB_CUDA_CHECK(cudaGraphDestroy(g));
        const int k = path == 5;
        out[k] = download<float>(rig.d_out.get(), static_cast<size_t>(cols));
        const std::string what =
            "Hq=" + std::to_string(c.n_heads) + " hd=" + std::to_string(c.head_dim) +
            " cap=" + std::to_string(c.capacity) + " seq_len=" + std::to_string(seq_len) +
            " path " + std::to_string(path);
        EXPECT_TRUE(testing::all_bits_equal(out[k], eager, what + ": replay against eager"));
        if (split) bytes[k] = download<uint8_t>(d_split.get(), gemv_x_split_bytes(cols));
      }
      const std::string what =
          "Hq=" + std::to_string(c.n_heads) + " hd=" + std::to_string(c.head_dim) +
          " cap=" + std::to_string(c.capacity) + " seq_len=" + std::to_string(seq_len);
      EXPECT_TRUE(testing::all_bits_equal(out[1], out[0], what + ": push against cluster"));
      EXPECT_TRUE(bytes[1] == bytes[0]) << what << ": x' split bytes differ";
    }
  }
}

/// The split of `out` that attention writes (AttentionParams::x_split) against the standalone
/// split kernel's on the same output: every byte of the buffer (both layouts) equal, for each
/// seq_len. Both buffers start with the same filler, so bytes neither writes compare equal too.
void check_x_split(const Case& c, const std::vector<int32_t>& seq_lens) {
  CaseRig rig(c);
  const int64_t cols = c.n_heads * c.head_dim;
  const size_t bytes = gemv_x_split_bytes(cols);
  DeviceBuffer by_attention(bytes);
  DeviceBuffer by_kernel(bytes);
  AttentionParams p = rig.p;
  p.x_split = by_attention.get();
  ASSERT_TRUE(attention_writes_x_split(p));
  for (const int32_t seq_len : seq_lens) {
    const std::string what =
        "Hq=" + std::to_string(c.n_heads) + " hd=" + std::to_string(c.head_dim) +
        " cap=" + std::to_string(c.capacity) + " path=" + std::to_string(c.path) +
        " seq_len=" + std::to_string(seq_len);
    fill_device(by_attention.get(), 0x5A, bytes);
    fill_device(by_kernel.get(), 0x5A, bytes);
    poke(rig.d_seq.get(), seq_len);
    launch_attention(p, nullptr);
    launch_gemv_prepare_x(GemvInput::kPlain, rig.d_out.data<float>(), nullptr, nullptr, 0.0f, cols,
                          by_kernel.get(), false, nullptr, false);
    testing::sync();
    const std::vector<uint8_t> got = download<uint8_t>(by_attention.get(), bytes);
    const std::vector<uint8_t> want = download<uint8_t>(by_kernel.get(), bytes);
    size_t diff = 0;
    while (diff < bytes && got[diff] == want[diff]) ++diff;
    EXPECT_EQ(diff, bytes) << what << ": first differing byte " << diff << " of " << bytes;
    // The split is of real outputs, not of zeros (seq_len 0 gives zeros on purpose).
    if (seq_len > 0) {
      const std::vector<float> out = download<float>(rig.d_out.get(), static_cast<size_t>(cols));
      EXPECT_GT(*std::max_element(out.begin(), out.end()), 0.0f) << what;
    }
  }
}

TEST(Attention, WritesTheOProjectionsSplitAsTheSplitKernelDoes) {
  DB_REQUIRE_CUDA();
  // The 7B shape's decode form: short context on a cluster (4 blocks), group 7 in one block.
  check_x_split({28, 4, 128, 256, 0}, {1, 16, 129, 256});
  // One block per KV head (path 2), head_dim 256 (two warps per head), and seq_len 0 (zeros).
  check_x_split({16, 8, 256, 400, 0, 2}, {0, 1, 300, 400});
  check_x_split({8, 2, 128, 300, 0, 2}, {0, 77});
  // Query heads of a KV head spread over blocks along z (hpb < group); a cluster of 7 blocks.
  check_x_split({40, 8, 128, 400, 0, 3}, {300, 400});
  // Split-KV path with a single split: the block writes its outputs itself.
  check_x_split({8, 2, 128, 5000, 1, 1}, {0, 1, 4999});
  // The merge form: the last of 4 blocks (7B shape) or 7 (z-spread heads) writes the split.
  check_x_split({28, 4, 128, 256, 0, 4}, {0, 1, 16, 129, 256});
  check_x_split({40, 8, 128, 400, 0, 4}, {300, 400});
  // The push merge: block 0 of 4 (7B shape) or 7 writes the split.
  check_x_split({28, 4, 128, 256, 0, 5}, {0, 1, 16, 129, 256});
  check_x_split({40, 8, 128, 400, 0, 5}, {300, 400});
}

TEST(Attention, RefusesAnXSplitItCannotWrite) {
  AttentionParams p;
  p.n_heads = 8;
  p.n_kv_heads = 2;
  p.head_dim = 128;
  p.capacity = 256;
  EXPECT_TRUE(attention_writes_x_split(p));
  p.head_dim = 64;  // a warp would hold half tiles of two heads
  EXPECT_FALSE(attention_writes_x_split(p));
  p.head_dim = 128;
  p.capacity = 5000;  // split-KV: the combine kernel writes the outputs
  p.splits = attention_splits(p.capacity);
  EXPECT_FALSE(attention_writes_x_split(p));
  p.splits = 1;
  EXPECT_TRUE(attention_writes_x_split(p));
  p.batch = 2;
  EXPECT_FALSE(attention_writes_x_split(p));
  p.batch = 1;
  p.head_dim = 384;  // not a head dim the kernel has
  EXPECT_FALSE(attention_writes_x_split(p));

  DB_REQUIRE_CUDA();
  DeviceBuffer q(8 * 64 * sizeof(float)), kv(2 * 256 * 64 * sizeof(float));
  DeviceBuffer out(8 * 64 * sizeof(float)), seq(sizeof(int32_t));
  DeviceBuffer split(gemv_x_split_bytes(8 * 128));
  AttentionParams a;
  a.q = q.data<float>();
  a.k_cache = kv.data<float>();
  a.v_cache = kv.data<float>();
  a.out = out.data<float>();
  a.n_heads = 8;
  a.n_kv_heads = 2;
  a.head_dim = 64;
  a.capacity = 256;
  a.d_seq_len = seq.data<int32_t>();
  // head_dim 64, and a supported shape with a buffer that is not 16-byte aligned.
  for (const int64_t hd : {64, 128}) {
    a.head_dim = hd;
    a.x_split = hd == 64 ? split.get() : static_cast<char*>(split.get()) + 4;
    try {
      launch_attention(a, nullptr);
      FAIL() << "expected an Error for head_dim " << hd;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kRuntime);
      EXPECT_NE(std::string(e.what()).find("x_split needs batch 1, head_dim 128 or 256"),
                std::string::npos)
          << e.what();
    }
  }
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
