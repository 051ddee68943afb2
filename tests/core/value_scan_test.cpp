// core/gguf/value_scan: NaN and inf counts, finite ranges and the first non-finite value of
// hand-made tensors (F32, Q8_0 with an inf scale, F16), an unsupported type skipped, results
// independent of the thread count, and the report and JSON built from them.
#include "core/gguf/value_scan.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "tests/core/gguf_bytes.hpp"
#include "tests/support/support.hpp"

namespace decodebench::testing {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// w.f32 F32 {4, 2}: [1, -2, 3, NaN], [5, inf, -inf, 0.5]  → 1 NaN, 2 inf, range [-2, 5], first 3.
// w.q8_0 Q8_0 {32, 3} (34 B per row: f16 d, 32 int8 q; value = d·q):
//   row 0: d = 1, q = k - 16 → -16 … 15;
//   row 1: d = inf (0x7C00), q = k → inf·0 = NaN at column 0, +inf at 1 … 31;
//   row 2: d = 0.5, q = 2 → 1.
//   → 1 NaN, 31 inf, range [-16, 15], first at row 1, column 0 (index 32).
// w.i32 I32 {4}: not a weight type, skipped. w.f16 F16 {2}: [1, -1], all finite.
GgufBytes scan_fixture(bool only_clean) {
  FileSpec s;
  s.kvs = {{"general.architecture", v_string("llama")}};
  if (!only_clean) {
    s.tensors = {{"w.f32", {4, 2}, 0, 32, std::nullopt},
                 {"w.q8_0", {32, 3}, 8, 3 * 34, std::nullopt},
                 {"w.i32", {4}, 26, 16, std::nullopt}};
  }
  s.tensors.push_back({"w.f16", {2}, 1, 4, std::nullopt});
  GgufBytes b = build_gguf(s);
  const auto put = [&](uint64_t at, const void* p, size_t n) {
    std::memcpy(b.data.data() + at, p, n);
  };
  const size_t f16_index = only_clean ? 0 : 3;
  const uint16_t f16[] = {0x3C00, 0xBC00};
  put(b.at("t" + std::to_string(f16_index)), f16, sizeof(f16));
  if (only_clean) return b;
  const float f32[] = {1, -2, 3, kNaN, 5, kInf, -kInf, 0.5f};
  put(b.at("t0"), f32, sizeof(f32));
  const uint16_t d[] = {0x3C00, 0x7C00, 0x3800};
  for (int r = 0; r < 3; ++r) {
    const uint64_t row = b.at("t1") + static_cast<uint64_t>(r) * 34;
    put(row, &d[r], 2);
    for (int k = 0; k < 32; ++k) {
      const auto q = static_cast<int8_t>(r == 0 ? k - 16 : r == 1 ? k : 2);
      put(row + 2 + static_cast<uint64_t>(k), &q, 1);
    }
  }
  return b;
}

// Every field of `got` equals `want`'s (min and max exactly: the values are exact in f32).
void expect_values(const gguf::TensorValues& got, const gguf::TensorValues& want) {
  SCOPED_TRACE(want.name);
  EXPECT_EQ(got.name, want.name);
  EXPECT_EQ(got.type_id, want.type_id);
  EXPECT_EQ(got.values, want.values);
  EXPECT_EQ(got.nan, want.nan);
  EXPECT_EQ(got.inf, want.inf);
  EXPECT_EQ(got.min, want.min);
  EXPECT_EQ(got.max, want.max);
  EXPECT_EQ(got.first_nonfinite, want.first_nonfinite);
  EXPECT_EQ(got.row_length, want.row_length);
}

TEST(ValueScan, CountsNanAndInfWithRangesAndFirstIndex) {
  TempDir dir;
  scan_fixture(false).write(dir / "s.gguf");
  const gguf::Reader r((dir / "s.gguf").string());
  for (const int threads : {1, 3}) {
    SCOPED_TRACE(threads);
    const gguf::ValueScan s = gguf::scan_values(r, threads);
    ASSERT_EQ(s.tensors.size(), 3u);
    ASSERT_EQ(s.skipped.size(), 1u);
    EXPECT_EQ(s.skipped[0].first, "w.i32");
    EXPECT_EQ(s.skipped[0].second, 26u);
    EXPECT_EQ(s.values, 8u + 96u + 2u);
    EXPECT_EQ(s.nonfinite_tensors(), 2u);

    // {name, type id, values, NaN, inf, min, max, first non-finite index, row length}
    expect_values(s.tensors[0], {"w.f32", 0, 8, 1, 2, -2.0f, 5.0f, 3, 4});
    expect_values(s.tensors[1], {"w.q8_0", 8, 96, 1, 31, -16.0f, 15.0f, 32, 32});
    expect_values(s.tensors[2], {"w.f16", 1, 2, 0, 0, -1.0f, 1.0f, -1, 2});

    EXPECT_EQ(gguf::value_scan_report(s),
              "values: 2 of 3 tensor(s) hold NaN or inf (106 values dequantized); 1 tensor(s) of "
              "types decodebench does not read were not scanned\n"
              "  w.f32: 1 NaN, 2 inf of 8 values (first at row 0, column 3)\n"
              "  w.q8_0: 1 NaN, 31 inf of 96 values (first at row 1, column 0)\n"
              "  w.i32: I32, not scanned\n");
    EXPECT_EQ(gguf::value_scan_report(s, 1),
              "values: 2 of 3 tensor(s) hold NaN or inf (106 values dequantized); 1 tensor(s) of "
              "types decodebench does not read were not scanned\n"
              "  w.f32: 1 NaN, 2 inf of 8 values (first at row 0, column 3)\n"
              "  ... and 1 more\n"
              "  w.i32: I32, not scanned\n");

    const nlohmann::json j = gguf::value_scan_json(s);
    EXPECT_EQ(j["scanned_tensors"], 3);
    EXPECT_EQ(j["values"], 106);
    EXPECT_EQ(j["nonfinite_tensors"], 2);
    EXPECT_EQ(j["skipped"], (nlohmann::json::array({{{"name", "w.i32"}, {"type", "I32"}}})));
    EXPECT_EQ(j["tensors"][1]["type"], "Q8_0");
    EXPECT_EQ(j["tensors"][1]["nan"], 1);
    EXPECT_EQ(j["tensors"][1]["inf"], 31);
    EXPECT_EQ(j["tensors"][1]["min"], -16.0);
    EXPECT_EQ(j["tensors"][1]["first_nonfinite"], (nlohmann::json{{"row", 1}, {"column", 0}}));
    EXPECT_TRUE(j["tensors"][2]["first_nonfinite"].is_null());
  }
}

TEST(ValueScan, AllFiniteFileSaysSoWithItsRange) {
  TempDir dir;
  scan_fixture(true).write(dir / "c.gguf");
  const gguf::Reader r((dir / "c.gguf").string());
  const gguf::ValueScan s = gguf::scan_values(r, 2);
  EXPECT_EQ(s.nonfinite_tensors(), 0u);
  EXPECT_EQ(gguf::value_scan_report(s),
            "values: 1 tensor(s), 2 values dequantized, all finite (from -1 to 1)\n");
}

// 100,000 rows of one value (F32 {1, 100000}): the scan splits them into chunks of 16,384 rows
// over the threads, and every thread count gives the same counts, first index and range: NaN at
// 5 and 99,999, inf at 70,000, -0 at 50,000 and +0 at 20,000 (in other chunks) below the other
// values (1 to 7), so the minimum is -0 whatever order the chunks finish in.
TEST(ValueScan, ChunksOnManyThreadsMergeToTheSameResult) {
  TempDir dir;
  constexpr int64_t kRows = 100000;
  FileSpec spec;
  spec.kvs = {{"general.architecture", v_string("llama")}};
  spec.tensors = {{"w.long", {1, kRows}, 0, kRows * 4, std::nullopt}};
  GgufBytes b = build_gguf(spec);
  std::vector<float> v(kRows);
  for (int64_t i = 0; i < kRows; ++i) v[static_cast<size_t>(i)] = 1.0f + static_cast<float>(i % 7);
  v[5] = kNaN;
  v[99999] = kNaN;
  v[70000] = kInf;
  v[20000] = 0.0f;
  v[50000] = -0.0f;
  std::memcpy(b.data.data() + b.at("t0"), v.data(), v.size() * 4);
  b.write(dir / "long.gguf");
  const gguf::Reader r((dir / "long.gguf").string());
  for (const int threads : {1, 2, 4, 6}) {
    SCOPED_TRACE(threads);
    const gguf::ValueScan s = gguf::scan_values(r, threads);
    ASSERT_EQ(s.tensors.size(), 1u);
    const gguf::TensorValues& t = s.tensors[0];
    EXPECT_EQ(t.values, static_cast<uint64_t>(kRows));
    EXPECT_EQ(t.nan, 2u);
    EXPECT_EQ(t.inf, 1u);
    EXPECT_EQ(t.first_nonfinite, 5);
    EXPECT_EQ(t.min, 0.0f);
    EXPECT_TRUE(std::signbit(t.min)) << "the minimum is -0, not +0";
    EXPECT_EQ(t.max, 7.0f);
  }
}

// A tensor with no finite value at all reports no range (null in the JSON), not 0.
TEST(ValueScan, TensorWithoutFiniteValuesHasNoRange) {
  TempDir dir;
  FileSpec s;
  s.kvs = {{"general.architecture", v_string("llama")}};
  s.tensors = {{"w.nan", {3}, 0, 12, std::nullopt}};
  GgufBytes b = build_gguf(s);
  const float v[] = {kNaN, kInf, kNaN};
  std::memcpy(b.data.data() + b.at("t0"), v, sizeof(v));
  b.write(dir / "n.gguf");
  const gguf::ValueScan scan = gguf::scan_values(gguf::Reader((dir / "n.gguf").string()), 1);
  ASSERT_EQ(scan.tensors.size(), 1u);
  EXPECT_EQ(scan.tensors[0].nan, 2u);
  EXPECT_EQ(scan.tensors[0].inf, 1u);
  EXPECT_EQ(scan.tensors[0].first_nonfinite, 0);
  const nlohmann::json j = gguf::value_scan_json(scan);
  EXPECT_TRUE(j["tensors"][0]["min"].is_null());
  EXPECT_TRUE(j["tensors"][0]["max"].is_null());
}

}  // namespace
}  // namespace decodebench::testing
