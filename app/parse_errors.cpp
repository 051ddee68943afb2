#include "app/parse_errors.hpp"

#include <algorithm>
#include <string_view>
#include <vector>

namespace decodebench::app {
namespace {

// CLI11's "Could not convert: --tokens = abc" as "--tokens: 'abc' is not an integer" (from the
// type the help shows), looked up in the named subcommand, then the root; the message as is
// otherwise.
std::string conversion_message(const CLI::App& app, const CLI::App* named,
                               const std::string& what) {
  constexpr std::string_view kPrefix = "Could not convert: ";
  const size_t eq = what.find(" = ");
  if (!what.starts_with(kPrefix) || eq == std::string::npos) return what;
  const std::string name = what.substr(kPrefix.size(), eq - kPrefix.size());
  const std::string value = what.substr(eq + 3);
  const CLI::Option* opt = named != nullptr ? named->get_option_no_throw(name) : nullptr;
  if (opt == nullptr) opt = app.get_option_no_throw(name);
  if (opt == nullptr || opt->get_type_name().empty()) return what;
  const std::string type = opt->get_type_name();
  const std::string kind = type == "INT"     ? "an integer"
                           : type == "UINT"  ? "a non-negative integer"
                           : type == "FLOAT" ? "a number"
                                             : "a value of type " + type;
  return name + ": '" + value + "' is not " + kind;
}

// The closest of `candidates` to `word` within an edit distance of 2 (1 for words of up to 4
// characters, where 2 edits make most words alike); empty when none is.
std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
  const int cap = word.size() <= 4 ? 1 : 2;
  std::string best;
  int best_d = cap + 1;
  for (const std::string& c : candidates) {
    const int d = edit_distance(word, c, cap);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

// "--layer" (or "--layer=2") among the flags of `app`: its long names with "--", short with "-".
std::string flag_suggestion(const CLI::App& app, std::string arg) {
  if (const size_t eq = arg.find('='); eq != std::string::npos) arg.resize(eq);
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
  }
  return closest(arg, names);
}

std::string extras_message(const CLI::App& app, const CLI::App* named) {
  const CLI::App& owner = named != nullptr ? *named : app;
  std::vector<std::string> extras = owner.remaining();
  if (extras.empty() && named != nullptr) extras = app.remaining();
  if (extras.empty()) return "";
  // The first unknown flag is the likely mistake (the words after it are often its value).
  const auto flag = std::find_if(extras.begin(), extras.end(),
                                 [](const std::string& a) { return a.starts_with("-"); });
  if (flag != extras.end()) {
    std::string msg = "unknown flag '" + *flag + "'";
    const std::string near = flag_suggestion(owner, *flag);
    if (!near.empty()) msg += "; did you mean " + near + "?";
    return msg;
  }
  std::string msg = "unexpected argument '" + extras.front() + "'";
  if (named == nullptr) {
    std::vector<std::string> commands;
    for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; })) {
      commands.push_back(s->get_name());
    }
    if (!commands.empty()) {
      const std::string near = closest(extras.front(), commands);
      if (!near.empty()) return msg + "; did you mean the command '" + near + "'?";
      msg += " (commands:";
      for (size_t i = 0; i < commands.size(); ++i) msg += (i == 0 ? " " : ", ") + commands[i];
      msg += ")";
    }
  }
  return msg;
}

}  // namespace

int edit_distance(const std::string& a, const std::string& b, int cap) {
  const size_t n = a.size(), m = b.size();
  if ((n > m ? n - m : m - n) > static_cast<size_t>(cap)) return cap + 1;
  // Rows i − 2, i − 1 and i of the optimal-string-alignment table.
  std::vector<int> prev2(m + 1), prev(m + 1), cur(m + 1);
  for (size_t j = 0; j <= m; ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= m; ++j) {
      const int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
      }
    }
    prev2.swap(prev);
    prev.swap(cur);
  }
  return std::min(prev[m], cap + 1);
}

std::string parse_error_message(const CLI::App& app, const CLI::App* named,
                                const CLI::ParseError& e) {
  try {
    if (dynamic_cast<const CLI::ConversionError*>(&e) != nullptr) {
      return conversion_message(app, named, e.what());
    }
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
      const std::string msg = extras_message(app, named);
      if (!msg.empty()) return msg;
    }
  } catch (...) {  // a message, never a second failure
  }
  return e.what();
}

}  // namespace decodebench::app
