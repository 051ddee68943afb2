#include "app/parse_errors.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "core/text.hpp"

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
  std::string value = what.substr(eq + 3);
  const CLI::Option* opt = named != nullptr ? named->get_option_no_throw(name) : nullptr;
  if (opt == nullptr) opt = app.get_option_no_throw(name);
  if (opt == nullptr || opt->get_type_name().empty()) return what;
  const std::string type = opt->get_type_name();
  const std::string kind = type == "INT"     ? "an integer"
                           : type == "UINT"  ? "a non-negative integer"
                           : type == "FLOAT" ? "a number"
                                             : "a value of type " + type;
  // CLI11 joins every occurrence's value with commas ("--tokens 4 --tokens abc": "4,abc"), though
  // only the last one is read (a flag given twice takes its last value).
  // An option that splits its values on commas (bench-kernels --batches 1,x,4) holds one result
  // per item: the joined list is what was typed.
  const std::vector<std::string>& given = opt->results();
  const bool splits = opt->get_delimiter() != '\0';
  std::string note;
  if (given.size() > 1 && !splits) {
    value = given.back();
    note = " (" + name + " is given " + std::to_string(given.size()) +
           " times; the last value counts)";
  } else if (!splits && value.find(',') != std::string::npos && named != nullptr &&
             named->get_name() != "run") {
    // "make-gguf --layers 1,2": comma lists are the main run's sweeps.
    note = " (comma lists sweep the main run only; " + name + " of '" + named->get_name() +
           "' takes one value)";
  }
  return name + ": '" + echo_value(value) + "' is not " + kind + note;
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
// `flags`), else the first one (with the nearest command when `parser` is the root; that word,
// whole, in `*word` where given: the message shortens a long one).
std::string extras_of(const CLI::App& parser, const CLI::App& flags, const CLI::App& root,
                      bool is_root, std::string* word_out = nullptr) {
  const std::vector<std::string> extras = parser.remaining();
  if (extras.empty()) return "";
  const auto end = std::find(extras.begin(), extras.end(), std::string("--"));
  const auto flag = std::find_if(extras.begin(), end, looks_like_flag);
  if (flag != end) {
    std::string msg = "unknown flag '" + echo_value(*flag) + "'";
    const std::string near = flag_suggestion(flags, *flag);
    if (!near.empty()) msg += "; did you mean " + near + "?";
    return msg;
  }
  const auto word =
      std::find_if(extras.begin(), extras.end(), [](const std::string& a) { return a != "--"; });
  if (word == extras.end()) return "";
  if (word_out != nullptr) *word_out = *word;
  std::string msg = "unexpected argument '" + echo_value(*word) + "'";
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
// it): suggested from the command's flags, as the command's --help lists them. An unexpected
// word (not a flag) is also put whole in `*word`.
std::string extras_message(const CLI::App& app, const CLI::App* named, std::string* word) {
  const CLI::App& flags = named != nullptr ? *named : app;
  std::string msg = extras_of(app, flags, app, named == nullptr, word);
  if (!msg.empty() && named != nullptr && msg.starts_with("unknown flag")) {
    msg += " (the flags of '" + named->get_name() + "' go after it)";
  }
  if (msg.empty() && named != nullptr) msg = extras_of(*named, *named, app, false, word);
  return msg;
}

// The name of `opt` as the user typed it in `args` ("-q" or "--quiet", without "=value"); its
// first long name (else short name) when no word matches, as in a cluster of short flags ("-qv").
std::string typed_name(const CLI::Option& opt, const std::vector<std::string>& args) {
  const auto end = std::find(args.begin(), args.end(), std::string("--"));
  for (auto a = args.begin(); a != end; ++a) {
    if (!looks_like_flag(*a)) continue;
    const std::string name = a->substr(0, a->find('='));
    if (opt.check_name(name)) return name;
  }
  if (!opt.get_lnames().empty()) return "--" + opt.get_lnames().front();
  return opt.get_snames().empty() ? opt.get_name() : "-" + opt.get_snames().front();
}

// True when `command` has a flag of any of `opt`'s names.
bool command_has(const CLI::App& command, const CLI::Option& opt) {
  for (const std::string& l : opt.get_lnames()) {
    if (command.get_option_no_throw("--" + l) != nullptr) return true;
  }
  for (const std::string& s : opt.get_snames()) {
    if (command.get_option_no_throw("-" + s) != nullptr) return true;
  }
  return false;
}

// "--a", "--a and --b", "--a, --b and --c" (or "or").
std::string joined(const std::vector<std::string>& names, const char* conjunction = "and") {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) {
    s += (i == 0                  ? ""
          : i + 1 == names.size() ? std::string(" ") + conjunction + " "
                                  : ", ") +
         names[i];
  }
  return s;
}

// The message for flags typed before `command`, each with whether `command` has it too.
std::string before_command_text(const CLI::App& command, const std::vector<std::string>& all,
                                const std::vector<std::string>& shared,
                                const std::vector<std::string>& missing) {
  const std::string name = command.get_name();
  const std::string flags =
      joined(all) + (all.size() == 1 ? " was" : " were") + " given before '" + name + "'";
  if (name == "run") {  // the same flags, given to the root instead of the command
    return flags + ": the flags of 'run' go after it (or leave 'run' out)";
  }
  std::string msg = flags + ", which takes no flags before it";
  if (!shared.empty()) msg += ": put " + joined(shared) + " after it";
  if (!missing.empty()) msg += "; '" + name + "' has no " + joined(missing, "or");
  return msg;
}

}  // namespace

