#include "core/gguf/value_scan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <mutex>

#include "core/cpu/thread_pool.hpp"
#include "core/gguf/printable.hpp"
#include "core/quant/dequant.hpp"
#include "core/quant/weight_type.hpp"

namespace decodebench::gguf {

namespace {

/// The smaller (lower) or larger (upper) of a and b, with -0 below +0: a range then does not
/// depend on the order in which equal values are met (std::min keeps the first of -0 and +0).
float lower(float a, float b) { return (b < a || (b == a && std::signbit(b))) ? b : a; }
float upper(float a, float b) { return (b > a || (b == a && !std::signbit(b))) ? b : a; }

/// Values dequantized per call of dequantize_row: a multiple of every block size (32, 256), so a
/// long row (or a 1-D tensor) never needs a buffer of its own size.
constexpr int64_t kPieceValues = 4096;

/// Counts over rows [begin, end) of one tensor; merged in any order to the same result.
struct Partial {
  uint64_t nan = 0;
  uint64_t inf = 0;
  bool any_finite = false;
  float min = 0.0f;
  float max = 0.0f;
  int64_t first_nonfinite = -1;

  void merge(const Partial& o) {
    nan += o.nan;
    inf += o.inf;
    if (o.any_finite) {
      min = any_finite ? lower(min, o.min) : o.min;
      max = any_finite ? upper(max, o.max) : o.max;
      any_finite = true;
    }
    if (o.first_nonfinite >= 0 && (first_nonfinite < 0 || o.first_nonfinite < first_nonfinite)) {
      first_nonfinite = o.first_nonfinite;
    }
  }
};

Partial scan_rows(WeightType type, const uint8_t* data, int64_t cols, int64_t begin, int64_t end) {
  Partial p;
  std::vector<float> piece(static_cast<size_t>(std::min(cols, kPieceValues)));
  const int64_t row_size = row_bytes(type, cols);
  for (int64_t r = begin; r < end; ++r) {
    for (int64_t c0 = 0; c0 < cols; c0 += kPieceValues) {
      const int64_t n = std::min(kPieceValues, cols - c0);
      quant::dequantize_row(type, data + r * row_size + row_bytes(type, c0), piece.data(), n);
      for (int64_t c = 0; c < n; ++c) {
        const float v = piece[static_cast<size_t>(c)];
        if (std::isnan(v)) {
          ++p.nan;
        } else if (std::isinf(v)) {
          ++p.inf;
        } else {
          p.min = p.any_finite ? lower(p.min, v) : v;
          p.max = p.any_finite ? upper(p.max, v) : v;
          p.any_finite = true;
          continue;
        }
        if (p.first_nonfinite < 0) p.first_nonfinite = r * cols + c0 + c;
      }
    }
  }
  return p;
}

}  // namespace

uint64_t ValueScan::nonfinite_tensors() const {
  return static_cast<uint64_t>(std::count_if(tensors.begin(), tensors.end(),
                                             [](const TensorValues& t) { return t.nonfinite(); }));
}

ValueScan scan_values(const Reader& reader, int threads) {
  ValueScan scan;
  cpu::ThreadPool pool(std::max(1, threads));
  for (const TensorInfo& t : reader.tensors()) {
    if (!is_supported_weight_type(t.type_id)) {
      scan.skipped.emplace_back(t.name, t.type_id);
      continue;
    }
    const auto type = static_cast<WeightType>(t.type_id);
    const int64_t cols = t.dims[0];
    const int64_t rows = cols > 0 ? t.elements() / cols : 0;
    const uint8_t* data = reader.tensor_data(t);
    Partial total;
    std::mutex mutex;
    // Enough rows per chunk that a thread's row buffer and wake-up are noise.
    const int64_t min_rows = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, cols));
    pool.parallel_for(
        rows,
        [&](int64_t begin, int64_t end) {
          const Partial p = scan_rows(type, data, cols, begin, end);
          const std::lock_guard<std::mutex> lock(mutex);
          total.merge(p);
        },
        min_rows);
    TensorValues v;
    v.name = t.name;
    v.type_id = t.type_id;
    v.values = static_cast<uint64_t>(t.elements());
    v.nan = total.nan;
    v.inf = total.inf;
    v.min = total.min;
    v.max = total.max;
    v.first_nonfinite = total.first_nonfinite;
    v.row_length = std::max<int64_t>(1, cols);
    scan.values += v.values;
    scan.tensors.push_back(std::move(v));
  }
  return scan;
}

