// GEMV kernels against the CPU reference (quant::dot_row) for every weight type and every kernel
// variant (staged, direct, mma, stream), the fused input forms (RMSNorm, SwiGLU, pre-split x),
// stacked output segments and programmatic dependent launch (eagerly and inside a captured graph).
//
// Tolerance: |gpu − cpu| <= 1e-5 · Σ_c |w[r][c]·x[c]| + 1e-6 per row (w dequantized on the CPU).
// Both sides accumulate in f32 in different orders; the bound is relative to the magnitude of
// the sum, not of the result, because cancellation makes the result's own size meaningless. The
// kernels on a pre-split x' (two 7-bit digits per value) add up to 2^-13 · Σ_c |w[r][c]|·M(c),
// M(c) the largest |x'| of c's 32-column tile. An index bug (wrong nibble, block, chunk or row)
// moves a result by O(|w·x|) for whole blocks, far beyond both.
#include "cuda/kernels/gemv.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/cpu/ops.hpp"
#include "core/error.hpp"
#include "core/quant/blocks.hpp"
#include "core/quant/dequant.hpp"
#include "core/quant/tiled_layout.hpp"
#include "core/quant/weight_type.hpp"
#include "cuda/kernels/delayed_copy.cuh"
#include "cuda/kernels/gemv_impl.cuh"
#include "tests/cuda/cuda_test_util.hpp"

