// Tests of core/quant: dequantize_row against the gguf Python package (random blocks and rows of a
// real model), hand-computed blocks, dot_row accuracy and determinism, quantize_row round trips,
// F16/BF16 rounding edge cases and agreement with gguf.quants.quantize.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/quant/blocks.hpp"
#include "core/quant/dequant.hpp"
#include "core/quant/fp16.hpp"
#include "core/quant/weight_type.hpp"
#include "tests/support/support.hpp"

namespace {

namespace fs = std::filesystem;
namespace dt = decodebench::testing;
using decodebench::WeightType;
using decodebench::quant::dequantize_row;
using decodebench::quant::dot_row;
using decodebench::quant::f16_to_f32;
using decodebench::quant::f32_to_bf16;
using decodebench::quant::f32_to_f16;
using decodebench::quant::quantize_row;

// ---- helpers ---------------------------------------------------------------------------------

const char* name_of(WeightType t) { return decodebench::weight_traits(t).name; }
int64_t block_elems(WeightType t) { return decodebench::weight_traits(t).block_elems; }
int64_t bytes_for(WeightType t, int64_t n) { return decodebench::row_bytes(t, n); }

WeightType type_named(const std::string& name) {
  for (WeightType t : decodebench::kAllWeightTypes) {
    if (name == name_of(t)) return t;
  }
  throw std::runtime_error("unknown type in manifest: " + name);
}

// Distance in units in the last place between two floats (0 for equal values, including ±0 and
// equal infinities); NaN is infinitely far from everything.
int64_t ulp_distance(float a, float b) {
  if (a == b) return 0;
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<int64_t>::max();
  auto ordered = [](float f) {
    const int32_t i = std::bit_cast<int32_t>(f);
    return i < 0 ? int64_t{INT32_MIN} - i : int64_t{i};
  };
  return std::llabs(ordered(a) - ordered(b));
}

std::vector<uint8_t> read_bytes(const fs::path& p) {
  const std::string s = dt::read_file(p);
  return {s.begin(), s.end()};
}

std::vector<float> read_f32(const fs::path& p) {
  const std::string s = dt::read_file(p);
  std::vector<float> v(s.size() / sizeof(float));
  std::memcpy(v.data(), s.data(), v.size() * sizeof(float));
  return v;
}

struct FixtureCase {
  std::string name;
  WeightType type;
  int64_t n;
  std::vector<uint8_t> bytes;  // <case>.bin
  std::vector<float> floats;   // <case>.f32
};

// Runs tests/fixtures/quant_blocks.py with `args` (OUT_DIR last) and loads the manifest's cases.
std::vector<FixtureCase> run_fixture(const std::vector<std::string>& args, const fs::path& dir) {
  std::vector<std::string> argv{dt::python(),
                                (dt::source_dir() / "tests/fixtures/quant_blocks.py").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back(dir.string());
  const dt::CommandResult r = dt::run_command(argv, 300);
  if (r.exit_code != 0) {
    ADD_FAILURE() << "quant_blocks.py failed (exit " << r.exit_code << "):\n" << r.err;
    return {};
  }
  std::vector<FixtureCase> cases;
  std::istringstream manifest(dt::read_file(dir / "manifest.txt"));
  std::string name, type;
  int64_t n = 0;
  while (manifest >> name >> type >> n) {
    FixtureCase c{name, type_named(type), n, read_bytes(dir / (name + ".bin")),
                  read_f32(dir / (name + ".f32"))};
    EXPECT_EQ(static_cast<int64_t>(c.bytes.size()), bytes_for(c.type, n)) << name;
    EXPECT_EQ(static_cast<int64_t>(c.floats.size()), n) << name;
    cases.push_back(std::move(c));
  }
  return cases;
}

// Byte offsets of the f16 scale fields inside a block (gguf-facts.md §2.2).
std::vector<int> f16_fields(WeightType t) {
  switch (t) {
    case WeightType::kQ4_0:
    case WeightType::kQ5_0:
    case WeightType::kQ8_0:
      return {0};
    case WeightType::kQ4_1:
    case WeightType::kQ5_1:
    case WeightType::kQ4_K:
    case WeightType::kQ5_K:
      return {0, 2};
    case WeightType::kQ6_K:
      return {208};
    default:
      return {};
  }
}

// A random row of `n` values: normal floats for the float types; random bytes with f16 scales of
// magnitude 0.01..1 (either sign) for block types.
std::vector<uint8_t> random_row(WeightType t, int64_t n, std::mt19937& rng) {
  std::vector<uint8_t> row(static_cast<size_t>(bytes_for(t, n)));
  std::normal_distribution<float> normal;
  if (t == WeightType::kF32 || t == WeightType::kF16 || t == WeightType::kBF16) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& f : v) f = normal(rng);
    quantize_row(t, v.data(), row.data(), n);
    return row;
  }
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> mag(0.01f, 1.0f);
  for (auto& b : row) b = static_cast<uint8_t>(byte(rng));
  const int64_t bb = decodebench::weight_traits(t).block_bytes;
  for (int64_t off = 0; off < static_cast<int64_t>(row.size()); off += bb) {
    for (int field : f16_fields(t)) {
      const uint16_t h = f32_to_f16(byte(rng) < 128 ? mag(rng) : -mag(rng));
      std::memcpy(&row[off + field], &h, 2);
    }
  }
  return row;
}

