// Input and output paths: unusable inputs (folders, FIFOs, numbers JSON cannot hold) are usage
// errors, never a hang or an internal error, and no output may replace a file the command reads.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/support.hpp"

namespace decodebench::testing {
namespace {

const std::vector<std::string> kTiny = {"--preset",        "smollm2-135m",
                                        "--layers",        "1",
                                        "--vocab",         "300",
                                        "--ffn",           "128",
                                        "--tokens",        "2",
                                        "--prompt-tokens", "2",
                                        "--warmup",        "0",
                                        "--backend",       "cpu"};

std::vector<std::string> tiny(std::vector<std::string> extra) {
  std::vector<std::string> a = kTiny;
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

void write(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

void expect_usage_error(const CommandResult& r, const std::string& part, const std::string& what) {
  EXPECT_EQ(r.signal, 0) << what;
  EXPECT_EQ(r.exit_code, 2) << what << "\n" << r.err;
  EXPECT_NE(r.err.find(part), std::string::npos) << what << ": " << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << what << ": " << r.err;
}

class IoPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    result_ = dir_ / "result.json";
    const auto r = run_decodebench(tiny({"--json", result_.string(), "-q"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    model_ = dir_ / "m.gguf";
    const auto g = run_decodebench({"make-gguf", "-q", "--preset", "smollm2-135m", "--layers", "1",
                                    "--vocab", "300", "--ffn", "128", "--out", model_.string()});
    ASSERT_EQ(g.exit_code, 0) << g.err;
  }
  TempDir dir_;
  std::filesystem::path result_, model_;
};

// A number beyond double's range (1e400) is a JSON error of the file, not an internal error with
// exit 1, which compare uses for "regression found".
TEST_F(IoPaths, OutOfRangeNumbersAreInputErrors) {
  const auto bad = dir_ / "huge.json";
  write(bad,
        R"({"schema_version":"1.0","runs":[{"key":{"id":"x"},"results":{"samples_ns":[1e400]}}]})");
  expect_usage_error(run_decodebench({"compare", bad.string(), bad.string()}), "not valid JSON",
                     "compare");
  const auto suite = dir_ / "suite.json";
  write(suite, R"({"name":"s","configurations":[{"preset":"smollm2-135m","seed":1e400}]})");
  expect_usage_error(run_decodebench({"suite", suite.string(), "--list"}), "not valid JSON",
                     "suite");
}

// A folder is refused; a FIFO without a writer reads as empty (a JSON error, not a hang); a pipe
// with a writer, as a process substitution <(cat a.json) gives, is read.
TEST_F(IoPaths, FoldersFifosAndPipes) {
  const std::string folder = dir_.path().string();
  expect_usage_error(run_decodebench(tiny({"--preset", folder + "/"})), "is a folder",
                     "--preset folder");
  expect_usage_error(run_decodebench({"compare", folder, result_.string()}), "is a folder",
                     "compare folder");
  const auto fifo = dir_ / "fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int kTimeout = 30;
  expect_usage_error(run_decodebench({"compare", fifo.string(), result_.string()}, kTimeout),
                     "not valid JSON", "compare fifo");
  expect_usage_error(run_decodebench({"suite", fifo.string(), "--list"}, kTimeout),
                     "not valid JSON", "suite fifo");
  expect_usage_error(run_decodebench(tiny({"--preset", fifo.string()}), kTimeout), "not valid JSON",
                     "--preset fifo");
  // The writer blocks in open() until compare opens the FIFO for reading.
  const std::string text = read_file(result_);
  std::thread writer([&] { std::ofstream(fifo, std::ios::binary) << text; });
  const auto piped = run_decodebench({"compare", fifo.string(), result_.string()}, kTimeout);
  writer.join();
  EXPECT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_NE(piped.out.find("no regression"), std::string::npos) << piped.out;
}

// An output that is also an input of the same command is refused, and the input survives.
TEST_F(IoPaths, NoOutputReplacesAnInput) {
  const std::string before = read_file(result_);
  expect_usage_error(run_decodebench({"compare", result_.string(), result_.string(), "--output",
                                      result_.string(), "--format", "json"}),
                     "is also an input", "compare --output");
  EXPECT_EQ(read_file(result_), before);

  const std::string model_bytes = read_file(model_);
  expect_usage_error(run_decodebench({"inspect", model_.string(), "--json", model_.string()}),
                     "is also an input", "inspect --json");
  expect_usage_error(run_decodebench({"inspect", model_.string(), "--dump", "token_embd.weight",
                                      "--dump-out", model_.string()}),
                     "is also an input", "inspect --dump-out");
  expect_usage_error(run_decodebench({"--model", model_.string(), "--backend", "cpu", "--tokens",
                                      "1", "--json", model_.string()}),
                     "is also an input", "run --json");
  // Through another name of the same file.
  const auto link = dir_ / "link.gguf";
  std::filesystem::create_symlink(model_, link);
  expect_usage_error(run_decodebench({"inspect", model_.string(), "--json", link.string()}),
                     "is also an input", "inspect --json via a link");
  EXPECT_EQ(read_file(model_), model_bytes);

  const auto suite = dir_ / "suite.json";
  const std::string suite_text =
      R"({"name":"suite","configurations":[{"preset":"smollm2-135m","layers":1,"tokens":2}]})";
  write(suite, suite_text);
  expect_usage_error(run_decodebench({"suite", suite.string(), "--json", suite.string()}),
                     "is also an input", "suite --json");
  EXPECT_EQ(read_file(suite), suite_text);

  // A sweep's configurations read the same model; a preset file is an input too.
  expect_usage_error(run_decodebench({"--model", model_.string(), "--backend", "cpu", "--tokens",
                                      "1,2", "--json", model_.string()}),
                     "is also an input", "sweep --json");
  EXPECT_EQ(read_file(model_), model_bytes);
  const auto preset = dir_ / "p.json";
  const std::string preset_text =
      read_file(source_dir() / "bench-configs/presets/smollm2-135m.json");
  write(preset, preset_text);
  expect_usage_error(
      run_decodebench(tiny({"--preset", preset.string(), "--json", preset.string()})),
      "is also an input", "--preset file --json");
  EXPECT_EQ(read_file(preset), preset_text);
}

// inspect: a dump that fails leaves an existing --json file as it was; JSON and dump cannot share
// a destination (stdout included: the two would interleave).
TEST_F(IoPaths, InspectDumpFailureKeepsTheJsonFile) {
  const auto out = dir_ / "inspect.json";
  write(out, "OLD");
  expect_usage_error(run_decodebench({"inspect", model_.string(), "--json", out.string(), "--dump",
                                      "no.such.tensor", "--dump-out", (dir_ / "x.bin").string()}),
                     "no.such.tensor", "inspect --dump unknown");
  EXPECT_EQ(read_file(out), "OLD");
  expect_usage_error(run_decodebench({"inspect", model_.string(), "--json", "-", "--dump",
                                      "token_embd.weight", "--dump-out", "-"}),
                     "same destination", "inspect both to stdout");
  const auto same = dir_ / "same.out";
  expect_usage_error(run_decodebench({"inspect", model_.string(), "--json", same.string(), "--dump",
                                      "token_embd.weight", "--dump-out", same.string()}),
                     "same destination", "inspect same file");
}

}  // namespace
}  // namespace decodebench::testing
