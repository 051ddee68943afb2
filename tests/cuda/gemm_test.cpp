// Batched products (launch_gemm) against the CPU (quant::dot_row per row and sequence) for every
// type the tensor-core kernel takes, at batch sizes that exercise partial n-tiles, several
// launches (> 32 sequences), three n8 tiles, rows whose last chunk is short, column splits across
// CTAs (reduced in a second kernel); an input that needs all three x pieces; output segments, bias
// and residual; and the GEMV loop form, which must equal launch_gemv per sequence bit for bit.
//
// Tolerance: |gpu − cpu| <= 2e-5 · Σ_c |w[r][c]·x[c]| + 1e-6 (as the GEMV tests: both sides sum
// in f32 in different orders; the x pieces add at most 2^-24 relative). A wrong code, nibble,
// sub-block scale, k permutation or sequence index moves results by O(|w·x|).
#include "cuda/kernels/gemm.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/quant/dequant.hpp"
#include "core/quant/weight_type.hpp"
#include "cuda/kernels/gemv.cuh"
#include "tests/cuda/cuda_test_util.hpp"

namespace decodebench::cuda {
namespace {

using testing::download;
using testing::random_floats;
using testing::upload;

using testing::make_matrix;
using testing::Matrix;

/// Device buffers and parameters of one tensor-core product of W (bytes of `type`) by X
/// ([batch][cols] f32): split inputs prepared, scratch allocated, y = [batch][rows].
struct MmaRun {
  DeviceBuffer w, x, y, split, scratch;
  GemmParams p;
  MmaRun(WeightType type, const void* wbytes, size_t wsize, int64_t rows, int64_t cols,
         int64_t batch, const std::vector<float>& xs, const std::vector<float>& y0)
      : w(wsize),
        x(upload(xs)),
        y(upload(y0)),
        split(gemm_x_split_bytes(batch, cols)),
        scratch(std::max<size_t>(16, gemm_scratch_bytes(type, rows, cols))) {
    copy_to_device(w.data(), wbytes, wsize);
    launch_gemm_prepare_x(type, x.data<float>(), cols, batch, cols, split.data(), false, nullptr);
    p.type = type;
    p.w = w.data();
    p.rows = rows;
    p.cols = cols;
    p.batch = batch;
    p.x = x.data<float>();
    p.ldx = cols;
    p.x_split = split.data();
    p.scratch = scratch.data();
    p.scratch_bytes = scratch.bytes();
    p.y = y.data<float>();
    p.ldy = rows;
    p.variant = 2;
  }
};

/// Runs one batched product through the tensor-core kernel and checks every (sequence, row).
void check_mma(WeightType t, int64_t rows, int64_t cols, int64_t batch, bool with_bias,
               bool with_residual) {
  SCOPED_TRACE(std::string(weight_traits(t).name) + " " + std::to_string(rows) + "x" +
               std::to_string(cols) + " batch " + std::to_string(batch));
  const Matrix m = make_matrix(t, rows, cols, 11u + static_cast<uint32_t>(cols + batch));
  // Sequences with different magnitudes (the F16 pieces scale per sequence).
  std::vector<float> x = random_floats(static_cast<size_t>(batch * cols), 7u + batch);
  for (int64_t b = 0; b < batch; ++b) {
    const float s = std::ldexp(1.0f, static_cast<int>(b % 5) * 3 - 6);
    for (int64_t c = 0; c < cols; ++c) x[b * cols + c] *= s;
  }
  const std::vector<float> bias = random_floats(static_cast<size_t>(rows), 3u);
  const std::vector<float> res = random_floats(static_cast<size_t>(batch * rows), 5u);
  MmaRun run(t, m.bytes.data(), m.bytes.size(), rows, cols, batch, x, res);
  DeviceBuffer db = upload(bias);
  // y = W·x + bias + y (the residual aliases y)
  run.p.bias = with_bias ? db.data<float>() : nullptr;
  run.p.residual = with_residual ? run.y.data<float>() : nullptr;
  run.p.ldr = rows;
  ASSERT_STREQ(gemm_kernel_name(run.p), "mma");
  launch_gemm(run.p, nullptr);
  testing::sync();
  const std::vector<float> y = download<float>(run.y.data(), static_cast<size_t>(batch * rows));
  const int64_t rb = row_bytes(t, cols);
  int bad = 0;
  for (int64_t b = 0; b < batch && bad < 5; ++b) {
    for (int64_t r = 0; r < rows && bad < 5; ++r) {
      float want = quant::dot_row(t, m.bytes.data() + r * rb, x.data() + b * cols, cols);
      double mag = 0;
      for (int64_t c = 0; c < cols; ++c) {
        mag += std::fabs(double{m.deq[r * cols + c]} * x[b * cols + c]);
      }
      if (with_bias) want += bias[r];
      if (with_residual) want += res[b * rows + r];
      const float got = y[b * rows + r];
      if (!(std::fabs(double{got} - want) <= 2e-5 * mag + 1e-6)) {
        ADD_FAILURE() << "sequence " << b << " row " << r << ": got " << got << ", want " << want
                      << " (|w·x| sum " << mag << ")";
        ++bad;
      }
    }
  }
}

class GemmMma : public ::testing::TestWithParam<WeightType> {};

TEST_P(GemmMma, MatchesCpuDotProductsAtEveryBatchShape) {
  DB_REQUIRE_CUDA();
  const WeightType t = GetParam();
  ASSERT_TRUE(gemm_mma_supported(t, 512));
  // rows not a multiple of 32 (partial row group), batches with partial n-tiles, one launch and
  // two launches (33 > 32 sequences), short and long rows (column splits).
  check_mma(t, 75, 512, 2, false, false);
  check_mma(t, 96, 256, 5, true, false);
  check_mma(t, 64, 1024, 13, false, true);
  check_mma(t, 200, 512, 33, true, true);
  check_mma(t, 4100, 768, 8, false, false);
  // 17-24 sequences: three n8 tiles in one launch.
  check_mma(t, 130, 512, 20, true, false);
  // Many rows: few or no column splits (the direct-store epilogue where the plan takes none).
  check_mma(t, 34000, 256, 3, true, false);
  // Rows whose last chunk is short (576 = SmolLM2's hidden size, 96): not for the K-quants,
  // whose rows are whole 256-value blocks.
  if (gemm_mma_supported(t, 576)) {
    check_mma(t, 70, 576, 3, false, true);
    check_mma(t, 40, 96, 9, true, false);
  }
}

INSTANTIATE_TEST_SUITE_P(Types, GemmMma,
                         ::testing::Values(WeightType::kF16, WeightType::kBF16, WeightType::kQ8_0,
                                           WeightType::kQ4_0, WeightType::kQ4_1, WeightType::kQ5_0,
                                           WeightType::kQ5_1, WeightType::kQ4_K, WeightType::kQ5_K,
                                           WeightType::kQ6_K),
                         [](const auto& info) {
                           return std::string(weight_traits(info.param).name);
                         });

TEST(Gemm, EveryPieceOfXCounts) {
  // x = 1 + 2^-9 + 2^-18 needs all three bf16 pieces (1, 2^-9, 2^-18); with W = 1 every sum is
  // exact in f32, so the product must be exactly cols · x — dropping or misplacing a piece moves
  // it by at least 2^-18 · cols.
  DB_REQUIRE_CUDA();
  const int64_t rows = 40, cols = 256, batch = 3;
  const float xv = 1.0f + std::ldexp(1.0f, -9) + std::ldexp(1.0f, -18);
  const std::vector<uint16_t> w(static_cast<size_t>(rows * cols), 0x3F80);  // bf16 1.0
  std::vector<float> x(static_cast<size_t>(batch * cols), xv);
  for (int64_t c = 0; c < cols; ++c) x[2 * cols + c] = -xv;  // sequence 2: negated
  MmaRun run(WeightType::kBF16, w.data(), w.size() * 2, rows, cols, batch, x,
             std::vector<float>(static_cast<size_t>(batch * rows)));
  launch_gemm(run.p, nullptr);
  testing::sync();
  const auto y = download<float>(run.y.data(), batch * rows);
  const double want = static_cast<double>(cols) * xv;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t r = 0; r < rows; ++r) {
      ASSERT_EQ(double{y[b * rows + r]}, b == 2 ? -want : want) << "sequence " << b << " row " << r;
    }
  }
}