std::vector<float> random_normal(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = normal(rng);
  return v;
}

std::vector<float> dequantized(WeightType t, const void* row, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  dequantize_row(t, row, out.data(), n);
  return out;
}

// Compares dequantize_row with gguf's floats. Tolerance: ≤ 1 ulp (both compute the same f32
// expressions in the same order, so exact equality is expected; 1 ulp leaves room for a compiler
// contracting d·q + m into one fused multiply-add on other targets). Returns the number of
// values that are not bit-identical.
int64_t expect_matches_gguf(const FixtureCase& c) {
  const std::vector<float> got = dequantized(c.type, c.bytes.data(), c.n);
  int64_t inexact = 0, reported = 0;
  for (int64_t i = 0; i < c.n; ++i) {
    const int64_t ulps = ulp_distance(got[i], c.floats[i]);
    if (std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(c.floats[i])) ++inexact;
    if (ulps > 1 && reported++ < 5) {
      ADD_FAILURE() << c.name << " value " << i << " (block " << i / block_elems(c.type)
                    << "): got " << got[i] << ", gguf " << c.floats[i] << " (" << ulps << " ulp)";
    }
  }
  return inexact;
}

// Double-precision Σ w·x of the dequantized row, and Σ|w·x|.
void reference_dot(const std::vector<float>& w, const float* x, double* dot, double* abs_sum) {
  *dot = 0;
  *abs_sum = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    *dot += static_cast<double>(w[i]) * x[i];
    *abs_sum += std::fabs(static_cast<double>(w[i]) * x[i]);
  }
}

// Tolerance of dot_row against the exact dot of the dequantized row: f32 summation with lane
// chains of at most n/8 + 40 additions (lane partials, block scaling, lane tree) bounds the error
// by (n/8 + 40)·2^-24·Σ|terms|; the factor 2 covers the scale-factored terms (d·Σq·x, m·Σx), whose
// magnitudes can exceed |w·x| when d·q and m nearly cancel.
double dot_tolerance(int64_t n, double abs_sum) {
  return 2.0 * (static_cast<double>(n) / 8.0 + 40.0) * std::ldexp(1.0, -24) * abs_sum + 1e-30;
}

// ---- dequantize_row against gguf ------------------------------------------------------------

TEST(QuantDequantTest, MatchesGgufOnRandomBlocksOfEveryType) {
  DB_REQUIRE_PYTHON_GGUF();
  dt::TempDir dir;
  const auto cases = run_fixture({"random"}, dir.path());
  ASSERT_EQ(cases.size(), std::size(decodebench::kAllWeightTypes));
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_GT(c.n, 1000);
    const int64_t inexact = expect_matches_gguf(c);
    // On this project's x86-64 baseline (no FMA) every value is bit-identical.
    EXPECT_EQ(inexact, 0) << c.name << ": values within 1 ulp but not bit-identical";
  }
}

// A row at an odd address (a GGUF file of general.alignment 1 packs tensors back to back)
// dequantizes to the same values as the same bytes aligned. The decoders read 16- and 32-bit
// fields, which a sanitizer build reported as misaligned loads before round 36; such a row now
// goes through an aligned copy, whose byte count and recursion this checks for every type (x86
// itself tolerates the misaligned loads, so only a wrong copy fails here).
TEST(QuantDequantTest, RowsAtOddAddressesDequantizeAlike) {
  for (const WeightType t : decodebench::kAllWeightTypes) {
    const int64_t n = 512;
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = std::sin(0.37f * i) * 3.0f;
    const auto bytes = static_cast<size_t>(decodebench::row_bytes(t, n));
    std::vector<uint64_t> storage(bytes / 8 + 2);
    auto* aligned = reinterpret_cast<uint8_t*>(storage.data());
    quantize_row(t, x.data(), aligned, n);
    std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n));
    dequantize_row(t, aligned, want.data(), n);
    for (const size_t shift : {size_t{1}, size_t{2}, size_t{3}}) {
      std::vector<uint64_t> other(bytes / 8 + 2);
      uint8_t* odd = reinterpret_cast<uint8_t*>(other.data()) + shift;
      std::memcpy(odd, aligned, bytes);
      dequantize_row(t, odd, got.data(), n);
      EXPECT_EQ(got, want) << decodebench::weight_traits(t).name << " at +" << shift;
    }
  }
}

