// app::parse_error_message: unknown flags and words named in the order given, with the nearest
// flag or command; edit_distance (core/text.hpp) on hand-computed cases. In-process (CLI11 apps
// built here) and end to end through the binary and a suite file.
#include "app/parse_errors.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/text.hpp"
#include "tests/support/support.hpp"

namespace decodebench::app {
namespace {

TEST(EditDistance, HandComputedCases) {
  EXPECT_EQ(edit_distance("layers", "layers", 2), 0);
  EXPECT_EQ(edit_distance("layer", "layers", 2), 1);     // one insertion
  EXPECT_EQ(edit_distance("dtpye", "dtype", 2), 1);      // one transposition
  EXPECT_EQ(edit_distance("compair", "compare", 2), 2);  // two substitutions (i→r, r→e)
  EXPECT_EQ(edit_distance("kitten", "sitting", 5), 3);   // the textbook case
  EXPECT_EQ(edit_distance("a", "abcdef", 2), 3);         // beyond the cap: cap + 1
  EXPECT_EQ(edit_distance("", "", 2), 0);
  // nearest_names: by distance, ties in the candidates' order, at most `count`.
  const std::vector<std::string> names = {"output.weight", "blk.0.attn_k.weight",
                                          "blk.0.attn_q.weight", "blk.1.attn_q.weight"};
  EXPECT_EQ(nearest_names("blk.0.attn_q.weigth", names, 3),
            (std::vector<std::string>{"blk.0.attn_q.weight", "blk.0.attn_k.weight",
                                      "blk.1.attn_q.weight"}));
  EXPECT_EQ(nearest_names("x", names, 9).size(), 4u);
}

// decimal_bytes: the units the run report, inspect and make-gguf print, without "1000.0 kB".
TEST(DecimalBytes, UnitsAndTheirEdges) {
  EXPECT_EQ(decimal_bytes(0), "0 B");
  EXPECT_EQ(decimal_bytes(999), "999 B");
  EXPECT_EQ(decimal_bytes(1000), "1.0 kB");
  EXPECT_EQ(decimal_bytes(82756), "82.8 kB");
  EXPECT_EQ(decimal_bytes(999949), "999.9 kB");
  EXPECT_EQ(decimal_bytes(999950), "1.0 MB");
  EXPECT_EQ(decimal_bytes(999999), "1.0 MB");
  EXPECT_EQ(decimal_bytes(98362432), "98.4 MB");
  EXPECT_EQ(decimal_bytes(999949999), "999.9 MB");
  EXPECT_EQ(decimal_bytes(999950000), "1.00 GB");
  EXPECT_EQ(decimal_bytes(14141000000), "14.14 GB");
}

// What the user typed, and the message's start and suggestion.
std::string message_for(std::vector<std::string> args) {
  CLI::App app{"t"};
  int layers = 0;
  std::string dtype;
  app.add_option("--layers", layers);
  app.add_option("--dtype", dtype);
  bool quiet = false;
  app.add_flag("-q,--quiet", quiet);
  app.add_subcommand("compare", "c");
  app.add_subcommand("suite", "s");
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 parses from the back
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return parse_error_message(app, nullptr, e);
  }
  return "(parsed)";
}

// A command line and the start of its error message (the whole line when `whole`).
struct Case {
  std::vector<std::string> args;
  std::string message;
};

// Each case exits 2 with "decodebench: error: MESSAGE" on stderr and nothing on stdout.
void expect_usage_errors(const std::vector<Case>& cases, bool whole) {
  for (const Case& c : cases) {
    std::string line;
    for (const std::string& a : c.args) line += " " + a;
    SCOPED_TRACE("decodebench" + line);
    const auto r = testing::run_decodebench(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("decodebench: error: " + c.message + (whole ? "\n" : "")),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.out, "");
  }
}

TEST(ParseErrorMessage, NamesTheUnknownFlagAndTheNearestOne) {
  EXPECT_EQ(message_for({"--layer", "2"}), "unknown flag '--layer'; did you mean --layers?");
  EXPECT_EQ(message_for({"--dtpye=f16"}), "unknown flag '--dtpye=f16'; did you mean --dtype?");
  EXPECT_EQ(message_for({"--frobnicate", "1"}), "unknown flag '--frobnicate'");
  EXPECT_EQ(message_for({"compair", "a.json"}),
            "unexpected argument 'compair'; did you mean the command 'compare'?");
  EXPECT_EQ(message_for({"banana"}), "unexpected argument 'banana' (commands: compare, suite)");
  EXPECT_EQ(message_for({"--layers", "x"}), "--layers: 'x' is not an integer");
  // The first of several unknown flags; the dashes do not count towards the distance ("--ids"
  // is not near "--quiet"), short flags are matched with short ones.
  EXPECT_EQ(message_for({"--frob", "--layer", "2"}), "unknown flag '--frob'");
  EXPECT_EQ(message_for({"--ids", "3"}), "unknown flag '--ids'");
  EXPECT_EQ(message_for({"-Q"}), "unknown flag '-Q'; did you mean -q?");
  EXPECT_EQ(message_for({"--q"}), "unknown flag '--q'; did you mean -q?");
  EXPECT_EQ(message_for({"-x"}), "unknown flag '-x'");  // one letter: only a case change is near
  // After "--" words are arguments, and so is a negative number.
  EXPECT_EQ(message_for({"--", "foo"}), "unexpected argument 'foo' (commands: compare, suite)");
  EXPECT_EQ(message_for({"--layers", "4", "-5"}),
            "unexpected argument '-5' (commands: compare, suite)");
}

TEST(ParseErrorMessage, BinaryAndSuiteFilesSayTheSame) {
  const auto r = testing::run_decodebench({"--preset", "smollm2-135m", "--layer", "2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown flag '--layer'; did you mean --layers?"), std::string::npos)
      << r.err;
  // A flag before the command is the mistake named, suggested from the command's own flags.
  const auto both = testing::run_decodebench({"--quite", "compare", "a.json", "b.json"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("unknown flag '--quite'; did you mean --quiet? (the flags of 'compare' "
                          "go after it)"),
            std::string::npos)
      << both.err;
  EXPECT_NE(both.err.find("Run 'decodebench compare --help'"), std::string::npos) << both.err;
  const auto c = testing::run_decodebench({"compair", "a.json", "b.json"});
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.err.find("unexpected argument 'compair'; did you mean the command 'compare'?"),
            std::string::npos)
      << c.err;
  testing::TempDir dir;
  const auto suite = dir / "typo.json";
  std::ofstream(suite) << R"({"name": "typo", "configurations": [
      {"preset": "smollm2-135m", "dtyp": "f16", "backend": "cpu"}]})";
  const auto s = testing::run_decodebench({"suite", suite.string(), "--list"});
  EXPECT_EQ(s.exit_code, 2);
  EXPECT_NE(s.err.find("did you mean --dtype?"), std::string::npos) << s.err;
}