namespace decodebench::cuda {
namespace {

using testing::all_near;
using testing::download;
using testing::random_floats;
using testing::upload;

using testing::make_matrix;
using testing::Matrix;

// Inputs for planning only (gemv_launch_info): x, y and a pre-split x of up to `cols` columns on
// the device, and a 16-byte aligned weight address that is never read.
struct PlanningBuffers {
  DeviceBuffer x{size_t{1} << 16}, y{size_t{1} << 16}, split;
  explicit PlanningBuffers(int64_t cols) : split(static_cast<size_t>(gemv_x_split_bytes(cols))) {}
  GemvParams params(WeightType t) {
    GemvParams p;
    p.type = t;
    p.w = reinterpret_cast<const void*>(uintptr_t{1} << 20);
    p.x = x.data<float>();
    p.y = y.data<float>();
    p.x_split = split.get();
    return p;
  }
  /// The launch info of a `rows` × `cols` GEMV of type t (`tiled`: the tiled layout).
  GemvLaunchInfo plan(WeightType t, int64_t rows, int64_t cols, bool tiled) {
    GemvParams p = params(t);
    p.rows = rows;
    p.cols = cols;
    p.tiled = tiled;
    return gemv_launch_info(p);
  }
};

// Sets or unsets one environment variable for a scope; the caller's setting comes back after it
// (a run with a form forced keeps it).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) saved_ = old, had_ = true;
    set(value);
  }
  ~ScopedEnv() { set(had_ ? saved_.c_str() : nullptr); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  void set(const char* value) const {
    if (value != nullptr) {
      setenv(name_, value, 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::string saved_;
  bool had_ = false;
};

std::string describe(WeightType t, int64_t rows, int64_t cols, const GemvLaunchInfo& info) {
  return std::string(weight_traits(t).name) + " " + std::to_string(rows) + "x" +
         std::to_string(cols) + " " + info.kernel +
         " splits=" + std::to_string(info.column_splits) + " grid=" + std::to_string(info.grid) +
         " tasks=" + std::to_string(info.tasks);
}

/// The plain part of a GEMV's arguments: type, shape, weights, x and y (device buffers).
GemvParams plain_params(WeightType t, int64_t rows, int64_t cols, const DeviceBuffer& w,
                        const DeviceBuffer& x, const DeviceBuffer& y) {
  GemvParams p;
  p.type = t;
  p.w = w.get();
  p.rows = rows;
  p.cols = cols;
  p.x = x.data<float>();
  p.y = y.data<float>();
  return p;
}

/// Captures what `enqueue` issues on `stream` into a graph, launches it once and waits for it.
void replay_once(const CudaStream& stream, const std::function<void(cudaStream_t)>& enqueue) {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  DB_CUDA_CHECK(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal));
  enqueue(stream.get());
  DB_CUDA_CHECK(cudaStreamEndCapture(stream.get(), &graph));
  DB_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  DB_CUDA_CHECK(cudaGraphLaunch(exec, stream.get()));
  stream.synchronize();
  DB_CUDA_CHECK(cudaGraphExecDestroy(exec));
  DB_CUDA_CHECK(cudaGraphDestroy(graph));
}

/// x' residue of the kernels that read x' pre-split (stream, tiled, stream-tiled): they use its
/// first two 7-bit digits (gemv_digits.cuh), which leave at most 2^-13 of each 32-column tile's
/// largest |x'| (x_split.cuh: the first digit's unit is at most 2^-5 of it, the second's 2^-12,
/// and the second digit is rounded to the nearest).
constexpr double kSplitResidue = 0x1p-13;

/// Whether the GEMV that `info` describes multiplies by two digits of a pre-split x' (variants 4
/// "stream", 5 "tiled", 7 "stream-tiled"; the mma kernels 3 and 6 keep three or four).
bool two_digit_kernel(const GemvLaunchInfo& info) {
  return info.variant == 4 || info.variant == 5 || info.variant == 7;
}

/// Clears the codes (qs, and qh where the type has it) of every block in `bytes`.
template <typename Block>
void clear_codes(std::vector<uint8_t>& bytes) {
  auto* b = reinterpret_cast<Block*>(bytes.data());
  for (size_t i = 0; i < bytes.size() / sizeof(Block); ++i) {
    std::memset(b[i].qs, 0, sizeof(b[i].qs));
    if constexpr (requires { b[i].qh; }) std::memset(b[i].qh, 0, sizeof(b[i].qh));
  }
}

/// The part of each weight that the kernels multiply by x' digits: w itself, or for the types
/// with a block minimum (Q4_1, Q5_1, Q4_K, Q5_K) w − m, m the value its block gives code 0 (the
/// minimum term is multiplied by the exact Σx', not by digits).
std::vector<float> digit_weights(WeightType t, const Matrix& m, int64_t rows, int64_t cols) {
  std::vector<uint8_t> zero = m.bytes;
  switch (t) {
    case WeightType::kQ4_1:
      clear_codes<quant::BlockQ4_1>(zero);
      break;
    case WeightType::kQ5_1:
      clear_codes<quant::BlockQ5_1>(zero);
      break;
    case WeightType::kQ4_K:
      clear_codes<quant::BlockQ4_K>(zero);
      break;
    case WeightType::kQ5_K:
      clear_codes<quant::BlockQ5_K>(zero);
      break;
    default:
      return m.deq;
  }
  std::vector<float> w(m.deq.size());
  const int64_t rb = row_bytes(t, cols);
  for (int64_t r = 0; r < rows; ++r) {
    quant::dequantize_row(t, zero.data() + r * rb, w.data() + r * cols, cols);
    for (int64_t c = 0; c < cols; ++c) w[r * cols + c] = m.deq[r * cols + c] - w[r * cols + c];
  }
  return w;
}

/// CPU reference of one GEMV on x' (dot_row per row) and each row's tolerance: 1e-5·Σ|w·x'| (+
/// |bias| + |residual|) + 1e-6, and with `presplit` (a two-digit kernel) also
/// kSplitResidue·Σ_c |w'[r][c]|·M(c), w' = digit_weights, M(c) the largest |x'| of c's 32-column
/// tile: the worst case of the digits' residue.
void reference(WeightType t, const Matrix& m, int64_t rows, int64_t cols,
               const std::vector<float>& xp, const float* bias, const float* residual,
               bool presplit, std::vector<float>* want, std::vector<double>* tol) {
  want->assign(static_cast<size_t>(rows), 0.0f);
  tol->assign(static_cast<size_t>(rows), 0.0);
  std::vector<double> tile_max(static_cast<size_t>(cols), 0.0);
  for (int64_t c0 = 0; c0 < cols; c0 += 32) {
    double mx = 0.0;
    for (int64_t c = c0; c < std::min(c0 + 32, cols); ++c)
      mx = std::max(mx, double{std::fabs(xp[c])});
    for (int64_t c = c0; c < std::min(c0 + 32, cols); ++c) tile_max[c] = mx;
  }
  const std::vector<float> dw = presplit ? digit_weights(t, m, rows, cols) : std::vector<float>();
  const int64_t rb = row_bytes(t, cols);
  for (int64_t r = 0; r < rows; ++r) {
    float v = quant::dot_row(t, m.bytes.data() + r * rb, xp.data(), cols);
    double a = 0.0, s = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      a += std::fabs(double{m.deq[r * cols + c]}) * std::fabs(xp[c]);
      if (presplit) s += std::fabs(double{dw[r * cols + c]}) * tile_max[c];
    }
    if (bias != nullptr) {
      v += bias[r];
      a += std::fabs(bias[r]);
    }
    if (residual != nullptr) {
      v += residual[r];
      a += std::fabs(residual[r]);
    }
    (*want)[r] = v;
    (*tol)[r] = 1e-5 * a + 1e-6 + (presplit ? kSplitResidue * s : 0.0);
  }
}

/// The kernel that reads tiled weights when variant 5, 6 or 7 is asked for: the tiled-mma kernel
/// walks rows in steps of 4 tiles (128 columns), other rows fall back to the tiled kernel; the
/// stream-tiled kernel runs on sm_90 (bulk copies), else the tiled one.
const char* tiled_kernel_name(int variant, int64_t cols) {
  if (variant == 7) {
    int major = 0;
    DB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
    return major >= 9 ? "stream-tiled" : "tiled";
  }
  return variant == 6 && cols % 128 == 0 ? "tiled-mma" : "tiled";
}

/// Runs one GEMV and checks it. `x_offset`/`w_offset` (in floats / bytes) shift the input
/// pointers off 16-byte alignment to exercise the fallback.
void check_gemv(WeightType t, int64_t rows, int64_t cols, bool with_bias, bool with_residual,
                int x_offset = 0, int w_offset = 0, int variant = 0) {
  const uint32_t seed = static_cast<uint32_t>(rows * 7919 + cols * 31 + static_cast<int>(t));
  const Matrix m = make_matrix(t, rows, cols, seed);
  const std::vector<float> x = random_floats(static_cast<size_t>(cols), seed + 1);
  const std::vector<float> bias = random_floats(static_cast<size_t>(rows), seed + 2);
  const std::vector<float> y0 = random_floats(static_cast<size_t>(rows), seed + 3);

  // The tiled kernels (variants 5, 6, 7) read the tiled layout, which only some row lengths
  // have.
  const bool tiled = variant >= 5;
  // Q6_K's tiled layout has one reader, the stream-tiled kernel (sm_90, matrix end 16-byte
  // aligned): where it cannot take the matrix, tiled weights are refused too.
  int major = 0;
  DB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  const bool no_reader = t == WeightType::kQ6_K &&
                         (major < 9 || w_offset % 16 != 0 || rows * row_bytes(t, cols) % 16 != 0);
  if (tiled && (!quant::tiled_layout_supported(t, cols) || no_reader)) {
    GemvParams p;
    p.type = t;
    p.w = reinterpret_cast<const void*>(0x1000 + w_offset);
    p.x_split = reinterpret_cast<const void*>(0x1000);
    p.y = reinterpret_cast<float*>(0x1000);
    p.rows = rows;
    p.cols = cols;
    p.tiled = true;
    EXPECT_THROW(gemv_launch_info(p), Error) << weight_traits(t).name << " " << cols;
    return;
  }
  std::vector<uint8_t> wbytes(static_cast<size_t>(w_offset), 0);
  wbytes.insert(wbytes.end(), m.bytes.begin(), m.bytes.end());
  if (tiled) quant::tile_rows(t, rows, cols, m.bytes.data(), wbytes.data() + w_offset);
  std::vector<float> xpad(static_cast<size_t>(x_offset), 0.0f);
  xpad.insert(xpad.end(), x.begin(), x.end());
  DeviceBuffer d_w = upload(wbytes);
  DeviceBuffer d_x = upload(xpad);
  DeviceBuffer d_b = upload(bias);
  DeviceBuffer d_y = upload(y0);

  GemvParams p;
  p.type = t;
  p.w = d_w.data<uint8_t>() + w_offset;
  p.rows = rows;
  p.cols = cols;
  p.x = d_x.data<float>() + x_offset;
  p.y = d_y.data<float>();
  p.bias = with_bias ? d_b.data<float>() : nullptr;
  p.residual = with_residual ? d_y.data<float>() : nullptr;  // aliases y: y = W·x + y
  p.variant = variant;
  p.tiled = tiled;
  // The stream and tiled kernels (variants 4-7) read x pre-split.
  const bool split = variant == 4 || tiled;
  DeviceBuffer d_split(split ? gemv_x_split_bytes(cols) : 16);
  if (split) {
    launch_gemv_prepare_x(GemvInput::kPlain, p.x, nullptr, nullptr, 0.0f, cols, d_split.get(),
                          false, nullptr, false);
    p.x_split = d_split.get();
  }
  const GemvLaunchInfo info = gemv_launch_info(p);
  if (tiled) {
    EXPECT_STREQ(info.kernel, tiled_kernel_name(variant, cols)) << describe(t, rows, cols, info);
  }
  if (variant == 4 && w_offset == 0 && rows * row_bytes(t, cols) % 16 == 0) {
    // The stream kernel must really run where its alignment rule holds (sm_90).
    int major = 0;
    DB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
    if (major >= 9) {
      EXPECT_STREQ(info.kernel, "stream") << describe(t, rows, cols, info);
    }
  }
  launch_gemv(p, nullptr);
  testing::sync();
  const std::vector<float> got = download<float>(d_y.get(), static_cast<size_t>(rows));

  std::vector<float> want;
  std::vector<double> tol;
  reference(t, m, rows, cols, x, with_bias ? bias.data() : nullptr,
            with_residual ? y0.data() : nullptr, two_digit_kernel(info), &want, &tol);
  EXPECT_TRUE(all_near(
      got, want, [&](size_t i) { return tol[i]; },
      describe(t, rows, cols, info) + (with_bias ? " +bias" : "") +
          (with_residual ? " +residual" : "")));
}

/// Variants to test for `t`: the automatic choice (0) and every explicit one.
std::vector<int> variants_of(WeightType t) {
  std::vector<int> v{0};
  for (const int id : gemv_variants(t)) v.push_back(id);
  return v;
}

class GemvAllTypes : public ::testing::TestWithParam<WeightType> {};

// Shapes: single row, rows not a multiple of 2 (rows per warp), 8 (warps), or the grid; rows long
// enough for many pipeline chunks (18944 = Qwen2.5-7B FFN); few rows × long rows (column splits);
// many rows × short rows (one chunk per warp).
TEST_P(GemvAllTypes, MatchesCpuReference) {
  DB_REQUIRE_CUDA();
  const WeightType t = GetParam();
  // 5×2048 and 67×4096: odd rows whose matrix end is 16-byte aligned for every type (Q6_K too),
  // so the stream kernel's clamped last task runs.
  const struct {
    int64_t rows, cols;
  } shapes[] = {{1, 256},    {3, 768},    {17, 2816}, {130, 256}, {1031, 2816}, {5, 18944},
                {67, 18944}, {2500, 512}, {9, 4352},  {5, 2048},  {67, 4096}};
  for (const int v : variants_of(t)) {
    for (const auto& s : shapes) check_gemv(t, s.rows, s.cols, false, false, 0, 0, v);
  }
}

TEST_P(GemvAllTypes, BiasAndResidual) {
  DB_REQUIRE_CUDA();
  const WeightType t = GetParam();
  for (const int v : variants_of(t)) {
    check_gemv(t, 97, 1024, true, false, 0, 0, v);
    check_gemv(t, 97, 1024, false, true, 0, 0, v);
    check_gemv(t, 33, 2816, true, true, 0, 0, v);
  }
}

TEST_P(GemvAllTypes, UnalignedPointersUseFallback) {
  DB_REQUIRE_CUDA();
  const WeightType t = GetParam();
  // x off 16-byte alignment; w off by 2 bytes (every type's blocks are 2-byte aligned; F32
  // needs 4).
  const int w_off = t == WeightType::kF32 ? 4 : 2;
  check_gemv(t, 19, 512, true, true, /*x_offset=*/1, /*w_offset=*/0);
  check_gemv(t, 19, 512, false, false, /*x_offset=*/0, w_off);
}

INSTANTIATE_TEST_SUITE_P(Types, GemvAllTypes, ::testing::ValuesIn(kAllWeightTypes),
                         [](const ::testing::TestParamInfo<WeightType>& info) {
                           return std::string(weight_traits(info.param).name);
                         });

// Row lengths that are not multiples of 256: legacy block types and float types.
TEST(Gemv, ShortAndOddRows) {
  DB_REQUIRE_CUDA();
  for (WeightType t : {WeightType::kQ8_0, WeightType::kQ4_0, WeightType::kQ4_1, WeightType::kQ5_0,
                       WeightType::kQ5_1, WeightType::kF32, WeightType::kF16, WeightType::kBF16}) {
    for (const int v : variants_of(t)) {
      check_gemv(t, 14, 896, false, false, 0, 0, v);  // Qwen2-0.5B hidden size
      check_gemv(t, 3, 32, false, false, 0, 0, v);
      check_gemv(t, 40, 4864, true, false, 0, 0, v);
      check_gemv(t, 576, 576, false, true, 0, 0, v);  // SmolLM2: rows not 16-byte multiples
    }
  }
  // The stream kernel's one copy per task of two rows 8 bytes past a 16-byte multiple (b131ecb):
  // rows of 504 (Q4_0, 896 columns), 360 (Q4_1, 576), 72 (Q5_1, 96), 952 (Q8_0, 896) and 840
  // bytes (Q6_K, 1024); 8,192 Q4_1 rows give every warp slot of 132 SMs several tasks (stages
  // refilled, rows advanced), and Q4_0's 128 columns (4 tiles) a split last pass, lanes 16-31 on
  // row 1 at 8 bytes past a boundary. The per-warp form with DECODEBENCH_GEMV_RING_GGUF=0, then the
  // default (the ring on the 32-column GGUF blocks since round 44, but not on Q8_0 rows of 768
  // bytes or more in matrices under 65,536 rows since rounds 45 and 46), then 1: every case runs
  // the ring. Q6_K's 840-byte rows are not in 32-column GGUF blocks: DECODEBENCH_GEMV_RING_Q6_K
  // sets their form, 0 in the first pass and unset in the others (since round 51 Q6_K groups of 16
  // rows that are 16-byte multiples take the ring, where every other row of a slot starts 8 bytes
  // past a 16-byte boundary).
  int major = 0;
  DB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  PlanningBuffers bufs(1024);
  const ScopedEnv ring_env("DECODEBENCH_GEMV_RING", nullptr);
  const ScopedEnv q6_k_env("DECODEBENCH_GEMV_RING_Q6_K", nullptr);
  const ScopedEnv gguf_env("DECODEBENCH_GEMV_RING_GGUF", nullptr);
  for (const char* gguf : {"0", "", "1"}) {
    SCOPED_TRACE(std::string("DECODEBENCH_GEMV_RING_GGUF=") + gguf);
    gguf_env.set(gguf);
    q6_k_env.set(*gguf == '0' ? "0" : nullptr);
    for (const auto& [t, rows, cols, by_default] :
         std::vector<std::tuple<WeightType, int64_t, int64_t, const char*>>{
             {WeightType::kQ4_0, 64, 896, "ring"},
             {WeightType::kQ4_1, 8192, 576, "ring"},
             {WeightType::kQ5_1, 64, 96, "ring"},
             {WeightType::kQ8_0, 64, 896, "per-warp"},
             {WeightType::kQ6_K, 32, 1024, "ring"},
             {WeightType::kQ4_0, 64, 128, "ring"}}) {
      ASSERT_EQ(row_bytes(t, cols) % 16, 8) << weight_traits(t).name << " " << cols;
      if (major >= 9) {
        GemvParams q = bufs.params(t);
        q.rows = rows;
        q.cols = cols;
        q.variant = 4;
        const char* form = *gguf == '0' ? "per-warp" : *gguf == '1' ? "ring" : by_default;
        EXPECT_STREQ(gemv_launch_info(q).form, form)
            << describe(t, rows, cols, gemv_launch_info(q));
      }
      check_gemv(t, rows, cols, true, false, 0, 0, 4);
      check_gemv(t, rows, cols, false, true, 0, 0, 4);
    }
  }
  // Float types with cols % 4 != 0 take the fallback.
  for (WeightType t : {WeightType::kF32, WeightType::kF16, WeightType::kBF16}) {
    check_gemv(t, 11, 101, true, true);
    check_gemv(t, 2, 6, false, false);
  }
}

// The staged kernel copies a plain x of up to 12,288 floats into shared memory after its staging
// buffers (cols · 4 bytes rounded up to 16, plus 128 of scratch; docs/performance.md, round 17:
// the SmolLM2 step's o and down projections) and reads a longer one from global memory.
TEST(Gemv, StagedKernelCopiesShortPlainInputsToSharedMemory) {
  DB_REQUIRE_CUDA();
  DeviceBuffer w(1 << 20), x(1 << 16), y(1 << 16);
  const auto smem = [&](int64_t cols) {
    GemvParams p = plain_params(WeightType::kQ4_1, 576, cols, w, x, y);
    p.variant = 1;  // staged
    const GemvLaunchInfo info = gemv_launch_info(p);
    EXPECT_STREQ(info.kernel, "staged");
    return info.smem_bytes;
  };
  const int base = smem(12320);  // past the limit: no x' region
  EXPECT_EQ(smem(576), base + 576 * 4 + 128);
  EXPECT_EQ(smem(1536), base + 1536 * 4 + 128);
  EXPECT_EQ(smem(12288), base + 12288 * 4 + 128);
}

TEST(Gemv, LaunchInfoPicksStagedPathAndSplits) {
  DB_REQUIRE_CUDA();
  GemvParams p;
  DeviceBuffer w(1 << 20), x(1 << 16), y(1 << 16);
  p.type = WeightType::kQ4_K;
  p.w = w.get();
  p.x = x.data<float>();
  p.y = y.data<float>();
  p.rows = 4;
  p.cols = 16384;
  GemvLaunchInfo info = gemv_launch_info(p);
  EXPECT_TRUE(info.staged);
  EXPECT_GT(info.column_splits, 1) << "few rows with long rows should split the columns";
  p.rows = 100000;
  p.cols = 256;
  info = gemv_launch_info(p);
  EXPECT_EQ(info.column_splits, 1);
  p.x = x.data<float>() + 1;
  EXPECT_FALSE(gemv_launch_info(p).staged);
}

// ---- fused forms -------------------------------------------------------------------------------

/// Types with a fast kernel (all of them; "direct" or "mma").
class GemvFused : public ::testing::TestWithParam<WeightType> {};

enum class Form { kRmsNorm, kSwiGlu, kPreSplitPlain, kPreSplitRms, kPreSplitSwiGlu };

const char* form_name(Form f) {
  switch (f) {
    case Form::kRmsNorm:
      return "rmsnorm";
    case Form::kSwiGlu:
      return "swiglu";
    case Form::kPreSplitPlain:
      return "presplit";
    case Form::kPreSplitRms:
      return "presplit-rmsnorm";
    case Form::kPreSplitSwiGlu:
      return "presplit-swiglu";
  }
  return "?";
}

/// y = W·x' + bias + residual with x' formed on the GPU (fused or pre-split) against the CPU
/// reference on x' from cpu::rms_norm / cpu::swiglu. Tolerance as above, on Σ|w·x'|: the GPU's
/// x' differs from the CPU's by a few ulp (sum-of-squares order, device expf).
void check_fused(WeightType t, int64_t rows, int64_t cols, Form form, bool pdl, int variant) {
  const bool quant = weight_traits(t).block_elems >= 32;
  const bool presplit =
      form == Form::kPreSplitPlain || form == Form::kPreSplitRms || form == Form::kPreSplitSwiGlu;
  if (presplit && !quant) return;  // pre-split x is for the quantized (mma) kernel
  // The tiled kernels (variants 5, 6, 7): pre-split forms on tiled weights of the row lengths
  // that have a tiled layout.
  const bool tiled = variant >= 5;
  if (tiled && (!presplit || !quant::tiled_layout_supported(t, cols))) return;
  // Q6_K's tiled layout has one reader, the stream-tiled kernel: where it cannot take the matrix
  // (before sm_90, or a matrix end off 16-byte alignment), tiled Q6_K weights are refused.
  if (tiled && t == WeightType::kQ6_K && !gemv_tiled_layout_supported(t, rows, cols)) return;
  const uint32_t seed = static_cast<uint32_t>(rows * 131 + cols * 7 + static_cast<int>(t));
  const Matrix m = make_matrix(t, rows, cols, seed);
  const std::vector<float> x = random_floats(static_cast<size_t>(cols), seed + 1, -3.0f, 3.0f);
  const std::vector<float> x2 = random_floats(static_cast<size_t>(cols), seed + 2, -2.0f, 2.0f);
  const std::vector<float> nw = random_floats(static_cast<size_t>(cols), seed + 3, 0.5f, 1.5f);
  const std::vector<float> bias = random_floats(static_cast<size_t>(rows), seed + 4);
  const std::vector<float> y0 = random_floats(static_cast<size_t>(rows), seed + 5);
  const float eps = 1e-6f;
  GemvInput input = GemvInput::kPlain;
  std::vector<float> xp(static_cast<size_t>(cols));
  if (form == Form::kRmsNorm || form == Form::kPreSplitRms) {
    input = GemvInput::kRmsNorm;
    cpu::rms_norm(x.data(), nw.data(), xp.data(), cols, eps);
  } else if (form == Form::kSwiGlu || form == Form::kPreSplitSwiGlu) {
    input = GemvInput::kSwiGlu;
    cpu::swiglu(x.data(), x2.data(), xp.data(), cols);
  } else {
    xp = x;
  }
  std::vector<uint8_t> wbytes = m.bytes;
  if (tiled) quant::tile_rows(t, rows, cols, m.bytes.data(), wbytes.data());
  DeviceBuffer d_w = upload(wbytes);
  DeviceBuffer d_x = upload(x);
  DeviceBuffer d_x2 = upload(x2);
  DeviceBuffer d_nw = upload(nw);
  DeviceBuffer d_b = upload(bias);
  DeviceBuffer d_y = upload(y0);
  DeviceBuffer d_split(presplit ? gemv_x_split_bytes(cols) : 16);
  if (presplit) {
    launch_gemv_prepare_x(input, d_x.data<float>(),
                          input == GemvInput::kSwiGlu ? d_x2.data<float>() : nullptr,
                          input == GemvInput::kRmsNorm ? d_nw.data<float>() : nullptr, eps, cols,
                          d_split.get(), pdl, nullptr, (seed & 1u) != 0);  // both trigger places
  }
  GemvParams p = plain_params(t, rows, cols, d_w, d_x, d_y);
  p.bias = d_b.data<float>();
  p.residual = d_y.data<float>();
  p.input = input;
  p.x2 = d_x2.data<float>();
  p.norm_w = d_nw.data<float>();
  p.eps = eps;
  p.x_split = presplit ? d_split.get() : nullptr;
  p.pdl = pdl;
  p.variant = variant;
  p.tiled = tiled;
  const GemvLaunchInfo info = gemv_launch_info(p);
  if (tiled) {
    EXPECT_STREQ(info.kernel, tiled_kernel_name(variant, cols));
  }
  launch_gemv(p, nullptr);
  testing::sync();
  const std::vector<float> got = download<float>(d_y.get(), static_cast<size_t>(rows));
  std::vector<float> want;
  std::vector<double> tol;
  reference(t, m, rows, cols, xp, bias.data(), y0.data(), two_digit_kernel(info), &want, &tol);
  EXPECT_TRUE(all_near(
      got, want, [&](size_t i) { return tol[i]; },
      describe(t, rows, cols, info) + " " + form_name(form) + (pdl ? " pdl" : "")));
}

TEST_P(GemvFused, RmsNormSwiGluAndPreSplitInputs) {
  DB_REQUIRE_CUDA();
  const WeightType t = GetParam();
  const bool kquant = weight_traits(t).block_elems == 256;
  for (const int v : variants_of(t)) {
    for (const Form f : {Form::kRmsNorm, Form::kSwiGlu, Form::kPreSplitPlain, Form::kPreSplitRms,
                         Form::kPreSplitSwiGlu}) {
      // Pre-split x: the automatic choice, mma (3), stream (4) and the tiled kernels (5, 6, 7);
      // stream and tiled need a split x.
      const bool split_form = f >= Form::kPreSplitPlain;
      if (split_form ? (v != 0 && v < 3) : v >= 4) continue;
      check_fused(t, 100, kquant ? 768 : 576, f, false, v);  // SmolLM2 hidden
      check_fused(t, 257, 3584, f, true, v);                 // Qwen2.5-7B hidden, PDL
      check_fused(t, 40, kquant ? 4864 : 1536, f, false, v);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, GemvFused, ::testing::ValuesIn(kAllWeightTypes),
                         [](const ::testing::TestParamInfo<WeightType>& info) {
                           return std::string(weight_traits(info.param).name);
                         });

TEST(Gemv, PreSplitMatchesCpuOnPeakyAndTinyInputs) {
  DB_REQUIRE_CUDA();
  // One huge value per 32-column tile and tiles of tiny values: the digit split is relative to
  // each tile's maximum. The automatic kernel (the mma kernel's own split) and, on a pre-split
  // x', the stream (4) and stream-tiled (7) kernels, whose two digits leave the most there.
  const int64_t rows = 48, cols = 512;
  int major = 0;
  DB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  for (const WeightType t :
       {WeightType::kQ4_0, WeightType::kQ4_1, WeightType::kQ8_0, WeightType::kQ6_K}) {
    const Matrix m = make_matrix(t, rows, cols, 99);
    std::vector<float> x = random_floats(static_cast<size_t>(cols), 98);
    for (int64_t c = 0; c < cols; c += 32) x[static_cast<size_t>(c + 7)] = 3000.0f;
    for (int64_t c = 64; c < 96; ++c) x[static_cast<size_t>(c)] *= 1e-30f;
    for (int64_t c = 96; c < 128; ++c) x[static_cast<size_t>(c)] = 0.0f;
    for (const int variant : {0, 4, 7}) {
      const bool tiled = variant == 7;
      if (tiled && !quant::tiled_layout_supported(t, cols)) continue;
      if (tiled && t == WeightType::kQ6_K && !gemv_tiled_layout_supported(t, rows, cols)) continue;
      std::vector<uint8_t> wbytes = m.bytes;
      if (tiled) quant::tile_rows(t, rows, cols, m.bytes.data(), wbytes.data());
      DeviceBuffer d_w = upload(wbytes);
      DeviceBuffer d_x = upload(x);
      DeviceBuffer d_y(static_cast<size_t>(rows) * 4);
      DeviceBuffer d_split(variant >= 4 ? gemv_x_split_bytes(cols) : 16);
      GemvParams p = plain_params(t, rows, cols, d_w, d_x, d_y);
      p.variant = variant;
      p.tiled = tiled;
      if (variant >= 4) {
        launch_gemv_prepare_x(GemvInput::kPlain, p.x, nullptr, nullptr, 0.0f, cols, d_split.get(),
                              false, nullptr, false);
        p.x_split = d_split.get();
      }
      const GemvLaunchInfo info = gemv_launch_info(p);
      if (variant >= 4 && major >= 9) {  // the two-digit kernels really run (sm_90)
        EXPECT_STREQ(info.kernel, variant == 4 ? "stream" : tiled_kernel_name(7, cols))
            << describe(t, rows, cols, info);
      }
      launch_gemv(p, nullptr);
      testing::sync();
      std::vector<float> want;
      std::vector<double> tol;
      reference(t, m, rows, cols, x, nullptr, nullptr, two_digit_kernel(info), &want, &tol);
      EXPECT_TRUE(all_near(
          download<float>(d_y.get(), static_cast<size_t>(rows)), want,
          [&](size_t i) { return tol[i]; }, describe(t, rows, cols, info)));
    }
  }
}

TEST(Gemv, StackedRowsGoToTheirSegments) {
  DB_REQUIRE_CUDA();
  // [Wq; Wk; Wv] with a stacked bias: rows [0, 96) → q, [96, 128) → k, [128, 160) → v; and a
  // two-segment [Wgate; Wup].
  for (const WeightType t : {WeightType::kBF16, WeightType::kQ4_1, WeightType::kQ4_K}) {
    const int64_t cols = 512;
    for (const int variant : variants_of(t)) {
      for (const bool three : {true, false}) {
        const int64_t rows = three ? 160 : 128;
        const int64_t e0 = three ? 96 : 64;
        const int64_t e1 = three ? 128 : rows;
        const Matrix m = make_matrix(t, rows, cols, 7);
        const std::vector<float> x = random_floats(static_cast<size_t>(cols), 8);
        const std::vector<float> bias = random_floats(static_cast<size_t>(rows), 9);
        // The tiled kernels (variants 5, 6, 7) read the tiled layout.
        const bool tiled = variant >= 5;
        std::vector<uint8_t> wbytes = m.bytes;
        if (tiled) quant::tile_rows(t, rows, cols, m.bytes.data(), wbytes.data());
        DeviceBuffer d_w = upload(wbytes);
        DeviceBuffer d_x = upload(x);
        DeviceBuffer d_b = upload(bias);
        DeviceBuffer d_q(static_cast<size_t>(e0) * 4);
        DeviceBuffer d_k(static_cast<size_t>(e1 - e0) * 4);
        DeviceBuffer d_v(static_cast<size_t>(std::max<int64_t>(rows - e1, 1)) * 4);
        GemvParams p = plain_params(t, rows, cols, d_w, d_x, d_q);
        p.y1 = d_k.data<float>();
        p.y2 = three ? d_v.data<float>() : nullptr;
        p.y_end0 = e0;
        p.y_end1 = e1;
        p.bias = d_b.data<float>();
        p.variant = variant;
        p.tiled = tiled;
        DeviceBuffer d_split(variant >= 4 ? gemv_x_split_bytes(cols) : 16);
        if (variant >= 4) {  // the stream and tiled kernels read x pre-split
          launch_gemv_prepare_x(GemvInput::kPlain, p.x, nullptr, nullptr, 0.0f, cols, d_split.get(),
                                false, nullptr, false);
          p.x_split = d_split.get();
        }
        const GemvLaunchInfo info = gemv_launch_info(p);
        launch_gemv(p, nullptr);
        testing::sync();
        std::vector<float> got = download<float>(d_q.get(), static_cast<size_t>(e0));
        const std::vector<float> gk = download<float>(d_k.get(), static_cast<size_t>(e1 - e0));
        got.insert(got.end(), gk.begin(), gk.end());
        if (three) {
          const std::vector<float> gv = download<float>(d_v.get(), static_cast<size_t>(rows - e1));
          got.insert(got.end(), gv.begin(), gv.end());
        }
        std::vector<float> want;
        std::vector<double> tol;
        reference(t, m, rows, cols, x, bias.data(), nullptr, two_digit_kernel(info), &want, &tol);
        EXPECT_TRUE(all_near(
            got, want, [&](size_t i) { return tol[i]; },
            describe(t, rows, cols, info) + (three ? " q/k/v segments" : " gate/up segments")));
      }
    }
  }
}

// SwiGLU output of a stacked [Wgate; Wup] (direct kernel for the float types, staged kernel for
// the quantized ones): y[k] = silu(gate_k)·up_k against cpu::swiglu of the CPU's two products,
// on an RMSNorm input; shapes with few row pairs (column split), an odd number of pairs and many
// pairs per CTA. A pre-split x' or an odd row count is not taken.
TEST(Gemv, SwiGluOutputOfStackedGateUp) {
  DB_REQUIRE_CUDA();
  for (const WeightType t :
       {WeightType::kF32, WeightType::kF16, WeightType::kBF16, WeightType::kQ8_0, WeightType::kQ4_1,
        WeightType::kQ5_0, WeightType::kQ4_K, WeightType::kQ6_K}) {
    // Column splits with exact and partial last tasks ({8, 4096}, {13, 4096}), several tasks per
    // CTA ({4000, 1024}, {2700, 8192}), an odd pair count on one split ({37, 512}).
    for (const auto& [half, cols] : std::vector<std::pair<int64_t, int64_t>>{
             {8, 4096}, {13, 4096}, {37, 512}, {1536, 768}, {4000, 1024}, {2700, 8192}}) {
      if (cols % weight_traits(t).block_elems != 0) continue;
      const int64_t rows = 2 * half;
      const Matrix m = make_matrix(t, rows, cols, static_cast<uint32_t>(half + cols));
      const std::vector<float> x = random_floats(static_cast<size_t>(cols), 21);
      const std::vector<float> nw = random_floats(static_cast<size_t>(cols), 22);
      std::vector<float> xn(static_cast<size_t>(cols));
      cpu::rms_norm(x.data(), nw.data(), xn.data(), cols, 1e-6f);
      std::vector<float> prod;
      std::vector<double> tol;
      reference(t, m, rows, cols, xn, nullptr, nullptr, false, &prod, &tol);
      std::vector<float> want(static_cast<size_t>(half));
      cpu::swiglu(prod.data(), prod.data() + half, want.data(), half);
      DeviceBuffer d_w = upload(m.bytes);
      DeviceBuffer d_x = upload(x);
      DeviceBuffer d_nw = upload(nw);
      // 64 floats past the output hold a sentinel: no pair past the end may be stored.
      std::vector<float> init(static_cast<size_t>(half) + 64, -7.0f);
      DeviceBuffer d_y = upload(init);
      GemvParams p = plain_params(t, rows, cols, d_w, d_x, d_y);
      p.input = GemvInput::kRmsNorm;
      p.norm_w = d_nw.data<float>();
      p.eps = 1e-6f;
      p.swiglu_out = true;
      ASSERT_TRUE(gemv_swiglu_out_supported(p));
      const GemvLaunchInfo info = gemv_launch_info(p);
      const bool float_type = weight_traits(t).block_elems == 1;
      EXPECT_STREQ(info.kernel, float_type ? "direct" : "staged");
      launch_gemv(p, nullptr);
      testing::sync();
      std::vector<float> got = download<float>(d_y.get(), init.size());
      for (size_t i = static_cast<size_t>(half); i < init.size(); ++i) {
        ASSERT_EQ(got[i], -7.0f) << describe(t, rows, cols, info) << ": wrote past the output";
      }
      got.resize(static_cast<size_t>(half));
      // Tolerance: the products' bound, carried through silu(g)·u (|d/dg| <= 1.1·|u|, d/du =
      // silu(g)), plus f32 rounding of the result.
      EXPECT_TRUE(all_near(
          got, want,
          [&](size_t k) {
            const double eg = tol[k];
            const double eu = tol[k + static_cast<size_t>(half)];
            const double g = prod[k];
            const double u = prod[k + static_cast<size_t>(half)];
            return 1.1 * std::fabs(u) * eg + std::fabs(g) * eu + 1e-6 * std::fabs(want[k]) + 1e-7;
          },
          describe(t, rows, cols, info) + " SwiGLU output"));
    }
  }
  // A pre-split x' (the stream kernel) or an odd row count: not taken.
  DeviceBuffer d_w(64 * 512 * 2), d_x(512 * 4), d_y(64 * 4), d_split(gemv_x_split_bytes(512));
  GemvParams q;
  q.type = WeightType::kQ4_0;
  q.w = d_w.get();
  q.rows = 64;
  q.cols = 512;
  q.x = d_x.data<float>();
  q.y = d_y.data<float>();
  q.swiglu_out = true;
  EXPECT_TRUE(gemv_swiglu_out_supported(q));
  q.variant = 3;  // the tensor-core kernel does not take it
  EXPECT_FALSE(gemv_swiglu_out_supported(q));
  EXPECT_THROW(launch_gemv(q, nullptr), Error);
  q.variant = 0;
  q.residual = q.y;  // nor a residual
  EXPECT_FALSE(gemv_swiglu_out_supported(q));
  q.residual = nullptr;
  q.x_split = d_split.get();
  EXPECT_FALSE(gemv_swiglu_out_supported(q));
  EXPECT_THROW(launch_gemv(q, nullptr), Error);
  GemvParams f = q;
  f.x_split = nullptr;
  f.type = WeightType::kF16;
  f.rows = 63;
  EXPECT_FALSE(gemv_swiglu_out_supported(f));
}

/// A chain of dependent GEMVs launched with PDL: y1 = W1·x, y2 = W2·y1 + y1 (residual) ...: each
/// kernel reads what the previous one wrote, so a missing dependency wait shows as wrong numbers.
/// Run eagerly and as a captured graph (which must then equal the eager result bit for bit).
// Also the tiled kernels (variant 5, and 6 and 7 where forced), each GEMV's x' split by its own
// kernel just before it (as the decode step runs them): both wait for their predecessor's output
// under PDL.
TEST(Gemv, ProgrammaticDependentLaunchChainEagerAndGraph) {
  DB_REQUIRE_CUDA();
  const struct {
    WeightType t;
    bool tiled;
    int variant;
  } cases[] = {
      {WeightType::kBF16, false, 0}, {WeightType::kQ4_0, false, 0}, {WeightType::kQ6_K, false, 0},
      {WeightType::kQ4_0, true, 5},  {WeightType::kQ8_0, true, 5},  {WeightType::kQ4_K, true, 5},
      {WeightType::kQ4_0, true, 6},  {WeightType::kQ4_1, true, 6},  {WeightType::kQ8_0, true, 6},
      {WeightType::kQ4_0, true, 7},  {WeightType::kQ4_1, true, 7},  {WeightType::kQ8_0, true, 7}};
  for (const auto& [t, tiled, variant] : cases) {
    const int64_t n = 1024;
    constexpr int kSteps = 6;
    std::vector<Matrix> ms;
    std::vector<DeviceBuffer> dw;
    for (int i = 0; i < kSteps; ++i) {
      ms.push_back(make_matrix(t, n, n, 200u + i));
      std::vector<uint8_t> bytes = ms.back().bytes;
      if (tiled) quant::tile_rows(t, n, n, ms.back().bytes.data(), bytes.data());
      dw.push_back(upload(bytes));
    }
    DeviceBuffer d_split(gemv_x_split_bytes(n));
    const std::string what = std::string(weight_traits(t).name) +
                             (tiled ? " " + std::string(gemv_variant_name(variant)) : "");
    const std::vector<float> x = random_floats(static_cast<size_t>(n), 300);
    DeviceBuffer d_a = upload(x);
    DeviceBuffer d_b(static_cast<size_t>(n) * 4);
    DeviceBuffer d_n = upload(std::vector<float>(static_cast<size_t>(n), 1.0f));
    CudaStream stream;
    const auto enqueue = [&](cudaStream_t s) {
      for (int i = 0; i < kSteps; ++i) {
        GemvParams p;
        p.type = t;
        p.w = dw[static_cast<size_t>(i)].get();
        p.rows = n;
        p.cols = n;
        // Even steps: b = W·rmsnorm(a) ; odd steps: a = W·rmsnorm(b) + a (residual in place).
        p.x = i % 2 == 0 ? d_a.data<float>() : d_b.data<float>();
        p.y = i % 2 == 0 ? d_b.data<float>() : d_a.data<float>();
        p.residual = i % 2 == 0 ? nullptr : d_a.data<float>();
        p.input = GemvInput::kRmsNorm;
        p.norm_w = d_n.data<float>();
        p.eps = 1e-6f;
        p.pdl = true;
        if (tiled) {
          // Both places of the split's PDL trigger, in turn (round 35).
          launch_gemv_prepare_x(p.input, p.x, nullptr, p.norm_w, p.eps, n, d_split.get(), true, s,
                                (i / 2) % 2 == 1);
          p.x_split = d_split.get();
          p.tiled = true;
          p.variant = variant;
          EXPECT_STREQ(gemv_launch_info(p).kernel, tiled_kernel_name(variant, n)) << what;
        }
        launch_gemv(p, s);
      }
    };
    // CPU reference.
    std::vector<float> a = x, b(static_cast<size_t>(n)), xn(static_cast<size_t>(n));
    const std::vector<float> ones(static_cast<size_t>(n), 1.0f);
    for (int i = 0; i < kSteps; ++i) {
      std::vector<float>& in = i % 2 == 0 ? a : b;
      std::vector<float>& out = i % 2 == 0 ? b : a;
      cpu::rms_norm(in.data(), ones.data(), xn.data(), n, 1e-6f);
      std::vector<float> want;
      std::vector<double> tol;
      reference(t, ms[static_cast<size_t>(i)], n, n, xn, nullptr, i % 2 == 0 ? nullptr : out.data(),
                false, &want, &tol);  // the chain's own bound is below
      out = want;
    }
    enqueue(stream.get());
    stream.synchronize();
    const std::vector<float> eager = download<float>(d_a.get(), static_cast<size_t>(n));
    // Errors compound over the chain; the bound is loose but far below what a race produces
    // (a stale input changes results by O(1)).
    double scale = 0.0;
    for (const float v : a) scale = std::max(scale, static_cast<double>(std::fabs(v)));
    EXPECT_TRUE(all_near(
        eager, a, [&](size_t) { return 1e-3 * scale + 1e-5; }, what + " PDL chain (eager)"));

    // The same chain captured into a graph, from the same starting values.
    // copy_to_device, not cudaMemcpy: the graph once read d_a before such a copy had landed, while
    // another process shared the GPU (docs/performance.md, round 42).
    copy_to_device(d_a.get(), x.data(), x.size() * 4);
    replay_once(stream, enqueue);
    const std::vector<float> replay = download<float>(d_a.get(), static_cast<size_t>(n));
    EXPECT_TRUE(testing::all_bits_equal(replay, eager, what + " PDL graph"));
  }
}

// A long plain x' (more than 4096 columns: the down projection's input) reaches the direct
// kernel by bulk copies in 8 pieces, each warp waiting only for the pieces of its next batch.
// Plans on 132 SMs (direct_plan): 5×4104, a partial last 512-byte unit, in 2 column splits (F32:
// 8); 6000×4104 in 2 splits, 750 tasks on 264 CTAs (up to 3 per CTA); 8448×4352, 1 split, 2 tasks
// per CTA (F32: a tie between 1 and 2 splits), 17 units in pieces of 3, two empty trailing pieces
// (F32: 34 in pieces of 5, one empty); 7×4352 in 2 splits; 600×18944 in 4 splits with a residual;
// and the 7B down projection itself (3584×18944, 1 split, F16).
TEST(Gemv, DirectKernelLongPlainInputInPieces) {
  DB_REQUIRE_CUDA();
  for (const WeightType t : {WeightType::kF32, WeightType::kF16, WeightType::kBF16}) {
    for (const int v : {0, 2}) {
      check_gemv(t, 5, 4104, false, false, 0, 0, v);
      check_gemv(t, 6000, 4104, true, false, 0, 0, v);
      check_gemv(t, 8448, 4352, false, false, 0, 0, v);
      check_gemv(t, 7, 4352, false, false, 0, 0, v);
      check_gemv(t, 600, 18944, false, true, 0, 0, v);
    }
  }
  check_gemv(WeightType::kF16, 3584, 18944, false, true);
  // The direct kernel is what runs these (not a fallback).
  DeviceBuffer w(1 << 20), x(1 << 17), y(1 << 16);
  GemvParams p = plain_params(WeightType::kF16, 4, 18944, w, x, y);
  EXPECT_STREQ(gemv_launch_info(p).kernel, "direct");
}

/// Launches p on `stream` four times and checks y (p.rows floats) against want within tol (per
/// row, from reference()) each time: eagerly and replayed from a graph, first with `input` (a
/// device buffer that p reads) holding `values`, then NaN until launch_delayed_copy writes `values`
/// there 50 µs after letting the GEMV start. y is zeroed before each launch unless it is `input`
/// itself. `what` names the case; `name` the input in the messages.
void check_input_written_late(const CudaStream& stream, const GemvParams& p,
                              const DeviceBuffer& input, const std::vector<float>& values,
                              const std::vector<float>& want, const std::vector<double>& tol,
                              const std::string& what, const std::string& name) {
  const DeviceBuffer src = upload(values);
  const bool y_is_input = p.y == input.data<float>();
  for (const bool late : {false, true}) {
    const auto enqueue = [&](cudaStream_t s) {
      if (late) launch_delayed_copy(input.get(), src.get(), input.bytes(), 50000, s);
      launch_gemv(p, s);
    };
    for (const bool graph : {false, true}) {
      if (late) {
        fill_device(input.get(), 0xFF, input.bytes());  // NaN
      } else {
        copy_to_device(input.get(), values.data(), input.bytes());
      }
      if (!y_is_input) fill_device(p.y, 0, static_cast<size_t>(p.rows) * 4);
      if (graph) {
        replay_once(stream, enqueue);
      } else {
        enqueue(stream.get());
        stream.synchronize();
      }
      const std::vector<float> got = download<float>(p.y, static_cast<size_t>(p.rows));
      EXPECT_TRUE(all_near(
          got, want, [&](size_t r) { return tol[r]; },
          what + (graph ? " graph" : " eager") +
              (late ? ": " + name + " written late by the preceding kernel"
                    : ": " + name + " in place")));
    }
  }
}

// The long plain x' is written by the preceding kernel: the bulk copies must wait for it (PDL).
// Each case runs first with x in place (which also loads the kernel: a first launch does not
// overlap its predecessor), then with x NaN until launch_delayed_copy writes it 50 µs after
// letting the GEMV start; copies issued before the wait would read the NaN. Eagerly and in a
// replayed graph (the probe checks eager launches; graph replay is assumed to overlap alike).
// The staged kernel's plain x' (copied into shared memory since round 17; Q4_1, 1,536 columns as
// SmolLM2's down projection) is checked the same way, and so is its short RMSNorm x' (576
// columns as SmolLM2's QKV and gate/up GEMVs: one float4 per thread, loaded into a register since
// round 20).
TEST(Gemv, InputsWaitForTheirProducer) {
  DB_REQUIRE_CUDA();
  const CudaStream stream;
  DB_REQUIRE_PDL_OVERLAP(stream);
  const struct {
    WeightType t;
    int64_t cols;
    bool rms;
  } cases[] = {{WeightType::kF16, 4352, false},
               {WeightType::kBF16, 4352, false},
               {WeightType::kQ4_1, 1536, false},
               {WeightType::kQ4_1, 576, true}};
  for (const auto& c : cases) {
    const WeightType t = c.t;
    const bool staged = t == WeightType::kQ4_1;
    const int64_t rows = 64, cols = c.cols;
    const Matrix m = make_matrix(t, rows, cols, 610);
    const std::vector<float> x = random_floats(static_cast<size_t>(cols), 611);
    const std::vector<float> nw = random_floats(static_cast<size_t>(cols), 612, 0.5f, 1.5f);
    const float eps = 1e-6f;
    std::vector<float> xp = x;
    if (c.rms) cpu::rms_norm(x.data(), nw.data(), xp.data(), cols, eps);
    std::vector<float> want;
    std::vector<double> tol;
    reference(t, m, rows, cols, xp, nullptr, nullptr, false, &want, &tol);
    DeviceBuffer d_w = upload(m.bytes);
    const DeviceBuffer d_nw = upload(nw);
    DeviceBuffer d_x(static_cast<size_t>(cols) * 4);
    DeviceBuffer d_y(static_cast<size_t>(rows) * 4);
    GemvParams p = plain_params(t, rows, cols, d_w, d_x, d_y);
    if (c.rms) {
      p.input = GemvInput::kRmsNorm;
      p.norm_w = d_nw.data<float>();
      p.eps = eps;
    }
    p.pdl = true;
    if (staged) p.variant = 1;
    ASSERT_STREQ(gemv_launch_info(p).kernel, staged ? "staged" : "direct");
    check_input_written_late(
        stream, p, d_x, x, want, tol,
        std::string(weight_traits(t).name) + (c.rms ? " RMSNorm x'" : " plain x'"), "x");
  }
}

// The staged kernel reads the residual (or bias) of its rows right after its PDL wait, before
// its dot products (kernels::row_addend), and so does the stream kernel's ring form (the
// stream-tiled cases and Q4_0's 576-byte rows in GGUF blocks, which take the ring by default since
// round 44; the next task's right after each store); the other kernels read it at the store. None
// may read it before the wait: here the residual, which y aliases, is NaN until
// launch_delayed_copy writes it 50 µs after letting the GEMV start. Kernels: staged (Q4_1), direct
// (F16: the SmolLM2 o projection's shape, one task per warp, and 6000×512, several tasks per CTA),
// stream (Q4_0 on a pre-split x, 2400 rows: the ring form, and the per-warp form with
// DECODEBENCH_GEMV_RING_GGUF=0) and stream-tiled (Q8_0; 8,000 rows: 500 groups of 16 rows on at
// most 396 CTAs of its one-slot ring, so the next task's residual is read after a store). Eagerly
// and in a replayed graph, after a run with the residual in place.
TEST(Gemv, ResidualWaitsForItsProducer) {
  DB_REQUIRE_CUDA();
  const CudaStream stream;
  DB_REQUIRE_PDL_OVERLAP(stream);
  int major = 0;
  DB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  const struct {
    WeightType t;
    int64_t rows, cols;
    int variant;
    const char* kernel;
    const char* form = nullptr;  ///< the stream kernels' form; "per-warp": with RING_GGUF=0
  } cases[] = {{WeightType::kF16, 576, 576, 2, "direct"},
               {WeightType::kF16, 6000, 512, 2, "direct"},
               {WeightType::kQ4_1, 576, 576, 1, "staged"},
               {WeightType::kQ4_0, 2400, 1024, 4, "stream", "ring"},
               {WeightType::kQ4_0, 2400, 1024, 4, "stream", "per-warp"},
               {WeightType::kQ8_0, 600, 3584, 7, "stream-tiled", "ring"},
               {WeightType::kQ8_0, 8000, 3584, 7, "stream-tiled", "ring"}};
  const ScopedEnv ring_env("DECODEBENCH_GEMV_RING", nullptr);
  const ScopedEnv gguf_env("DECODEBENCH_GEMV_RING_GGUF", nullptr);
  for (const auto& c : cases) {
    if (c.variant >= 4 && major < 9) continue;  // the stream kernels need sm_90
    const bool per_warp = c.form != nullptr && std::string(c.form) == "per-warp";
    gguf_env.set(per_warp ? "0" : nullptr);
    const bool presplit = c.variant >= 4;
    const bool tiled = c.variant == 7;
    const Matrix m = make_matrix(c.t, c.rows, c.cols, 620);
    const std::vector<float> x = random_floats(static_cast<size_t>(c.cols), 621);
    const std::vector<float> y0 = random_floats(static_cast<size_t>(c.rows), 622);
    std::vector<float> want;
    std::vector<double> tol;
    reference(c.t, m, c.rows, c.cols, x, nullptr, y0.data(), c.variant >= 4, &want, &tol);
    std::vector<uint8_t> wbytes = m.bytes;
    if (tiled) quant::tile_rows(c.t, c.rows, c.cols, m.bytes.data(), wbytes.data());
    const DeviceBuffer d_w = upload(wbytes);
    const DeviceBuffer d_x = upload(x);
    DeviceBuffer d_y(static_cast<size_t>(c.rows) * 4);
    DeviceBuffer d_split(presplit ? gemv_x_split_bytes(c.cols) : 16);
    if (presplit) {
      launch_gemv_prepare_x(GemvInput::kPlain, d_x.data<float>(), nullptr, nullptr, 0.0f, c.cols,
                            d_split.get(), false, nullptr, false);
      testing::sync();
    }
    GemvParams p = plain_params(c.t, c.rows, c.cols, d_w, d_x, d_y);
    p.residual = d_y.data<float>();  // y = W·x + y
    p.x_split = presplit ? d_split.get() : nullptr;
    p.tiled = tiled;
    p.variant = c.variant;
    p.pdl = true;
    const std::string what = std::string(weight_traits(c.t).name) + " " + c.kernel + " " +
                             (c.form != nullptr ? std::string(c.form) + " " : "") +
                             std::to_string(c.rows) + "x" + std::to_string(c.cols);
    ASSERT_STREQ(gemv_launch_info(p).kernel, c.kernel) << what;
    if (c.form != nullptr) {
      ASSERT_STREQ(gemv_launch_info(p).form, c.form) << what;
    }
    check_input_written_late(stream, p, d_y, y0, want, tol, what, "residual");
  }
}

// The stream kernel's copy of a pre-split x (gemv_impl.cuh), in groups of 32 tiles of 3712
// bytes: digit n, half h of tile j = 32g + l at g·3712 + (2n + h)·512 + l·16, plane p at g·3712 +
// 3072 + p·128 + l·4. Checked against x itself: f_1 and three digits rebuild each x'[c] to within
// 2^-19 of its tile's largest |x'|, and the planes hold the digit sums. 1120 columns: two CTAs of
// the split kernel, 35 tiles (a partial second group).
// The tiled kernel (weights in the tiled layout, x' pre-split) on the shapes that exercise its
// work split: a last pass of at most 16 tiles shared by the two rows (256 columns: 8 tiles; 3584:
// 3.5 passes; 18944: 18.5), passes of 17-31 tiles (768, 2816: lanes idle), one row, odd rows,
// few long rows (several warps split the columns), many short rows (two tasks per CTA), the 7B
// q/o shape, bias and a residual; the 7B QKV shape (4,608 rows: 4 column splits and 4-5 tasks per
// CTA on 132 SMs, so batches cross tasks under a split; TiledPlan below) and 1200×18944 (2
// splits of 19 passes). The same for the tiled-mma kernel (variant 6: 16-row tasks, so rows
// not a multiple of 16 clamp the last task; steps of 4 tiles in groups of 32), and the stream-tiled
// kernel (variant 7: pieces of 4096 (4-bit) or 1024 (Q8_0) columns copied into shared memory, so
// rows of several pieces, a row's last group of 8, 16 or 24 tiles, a split last pass and column
// splits). Q4_1 rows of 384, 640 and 896 columns end in groups of 12, 20 and 28 tiles (the other
// types have no tiled layout there: refused).
TEST(Gemv, TiledKernelMatchesCpuReference) {
  DB_REQUIRE_CUDA();
  const struct {
    int64_t rows, cols;
    bool bias, residual;
  } shapes[] = {{1, 256, false, false},   {2, 3584, false, false},   {37, 3584, true, true},
                {5, 18944, false, true},  {3, 768, false, false},    {129, 2816, true, false},
                {4, 8192, false, false},  {6000, 256, false, false}, {3584, 3584, false, true},
                {600, 4352, true, false}, {4608, 3584, true, false}, {1200, 18944, false, true},
                {3, 384, false, false},   {5, 640, true, false},     {7, 896, false, true}};
  for (const WeightType t :
       {WeightType::kQ4_0, WeightType::kQ4_1, WeightType::kQ8_0, WeightType::kQ4_K}) {
    for (const auto& s : shapes) {
      if (s.cols % weight_traits(t).block_elems != 0) continue;
      check_gemv(t, s.rows, s.cols, s.bias, s.residual, 0, 0, /*variant=*/5);
      if (t != WeightType::kQ4_K) {
        check_gemv(t, s.rows, s.cols, s.bias, s.residual, 0, 0, 6);
        check_gemv(t, s.rows, s.cols, s.bias, s.residual, 0, 0, 7);
      }
    }
  }
}

// The column split of the tiled kernel's planner on 132 SMs at 2 CTAs each (264 resident CTAs;
// host code, no device): every warp of a split gets a pass, and the 7B QKV shape takes 4 splits
// with several tasks per CTA.
TEST(Gemv, TiledPlan) {
  using gemv_impl::plan_column_split;
  const auto qkv = plan_column_split(4608, 4, 3, 264, true);  // 3.5 passes per row
  EXPECT_EQ(qkv.ksplit, 4);
  EXPECT_EQ(qkv.ntasks, 1152);
  EXPECT_EQ(qkv.grid, 264);
  EXPECT_EQ(plan_column_split(37888, 4, 3, 264, true).ksplit, 1);  // gate/up: 9 tasks per CTA
  EXPECT_EQ(plan_column_split(5, 19, 3, 264, true).ksplit, 8);     // 5×18944
  EXPECT_EQ(plan_column_split(16, 1, 3, 264, true).ksplit, 1);     // one pass: no split
  EXPECT_LE(plan_column_split(2, 3, 3, 264, true).ksplit, 2);      // never more splits than passes
}

TEST(Gemv, PreSplitStreamLayoutRebuildsX) {
  DB_REQUIRE_CUDA();
  const int64_t cols = 1120, tiles = cols / 32;
  std::vector<float> x = random_floats(static_cast<size_t>(cols), 77);
  x[5] = 3000.0f;                                         // a peaky tile
  for (int64_t c = 64; c < 96; ++c) x[c] *= 1e-25f;       // a tiny tile
  for (int64_t c = 96; c < 128; ++c) x[c] = 0.0f;         // an empty tile
  for (int64_t c = 128; c < 160; ++c) x[c] = -x[c] * 50;  // a negative, larger tile
  for (int64_t c = 1056; c < 1088; ++c) x[c] *= 7.0f;     // tile 33, in the second group
  DeviceBuffer d_x = upload(x);
  DeviceBuffer d_split(gemv_x_split_bytes(cols));
  launch_gemv_prepare_x(GemvInput::kPlain, d_x.data<float>(), nullptr, nullptr, 0.0f, cols,
                        d_split.get(), false, nullptr, false);
  testing::sync();
  const std::vector<int8_t> all = download<int8_t>(d_split.get(), gemv_x_split_bytes(cols));
  const int8_t* stream = all.data() + 4 * (cols + 16) + tiles * 48;
  const auto digit = [&](int64_t j, int n, int c) {
    return stream[j / 32 * 3712 + (2 * n + c / 16) * 512 + j % 32 * 16 + c % 16];
  };
  const auto plane = [&](int64_t j, int p) {
    int32_t v;
    std::memcpy(&v, stream + j / 32 * 3712 + 3072 + p * 128 + j % 32 * 4, 4);
    return v;
  };
  const auto lo16 = [](int32_t v) { return static_cast<int>(static_cast<int16_t>(v & 0xFFFF)); };
  for (int64_t j = 0; j < tiles; ++j) {
    float f1;
    const int32_t f1_bits = plane(j, 0);
    std::memcpy(&f1, &f1_bits, 4);
    float tile_max = 0.0f;
    for (int c = 0; c < 32; ++c) tile_max = std::max(tile_max, std::fabs(x[32 * j + c]));
    int sum[3] = {0, 0, 0}, lo[3] = {0, 0, 0};
    double sx = 0.0;
    for (int c = 0; c < 32; ++c) {
      int d[3];
      for (int n = 0; n < 3; ++n) {
        d[n] = digit(j, n, c);
        sum[n] += d[n];
        if (c < 16) lo[n] += d[n];
      }
      const double rebuilt = static_cast<double>(f1) * (128.0 * d[0] + d[1] + d[2] / 128.0);
      EXPECT_LE(std::fabs(rebuilt - x[32 * j + c]), std::ldexp(tile_max, -19))
          << "tile " << j << " column " << c;
      // The first two digits alone (what the stream and tiled kernels use): kSplitResidue.
      const double two = static_cast<double>(f1) * (128.0 * d[0] + d[1]);
      EXPECT_LE(std::fabs(two - x[32 * j + c]), kSplitResidue * tile_max)
          << "tile " << j << " column " << c << " (two digits)";
      sx += x[32 * j + c];
    }
    EXPECT_EQ(lo16(plane(j, 1)), sum[0]) << "tile " << j;
    EXPECT_EQ(plane(j, 1) >> 16, sum[1]) << "tile " << j;
    EXPECT_EQ(lo16(plane(j, 2)), sum[2]) << "tile " << j;
    EXPECT_EQ(plane(j, 2) >> 16, lo[2]) << "tile " << j;
    EXPECT_EQ(lo16(plane(j, 4)), lo[0]) << "tile " << j;
    EXPECT_EQ(plane(j, 4) >> 16, lo[1]) << "tile " << j;
    float got_sx;
    const int32_t sx_bits = plane(j, 3);
    std::memcpy(&got_sx, &sx_bits, 4);
    EXPECT_NEAR(got_sx, sx, 1e-5 * (std::fabs(sx) + 32 * tile_max)) << "tile " << j;
  }
}

/// Expects gemv_launch_info(p) to refuse each of `values` of the environment variable `name`
/// with an error that quotes it ("NAME: 'value'", exit 2); `name` is unset afterwards.
void expect_values_refused(const char* name, std::initializer_list<const char*> values,
                           const GemvParams& p) {
  for (const char* v : values) {
    setenv(name, v, 1);
    try {
      (void)gemv_launch_info(p);
      ADD_FAILURE() << name << "=" << v << " was taken";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kUsage) << e.what();
      EXPECT_NE(std::string(e.what()).find(std::string(name) + ": '" + v + "'"), std::string::npos)
          << e.what();
    }
  }
  unsetenv(name);
}

/// A GEMV on a pre-split x' with its inputs on the device: a `rows` × `cols` matrix of type `t`
/// from make_matrix(seed) (in the tiled layout when `tiled`), x, bias and y0 from random_floats
/// (seeds + 1, + 2, + 3); `bias` and `residual` (which aliases y: y = W·x + y) as asked. run()
/// restores y0 and returns y after one launch; params is what it launches.
struct PresplitGemv {
  int64_t rows, cols;
  std::vector<float> y0;
  DeviceBuffer d_w, d_x, d_b, d_y, d_split;
  GemvParams params;
  PresplitGemv(WeightType t, int64_t rows_, int64_t cols_, bool tiled, uint32_t seed, bool bias,
               bool residual)
      : rows(rows_), cols(cols_), y0(random_floats(static_cast<size_t>(rows_), seed + 3)) {
    const Matrix m = make_matrix(t, rows, cols, seed);
    std::vector<uint8_t> w = m.bytes;
    if (tiled) quant::tile_rows(t, rows, cols, m.bytes.data(), w.data());
    d_w = upload(w);
    d_x = upload(random_floats(static_cast<size_t>(cols), seed + 1));
    d_b = upload(random_floats(static_cast<size_t>(rows), seed + 2));
    d_y = DeviceBuffer(static_cast<size_t>(rows) * 4);
    d_split = DeviceBuffer(gemv_x_split_bytes(cols));
    launch_gemv_prepare_x(GemvInput::kPlain, d_x.data<float>(), nullptr, nullptr, 0.0f, cols,
                          d_split.get(), false, nullptr, false);
    params.type = t;
    params.w = d_w.data<uint8_t>();
    params.rows = rows;
    params.cols = cols;
    params.x = d_x.data<float>();
    params.y = d_y.data<float>();
    params.bias = bias ? d_b.data<float>() : nullptr;
    params.residual = residual ? d_y.data<float>() : nullptr;
    params.x_split = d_split.get();
    params.tiled = tiled;
  }
  std::vector<float> run() {
    copy_to_device(d_y.get(), y0.data(), y0.size() * 4);
    launch_gemv(params, nullptr);
    testing::sync();
    return download<float>(d_y.get(), static_cast<size_t>(rows));
  }
};

// The stream kernel keeps 32-bit byte offsets within a matrix: from 4 GiB of weights a pre-split
// x goes to the mma kernel instead. Planning only (nothing is launched or read).
TEST(Gemv, StreamKernelTakesMatricesBelow4GiB) {
  DB_REQUIRE_STREAM_KERNEL();
  PlanningBuffers bufs(4096);
  GemvParams p = bufs.params(WeightType::kQ8_0);
  p.cols = 4096;    // 4352 bytes per row
  p.rows = 986895;  // 4,294,967,040 bytes: 256 below 4 GiB
  EXPECT_STREQ(gemv_launch_info(p).kernel, "stream");
  p.rows = 986896;  // 4,294,971,392 bytes
  EXPECT_STREQ(gemv_launch_info(p).kernel, "mma-presplit");
}

// The ring's whole-row form on the 32-column GGUF blocks (docs/performance.md, rounds 43 to 46).
// Planning: by default (DECODEBENCH_GEMV_RING_GGUF unset) SmolLM2's Q4_1 LM head (49,152 rows of
// 360 bytes) runs in groups of 16 rows, each slot 16 bytes longer than its 5,760 bytes (the
// decoders read a word past a row), as do Q4_1 and Q5_0 rows of 2,240 and 2,464 bytes, Q4_0 rows
// under 1 KiB, Q8_0 rows under 768 bytes (748 in, 782 out; Q8_0 in 8 warps of 2 rows: its
// default 4 x 1 x 4 has no GGUF-block kernel) and longer Q8_0 rows in matrices of 65,536 rows or
// more (65,520 out); Q4_0 rows of 2,016 bytes (any row count) and Q8_0 rows of 952 and 1,088 in
// fewer rows keep two rows per task unless the variable is 1, and with 0 every one of them does; a
// requested shape of 4 rows per warp keeps the per-warp form (8 x 2 x 4, 4 x 1 x 4). Results
// against the CPU: those rows (odd rows 8 bytes off a 16-byte boundary; 3,072 groups, so every CTA
// refills its slots many times), Q4_0 rows of 504 (8 bytes off) and 324 bytes (4 off; 1,028 rows: a
// last group of 4), Q5_0 of 396, Q5_1 of 432 and Q8_0 in GGUF blocks of 612 (with the 8 x 2 ring),
// with a bias or a residual, the LM head with other ring shapes (16 x 2, 16 x 1, 8 x 1: one slot),
// the per-warp form (0) on Q5_0 rows of 396 bytes and Q4_1 rows of 2,240, with 1 Q8_0 rows of
// 3,808 bytes (two chunks, the second partial; not the default in 97 rows), and by default 65,536
// Q8_0 rows of 952 bytes (a large vocabulary's LM head).
TEST(Gemv, StreamRingFormOnGgufBlocks) {
  DB_REQUIRE_STREAM_KERNEL();
  const ScopedEnv ring_env("DECODEBENCH_GEMV_RING", nullptr);
  const ScopedEnv max_ctas_env("DECODEBENCH_GEMV_RING_MAX_CTAS", nullptr);
  const ScopedEnv gguf_env("DECODEBENCH_GEMV_RING_GGUF", nullptr);
  PlanningBuffers bufs(3584);
  GemvParams p = bufs.params(WeightType::kQ4_1);
  p.rows = 49152;
  p.cols = 576;
  const GemvLaunchInfo ring = gemv_launch_info(p);
  EXPECT_STREQ(ring.kernel, "stream");
  EXPECT_STREQ(ring.form, "ring");
  EXPECT_EQ(ring.block, 256);
  EXPECT_EQ(ring.tasks, 3072);                           // groups of 16 rows
  EXPECT_EQ(ring.smem_bytes, 2 * (16 * 360 + 16) + 64);  // two padded slots, mbarriers, counters
  gguf_env.set("0");
  EXPECT_EQ(gemv_launch_info(p).tasks, 24576);  // the per-warp form: two rows per task
  gguf_env.set("");
  EXPECT_EQ(gemv_launch_info(p).tasks, 3072);  // empty: the default
  gguf_env.set(nullptr);
  // The default by type, row length and row count (kRingGgufManyRows: 65,536); 1 takes every
  // one, 0 none.
  const struct {
    WeightType t;
    int64_t rows, cols;
    const char* by_default;
  } rules[] = {
      {WeightType::kQ4_0, 4608, 576, "ring"},        {WeightType::kQ4_0, 4608, 1792, "ring"},
      {WeightType::kQ4_0, 4608, 1824, "per-warp"},   {WeightType::kQ4_0, 4608, 3584, "per-warp"},
      {WeightType::kQ4_0, 152064, 3584, "per-warp"}, {WeightType::kQ4_0, 65536, 3584, "per-warp"},
      {WeightType::kQ4_1, 4608, 3584, "ring"},       {WeightType::kQ5_0, 4608, 3584, "ring"},
      {WeightType::kQ5_1, 4608, 3584, "ring"},       {WeightType::kQ8_0, 4608, 576, "ring"},
      {WeightType::kQ8_0, 4608, 704, "ring"},        {WeightType::kQ8_0, 4608, 736, "per-warp"},
      {WeightType::kQ8_0, 4608, 896, "per-warp"},    {WeightType::kQ8_0, 65520, 896, "per-warp"},
      {WeightType::kQ8_0, 65536, 896, "ring"},       {WeightType::kQ8_0, 151936, 896, "ring"},
      {WeightType::kQ8_0, 4608, 1024, "per-warp"},   {WeightType::kQ8_0, 49152, 3584, "per-warp"},
      {WeightType::kQ8_0, 152064, 3584, "ring"}};
  for (const auto& [t, rows, cols, by_default] : rules) {
    SCOPED_TRACE(std::string(weight_traits(t).name) + " " + std::to_string(rows) + "x" +
                 std::to_string(cols));
    GemvParams q = bufs.params(t);
    q.rows = rows;
    q.cols = cols;
    EXPECT_STREQ(gemv_launch_info(q).form, by_default);
    gguf_env.set("1");
    EXPECT_STREQ(gemv_launch_info(q).form, "ring");
    EXPECT_EQ(gemv_launch_info(q).tasks, rows / 16);
    gguf_env.set("0");
    EXPECT_STREQ(gemv_launch_info(q).form, "per-warp");
    EXPECT_EQ(gemv_launch_info(q).tasks, rows / 2);
    gguf_env.set(nullptr);
  }
  ring_env.set("8x2x4");
  EXPECT_EQ(gemv_launch_info(p).tasks, 24576);
  ring_env.set(nullptr);
  GemvParams q8 = bufs.params(WeightType::kQ8_0);
  q8.rows = 4096;
  q8.cols = 576;
  EXPECT_EQ(gemv_launch_info(q8).tasks, 256);  // 8 warps of 2 rows, not its 4 x 1 x 4
  EXPECT_EQ(gemv_launch_info(q8).block, 256);
  EXPECT_EQ(gemv_launch_info(q8).smem_bytes, 2 * (16 * 612 + 16) + 64);
  ring_env.set("4x1x4");  // asked for: no GGUF-block kernel has 4 rows per warp
  EXPECT_EQ(gemv_launch_info(q8).tasks, 2048);
  ring_env.set(nullptr);
  gguf_env.set("0");
  EXPECT_EQ(gemv_launch_info(q8).tasks, 2048);
  gguf_env.set("1");
  EXPECT_EQ(gemv_launch_info(q8).tasks, 256);
  expect_values_refused("DECODEBENCH_GEMV_RING_GGUF", {"2", "on", "1x", "auto"}, p);
  gguf_env.set("1");
  const struct {
    WeightType t;
    int64_t rows, cols;
    const char* ring;
  } shapes[] = {{WeightType::kQ4_1, 49152, 576, nullptr}, {WeightType::kQ4_0, 4096, 896, nullptr},
                {WeightType::kQ4_0, 1028, 576, nullptr},  {WeightType::kQ5_0, 4096, 576, nullptr},
                {WeightType::kQ5_1, 4096, 576, nullptr},  {WeightType::kQ8_0, 4096, 576, "8x2"}};
  for (const auto& [t, rows, cols, form] : shapes) {
    SCOPED_TRACE(std::string(weight_traits(t).name) + " " + std::to_string(rows) + "x" +
                 std::to_string(cols));
    ring_env.set(form);
    GemvParams q = bufs.params(t);
    q.rows = rows;
    q.cols = cols;
    EXPECT_STREQ(gemv_launch_info(q).form, "ring");
    EXPECT_EQ(gemv_launch_info(q).tasks, (rows + 15) / 16);
    check_gemv(t, rows, cols, false, true, 0, 0, 4);
    check_gemv(t, rows, cols, true, false, 0, 0, 4);
  }
  for (const char* form : {"16x2", "16x1", "8x1"}) {
    SCOPED_TRACE(std::string("DECODEBENCH_GEMV_RING=") + form);
    ring_env.set(form);
    EXPECT_STREQ(gemv_launch_info(p).form, "ring");
    check_gemv(WeightType::kQ4_1, 49152, 576, false, true, 0, 0, 4);
  }
  // Q8_0 rows longer than one chunk (2,048 columns) on the ring, which in 97 rows only 1 gives
  // them.
  ring_env.set(nullptr);
  GemvParams long_q8 = bufs.params(WeightType::kQ8_0);
  long_q8.rows = 97;
  long_q8.cols = 3584;
  EXPECT_STREQ(gemv_launch_info(long_q8).form, "ring");
  check_gemv(WeightType::kQ8_0, 97, 3584, true, true, 0, 0, 4);
  // By default, 952-byte Q8_0 rows in a matrix of 65,536 rows (kRingGgufManyRows).
  gguf_env.set(nullptr);
  GemvParams head_q8 = bufs.params(WeightType::kQ8_0);
  head_q8.rows = 65536;
  head_q8.cols = 896;
  EXPECT_STREQ(gemv_launch_info(head_q8).form, "ring");
  check_gemv(WeightType::kQ8_0, 65536, 896, true, false, 0, 0, 4);
  // The per-warp form on blocks the ring takes by default, against the CPU.
  gguf_env.set("0");
  check_gemv(WeightType::kQ5_0, 4096, 576, true, false, 0, 0, 4);
  check_gemv(WeightType::kQ4_1, 1031, 3584, false, true, 0, 0, 4);
}

// The stream kernel's ring form (a CTA-wide ring of shared-memory slots, groups of 16 whole rows
// per bulk copy) takes matrices whose row groups fit two slots: the 7B QKV shape in Q4_K (rows of
// 2,016 bytes, 288 groups) but not its down projection (rows of 10,656 bytes: two slots of 16
// rows would need 341 KB), which keeps the per-warp form (two rows per task). DECODEBENCH_GEMV_RING
// switches it off ("0") or picks another shape; anything else is refused. Both forms match the
// CPU on whole-row shapes with a partial last group (1,031 and 97 rows), the ring also with many
// groups per CTA (slots refilled).
TEST(Gemv, StreamRingFormTakesWholeRowGroupsThatFit) {
  DB_REQUIRE_STREAM_KERNEL();
  const ScopedEnv ring_env("DECODEBENCH_GEMV_RING", nullptr);
  const ScopedEnv ring_long_env("DECODEBENCH_GEMV_RING_LONG", nullptr);
  PlanningBuffers bufs(18944);
  GemvParams p = bufs.params(WeightType::kQ4_K);
  p.rows = 4608;
  p.cols = 3584;
  GemvLaunchInfo ring = gemv_launch_info(p);
  EXPECT_STREQ(ring.kernel, "stream");
  EXPECT_EQ(ring.block, 256);
  EXPECT_EQ(ring.tasks, 288);                      // groups of 16 rows
  EXPECT_EQ(ring.smem_bytes, 2 * 16 * 2016 + 64);  // two slots, mbarriers and counters
  setenv("DECODEBENCH_GEMV_RING", "16x3", 1);
  ring = gemv_launch_info(p);
  EXPECT_EQ(ring.block, 512);
  EXPECT_EQ(ring.tasks, 144);
  EXPECT_EQ(ring.smem_bytes, 3 * 32 * 2016 + 64);
  setenv("DECODEBENCH_GEMV_RING", "0", 1);
  const GemvLaunchInfo per_warp = gemv_launch_info(p);
  EXPECT_EQ(per_warp.tasks, 2304);  // two rows per task
  expect_values_refused("DECODEBENCH_GEMV_RING", {"8", "12x2", "8x5", "8x2x", "on"}, p);
  ring_long_env.set("0");
  p.rows = 3584;
  p.cols = 18944;
  EXPECT_EQ(gemv_launch_info(p).tasks, 1792);  // the down projection: per-warp tasks
  // 8 warps × 2 stages × 2 rows × a 2,352-byte region (16 blocks of 144 bytes and margins),
  // mbarriers, partial sums.
  EXPECT_EQ(gemv_launch_info(p).smem_bytes, 8 * 2 * 2 * 2352 + 8 * 4 * 8 + 2 * 8 * 2 * 4);
  ring_long_env.set(nullptr);
  // Both forms against the CPU (the ring form by default, then the per-warp form). The ring
  // takes the tiled layout (variant 7: Q4_0, Q8_0) and the K-quants in GGUF blocks (variant 4:
  // Q4_K); the 32-column GGUF blocks: Gemv.StreamRingFormOnGgufBlocks.
  const struct {
    WeightType t;
    int variant;
  } forms[] = {{WeightType::kQ4_0, 7}, {WeightType::kQ8_0, 7}, {WeightType::kQ4_K, 4}};
  for (const char* form : {"", "0", "16x2"}) {
    SCOPED_TRACE(std::string("DECODEBENCH_GEMV_RING=") + form);
    setenv("DECODEBENCH_GEMV_RING", form, 1);
    for (const auto& f : forms) {
      check_gemv(f.t, 1031, 2816, false, false, 0, 0, f.variant);
      check_gemv(f.t, 97, 1024, true, true, 0, 0, f.variant);
    }
  }
  // Many groups per CTA, so that slots are refilled (24,000 rows of 3,584 columns: 1,500 groups
  // of 16 rows on at most 396 CTAs), with one slot (every group waits for the previous one's
  // refill) to four.
  for (const char* form : {"8x1", "8x2", "8x4", "16x2"}) {
    SCOPED_TRACE(std::string("DECODEBENCH_GEMV_RING=") + form);
    setenv("DECODEBENCH_GEMV_RING", form, 1);
    for (const auto& f : forms) check_gemv(f.t, 24000, 3584, false, true, 0, 0, f.variant);
  }
  // The per-warp form on the shapes the ring forms now take by default: one-chunk whole rows (5 ×
  // 2,048, 67 × 4,096: the clamped last task), a column split (9 × 4,352) and long rows (67 ×
  // 18,944, the split form's).
  setenv("DECODEBENCH_GEMV_RING", "0", 1);
  for (const auto& f : forms) {
    for (const auto& [rows, cols] :
         {std::pair<int64_t, int64_t>{5, 2048}, {67, 4096}, {9, 4352}, {67, 18944}}) {
      check_gemv(f.t, rows, cols, false, false, 0, 0, f.variant);
    }
  }
}

// The split ring form for rows too long for groups of 16 (the 7B down projection, 18,944 columns):
// groups of 2 · P rows, 8 / P warps on each pair of rows, each a contiguous share of the row's
// passes, their partial sums added by the last warp done with the slot. By default P = 1 with 2
// slots, and Q8_0 keeps the per-warp form (as measured on the H200, round 27);
// DECODEBENCH_GEMV_RING_LONG picks another shape for every type (fewer pairs where the slots do
// not fit) or switches it off, as does DECODEBENCH_GEMV_RING=0. Before each comparison with the CPU
// the plan is checked to be the split form asked for. Every shape matches the CPU on the down
// projection's row length with a partial last group (1,031 rows), with refills (3,584 rows:
// about 7 groups per CTA), on Q6_K rows of 14,336 columns (11,760 bytes) and on Q8_0 rows of 7,168
// columns (7 passes: one warp of each pair has none); repeated launches give the same bits (the
// partial sums are added in a fixed order).
TEST(Gemv, StreamSplitRingFormTakesLongRows) {
  DB_REQUIRE_STREAM_KERNEL();
  const ScopedEnv ring("DECODEBENCH_GEMV_RING", nullptr);
  const ScopedEnv ring_long("DECODEBENCH_GEMV_RING_LONG", nullptr);
  constexpr int kExtra = 64 + 4 * 16 * 2 * 4;  // mbarriers, counters and partial sums
  PlanningBuffers bufs(18944);
  const auto plan = [&](WeightType t, int64_t rows, int64_t cols, bool tiled) {
    return bufs.plan(t, rows, cols, tiled);
  };
  GemvLaunchInfo info = plan(WeightType::kQ4_K, 3584, 18944, false);  // 10,656 bytes per row
  EXPECT_STREQ(info.kernel, "stream");
  EXPECT_STREQ(info.form, "split");
  EXPECT_EQ(info.ring_pairs, 1);
  EXPECT_EQ(info.ring_slots, 2);
  EXPECT_EQ(gemv_form_name(info), "stream split 1x2");
  EXPECT_EQ(info.block, 256);
  EXPECT_EQ(info.tasks, 1792);       // groups of 2 rows
  EXPECT_EQ(info.column_splits, 8);  // warps per pair
  EXPECT_EQ(info.smem_bytes, 2 * 2 * 10656 + kExtra);
  {
    // Q8_0's default: the plan with the split form off (the per-warp form).
    const GemvLaunchInfo q8_default = plan(WeightType::kQ8_0, 3584, 18944, true);
    ring_long.set("0");
    const GemvLaunchInfo q8_off = plan(WeightType::kQ8_0, 3584, 18944, true);
    ring_long.set(nullptr);
    EXPECT_EQ(q8_default.smem_bytes, q8_off.smem_bytes);
    EXPECT_EQ(q8_default.tasks, q8_off.tasks);
    EXPECT_EQ(q8_default.block, q8_off.block);
    EXPECT_EQ(q8_default.column_splits, q8_off.column_splits);
    EXPECT_NE(q8_default.smem_bytes, 2 * 2 * 20128 + kExtra);  // not the split form's
    EXPECT_EQ(gemv_form_name(q8_default), "stream-tiled per-warp");
    EXPECT_EQ(q8_default.ring_slots, 0);
  }
  ring_long.set("2x4");
  info = plan(WeightType::kQ4_K, 3584, 18944, false);
  EXPECT_EQ(info.tasks, 896);
  EXPECT_EQ(info.column_splits, 4);
  EXPECT_EQ(info.smem_bytes, 4 * 4 * 10656 + kExtra);
  EXPECT_EQ(gemv_form_name(info), "stream split 2x4");
  ring_long.set("4x4");  // 341 KB: 2 pairs instead
  EXPECT_EQ(plan(WeightType::kQ4_K, 3584, 18944, false).tasks, 896);
  ring_long.set("2x4");  // Q8_0, 20,128 bytes per row: 322 KB, so 1 pair
  info = plan(WeightType::kQ8_0, 3584, 18944, true);
  EXPECT_EQ(info.tasks, 1792);
  EXPECT_EQ(info.smem_bytes, 4 * 2 * 20128 + kExtra);
  for (const char* off : {"DECODEBENCH_GEMV_RING_LONG", "DECODEBENCH_GEMV_RING"}) {
    SCOPED_TRACE(std::string(off) + "=0");
    ring_long.set(nullptr);
    setenv(off, "0", 1);
    info = plan(WeightType::kQ4_K, 3584, 18944, false);
    EXPECT_EQ(info.smem_bytes, 8 * 2 * 2 * 2352 + 8 * 4 * 8 + 2 * 8 * 2 * 4);  // per-warp form
    EXPECT_STREQ(info.form, "per-warp");
    ring.set(nullptr);
  }
  {
    // Refused on every plan, also where no row is too long for the whole-row form.
    GemvParams p = bufs.params(WeightType::kQ4_K);
    p.rows = 64;
    p.cols = 1024;
    expect_values_refused("DECODEBENCH_GEMV_RING_LONG", {"3x2", "1x5", "1", "2x2x", "on"}, p);
  }
  struct Form {
    WeightType t;
    int variant;
  };
  const Form forms[] = {{WeightType::kQ4_0, 7},
                        {WeightType::kQ8_0, 7},
                        {WeightType::kQ4_K, 4},
                        {WeightType::kQ5_K, 4}};
  // Checks the plan is the split form with `pairs` pairs (2 rows × pairs per group), then runs.
  const auto check_split = [&](const Form& f, int64_t rows, int64_t cols, bool bias, bool residual,
                               int pairs, int slots) {
    const bool tiled = f.variant >= 5;
    const GemvLaunchInfo i = plan(f.t, rows, cols, tiled);
    const int64_t group_bytes = 2 * pairs * row_bytes(f.t, cols);
    EXPECT_EQ(i.column_splits, 8 / pairs) << describe(f.t, rows, cols, i);
    EXPECT_EQ(i.smem_bytes, slots * group_bytes + kExtra) << describe(f.t, rows, cols, i);
    check_gemv(f.t, rows, cols, bias, residual, 0, 0, f.variant);
  };
  const struct {
    const char* env;
    int pairs, slots;  // what the plan takes on the 4-bit types (Q8_0: fewer pairs if needed)
  } shapes[] = {{"", 1, 2},    {"1x1", 1, 1}, {"1x4", 1, 4},
                {"2x2", 2, 2}, {"2x4", 2, 4}, {"4x2", 4, 2}};
  for (const auto& sh : shapes) {
    SCOPED_TRACE(std::string("DECODEBENCH_GEMV_RING_LONG=") + sh.env);
    ring_long.set(sh.env);
    for (const auto& f : forms) {
      if (*sh.env == '\0' && f.t == WeightType::kQ8_0) continue;  // its default: no split form
      int pairs = sh.pairs;
      while (sh.slots * (2 * pairs * row_bytes(f.t, 18944)) + kExtra > 232448) pairs /= 2;
      check_split(f, 1031, 18944, true, true, pairs, sh.slots);
    }
  }
  ring_long.set("1x4");
  for (const auto& f : forms) check_split(f, 3584, 18944, false, true, 1, 4);
  ring_long.set("1x1");
  for (const auto& f : forms) check_split(f, 3584, 18944, false, false, 1, 1);
  ring_long.set(nullptr);
  check_split({WeightType::kQ6_K, 4}, 1031, 14336, true, true, 1, 2);
  // Q8_0 rows of 7,168 columns (7,616 bytes) fit its default ring (16 rows, one slot): the split
  // form is asked for with the 2-row ring, whose two slots of 16 such rows do not fit.
  ring.set("8x2");
  ring_long.set("1x4");
  check_split({WeightType::kQ8_0, 7}, 97, 7168, true, false, 1, 4);
  ring_long.set("2x2");
  check_split({WeightType::kQ8_0, 7}, 97, 7168, false, true, 2, 2);
  ring.set(nullptr);

  // Deterministic: five launches of the default form write the same bits.
  ring_long.set(nullptr);
  for (const Form& f : {forms[0], forms[2]}) {
    PresplitGemv g(f.t, 1031, 18944, f.variant >= 5, 77, false, false);
    g.params.variant = f.variant;
    EXPECT_EQ(gemv_launch_info(g.params).column_splits, 8);
    std::vector<float> first;
    for (int i = 0; i < 5; ++i) {
      const std::vector<float> got = g.run();
      if (i == 0) {
        first = got;
      } else {
        EXPECT_EQ(std::memcmp(got.data(), first.data(), got.size() * 4), 0)
            << weight_traits(f.t).name << " launch " << i << " differs from the first";
      }
    }
  }
}

// Matrices whose whole-row ring groups leave more than an eighth of the SMs idle take the split
// form (round 52): the fewest pairs (from the default 1) that give every warp of a pair a 32-tile
// pass, at most 2 by default, at most P with DECODEBENCH_GEMV_RING_FEW_GROUPS=split:P; "whole"
// keeps the whole-row form, as does a matrix that would need more pairs. Plans are checked by form,
// groups and warps per pair: 1,536 rows (96 groups of 16) of 8,960 columns (1 pair: 768 groups),
// of 1,536 columns (2 passes: 4 pairs, so whole rows by default) and Q6_K rows of 3,584 columns (4
// passes, and 2 rows of 2,940 bytes are no 16-byte multiple: 2 pairs). At the threshold, the
// largest group count under 7/8 of the SMs (Q4_K: under the SMs, round 53; the Qwen2.5-3B down
// projection's 128 groups) splits and one more does not; few-group matrices the
// split form cannot take (one pass per row) keep the whole-row form, and rows too long for the
// whole-row slots keep the split form's own pairs; an asked-for ring shape,
// DECODEBENCH_GEMV_RING_LONG=0 and Q8_0 keep the whole-row form. Each split plan then matches the
// CPU (a partial last group too).
TEST(Gemv, StreamRingFewGroupsTakeTheSplitForm) {
  DB_REQUIRE_STREAM_KERNEL();
  const ScopedEnv ring("DECODEBENCH_GEMV_RING", nullptr);
  const ScopedEnv ring_long("DECODEBENCH_GEMV_RING_LONG", nullptr);
  const ScopedEnv q6_k("DECODEBENCH_GEMV_RING_Q6_K", nullptr);
  ScopedEnv few("DECODEBENCH_GEMV_RING_FEW_GROUPS", nullptr);
  const ScopedEnv per_sm("DECODEBENCH_GEMV_RING_FEW_GROUPS_PER_SM", nullptr);
  int sms = 0;
  DB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  // 96 groups must leave more than an eighth of the SMs idle, and two whole-row slots of 16 rows
  // of 5,040 bytes must fit a CTA's shared memory.
  if (96 * 8 >= 7 * sms) GTEST_SKIP() << "the shapes assume at least 110 SMs, not " << sms;
  int optin = 0;
  DB_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  if (optin < 2 * 16 * 5040 + 64)
    GTEST_SKIP() << "the shapes assume 161,344 bytes of shared memory";
  PlanningBuffers bufs(11008);
  const auto plan = [&](WeightType t, int64_t rows, int64_t cols, bool tiled) {
    return bufs.plan(t, rows, cols, tiled);
  };
  const struct {
    WeightType t;
    bool tiled;
    int64_t rows, cols;
    int pairs;          // in the split form
    const char* whole;  // the whole-row form's name
  } cases[] = {
      {WeightType::kQ4_0, true, 1536, 8960, 1, "stream-tiled ring 8x2x2"},
      {WeightType::kQ4_K, false, 1536, 8960, 1, "stream ring 8x2x2"},
      {WeightType::kQ4_0, true, 1536, 1536, 4, "stream-tiled ring 8x2x2"},
      {WeightType::kQ6_K, true, 1536, 3584, 2, "stream-tiled ring 8x2x2"},
  };
  const struct {
    const char* value;
    int max_pairs;
  } values[] = {{nullptr, 2},   {"", 2},        {"whole", 0},
                {"split:1", 1}, {"split:2", 2}, {"split:4", 4}};
  for (const auto& c : cases) {
    for (const auto& v : values) {
      few.set(v.value);
      const GemvLaunchInfo i = plan(c.t, c.rows, c.cols, c.tiled);
      const std::string what =
          describe(c.t, c.rows, c.cols, i) +
          " DECODEBENCH_GEMV_RING_FEW_GROUPS=" + (v.value == nullptr ? "(unset)" : v.value);
      if (c.pairs <= v.max_pairs) {
        EXPECT_STREQ(i.form, "split") << what;
        EXPECT_EQ(i.ring_pairs, c.pairs) << what;
        EXPECT_EQ(i.column_splits, 8 / c.pairs) << what;
        EXPECT_EQ(i.tasks, c.rows / (2 * c.pairs)) << what;
        EXPECT_EQ(i.ring_slots, 2) << what;
      } else {
        // Q4_0's whole-row form adds its register budget to the name.
        EXPECT_TRUE(gemv_form_name(i).starts_with(c.whole)) << gemv_form_name(i) << " " << what;
        EXPECT_EQ(i.tasks, c.rows / 16) << what;
      }
    }
  }
  few.set("split:4");
  // The threshold: g groups split while 8 · g < 7 · sms; Q4_K's while g < sms (round 53).
  for (const WeightType t : {WeightType::kQ4_0, WeightType::kQ4_K}) {
    const bool tiled = t == WeightType::kQ4_0;
    const int64_t g = t == WeightType::kQ4_K ? sms - 1 : (7 * sms - 1) / 8;
    EXPECT_STREQ(plan(t, 16 * g, 8960, tiled).form, "split") << g << " groups";
    EXPECT_STREQ(plan(t, 16 * (g + 1), 8960, tiled).form, "ring") << g + 1 << " groups";
    EXPECT_STREQ(plan(t, 97, 1024, tiled).form, "ring");  // one pass per row
    // The Qwen2.5-3B shape's down projection (128 groups): split for Q4_K alone where 128 groups
    // lie between 7/8 of the SMs and all of them (132 on an H100 or H200).
    if (8 * 128 >= 7 * sms && 128 < sms && optin >= 2 * 16 * 6192 + 1024) {
      EXPECT_STREQ(plan(t, 2048, 11008, tiled).form, t == WeightType::kQ4_K ? "split" : "ring");
    }
    // Rows too long for two whole-row slots (65 groups of 10,656-byte rows) keep the split form's
    // own rule: 4 pairs when asked for, where the few-group rule would allow 2.
    const ScopedEnv long_env("DECODEBENCH_GEMV_RING_LONG", "4x2");
    few.set(nullptr);
    EXPECT_EQ(plan(t, 1031, 18944, tiled).ring_pairs, 4);
    few.set("split:4");
  }
  // By default, but with a ring shape asked for, or the split form off: the whole-row form; Q8_0
  // (its split form off by default) keeps its own.
  few.set(nullptr);
  {
    const ScopedEnv asked("DECODEBENCH_GEMV_RING", "8x2");
    EXPECT_STREQ(plan(WeightType::kQ4_0, 1536, 8960, true).form, "ring");
  }
  {
    const ScopedEnv long_off("DECODEBENCH_GEMV_RING_LONG", "0");
    EXPECT_STREQ(plan(WeightType::kQ4_0, 1536, 8960, true).form, "ring");
  }
  EXPECT_STREQ(plan(WeightType::kQ4_0, 1536, 8960, true).form, "split");
  EXPECT_EQ(gemv_form_name(plan(WeightType::kQ8_0, 1536, 8960, true)), "stream-tiled ring 4x1x4");
  {
    GemvParams p = bufs.params(WeightType::kQ4_0);
    p.rows = 1536;
    p.cols = 8960;
    p.tiled = true;
    expect_values_refused(
        "DECODEBENCH_GEMV_RING_FEW_GROUPS",
        {"1", "on", "split", "Split:2", "whole ", "split:3", "split:", "split:8", "split2"}, p);
  }
  few.set("split:4");
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(weight_traits(c.t).name) + " " + std::to_string(c.cols) + " columns");
    const int variant = c.tiled ? 7 : 4;
    check_gemv(c.t, c.rows, c.cols, false, true, 0, 0, variant);
    // 1,031 rows: a partial last group of 1,031 mod (2 · pairs) rows; bias and residual.
    // (Q6_K: 1,031 rows of 2,940 bytes would end the matrix off 16-byte alignment.)
    if (c.t == WeightType::kQ6_K) continue;
    EXPECT_STREQ(plan(c.t, 1031, c.cols, c.tiled).form, "split");
    check_gemv(c.t, 1031, c.cols, true, true, 0, 0, variant);
  }
}

// DECODEBENCH_GEMV_RING_FEW_GROUPS_PER_SM moves the few-group threshold (whole-row groups per SM)
// and "split:PxS" gives that split form its own slots: at 3 per SM the 7B shape's q/o (224 groups)
// and QKV (288) take the split form of 2 pairs (3,584 columns: 4 passes, so 4 warps per pair),
// the gate/up GEMV (2,368) does not; the plans then match the CPU.
TEST(Gemv, StreamRingFewGroupsPerSmMovesTheThreshold) {
  DB_REQUIRE_STREAM_KERNEL();
  const ScopedEnv ring("DECODEBENCH_GEMV_RING", nullptr);
  const ScopedEnv ring_long("DECODEBENCH_GEMV_RING_LONG", nullptr);
  ScopedEnv few("DECODEBENCH_GEMV_RING_FEW_GROUPS", nullptr);
  ScopedEnv per_sm("DECODEBENCH_GEMV_RING_FEW_GROUPS_PER_SM", nullptr);
  int sms = 0;
  DB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  // 288 groups under 3 per SM; 224 at least 1 per SM (Q4_K's default threshold).
  if (288 >= 3 * sms || 224 < sms) {
    GTEST_SKIP() << "the shapes assume 97 to 224 SMs, not " << sms;
  }
  PlanningBuffers bufs(18944);
  const auto plan = [&](WeightType t, int64_t rows, bool tiled) {
    return bufs.plan(t, rows, 3584, tiled);
  };
  for (const WeightType t : {WeightType::kQ4_0, WeightType::kQ4_K}) {
    const bool tiled = t == WeightType::kQ4_0;
    const std::string name = weight_traits(t).name;
    // Unset or empty: 224 groups leave no SM idle, so the whole-row form.
    EXPECT_STREQ(plan(t, 3584, tiled).form, "ring") << name;
    per_sm.set("");
    EXPECT_STREQ(plan(t, 3584, tiled).form, "ring") << name;
    per_sm.set(nullptr);
    // The variable sets the threshold of every type: at 0.875 Q4_K's sms - 1 groups keep the
    // whole-row form, which they leave by default.
    if (8 * (sms - 1) >= 7 * sms) {
      EXPECT_STREQ(plan(t, 16 * (sms - 1), tiled).form, t == WeightType::kQ4_K ? "split" : "ring")
          << name;
      per_sm.set("0.875");
      EXPECT_STREQ(plan(t, 16 * (sms - 1), tiled).form, "ring") << name;
      per_sm.set(nullptr);
    }
    per_sm.set("3");
    for (const int64_t rows : {int64_t{3584}, int64_t{4608}}) {
      for (const char* v : {"split:2", "split:2x4", "split:4x1"}) {
        few.set(v);
        const GemvLaunchInfo i = plan(t, rows, tiled);
        const std::string what = describe(t, rows, 3584, i) + " " + v;
        EXPECT_STREQ(i.form, "split") << what;
        EXPECT_EQ(i.ring_pairs, 2) << what;  // the fewest pairs that give each warp a pass
        EXPECT_EQ(i.column_splits, 4) << what;
        EXPECT_EQ(i.tasks, rows / 4) << what;
        EXPECT_EQ(i.ring_slots, std::string(v) == "split:2" ? 2 : v[8] - '0') << what;
      }
      few.set("split:1");  // 1 pair would leave warps without a pass: the whole-row form
      EXPECT_STREQ(plan(t, rows, tiled).form, "ring") << name << " " << rows;
      few.set(nullptr);
    }
    // The threshold: fewer than 3 · sms groups split, 3 · sms do not; the gate/up GEMV keeps
    // the whole-row form.
    EXPECT_STREQ(plan(t, 16 * (3 * sms - 1), tiled).form, "split") << name;
    EXPECT_STREQ(plan(t, 16 * 3 * sms, tiled).form, "ring") << name;
    EXPECT_STREQ(plan(t, 37888, tiled).form, "ring") << name;
    per_sm.set("0.5");
    EXPECT_STREQ(plan(t, 16 * (sms / 2 - 1), tiled).form, "split") << name;
    EXPECT_STREQ(plan(t, 16 * (sms / 2 + 1), tiled).form, "ring") << name;
    per_sm.set(nullptr);
  }
  // Q8_0 (its split form off by default) and DECODEBENCH_GEMV_RING_LONG=0 keep the whole-row
  // form unless "split:PxS" gives the split form its own slots.
  per_sm.set("3");
  for (const char* long_value : {static_cast<const char*>(nullptr), "0", "4x2"}) {
    const ScopedEnv long_env("DECODEBENCH_GEMV_RING_LONG", long_value);
    const std::string what = std::string(" RING_LONG=") + (long_value ? long_value : "(unset)");
    few.set("split:2");
    if (long_value == nullptr || std::string(long_value) == "0") {
      EXPECT_EQ(gemv_form_name(plan(WeightType::kQ8_0, 3584, true)), "stream-tiled ring 4x1x4")
          << what;
    }
    if (long_value != nullptr && std::string(long_value) == "0") {
      EXPECT_STREQ(plan(WeightType::kQ4_0, 3584, true).form, "ring") << what;
    }
    few.set("split:4x1");
    for (const WeightType t : {WeightType::kQ8_0, WeightType::kQ4_0}) {
      const GemvLaunchInfo i = plan(t, 3584, true);
      EXPECT_STREQ(i.form, "split") << weight_traits(t).name << what;
      EXPECT_EQ(i.ring_pairs, 2) << weight_traits(t).name << what;  // fewest first, not RING_LONG's
      EXPECT_EQ(i.ring_slots, 1) << weight_traits(t).name << what;
    }
  }
  // Rows too long for the whole-row slots (the 7B down projection) keep
  // DECODEBENCH_GEMV_RING_LONG's split form (1 x 2 by default), whatever split:PxS asks of
  // few-group matrices.
  few.set("split:2x4");
  for (const WeightType t : {WeightType::kQ4_0, WeightType::kQ4_K}) {
    const GemvLaunchInfo i = bufs.plan(t, 3584, 18944, t == WeightType::kQ4_0);
    EXPECT_STREQ(i.form, "split") << weight_traits(t).name;
    EXPECT_EQ(i.ring_pairs, 1) << weight_traits(t).name;
    EXPECT_EQ(i.ring_slots, 2) << weight_traits(t).name;
  }
  few.set(nullptr);
  per_sm.set(nullptr);
  GemvParams p = bufs.params(WeightType::kQ4_0);
  p.rows = 3584;
  p.cols = 3584;
  p.tiled = true;
  expect_values_refused("DECODEBENCH_GEMV_RING_FEW_GROUPS_PER_SM",
                        {"0", "-1", "abc", "65", "3x", "nan", "inf", "1e400", "1e-400", "3 ", " 3",
                         "+3", "0x2", "1e-3", "1..5", ".", "0.0"},
                        p);
  expect_values_refused("DECODEBENCH_GEMV_RING_FEW_GROUPS",
                        {"split:2x0", "split:2x5", "split:2x", "split:x2", "split:2x44"}, p);
  per_sm.set("3");
  few.set("split:2x4");
  for (const WeightType t : {WeightType::kQ4_0, WeightType::kQ4_K, WeightType::kQ8_0}) {
    SCOPED_TRACE(weight_traits(t).name);
    const bool tiled = t != WeightType::kQ4_K;
    const int variant = tiled ? 7 : 4;
    check_gemv(t, 3584, 3584, false, true, 0, 0, variant);
    // 1,031 rows: a partial last group; bias and residual.
    EXPECT_STREQ(plan(t, 1031, tiled).form, "split");
    check_gemv(t, 1031, 3584, true, true, 0, 0, variant);
  }
}

// The ring form with 4 rows per warp (DECODEBENCH_GEMV_RING=WxSxR, R = 4, W = 4 or 8): each x'
// tile a lane loads serves 4 rows. A warp's rows are summed pair by pair as with 2 rows per warp
// (chunk_dot), so its output equals the 2-row form's bit for bit, which every shape checks:
// the Q4_0 and Q8_0 tiled layouts, Q4_K, Q5_K and Q6_K in GGUF blocks, a partial last group (1,031
// and 97 rows), bias and residual, a last pass of 16 tiles (3,584 columns) and refills (24,000
// rows). Each plan is checked to be the 4-row form before it runs; one shape per type is also
// checked against the CPU. The 2-row form is asked for by name (8 × 2): Q8_0's default has 4 rows
// per warp (4 × 1 × 4), which the plan of the unset variable is checked to take.
TEST(Gemv, StreamRingFourRowsPerWarpMatchesTwoBitForBit) {
  DB_REQUIRE_STREAM_KERNEL();
  ScopedEnv ring("DECODEBENCH_GEMV_RING", nullptr);
  const ScopedEnv ring_long("DECODEBENCH_GEMV_RING_LONG", nullptr);
  {
    PlanningBuffers bufs(3584);
    GemvParams p = bufs.params(WeightType::kQ4_K);
    p.rows = 4608;
    p.cols = 3584;  // 2,016 bytes per row
    ring.set("4x2x4");
    GemvLaunchInfo info = gemv_launch_info(p);
    EXPECT_EQ(gemv_form_name(info), "stream ring 4x2x4");
    EXPECT_EQ(info.ring_pairs, 0);  // whole rows: no pairs
    EXPECT_EQ(info.block, 128);
    EXPECT_EQ(info.rows_per_warp, 4);
    EXPECT_EQ(info.tasks, 288);  // groups of 16 rows
    EXPECT_EQ(info.smem_bytes, 2 * 16 * 2016 + 64);
    ring.set("8x1x4");
    info = gemv_launch_info(p);
    EXPECT_EQ(gemv_form_name(info), "stream ring 8x1x4");
    EXPECT_EQ(info.block, 256);
    EXPECT_EQ(info.rows_per_warp, 4);
    EXPECT_EQ(info.tasks, 144);  // groups of 32 rows
    EXPECT_EQ(info.smem_bytes, 1 * 32 * 2016 + 64);
    ring.set("8x2x2");  // the default shape, spelt out
    info = gemv_launch_info(p);
    EXPECT_EQ(gemv_form_name(info), "stream ring 8x2x2");
    EXPECT_EQ(info.rows_per_warp, 2);
    EXPECT_EQ(info.tasks, 288);
    expect_values_refused("DECODEBENCH_GEMV_RING",
                          {"4x2", "16x2x4", "8x2x3", "4x2x2", "8x2x4x", "8x5x4", "8x2x4y", "8x2y",
                           "8x2 ", "8x2y4", "16x3foo"},
                          p);
  }
  struct Form {
    WeightType t;
    int variant;
  };
  const Form forms[] = {{WeightType::kQ4_0, 7}, {WeightType::kQ8_0, 7}, {WeightType::kQ4_K, 4},
                        {WeightType::kQ5_K, 4}, {WeightType::kQ6_K, 4}, {WeightType::kQ6_K, 7}};
  const struct {
    int64_t rows, cols;
    bool bias, residual;
  } shapes[] = {{1031, 2816, false, false},
                {97, 1024, true, true},
                {1031, 3584, true, false},
                {24000, 3584, false, true}};
  for (const Form& f : forms) {
    for (const auto& sh : shapes) {
      // Q6_K rows are 16-byte multiples (the ring forms) where the columns are a multiple of
      // 2,048 (so it never has a last pass of 16 tiles there).
      const int64_t rows = sh.rows, cols = f.t == WeightType::kQ6_K ? 4096 : sh.cols;
      const bool tiled = f.variant >= 5;
      PresplitGemv g(f.t, rows, cols, tiled,
                     static_cast<uint32_t>(rows * 31 + cols + static_cast<int>(f.t)), sh.bias,
                     sh.residual);
      g.params.variant = f.variant;
      // y with DECODEBENCH_GEMV_RING=env, whose plan must take `rows_per_warp` rows per warp.
      const auto run = [&](const char* env, int rows_per_warp) {
        ring.set(env);
        const GemvLaunchInfo info = gemv_launch_info(g.params);
        EXPECT_STREQ(info.kernel, tiled ? "stream-tiled" : "stream")
            << describe(f.t, rows, cols, info);
        EXPECT_EQ(info.rows_per_warp, rows_per_warp)
            << "DECODEBENCH_GEMV_RING=" << env << " " << describe(f.t, rows, cols, info);
        return g.run();
      };
      const std::vector<float> want = run("8x2", 2);
      if (f.t == WeightType::kQ8_0 && tiled) {
        const std::vector<float> by_default = run("", 4);
        EXPECT_EQ(std::memcmp(by_default.data(), want.data(), want.size() * 4), 0)
            << "Q8_0's default form differs from 8 x 2: " << rows << "x" << cols;
      }
      for (const char* env : {"4x2x4", "4x1x4", "4x4x4", "8x1x4", "8x2x4"}) {
        // Slots that do not fit (Q8_0: 32 rows of 3,584 columns are 122 KB) send the plan to
        // another form: skipped.
        const int64_t group_bytes = (env[0] - '0') * 4 * row_bytes(f.t, cols);
        if ((env[2] - '0') * group_bytes + 64 > 232448) continue;
        const std::vector<float> got = run(env, 4);
        EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0)
            << "DECODEBENCH_GEMV_RING=" << env
            << " differs from the 2-row form: " << weight_traits(f.t).name << " " << rows << "x"
            << cols;
      }
    }
    ring.set("4x2x4");
    check_gemv(f.t, 1031, f.t == WeightType::kQ6_K ? 4096 : 3584, true, true, 0, 0, f.variant);
  }
}

