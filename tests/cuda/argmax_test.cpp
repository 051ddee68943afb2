// Two-pass argmax against cpu::argmax and against the expected index of constructed rows.
// Exact: the returned index must be identical.
#include "cuda/kernels/argmax.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/cpu/ops.hpp"
#include "core/error.hpp"
#include "tests/cuda/cuda_test_util.hpp"

namespace decodebench::cuda {
namespace {

using testing::download;
using testing::random_floats;
using testing::upload;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

/// A named row and the index it must give (-1: whatever cpu::argmax says).
struct Row {
  std::string name;
  std::vector<float> x;
  int64_t expect;
};

/// The adversarial rows for length n.
std::vector<Row> make_rows(int64_t n) {
  const size_t sn = static_cast<size_t>(n);
  std::vector<Row> rows;
  rows.push_back({"random", random_floats(sn, static_cast<uint32_t>(n), -10.0f, 10.0f), -1});
  rows.push_back({"all equal", std::vector<float>(sn, 0.5f), 0});
  {
    std::vector<float> x = random_floats(sn, 2u + static_cast<uint32_t>(n));
    x[sn - 1] = 5.0f;
    rows.push_back({"max at last index", x, n - 1});
  }
  {
    std::vector<float> x = random_floats(sn, 3u + static_cast<uint32_t>(n));
    x[0] = 5.0f;
    rows.push_back({"max at index 0", x, 0});
  }
  {
    std::vector<float> x = random_floats(sn, 4u + static_cast<uint32_t>(n));
    const int64_t i = n / 3;
    x[static_cast<size_t>(i)] = kNaN;
    x[sn - 1] = kNaN;        // a later NaN loses
    if (i > 0) x[0] = kInf;  // NaN beats +inf
    rows.push_back({"NaN wins (first NaN)", x, i});
  }
  {
    std::vector<float> x = random_floats(sn, 5u + static_cast<uint32_t>(n));
    x[0] = kNaN;
    rows.push_back({"NaN at index 0", x, 0});
  }
  rows.push_back({"all -inf", std::vector<float>(sn, -kInf), 0});
  {
    // The maximum inside the last (partial) chunk of 2048 values of pass 1.
    std::vector<float> x = random_floats(sn, 6u + static_cast<uint32_t>(n));
    const int64_t last_start = (n - 1) / 2048 * 2048;
    const int64_t i = last_start + (n - last_start) / 2;
    x[static_cast<size_t>(i)] = 7.0f;
    rows.push_back({"max in final partial block", x, i});
  }
  {
    // Two equal maxima far apart (different blocks when n is large): the lower index wins.
    std::vector<float> x = random_floats(sn, 7u + static_cast<uint32_t>(n));
    const int64_t a = n / 4, b = n - 1 - n / 5;
    x[static_cast<size_t>(b)] = 9.0f;
    x[static_cast<size_t>(a)] = 9.0f;
    rows.push_back({"two equal maxima", x, a < b ? a : b});
  }
  {
    // Two equal maxima next to each other (same warp): the lower index wins.
    std::vector<float> x = random_floats(sn, 8u + static_cast<uint32_t>(n));
    const int64_t a = n / 2 > 0 ? n / 2 - 1 : 0;
    x[static_cast<size_t>(a)] = 9.0f;
    x[static_cast<size_t>(a + 1)] = 9.0f;
    rows.push_back({"adjacent equal maxima", x, a});
  }
  {
    // -0 and +0 compare equal: the first zero wins.
    std::vector<float> x(sn, -1.0f);
    x[sn / 2] = -0.0f;
    x[sn - 1] = 0.0f;
    rows.push_back({"-0 before +0", x, n / 2 == n - 1 ? n - 1 : n / 2});
  }
  return rows;
}

class ArgmaxSizes : public ::testing::TestWithParam<int64_t> {};

TEST_P(ArgmaxSizes, MatchesCpu) {
  DB_REQUIRE_CUDA();
  const int64_t n = GetParam();
  const size_t scratch_bytes = argmax_scratch_bytes(n, 1);
  DeviceBuffer d_scratch(scratch_bytes);
  DeviceBuffer d_out(sizeof(int32_t));
  for (const Row& row : make_rows(n)) {
    DeviceBuffer d_x = upload(row.x);
    testing::poke(d_out.get(), int32_t{-123});
    launch_argmax(d_x.data<float>(), n, d_scratch.get(), scratch_bytes, d_out.data<int32_t>(),
                  nullptr);
    testing::sync();
    const int32_t got = download<int32_t>(d_out.get(), 1)[0];
    const int32_t cpu_ref = cpu::argmax(row.x.data(), n);
    if (row.expect >= 0) {
      ASSERT_EQ(cpu_ref, row.expect) << "test row construction, n=" << n << " " << row.name;
    }
    EXPECT_EQ(got, cpu_ref) << "n=" << n << " row '" << row.name << "': value at gpu index "
                            << (got >= 0 && got < n ? row.x[static_cast<size_t>(got)] : NAN)
                            << ", at cpu index " << row.x[static_cast<size_t>(cpu_ref)];
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, ArgmaxSizes,
                         ::testing::Values(int64_t{2}, int64_t{1000}, int64_t{49152},
                                           int64_t{152064}, int64_t{262144}, int64_t{1048576}),
                         [](const ::testing::TestParamInfo<int64_t>& info) {
                           return "n" + std::to_string(info.param);
                         });

TEST(Argmax, BatchedEqualsPerRow) {
  DB_REQUIRE_CUDA();
  for (const int64_t n : {int64_t{2}, int64_t{1000}, int64_t{152064}}) {
    const std::vector<Row> rows = make_rows(n);
    const int64_t m = static_cast<int64_t>(rows.size());
    const int64_t stride = n + 37;                                // padded rows
    std::vector<float> x(static_cast<size_t>(m * stride), kNaN);  // padding must not be read
    for (int64_t r = 0; r < m; ++r) {
      std::copy(rows[r].x.begin(), rows[r].x.end(), x.begin() + r * stride);
    }
    const size_t scratch_bytes = argmax_scratch_bytes(n, m);
    DeviceBuffer d_scratch(scratch_bytes);
    DeviceBuffer d_x = upload(x);
    DeviceBuffer d_out(static_cast<size_t>(m) * sizeof(int32_t));
    launch_argmax_batched(d_x.data<float>(), n, m, stride, d_scratch.get(), scratch_bytes,
                          d_out.data<int32_t>(), nullptr);
    testing::sync();
    const std::vector<int32_t> got = download<int32_t>(d_out.get(), static_cast<size_t>(m));
    for (int64_t r = 0; r < m; ++r) {
      EXPECT_EQ(got[r], cpu::argmax(rows[r].x.data(), n))
          << "n=" << n << " batched row " << r << " '" << rows[r].name << "'";
    }
  }
}

// With d_advance the final kernel writes the next greedy step's inputs {argmax, pos + 1,
// pos + 2} when their `on` word is set, and leaves them alone when it is not.
TEST(Argmax, AdvancesTheNextStepsInputsWhenAsked) {
  DB_REQUIRE_CUDA();
  const int64_t n = 49152;
  std::vector<float> x(static_cast<size_t>(n), -1.0f);
  x[31337] = 5.0f;
  DeviceBuffer d_x = upload(x);
  const size_t scratch_bytes = argmax_scratch_bytes(n, 1);
  DeviceBuffer d_scratch(scratch_bytes);
  DeviceBuffer d_out(sizeof(int32_t));
  for (const int32_t on : {1, 0}) {
    DeviceBuffer d_in = upload(std::vector<int32_t>{7, 41, 42, on});
    launch_argmax(d_x.data<float>(), n, d_scratch.get(), scratch_bytes, d_out.data<int32_t>(),
                  nullptr, false, d_in.data<int32_t>());
    testing::sync();
    EXPECT_EQ(download<int32_t>(d_out.get(), 1)[0], 31337);
    const std::vector<int32_t> want =
        on ? std::vector<int32_t>{31337, 42, 43, 1} : std::vector<int32_t>{7, 41, 42, 0};
    EXPECT_EQ(download<int32_t>(d_in.get(), 4), want) << "on=" << on;
  }
  // One row only: a batch has no single next step.
  DeviceBuffer d_in(4 * sizeof(int32_t));
  EXPECT_THROW(
      launch_argmax_batched(d_x.data<float>(), 1000, 2, 1000, d_scratch.get(), scratch_bytes,
                            d_out.data<int32_t>(), nullptr, false, d_in.data<int32_t>()),
      Error);
}

// With out_slots the step at position pos (the inputs' second word, before advancing) writes
// d_out[pos % out_slots] and no other slot; slot counts that are not powers of two in [1, 64], or
// slots without inputs to read the position from, are refused.
TEST(Argmax, WritesTheTokenSlotOfItsPosition) {
  DB_REQUIRE_CUDA();
  const int64_t n = 3000;
  std::vector<float> x(static_cast<size_t>(n), 0.5f);
  x[2718] = 9.0f;
  DeviceBuffer d_x = upload(x);
  const size_t scratch_bytes = argmax_scratch_bytes(n, 1);
  DeviceBuffer d_scratch(scratch_bytes);
  for (const int32_t pos : {41, 42, 44}) {
    DeviceBuffer d_out = upload(std::vector<int32_t>{-1, -1, -1, -1});
    for (const int32_t on : {1, 0}) {
      DeviceBuffer d_in = upload(std::vector<int32_t>{7, pos, pos + 1, on});
      launch_argmax(d_x.data<float>(), n, d_scratch.get(), scratch_bytes, d_out.data<int32_t>(),
                    nullptr, false, d_in.data<int32_t>(), nullptr, 4);
      testing::sync();
      std::vector<int32_t> want{-1, -1, -1, -1};
      want[static_cast<size_t>(pos % 4)] = 2718;
      EXPECT_EQ(download<int32_t>(d_out.get(), 4), want) << "pos " << pos << " on " << on;
    }
  }
  DeviceBuffer d_out(4 * sizeof(int32_t));
  DeviceBuffer d_in = upload(std::vector<int32_t>{7, 1, 2, 1});
  for (const int slots : {0, 3, 128}) {
    EXPECT_THROW(
        launch_argmax(d_x.data<float>(), n, d_scratch.get(), scratch_bytes, d_out.data<int32_t>(),
                      nullptr, false, d_in.data<int32_t>(), nullptr, slots),
        Error)
        << slots;
  }
  EXPECT_THROW(launch_argmax(d_x.data<float>(), n, d_scratch.get(), scratch_bytes,
                             d_out.data<int32_t>(), nullptr, false, nullptr, nullptr, 2),
               Error);
}

TEST(Argmax, ScratchSizeAndArgumentChecks) {
  EXPECT_EQ(argmax_scratch_bytes(2, 1), 8u);
  EXPECT_EQ(argmax_scratch_bytes(2048, 1), 8u);
  EXPECT_EQ(argmax_scratch_bytes(2049, 3), 3u * 2u * 8u);
  EXPECT_THROW((void)argmax_scratch_bytes(0, 1), Error);
  EXPECT_THROW((void)argmax_scratch_bytes(10, 0), Error);
  // Too little scratch is refused before any launch.
  EXPECT_THROW(
      launch_argmax(reinterpret_cast<const float*>(0x1000), 5000, reinterpret_cast<void*>(0x1000),
                    8, reinterpret_cast<int32_t*>(0x1000), nullptr),
      Error);
}

}  // namespace
}  // namespace decodebench::cuda