// The root parser takes the main run's flags; given before a command they would be parsed and
// then ignored by it. They are refused (exit 2, before the command runs), named as typed, with
// the fix: after the command where it has the flag, else left out.
TEST(ParseErrorMessage, RunFlagsBeforeACommandAreRefused) {
  testing::TempDir dir;
  const std::string suite =
      (testing::source_dir() / "bench-configs" / "suites" / "ci-smoke.json").string();
  const std::vector<Case> cases = {
      {{"--layers", "2", "compare", "a.json", "b.json"},
       "--layers was given before 'compare', which takes no flags before it; 'compare' has no "
       "--layers"},
      // Comma lists (sweeps) are expanded before the parser runs; the message is the same.
      {{"--layers", "2,4", "compare", "a.json", "b.json"},
       "--layers was given before 'compare', which takes no flags before it; 'compare' has no "
       "--layers"},
      {{"--layers=2,4", "--prompt", "x", "suite", suite, "--list"},
       "--layers and --prompt were given before 'suite', which takes no flags before it; 'suite' "
       "has no --layers or --prompt"},
      {{"--tokens", "2,3", "run", "--layers", "1"},
       "--tokens was given before 'run': the flags of 'run' go after it (or leave 'run' out)"},
      // After "--" a command was parsed but not run: the main run went ahead without it.
      {{"--layers", "1", "--", "compare", "a.json", "b.json"},
       "'compare' came after '--', which ends the flags: name the command first (decodebench "
       "compare ...)"},
      // Without the check, these two list the suite and exit 0 with the flag ignored.
      {{"--tokens", "5", "suite", suite, "--list"},
       "--tokens was given before 'suite', which takes no flags before it; 'suite' has no "
       "--tokens"},
      {{"--threads=2", "suite", suite, "--list"},
       "--threads was given before 'suite', which takes no flags before it: put --threads after "
       "it"},
      // (Small models after the commands: ignored flags would not make them build a 7B.)
      {{"-q", "--layers", "2", "--tokens", "3", "make-gguf", "--preset", "smollm2-135m", "--layers",
        "1", "--vocab", "512", "--ffn", "256", "--out", (dir / "m.gguf").string()},
       "-q, --layers and --tokens were given before 'make-gguf', which takes no flags before it: "
       "put -q and --layers after it; 'make-gguf' has no --tokens"},
      {{"--layers", "2", "run", "--preset", "smollm2-135m", "--layers", "1", "--vocab", "512",
        "--ffn", "256", "--tokens", "2", "--prompt-tokens", "2", "--backend", "cpu"},
       "--layers was given before 'run': the flags of 'run' go after it (or leave 'run' out)"},
  };
  expect_usage_errors(cases, true);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "make-gguf must not have run";
  // --help and --version still work in front of a command, and the command's own flags after it.
  const auto help = testing::run_decodebench({"--help", "suite"});
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_NE(help.out.find("suite"), std::string::npos) << help.out;
  const auto version = testing::run_decodebench({"--version", "compare"});
  EXPECT_EQ(version.exit_code, 0) << version.err;
  EXPECT_EQ(version.out.rfind("decodebench ", 0), 0u) << version.out;
  const auto after = testing::run_decodebench({"suite", suite, "--list", "--threads", "2", "-q"});
  EXPECT_EQ(after.exit_code, 0) << after.err;
}