// The 8-warp ring kernels of Q4_0 (tiled) and Q4_K with registers sized for 2 or 3 CTAs per SM
// (DECODEBENCH_GEMV_RING_CTAS; by default 3 for Q4_0, 2 for Q4_K, as measured in round 34; or
// per matrix, `rounds`). The
// register budget changes no sum and no order, so both forms' output is equal bit for bit: checked
// on the whole-row form (a partial last group, a last pass of 16 tiles, refills: 24,000 rows) and
// the split form (the down projection's 18,944 columns, with refills at 3,584 rows), and against
// the CPU. The plans name the budget they took (GemvLaunchInfo::ring_ctas: the defaults, the
// variable, and 2 for the forms and types without that budget), and with 3 the grid holds at least
// 3 CTAs per SM; other values are refused. Likewise
// DECODEBENCH_GEMV_RING_MAX_CTAS = 2, which pads the whole-row form's shared memory so that at
// most 2 CTAs fit an SM (Q4_0's whole-row form fits 3 by default).
TEST(Gemv, StreamRingRegisterBudgetsMatchBitForBit) {
  DB_REQUIRE_STREAM_KERNEL();
  ScopedEnv ctas("DECODEBENCH_GEMV_RING_CTAS", nullptr);
  ScopedEnv max_ctas("DECODEBENCH_GEMV_RING_MAX_CTAS", nullptr);
  const ScopedEnv ring("DECODEBENCH_GEMV_RING", nullptr);
  const ScopedEnv ring_long("DECODEBENCH_GEMV_RING_LONG", nullptr);
  // The whole-row form also on matrices of few groups (1,031 rows), which by default take the
  // split form since round 52 (Gemv.StreamRingFewGroupsTakeTheSplitForm).
  const ScopedEnv few("DECODEBENCH_GEMV_RING_FEW_GROUPS", "whole");
  int sms = 0;
  DB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  {
    PlanningBuffers bufs(18944);
    // The plan's register budget (ring_ctas) and grid by default, with 2, 3 and `rounds`.
    const auto plans = [&](WeightType t, int64_t rows, int64_t cols, bool tiled, const char* form) {
      GemvParams p = bufs.params(t);
      p.rows = rows;
      p.cols = cols;
      p.tiled = tiled;
      std::array<GemvLaunchInfo, 4> out{};
      const char* envs[] = {nullptr, "2", "3", "rounds"};
      for (int i = 0; i < 4; ++i) {
        ctas.set(envs[i]);
        out[i] = gemv_launch_info(p);
        EXPECT_STREQ(out[i].form, form) << describe(t, rows, cols, out[i]);
      }
      ctas.set(nullptr);
      return out;
    };
    // The 7B gate/up shape (2,368 groups of 16 rows) and down projection (1,792 pairs). With
    // registers for 3, shared memory (64.6 and 43.2 KB) lets at least 3 CTAs run per SM; how many
    // the default budget allows depends on the compiler's register allocation, so it is not
    // asserted.
    const auto q4k = plans(WeightType::kQ4_K, 37888, 3584, false, "ring");
    EXPECT_EQ(q4k[0].ring_ctas, 2) << "Q4_K's default";
    EXPECT_EQ(q4k[1].ring_ctas, 2);
    EXPECT_EQ(q4k[2].ring_ctas, 3);
    EXPECT_GE(q4k[2].grid, 3 * sms);
    EXPECT_EQ(q4k[3].ring_ctas, 2) << "gate/up by rounds: a tie";
    const auto q40 = plans(WeightType::kQ4_0, 3584, 18944, true, "split");
    EXPECT_EQ(q40[0].ring_ctas, 3) << "Q4_0's default";
    EXPECT_EQ(q40[3].ring_ctas, 3) << "Q4_0 by rounds";
    // The kernels line names a budget other than the default.
    EXPECT_EQ(gemv_form_name(q40[0]), "stream-tiled split 1x2 (registers for 3 CTAs/SM)");
    EXPECT_EQ(gemv_form_name(q40[1]), "stream-tiled split 1x2");
    EXPECT_EQ(gemv_form_name(q4k[2]), "stream ring 8x2x2 (registers for 3 CTAs/SM)");
    EXPECT_EQ(q40[1].ring_ctas, 2);
    EXPECT_EQ(q40[2].ring_ctas, 3);
    EXPECT_GE(q40[2].grid, 3 * sms);
    // `rounds` picks per matrix for Q4_K: 3 where a grid of 3 CTAs per SM streams the row groups
    // in fewer CTA-rounds (⌈groups / grid⌉ · grid, each form's grid as planned with 2 and with
    // 3), else 2. On 132 SMs (H100, H200), where the budget of 2 fits 2 CTAs per SM: the 7B QKV
    // (288 groups) takes 3; o (224), gate/up (2,368: 9 · 264 = 6 · 396, a tie keeps 2) and the
    // down projection's split form (1,792 pairs: 7 · 264 < 5 · 396) keep 2. Q4_0 keeps 3.
    const auto by_rounds = [&](WeightType t, int64_t rows, int64_t cols, bool tiled, int64_t groups,
                               int want_on_132) {
      GemvParams p = bufs.params(t);
      p.rows = rows;
      p.cols = cols;
      p.tiled = tiled;
      ctas.set("2");
      const GemvLaunchInfo two = gemv_launch_info(p);
      ctas.set("3");
      const GemvLaunchInfo three = gemv_launch_info(p);
      ctas.set("rounds");
      const GemvLaunchInfo got = gemv_launch_info(p);
      ctas.set(nullptr);
      const std::string what = describe(t, rows, cols, got);
      EXPECT_EQ(got.tasks, groups) << what;
      if (t == WeightType::kQ4_0) {
        EXPECT_EQ(got.ring_ctas, 3) << what;
        EXPECT_EQ(got.grid, three.grid) << what;
        return;
      }
      const auto cost = [&](const GemvLaunchInfo& i) {
        return (groups + i.grid - 1) / i.grid * i.grid;
      };
      const int want = cost(three) < cost(two) ? 3 : 2;
      EXPECT_EQ(got.ring_ctas, want) << what;
      EXPECT_EQ(got.grid, want == 3 ? three.grid : two.grid) << what;
      // The choices above hold where the default budget fits 2 CTAs per SM (the register
      // allocation decides; not asserted elsewhere either).
      if (sms == 132 && two.grid == std::min<int64_t>(groups, 2 * sms)) {
        EXPECT_EQ(got.ring_ctas, want_on_132) << what;
      }
    };
    by_rounds(WeightType::kQ4_K, 4608, 3584, false, 288, 3);
    by_rounds(WeightType::kQ4_K, 3584, 3584, false, 224, 2);
    by_rounds(WeightType::kQ4_K, 37888, 3584, false, 2368, 2);
    by_rounds(WeightType::kQ4_K, 3584, 18944, false, 1792, 2);
    by_rounds(WeightType::kQ4_0, 4608, 3584, true, 288, 3);
    by_rounds(WeightType::kQ4_0, 3584, 18944, true, 1792, 3);
    // Forms and types without that budget keep 2 whatever the variable says.
    const auto q8 = plans(WeightType::kQ8_0, 37888, 3584, true, "ring");  // 4 warps of 4 rows
    for (const GemvLaunchInfo& i : q8) EXPECT_EQ(i.ring_ctas, 2);
    ring_long.set("2x2");
    const auto pairs2 = plans(WeightType::kQ4_0, 3584, 18944, true, "split");
    ring_long.set(nullptr);
    for (const GemvLaunchInfo& i : pairs2) EXPECT_EQ(i.ring_ctas, 2);
    ctas.set("3");
    const ScopedEnv gguf("DECODEBENCH_GEMV_RING_GGUF", "0");
    GemvParams per_warp = bufs.params(WeightType::kQ4_1);  // GGUF blocks: the per-warp form
    per_warp.rows = 1031;
    per_warp.cols = 3584;
    EXPECT_EQ(gemv_launch_info(per_warp).ring_ctas, 0);
    gguf.set(nullptr);  // and the ring form, which has no budget of 3
    EXPECT_STREQ(gemv_launch_info(per_warp).form, "ring");
    EXPECT_EQ(gemv_launch_info(per_warp).ring_ctas, 2);
    ctas.set(nullptr);
    GemvParams p = bufs.params(WeightType::kQ4_K);
    p.rows = 1031;
    p.cols = 3584;
    expect_values_refused("DECODEBENCH_GEMV_RING_CTAS", {"4", "1", "0", "3 ", "three", "Rounds"},
                          p);
    p = bufs.params(WeightType::kQ8_0);  // refused on every plan, also where it changes nothing
    p.rows = 1031;
    p.cols = 3584;
    p.tiled = true;
    expect_values_refused("DECODEBENCH_GEMV_RING_CTAS", {"4"}, p);
    expect_values_refused("DECODEBENCH_GEMV_RING_MAX_CTAS", {"0", "5", "2 ", "two"}, p);
    // Q4_0's gate/up shape: 3 CTAs per SM by default (its shared memory), 2 with the cap.
    p = bufs.params(WeightType::kQ4_0);
    p.rows = 37888;
    p.cols = 3584;
    p.tiled = true;
    const GemvLaunchInfo three = gemv_launch_info(p);
    max_ctas.set("2");
    const GemvLaunchInfo two = gemv_launch_info(p);
    max_ctas.set(nullptr);
    EXPECT_STREQ(two.form, "ring");
    EXPECT_EQ(three.grid, 3 * sms);
    EXPECT_EQ(two.grid, 2 * sms);
    EXPECT_EQ(three.smem_bytes, 2 * 16 * 2016 + 64);
    EXPECT_GT(two.smem_bytes, three.smem_bytes);
  }
  const struct {
    WeightType t;
    int variant;
  } forms[] = {{WeightType::kQ4_0, 7}, {WeightType::kQ4_K, 4}};
  const struct {
    int64_t rows, cols;
    bool bias, residual;
    const char* form;
  } shapes[] = {{1031, 3584, true, false, "ring"},
                {97, 1024, true, true, "ring"},
                {24000, 3584, false, true, "ring"},
                {1031, 18944, true, true, "split"},
                {3584, 18944, false, true, "split"}};
  for (const auto& f : forms) {
    for (const auto& sh : shapes) {
      const bool tiled = f.variant >= 5;
      PresplitGemv g(f.t, sh.rows, sh.cols, tiled,
                     static_cast<uint32_t>(sh.rows * 7 + sh.cols + static_cast<int>(f.t)), sh.bias,
                     sh.residual);
      g.params.variant = f.variant;
      ctas.set("2");
      ASSERT_STREQ(gemv_launch_info(g.params).form, sh.form)
          << describe(f.t, sh.rows, sh.cols, gemv_launch_info(g.params));
      const std::vector<float> want = g.run();
      ctas.set("3");
      const std::vector<float> got = g.run();
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0)
          << "3 CTAs per SM differ from 2: " << weight_traits(f.t).name << " " << sh.rows << "x"
          << sh.cols;
      max_ctas.set("2");
      const std::vector<float> capped = g.run();
      max_ctas.set(nullptr);
      EXPECT_EQ(std::memcmp(capped.data(), want.data(), capped.size() * 4), 0)
          << "at most 2 CTAs per SM differ: " << weight_traits(f.t).name << " " << sh.rows << "x"
          << sh.cols;
    }
    for (const char* v : {"2", "3"}) {
      ctas.set(v);
      check_gemv(f.t, 1031, 3584, true, true, 0, 0, f.variant);
      check_gemv(f.t, 1031, 18944, true, true, 0, 0, f.variant);
    }
  }
}