fs::path smollm2_path(std::string* why_missing) {
  fs::path p;
  if (const char* env = std::getenv("DECODEBENCH_SMOLLM2"); env != nullptr && *env != '\0') {
    p = env;
  } else if (const char* home = std::getenv("HOME"); home != nullptr) {
    p = fs::path(home) / ".cache/decodebench/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  }
  if (p.empty() || !fs::exists(p)) {
    *why_missing = "SmolLM2-135M-Instruct.Q4_1.gguf not found (" +
                   (p.empty() ? std::string("HOME unset") : p.string()) +
                   "); set DECODEBENCH_SMOLLM2 to its path";
    return {};
  }
  return p;
}

TEST(QuantDequantTest, MatchesGgufOnSmolLM2Rows) {
  DB_REQUIRE_PYTHON_GGUF();
  std::string why;
  const fs::path model = smollm2_path(&why);
  if (model.empty()) GTEST_SKIP() << why;
  dt::TempDir dir;
  const auto cases = run_fixture({"model", model.string()}, dir.path());
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].type, WeightType::kQ4_1);
  EXPECT_EQ(cases[1].type, WeightType::kQ8_0);
  std::mt19937 rng(5);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(expect_matches_gguf(c), 0);
    // The real rows also go through dot_row (all rows at once: the row length is irrelevant).
    const std::vector<float> x = random_normal(c.n, rng);
    double ref = 0, abs_sum = 0;
    reference_dot(c.floats, x.data(), &ref, &abs_sum);
    EXPECT_NEAR(dot_row(c.type, c.bytes.data(), x.data(), c.n), ref, dot_tolerance(c.n, abs_sum));
  }
}

// ---- hand-computed blocks -------------------------------------------------------------------

TEST(QuantDequantTest, HandComputedQ4_0) {
  // d = f16 0x3800 = 0.5. Byte j holds low nibble j and high nibble 15 − j.
  // Element j (< 16) = 0.5·(j − 8); element j + 16 = 0.5·((15 − j) − 8) = 0.5·(7 − j).
  decodebench::quant::BlockQ4_0 b{};
  b.d = 0x3800;
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const float expected[32] = {-4.0f, -3.5f, -3.0f, -2.5f, -2.0f, -1.5f, -1.0f, -0.5f,   // j 0..7
                              0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  2.5f,  3.0f,  3.5f,    // j 8..15
                              3.5f,  3.0f,  2.5f,  2.0f,  1.5f,  1.0f,  0.5f,  0.0f,    // 16..23
                              -0.5f, -1.0f, -1.5f, -2.0f, -2.5f, -3.0f, -3.5f, -4.0f};  // 24..31
  float got[32];
  dequantize_row(WeightType::kQ4_0, &b, got, 32);
  for (int e = 0; e < 32; ++e) EXPECT_EQ(got[e], expected[e]) << "element " << e;
  // Σ with x = 1: Σ_j 0.5(j − 8) = −4 and Σ_j 0.5(7 − j) = −4 → −8.
  // With x[e] = e: Σ_j 0.5(j − 8)·j = 0.5·(1240 − 960) = 140 and
  // Σ_j 0.5(7 − j)(j + 16) = 0.5·Σ_j (112 − 9j − j²) = 0.5·(1792 − 1080 − 1240) = −264 → −124.
  const std::vector<float> ones(32, 1.0f);
  EXPECT_EQ(dot_row(WeightType::kQ4_0, &b, ones.data(), 32), -8.0f);
  std::vector<float> idx(32);
  for (int e = 0; e < 32; ++e) idx[e] = static_cast<float>(e);
  EXPECT_EQ(dot_row(WeightType::kQ4_0, &b, idx.data(), 32), -124.0f);
}

TEST(QuantDequantTest, HandComputedQ8_0) {
  // d = f16 0x3400 = 0.25; qs[i] = 4i − 64 for i = 1..30 → value i − 16; qs[0] = −128 → −32;
  // qs[31] = 127 → 31.75.
  decodebench::quant::BlockQ8_0 b{};
  b.d = 0x3400;
  for (int i = 1; i <= 30; ++i) b.qs[i] = static_cast<int8_t>(4 * i - 64);
  b.qs[0] = -128;
  b.qs[31] = 127;
  float got[32];
  dequantize_row(WeightType::kQ8_0, &b, got, 32);
  EXPECT_EQ(got[0], -32.0f);
  EXPECT_EQ(got[1], -15.0f);
  EXPECT_EQ(got[16], 0.0f);
  EXPECT_EQ(got[30], 14.0f);
  EXPECT_EQ(got[31], 31.75f);
  for (int i = 1; i <= 30; ++i) EXPECT_EQ(got[i], static_cast<float>(i - 16)) << i;
  // Σ with x = 1: Σ_{i=1..30}(i − 16) = 465 − 480 = −15, plus −32 + 31.75 → −15.25.
  const std::vector<float> ones(32, 1.0f);
  EXPECT_EQ(dot_row(WeightType::kQ8_0, &b, ones.data(), 32), -15.25f);
}

