// Writing result files so that a failed run never leaves a half-written file behind, and reading
// input files safely.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace decodebench {

/// Writes `doc` as json_text() lays it out (2-space indent, arrays of scalars packed into lines)
/// to `path` through a temporary file in the same folder that is renamed over `path` (POSIX rename
/// is atomic), so readers see the old file or the whole new one (OutputFile: a replaced file keeps
/// its permission bits, a link is followed to its target, a device or FIFO such as /dev/null is
/// written in place). `path` "-" writes to stdout. Throws decodebench::Error naming the path: exit
/// 2 when the folder does not exist or is not writable, exit 3 when the disk is full, exit 1 for
/// other write errors (stdout included); the temporary file is removed.
void write_json_file(const std::string& path, const nlohmann::json& doc);

/// Writes `text` to `path` the same way (temporary file + rename; "-" = stdout). `flag` names the
/// option in error messages (e.g. "--output"). Throws decodebench::Error as write_json_file.
void write_text_file(const std::string& path, const std::string& text,
                     const std::string& flag = "--json");

/// Checks early (before a long run) that `path` can be written: its folder (for a link, the folder
/// of the file it leads to) exists and is writable, or, for a device or FIFO, the node itself is.
/// "-" is always fine. Throws decodebench::Error (exit 2) naming the path otherwise.
void check_json_destination(const std::string& path);

/// check_json_destination() with `flag` naming the option in the messages.
void check_destination(const std::string& path, const std::string& flag);

/// Throws decodebench::Error (exit 2) when the output `path` of option `flag` is the same file as
/// one of `inputs` (same path or a link to it; "-" and inputs that do not exist never match), so
/// that an output never replaces a file the command reads.
void check_not_an_input(const std::string& path, const std::string& flag,
                        const std::vector<std::string>& inputs);

/// The files a run reads, for check_not_an_input: `model_path`, and `preset` when it names a file
/// (preset_names_a_file; an embedded preset's name is no file).
std::vector<std::string> run_input_files(const std::string& model_path, const std::string& preset);

/// Most bytes read_input_file reads from a source that is not a regular file (a pipe, a device):
/// 256 MiB, so that /dev/zero or a runaway pipe ends with an error, not out of memory.
inline constexpr size_t kMaxInputFileBytes = size_t{256} << 20;

/// The whole content of the input file `path`: a regular file, or a pipe such as a process
/// substitution (`<(cmd)`) or /dev/stdin; `what` names it in messages ("suite file"). A FIFO
/// without a writer reads as empty instead of blocking.
/// Throws decodebench::Error (exit 2) when it is missing, unreadable, a folder, or not a regular
/// file and longer than kMaxInputFileBytes.
std::string read_input_file(const std::string& path, const std::string& what);

/// Parses `text` as JSON (`Json`: nlohmann::json or nlohmann::ordered_json) and sets `*duplicate`
/// to the first key that appears twice in one object, "" when none: a parser keeps only such a
/// key's last value, silently ("layers": 2, ..., "layers": 30 gives 30), so an input file refuses
/// it. Throws nlohmann::json::exception as Json::parse does (syntax, a number out of range).
template <typename Json>
Json parse_json_noting_duplicate_keys(const std::string& text, std::string* duplicate) {
  std::vector<std::set<std::string>> keys;  // the keys of each open object
  duplicate->clear();
  const auto callback = [&](int, typename Json::parse_event_t event, Json& parsed) {
    using Event = typename Json::parse_event_t;
    if (event == Event::object_start) keys.emplace_back();
    if (event == Event::object_end && !keys.empty()) keys.pop_back();
    if (event == Event::key && !keys.empty() && parsed.is_string() &&
        !keys.back().insert(parsed.template get<std::string>()).second && duplicate->empty()) {
      *duplicate = parsed.template get<std::string>();
    }
    return true;
  };
  return Json::parse(text, callback);
}

}  // namespace decodebench