// The direct kernel's column split on the 7B F16 shapes, as measured fastest on the H200
// (gemv_direct.cu, direct_plan): QKV 4608×3584 in 2 splits (4 took 10% longer), q/o, down and
// the stacked gate/up (37888×3584) unsplit, the separate k/v projections (512 rows) in 8. The
// gate/up pick is a tie in the score (1 and 2 splits both 0.99663) that the first split wins.
TEST(Gemv, DirectPlanSplitsAsMeasured) {
  DB_REQUIRE_CUDA();
  DeviceBuffer w(1 << 20), x(1 << 17), y(1 << 20);
  const auto splits = [&](int64_t rows, int64_t cols) {
    return gemv_launch_info(plain_params(WeightType::kF16, rows, cols, w, x, y)).column_splits;
  };
  int sms = 0;
  DB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  if (sms != 132) GTEST_SKIP() << "calibrated on 132 SMs (H200); this device has " << sms;
  EXPECT_EQ(splits(4608, 3584), 2);
  EXPECT_EQ(splits(3584, 3584), 1);
  EXPECT_EQ(splits(3584, 18944), 1);
  EXPECT_EQ(splits(512, 3584), 8);
  EXPECT_EQ(splits(37888, 3584), 1);
}

// The direct kernel's spread form (DECODEBENCH_GEMV_DIRECT_SPREAD=1: the row pairs dealt across
// every CTA slot; `long`: for rows over 4,096 columns only) forms each row's sum as the default
// form does, so its output equals the default form's bit for bit: checked for the float types on
// the 7B shapes whose tasks leave CTA slots empty (o 3584×3584, down 3584×18944 with its long x' in
// pieces) or take 2 column splits (QKV 4608×3584 with q/k/v segments and a bias), a stacked gate/up
// with its SwiGLU output (no store past the last pair), an RMSNorm input with a residual, 8 splits
// (512×3584), odd row counts and a matrix of fewer pairs than CTA slots; and against the CPU. The
// plan names the form ("direct spread"), keeps the default's column split, sizes the grid to
// min(CTA slots, row pairs) and counts row pairs as its tasks; other values are refused. The
// spread form's launch passes no task count (0), so a kernel that ignored the form would write
// nothing and differ from the default form.
TEST(Gemv, DirectSpreadFormMatchesDefaultBitForBit) {
  DB_REQUIRE_CUDA();
  ScopedEnv spread("DECODEBENCH_GEMV_DIRECT_SPREAD", nullptr);
  struct Shape {
    int64_t rows, cols;
    bool rms, bias, residual, segments, swiglu;
  };
  const Shape shapes[] = {{3584, 3584, false, false, true, false, false},
                          {3584, 18944, false, false, true, false, false},
                          {4608, 3584, true, true, false, true, false},
                          {2 * 4000, 1024, true, false, false, false, true},
                          {2 * 37, 512, false, false, false, false, true},
                          {512, 3584, true, false, true, false, false},
                          {1031, 2816, false, true, true, false, false},
                          {7, 4352, false, false, false, false, false},
                          {301, 576, true, false, false, false, false}};
  for (const WeightType t : {WeightType::kF32, WeightType::kF16, WeightType::kBF16}) {
    for (const Shape& sh : shapes) {
      const int64_t rows = sh.rows, cols = sh.cols;
      const uint32_t seed = static_cast<uint32_t>(rows * 13 + cols + static_cast<int>(t));
      const Matrix m = make_matrix(t, rows, cols, seed);
      const std::vector<float> x = random_floats(static_cast<size_t>(cols), seed + 1);
      const std::vector<float> nw = random_floats(static_cast<size_t>(cols), seed + 2);
      const std::vector<float> bias = random_floats(static_cast<size_t>(rows), seed + 3);
      const int64_t outs = sh.swiglu ? rows / 2 : rows;
      // 64 floats past the output hold a sentinel (or y0 for the residual).
      std::vector<float> y0 = random_floats(static_cast<size_t>(outs) + 64, seed + 4);
      DeviceBuffer d_w = upload(m.bytes), d_x = upload(x), d_nw = upload(nw), d_b = upload(bias);
      DeviceBuffer d_y = upload(y0);
      GemvParams p = plain_params(t, rows, cols, d_w, d_x, d_y);
      if (sh.rms) {
        p.input = GemvInput::kRmsNorm;
        p.norm_w = d_nw.data<float>();
        p.eps = 1e-6f;
      }
      if (sh.bias) p.bias = d_b.data<float>();
      if (sh.residual) p.residual = d_y.data<float>();
      if (sh.segments) {  // rows [0, 3584) → y, [3584, 4096) → y + 3584, the rest → y + 4096
        p.y1 = d_y.data<float>() + 3584;
        p.y2 = d_y.data<float>() + 4096;
        p.y_end0 = 3584;
        p.y_end1 = 4096;
      }
      p.swiglu_out = sh.swiglu;
      const std::string what = std::string(weight_traits(t).name) + " " + std::to_string(rows) +
                               "x" + std::to_string(cols);
      const auto run = [&](const char* env) {
        spread.set(env);
        copy_to_device(d_y.get(), y0.data(), y0.size() * 4);
        launch_gemv(p, nullptr);
        testing::sync();
        return download<float>(d_y.get(), y0.size());
      };
      spread.set("0");
      const GemvLaunchInfo by_tasks = gemv_launch_info(p);
      spread.set("1");
      const GemvLaunchInfo info = gemv_launch_info(p);
      EXPECT_STREQ(info.kernel, "direct") << what;
      EXPECT_EQ(gemv_form_name(info), "direct spread") << what;
      EXPECT_EQ(gemv_form_name(by_tasks), "direct") << what;
      EXPECT_EQ(info.column_splits, by_tasks.column_splits) << what;
      // Every CTA slot (the default form's grid for a matrix of many tasks, the same columns),
      // but no CTA without a pair.
      spread.set("0");
      const int64_t slots = gemv_launch_info(plain_params(t, 1 << 16, cols, d_w, d_x, d_y)).grid;
      EXPECT_GT(slots, 0) << what;
      EXPECT_EQ(info.grid, std::min(slots, (rows + 1) / 2)) << what;
      EXPECT_EQ(info.tasks, (rows + 1) / 2) << what;
      // "long": the spread form for rows of more than 4,096 columns only.
      spread.set("long");
      EXPECT_EQ(gemv_form_name(gemv_launch_info(p)), cols > 4096 ? "direct spread" : "direct")
          << what;
      const std::vector<float> want = run("0");
      for (const char* env : {"1", "long"}) {
        const std::vector<float> got = run(env);
        EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0)
            << what << ": DECODEBENCH_GEMV_DIRECT_SPREAD=" << env << " differs from 0";
        for (size_t i = static_cast<size_t>(outs); i < got.size(); ++i) {
          ASSERT_EQ(got[i], y0[i]) << what << ": wrote past the output";
        }
      }
    }
    spread.set("1");
    check_gemv(t, 3584, 18944, false, true);
    check_gemv(t, 1031, 2816, true, false);
  }
  DeviceBuffer w(1 << 20), x(1 << 17), y(1 << 16);
  expect_values_refused("DECODEBENCH_GEMV_DIRECT_SPREAD", {"2", "on", "yes", "1 ", "01", "Long"},
                        plain_params(WeightType::kF16, 64, 512, w, x, y));
}

