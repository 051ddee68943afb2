// Writing result files so that a failed run never leaves a half-written file behind.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace decodebench {

/// Writes `doc` (pretty-printed, 2-space indent) to `path` through a temporary file in the same
/// folder that is renamed over `path` (POSIX rename is atomic), so readers see the old file or the
/// whole new one. `path` "-" writes to stdout. Throws decodebench::Error (exit 2) naming the path
/// when the folder does not exist or is not writable, and removes the temporary file.
void write_json_file(const std::string& path, const nlohmann::json& doc);

/// Writes `text` to `path` the same way (temporary file + rename; "-" = stdout). `flag` names the
/// option in error messages (e.g. "--output"). Throws decodebench::Error (exit 2).
void write_text_file(const std::string& path, const std::string& text,
                     const std::string& flag = "--json");

/// Checks early (before a long run) that `path` can be written: its folder exists and is writable.
/// "-" is always fine. Throws decodebench::Error (exit 2) naming the path otherwise.
void check_json_destination(const std::string& path);

/// check_json_destination() with `flag` naming the option in the messages.
void check_destination(const std::string& path, const std::string& flag);

}  // namespace decodebench