TEST(QuantDequantTest, HandComputedQ4_K) {
  // d = 1 (0x3C00), dmin = 0.5 (0x3800).
  // Sub-block scales sc = {1, 2, 3, 4, 5, 6, 7, 63}, mins mn = {0, 1, 2, 3, 4, 5, 6, 40}, packed:
  //   bytes 0-3: sc0..3 | (sc4..7 >> 4) << 6  = 1, 2, 3, 4 + (3 << 6) = 196
  //   bytes 4-7: mn0..3 | (mn4..7 >> 4) << 6  = 0, 1, 2, 3 + (2 << 6) = 131
  //   bytes 8-11: (sc4..7 & 15) | (mn4..7 & 15) << 4 = 5 + 64 = 69, 6 + 80 = 86, 7 + 96 = 103,
  //               15 + 128 = 143
  // qs[32c + l] = (l & 15) | (15 − (l & 15)) << 4: element 64c + l (sub-block 2c) has code l & 15,
  // element 64c + 32 + l (sub-block 2c + 1) has code 15 − (l & 15).
  // Value = d·sc·q − dmin·mn = sc·q − mn/2.
  decodebench::quant::BlockQ4_K b{};
  b.d = 0x3C00;
  b.dmin = 0x3800;
  const uint8_t scales[12] = {1, 2, 3, 196, 0, 1, 2, 131, 69, 86, 103, 143};
  std::memcpy(b.scales, scales, 12);
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      b.qs[32 * c + l] = static_cast<uint8_t>((l & 15) | ((15 - (l & 15)) << 4));
    }
  }
  float got[256];
  dequantize_row(WeightType::kQ4_K, &b, got, 256);
  EXPECT_EQ(got[0], 0.0f);      // s0, q 0: 1·0 − 0
  EXPECT_EQ(got[5], 5.0f);      // s0, q 5: 1·5 − 0
  EXPECT_EQ(got[32], 29.5f);    // s1, q 15: 2·15 − 0.5
  EXPECT_EQ(got[33], 27.5f);    // s1, q 14: 2·14 − 0.5
  EXPECT_EQ(got[64], -1.0f);    // s2, q 0: 3·0 − 1
  EXPECT_EQ(got[100], 42.5f);   // s3 (l 4), q 11: 4·11 − 1.5
  EXPECT_EQ(got[130], 8.0f);    // s4, q 2: 5·2 − 2
  EXPECT_EQ(got[170], 27.5f);   // s5 (l 10), q 5: 6·5 − 2.5
  EXPECT_EQ(got[200], 53.0f);   // s6 (l 8), q 8: 7·8 − 3
  EXPECT_EQ(got[240], 925.0f);  // s7 (l 16), q 15: 63·15 − 20
  EXPECT_EQ(got[255], -20.0f);  // s7 (l 31), q 0: 63·0 − 20
  // Σ with x = 1: each sub-block's codes sum to 2·(0 + … + 15) = 240, so
  // Σ_s (240·sc_s − 32·mn_s/2) = 240·91 − 16·61 = 21840 − 976 = 20864.
  const std::vector<float> ones(256, 1.0f);
  EXPECT_EQ(dot_row(WeightType::kQ4_K, &b, ones.data(), 256), 20864.0f);
}

// ---- dot_row ----------------------------------------------------------------------------------

std::vector<int64_t> lengths_for(WeightType t) {
  const int64_t be = block_elems(t);
  if (be == 1) return {1, 3, 15, 16, 17, 100, 1000, 8195};
  if (be == 32) return {32, 64, 7 * 32, 33 * 32, 270 * 32};
  return {256, 512, 5 * 256, 33 * 256};
}

TEST(QuantDotTest, MatchesDoublePrecisionDotOfDequantizedRow) {
  std::mt19937 rng(11);
  for (WeightType t : decodebench::kAllWeightTypes) {
    for (int64_t n : lengths_for(t)) {
      SCOPED_TRACE(std::string(name_of(t)) + " n=" + std::to_string(n));
      const std::vector<uint8_t> row = random_row(t, n, rng);
      const std::vector<float> x = random_normal(n, rng);
      double ref = 0, abs_sum = 0;
      reference_dot(dequantized(t, row.data(), n), x.data(), &ref, &abs_sum);
      ASSERT_GT(abs_sum, 0.0);
      const float got = dot_row(t, row.data(), x.data(), n);
      EXPECT_NEAR(got, ref, dot_tolerance(n, abs_sum)) << "Σ|w·x| = " << abs_sum;
    }
  }
}

TEST(QuantDotTest, IsBitIdenticalAcrossCallsThreadsAndAlignments) {
  std::mt19937 rng(12);
  for (WeightType t : decodebench::kAllWeightTypes) {
    SCOPED_TRACE(name_of(t));
    const int64_t n = block_elems(t) == 1 ? 4099 : 4096;
    const std::vector<uint8_t> row = random_row(t, n, rng);
    const std::vector<float> x = random_normal(n, rng);
    const uint32_t first = std::bit_cast<uint32_t>(dot_row(t, row.data(), x.data(), n));
    for (int rep = 0; rep < 3; ++rep) {
      EXPECT_EQ(std::bit_cast<uint32_t>(dot_row(t, row.data(), x.data(), n)), first);
    }
    // Other threads.
    uint32_t from_thread[4] = {};
    std::vector<std::thread> threads;
    for (auto& out : from_thread) {
      threads.emplace_back(
          [&, o = &out] { *o = std::bit_cast<uint32_t>(dot_row(t, row.data(), x.data(), n)); });
    }
    for (auto& th : threads) th.join();
    for (uint32_t v : from_thread) EXPECT_EQ(v, first);
    // Other alignments of x (offset by 1..3 floats) and of the row (offset by 4 bytes, which
    // keeps every type's natural alignment but breaks 16-byte alignment).
    std::vector<float> x_shifted(static_cast<size_t>(n) + 4);
    std::vector<uint8_t> row_shifted(row.size() + 16);
    for (int shift = 1; shift <= 3; ++shift) {
      std::copy(x.begin(), x.end(), x_shifted.begin() + shift);
      std::copy(row.begin(), row.end(), row_shifted.begin() + 4);
      EXPECT_EQ(
          std::bit_cast<uint32_t>(dot_row(t, row_shifted.data() + 4, x_shifted.data() + shift, n)),
          first)
          << "x shifted by " << shift;
    }
  }
}