// The automatic choice for tiled weights: the stream-tiled kernel for the types it reads on sm_90
// (gemv_stream_tiled_available), else the tiled one; a forced 5 still runs the tiled kernel.
TEST(Gemv, TiledWeightsTakeTheStreamTiledKernelAutomatically) {
  DB_REQUIRE_CUDA();
  int major = 0;
  DB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  const int64_t rows = 64, cols = 1024;
  DeviceBuffer d_w(static_cast<size_t>(rows * row_bytes(WeightType::kQ8_0, cols)));
  DeviceBuffer d_split(gemv_x_split_bytes(cols));
  DeviceBuffer d_y(static_cast<size_t>(rows) * 4);
  // Tiled weights of type t (never read: planning only).
  const auto tiled_params = [&](WeightType t) {
    GemvParams p;
    p.type = t;
    p.w = d_w.get();
    p.rows = rows;
    p.cols = cols;
    p.x_split = d_split.get();
    p.y = d_y.data<float>();
    p.tiled = true;
    return p;
  };
  for (const WeightType t :
       {WeightType::kQ4_0, WeightType::kQ4_1, WeightType::kQ8_0, WeightType::kQ4_K}) {
    const std::string name = weight_traits(t).name;
    GemvParams p = tiled_params(t);
    const bool st = major >= 9 && t != WeightType::kQ4_K;
    EXPECT_EQ(gemv_stream_tiled_available(t), st) << name;
    EXPECT_STREQ(gemv_launch_info(p).kernel, st ? "stream-tiled" : "tiled") << name;
    p.variant = 5;
    EXPECT_STREQ(gemv_launch_info(p).kernel, "tiled") << name;
  }
  // Q6_K (rows of 840 bytes) has no tiled-kernel form: the stream-tiled kernel on sm_90, else
  // refused, as are matrices whose end is not 16-byte aligned (3 rows: 2,520 bytes).
  EXPECT_EQ(gemv_stream_tiled_available(WeightType::kQ6_K), major >= 9);
  EXPECT_EQ(gemv_tiled_layout_supported(WeightType::kQ6_K, rows, cols), major >= 9);
  EXPECT_FALSE(gemv_tiled_layout_supported(WeightType::kQ6_K, 3, cols));
  EXPECT_FALSE(gemv_tiled_layout_supported(WeightType::kQ6_K, rows, 768));  // 630-byte rows
  EXPECT_EQ(gemv_tiled_layout_supported(WeightType::kQ4_0, rows, cols),
            gemv_tiled_supported(WeightType::kQ4_0, cols));
  GemvParams q = tiled_params(WeightType::kQ6_K);
  if (major >= 9) {
    EXPECT_STREQ(gemv_launch_info(q).kernel, "stream-tiled");
    q.rows = 3;
  }
  EXPECT_THROW((void)gemv_launch_info(q), Error);
}

