// End-to-end CI features of the decodebench binary: comma sweeps, `suite`, `compare`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/runner.hpp"
#include "core/stats/statistics.hpp"
#include "tests/support/support.hpp"

namespace decodebench::testing {
namespace {

// A model small enough to decode in well under a second on one core.
const std::vector<std::string> kTinyShape = {
    "--preset", "smollm2-135m",    "--vocab", "512",       "--ffn", "256",       "--tokens",
    "6",        "--prompt-tokens", "4",       "--backend", "cpu",   "--threads", "1"};

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& extra) {
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

void expect_schema_valid(const std::filesystem::path& file) {
  const auto r =
      run_command({python(), (source_dir() / "scripts/validate-result").string(), file.string()});
  if (r.exit_code == 77) GTEST_SKIP() << "jsonschema missing: " << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

void write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// ---- Sweeps ---------------------------------------------------------------------------------

TEST(SweepCli, TwoByTwoSweepRunsInFlagOrderIntoOneSuiteDocument) {
  TempDir dir;
  const auto out = dir / "sweep.json";
  const auto r = run_decodebench(
      with(kTinyShape, {"--layers", "1,2", "--dtype", "f16,bf16", "--json", out.string()}));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_TRUE(contains(r.out, "suite sweep: 4 configuration(s), 4 ok, 0 failed")) << r.out;
  EXPECT_TRUE(contains(r.err, "decodebench: wrote " + out.string())) << r.err;  // as a single run
  const auto doc = nlohmann::json::parse(read_file(out));
  EXPECT_EQ(doc["schema_version"], "1.0");
  EXPECT_EQ(doc["suite"]["name"], "sweep");
  EXPECT_EQ(doc["suite"]["source"], "command line");
  EXPECT_EQ(doc["exit_code"], 0);
  ASSERT_EQ(doc["configurations"].size(), 4u);
  ASSERT_EQ(doc["results"].size(), 4u);
  const std::vector<std::pair<int, std::string>> order = {
      {1, "f16"}, {1, "bf16"}, {2, "f16"}, {2, "bf16"}};
  for (size_t i = 0; i < 4; ++i) {
    const auto& c = doc["configurations"][i];
    EXPECT_EQ(c["label"], "layers=" + std::to_string(order[i].first) + " dtype=" + order[i].second);
    EXPECT_EQ(c["status"], "ok");
    EXPECT_EQ(c["result"], i);
    for (const auto& a : c["args"]) EXPECT_NE(a, "--json") << "the sweep's --json is the suite's";
    const auto& res = doc["results"][i];
    EXPECT_EQ(res["model"]["shape"]["layers"], order[i].first) << i;
    EXPECT_EQ(res["config"]["dtype"]["value"], order[i].second) << i;
    EXPECT_EQ(res["runs"][0]["results"]["samples_ns"].size(), 6u);
  }
  EXPECT_EQ(doc["tool"], doc["results"][0]["tool"]);
  expect_schema_valid(out);
}

// Backend auto without a GPU: the CPU fallback's warning is said once for the whole sweep (it
// was printed once per run), and every run's JSON still records it.
TEST(SweepCli, CpuFallbackIsSaidOnce) {
  TempDir dir;
  const auto out = dir / "sweep.json";
  const auto r = run_decodebench({"--preset", "smollm2-135m", "--vocab", "512", "--ffn", "256",
                                  "--tokens", "2", "--prompt-tokens", "2", "--threads", "1",
                                  "--layers", "1,1,1", "--json", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const auto doc = nlohmann::json::parse(read_file(out));
  ASSERT_EQ(doc["results"].size(), 3u);
  const auto& backend = doc["results"][0]["backend"];
  if (!backend.contains("fallback") || !backend["fallback"].is_string() ||
      !backend["fallback"].get<std::string>().starts_with(kNoCudaDeviceWarning)) {
    GTEST_SKIP() << "backend auto did not fall back here (a GPU, or a build without CUDA): "
                 << backend.dump();
  }
  size_t said = 0;
  for (size_t at = r.err.find("no usable CUDA device"); at != std::string::npos;
       at = r.err.find("no usable CUDA device", at + 1)) {
    ++said;
  }
  EXPECT_EQ(said, 1u) << r.err;
  EXPECT_TRUE(contains(r.err, "decodebench: warning: no usable CUDA device")) << r.err;
  EXPECT_TRUE(contains(r.err, "said once for every run of backend auto")) << r.err;
  for (const auto& res : doc["results"]) {
    EXPECT_EQ(res["backend"]["fallback"], backend["fallback"]);
    EXPECT_TRUE(contains(res["warnings"].dump(), "no usable CUDA device")) << res["warnings"];
  }
}

// A misspelled DECODEBENCH_* variable, and a switch the backend ignores, are the same for every
// run of a sweep: each said once on stderr, untagged, and recorded in every run's JSON.
TEST(SweepCli, UnknownVariableIsSaidOnce) {
  TempDir dir;
  const auto out = dir / "sweep.json";
  const ScopedVariable typo("DECODEBENCH_GEMV_RNG", "16x3");
  const ScopedVariable known("DECODEBENCH_GEMV_RING", "16x3");  // switches the cpu runs ignore
  const ScopedVariable attention("DECODEBENCH_ATTENTION", "block");
  const auto r = run_decodebench({"--preset", "smollm2-135m", "--vocab", "512", "--ffn", "256",
                                  "--tokens", "2", "--prompt-tokens", "2", "--threads", "1",
                                  "--backend", "cpu", "--layers", "1,1,1", "--json", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  size_t said = 0;
  for (size_t at = r.err.find("DECODEBENCH_GEMV_RNG is set"); at != std::string::npos;
       at = r.err.find("DECODEBENCH_GEMV_RNG is set", at + 1)) {
    ++said;
  }
  EXPECT_EQ(said, 1u) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "decodebench: warning: DECODEBENCH_GEMV_RNG is set, but decodebench "
                       "reads no variable of that name (did you mean "
                       "DECODEBENCH_GEMV_RING?)"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "(said once for all runs)")) << r.err;
  // Each switch's warning too (one each, not one for all), untagged, for the backend's runs.
  for (const std::string ignored : {"DECODEBENCH_GEMV_RING=16x3: read only by the cuda backend; a "
                                    "cpu run ignores it and does not check its value",
                                    "DECODEBENCH_ATTENTION=block: read only by the cuda backend; a "
                                    "cpu run ignores it and does not check its value"}) {
    const std::string line =
        "\ndecodebench: warning: " + ignored + " (said once for all cpu runs)\n";
    EXPECT_TRUE(contains("\n" + r.err, line)) << line << r.err;
    EXPECT_EQ(r.err.find(ignored, r.err.find(ignored) + 1), std::string::npos) << r.err;
  }
  const auto doc = nlohmann::json::parse(read_file(out));
  ASSERT_EQ(doc["results"].size(), 3u);
  for (const auto& res : doc["results"]) {
    EXPECT_TRUE(contains(res["warnings"].dump(), "DECODEBENCH_GEMV_RNG is set")) << res["warnings"];
    EXPECT_TRUE(contains(res["warnings"].dump(), "DECODEBENCH_GEMV_RING=16x3: read only"))
        << res["warnings"];
    EXPECT_TRUE(contains(res["warnings"].dump(), "DECODEBENCH_ATTENTION=block: read only"))
        << res["warnings"];
  }
}

// Integer values are plain decimal (010 runs 10 layers): a sweep's labels and args show the value
// its run used, not the text given ("layers=01" labelled a run of 1 layer).
TEST(SweepCli, LabelsShowIntegerValuesAsTheRunsUseThem) {
  TempDir dir;
  const auto out = dir / "sweep.json";
  const auto r = run_decodebench(
      with(kTinyShape, {"--layers=01,002", "--seed", "07,8", "--json", out.string()}));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const auto doc = nlohmann::json::parse(read_file(out));
  ASSERT_EQ(doc["configurations"].size(), 4u);
  const char* labels[] = {"layers=1 seed=7", "layers=1 seed=8", "layers=2 seed=7",
                          "layers=2 seed=8"};
  for (size_t i = 0; i < 4; ++i) {
    const auto& c = doc["configurations"][i];
    EXPECT_EQ(c["label"], labels[i]) << i;
    EXPECT_EQ(doc["results"][c["result"].get<size_t>()]["model"]["shape"]["layers"], i < 2 ? 1 : 2);
    for (const auto& a : c["args"]) {
      EXPECT_FALSE(contains(a.get<std::string>(), "01")) << a << ": the text given, not the value";
    }
  }
}

TEST(SweepCli, BatchSweepPrintsAScalingTableAndOneDocumentPerBatch) {
  TempDir dir;
  const auto out = dir / "batch.json";
  const auto r = run_decodebench(
      with(kTinyShape, {"--layers", "2", "--batch", "1,2", "--json", out.string()}));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_TRUE(contains(r.out, "suite sweep: 2 configuration(s), 2 ok")) << r.out;
  // The suite table's tokens/s is per sequence, the scaling table's aggregate is not: both said.
  EXPECT_TRUE(contains(r.out, "tokens/s: timed steps ÷ their summed time, per sequence")) << r.out;
  EXPECT_TRUE(contains(r.out, "batch scaling · cpu")) << r.out;
  EXPECT_TRUE(contains(r.out, "aggregate tok/s")) << r.out;
  EXPECT_TRUE(contains(r.out, "vs batch 1")) << r.out;
  EXPECT_TRUE(contains(r.out, "1.00×")) << r.out;
  // The CPU measures no read bandwidth: no BW eff. column, and no footer note about one.
  EXPECT_FALSE(contains(r.out, "BW eff")) << r.out;
  const auto doc = nlohmann::json::parse(read_file(out));
  ASSERT_EQ(doc["results"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const auto& run = doc["results"][i]["runs"][0];
    EXPECT_EQ(doc["configurations"][i]["label"], "batch=" + std::to_string(i + 1));
    EXPECT_EQ(run["batch"], i + 1);
    EXPECT_EQ(run["key"]["batch"], i + 1);
    EXPECT_EQ(run["results"]["sequences"].size(), i + 1);
  }
  // Sequence 0 of the batch of 2 is the batch-1 run (same seed, same prompt).
  EXPECT_EQ(doc["results"][1]["runs"][0]["results"]["sequences"][0]["tokens"],
            doc["results"][0]["runs"][0]["results"]["tokens"]);
  expect_schema_valid(out);
}

// A preset path with a byte that is not UTF-8 (allowed on Linux): the sweep's summary grouped its
// runs by their configuration's JSON text, whose strict dump() threw after the runs and before
// the --json file was written (exit 1, "internal error", every measurement lost). The file is
// written, the path in it with U+FFFD.
TEST(SweepCli, PresetPathThatIsNotUtf8KeepsTheSweepsJson) {
  TempDir dir;
  const auto preset = dir / std::string("p\xff.json", 7);
  std::filesystem::copy_file(source_dir() / "bench-configs/presets/smollm2-135m.json", preset);
  const auto out = dir / "sweep.json";
  std::vector<std::string> args = kTinyShape;
  args[1] = preset.string();
  const auto r = run_decodebench(with(args, {"--layers", "1,2", "--json", out.string()}));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_TRUE(contains(r.out, "suite sweep: 2 configuration(s), 2 ok, 0 failed")) << r.out;
  const auto doc = nlohmann::json::parse(read_file(out));
  ASSERT_EQ(doc["results"].size(), 2u);
  EXPECT_EQ(doc["results"][0]["config"]["preset"]["value"], (dir / "p\xEF\xBF\xBD.json").string());
}

// The result file is json_text's layout: the run's six per-step samples on their key's line, not
// one number per line (dump(2)'s).
TEST(SweepCli, ResultFilePacksThePerStepSamples) {
  TempDir dir;
  const auto out = dir / "run.json";
  const auto r = run_decodebench(with(kTinyShape, {"--json", out.string()}));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const std::string text = read_file(out);
  const auto doc = nlohmann::json::parse(text);
  const auto& samples = doc["runs"][0]["results"]["samples_ns"];
  ASSERT_EQ(samples.size(), 6u);
  std::string line = "\"samples_ns\": [";
  for (size_t i = 0; i < samples.size(); ++i) {
    line += (i > 0 ? ", " : "") + samples[i].dump();
  }
  EXPECT_TRUE(contains(text, line + "],\n")) << line << "\n" << text;
}

// A value listed twice runs twice (documented: an A/A pair), and --help says so.
TEST(SweepCli, ValueListedTwiceRunsTwice) {
  TempDir dir;
  const auto out = dir / "aa.json";
  const auto r = run_decodebench(
      with(kTinyShape, {"--layers", "1,1", "--tokens", "2", "--json", out.string()}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(read_file(out));
  ASSERT_EQ(doc["results"].size(), 2u);
  EXPECT_EQ(doc["configurations"][0]["label"], doc["configurations"][1]["label"]);
  const auto help = run_decodebench({"--help"});
  EXPECT_TRUE(contains(help.out, "a value listed twice runs twice")) << help.out;
}

TEST(SweepCli, SweepWithoutBatchPrintsNoScalingTable) {
  const auto r = run_decodebench(with(kTinyShape, {"--layers", "1,2", "--tokens", "2"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(contains(r.out, "batch scaling")) << r.out;
}

TEST(SweepCli, BadValueInOnePointFailsBeforeAnythingRuns) {
  TempDir dir;
  const auto out = dir / "sweep.json";
  const auto r = run_decodebench(
      with(kTinyShape, {"--layers", "1", "--dtype", "f16,nope", "--json", out.string()}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "configuration 2 of 2 (dtype=nope): ")) << r.err;
  EXPECT_FALSE(contains(r.err, "from configurations")) << r.err;  // no file entries to name
  EXPECT_TRUE(contains(r.err, "nope")) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(SweepCli, EmptyListElementIsExit2) {
  const auto r = run_decodebench(with(kTinyShape, {"--layers", "1,,2"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--layers")) << r.err;
}

// ---- Suites ---------------------------------------------------------------------------------

TEST(SuiteCli, EndToEndRecordsAFailingConfigurationAndContinues) {
  TempDir dir;
  const auto suite = dir / "tiny.json";
  write(suite, R"({
    "name": "tiny", "description": "two layers counts and a missing model",
    "configurations": [
      {"preset": "smollm2-135m", "layers": [1, 2], "vocab": 512, "ffn": 256, "tokens": 6,
       "prompt_tokens": 4, "backend": "cpu", "threads": 1},
      {"model": "/nonexistent/model.gguf", "tokens": 4, "backend": "cpu"},
      {"preset": "smollm2-135m", "layers": 1, "vocab": 512, "ffn": 256, "tokens": 5,
       "prompt_tokens": 4, "backend": "cpu", "threads": 1}
    ]})");
  const auto out = dir / "suite.json";
  const auto r = run_decodebench({"suite", suite.string(), "--json", out.string()});
  // The missing model is an input error (exit 2): recorded, the suite goes on, exits 2 at the end.
  EXPECT_EQ(r.exit_code, 2) << r.err << r.out;
  EXPECT_TRUE(contains(r.out, "3 ok, 1 failed")) << r.out;
  EXPECT_TRUE(contains(r.out, "/nonexistent/model.gguf")) << r.out;
  const auto doc = nlohmann::json::parse(read_file(out));
  EXPECT_EQ(doc["suite"]["name"], "tiny");
  EXPECT_EQ(doc["suite"]["description"], "two layers counts and a missing model");
  EXPECT_EQ(doc["suite"]["source"], suite.string());
  EXPECT_EQ(doc["suite"]["configurations"], 4);
  EXPECT_EQ(doc["exit_code"], 2);
  const auto& c = doc["configurations"];
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0]["status"], "ok");
  EXPECT_EQ(c[1]["status"], "ok");
  EXPECT_EQ(c[2]["status"], "failed");
  EXPECT_EQ(c[2]["exit_code"], 2);
  EXPECT_TRUE(c[2]["result"].is_null());
  EXPECT_TRUE(contains(c[2]["error"].get<std::string>(), "/nonexistent/model.gguf"));
  EXPECT_EQ(c[3]["status"], "ok");
  EXPECT_EQ(c[3]["result"], 2);
  ASSERT_EQ(doc["results"].size(), 3u);
  EXPECT_EQ(doc["results"][1]["model"]["shape"]["layers"], 2);
  EXPECT_EQ(doc["results"][2]["runs"][0]["results"]["samples_ns"].size(), 5u);
  EXPECT_EQ(doc["tool"], doc["results"][0]["tool"]);
  EXPECT_GT(doc["environment"]["cores"].get<int>(), 0);
  expect_schema_valid(out);
  // The validator does look inside results[]: a result without runs is refused.
  auto broken = doc;
  broken["results"][1].erase("runs");
  const auto broken_path = dir / "broken.json";
  write(broken_path, broken.dump());
  const auto v = run_command(
      {python(), (source_dir() / "scripts/validate-result").string(), broken_path.string()});
  if (v.exit_code != 77) {
    EXPECT_EQ(v.exit_code, 1) << v.out << v.err;
    EXPECT_TRUE(contains(v.err, "results/1")) << v.err;
  }

  // With --quiet the report is gone but the failure still reaches stderr (a CI log must say why
  // the exit code is not 0).
  const auto q = run_decodebench({"suite", suite.string(), "-q"});
  EXPECT_EQ(q.exit_code, 2) << q.err << q.out;
  EXPECT_EQ(q.out, "");
  EXPECT_TRUE(contains(q.err, "[3/4] failed (exit 2)")) << q.err;
  EXPECT_TRUE(contains(q.err, "/nonexistent/model.gguf")) << q.err;
  EXPECT_FALSE(contains(q.err, "ok (")) << q.err;

  // The suite against itself: every matched run the same, the failure reported as a note.
  const auto cmp = run_decodebench({"compare", out.string(), out.string()});
  EXPECT_EQ(cmp.exit_code, 0) << cmp.err << cmp.out;
  EXPECT_TRUE(contains(cmp.out, "0 slower, 0 faster, 3 same, 0 unclear in 3 matched run(s)"))
      << cmp.out;
  EXPECT_TRUE(contains(cmp.out, "failed")) << cmp.out;
}

TEST(SuiteCli, InvalidConfigurationIsRefusedBeforeAnythingRuns) {
  TempDir dir;
  const auto suite = dir / "bad.json";
  const auto out = dir / "out.json";
  // A suite whose second entry has `layers` as given (JSON): refused with exit 2 and a message
  // holding `want`, before anything runs (no document).
  const auto expect_refused = [&](const std::string& layers, const std::string& want) {
    write(suite, R"({"name": "bad", "configurations": [
      {"preset": "smollm2-135m", "layers": 1, "backend": "cpu", "tokens": 4},
      {"preset": "smollm2-135m", "layers": )" +
                     layers + R"(, "backend": "cpu"}]})");
    const auto r = run_decodebench({"suite", suite.string(), "--json", out.string()});
    EXPECT_EQ(r.exit_code, 2) << layers;
    EXPECT_TRUE(contains(r.err, want)) << r.err;
    EXPECT_FALSE(std::filesystem::exists(out)) << layers;
    return r.err;
  };
  // Numbered among the runs (from 1) and by the file's entry (from 0, as errors found while
  // reading the file are).
  const std::string zero =
      expect_refused("0", "configuration 2 of 2 (layers=0), from configurations[1]: ");
  EXPECT_TRUE(contains(zero, "--layers must be > 0")) << zero;
  // An entry that expands to several runs: the run's number and its entry's differ.
  expect_refused("[1, 0]", "configuration 3 of 3 (layers=0), from configurations[1]: ");
  // A value that is no integer at all is refused as the file is read, naming the key.
  expect_refused(R"("many")", "configurations[1]: key 'layers': 'many' is not an integer");
  // --threads overrides every configuration's: 0 is an error (it was once read as "not given").
  write(suite, R"({"name": "ok", "configurations": [
      {"preset": "smollm2-135m", "layers": 1, "backend": "cpu", "tokens": 4}]})");
  for (const std::string threads : {"0", "-1"}) {
    const auto t =
        run_decodebench({"suite", suite.string(), "--threads", threads, "--json", out.string()});
    EXPECT_EQ(t.exit_code, 2) << threads << ": " << t.err;
    EXPECT_TRUE(contains(t.err, "--threads must be in [1, 1024] (got " + threads + ")")) << t.err;
    EXPECT_FALSE(std::filesystem::exists(out));
  }
  // So is a bad --backend: checked once, not blamed on the file's first configuration.
  const auto b =
      run_decodebench({"suite", suite.string(), "--backend", "gpu", "--json", out.string()});
  EXPECT_EQ(b.exit_code, 2) << b.err;
  EXPECT_TRUE(contains(b.err, "error: --backend: invalid value 'gpu' (the GPU backend is 'cuda'"))
      << b.err;
  EXPECT_FALSE(contains(b.err, "configuration")) << b.err;
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(SuiteCli, BundledSuitesResolveInTheDocumentedOrder) {
  const auto smoke = run_decodebench(
      {"suite", (source_dir() / "bench-configs/suites/ci-smoke.json").string(), "--list"});
  ASSERT_EQ(smoke.exit_code, 0) << smoke.err;
  EXPECT_TRUE(contains(smoke.out, "suite ci-smoke: 6 configuration(s)")) << smoke.out;
  const size_t a = smoke.out.find("layers=2 dtype=f16");
  const size_t b = smoke.out.find("layers=2 dtype=bf16");
  const size_t c = smoke.out.find("layers=4 dtype=f16");
  ASSERT_NE(a, std::string::npos) << smoke.out;
  ASSERT_NE(c, std::string::npos) << smoke.out;
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);

  const auto h200 = run_decodebench(
      {"suite", (source_dir() / "bench-configs/suites/h200-decode.json").string(), "--list"});
  ASSERT_EQ(h200.exit_code, 0) << h200.err;
  EXPECT_TRUE(contains(h200.out, "suite h200-decode: 8 configuration(s)")) << h200.out;
  const std::vector<std::string> expected = {"qwen2.5-7b graph=on",   "qwen2.5-7b graph=off",
                                             "qwen2.5-0.5b graph=on", "qwen2.5-0.5b graph=off",
                                             "llama-3-8b graph=on",   "llama-3-8b graph=off",
                                             "smollm2-135m graph=on", "smollm2-135m graph=off"};
  size_t at = 0;
  for (const auto& e : expected) {
    const size_t pos = h200.out.find("preset=" + e, at);
    ASSERT_NE(pos, std::string::npos) << e << " in order in\n" << h200.out;
    at = pos + 1;
  }
  EXPECT_TRUE(contains(h200.out, "--backend cuda")) << h200.out;
}

// ---- Compare --------------------------------------------------------------------------------

class CompareCli : public ::testing::Test {
 protected:
  // One real tiny run; its samples replaced by 1.00, 1.01, ... ms (and the stats recomputed) so the
  // verdicts do not depend on the machine's noise.
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const auto real = *dir_ / "real.json";
    const auto r =
        run_decodebench(with(kTinyShape, {"--layers", "1", "--json", real.string(), "-q"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto doc = nlohmann::json::parse(read_file(real));
    write_scaled(doc, 1.0, *dir_ / "base.json");
    write_scaled(doc, 1.2, *dir_ / "slow.json");
    write_scaled(doc, 1.06, *dir_ / "six.json");           // +6.0%, p = 0.028195 (scipy)
    write_scaled(doc, 1.0497, *dir_ / "just-under.json");  // +4.97%
    write_scaled(doc, 1.0003, *dir_ / "tiny.json");        // +0.03%
    // The same run under two variables that change GPU kernels and timings.
    const auto switched = *dir_ / "switched-real.json";
    const auto s =
        run_decodebench(with(kTinyShape, {"--layers", "1", "--json", switched.string(), "-q"}), 300,
                        {"DECODEBENCH_GEMV_RING=8x1", "CUDA_LAUNCH_BLOCKING=1"});
    ASSERT_EQ(s.exit_code, 0) << s.err;
    write_scaled(nlohmann::json::parse(read_file(switched)), 1.0, *dir_ / "switched.json");
    auto v2 = doc;
    v2["schema_version"] = "2.0";
    write(*dir_ / "v2.json", v2.dump());
    auto other = doc;
    for (auto& run : other["runs"]) run["key"]["id"] = run["key"]["id"].get<std::string>() + "-x";
    write(*dir_ / "other.json", other.dump());
    auto later = doc;  // the same key, decoded after a longer prompt
    for (auto& run : later["runs"]) {
      run["results"]["start_position"] = run["results"]["start_position"].get<int64_t>() + 100;
    }
    write_scaled(later, 1.0, *dir_ / "later.json");
    // A prompt-length sweep: the run at positions 4 and 104, in both orders; and a file that
    // does not say where its steps start.
    const auto& run0 = doc["runs"][0];
    auto sweep = doc;
    sweep["runs"] = nlohmann::json::array({run0, later["runs"][0]});
    write_scaled(sweep, 1.0, *dir_ / "sweep.json");
    std::swap(sweep["runs"][0], sweep["runs"][1]);
    write_scaled(sweep, 1.0, *dir_ / "sweep-reversed.json");
    auto unknown = doc;
    for (auto& run : unknown["runs"]) run["results"].erase("start_position");
    write_scaled(unknown, 1.0, *dir_ / "unknown-start.json");
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  static void write_scaled(nlohmann::json doc, double factor, const std::filesystem::path& path) {
    for (auto& run : doc["runs"]) {
      std::vector<double> samples;
      for (int i = 0; i < 64; ++i) samples.push_back((1e6 + 1e4 * i) * factor);
      run["results"]["samples_ns"] = samples;
      run["results"]["stats"]["tpot_ns"] = to_json(summarize(samples));
      double total = 0;
      for (double s : samples) total += s;
      run["results"]["stats"]["tokens_per_s"] = 64 * 1e9 / total;
    }
    write(path, doc.dump());
  }

  static std::string path(const std::string& name) { return (*dir_ / name).string(); }

  static TempDir* dir_;
};

TempDir* CompareCli::dir_ = nullptr;

// Runs match by key and by the position of their first timed step: the same key timed from
// another position (another prompt length) is not the same workload. Alone, it is not compared
// (a note names both positions; nothing else to compare: exit 2); a prompt-length sweep matches
// position by position whatever the order; one pair compared and one refused exits 0 with the
// note; a file without start positions matches by key alone, with a note.
TEST_F(CompareCli, RunsMatchByStartPosition) {
  const auto r = run_decodebench({"compare", path("base.json"), path("later.json")});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "not the same workload")) << r.err;
  EXPECT_TRUE(contains(r.err, "start at position 4 in")) << r.err;
  EXPECT_TRUE(contains(r.err, ", at 104 in")) << r.err;
  EXPECT_FALSE(contains(r.out, "REGRESSION")) << r.out;

  const auto swept = run_decodebench({"compare", path("sweep.json"), path("sweep-reversed.json")});
  EXPECT_EQ(swept.exit_code, 0) << swept.out << swept.err;
  EXPECT_TRUE(contains(swept.out, "0 slower, 0 faster, 2 same, 0 unclear in 2 matched run(s)"))
      << swept.out;
  EXPECT_TRUE(contains(swept.out, "@104")) << swept.out;

  const auto mixed = run_decodebench({"compare", path("sweep.json"), path("base.json")});
  EXPECT_EQ(mixed.exit_code, 0) << mixed.out << mixed.err;
  EXPECT_TRUE(contains(mixed.out, "in 1 matched run(s)")) << mixed.out;
  EXPECT_TRUE(contains(mixed.out, "start at position 104 in")) << mixed.out;

  const auto unknown = run_decodebench({"compare", path("unknown-start.json"), path("later.json")});
  EXPECT_EQ(unknown.exit_code, 0) << unknown.out << unknown.err;
  EXPECT_TRUE(contains(unknown.out, "start positions not compared")) << unknown.out;
}

// A result records the variables that change kernels or timings; the cuda backend warns about
// them, the cpu backend (which reads none) only that it ignores decodebench's own switches;
// compare names those that differ between matched runs.
TEST_F(CompareCli, EnvironmentVariablesAreRecordedAndDifferencesNoted) {
  const auto doc = nlohmann::json::parse(read_file(*dir_ / "switched-real.json"));
  const auto& vars = doc["environment"]["variables"];
  EXPECT_EQ(vars.value("DECODEBENCH_GEMV_RING", "?"), "8x1") << vars;
  EXPECT_EQ(vars.value("CUDA_LAUNCH_BLOCKING", "?"), "1") << vars;
  const bool cuda = doc["backend"]["name"] == "cuda";
  int warned = 0, ignored = 0;
  for (const auto& w : doc["warnings"]) {
    const std::string text = w.get<std::string>();
    if (contains(text, "a cpu run ignores it")) {
      ignored += contains(text, "DECODEBENCH_GEMV_RING=8x1");
      continue;
    }
    warned += contains(text, "CUDA_LAUNCH_BLOCKING=1") || contains(text, "DECODEBENCH_GEMV_RING");
  }
  EXPECT_EQ(warned, cuda ? 2 : 0) << doc["warnings"];
  EXPECT_EQ(ignored, cuda ? 0 : 1) << doc["warnings"];

  // The note is for GPU runs (the cpu backend reads none of the variables): the two files as
  // cuda runs, then as they are.
  for (const char* name : {"base.json", "switched.json"}) {
    auto d = nlohmann::json::parse(read_file(*dir_ / name));
    for (auto& run : d["runs"]) run["key"]["backend"] = "cuda";
    write(*dir_ / ("gpu-" + std::string(name)), d.dump());
  }
  const auto r = run_decodebench({"compare", path("gpu-base.json"), path("gpu-switched.json")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "note: environment variables differ in 1 of 1 matched run(s)"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "DECODEBENCH_GEMV_RING unset in " + path("gpu-base.json") +
                                  ", '8x1' in " + path("gpu-switched.json")))
      << r.out;
  const auto as_run = run_decodebench({"compare", path("base.json"), path("switched.json")});
  EXPECT_EQ(contains(as_run.out, "environment variables differ"), cuda) << as_run.out;
  const auto same = run_decodebench({"compare", path("base.json"), path("slow.json")});
  EXPECT_FALSE(contains(same.out, "environment variables differ")) << same.out;
}

TEST_F(CompareCli, RealResultAgainstItselfIsTheSame) {
  const auto r = run_decodebench({"compare", path("real.json"), path("real.json")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "same")) << r.out;
  EXPECT_TRUE(contains(r.out, "no regression (exit 0)")) << r.out;
}

// scripts/validate-result and compare judge an edited file alike: samples changed after the
// stats were written are refused by both (before, the validator called such a file valid).
TEST_F(CompareCli, ValidatorAndCompareRefuseEditedSamplesAlike) {
  auto doc = nlohmann::json::parse(read_file(*dir_ / "base.json"));
  for (auto& run : doc["runs"]) {
    for (auto& sample : run["results"]["samples_ns"]) sample = sample.get<double>() * 1.5;
  }
  const auto edited = *dir_ / "edited.json";
  write(edited, doc.dump());
  const std::string validate = (source_dir() / "scripts/validate-result").string();
  const auto ok = run_command({python(), validate, path("base.json")});
  if (ok.exit_code == 77) GTEST_SKIP() << "jsonschema missing: " << ok.err;
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  // The validator exits 1 and compare 2 on `file`, each naming the problem.
  const auto refused_by_both = [&](const std::filesystem::path& file,
                                   const std::string& by_validator, const std::string& by_compare) {
    const auto v = run_command({python(), validate, file.string()});
    EXPECT_EQ(v.exit_code, 1) << v.out << v.err;
    EXPECT_TRUE(contains(v.err, by_validator)) << v.err;
    const auto c = run_decodebench({"compare", path("base.json"), file.string()});
    EXPECT_EQ(c.exit_code, 2) << c.out;
    EXPECT_TRUE(contains(c.err, by_compare)) << c.err;
  };
  refused_by_both(edited,
                  "runs/0/results/stats/tpot_ns/median is 1315000.0, not what "
                  "results.samples_ns gives (1972500.0): the file was changed after "
                  "decodebench wrote it",
                  "the file was changed after decodebench wrote it");
  // A step of 0 ns (before, the schema allowed it and compare did not).
  auto zero = nlohmann::json::parse(read_file(*dir_ / "base.json"));
  zero["runs"][0]["results"]["samples_ns"][0] = 0;
  const auto zero_path = *dir_ / "zero.json";
  write(zero_path, zero.dump());
  refused_by_both(zero_path,
                  "first at runs/0/results/samples_ns/0: 0 is less than or equal to the minimum "
                  "of 0",
                  "results.samples_ns holds 0");
  // A missing file is named as such, not as bad JSON.
  const auto missing = run_command({python(), validate, (*dir_ / "nosuch.json").string()});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(contains(missing.err, "nosuch.json: cannot read: No such file or directory"))
      << missing.err;
  // Bytes that are not UTF-8: a one-line error, not a Python traceback.
  const auto binary = *dir_ / "binary.json";
  write(binary, "\xff\xfe{}");
  const auto b = run_command({python(), validate, binary.string()});
  EXPECT_EQ(b.exit_code, 1);
  EXPECT_TRUE(contains(b.err, "binary.json: not valid JSON")) << b.err;
  EXPECT_FALSE(contains(b.err, "Traceback")) << b.err;
}

TEST_F(CompareCli, TwentyPercentSlowerExitsOne) {
  const auto r = run_decodebench(
      {"compare", path("base.json"), path("slow.json"), "--metric", "tpot_median,tokens_per_s"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.out, "+20.0%")) << r.out;
  // tokens/s: 1/1.2 − 1; its p is the bootstrap's, 2 / 2,001 (no resample comes near 0).
  EXPECT_TRUE(contains(r.out, "-16.7%   0.0010  slower")) << r.out;
  // The settings line names each metric's test.
  EXPECT_TRUE(contains(r.out,
                       "p: two-sided Mann-Whitney U test on the per-token samples for a median, "
                       "percentile bootstrap (2000 resamples) of the change in the mean, p90, p99 "
                       "or tokens/s"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "2 slower, 0 faster")) << r.out;
  EXPECT_TRUE(contains(r.out, "REGRESSION (exit 1)")) << r.out;
  // The other direction is an improvement, exit 0.
  const auto back = run_decodebench({"compare", path("slow.json"), path("base.json")});
  EXPECT_EQ(back.exit_code, 0) << back.err;
  EXPECT_TRUE(contains(back.out, "faster")) << back.out;
}

// The table's change and p keep the side of the threshold and of alpha that the verdict used:
// +4.97% is not "+5.0%" next to a 5% threshold, and p = 0.028195 is not "0.0282" at alpha 0.0282.
TEST_F(CompareCli, RoundingNeverCrossesTheThresholdOrAlpha) {
  const auto under = run_decodebench({"compare", path("base.json"), path("just-under.json")});
  EXPECT_EQ(under.exit_code, 0) << under.err;
  EXPECT_TRUE(contains(under.out, "+4.97%")) << under.out;
  EXPECT_FALSE(contains(under.out, "+5.0%")) << under.out;
  const auto at5 = run_decodebench({"compare", path("base.json"), path("six.json")});
  EXPECT_EQ(at5.exit_code, 1) << at5.err;  // p < 0.05, +6% ≥ 5%: slower
  EXPECT_TRUE(contains(at5.out, "+6.0%  0.0282  slower")) << at5.out;
  const auto tight =
      run_decodebench({"compare", path("base.json"), path("six.json"), "--alpha", "0.0282"});
  EXPECT_EQ(tight.exit_code, 1) << tight.err;  // still p < alpha
  EXPECT_TRUE(contains(tight.out, "0.028195")) << tight.out;
  EXPECT_FALSE(contains(tight.out, "0.0282  slower")) << tight.out;
  // --threshold 0: a change is not shown as none.
  const auto tiny =
      run_decodebench({"compare", path("base.json"), path("tiny.json"), "--threshold", "0"});
  EXPECT_EQ(tiny.exit_code, 0) << tiny.err;
  EXPECT_TRUE(contains(tiny.out, "+0.03%")) << tiny.out;
  // An alpha below 1e-4: "<0.0001" would not say which side of it p is on.
  const auto small =
      run_decodebench({"compare", path("base.json"), path("slow.json"), "--alpha", "1e-30"});
  EXPECT_EQ(small.exit_code, 0) << small.err;  // p = 3.69e-9 (scipy) is not below 1e-30: unclear
  const std::string row = small.out.substr(small.out.find("tpot_median  "));
  EXPECT_TRUE(contains(row.substr(0, row.find('\n')), "3.69e-09  unclear")) << small.out;
  EXPECT_FALSE(contains(small.out, "<0.0001")) << small.out;
}

TEST_F(CompareCli, MarkdownAndJsonReports) {
  const auto report = *dir_ / "report.md";
  const auto r = run_decodebench({"compare", path("base.json"), path("slow.json"), "--format", "md",
                                  "--output", report.string()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::string md = read_file(report);
  EXPECT_EQ(md.rfind("### decodebench: regression (1 slower)", 0), 0u) << md;
  EXPECT_TRUE(contains(md, "| run | metric | baseline | new | change | p | verdict |")) << md;
  EXPECT_TRUE(
      contains(md, "| tpot_median | 1315.0 µs | 1578.0 µs | +20.0% | <0.0001 | **slower** |"))
      << md;
  // "markdown" is taken for md: the same report.
  const auto report2 = *dir_ / "report2.md";
  const auto r2 = run_decodebench({"compare", path("base.json"), path("slow.json"), "--format",
                                   "markdown", "--output", report2.string()});
  EXPECT_EQ(r2.exit_code, 1) << r2.err;
  EXPECT_EQ(read_file(report2), md);
  EXPECT_TRUE(contains(r.out, "verdict")) << "the text table still goes to stdout: " << r.out;

  const auto j = run_decodebench(
      {"compare", path("base.json"), path("slow.json"), "--format", "json", "--threshold", "25%"});
  EXPECT_EQ(j.exit_code, 0) << j.err;  // 20% < 25%: significant but small → unclear
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["threshold_pct"], 25.0);
  EXPECT_EQ(doc["summary"]["unclear"], 1);
  EXPECT_EQ(doc["comparisons"][0]["verdict"], "unclear");
  EXPECT_EQ(doc["exit_code"], 0);
}

// -q prints no text table of its own, with or without --output (the exit code is the verdict); a
// regression still says so on stderr in the report's verdict line, a run without one says nothing.
// A report asked for by --format still goes to --output, or to stdout without it (--output -
// too).
TEST_F(CompareCli, QuietDropsTheTextTableAndNamesARegression) {
  const auto slow = run_decodebench({"compare", path("base.json"), path("slow.json"), "-q"});
  EXPECT_EQ(slow.exit_code, 1) << slow.err;
  EXPECT_EQ(slow.out, "");
  EXPECT_EQ(slow.err,
            "decodebench: 1 slower, 0 faster, 0 same, 0 unclear in 1 matched run(s) → "
            "REGRESSION (exit 1)\n");
  const auto same = run_decodebench({"compare", path("base.json"), path("base.json"), "-q"});
  EXPECT_EQ(same.exit_code, 0) << same.err;
  EXPECT_EQ(same.out, "");
  EXPECT_EQ(same.err, "");
  const auto report = *dir_ / "quiet.json";
  const auto written = run_decodebench({"compare", path("base.json"), path("base.json"), "-q",
                                        "--format", "json", "--output", report.string()});
  EXPECT_EQ(written.exit_code, 0) << written.err;
  EXPECT_EQ(written.out, "");
  EXPECT_EQ(nlohmann::json::parse(read_file(report))["exit_code"], 0);
  const auto piped =
      run_decodebench({"compare", path("base.json"), path("slow.json"), "-q", "--format", "json"});
  EXPECT_EQ(piped.exit_code, 1) << piped.err;
  EXPECT_EQ(nlohmann::json::parse(piped.out)["exit_code"], 1) << piped.out;
  EXPECT_NE(piped.err.find("REGRESSION (exit 1)"), std::string::npos) << piped.err;
  const auto md =
      run_decodebench({"compare", path("base.json"), path("slow.json"), "-q", "--format", "md"});
  EXPECT_EQ(md.out.rfind("### decodebench: regression (1 slower)", 0), 0u) << md.out;
  // --output - asks for the report on stdout: the text table, when that is the format.
  const auto dash =
      run_decodebench({"compare", path("base.json"), path("base.json"), "-q", "--output", "-"});
  EXPECT_EQ(dash.exit_code, 0) << dash.err;
  EXPECT_TRUE(contains(dash.out, "no regression (exit 0)")) << dash.out;
  // A file that cannot be read is an error (exit 2) with its own message, quiet or not.
  const auto missing =
      run_decodebench({"compare", (*dir_ / "none.json").string(), path("base.json"), "-q"});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_EQ(missing.out, "");
  EXPECT_NE(missing.err.find("none.json"), std::string::npos) << missing.err;
}

// A file name that is not UTF-8 (allowed on Linux) reaches the JSON report with U+FFFD in place of
// its bad byte; it used to end the command with an internal error (nlohmann's type_error 316).
TEST_F(CompareCli, JsonReportOfAFileNameThatIsNotUtf8) {
  const auto odd = *dir_ / std::string("base\xff.json", 10);
  std::filesystem::copy_file(*dir_ / "base.json", odd,
                             std::filesystem::copy_options::overwrite_existing);
  const auto j = run_decodebench({"compare", odd.string(), path("slow.json"), "--format", "json"});
  EXPECT_EQ(j.exit_code, 1) << j.err;  // 20% slower: a regression, as in MarkdownAndJsonReports
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["baseline"], (*dir_ / "base\xEF\xBF\xBD.json").string());
  EXPECT_EQ(doc["exit_code"], 1);
}

// --threshold 0: every |change| is ≥ 0, so the old rule had no "same"; now the test alone decides,
// and the legend and the JSON's method say so.
TEST_F(CompareCli, ThresholdZeroLeavesTheVerdictToTheTest) {
  const auto same = run_decodebench(
      {"compare", path("base.json"), path("base.json"), "--threshold", "0", "--format", "json"});
  EXPECT_EQ(same.exit_code, 0) << same.err;
  const auto doc = nlohmann::json::parse(same.out);
  EXPECT_EQ(doc["summary"]["same"], 1) << same.out;
  EXPECT_TRUE(contains(doc["method"].get<std::string>(), "threshold 0, the test alone decides"))
      << doc["method"];
  EXPECT_TRUE(contains(doc["method"].get<std::string>(),
                       "unclear where the sample counts cannot reach p < alpha in the rank test "
                       "without ties"))
      << doc["method"];
  const auto report = *dir_ / "zero.md";
  const auto slow = run_decodebench({"compare", path("base.json"), path("slow.json"), "--threshold",
                                     "0%", "--format", "md", "--output", report.string()});
  EXPECT_EQ(slow.exit_code, 1) << slow.err;
  const std::string md = read_file(report);
  EXPECT_TRUE(contains(md, "**slower**")) << md;
  EXPECT_TRUE(contains(md, "Verdicts (threshold 0: the test alone decides)")) << md;
  EXPECT_TRUE(contains(md, "unclear whatever the test where the sample counts cannot reach")) << md;
  EXPECT_FALSE(contains(md, "|change| < threshold")) << md;
}

TEST_F(CompareCli, DataAndUsageErrorsExitTwo) {
  const auto v2 = run_decodebench({"compare", path("base.json"), path("v2.json")});
  EXPECT_EQ(v2.exit_code, 2);
  EXPECT_TRUE(contains(v2.err, "v2.json")) << v2.err;
  EXPECT_TRUE(contains(v2.err, "schema_version '2.0'")) << v2.err;

  const auto none = run_decodebench({"compare", path("base.json"), path("other.json")});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_TRUE(contains(none.err, "nothing matched")) << none.err;
  EXPECT_TRUE(contains(none.err, "then @ and its start position")) << none.err;

  const auto missing = run_decodebench({"compare", path("base.json"), path("absent.json")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_TRUE(contains(missing.err, "absent.json")) << missing.err;

  const auto threshold =
      run_decodebench({"compare", path("base.json"), path("base.json"), "--threshold", "x"});
  EXPECT_EQ(threshold.exit_code, 2);
  const auto metric =
      run_decodebench({"compare", path("base.json"), path("base.json"), "--metric", "speed"});
  EXPECT_EQ(metric.exit_code, 2);
  EXPECT_TRUE(contains(metric.err, "unknown metric 'speed'")) << metric.err;
  // An empty piece of a list is a typo, not a shorter list.
  for (const std::string list : {"tpot_median,,tokens_per_s", "tpot_median,", ","}) {
    const auto empty =
        run_decodebench({"compare", path("base.json"), path("base.json"), "--metric", list});
    EXPECT_EQ(empty.exit_code, 2) << list;
    EXPECT_TRUE(contains(empty.err, "--metric: an empty metric name in '" + list + "'"))
        << empty.err;
  }
  const auto phases =
      run_decodebench({"compare", path("base.json"), path("base.json"), "--metric", "gpu_ms"});
  EXPECT_EQ(phases.exit_code, 2);
  EXPECT_TRUE(contains(phases.err, "--phase-timing")) << phases.err;
  EXPECT_TRUE(contains(phases.err, "also the CUDA backend")) << phases.err;
}

TEST_F(CompareCli, HelpDocumentsTheRule) {
  const auto r = run_decodebench({"compare", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(contains(r.out, "Mann-Whitney")) << r.out;
  EXPECT_TRUE(contains(r.out, "p < alpha and |change| >= threshold  -> faster or slower")) << r.out;
  EXPECT_TRUE(contains(r.out,
                       "for a median: unclear where the rank test finds most tokens' times moved "
                       "the other way"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "tokens_per_s the percentile bootstrap of the figure's change"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "-> unclear")) << r.out;
  EXPECT_TRUE(contains(r.out, "too few samples for p < alpha in the rank test without ties"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "1 at least one slower")) << r.out;
}

}  // namespace
}  // namespace decodebench::testing
