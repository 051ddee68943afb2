#include "core/model/preset.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"

namespace decodebench {

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& p : embedded_presets()) names.emplace_back(p.name);
  std::sort(names.begin(), names.end());
  return names;
}

nlohmann::json load_preset(const std::string& name_or_path) {
  for (const auto& p : embedded_presets()) {
    if (name_or_path == p.name) return nlohmann::json::parse(p.json);
  }
  const bool looks_like_path =
      name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json");
  if (looks_like_path) {
    std::ifstream in(name_or_path);
    if (!in) throw usage_error("--preset: cannot read preset file '" + name_or_path + "'");
    try {
      return nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      throw usage_error("--preset: '" + name_or_path + "' is not valid JSON: " + e.what());
    }
  }
  std::string known;
  for (const auto& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
  throw usage_error("--preset: unknown preset '" + name_or_path + "'; known presets: " + known);
}

}  // namespace decodebench