// Q6_K in the tiled layout (quant::tile_rows) on the stream-tiled kernel writes the same bits as
// the stream kernel on its GGUF blocks (the same sums, term for term), in every form the plan
// takes, which is checked first. Rows of 3,584 columns (2,940 bytes, a 4-byte multiple: since round
// 51 the ring takes them: the stream kernel needs the matrix end 16-byte aligned, so rows come in
// multiples of 4 and every group of 16 rows, the last too, is a 16-byte multiple; 1,028 rows (last
// group 4 rows) and 24,000 (refills); a last pass of 16 tiles), the down projection's 18,944
// columns (15,540 bytes: the split form with 2 pairs, as groups of 2 rows are 31,080 bytes), 1,536
// columns (1,260 bytes, a group of 16 tiles), 4,096 columns (3,360 bytes) and 14,336 columns
// (11,760 bytes: the split form with 1 pair);
// DECODEBENCH_GEMV_RING_Q6_K=0 puts rows that are not 16-byte multiples back per warp (pieces
// starting 4 bytes past 16-byte boundaries). Bias and residual on some; also against the CPU.
TEST(Gemv, StreamTiledQ6_KMatchesGgufBlocksBitForBit) {
  DB_REQUIRE_STREAM_KERNEL();
  const ScopedEnv ring("DECODEBENCH_GEMV_RING", nullptr);
  const ScopedEnv ring_long("DECODEBENCH_GEMV_RING_LONG", nullptr);
  // The whole-row form also on matrices of few groups (1,028 and 100 rows), which by default take
  // the split form since round 52 (Gemv.StreamRingFewGroupsTakeTheSplitForm checks Q6_K there).
  const ScopedEnv few("DECODEBENCH_GEMV_RING_FEW_GROUPS", "whole");
  ScopedEnv q6_k_ring("DECODEBENCH_GEMV_RING_Q6_K", nullptr);
  const WeightType t = WeightType::kQ6_K;
  const struct {
    int64_t rows, cols;
    bool bias, residual;
    const char* form;      // the plan both layouts must take by default
    const char* form_off;  // ... and with DECODEBENCH_GEMV_RING_Q6_K=0
    int pairs;             // the split form's row pairs per group
  } shapes[] = {{1028, 3584, true, true, "ring", "per-warp", 0},
                {24000, 3584, false, true, "ring", "per-warp", 0},
                {516, 18944, false, true, "split", "per-warp", 2},
                {64, 1536, true, false, "ring", "per-warp", 0},
                {100, 4096, false, false, "ring", "ring", 0},
                {24000, 4096, false, true, "ring", "ring", 0},
                {34, 14336, true, true, "split", "split", 1}};
  for (const char* env : {"", "0", "1"}) {
    q6_k_ring.set(env);
    for (const auto& sh : shapes) {
      const int64_t rows = sh.rows, cols = sh.cols;
      const std::string form = *env == '0' ? sh.form_off : sh.form;
      SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) +
                   " DECODEBENCH_GEMV_RING_Q6_K=" + env + " " + form);
      const uint32_t seed = static_cast<uint32_t>(rows * 13 + cols);
      // Both layouts of the same matrix, with the same inputs.
      const auto run = [&](bool tiled) {
        PresplitGemv g(t, rows, cols, tiled, seed, sh.bias, sh.residual);
        const GemvLaunchInfo info = gemv_launch_info(g.params);
        EXPECT_STREQ(info.kernel, tiled ? "stream-tiled" : "stream")
            << describe(t, rows, cols, info);
        EXPECT_STREQ(info.form, form.c_str()) << describe(t, rows, cols, info);
        // Tasks: groups of 16 rows in the ring form, of 2 · pairs rows in the split ring form
        // (8 / pairs warps on each pair), pairs of rows in the per-warp form.
        const int64_t group = form == "ring" ? 16 : form == "split" ? 2 * sh.pairs : 2;
        EXPECT_EQ(info.tasks, (rows + group - 1) / group) << describe(t, rows, cols, info);
        if (form == "split") {
          EXPECT_EQ(info.column_splits, 8 / sh.pairs) << describe(t, rows, cols, info);
        }
        return g.run();
      };
      const std::vector<float> gguf = run(false);
      const std::vector<float> tiled = run(true);
      EXPECT_EQ(std::memcmp(gguf.data(), tiled.data(), gguf.size() * 4), 0)
          << "tiled Q6_K differs from GGUF blocks";
    }
  }
  {
    PlanningBuffers bufs(18944);
    GemvParams p = bufs.params(t);
    p.rows = 3584;
    p.cols = 18944;
    p.tiled = true;
    expect_values_refused("DECODEBENCH_GEMV_RING_Q6_K", {"2", "on", "00", "1x"}, p);
    // DECODEBENCH_GEMV_RING_LONG on the 15,540-byte rows: 4 pairs do not fit two slots (248,640
    // bytes), so 2; 1 pair makes 31,080-byte groups, so 2 again, whose four slots do not fit: per
    // warp.
    const ScopedEnv long_env("DECODEBENCH_GEMV_RING_LONG", nullptr);
    const struct {
      const char* env;
      const char* form;
      int pairs, slots;
    } long_cases[] = {{"4x2", "split", 2, 2},
                      {"2x1", "split", 2, 1},
                      {"1x4", "per-warp", 0, 0},
                      {"", "split", 2, 2}};
    for (const auto& c : long_cases) {
      long_env.set(c.env);
      const GemvLaunchInfo info = gemv_launch_info(p);
      EXPECT_STREQ(info.form, c.form) << "DECODEBENCH_GEMV_RING_LONG=" << c.env;
      EXPECT_EQ(info.ring_pairs, c.pairs) << "DECODEBENCH_GEMV_RING_LONG=" << c.env;
      EXPECT_EQ(info.ring_slots, c.slots) << "DECODEBENCH_GEMV_RING_LONG=" << c.env;
    }
    long_env.set(nullptr);
    // Rows of an odd number of blocks are 2-byte multiples (8,960 columns: 35 blocks, 7,350 bytes):
    // per warp.
    p.rows = 1536;
    p.cols = 8960;
    p.tiled = false;
    EXPECT_STREQ(gemv_launch_info(p).form, "per-warp");
  }
  // The CPU reference: by default (the ring on 2,940- and 15,540-byte rows) and per warp.
  for (const char* env : {"", "0"}) {
    SCOPED_TRACE(std::string("DECODEBENCH_GEMV_RING_Q6_K=") + env);
    q6_k_ring.set(env);
    check_gemv(t, 1028, 3584, true, true, 0, 0, 7);
    check_gemv(t, 516, 18944, false, true, 0, 0, 7);
    check_gemv(t, 1028, 3584, false, true, 0, 0, 4);
    check_gemv(t, 100, 4096, false, true, 0, 0, 7);
  }
}