std::string value_scan_report(const ValueScan& scan, size_t max_listed) {
  std::string out;
  const uint64_t bad = scan.nonfinite_tensors();
  std::string skipped;
  if (!scan.skipped.empty()) {
    skipped = fmt::format("; {} tensor(s) of types decodebench does not read were not scanned",
                          scan.skipped.size());
  }
  if (bad == 0) {
    bool any = false;
    float lo = 0.0f;
    float hi = 0.0f;
    for (const TensorValues& t : scan.tensors) {
      if (t.values == 0) continue;
      lo = any ? lower(lo, t.min) : t.min;
      hi = any ? upper(hi, t.max) : t.max;
      any = true;
    }
    out += fmt::format("values: {} tensor(s), {} values dequantized, all finite",
                       scan.tensors.size(), scan.values);
    if (any) out += fmt::format(" (from {} to {})", lo, hi);
    out += skipped + "\n";
  } else {
    out += fmt::format("values: {} of {} tensor(s) hold NaN or inf ({} values dequantized){}\n",
                       bad, scan.tensors.size(), scan.values, skipped);
    size_t listed = 0;
    for (const TensorValues& t : scan.tensors) {
      if (t.nonfinite() == 0) continue;
      if (listed++ == max_listed) {
        out += fmt::format("  ... and {} more\n", bad - max_listed);
        break;
      }
      out += fmt::format("  {}: {} NaN, {} inf of {} values (first at row {}, column {})\n",
                         escape_text(t.name, 64), t.nan, t.inf, t.values,
                         t.first_nonfinite / t.row_length, t.first_nonfinite % t.row_length);
    }
  }
  for (size_t i = 0; i < scan.skipped.size(); ++i) {
    if (i == max_listed) {
      out += fmt::format("  ... and {} more not scanned\n", scan.skipped.size() - max_listed);
      break;
    }
    out += fmt::format("  {}: {}, not scanned\n", escape_text(scan.skipped[i].first, 64),
                       ggml_type_name(scan.skipped[i].second));
  }
  return out;
}

nlohmann::json value_scan_json(const ValueScan& scan) {
  nlohmann::json tensors = nlohmann::json::array();
  for (const TensorValues& t : scan.tensors) {
    const bool finite_values = t.nonfinite() < t.values;
    tensors.push_back(
        {{"name", valid_utf8(t.name)},
         {"type", ggml_type_name(t.type_id)},
         {"values", t.values},
         {"nan", t.nan},
         {"inf", t.inf},
         {"min", finite_values ? nlohmann::json(t.min) : nlohmann::json(nullptr)},
         {"max", finite_values ? nlohmann::json(t.max) : nlohmann::json(nullptr)},
         {"first_nonfinite", t.first_nonfinite < 0
                                 ? nlohmann::json(nullptr)
                                 : nlohmann::json{{"row", t.first_nonfinite / t.row_length},
                                                  {"column", t.first_nonfinite % t.row_length}}}});
  }
  nlohmann::json skipped = nlohmann::json::array();
  for (const auto& [name, type_id] : scan.skipped) {
    skipped.push_back({{"name", valid_utf8(name)}, {"type", ggml_type_name(type_id)}});
  }
  return {{"scanned_tensors", scan.tensors.size()},
          {"values", scan.values},
          {"nonfinite_tensors", scan.nonfinite_tensors()},
          {"tensors", tensors},
          {"skipped", skipped}};
}

}  // namespace decodebench::gguf
