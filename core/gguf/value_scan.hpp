// `decodebench inspect FILE --scan-values`: every weight value of a GGUF file dequantized and
// checked for NaN and infinity, with each tensor's range. A file whose scales hold NaN or inf
// (bit rot, a broken converter) otherwise shows only as NaN logits once a run starts.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/gguf/reader.hpp"

namespace decodebench::gguf {

/// Values of one tensor as decodebench's CPU dequantizer (quant::dequantize_row) reads them.
struct TensorValues {
  std::string name;
  uint32_t type_id = 0;
  uint64_t values = 0;  ///< elements of the tensor
  uint64_t nan = 0;     ///< values that are NaN
  uint64_t inf = 0;     ///< values that are +inf or -inf
  /// Smallest and largest finite value; both 0 when the tensor has no finite value.
  float min = 0.0f;
  float max = 0.0f;
  /// Storage-order index (row · dims[0] + column) of the first NaN or inf; -1 when none.
  int64_t first_nonfinite = -1;
  /// Row length (dims[0]), to turn first_nonfinite into a row and a column.
  int64_t row_length = 1;

  [[nodiscard]] uint64_t nonfinite() const { return nan + inf; }
};

/// Result of scan_values: one entry per tensor of a type decodebench dequantizes, in file order.
struct ValueScan {
  std::vector<TensorValues> tensors;
  /// Tensors of types decodebench does not dequantize (e.g. I32, Q2_K), not scanned: {name,
  /// ggml type id}.
  std::vector<std::pair<std::string, uint32_t>> skipped;
  uint64_t values = 0;  ///< Σ tensors[i].values

  /// Tensors holding at least one NaN or inf.
  [[nodiscard]] uint64_t nonfinite_tensors() const;
};

/// Dequantizes every tensor of a supported type, rows split over `threads` threads (>= 1; long
/// rows in pieces of 4,096 values), and counts NaN and inf values. Results do not depend on the
/// thread count (-0 ranks below +0 in the ranges). The reader has already checked that every
/// tensor's bytes lie in the file, so only std::bad_alloc and std::system_error (threads that
/// cannot start) are thrown.
ValueScan scan_values(const Reader& reader, int threads);

/// The terminal lines of a scan: one summary line, then one line per tensor with NaN or inf
/// (at most `max_listed`, then a count of the rest), then the tensors not scanned with their
/// types (at most `max_listed`). Ends with a newline.
std::string value_scan_report(const ValueScan& scan, size_t max_listed = 10);

/// The JSON of a scan: {scanned_tensors, values, nonfinite_tensors, tensors: [{name, type, values,
/// nan, inf, min, max, first_nonfinite: {row, column} | null}], skipped: [{name, type}]}. min and
/// max are null for a tensor without finite values.
nlohmann::json value_scan_json(const ValueScan& scan);

}  // namespace decodebench::gguf