// The run record's name of a GEMV form, from hand-made launch infos (host-only): the ring's
// shape is warps × slots × rows per warp, the split form's row pairs × slots, as the switches
// spell them; other kernels keep their name.
TEST(Gemv, FormNamesSpellTheShapeAsTheSwitchesDo) {
  const auto name = [](int variant, const char* kernel, const char* form, int block = 256,
                       int slots = 0, int pairs = 0, int rows = 2) {
    GemvLaunchInfo i;
    i.variant = variant;
    i.kernel = kernel;
    i.form = form;
    i.block = block;
    i.ring_slots = slots;
    i.ring_pairs = pairs;
    i.rows_per_warp = rows;
    return gemv_form_name(i);
  };
  EXPECT_EQ(name(7, "stream-tiled", "ring", 128, 1, 0, 4), "stream-tiled ring 4x1x4");
  EXPECT_EQ(name(7, "stream-tiled", "ring", 512, 3, 0, 2), "stream-tiled ring 16x3x2");
  EXPECT_EQ(name(4, "stream", "split", 256, 4, 2), "stream split 2x4");
  EXPECT_EQ(name(4, "stream", "per-warp"), "stream per-warp");
  EXPECT_EQ(name(2, "direct", ""), "direct");
  // Named as gemv_per_step counts it, by variant: not the launch info's "mma-presplit".
  EXPECT_EQ(name(3, "mma-presplit", "presplit"), "mma presplit");
  EXPECT_EQ(name(0, "fallback", ""), "fallback");
}

