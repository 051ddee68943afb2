// Helpers shared by the GPU kernel tests: skipping without a device, host ↔ device copies and
// element-wise comparisons that print the first mismatch, the largest error and where it is.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/quant/dequant.hpp"
#include "core/quant/weight_type.hpp"
#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/device_info.hpp"
#include "cuda/kernels/delayed_copy.cuh"

/// Skips the current test, with the reason, when no usable CUDA device exists.
#define DB_REQUIRE_CUDA()                                        \
  do {                                                           \
    std::string db_why_;                                         \
    if (!::decodebench::cuda::cuda_device_available(&db_why_)) { \
      GTEST_SKIP() << "no usable CUDA device: " << db_why_;      \
    }                                                            \
  } while (0)

/// Skips the current test, with the reason, when no CUDA device of compute capability 9 or more
/// (sm_90: bulk copies and mbarrier transaction counts) exists to run the stream GEMV kernel.
#define DB_REQUIRE_STREAM_KERNEL()                                                           \
  do {                                                                                       \
    DB_REQUIRE_CUDA();                                                                       \
    int db_major_ = 0;                                                                       \
    DB_CUDA_CHECK(cudaDeviceGetAttribute(&db_major_, cudaDevAttrComputeCapabilityMajor, 0)); \
    if (db_major_ < 9) {                                                                     \
      GTEST_SKIP() << "the stream kernel needs compute capability 9 (sm_90)";                \
    }                                                                                        \
  } while (0)

/// Skips the current test, with the reason, unless a PDL kernel on `stream` starts before its
/// predecessor ends (testing::pdl_probe): a test of PDL ordering would prove nothing otherwise.
/// Also expects the value read after the PDL wait to be the predecessor's.
#define DB_REQUIRE_PDL_OVERLAP(stream)                                                         \
  do {                                                                                         \
    const std::array<float, 2> db_seen_ = ::decodebench::cuda::testing::pdl_probe(stream);     \
    EXPECT_EQ(db_seen_[1], 1.0f) << "the value after the PDL wait";                            \
    if (!std::isnan(db_seen_[0])) {                                                            \
      GTEST_SKIP() << "PDL did not overlap the kernels on this device (read before the wait: " \
                   << db_seen_[0] << "): an ordering check would prove nothing";               \
    }                                                                                          \
  } while (0)

