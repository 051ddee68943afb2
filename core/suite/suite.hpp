// Suites and sweeps: lists of run configurations, each a list of `decodebench run` flags.
// Pure functions (no I/O but load_suite_file); running them is suite_runner.hpp's job.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace decodebench {

/// Version of the suite document layout (docs/suite.schema.json); bump on incompatible changes.
inline constexpr const char* kSuiteSchemaVersion = "1.0";

/// One configuration: the run flags exactly as they would be typed after `decodebench`.
struct SuiteConfiguration {
  std::string label;              ///< "layers=2 dtype=f16": the values that tell it apart
  std::vector<std::string> args;  ///< e.g. {"--preset", "smollm2-135m", "--layers", "2"}
  /// The suite file's `configurations[entry]` it was expanded from (0-based, as errors found
  /// while reading the file name it); empty for a command-line sweep.
  std::optional<size_t> entry;
};

/// A suite: a name, a description and its configurations in run order.
/// SuiteDefinition::source of a command-line sweep (it has no file).
inline constexpr const char* kCommandLineSource = "command line";

struct SuiteDefinition {
  std::string name;
  std::string description;
  std::string source;  ///< the suite file, or kCommandLineSource for a sweep
  std::vector<SuiteConfiguration> configurations;
};

// ---- Comma sweeps on the command line -------------------------------------------------------

/// Most runs a sweep or a suite file may expand to: far more than any benchmark session runs
/// (each run takes seconds), and few enough to list. A product of lists beyond it (four lists of
/// 100 values: 10^8 command lines) is refused before it is built.
inline constexpr size_t kMaxSweepRuns = 10000;

/// True for the run flags whose values are split on commas by expand_sweep(): --preset, the shape
/// flags (--layers --hidden --heads --kv-heads --head-dim --ffn --vocab --context --rope-theta
/// --rms-eps --dtype --seed), --prompt-tokens --tokens --warmup --warmup-time --batch --backend
/// --threads --graph --capture-mode --fusion --pdl --launch-ahead --weight-layout --min-time
/// --max-noise --max-time. Never --model, --prompt, --prompt-ids, --json or any other flag whose
/// value may legitimately hold a comma.
bool is_sweep_flag(std::string_view flag);

/// True for the run flags that take an integer (--layers --hidden --heads --kv-heads --head-dim
/// --ffn --vocab --context --seed --tokens --warmup --prompt-tokens --batch --threads --verify).
/// Their values, in sweep lists and suite files too, are plain decimal only
/// (plain_decimal_integer): CLI11 reads a value beyond int64 as INT64_MAX and, depending on its
/// version, other notations (0x10) as integers.
bool is_integer_run_flag(std::string_view flag);

/// Those flags, space-separated in the order above (for --help).
std::string sweep_flag_list();

/// One command line of a sweep.
struct SweepPoint {
  std::vector<std::string> args;                            ///< argv without the program name
  std::vector<std::pair<std::string, std::string>> values;  ///< (flag without "--", value)
};

/// Expands comma lists of sweep flags (`--layers 2,4` or `--layers=2,4`) into the cartesian
/// product of command lines, in flag order: the first swept flag is the outermost loop, the last
/// one varies fastest (`--layers 2,4 --dtype f16,bf16` → (2,f16) (2,bf16) (4,f16) (4,bf16)).
/// Every other argument is kept as is. Returns one point equal to `args` when nothing is swept,
/// when the first argument is a subcommand other than `run`, or when -h/--help/--version is
/// present.
/// Throws decodebench::Error (exit 2) naming the flag when a list has an empty element, or when a
/// swept flag is also given elsewhere on the line (a run would take the last value, not the
/// label's), or when the product passes kMaxSweepRuns.
std::vector<SweepPoint> expand_sweep(const std::vector<std::string>& args);

/// "layers=2 dtype=f16" from a point's values ("" when nothing was swept).
std::string sweep_label(const std::vector<std::pair<std::string, std::string>>& values);

// ---- Suite files ----------------------------------------------------------------------------

/// Parses a suite file's JSON (bench-configs/suites/*.json):
///   {"name": "...", "description": "...", "configurations": [{"preset": "smollm2-135m",
///    "layers": [2, 4], "dtype": "f16", "backend": "cpu", "tokens": 16}, ...]}
/// Each key of a configuration is a run flag without "--" (underscores read as dashes); a string or
/// number is its value; true adds the flag alone (e.g. "phase_timing": true), false leaves it out;
/// a list sweeps its elements: the configuration expands to the cartesian product of its lists in
/// key order (first key outermost), and configurations run in file order. Keys are kept in file
/// order (parse the file with nlohmann::ordered_json). The label of a configuration lists its
/// key=value pairs that not every configuration shares (all of them when none differ). Flags are
/// checked later by the run flag parser, not here.
/// Throws decodebench::Error (exit 2) naming `source`, the configuration and the key when the shape
/// is wrong (missing name or configurations, unknown top-level key, a value that is null, an object
/// or a nested list, an empty list, a "json" key: the suite writes one document itself).
SuiteDefinition parse_suite(const nlohmann::ordered_json& doc, const std::string& source);

/// Reads and parses a suite file. Error (exit 2) when it is missing, unreadable or not JSON.
SuiteDefinition load_suite_file(const std::string& path);

}  // namespace decodebench