// ---- quantize_row ---------------------------------------------------------------------------

// Max |dequantize(quantize(x)) − x| as a fraction of the block's max |x| (block = 32 values for
// the legacy types, the 256-value super-block for K-quants). Derivations (d = scale before f16
// rounding, f16 rounding ≤ 2^-11 relative, scales in the f16 normal range):
//   Q8_0: d/2 + 127·d·2^-11 with d = max/127                                  → 0.00443
//   Q4_0: one full step when the value opposite the extreme is clipped from code 16 to 15:
//         d·(1 + 8·2^-11), d = max/8                                           → 0.12549
//   Q5_0: same with d = max/16                                                 → 0.06274
//   Q4_1: d/2 + 15·d·2^-11 + max·2^-11, d = (hi − lo)/15 ≤ 2·max/15            → 0.06813
//   Q5_1: same with 31                                                         → 0.03372
//   Q4_K: dl/2 with dl ≤ (2 + 1/63)·max/15 · (1 + 1/63), incl. f16 bumps        → 0.06826
//   Q5_K: same with 31                                                         → 0.03303
//   Q6_K: dl/2 with dl ≤ max/31 · (1 + 1/127)                                  → 0.01626
double max_error_fraction(WeightType t) {
  switch (t) {
    case WeightType::kQ8_0:
      return 0.0045;
    case WeightType::kQ4_0:
      return 0.1256;
    case WeightType::kQ5_0:
      return 0.0628;
    case WeightType::kQ4_1:
      return 0.0682;
    case WeightType::kQ5_1:
      return 0.0338;
    case WeightType::kQ4_K:
      return 0.0684;
    case WeightType::kQ5_K:
      return 0.0332;
    case WeightType::kQ6_K:
      return 0.0163;
    case WeightType::kF16:
      return std::ldexp(1.0, -11);  // relative to |x| itself
    case WeightType::kBF16:
      return std::ldexp(1.0, -8);  // relative to |x| itself
    default:
      return 0.0;  // F32: exact
  }
}

TEST(QuantRoundTripTest, ErrorWithinStatedFractionOfBlockMaxAbs) {
  std::mt19937 rng(13);
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> log_scale(std::log(0.05f), std::log(100.0f));
  for (WeightType t : decodebench::kAllWeightTypes) {
    SCOPED_TRACE(name_of(t));
    const int64_t n = 256 * 64;
    // Blocks of 32 with their own magnitude; some all-positive, all-negative, spiky or constant.
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t b = 0; b < n / 32; ++b) {
      const float scale = std::exp(log_scale(rng));
      const int kind = static_cast<int>(b % 6);
      for (int e = 0; e < 32; ++e) {
        float v = normal(rng) * scale;
        if (kind == 1) v = std::fabs(v);
        if (kind == 2) v = -std::fabs(v);
        if (kind == 3 && e == 7) v *= 20.0f;
        if (kind == 4) v = scale;
        x[b * 32 + e] = v;
      }
    }
    std::vector<uint8_t> q(static_cast<size_t>(bytes_for(t, n)));
    quantize_row(t, x.data(), q.data(), n);
    const std::vector<float> y = dequantized(t, q.data(), n);
    const double frac = max_error_fraction(t);
    const int64_t be = block_elems(t) == 1 ? 1 : block_elems(t);
    double worst_ratio = 0;
    for (int64_t b0 = 0; b0 < n; b0 += be) {
      double amax = 0, err = 0;
      for (int64_t i = b0; i < b0 + be; ++i) {
        amax = std::max(amax, std::fabs(static_cast<double>(x[i])));
        err = std::max(err, std::fabs(static_cast<double>(y[i]) - x[i]));
      }
      if (amax > 0) worst_ratio = std::max(worst_ratio, err / amax);
      ASSERT_LE(err, frac * amax) << "block at " << b0 << ", max|x| " << amax;
    }
    // The bound is not vacuous: block types come within a factor ~2.5 of it on this data.
    if (be > 1) {
      EXPECT_GT(worst_ratio, 0.4 * frac);
    }
    if (t == WeightType::kF32) {
      EXPECT_EQ(worst_ratio, 0.0);
    }
  }
}

