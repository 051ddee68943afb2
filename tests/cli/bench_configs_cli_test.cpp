// Every shipped suite file (bench-configs/suites/*.json) parses and every configuration resolves
// (`decodebench suite FILE --list` validates them all without running anything, no GPU needed);
// the roofline suite of issue 9 covers its table.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/support.hpp"

namespace decodebench::testing {
namespace {

TEST(BenchConfigs, EverySuiteFileResolves) {
  const auto dir = source_dir() / "bench-configs/suites";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  ASSERT_GE(files.size(), 3u) << dir;
  for (const auto& f : files) {
    const CommandResult r = run_decodebench({"suite", f.string(), "--list"});
    EXPECT_EQ(r.exit_code, 0) << f << ":\n" << r.err;
    EXPECT_NE(r.out.find("suite " + f.stem().string() + ":"), std::string::npos)
        << f << ": the suite's name should be its file name\n"
        << r.out;
  }
}

// docs/ci.md lists the bundled suites: a new suite file needs its row there.
TEST(BenchConfigs, EverySuiteFileIsListedInTheCiGuide) {
  const std::string guide = read_file(source_dir() / "docs/ci.md");
  for (const auto& e : std::filesystem::directory_iterator(source_dir() / "bench-configs/suites")) {
    if (e.path().extension() != ".json") continue;
    const std::string row = "| `" + e.path().filename().string() + "` |";
    EXPECT_NE(guide.find(row), std::string::npos) << "docs/ci.md has no row " << row;
  }
}

TEST(BenchConfigs, RooflineSuiteCoversTheIssue9Table) {
  const CommandResult r = run_decodebench(
      {"suite", (source_dir() / "bench-configs/suites/h200-roofline.json").string(), "--list"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("suite h200-roofline: 7 configuration(s)"), std::string::npos) << r.out;
  const std::string qwen = "decodebench --preset qwen2.5-7b --layers 28 --vocab 152064 --dtype ";
  const std::string smol = "decodebench --preset smollm2-135m --dtype ";
  const std::string run =
      " --backend cuda --graph on --batch 1 --prompt-tokens 128 --warmup 16 --warmup-time 1 "
      "--tokens 128 --min-time 3\n";
  size_t at = 0;
  for (const std::string& line : {qwen + "f16", qwen + "bf16", qwen + "q8_0", qwen + "q4_k_m",
                                  qwen + "q4_0", smol + "q4_1", smol + "f16"}) {
    const size_t pos = r.out.find(line + run, at);
    ASSERT_NE(pos, std::string::npos) << line << " in order in\n" << r.out;
    at = pos + 1;
  }
}

}  // namespace
}  // namespace decodebench::testing