std::string parse_error_message(const CLI::App& app, const CLI::App* named,
                                const CLI::ParseError& e, const std::vector<std::string>* args) {
  try {
    if (dynamic_cast<const CLI::ConversionError*>(&e) != nullptr) {
      return conversion_message(app, named, e.what());
    }
    const std::string what = e.what();
    // CLI11's "--format: markdown not in {text,md,json}" as the run flags say it, with a hint.
    if (dynamic_cast<const CLI::ValidationError*>(&e) != nullptr) {
      const size_t colon = what.find(": ");
      const size_t in = what.rfind(" not in {");
      if (colon != std::string::npos && in != std::string::npos && in > colon &&
          what.back() == '}') {
        const std::string value = what.substr(colon + 2, in - colon - 2);
        const std::string list = what.substr(in + 9, what.size() - in - 10);
        std::vector<std::string> names;
        std::string choices;
        for (size_t start = 0; start <= list.size();) {
          const size_t comma = std::min(list.find(',', start), list.size());
          names.push_back(list.substr(start, comma - start));
          choices += (choices.empty() ? "" : "|") + names.back();
          start = comma + 1;
        }
        return what.substr(0, colon) + ": invalid value '" + echo_value(value) + "'" +
               choice_hint(value, names) + " (expected " + choices + ")";
      }
    }
    // "new is required": a command's missing argument, named with what it is.
    if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && named != nullptr &&
        what.ends_with(" is required")) {
      const std::string name = what.substr(0, what.size() - 12);
      const CLI::Option* opt = named->get_option_no_throw(name);
      if (opt != nullptr && opt->get_lnames().empty() && opt->get_snames().empty()) {
        const std::string desc = opt->get_description();
        return "'" + named->get_name() + "' is missing its argument '" + name + "'" +
               (desc.empty() ? "" : ": " + desc);
      }
    }
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
      std::string word;
      const std::string msg = extras_message(app, named, &word);
      // "unexpected argument 'yes'" after a flag without a value: --phase-timing yes.
      if (args != nullptr && msg.starts_with("unexpected argument '")) {
        const CLI::App& flags = named != nullptr ? *named : app;
        // The word's last occurrence: an earlier one may be a command's argument taken as such
        // ("compare -q a.json b.json a.json": the third file is the extra).
        for (size_t k = args->size(); k-- > 1;) {
          if ((*args)[k] != word) continue;
          const CLI::Option* opt = flags.get_option_no_throw((*args)[k - 1]);
          if (opt != nullptr && opt->get_items_expected_max() == 0) {
            return (*args)[k - 1] + " takes no value (got '" + echo_value(word) + "')";
          }
          break;
        }
      }
      if (!msg.empty()) return msg;
    }
    // "--quiet excludes --verbose": two flags that contradict each other.
    if (dynamic_cast<const CLI::ExcludesError*>(&e) != nullptr) {
      const size_t ex = what.find(" excludes ");
      if (ex != std::string::npos) {
        return what.substr(0, ex) + " and " + what.substr(ex + 10) +
               " contradict each other: give one of them";
      }
    }
  } catch (...) {  // a message, never a second failure
  }
  return e.what();
}

void require_decimal_integers(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    if (opt->get_type_name() != "INT") continue;
    opt->transform(CLI::Validator([](std::string& value) { return plain_decimal_integer(value); },
                                  "", "decimal"));
  }
  for (CLI::App* sub : app.get_subcommands({})) require_decimal_integers(*sub);
}

std::string flags_before_command_message(const CLI::App& root, const CLI::App& command,
                                         const std::vector<std::string>& args) {
  try {
    std::vector<const CLI::Option*> given;  // in the order given, each once
    for (const CLI::Option* o : root.parse_order()) {
      if (o == root.get_help_ptr() || o == root.get_version_ptr()) continue;
      if (std::find(given.begin(), given.end(), o) == given.end()) given.push_back(o);
    }
    if (given.empty()) return "";
    std::vector<std::string> all, shared, missing;
    for (const CLI::Option* o : given) {
      const std::string typed = typed_name(*o, args);
      all.push_back(typed);
      (command_has(command, *o) ? shared : missing).push_back(typed);
    }
    return before_command_text(command, all, shared, missing);
  } catch (...) {  // a message, never a second failure
    return "flags of the main run were given before '" + command.get_name() +
           "', which does not take them";
  }
}

std::string command_after_flags_message(const CLI::App& root,
                                        const std::vector<std::string>& args) {
  try {
    if (args.empty() || !looks_like_flag(args[0])) return "";
    for (size_t k = 1; k < args.size() && args[k] != "--"; ++k) {
      const std::string& word = args[k];
      const auto named =
          root.get_subcommands([&word](const CLI::App* c) { return c->check_name(word); });
      if (named.empty()) continue;
      const CLI::App* command = named.front();
      // The value of the flag before it ("--prompt run") is not a command.
      const CLI::Option* prev = root.get_option_no_throw(args[k - 1]);
      if (prev != nullptr && prev->get_expected_min() > 0) continue;
      std::vector<std::string> all, shared, missing;
      for (size_t i = 0; i < k; ++i) {
        if (!looks_like_flag(args[i])) continue;
        const std::string typed = args[i].substr(0, args[i].find('='));
        if (std::find(all.begin(), all.end(), typed) != all.end()) continue;
        all.push_back(typed);
        const CLI::Option* o = root.get_option_no_throw(typed);
        (o != nullptr && command_has(*command, *o) ? shared : missing).push_back(typed);
      }
      return all.empty() ? "" : before_command_text(*command, all, shared, missing);
    }
  } catch (...) {  // a message, never a second failure
  }
  return "";
}

}  // namespace decodebench::app