namespace decodebench::cuda::testing {

/// Copies `v` into a new device buffer; returns once the bytes are there (copy_to_device).
template <typename T>
DeviceBuffer upload(const std::vector<T>& v) {
  DeviceBuffer b(std::max<size_t>(v.size() * sizeof(T), 16));
  copy_to_device(b.get(), v.data(), v.size() * sizeof(T));
  return b;
}

/// Copies `n` elements from device memory at `p`; returns once copied. The copy is on the legacy
/// stream, which does not wait for a non-blocking stream: synchronize the one that wrote `p` first.
template <typename T>
std::vector<T> download(const void* p, size_t n) {
  std::vector<T> v(n);
  if (n > 0) DB_CUDA_CHECK(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

/// Writes one value to device memory; returns once it is there (copy_to_device).
template <typename T>
void poke(void* p, T value) {
  copy_to_device(p, &value, sizeof(T));
}

/// Waits for the device and surfaces asynchronous kernel errors.
inline void sync() { DB_CUDA_CHECK(cudaDeviceSynchronize()); }

/// What a PDL kernel on `stream` reads of a word (NaN at first) that its predecessor writes 50 µs
/// late (launch_delayed_copy, then launch_pdl_peek): {before its PDL wait, after it}. Run twice:
/// the first launch of a kernel loads its code, which does not overlap a running kernel. Where
/// PDL overlaps the kernels the result is {NaN, 1}; a test of PDL ordering should skip when the
/// first value is not NaN, since it would prove nothing. Throws CudaError (a decodebench::Error)
/// when a CUDA call fails.
inline std::array<float, 2> pdl_probe(const CudaStream& stream) {
  DeviceBuffer dst(sizeof(float));
  const DeviceBuffer src = upload(std::vector<float>{1.0f});
  DeviceBuffer peek(2 * sizeof(float));
  for (int round = 0; round < 2; ++round) {
    fill_device(dst.get(), 0xFF, sizeof(float));
    launch_delayed_copy(dst.get(), src.get(), sizeof(float), 50000, stream.get());
    launch_pdl_peek(dst.data<float>(), peek.data<float>(), stream.get());
    sync();
  }
  const std::vector<float> seen = download<float>(peek.get(), 2);
  return {seen[0], seen[1]};
}

/// Uniform random floats in [lo, hi) from a fixed seed.
inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline std::string hex_bits(float f) {
  std::ostringstream os;
  os << "0x" << std::hex << bits_of(f);
  return os.str();
}

/// Expects `f` to refuse a measurement switch's value: decodebench::Error with exit 2 (an input
/// error) and a message that starts with `want` (the variable's name and the quoted value).
template <typename F>
void expect_switch_error(const F& f, const std::string& want) {
  try {
    f();
    ADD_FAILURE() << want << " was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind(want, 0), 0u) << e.what();
  }
}

/// Every |got[i] − want[i]| <= tol(i) (NaN matches NaN). On failure: how many elements failed,
/// the first failing index with both values and its tolerance, and the largest error.
inline ::testing::AssertionResult all_near(const std::vector<float>& got,
                                           const std::vector<float>& want,
                                           const std::function<double(size_t)>& tol,
                                           const std::string& what) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure()
           << what << ": size " << got.size() << " != " << want.size();
  }
  size_t bad = 0;
  size_t first = got.size();
  size_t worst = 0;
  double worst_err = -1.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool both_nan = std::isnan(got[i]) && std::isnan(want[i]);
    const double err = both_nan ? 0.0 : std::fabs(static_cast<double>(got[i]) - want[i]);
    const bool ok = both_nan || (!std::isnan(err) && err <= tol(i));
    if (std::isnan(err) || err > worst_err) {
      worst_err = std::isnan(err) ? INFINITY : err;
      worst = i;
    }
    if (!ok) {
      if (bad == 0) first = i;
      ++bad;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  std::ostringstream os;
  os.precision(9);
  os << what << ": " << bad << " of " << got.size() << " elements out of tolerance; first at ["
     << first << "] got " << got[first] << " want " << want[first] << " tol " << tol(first)
     << "; largest error " << worst_err << " at [" << worst << "] (got " << got[worst] << " want "
     << want[worst] << " tol " << tol(worst) << ")";
  return ::testing::AssertionFailure() << os.str();
}

/// Bit-exact equality of two float arrays; prints the first difference with both bit patterns.
inline ::testing::AssertionResult all_bits_equal(const std::vector<float>& got,
                                                 const std::vector<float>& want,
                                                 const std::string& what) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure()
           << what << ": size " << got.size() << " != " << want.size();
  }
  size_t bad = 0;
  size_t first = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (bits_of(got[i]) != bits_of(want[i])) {
      if (bad == 0) first = i;
      ++bad;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  std::ostringstream os;
  os.precision(9);
  os << what << ": " << bad << " of " << got.size() << " elements differ; first at [" << first
     << "] got " << got[first] << " (" << hex_bits(got[first]) << ") want " << want[first] << " ("
     << hex_bits(want[first]) << ")";
  return ::testing::AssertionFailure() << os.str();
}

/// A quantized matrix plus the CPU-side facts the GEMV/GEMM checks need.
struct Matrix {
  std::vector<uint8_t> bytes;  ///< rows × row_bytes(type, cols), GGUF layout
  std::vector<float> deq;      ///< dequantized, rows × cols
};

/// Random weights in [-1, 1) scaled per row (0.25 + 0.5·(r mod 7), so per-block scales vary),
/// quantized to `t` by the CPU quantizer and dequantized back.
inline Matrix make_matrix(WeightType t, int64_t rows, int64_t cols, uint32_t seed) {
  Matrix m;
  const int64_t rb = row_bytes(t, cols);
  m.bytes.resize(static_cast<size_t>(rows * rb));
  m.deq.resize(static_cast<size_t>(rows * cols));
  std::vector<float> w = random_floats(static_cast<size_t>(rows * cols), seed);
  for (int64_t r = 0; r < rows; ++r) {
    const float s = 0.25f + static_cast<float>(r % 7) * 0.5f;
    for (int64_t c = 0; c < cols; ++c) w[r * cols + c] *= s;
    quant::quantize_row(t, w.data() + r * cols, m.bytes.data() + r * rb, cols);
    quant::dequantize_row(t, m.bytes.data() + r * rb, m.deq.data() + r * cols, cols);
  }
  return m;
}

}  // namespace decodebench::cuda::testing
