#include "core/model/preset.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "core/model/gguf_model.hpp"
#include "core/result/json_file.hpp"
#include "core/text.hpp"

namespace decodebench {

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& p : embedded_presets()) names.emplace_back(p.name);
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

// Checks a preset document: an object with known keys of the right JSON types and every shape key
// that has no default. Throws Error (exit 2) naming the preset and the key.
nlohmann::json checked(const std::string& name, nlohmann::json j) {
  static const std::pair<const char*, nlohmann::json::value_t> kKeys[] = {
      {"name", nlohmann::json::value_t::string},
      {"description", nlohmann::json::value_t::string},
      {"source", nlohmann::json::value_t::string},
      {"architecture", nlohmann::json::value_t::string},
      {"layers", nlohmann::json::value_t::number_unsigned},
      {"hidden", nlohmann::json::value_t::number_unsigned},
      {"heads", nlohmann::json::value_t::number_unsigned},
      {"kv_heads", nlohmann::json::value_t::number_unsigned},
      {"head_dim", nlohmann::json::value_t::number_unsigned},
      {"ffn", nlohmann::json::value_t::number_unsigned},
      {"vocab", nlohmann::json::value_t::number_unsigned},
      {"context_length", nlohmann::json::value_t::number_unsigned},
      {"rope_theta", nlohmann::json::value_t::number_float},
      {"rms_eps", nlohmann::json::value_t::number_float},
      {"tied_embeddings", nlohmann::json::value_t::boolean},
      {"qkv_bias", nlohmann::json::value_t::boolean}};
  if (!j.is_object()) throw usage_error("preset '" + name + "' is not a JSON object");
  std::string known;
  for (const auto& [k, t] : kKeys) known += (known.empty() ? "" : ", ") + std::string(k);
  for (const auto& [key, value] : j.items()) {
    bool found = false;
    for (const auto& [k, t] : kKeys) {
      if (key != k) continue;
      found = true;
      const bool number_ok = t == nlohmann::json::value_t::number_float && value.is_number();
      const bool unsigned_ok = t == nlohmann::json::value_t::number_unsigned &&
                               value.is_number_integer() && value.get<int64_t>() >= 0;
      if (t == nlohmann::json::value_t::number_unsigned && value.is_number() && !unsigned_ok) {
        // The type is right, the value is not: -2, 2.5, 1e20 (a float above int64's range).
        throw usage_error("preset '" + name + "': key '" + key +
                          "' must be an integer from 0 to 9223372036854775807, written without a "
                          "fraction or exponent (got " +
                          value.dump() + ")");
      }
      if (!(number_ok || unsigned_ok || value.type() == t)) {
        throw usage_error("preset '" + name + "': key '" + key + "' has the wrong type (" +
                          value.type_name() + ")");
      }
    }
    if (!found) {
      throw usage_error("preset '" + name + "': unknown key '" + key + "' (known keys: " + known +
                        ")");
    }
  }
  // Descriptive only (a synthetic model is built from the shape keys alone), but a value outside
  // the architectures decodebench runs would describe a model it does not run.
  if (j.contains("architecture")) {
    const std::string arch = j["architecture"].get<std::string>();
    if (arch != "llama" && arch != "qwen2" && arch != "qwen3") {
      throw usage_error("preset '" + name + "': architecture '" + echo_value(arch) +
                        "' is none of " + kSupportedArchitectures +
                        " (the architectures decodebench runs; the key only describes the preset: "
                        "a synthetic model is built from the shape keys)");
    }
  }
  for (const char* required : {"layers", "hidden", "heads", "ffn", "vocab"}) {
    if (!j.contains(required)) {
      throw usage_error("preset '" + name + "' lacks the key '" + required + "'");
    }
  }
  return j;
}

}  // namespace

bool preset_names_a_file(const std::string& name_or_path) {
  return name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json");
}

nlohmann::json load_preset(const std::string& name_or_path) {
  for (const auto& p : embedded_presets()) {
    if (name_or_path == p.name) return checked(p.name, nlohmann::json::parse(p.json));
  }
  if (preset_names_a_file(name_or_path)) {
    const std::string text = read_input_file(name_or_path, "--preset file");
    nlohmann::json j;
    std::string duplicate;
    try {
      j = parse_json_noting_duplicate_keys<nlohmann::json>(text, &duplicate);
    } catch (const nlohmann::json::exception& e) {
      throw usage_error("--preset: '" + name_or_path + "' is not valid JSON: " + e.what());
    }
    if (!duplicate.empty()) {
      throw usage_error("preset '" + name_or_path + "': key '" + duplicate +
                        "' appears twice in one object (JSON would keep only its last value); "
                        "give each key once");
    }
    return checked(name_or_path, std::move(j));
  }
  std::string known;
  for (const auto& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
  throw usage_error("--preset: unknown preset '" + echo_value(name_or_path) +
                    "'; known presets: " + known);
}

}  // namespace decodebench