TEST(Gemm, SegmentsGoToTheirBuffersWithTheirStrides) {
  DB_REQUIRE_CUDA();
  const WeightType t = WeightType::kQ4_K;
  const int64_t rows = 96, cols = 256, batch = 3;  // segments of 40, 24, 32 rows
  const Matrix m = make_matrix(t, rows, cols, 99u);
  const std::vector<float> x = random_floats(static_cast<size_t>(batch * cols), 4u);
  MmaRun run(t, m.bytes.data(), m.bytes.size(), rows, cols, batch, x,
             std::vector<float>(static_cast<size_t>(batch * rows)));
  DeviceBuffer y0(batch * 40 * 4), y1(batch * 24 * 4), y2(batch * 32 * 4);
  GemmParams& p = run.p;
  p.variant = 0;
  p.y = y0.data<float>();
  p.ldy = 40;
  p.y1 = y1.data<float>();
  p.ldy1 = 24;
  p.y2 = y2.data<float>();
  p.ldy2 = 32;
  p.y_end0 = 40;
  p.y_end1 = 64;
  launch_gemm(p, nullptr);
  testing::sync();
  const auto a = download<float>(y0.data(), batch * 40);
  const auto b = download<float>(y1.data(), batch * 24);
  const auto c = download<float>(y2.data(), batch * 32);
  const int64_t rb = row_bytes(t, cols);
  for (int64_t s = 0; s < batch; ++s) {
    for (int64_t r = 0; r < rows; ++r) {
      const float want = quant::dot_row(t, m.bytes.data() + r * rb, x.data() + s * cols, cols);
      const float got = r < 40 ? a[s * 40 + r] : r < 64 ? b[s * 24 + r - 40] : c[s * 32 + r - 64];
      EXPECT_NEAR(got, want, 1e-3f + 1e-4f * std::fabs(want)) << "sequence " << s << " row " << r;
    }
  }
}