// K-quants round each sub-block's scale and min up, never down, so no value is clipped: per
// sub-block the error is at most half of that sub-block's own step, not just a fraction of the
// super-block's max-abs (which a clipping quantizer could also meet). With d, dmin read back from
// the block and lo = min(0, min x), hi = max x of the sub-block:
//   Q4_K/Q5_K: step ≤ (hi − lo + dmin)/nmax + d   (mn·dmin ≤ −lo + dmin, sc·d ≤ span/nmax + d)
//   Q6_K:      step ≤ max|x|/31 + d
// and the bound checked is step/2 · (1 + 2^-8) for f32 rounding and the quantizer's 2^-10
// ceiling tolerance.
TEST(QuantRoundTripTest, KQuantSubBlocksAreNeverClipped) {
  std::mt19937 rng(15);
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> log_scale(std::log(0.01f), std::log(10.0f));
  for (WeightType t : {WeightType::kQ4_K, WeightType::kQ5_K, WeightType::kQ6_K}) {
    SCOPED_TRACE(name_of(t));
    const int64_t n = 256 * 64;
    std::vector<float> x(static_cast<size_t>(n));
    // Sub-blocks of 16 with their own magnitude and offset, so scales and mins vary widely.
    for (int64_t s = 0; s < n / 16; ++s) {
      const float scale = std::exp(log_scale(rng)), shift = normal(rng) * scale;
      for (int l = 0; l < 16; ++l) x[s * 16 + l] = normal(rng) * scale + shift;
    }
    std::vector<uint8_t> q(static_cast<size_t>(bytes_for(t, n)));
    quantize_row(t, x.data(), q.data(), n);
    const std::vector<float> y = dequantized(t, q.data(), n);
    const int64_t bb = decodebench::weight_traits(t).block_bytes;
    const int sub = t == WeightType::kQ6_K ? 16 : 32;
    const double nmax = t == WeightType::kQ4_K ? 15 : 31;
    for (int64_t b = 0; b < n / 256; ++b) {
      const uint8_t* blk = q.data() + b * bb;
      uint16_t d16 = 0, dmin16 = 0;
      std::memcpy(&d16, blk + (t == WeightType::kQ6_K ? 208 : 0), 2);
      if (t != WeightType::kQ6_K) std::memcpy(&dmin16, blk + 2, 2);
      const double d = f16_to_f32(d16), dmin = f16_to_f32(dmin16);
      for (int64_t s0 = b * 256; s0 < (b + 1) * 256; s0 += sub) {
        double lo = 0, hi = x[s0], amax = 0, err = 0;
        for (int64_t i = s0; i < s0 + sub; ++i) {
          lo = std::min(lo, static_cast<double>(x[i]));
          hi = std::max(hi, static_cast<double>(x[i]));
          amax = std::max(amax, std::fabs(static_cast<double>(x[i])));
          err = std::max(err, std::fabs(static_cast<double>(y[i]) - x[i]));
        }
        const double step = t == WeightType::kQ6_K ? amax / 31 + d : (hi - lo + dmin) / nmax + d;
        ASSERT_LE(err, 0.5 * step * (1 + 1.0 / 256)) << "sub-block at " << s0;
      }
    }
  }
}

// Values on each type's grid survive quantize → dequantize bit for bit.
std::vector<float> on_grid_values(WeightType t, int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> mag(0.01f, 2.0f);
  auto rnd = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto f16v = [](float v) { return f16_to_f32(f32_to_f16(v)); };
  std::vector<float> x(static_cast<size_t>(n));
  const int64_t be = block_elems(t);
  for (int64_t b0 = 0; b0 < n; b0 += be) {
    float* v = x.data() + b0;
    const float d = f16v(mag(rng));
    const float m = f16v(rnd(0, 1) ? mag(rng) : -mag(rng));
    switch (t) {
      case WeightType::kF32:
        v[0] = mag(rng) * 1e-3f;
        break;
      case WeightType::kF16:
        v[0] = f16v(rnd(0, 1) ? mag(rng) : -mag(rng) * 1e-6f);
        break;
      case WeightType::kBF16:
        v[0] = decodebench::quant::bf16_to_f32(f32_to_bf16(mag(rng) * 1e20f));
        break;
      case WeightType::kQ8_0:  // d·q, q ∈ [−127, 127], one |q| = 127
        for (int e = 0; e < 32; ++e) v[e] = d * static_cast<float>(rnd(-127, 127));
        v[rnd(0, 31)] = d * (rnd(0, 1) ? 127.0f : -127.0f);
        break;
      case WeightType::kQ4_0:  // d·(q − 8), one q = 0 (the unique largest magnitude)
      case WeightType::kQ5_0: {
        const int half = t == WeightType::kQ4_0 ? 8 : 16;
        for (int e = 0; e < 32; ++e) v[e] = d * static_cast<float>(rnd(1, 2 * half - 1) - half);
        v[rnd(0, 31)] = d * static_cast<float>(-half);
        break;
      }
      case WeightType::kQ4_1:  // d·q + m, codes 0 and max present
      case WeightType::kQ5_1: {
        const int top = t == WeightType::kQ4_1 ? 15 : 31;
        for (int e = 0; e < 32; ++e) v[e] = d * static_cast<float>(rnd(0, top)) + m;
        v[3] = d * 0.0f + m;
        v[20] = d * static_cast<float>(top) + m;
        break;
      }
      case WeightType::kQ4_K:  // (d·sc)·q − dmin·mn; codes 0 and max in every sub-block; some
      case WeightType::kQ5_K: {  // sub-block with sc = 63 and one with mn = 63
        const int top = t == WeightType::kQ4_K ? 15 : 31;
        // Large mins next to small scales make hi + ml lose low bits in f32 (the quantizer's
        // tolerant ceiling must absorb that).
        const float dmin = f16v(mag(rng) * (rnd(0, 1) ? 0.1f : 10.0f));
        for (int s = 0; s < 8; ++s) {
          const int sc = s == 2 ? 63 : rnd(1, 63);
          const int mn = s == 5 ? 63 : rnd(0, 63);
          const float dl = d * static_cast<float>(sc);
          const float ml = dmin * static_cast<float>(mn);
          for (int l = 0; l < 32; ++l) v[32 * s + l] = dl * static_cast<float>(rnd(0, top)) - ml;
          v[32 * s + rnd(0, 15)] = dl * 0.0f - ml;
          v[32 * s + rnd(16, 31)] = dl * static_cast<float>(top) - ml;
        }
        break;
      }
      case WeightType::kQ6_K: {  // (d·sc)·q, q ∈ [−31, 31] with |q| = 31 in every sub-block
        const float d6 = f16v(mag(rng) * 0.01f);
        for (int s = 0; s < 16; ++s) {
          const int sc = s == 9 ? 127 : rnd(1, 127);
          const float dl = d6 * static_cast<float>(sc);
          for (int l = 0; l < 16; ++l) v[16 * s + l] = dl * static_cast<float>(rnd(-31, 31));
          v[16 * s + rnd(0, 15)] = dl * (rnd(0, 1) ? 31.0f : -31.0f);
        }
        break;
      }
    }
  }
  return x;
}

