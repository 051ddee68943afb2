// The text of the JSON files decodebench writes: indented like nlohmann::json::dump(2), with
// arrays of scalars packed into lines, so a run's per-step samples take a few lines, not one per
// number.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace decodebench {

/// Lines of json_text() stay within this many columns, except where one value is wider.
inline constexpr int kJsonTextColumns = 100;

/// `doc` as indented JSON text (no trailing newline). Objects, and arrays holding an object or an
/// array, are laid out as nlohmann::json::dump(2) lays them out (one member or element per line,
/// 2 spaces per level); an array of scalars only (numbers, strings, booleans, null) stays on its
/// key's line when it fits kJsonTextColumns, else its elements fill lines of at most that width,
/// indented one level. Values are written as dump() writes them (numbers in their shortest
/// round-trip form), and bytes that are not valid UTF-8 in strings or keys become U+FFFD, as
/// dump() with error_handler_t::replace does, so json::parse(json_text(doc)) == doc for any valid
/// document. Throws nothing beyond std::bad_alloc.
std::string json_text(const nlohmann::json& doc);

}  // namespace decodebench
