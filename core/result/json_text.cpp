#include "core/result/json_text.hpp"

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace decodebench {

namespace {

using nlohmann::json;

std::string scalar_text(const json& v) {
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

/// Columns (bytes) already used on the last line of `out`.
size_t column(const std::string& out) {
  const size_t nl = out.rfind('\n');
  return nl == std::string::npos ? out.size() : out.size() - nl - 1;
}

void append(const json& v, size_t indent, bool comma_follows, std::string& out);

/// An array of scalars: on the current line when "[a, b, c]" and the comma that may follow it fit,
/// else packed lines one level in.
void append_packed(const json& v, size_t indent, bool comma_follows, std::string& out) {
  const auto width = static_cast<size_t>(kJsonTextColumns);
  std::vector<std::string> items;
  items.reserve(v.size());
  size_t one_line = column(out) + 2 + (comma_follows ? 1 : 0);  // "[", "]" and the comma
  for (const json& e : v) {
    items.push_back(scalar_text(e));
    one_line += items.back().size() + (items.size() > 1 ? 2 : 0);
  }
  if (one_line <= width) {
    out += "[";
    for (size_t i = 0; i < items.size(); ++i) out += (i > 0 ? ", " : "") + items[i];
    out += "]";
    return;
  }
  const std::string pad(indent + 2, ' ');
  out += "[\n" + pad;
  size_t col = pad.size();
  for (size_t i = 0; i < items.size(); ++i) {
    if (i + 1 < items.size()) items[i] += ",";
    if (col > pad.size() && col + 1 + items[i].size() > width) {
      out += "\n" + pad;
      col = pad.size();
    } else if (col > pad.size()) {
      out += " ";
      ++col;
    }
    out += items[i];
    col += items[i].size();
  }
  out += "\n" + std::string(indent, ' ') + "]";
}

void append(const json& v, size_t indent, bool comma_follows, std::string& out) {
  const std::string inner(indent + 2, ' ');
  if (v.is_object()) {
    if (v.empty()) {
      out += "{}";
      return;
    }
    out += "{\n";
    size_t i = 0;
    for (const auto& [key, value] : v.items()) {
      const bool more = ++i < v.size();
      out += inner + scalar_text(json(key)) + ": ";
      append(value, indent + 2, more, out);
      out += more ? ",\n" : "\n";
    }
    out += std::string(indent, ' ') + "}";
  } else if (v.is_array()) {
    if (v.empty()) {
      out += "[]";
      return;
    }
    if (std::none_of(v.begin(), v.end(), [](const json& e) { return e.is_structured(); })) {
      append_packed(v, indent, comma_follows, out);
      return;
    }
    out += "[\n";
    for (size_t i = 0; i < v.size(); ++i) {
      const bool more = i + 1 < v.size();
      out += inner;
      append(v[i], indent + 2, more, out);
      out += more ? ",\n" : "\n";
    }
    out += std::string(indent, ' ') + "]";
  } else {
    out += scalar_text(v);
  }
}

}  // namespace

std::string json_text(const nlohmann::json& doc) {
  std::string out;
  append(doc, 0, false, out);
  return out;
}

}  // namespace decodebench
