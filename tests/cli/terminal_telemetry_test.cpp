// The terminal report's gpu line (app/report/terminal.cpp): a CPU run's report given hand-built
// telemetry rounds, so that the line's wording about other processes on the GPU is checked
// without a GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "app/report/terminal.hpp"
#include "core/run_config.hpp"
#include "core/runner.hpp"
#include "core/telemetry.hpp"
#include "tests/support/run_options.hpp"
#include "tests/support/support.hpp"

namespace decodebench::app {
namespace {

std::string printed(const RunReport& r) {
  return ::decodebench::testing::printed([&](FILE* f) { print_run_report(r, f, false); });
}

TEST(TerminalReport, GpuLineSaysWhetherOtherProcessesHadTheGpu) {
  RunReport r = execute_run(resolve_run_config(::decodebench::testing::tiny_cpu_run_options(), 1));
  ASSERT_FALSE(r.passes.empty());
  const std::string label = r.passes[0].pass.spec.label;
  r.telemetry_asked = true;
  GpuReading a, b;
  a.sm_clock_mhz = b.sm_clock_mhz = 1980;
  a.other_processes = 0;
  b.other_processes = 0;
  r.passes[0].pass.telemetry = {round_telemetry(0, {1000, 1000}, 0.5, a, b)};
  std::string text = printed(r);
  EXPECT_NE(text.find("gpu      " + label + ": SM 1980 MHz · no other compute process seen\n"),
            std::string::npos)
      << text;

  b.other_processes = 1;
  r.passes[0].pass.telemetry = {round_telemetry(0, {1000, 1000}, 0.5, a, b)};
  text = printed(r);
  EXPECT_NE(
      text.find("gpu      " + label + ": SM 1980 MHz · shared with 1 other compute process\n"),
      std::string::npos)
      << text;
  b.other_processes = 3;
  r.passes[0].pass.telemetry = {round_telemetry(0, {1000, 1000}, 0.5, a, b)};
  EXPECT_NE(printed(r).find("shared with 3 other compute processes\n"), std::string::npos);

  // Not listed: the line says nothing either way.
  a.other_processes = b.other_processes = -1;
  r.passes[0].pass.telemetry = {round_telemetry(0, {1000, 1000}, 0.5, a, b)};
  text = printed(r);
  EXPECT_NE(text.find("gpu      " + label + ": SM 1980 MHz\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("compute process"), std::string::npos) << text;
}

}  // namespace
}  // namespace decodebench::app