TEST(QuantRoundTripTest, ValuesOnTheGridRoundTripExactly) {
  std::mt19937 rng(14);
  for (WeightType t : decodebench::kAllWeightTypes) {
    SCOPED_TRACE(name_of(t));
    const int64_t n = 256 * 512;  // many sub-blocks: some hit f32 noise in hi + ml
    const std::vector<float> x = on_grid_values(t, n, rng);
    std::vector<uint8_t> q(static_cast<size_t>(bytes_for(t, n)));
    quantize_row(t, x.data(), q.data(), n);
    const std::vector<float> y = dequantized(t, q.data(), n);
    int64_t mismatches = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (std::bit_cast<uint32_t>(y[i]) != std::bit_cast<uint32_t>(x[i]) && mismatches++ < 5) {
        ADD_FAILURE() << "value " << i << ": " << x[i] << " came back as " << y[i];
      }
    }
    EXPECT_EQ(mismatches, 0);
  }
}

uint16_t f16_bits_of(float v) {
  uint16_t h = 0;
  quantize_row(WeightType::kF16, &v, &h, 1);
  return h;
}

uint16_t bf16_bits_of(float v) {
  uint16_t h = 0;
  quantize_row(WeightType::kBF16, &v, &h, 1);
  return h;
}

float from_bits(uint32_t u) { return std::bit_cast<float>(u); }