// Bad values named as typed: the last of a repeated flag's values (CLI11 joins them all), a comma
// list given to a command that does not sweep, a space inside a sweep list, and a choice in the
// wrong case or one letter off.
TEST(ParseErrorMessage, BadValuesAreNamedAsTyped) {
  testing::TempDir dir;
  const std::string out = (dir / "m.gguf").string();
  // A flag without a value given one, on the command line and as a suite key.
  const std::string suite = (dir / "s.json").string();
  {
    std::ofstream f(suite);
    f << R"({"name": "t", "configurations": [{"layers": 1, "phase_timing": "yes"}]})";
  }
  const std::vector<Case> cases = {
      {{"--tokens", "4", "--backend", "cpu", "--tokens", "abc"},
       "--tokens: 'abc' is not an integer (--tokens is given 2 times; the last value counts)"},
      {{"make-gguf", "--layers", "1,2", "--out", out},
       "--layers: '1,2' is not an integer (comma lists sweep the main run only; --layers of "
       "'make-gguf' takes one value)"},
      // A flag whose values are comma lists: the list as typed, no note.
      {{"bench-kernels", "--batches", "1,x,4"}, "--batches: '1,x,4' is not an integer\n"},
      {{"--preset", "smollm2-135m", "--layers", "1,", "2"},
       "--layers: the list '1,' ends with a comma (if a space followed it, the space ended the "
       "list: write 2,4,8, not 2, 4, 8)"},
      {{"--preset", "smollm2-135m", "--dtype", "F16", "--backend", "cpu"},
       "--dtype: invalid value 'F16' (did you mean 'f16'? names are lower case) (expected "},
      {{"--preset", "smollm2-135m", "--dtype", "q4-k-m", "--backend", "cpu"},
       "--dtype: invalid value 'q4-k-m' (did you mean 'q4_k_m'?) (expected "},
      {{"--preset", "smollm2-135m", "--backend", "cdua"},
       "--backend: invalid value 'cdua' (did you mean 'cuda'?) (expected auto|cpu|cuda)"},
      {{"--preset", "smollm2-135m", "--backend", "gpu"},
       "--backend: invalid value 'gpu' (the GPU backend is 'cuda'; expected auto|cpu|cuda)"},
      // A command's own choices and arguments.
      {{"compare", "a.json", "b.json", "--format", "jsn"},
       "--format: invalid value 'jsn' (did you mean 'json'?) (expected text|md|json)"},
      {{"compare", "a.json"}, "'compare' is missing its argument 'new': New result or suite JSON"},
      {{"--preset", "smollm2-135m", "--backend", "Gpu"},
       "--backend: invalid value 'Gpu' (the GPU backend is 'cuda'; expected auto|cpu|cuda)"},
      {{"--preset", "smollm2-135m", "--phase-timing", "yes"},
       "--phase-timing takes no value (got 'yes')\n"},
      // A command-line sweep is no suite file: no hint about true or false.
      {{"--preset", "smollm2-135m", "--layers", "1,2", "--phase-timing", "yes"},
       "--phase-timing takes no value (got 'yes')\n"},
      // The extra word is the third file, not a value of -q (which came before the first).
      {{"compare", "-q", "a.json", "b.json", "a.json"}, "unexpected argument 'a.json'\n"},
      {{"suite", suite},
       suite + ": configuration 1 of 1 (layers=1 phase-timing=yes), from configurations[0]: "
               "--phase-timing takes no "
               "value (got 'yes'): in a suite file give it true or false\n"},
      // Flags that contradict each other.
      {{"--quiet", "--verbose", "--layers", "1"},
       "--quiet and --verbose contradict each other: give one of them"},
      {{"suite", "s.json", "-v", "-q"},
       "--quiet and --verbose contradict each other: give one of them"},
  };
  expect_usage_errors(cases, false);
  EXPECT_FALSE(std::filesystem::exists(out)) << "make-gguf must not have run";
  // choice_hint on its own: nothing near, a case change, one edit on a short name.
  EXPECT_EQ(choice_hint("zz", {"on", "off"}), "");
  EXPECT_EQ(choice_hint("ON", {"on", "off"}), " (did you mean 'on'? names are lower case)");
  EXPECT_EQ(choice_hint("onn", {"on", "off"}), " (did you mean 'on'?)");
  EXPECT_EQ(choice_hint("of", {"on", "off"}), "");  // one edit from both: no guess
  EXPECT_EQ(choice_hint("q4_0x", {"q4_0", "q4_1"}), " (did you mean 'q4_0'?)");
}