TEST(Gemv, VariantsAndSplitSize) {
  EXPECT_EQ(gemv_variants(WeightType::kBF16), (std::vector<int>{1, 2}));
  EXPECT_EQ(gemv_variants(WeightType::kQ4_K), (std::vector<int>{1, 3, 4, 5}));
  EXPECT_EQ(gemv_variants(WeightType::kQ4_0), (std::vector<int>{1, 3, 4, 5, 6, 7}));
  EXPECT_EQ(gemv_variants(WeightType::kQ8_0), (std::vector<int>{1, 3, 4, 5, 6, 7}));
  EXPECT_EQ(gemv_variants(WeightType::kQ6_K), (std::vector<int>{1, 3, 4, 7}));
  EXPECT_STREQ(gemv_variant_name(3), "mma");
  EXPECT_STREQ(gemv_variant_name(4), "stream");
  EXPECT_STREQ(gemv_variant_name(5), "tiled");
  EXPECT_STREQ(gemv_variant_name(6), "tiled-mma");
  EXPECT_STREQ(gemv_variant_name(7), "stream-tiled");
  // The stream kernel only reads a pre-split x: forcing it without one is an error, not a
  // silent fallback.
  // (Never dereferenced: the variant check comes before any device work.)
  alignas(16) static float host[64];
  GemvParams p;
  p.type = WeightType::kQ4_0;
  p.w = host;
  p.x = host;
  p.y = host + 32;
  p.rows = 16;
  p.cols = 256;
  p.variant = 4;
  EXPECT_THROW(gemv_launch_info(p), Error);
  // The tiled kernel reads only tiled weights, and tiled weights only it, on a split x; each
  // refusal names its reason (exit 1) before any device query.
  const auto refused = [&](const char* reason) {
    try {
      (void)gemv_launch_info(p);
      ADD_FAILURE() << "expected an Error: " << reason;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kRuntime) << e.what();
      EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
    }
  };
  p.variant = 5;
  refused("needs weights in the tiled layout");
  p.x_split = host;
  refused("needs weights in the tiled layout");
  p.variant = 6;
  refused("the tiled-mma kernel (variant 6) needs weights in the tiled layout");
  p.tiled = true;
  p.variant = 4;
  refused("read by the tiled kernels (variants 5, 6, 7) only");
  p.x_split = nullptr;
  p.variant = 0;
  refused("tiled weights need a pre-split x");
  p.x_split = host;
  p.cols = 224;  // Q4_0 rows of 7 tiles: 126 bytes, no tiled layout
  refused("Q4_0 rows of 224 columns have no tiled layout");
  p.cols = 256;
  p.type = WeightType::kQ6_K;
  refused("Q6_K rows of 256 columns have no tiled layout");
  p.variant = 5;  // only the stream-tiled kernel reads Q6_K's tiled layout
  refused("variant 5 is not available for Q6_K");
  p.variant = 0;
  p.type = WeightType::kQ8_0;
  p.cols = int64_t{1} << 29;  // has a tiled layout, but past the kernel's 32-bit row offsets
  refused("takes rows of fewer than 536870912 columns");
  p.type = WeightType::kQ4_K;  // the tiled-mma kernel has no Q4_K form
  p.cols = 256;
  p.variant = 6;
  refused("variant 6 is not available for Q4_K");
  p.variant = 7;  // nor the stream-tiled one
  refused("variant 7 is not available for Q4_K");
  // mma layout (4 digit rows, 48 bytes of meta per tile), then one 3712-byte group per 32 tiles.
  EXPECT_EQ(gemv_x_split_bytes(64), static_cast<size_t>(4 * (64 + 16) + 2 * 48 + 3712));
  EXPECT_EQ(gemv_x_split_bytes(1056), static_cast<size_t>(4 * (1056 + 16) + 33 * 48 + 2 * 3712));
}

// Argument checks happen before any CUDA call: these run without a GPU.
TEST(Gemv, RejectsUnsupportedTypeByName) {
  GemvParams p;
  p.type = static_cast<WeightType>(10);  // Q2_K
  p.w = reinterpret_cast<const void*>(0x1000);
  p.x = reinterpret_cast<const float*>(0x1000);
  p.y = reinterpret_cast<float*>(0x1000);
  p.rows = 1;
  p.cols = 256;
  try {
    launch_gemv(p, nullptr);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    EXPECT_NE(std::string(e.what()).find("unsupported weight type #10"), std::string::npos)
        << e.what();
  }
}

TEST(Gemv, RejectsBadShapes) {
  GemvParams p;
  p.type = WeightType::kQ4_K;
  p.w = reinterpret_cast<const void*>(0x1000);
  p.x = reinterpret_cast<const float*>(0x1000);
  p.y = reinterpret_cast<float*>(0x1000);
  p.rows = 4;
  p.cols = 100;  // not a multiple of 256
  EXPECT_THROW(launch_gemv(p, nullptr), Error);
  p.cols = 256;
  p.rows = 0;
  EXPECT_THROW(launch_gemv(p, nullptr), Error);
  p.rows = 4;
  p.x = nullptr;
  EXPECT_THROW(launch_gemv(p, nullptr), Error);
}

}  // namespace
}  // namespace decodebench::cuda