TEST(QuantRoundTripTest, F16RoundingEdgeCases) {
  EXPECT_EQ(f16_bits_of(1.0f), 0x3C00);
  // Ties between neighbours 2^-10 apart go to the even mantissa.
  EXPECT_EQ(f16_bits_of(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // 1 | 1.0009766: even 0x3C00
  EXPECT_EQ(f16_bits_of(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // 0x3C01 | 0x3C02: even
  EXPECT_EQ(f16_bits_of(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
  EXPECT_EQ(f16_bits_of(-1.0f - 3 * std::ldexp(1.0f, -11)), 0xBC02);
  // Largest finite 65504; 65520 is the tie between 65504 (odd 0x7BFF) and 65536 (inf): inf.
  EXPECT_EQ(f16_bits_of(65504.0f), 0x7BFF);
  EXPECT_EQ(f16_bits_of(std::nextafter(65520.0f, 0.0f)), 0x7BFF);
  EXPECT_EQ(f16_bits_of(65520.0f), 0x7C00);
  EXPECT_EQ(f16_bits_of(1e6f), 0x7C00);
  EXPECT_EQ(f16_bits_of(-1e6f), 0xFC00);
  EXPECT_EQ(f16_bits_of(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(f16_bits_of(-std::numeric_limits<float>::infinity()), 0xFC00);
  const uint16_t nan = f16_bits_of(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
  EXPECT_NE(f16_bits_of(from_bits(0x7F800001u)) & 0x03FF, 0);  // signalling NaN stays NaN
  // Subnormals: 2^-24 is the smallest; ties at 2^-25 and 3·2^-25 go to even codes 0 and 2.
  EXPECT_EQ(f16_bits_of(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(f16_bits_of(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(f16_bits_of(3 * std::ldexp(1.0f, -26)), 0x0001);
  EXPECT_EQ(f16_bits_of(3 * std::ldexp(1.0f, -25)), 0x0002);
  EXPECT_EQ(f16_bits_of(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -25)), 0x0400);  // tie → normal
  EXPECT_EQ(f16_bits_of(-0.0f), 0x8000);
  // And back: every finite f16 survives dequantize → quantize.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0) continue;  // NaN
    float v = 0;
    const uint16_t bits = static_cast<uint16_t>(h);
    dequantize_row(WeightType::kF16, &bits, &v, 1);
    ASSERT_EQ(f16_bits_of(v), bits) << std::hex << h;
  }
}

TEST(QuantRoundTripTest, BF16RoundingEdgeCases) {
  EXPECT_EQ(bf16_bits_of(1.0f), 0x3F80);
  EXPECT_EQ(bf16_bits_of(1.0f + std::ldexp(1.0f, -8)), 0x3F80);      // tie → even 0x3F80
  EXPECT_EQ(bf16_bits_of(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);  // tie → even 0x3F82
  EXPECT_EQ(bf16_bits_of(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3F81);
  EXPECT_EQ(bf16_bits_of(from_bits(0x7F7F7FFFu)), 0x7F7F);  // just below the tie: max finite
  EXPECT_EQ(bf16_bits_of(from_bits(0x7F7F8000u)), 0x7F80);  // tie with odd 0x7F7F → inf
  EXPECT_EQ(bf16_bits_of(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(bf16_bits_of(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_EQ(bf16_bits_of(std::numeric_limits<float>::quiet_NaN()), 0x7FC0);
  EXPECT_EQ(bf16_bits_of(from_bits(0x7F800001u)), 0x7FC0);  // NaN payload below bit 16: not inf
  EXPECT_EQ(bf16_bits_of(from_bits(0xFF800001u)), 0xFFC0);
  EXPECT_EQ(bf16_bits_of(-0.0f), 0x8000);
  EXPECT_EQ(bf16_bits_of(from_bits(0x000116C2u)), 0x0001);  // f32 subnormal rounds down
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7F80) == 0x7F80 && (h & 0x7F) != 0) continue;  // NaN
    float v = 0;
    const uint16_t bits = static_cast<uint16_t>(h);
    dequantize_row(WeightType::kBF16, &bits, &v, 1);
    ASSERT_EQ(bf16_bits_of(v), bits) << std::hex << h;
  }
}

TEST(QuantRoundTripTest, LegacyTypesMatchGgufQuantize) {
  DB_REQUIRE_PYTHON_GGUF();
  dt::TempDir dir;
  const auto cases = run_fixture({"quantize"}, dir.path());
  ASSERT_EQ(cases.size(), 7u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<uint8_t> got(c.bytes.size());
    quantize_row(c.type, c.floats.data(), got.data(), c.n);
    const int64_t bb = decodebench::weight_traits(c.type).block_bytes;
    const int64_t be = block_elems(c.type);
    int64_t differing = 0;
    for (int64_t b = 0; b < static_cast<int64_t>(got.size()) / bb; ++b) {
      if (std::memcmp(got.data() + b * bb, c.bytes.data() + b * bb, static_cast<size_t>(bb)) != 0 &&
          differing++ < 3) {
        ADD_FAILURE() << "block " << b << " (input values " << b * be << "..) differs from gguf";
      }
    }
    EXPECT_EQ(differing, 0);
  }
}

// ---- errors ---------------------------------------------------------------------------------

TEST(QuantErrorTest, UnsupportedTypesAreUsageErrorsNamingTheType) {
  const std::pair<uint32_t, const char*> cases[] = {
      {10, "unsupported tensor type Q2_K"},   {11, "unsupported tensor type Q3_K"},
      {23, "unsupported tensor type IQ4_XS"}, {9, "unsupported tensor type Q8_1"},
      {4, "unsupported tensor type #4"},      {99, "unsupported tensor type #99"}};
  float f[256] = {};
  uint8_t bytes[1024] = {};
  for (const auto& [id, message] : cases) {
    const auto t = static_cast<WeightType>(id);
    for (int fn = 0; fn < 3; ++fn) {
      try {
        if (fn == 0) dequantize_row(t, bytes, f, 256);
        if (fn == 1) (void)dot_row(t, bytes, f, 256);
        if (fn == 2) quantize_row(t, f, bytes, 256);
        ADD_FAILURE() << "no error for type id " << id << ", function " << fn;
      } catch (const decodebench::Error& e) {
        EXPECT_EQ(e.code(), decodebench::ExitCode::kUsage);
        EXPECT_STREQ(e.what(), message);
      }
    }
  }
  EXPECT_EQ(decodebench::quant::type_label(14), "Q6_K");
  EXPECT_EQ(decodebench::quant::type_label(30), "BF16");
}

TEST(QuantErrorTest, RowLengthMustBeAWholeNumberOfBlocks) {
  float f[64] = {};
  uint8_t bytes[256] = {};
  try {
    dequantize_row(WeightType::kQ4_0, bytes, f, 33);
    ADD_FAILURE() << "no error for n = 33";
  } catch (const decodebench::Error& e) {
    EXPECT_EQ(e.code(), decodebench::ExitCode::kUsage);
    EXPECT_STREQ(e.what(), "row length 33 is not a multiple of the Q4_0 block size (32)");
  }
  EXPECT_THROW((void)dot_row(WeightType::kQ6_K, bytes, f, 64), decodebench::Error);
  EXPECT_THROW(quantize_row(WeightType::kQ8_0, f, bytes, -32), decodebench::Error);
  EXPECT_NO_THROW(dequantize_row(WeightType::kF32, bytes, f, 33));
  EXPECT_EQ(dot_row(WeightType::kQ4_K, bytes, f, 0), 0.0f);  // empty row
}

}  // namespace