// Integer flags take plain decimal only: CLI11's base-0 strtoll read "--layers 0x10" as 16 and
// "010" as 8, and refused "08". Now 0x10, +16, " 16", "16 ", 1e3, 1_000 and the other notations
// some CLI11 version reads are refused as no decimal integer, 08 and 010 are 8 and 10, values
// beyond int64 are out of range, and garbage (no digit first, or a comma list) is left to CLI11.
TEST(PlainDecimalInteger, DecimalIsRewrittenOtherNotationsRefused) {
  const struct {
    std::string in, out, problem;
  } cases[] = {
      {"16", "16", ""},
      {"08", "8", ""},
      {"010", "10", ""},
      {"-0", "0", ""},
      {"-12", "-12", ""},
      {"0x10", "0x10",
       "'0x10' is not a decimal integer (digits only, with an optional leading '-')"},
      {"0X1f", "0X1f",
       "'0X1f' is not a decimal integer (digits only, with an optional leading '-')"},
      {"-0x10", "-0x10",
       "'-0x10' is not a decimal integer (digits only, with an optional leading '-')"},
      {"+16", "+16", "'+16' is not a decimal integer (digits only, with an optional leading '-')"},
      {" 16", " 16", "' 16' is not a decimal integer (digits only, with an optional leading '-')"},
      {"9223372036854775808", "9223372036854775808",
       "'9223372036854775808' is out of range (at most 9223372036854775807)"},
      {"-9223372036854775809", "-9223372036854775809",
       "'-9223372036854775809' is out of range (at least -9223372036854775808)"},
      {"abc", "abc", ""},  // CLI11: "'abc' is not an integer"
      {"-", "-", ""},
      {"1,2", "1,2", ""},  // CLI11, with parse_errors' hint that lists sweep the main run only
      // Notations some CLI11 version reads as integers (2.1.2 refuses them, later ones do not):
      // refused here whatever the installed version reads.
      {"1e3", "1e3", "'1e3' is not a decimal integer (digits only, with an optional leading '-')"},
      {"16 ", "16 ", "'16 ' is not a decimal integer (digits only, with an optional leading '-')"},
      {"1_000", "1_000",
       "'1_000' is not a decimal integer (digits only, with an optional leading '-')"},
      {"1'000", "1'000",
       "'1'000' is not a decimal integer (digits only, with an optional leading '-')"},
      {"0b101", "0b101",
       "'0b101' is not a decimal integer (digits only, with an optional leading '-')"},
      {"0o17", "0o17",
       "'0o17' is not a decimal integer (digits only, with an optional leading '-')"},
      {"- 16", "- 16",
       "'- 16' is not a decimal integer (digits only, with an optional leading '-')"},
  };
  for (const auto& c : cases) {
    std::string v = c.in;
    EXPECT_EQ(plain_decimal_integer(v), c.problem) << c.in;
    EXPECT_EQ(v, c.out) << c.in;
  }
  // Through a CLI11 app: the transform rewrites and refuses; garbage is CLI11's to refuse.
  const auto parse = [](const std::string& value, int64_t* out) {
    CLI::App app{"t"};
    app.add_option("--layers", *out);
    require_decimal_integers(app);
    std::vector<std::string> args{value, "--layers"};  // CLI11 parses from the back
    try {
      app.parse(args);
    } catch (const CLI::ParseError& e) {
      return parse_error_message(app, nullptr, e);
    }
    return std::string("(parsed)");
  };
  int64_t layers = 0;
  EXPECT_EQ(parse("010", &layers), "(parsed)");
  EXPECT_EQ(layers, 10);
  EXPECT_EQ(parse("08", &layers), "(parsed)");
  EXPECT_EQ(layers, 8);
  EXPECT_EQ(
      parse("0x10", &layers),
      "--layers: '0x10' is not a decimal integer (digits only, with an optional leading '-')");
  EXPECT_EQ(parse("x", &layers), "--layers: 'x' is not an integer");
  // A subcommand's options too (require_decimal_integers recurses), element by element.
  CLI::App app{"t"};
  CLI::App* make = app.add_subcommand("make", "m");
  std::vector<int64_t> batches;
  make->add_option("--batches", batches)->delimiter(',');
  require_decimal_integers(app);
  std::vector<std::string> args{"1,010", "--batches", "make"};  // CLI11 parses from the back
  app.parse(args);
  EXPECT_EQ(batches, (std::vector<int64_t>{1, 10}));
  args = {"1,0x2", "--batches", "make"};
  try {
    app.parse(args);
    ADD_FAILURE() << "0x2 was taken";
  } catch (const CLI::ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("'0x2' is not a decimal integer"), std::string::npos)
        << e.what();
  }
}

