#include "app/parse_errors.hpp"

#include <algorithm>
#include <cctype>
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

// `word` without its leading dashes, in lower case: "--Layer" → "layer" (a shifted key is one
// mistake less than another letter).
std::string bare(const std::string& word) {
  const size_t n = word.find_first_not_of('-');
  std::string b = n == std::string::npos ? std::string() : word.substr(n);
  for (char& ch : b) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return b;
}

// The closest of `candidates` to `word` within an edit distance of 2 (1 for names of 2 to 4
// characters, where 2 edits make most names alike; 0 for one letter, which any other letter is
// one edit from: only a case change), compared without their dashes; empty when none is.
std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string w = bare(word);
  if (w.empty()) return "";
  const int cap = w.size() == 1 ? 0 : w.size() <= 4 ? 1 : 2;
  std::string best;
  int best_d = cap + 1;
  for (const std::string& c : candidates) {
    const int d = edit_distance(w, bare(c), cap);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

// "--layer" (or "--layer=2", "-Q", "-tokens") among the flags of `app`, long ("--x") and short
// ("-x") names alike: the dashes do not count.
std::string flag_suggestion(const CLI::App& app, std::string arg) {
  if (const size_t eq = arg.find('='); eq != std::string::npos) arg.resize(eq);
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : o->get_snames()) names.push_back("-" + s);
  }
  return closest(arg, names);
}

// A word that reads as a flag: "-x", "--xy", not "-", "--" (the end of the flags) or a negative
// number ("-5").
bool looks_like_flag(const std::string& a) {
  return a.size() >= 2 && a[0] == '-' && a != "--" &&
         !(std::isdigit(static_cast<unsigned char>(a[1])) || a[1] == '.');
}

// The first word `parser` did not take: the first flag-like one (with the nearest flag of
// `flags`), else the first one (with the nearest command when `parser` is the root).
std::string extras_of(const CLI::App& parser, const CLI::App& flags, const CLI::App& root,
                      bool is_root) {
  const std::vector<std::string> extras = parser.remaining();
  if (extras.empty()) return "";
  const auto end = std::find(extras.begin(), extras.end(), std::string("--"));
  const auto flag = std::find_if(extras.begin(), end, looks_like_flag);
  if (flag != end) {
    std::string msg = "unknown flag '" + *flag + "'";
    const std::string near = flag_suggestion(flags, *flag);
    if (!near.empty()) msg += "; did you mean " + near + "?";
    return msg;
  }
  const auto word =
      std::find_if(extras.begin(), extras.end(), [](const std::string& a) { return a != "--"; });
  if (word == extras.end()) return "";
  std::string msg = "unexpected argument '" + *word + "'";
  if (is_root) {
    std::vector<std::string> commands;
    for (const CLI::App* s : root.get_subcommands([](const CLI::App*) { return true; })) {
      commands.push_back(s->get_name());
    }
    if (!commands.empty()) {
      const std::string near = closest(*word, commands);
      if (!near.empty()) return msg + "; did you mean the command '" + near + "'?";
      msg += " (commands:";
      for (size_t i = 0; i < commands.size(); ++i) msg += (i == 0 ? " " : ", ") + commands[i];
      msg += ")";
    }
  }
  return msg;
}

// Words before a subcommand belong to the root: its extras are the earlier mistake. With a
// command named, a flag the root did not take was meant for the command (whose flags go after
// it): suggested from the command's flags, as the command's --help lists them.
std::string extras_message(const CLI::App& app, const CLI::App* named) {
  const CLI::App& flags = named != nullptr ? *named : app;
  std::string msg = extras_of(app, flags, app, named == nullptr);
  if (!msg.empty() && named != nullptr && msg.starts_with("unknown flag")) {
    msg += " (the flags of '" + named->get_name() + "' go after it)";
  }
  if (msg.empty() && named != nullptr) msg = extras_of(*named, *named, app, false);
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
