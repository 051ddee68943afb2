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

namespace decodebench::app {
namespace {

std::string printed(const RunReport& r) {
  FILE* f = std::tmpfile();
  if (f == nullptr) return "";
  print_run_report(r, f, false);
  std::rewind(f);
  std::string text;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  std::fclose(f);
  return text;
}

TEST(TerminalReport, GpuLineSaysWhetherOtherProcessesHadTheGpu) {
  RunOptions o;
  o.preset = "smollm2-135m";
  o.layers = 1;
  o.vocab = 256;
  o.ffn = 128;
  o.dtype = "f32";
  o.tokens = 4;
  o.warmup = 1;
  o.prompt_tokens = 3;
  o.backend = "cpu";
  o.threads = 1;
  RunReport r = execute_run(resolve_run_config(o, 1));
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