// End to end: the run's flags, a sweep's elements (refused before any run), a command's own
// integer flags and a suite file's values (refused when the file is read).
TEST(ParseErrorMessage, IntegerFlagsArePlainDecimal) {
  testing::TempDir dir;
  const std::string suite = (dir / "s.json").string();
  std::ofstream(suite) << R"({"name": "t", "configurations": [{"layers": "0x2"}]})";
  const std::string refused =
      " is not a decimal integer (digits only, with an optional leading '-')";
  const std::vector<Case> cases = {
      {{"--preset", "smollm2-135m", "--layers", "0x10"}, "--layers: '0x10'" + refused},
      {{"--preset", "smollm2-135m", "--layers=0x10"}, "--layers: '0x10'" + refused},
      {{"--preset", "smollm2-135m", "--layers", "2,0x10"}, "--layers: '0x10'" + refused},
      {{"--preset", "smollm2-135m", "--tokens", "+4"}, "--tokens: '+4'" + refused},
      {{"--preset", "smollm2-135m", "--verify", "0x2"}, "--verify: '0x2'" + refused},
      {{"make-gguf", "--layers", "0x2", "--out", (dir / "m.gguf").string()},
       "--layers: '0x2'" + refused},
      {{"bench-kernels", "--batches", "1,0x10"}, "--batches: '0x10'" + refused},
      {{"bandwidth", "--size-mib", "0x10"}, "--size-mib: '0x10'" + refused},
      {{"suite", suite}, suite + ": configurations[0]: key 'layers': '0x2'" + refused},
  };
  expect_usage_errors(cases, false);
  // 08 and 010 are decimal: 8 and 10 layers (010 ran 8, 08 was refused).
  for (const auto& [given, layers] : {std::pair{"08", 8}, std::pair{"010", 10}}) {
    const auto r =
        testing::run_decodebench({"--preset", "smollm2-135m", "--backend", "cpu", "--tokens", "1",
                                  "--prompt-tokens", "1", "--layers", given, "--json", "-", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["model"]["shape"]["layers"], layers) << given;
  }
}

// echo_value: short values whole; a long one as its first 64 bytes, cut back to the start of a
// UTF-8 character, and its size. echo_path: whole up to PATH_MAX.
TEST(EchoValue, LongValuesAreCutAtACharacterWithTheirSize) {
  EXPECT_EQ(echo_value(""), "");
  EXPECT_EQ(echo_value(std::string(64, 'x')), std::string(64, 'x'));
  EXPECT_EQ(echo_value(std::string(65, 'x')), std::string(64, 'x') + "… (65 bytes)");
  EXPECT_EQ(echo_value(std::string(100000, 'x')), std::string(64, 'x') + "… (100000 bytes)");
  // "é" is 2 bytes: 63 x's then "é" straddles the cut at 64, which moves back to byte 63.
  EXPECT_EQ(echo_value(std::string(63, 'x') + "\xC3\xA9yz"), std::string(63, 'x') + "… (67 bytes)");
  EXPECT_EQ(echo_value("abcdef", 3), "abc… (6 bytes)");
  EXPECT_EQ(echo_path("/tmp/" + std::string(4091, 'p')), "/tmp/" + std::string(4091, 'p'));
  EXPECT_EQ(echo_path("/tmp/" + std::string(4092, 'p')),
            "/tmp/" + std::string(59, 'p') + "… (4097 bytes)");
}

// A 100 kB flag value (or argument, or path) was echoed whole in its error message: now at most
// its first 64 bytes and its size, wherever a value is echoed.
TEST(ParseErrorMessage, LongValuesAreEchoedShortened) {
  const std::string big(100000, 'x');
  const std::string shown = std::string(64, 'x') + "… (100000 bytes)";
  const std::vector<Case> cases = {
      {{"--dtype", big}, "--dtype: invalid value '" + shown + "' (expected "},
      {{"--layers", big}, "--layers: '" + shown + "' is not an integer"},
      {{"--preset", big}, "--preset: unknown preset '" + shown + "'; known presets: "},
      {{"--backend", big}, "--backend: invalid value '" + shown + "' (expected auto|cpu|cuda)"},
      {{"--prompt-ids", "1," + big}, "--prompt-ids: element 2 ('" + shown + "') is not a token id"},
      {{"--" + big}, "unknown flag '--" + std::string(62, 'x') + "… (100002 bytes)'"},
      {{big}, "unexpected argument '" + shown + "' (commands: "},
      {{"--preset", "smollm2-135m", "--phase-timing", big},
       "--phase-timing takes no value (got '" + shown + "')"},
      {{"compare", "a.json", "b.json", "--threshold", big}, "--threshold: '" + shown + "' is not"},
      {{"compare", "a.json", "b.json", "--format", big}, "--format: invalid value '" + shown + "'"},
      {{"--max-noise", big}, "--max-noise: '" + shown + "' is not a number"},
      {{"inspect", big}, shown + ": cannot open: File name too long"},
      {{"--seed", std::string(100000, '9')},
       "--seed: '" + std::string(64, '9') + "… (100000 bytes)' is out of range"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message.substr(0, 30));
    const auto r = testing::run_decodebench(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.err.substr(0, 300);
    EXPECT_NE(r.err.find("decodebench: error: " + c.message), std::string::npos)
        << r.err.substr(0, 300);
    EXPECT_LT(r.err.size(), 400u) << r.err.substr(0, 300);
  }
}

}  // namespace
}  // namespace decodebench::app