TEST(Gemm, GemvLoopEqualsGemvPerSequenceBitForBit) {
  DB_REQUIRE_CUDA();
  for (const WeightType t : {WeightType::kF32, WeightType::kQ4_0, WeightType::kBF16}) {
    SCOPED_TRACE(weight_traits(t).name);
    const int64_t rows = 130, cols = 512, batch = 4;
    const Matrix m = make_matrix(t, rows, cols, 21u);
    const std::vector<float> x = random_floats(static_cast<size_t>(batch * cols), 8u);
    DeviceBuffer dw = upload(m.bytes);
    DeviceBuffer dx = upload(x);
    DeviceBuffer dy(batch * rows * 4), dg(rows * 4);
    GemmParams p;
    p.type = t;
    p.w = dw.data();
    p.rows = rows;
    p.cols = cols;
    p.batch = batch;
    p.x = dx.data<float>();
    p.ldx = cols;
    p.y = dy.data<float>();
    p.ldy = rows;
    p.variant = 1;
    ASSERT_STREQ(gemm_kernel_name(p), "gemv-loop");
    launch_gemm(p, nullptr);
    const auto y = download<float>(dy.data(), batch * rows);
    for (int64_t s = 0; s < batch; ++s) {
      GemvParams g;
      g.type = t;
      g.w = dw.data();
      g.rows = rows;
      g.cols = cols;
      g.x = dx.data<float>() + s * cols;
      g.y = dg.data<float>();
      launch_gemv(g, nullptr);
      const auto want = download<float>(dg.data(), rows);
      for (int64_t r = 0; r < rows; ++r) {
        ASSERT_EQ(testing::bits_of(y[s * rows + r]), testing::bits_of(want[r]))
            << "sequence " << s << " row " << r;
      }
    }
  }
}

TEST(Gemm, AutomaticChoiceAndErrors) {
  DB_REQUIRE_CUDA();
  EXPECT_FALSE(gemm_mma_supported(WeightType::kF32, 512));
  EXPECT_FALSE(gemm_mma_supported(WeightType::kQ4_K, 288));  // not whole super-blocks
  GemmParams p;
  p.type = WeightType::kBF16;
  p.rows = 8;
  p.cols = 64;
  p.batch = 1;
  EXPECT_STREQ(gemm_kernel_name(p), "gemv-loop");  // batch 1 stays on the GEMV
  p.batch = 2;
  EXPECT_STREQ(gemm_kernel_name(p), "mma");
  p.type = WeightType::kF32;
  EXPECT_STREQ(gemm_kernel_name(p), "gemv-loop");
  // The tensor-core kernel without split inputs is refused with a clear error.
  DeviceBuffer w(8 * 64 * 2), y(2 * 8 * 4), x(2 * 64 * 4);
  p.type = WeightType::kBF16;
  p.w = w.data();
  p.x = x.data<float>();
  p.ldx = 64;
  p.y = y.data<float>();
  p.ldy = 8;
  EXPECT_THROW(launch_gemm(p, nullptr), Error);
  p.batch = 257;
  EXPECT_THROW(launch_gemm(p, nullptr), Error);
  EXPECT_THROW(launch_gemm_prepare_x(WeightType::kBF16, x.data<float>(), 64, 2, 48, w.data(), false,
                                     nullptr),
               Error);
}

}  // namespace
}  // namespace decodebench::cuda
