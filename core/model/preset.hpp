// Shape presets: bench-configs/presets/NAME.json, embedded in the binary at build time.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace decodebench {

/// One embedded preset file: its name (file stem) and its JSON text.
struct EmbeddedPreset {
  const char* name;
  const char* json;
};

/// The presets compiled into the binary (generated from bench-configs/presets/ by CMake).
const std::vector<EmbeddedPreset>& embedded_presets();

/// Names of the embedded presets, sorted.
std::vector<std::string> preset_names();

/// The JSON of preset `name_or_path`: an embedded preset name, or a path to a .json file.
/// Throws decodebench::Error (exit 2) for an unknown name (listing the known ones), a file that
/// cannot be read or parsed, an unknown key, a key of the wrong type, or a missing shape key
/// (layers, hidden, heads, ffn, vocab).
nlohmann::json load_preset(const std::string& name_or_path);

/// Whether --preset NAME names a preset file rather than an embedded preset: it holds a "/" or
/// ends in ".json" (load_preset reads such a name from disk).
bool preset_names_a_file(const std::string& name_or_path);

}  // namespace decodebench
