#include "core/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <numeric>

namespace decodebench {

int edit_distance(const std::string& a, const std::string& b, int cap) {
  const size_t n = a.size(), m = b.size();
  if ((n > m ? n - m : m - n) > static_cast<size_t>(cap)) return cap + 1;
  // Rows i − 2, i − 1 and i of the optimal-string-alignment table.
  std::vector<int> prev2(m + 1), prev(m + 1), cur(m + 1);
  for (size_t j = 0; j <= m; ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= m; ++j) {
      const int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
      }
    }
    prev2.swap(prev);
    prev.swap(cur);
  }
  return std::min(prev[m], cap + 1);
}

std::vector<std::string> nearest_names(const std::string& word,
                                       const std::vector<std::string>& candidates, size_t count) {
  std::vector<int> distance(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    // Uncapped: the longer of the two lengths is the largest distance there is.
    const int cap = static_cast<int>(std::max(word.size(), candidates[i].size()));
    distance[i] = edit_distance(word, candidates[i], cap);
  }
  std::vector<size_t> order(candidates.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&distance](size_t x, size_t y) { return distance[x] < distance[y]; });
  std::vector<std::string> names;
  for (size_t i = 0; i < std::min(count, order.size()); ++i) names.push_back(candidates[order[i]]);
  return names;
}

std::string choice_hint(const std::string& value, const std::vector<std::string>& names) {
  std::string lower = value;
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (lower != value && std::find(names.begin(), names.end(), lower) != names.end()) {
    return " (did you mean '" + lower + "'? names are lower case)";
  }
  const int cap = lower.size() <= 4 ? 1 : 2;
  const std::vector<std::string> near = nearest_names(lower, names, 2);
  if (near.empty()) return "";
  const int d = edit_distance(lower, near.front(), cap);
  // Two names as near ("of": on, off) make a guess: none is offered.
  if (d > cap || (near.size() > 1 && edit_distance(lower, near[1], cap) == d)) return "";
  return " (did you mean '" + near.front() + "'?)";
}

std::string echo_value(std::string_view value, size_t max_bytes) {
  if (value.size() <= max_bytes) return std::string(value);
  size_t cut = max_bytes;
  // A continuation byte (10xxxxxx) at the cut: back to the start of its character.
  while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80) --cut;
  return std::string(value.substr(0, cut)) + "… (" + std::to_string(value.size()) + " bytes)";
}

std::string echo_path(std::string_view path) {
  return path.size() <= kEchoMaxPathBytes ? std::string(path) : echo_value(path);
}

std::string decimal_bytes(uint64_t bytes) {
  const auto v = static_cast<double>(bytes);
  // Each unit from where the one below would round to 1000.0: 999,950 bytes is "1.0 MB", not
  // "1000.0 kB".
  if (v >= 999.95e6) return fmt::format("{:.2f} GB", v / 1e9);
  if (v >= 999.95e3) return fmt::format("{:.1f} MB", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.1f} kB", v / 1e3);
  return fmt::format("{} B", bytes);
}

bool is_plain_decimal(std::string_view value) {
  const std::string_view digits = value.substr(value.starts_with('-') ? 1 : 0);
  return !digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos;
}

std::string plain_decimal_integer(std::string& value) {
  if (is_plain_decimal(value)) {
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec == std::errc::result_out_of_range) {
      return "'" + echo_value(value) + "' is out of range (" +
             (value.starts_with('-') ? "at least " + std::to_string(INT64_MIN)
                                     : "at most " + std::to_string(INT64_MAX)) +
             ")";
    }
    if (ec == std::errc() && end == value.data() + value.size()) value = std::to_string(v);
    return "";
  }
  // A value that starts like a number (a digit after an optional sign and blanks) and holds no
  // comma is an integer in another notation for some CLI11 version: 2.1's base-0 strtoll reads
  // 0x10 and " 16", later ones also 0o17, 0b101, 1_000, 1'000 and "16 ". Refused here, whatever
  // the installed CLI11 reads. The rest (abc, "1,2" with its sweep hint) is CLI11's to refuse.
  size_t i = value.find_first_not_of(" \t");
  if (i != std::string::npos && (value[i] == '+' || value[i] == '-')) {
    i = value.find_first_not_of(" \t", i + 1);
  }
  if (i != std::string::npos && value[i] >= '0' && value[i] <= '9' &&
      value.find(',') == std::string::npos) {
    return "'" + echo_value(value) +
           "' is not a decimal integer (digits only, with an optional leading '-')";
  }
  return "";
}

}  // namespace decodebench
