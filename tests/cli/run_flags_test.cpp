// The run command's integer options and core's list of them (is_integer_run_flag), which sweeps
// and suite files use to rewrite and check integer values before CLI11 sees them.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <set>
#include <string>

#include "app/commands/run.hpp"
#include "core/suite/suite.hpp"

namespace decodebench::app {
namespace {

// A new integer run flag missing from core's list would skip the plain-decimal rewrite of sweep
// lists and suite values (a suite's "010" labelled layers=010); a listed flag that is no integer
// option would refuse its values' other spellings.
TEST(RunFlags, IntegerOptionsAreExactlyCoresIntegerFlags) {
  CLI::App app;
  RunFlags flags;
  add_run_flags(app, flags);
  std::set<std::string> integer_options;
  for (const CLI::Option* opt : app.get_options()) {
    for (const std::string& name : opt->get_lnames()) {
      const std::string flag = "--" + name;
      EXPECT_EQ(is_integer_run_flag(flag), opt->get_type_name() == "INT") << flag;
      if (opt->get_type_name() == "INT") integer_options.insert(flag);
    }
  }
  EXPECT_TRUE(integer_options.contains("--layers"));
  EXPECT_TRUE(integer_options.contains("--verify"));
  EXPECT_GE(integer_options.size(), 15u);
}

}  // namespace
}  // namespace decodebench::app
