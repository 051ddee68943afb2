#include "core/suite/suite.hpp"

#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/result/json_file.hpp"
#include "core/text.hpp"

namespace decodebench {

namespace {

constexpr std::array<std::string_view, 29> kSweepFlags = {
    "--preset",        "--layers",       "--hidden",    "--heads",         "--kv-heads",
    "--head-dim",      "--ffn",          "--vocab",     "--context",       "--rope-theta",
    "--rms-eps",       "--dtype",        "--seed",      "--prompt-tokens", "--tokens",
    "--warmup",        "--warmup-time",  "--batch",     "--backend",       "--threads",
    "--graph",         "--capture-mode", "--fusion",    "--pdl",           "--launch-ahead",
    "--weight-layout", "--min-time",     "--max-noise", "--max-time"};

constexpr std::array<std::string_view, 15> kIntegerFlags = {
    "--layers", "--hidden",        "--heads",   "--kv-heads", "--head-dim",
    "--ffn",    "--vocab",         "--context", "--seed",     "--tokens",
    "--warmup", "--prompt-tokens", "--batch",   "--threads",  "--verify"};

// Splits "a,b,c"; Error naming `flag` when an element is empty.
std::vector<std::string> split_list(const std::string& flag, const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    if (item.empty()) {
      // "--layers 1, 2" reaches here as "1,": the space ended the list.
      if (comma == std::string::npos && !text.empty()) {
        throw usage_error(flag + ": the list '" + echo_value(text) +
                          "' ends with a comma (if a space followed it, the space ended the list: "
                          "write 2,4,8, not 2, 4, 8)");
      }
      throw usage_error(flag + ": empty element in the list '" + echo_value(text) +
                        "' (a sweep is a comma-separated list of values, e.g. 2,4,8)");
    }
    items.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

// One swept argument: where it is in argv and its alternatives.
struct Axis {
  size_t index;      // position in args of the argument that holds the value
  std::string flag;  // "--layers"
  bool inline_form;  // "--layers=2,4"
  std::vector<std::string> values;
};

std::string scalar_text(const nlohmann::ordered_json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  return v.dump();  // floats: shortest round-trip form, e.g. 1e-05
}

}  // namespace

std::string sweep_flag_list() {
  std::string out;
  for (const auto f : kSweepFlags) out += (out.empty() ? "" : " ") + std::string(f);
  return out;
}

bool is_sweep_flag(std::string_view flag) {
  for (const auto f : kSweepFlags) {
    if (f == flag) return true;
  }
  return false;
}

bool is_integer_run_flag(std::string_view flag) {
  return std::find(kIntegerFlags.begin(), kIntegerFlags.end(), flag) != kIntegerFlags.end();
}

std::string sweep_label(const std::vector<std::pair<std::string, std::string>>& values) {
  std::string label;
  for (const auto& [flag, value] : values) label += (label.empty() ? "" : " ") + flag + "=" + value;
  return label;
}

namespace {

// Whether run flag `flag` takes a value: the sweep flags, and those whose values may hold a comma.
bool takes_value(const std::string& flag) {
  return is_sweep_flag(flag) || flag == "--model" || flag == "--prompt" || flag == "--prompt-ids" ||
         flag == "--inject-capture-fault";
}

// product · n, saturating at kMaxSweepRuns + 1 (a cartesian product of lists can overflow).
size_t runs_times(size_t product, size_t n) {
  return n > kMaxSweepRuns / std::max<size_t>(product, 1) ? kMaxSweepRuns + 1 : product * n;
}

}  // namespace

std::vector<SweepPoint> expand_sweep(const std::vector<std::string>& args) {
  const std::vector<SweepPoint> unchanged = {SweepPoint{args, {}}};
  if (!args.empty() && !args[0].empty() && args[0][0] != '-' && args[0] != "run") return unchanged;
  for (const auto& a : args) {
    if (a == "-h" || a == "--help" || a == "--version") return unchanged;
  }
  std::vector<Axis> axes;
  std::map<std::string, int> occurrences;  // of every sweep flag, swept or not
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const size_t eq = a.find('=');
    if (eq != std::string::npos && a.rfind("--", 0) == 0 && is_sweep_flag(a.substr(0, eq))) {
      const std::string flag = a.substr(0, eq);
      const std::string value = a.substr(eq + 1);
      ++occurrences[flag];
      if (value.find(',') != std::string::npos) {
        axes.push_back({i, flag, true, split_list(flag, value)});
      }
      continue;
    }
    if (is_sweep_flag(a) && i + 1 < args.size()) {
      ++occurrences[a];
      const std::string& value = args[i + 1];
      if (value.find(',') != std::string::npos)
        axes.push_back({i + 1, a, false, split_list(a, value)});
      ++i;  // the value is consumed either way
    }
  }
  // A run takes a repeated flag's last value, so a list given next to another occurrence would
  // label runs with values they did not use.
  for (const Axis& axis : axes) {
    if (occurrences[axis.flag] > 1) {
      throw usage_error(axis.flag + " is given " + std::to_string(occurrences[axis.flag]) +
                        " times and one of them is a list: give a swept flag once, with all "
                        "its values (" +
                        axis.flag + " A,B,C)");
    }
  }
  if (axes.empty()) return unchanged;
  size_t runs = 1;
  std::string sizes;
  for (const Axis& axis : axes) {
    runs = runs_times(runs, axis.values.size());
    sizes +=
        (sizes.empty() ? "" : " × ") + std::to_string(axis.values.size()) + " (" + axis.flag + ")";
  }
  if (runs > kMaxSweepRuns) {
    throw usage_error("the sweep's lists make " + sizes + " runs, more than " +
                      std::to_string(kMaxSweepRuns) + ": sweep fewer values at a time");
  }
  // Odometer over the axes: the last axis varies fastest, so the first flag is the outer loop.
  std::vector<size_t> digit(axes.size(), 0);
  std::vector<SweepPoint> points;
  while (true) {
    SweepPoint p{args, {}};
    for (size_t k = 0; k < axes.size(); ++k) {
      const Axis& axis = axes[k];
      const std::string& v = axis.values[digit[k]];
      p.args[axis.index] = axis.inline_form ? axis.flag + "=" + v : v;
      p.values.emplace_back(axis.flag.substr(2), v);
    }
    points.push_back(std::move(p));
    size_t k = axes.size();
    while (k > 0) {
      --k;
      if (++digit[k] < axes[k].values.size()) break;
      digit[k] = 0;
      if (k == 0) return points;
    }
  }
}

SuiteDefinition parse_suite(const nlohmann::ordered_json& doc, const std::string& source) {
  if (!doc.is_object()) throw usage_error(source + ": a suite is a JSON object");
  for (const auto& [key, value] : doc.items()) {
    if (key != "name" && key != "description" && key != "configurations" && key != "notes" &&
        key != "$schema") {
      throw usage_error(source + ": unknown key '" + key +
                        "' (a suite has name, description, configurations and optional notes)");
    }
  }
  SuiteDefinition def;
  def.source = source;
  if (!doc.contains("name") || !doc["name"].is_string() || doc["name"].get<std::string>().empty()) {
    throw usage_error(source + ": 'name' must be a non-empty string");
  }
  def.name = doc["name"].get<std::string>();
  if (doc.contains("description")) {
    if (!doc["description"].is_string()) {
      throw usage_error(source + ": 'description' must be a string");
    }
    def.description = doc["description"].get<std::string>();
  }
  if (!doc.contains("configurations") || !doc["configurations"].is_array() ||
      doc["configurations"].empty()) {
    throw usage_error(source +
                      ": 'configurations' must be a non-empty list of objects of run flags");
  }
  const auto& configs = doc["configurations"];
  std::vector<std::vector<std::string>> label_pairs;  // "key=value" of each configuration
  for (size_t c = 0; c < configs.size(); ++c) {
    const std::string where = source + ": configurations[" + std::to_string(c) + "]";
    if (!configs[c].is_object() || configs[c].empty()) {
      throw usage_error(where + " must be a non-empty object of run flags");
    }
    // Each key: its alternatives (one unless it is a list), as argument lists.
    struct Key {
      std::string name;  // flag without "--", dashes
      std::vector<std::vector<std::string>> alternatives;
      std::vector<std::string> shown;  // value as shown in the label
    };
    std::vector<Key> keys;
    for (const auto& [raw_key, value] : configs[c].items()) {
      Key k;
      k.name = raw_key;
      for (char& ch : k.name) ch = ch == '_' ? '-' : ch;
      if (k.name.rfind("--", 0) == 0) k.name = k.name.substr(2);
      if (k.name == "json") {
        throw usage_error(where +
                          ": key 'json' is not allowed (the suite writes one document: "
                          "decodebench suite FILE --json OUT)");
      }
      if (k.name == "help" || k.name == "h" || k.name == "version") {
        throw usage_error(where + ": key '" + raw_key +
                          "' is not a run setting (a configuration holds the flags of one run)");
      }
      // prompt_tokens and prompt-tokens are one flag: a run would take the last one silently.
      for (const Key& seen : keys) {
        if (seen.name == k.name) {
          throw usage_error(where + ": key '" + raw_key + "' names the flag --" + k.name +
                            " a second time");
        }
      }
      const std::string flag = "--" + k.name;
      const auto add = [&](const nlohmann::ordered_json& v) {
        // true adds the flag alone: a flag that takes a value would take the next flag as it
        // ("--layers --hidden 64": "'--hidden' is not an integer").
        if (v.is_boolean() && takes_value(flag)) {
          throw usage_error(where + ": key '" + raw_key + "' is " +
                            (v.get<bool>() ? "true" : "false") + ", but " + flag +
                            " takes a value (true and false are for flags " +
                            "without one, such as phase_timing)");
        }
        if (v.is_boolean()) {
          k.alternatives.push_back(v.get<bool>() ? std::vector<std::string>{flag}
                                                 : std::vector<std::string>{});
          k.shown.push_back(v.get<bool>() ? "true" : "false");
        } else if (v.is_string() || v.is_number()) {
          std::string text = scalar_text(v);
          // "010" runs 10 layers, so it is labelled layers=10; "0x10" is refused here, before
          // any configuration runs.
          if (is_integer_run_flag(flag)) {
            if (v.is_number_float()) {
              throw usage_error(where + ": key '" + raw_key + "': " + v.dump() +
                                " is a JSON number with a fraction or an exponent: write the "
                                "integer's digits (e.g. 1000, not 1e3 or 1000.0)");
            }
            std::string problem = plain_decimal_integer(text);
            // What plain_decimal_integer leaves for CLI11 ("abc", "2,4") is refused here too, so
            // a suite's integer values are refused in one place and one wording.
            if (problem.empty() && !is_plain_decimal(text)) {
              problem = "'" + echo_value(text) + "' is not an integer";
              if (text.find(',') != std::string::npos) {
                problem += " (a list of values is a JSON array: [2, 4], not \"2,4\")";
              }
            }
            if (!problem.empty()) throw usage_error(where + ": key '" + raw_key + "': " + problem);
          }
          k.alternatives.push_back({flag, text});
          k.shown.push_back(text);
        } else {
          const std::string type = v.type_name();
          throw usage_error(where + ": key '" + raw_key + "' has " +
                            (type == "object" || type == "array" ? "an " : "a ") + type +
                            " value (expected a string, number, boolean or a list of them)");
        }
      };
      if (value.is_array()) {
        if (value.empty()) throw usage_error(where + ": key '" + raw_key + "' is an empty list");
        for (const auto& v : value) add(v);
      } else {
        add(value);
      }
      keys.push_back(std::move(k));
    }
    // Cartesian product in key order, the last key varying fastest; its size first, so that a
    // runaway product is refused before it is built.
    size_t product = 1;  // saturates at kMaxSweepRuns + 1
    for (const Key& k : keys) {
      product = runs_times(product, k.alternatives.size());
    }
    if (def.configurations.size() + product > kMaxSweepRuns) {
      throw usage_error(where + ": its lists make " +
                        (product > kMaxSweepRuns ? "more than " + std::to_string(kMaxSweepRuns)
                                                 : std::to_string(product)) +
                        " runs, after " + std::to_string(def.configurations.size()) +
                        " from the configurations before it; a suite may expand to at most " +
                        std::to_string(kMaxSweepRuns) + ": sweep fewer values at a time");
    }
    std::vector<size_t> digit(keys.size(), 0);
    while (true) {
      SuiteConfiguration sc;
      sc.entry = c;
      std::vector<std::string> pairs;
      for (size_t k = 0; k < keys.size(); ++k) {
        const auto& alt = keys[k].alternatives[digit[k]];
        sc.args.insert(sc.args.end(), alt.begin(), alt.end());
        pairs.push_back(keys[k].name + "=" + keys[k].shown[digit[k]]);
      }
      def.configurations.push_back(std::move(sc));
      label_pairs.push_back(std::move(pairs));
      size_t k = keys.size();
      bool done = true;
      while (k > 0) {
        --k;
        if (++digit[k] < keys[k].alternatives.size()) {
          done = false;
          break;
        }
        digit[k] = 0;
      }
      if (done) break;
    }
  }
  // Labels show what tells configurations apart: the pairs not shared by every configuration
  // (all pairs when there is one configuration, or when nothing differs).
  for (size_t i = 0; i < def.configurations.size(); ++i) {
    std::string label, all;
    for (const auto& pair : label_pairs[i]) {
      all += (all.empty() ? "" : " ") + pair;
      bool shared = def.configurations.size() > 1;
      for (const auto& other : label_pairs) {
        shared = shared && std::find(other.begin(), other.end(), pair) != other.end();
      }
      if (!shared) label += (label.empty() ? "" : " ") + pair;
    }
    def.configurations[i].label = label.empty() ? all : label;
  }
  return def;
}

SuiteDefinition load_suite_file(const std::string& path) {
  const std::string text = read_input_file(path, "suite file");
  nlohmann::ordered_json doc;
  std::string duplicate;  // refused after parsing: a key given twice keeps only its last value
  try {
    doc = parse_json_noting_duplicate_keys<nlohmann::ordered_json>(text, &duplicate);
  } catch (const nlohmann::json::exception& e) {  // syntax, or a number out of range (1e400)
    throw usage_error(path + ": not valid JSON (" + e.what() + ")");
  }
  if (!duplicate.empty()) {
    throw usage_error(path + ": key '" + duplicate +
                      "' appears twice in one object (JSON would keep only its last value); "
                      "give each key once");
  }
  return parse_suite(doc, path);
}

}  // namespace decodebench
