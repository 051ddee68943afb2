// app::parse_error_message: unknown flags and words named in the order given, with the nearest
// flag or command; app::edit_distance on hand-computed cases. In-process (CLI11 apps built here)
// and end to end through the binary and a suite file.
#include "app/parse_errors.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

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

}  // namespace
}  // namespace decodebench::app
