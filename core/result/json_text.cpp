#include "core/result/json_text.hpp"

#include <algorithm>
#include <cstddef>
#include <string>

namespace decodebench {

namespace {

using nlohmann::json;

std::string scalar_text(const json& v) {
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

/// Columns already used on the last line of `out`.
size_t column(const std::string& out) {
  const size_t nl = out.rfind('\n');
  return nl == std::string::npos ? out.size() : out.size() - nl - 1;
}

void append(const json& v, size_t indent, std::string& out);

/// An array of scalars: on the current line when "[a, b, c]" fits, else packed lines one level in.
void append_packed(const json& v, size_t indent, std::string& out) {
  std::string one_line = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) one_line += ", ";
    one_line += scalar_text(v[i]);
  }
  one_line += "]";
  const auto width = static_cast<size_t>(kJsonTextColumns);
  if (column(out) + one_line.size() + 1 <= width) {  // + 1: a following comma
    out += one_line;
    return;
  }
  const std::string pad(indent + 2, ' ');
  out += "[\n" + pad;
  size_t col = pad.size();
  for (size_t i = 0; i < v.size(); ++i) {
    std::string item = scalar_text(v[i]);
    if (i + 1 < v.size()) item += ",";
    if (col > pad.size() && col + 1 + item.size() > width) {
      out += "\n" + pad;
      col = pad.size();
    } else if (col > pad.size()) {
      out += " ";
      ++col;
    }
    out += item;
    col += item.size();
  }
  out += "\n" + std::string(indent, ' ') + "]";
}

void append(const json& v, size_t indent, std::string& out) {
  const std::string inner(indent + 2, ' ');
  if (v.is_object()) {
    if (v.empty()) {
      out += "{}";
      return;
    }
    out += "{\n";
    size_t i = 0;
    for (const auto& [key, value] : v.items()) {
      out += inner + scalar_text(json(key)) + ": ";
      append(value, indent + 2, out);
      out += ++i < v.size() ? ",\n" : "\n";
    }
    out += std::string(indent, ' ') + "}";
  } else if (v.is_array()) {
    if (v.empty()) {
      out += "[]";
      return;
    }
    if (std::none_of(v.begin(), v.end(), [](const json& e) { return e.is_structured(); })) {
      append_packed(v, indent, out);
      return;
    }
    out += "[\n";
    for (size_t i = 0; i < v.size(); ++i) {
      out += inner;
      append(v[i], indent + 2, out);
      out += i + 1 < v.size() ? ",\n" : "\n";
    }
    out += std::string(indent, ' ') + "]";
  } else {
    out += scalar_text(v);
  }
}

}  // namespace

std::string json_text(const nlohmann::json& doc) {
  std::string out;
  append(doc, 0, out);
  return out;
}

}  // namespace decodebench
