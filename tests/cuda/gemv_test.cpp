// GEMV kernels against the CPU reference (quant::dot_row) for every weight type.
//
// Tolerance: |gpu − cpu| <= 1e-5 · Σ_c |w[r][c]·x[c]| + 1e-6 per row (w dequantized on the CPU).
// Both sides accumulate in f32 in different orders; the bound is relative to the magnitude of
// the sum, not of the result, because cancellation makes the result's own size meaningless. An
// index bug (wrong nibble, block, chunk or row) moves a result by O(|w·x|) for whole blocks, far
// beyond it.
#include "cuda/kernels/gemv.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/quant/dequant.hpp"
#include "core/quant/weight_type.hpp"
#include "tests/cuda/cuda_test_util.hpp"

namespace decodebench::cuda {
namespace {

using testing::all_near;
using testing::download;
using testing::random_floats;
using testing::upload;

/// A quantized matrix plus the CPU-side facts the checks need.
struct Matrix {
  std::vector<uint8_t> bytes;
  std::vector<float> deq;  ///< dequantized, rows × cols
};

Matrix make_matrix(WeightType t, int64_t rows, int64_t cols, uint32_t seed) {
  Matrix m;
  const int64_t rb = row_bytes(t, cols);
  m.bytes.resize(static_cast<size_t>(rows * rb));
  m.deq.resize(static_cast<size_t>(rows * cols));
  // Rows with different scales so that per-block scales vary across the matrix.
  std::vector<float> w = random_floats(static_cast<size_t>(rows * cols), seed);
  for (int64_t r = 0; r < rows; ++r) {
    const float s = 0.25f + static_cast<float>(r % 7) * 0.5f;
    for (int64_t c = 0; c < cols; ++c) w[r * cols + c] *= s;
    quant::quantize_row(t, w.data() + r * cols, m.bytes.data() + r * rb, cols);
    quant::dequantize_row(t, m.bytes.data() + r * rb, m.deq.data() + r * cols, cols);
  }
  return m;
}

std::string describe(WeightType t, int64_t rows, int64_t cols, const GemvLaunchInfo& info) {
  return std::string(weight_traits(t).name) + " " + std::to_string(rows) + "x" +
         std::to_string(cols) + (info.staged ? " staged" : " fallback") +
         " splits=" + std::to_string(info.column_splits) + " grid=" + std::to_string(info.grid);
}

/// Runs one GEMV and checks it. `x_offset`/`w_offset` (in floats / bytes) shift the input
/// pointers off 16-byte alignment to exercise the fallback.
void check_gemv(WeightType t, int64_t rows, int64_t cols, bool with_bias, bool with_residual,
                int x_offset = 0, int w_offset = 0) {
  const uint32_t seed = static_cast<uint32_t>(rows * 7919 + cols * 31 + static_cast<int>(t));
  const Matrix m = make_matrix(t, rows, cols, seed);
  const std::vector<float> x = random_floats(static_cast<size_t>(cols), seed + 1);
  const std::vector<float> bias = random_floats(static_cast<size_t>(rows), seed + 2);
  const std::vector<float> y0 = random_floats(static_cast<size_t>(rows), seed + 3);

  std::vector<uint8_t> wbytes(static_cast<size_t>(w_offset), 0);
  wbytes.insert(wbytes.end(), m.bytes.begin(), m.bytes.end());
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
  const GemvLaunchInfo info = gemv_launch_info(p);
  launch_gemv(p, nullptr);
  testing::sync();
  const std::vector<float> got = download<float>(d_y.get(), static_cast<size_t>(rows));

  std::vector<float> want(static_cast<size_t>(rows));
  std::vector<double> mag(static_cast<size_t>(rows));
  const int64_t rb = row_bytes(t, cols);
  for (int64_t r = 0; r < rows; ++r) {
    float v = quant::dot_row(t, m.bytes.data() + r * rb, x.data(), cols);
    double a = 0.0;
    for (int64_t c = 0; c < cols; ++c) a += std::fabs(double{m.deq[r * cols + c]} * x[c]);
    if (with_bias) {
      v += bias[r];
      a += std::fabs(bias[r]);
    }
    if (with_residual) {
      v += y0[r];
      a += std::fabs(y0[r]);
    }
    want[r] = v;
    mag[r] = a;
  }
  EXPECT_TRUE(all_near(
      got, want, [&](size_t i) { return 1e-5 * mag[i] + 1e-6; },
      describe(t, rows, cols, info) + (with_bias ? " +bias" : "") +
          (with_residual ? " +residual" : "")));
}

class GemvAllTypes : public ::testing::TestWithParam<WeightType> {};

// Shapes: single row, rows not a multiple of 2 (rows per warp), 8 (warps), or the grid; rows long
// enough for many pipeline chunks (18944 = Qwen2.5-7B FFN); few rows × long rows (column splits);
// many rows × short rows (one chunk per warp).
TEST_P(GemvAllTypes, MatchesCpuReference) {
  DB_REQUIRE_CUDA();
  const WeightType t = GetParam();
  const struct {
    int64_t rows, cols;
  } shapes[] = {{1, 256},   {3, 768},    {17, 2816},  {130, 256}, {1031, 2816},
                {5, 18944}, {67, 18944}, {2500, 512}, {9, 4352}};
  for (const auto& s : shapes) check_gemv(t, s.rows, s.cols, false, false);
}

TEST_P(GemvAllTypes, BiasAndResidual) {
  DB_REQUIRE_CUDA();
  const WeightType t = GetParam();
  check_gemv(t, 97, 1024, true, false);
  check_gemv(t, 97, 1024, false, true);
  check_gemv(t, 33, 2816, true, true);
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
    check_gemv(t, 14, 896, false, false);  // Qwen2-0.5B hidden size
    check_gemv(t, 3, 32, false, false);
    check_gemv(t, 40, 4864, true, false);
  }
  // Float types with cols % 4 != 0 take the fallback.
  for (WeightType t : {WeightType::kF32, WeightType::kF16, WeightType::kBF16}) {
    check_gemv(t, 11, 101, true, true);
    check_gemv(t, 2, 6, false, false);
  }
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
