// The text of the JSON files decodebench writes: indented like nlohmann::json::dump(2), with
// arrays of scalars packed into lines, so a run's per-step samples take a few lines, not one per
// number.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace decodebench {

/// The width, in bytes, that json_text() fills with the elements of an array of scalars.
inline constexpr int kJsonTextColumns = 100;

/// `doc` as indented JSON text (no trailing newline). Objects, and arrays holding an object or an
/// array, are laid out as nlohmann::json::dump(2) lays them out (one member or element per line,
/// 2 spaces per level). An array of scalars only (numbers, strings, booleans, null) stays on its
/// key's line when that line, with the comma that may follow, fits kJsonTextColumns; else its
/// elements fill lines of at most that width, indented one level (an element wider than that gets
/// a line of its own). Other lines are not wrapped. Values are written as dump() writes them:
/// numbers in their shortest round-trip form, NaN and ±inf as null, and bytes that are not valid
/// UTF-8 in strings or keys as U+FFFD (error_handler_t::replace). So json::parse(json_text(doc)) ==
/// doc for every document whose numbers are finite and whose strings and keys are valid UTF-8.
/// Throws nothing beyond std::bad_alloc.
std::string json_text(const nlohmann::json& doc);

}  // namespace decodebench
