// End-to-end runs of the decodebench binary: exit codes, messages, JSON validity and atomic writes.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/support.hpp"

namespace decodebench::testing {
namespace {

// A model small enough to decode in well under a second on one core.
const std::vector<std::string> kTiny = {
    "--preset",  "smollm2-135m", "--layers", "2", "--vocab",         "512",
    "--ffn",     "256",          "--tokens", "6", "--prompt-tokens", "4",
    "--backend", "cpu"};

std::vector<std::string> tiny(std::vector<std::string> extra) {
  std::vector<std::string> a = kTiny;
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

void expect_schema_valid(const std::filesystem::path& file) {
  const auto r =
      run_command({python(), (source_dir() / "scripts/validate-result").string(), file.string()});
  if (r.exit_code == 77) GTEST_SKIP() << "jsonschema missing: " << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(RunCli, TinyRunPrintsSummaryAndWritesValidJson) {
  TempDir dir;
  const auto out = dir / "result.json";
  const auto r = run_decodebench(tiny({"--json", out.string()}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("tokens/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("median"), std::string::npos);
  const auto doc = nlohmann::json::parse(read_file(out));
  EXPECT_EQ(doc["schema_version"], "1.0");
  EXPECT_EQ(doc["model"]["shape"]["layers"], 2);
  EXPECT_EQ(doc["config"]["layers"]["origin"], "flag");
  EXPECT_EQ(doc["config"]["hidden"]["origin"], "preset");
  EXPECT_EQ(doc["config"]["dtype"]["origin"], "default");
  const auto& run = doc["runs"][0];
  EXPECT_EQ(run["results"]["samples_ns"].size(), 6u);
  EXPECT_EQ(run["results"]["tokens"].size(), 7u);
  EXPECT_GT(run["results"]["stats"]["tokens_per_s"].get<double>(), 0.0);
  EXPECT_NE(doc["verdict"].get<std::string>().find("tokens/s"), std::string::npos);
  expect_schema_valid(out);
}

// The CPU backend measures no read bandwidth: the document says so with null, never with a 0 a
// reader could take for a measurement; the achieved figure (bytes per token / median TPOT) is
// still there.
TEST(RunCli, CpuRunWritesNullForTheBandwidthItDidNotMeasure) {
  TempDir dir;
  const auto out = dir / "result.json";
  const auto r = run_decodebench(tiny({"--json", out.string()}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(read_file(out));
  ASSERT_TRUE(doc.contains("bandwidth_gbps"));
  EXPECT_TRUE(doc["bandwidth_gbps"].is_null()) << doc["bandwidth_gbps"];
  const auto& roof = doc["runs"][0]["roofline"];
  EXPECT_TRUE(roof["measured_gbps"].is_null()) << roof;
  EXPECT_TRUE(roof["efficiency"].is_null()) << roof;
  const auto bytes = roof["bytes_per_token"].get<double>();
  const auto median_ns = doc["runs"][0]["results"]["stats"]["tpot_ns"]["median"].get<double>();
  EXPECT_NEAR(roof["achieved_gbps"].get<double>(), bytes / median_ns, 1e-9 * bytes / median_ns);
  expect_schema_valid(out);
}

// A missing or broken model file is reported first and alone: before, the automatic backend's
// "no usable CUDA device" warning came ahead of it on a machine without a GPU.
TEST(RunCli, BadModelFileIsTheOnlyMessage) {
  TempDir dir;
  const auto broken = dir / "broken.gguf";
  std::ofstream(broken) << "GGUF";  // a truncated header
  for (const std::string& model : {std::string("/nonexistent/model.gguf"), broken.string()}) {
    // No visible device, so that a CUDA build probes and fails to find one even on a GPU host.
    const auto r =
        run_decodebench({"--model", model, "--tokens", "4"}, 300, {"CUDA_VISIBLE_DEVICES="});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(model + ": "), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

// CPU phase timing has host phases only: no GPU time (CUDA events), neither as a summary nor as
// per-token samples (the backend's -1 placeholder must not reach the document or the plots).
TEST(RunCli, CpuPhaseTimingWritesNoGpuTime) {
  TempDir dir;
  const auto out = dir / "result.json";
  const auto r = run_decodebench(tiny({"--phase-timing", "--json", out.string()}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(read_file(out));
  ASSERT_EQ(doc["runs"].size(), 2u);  // "cpu", then "cpu+phases"
  EXPECT_EQ(doc["runs"][1]["label"], "cpu+phases");
  // The overhead is a difference of two noisy medians: printed with its uncertainty.
  EXPECT_NE(r.out.find("phase-timing overhead (cpu): "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" µs per token (median with − without; ± "), std::string::npos) << r.out;
  // The verdict's tokens/s is said to count every timed step, beside the median TPOT.
  EXPECT_NE(r.out.find("verdict  cpu: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" tokens/s (timed steps ÷ their summed time; median TPOT "),
            std::string::npos)
      << r.out;
  // What the GPU phases mean on the CPU.
  EXPECT_NE(r.out.find("(cpu backend: the forward pass runs inside 'launch'"), std::string::npos)
      << r.out;
  const auto& results = doc["runs"][1]["results"];
  ASSERT_TRUE(results["phases"].is_object()) << results["phases"];
  EXPECT_FALSE(results["phases"].contains("gpu_ms"));
  const auto& samples = results["phase_samples"];
  ASSERT_TRUE(samples.is_object()) << samples;
  EXPECT_FALSE(samples.contains("gpu_ms")) << samples;
  for (const char* name : {"h2d", "launch", "wait", "argmax", "total"}) {
    ASSERT_TRUE(samples.contains(name)) << name;
    EXPECT_EQ(samples[name].size(), 6u) << name;
    for (const auto& v : samples[name]) EXPECT_GE(v.get<double>(), 0.0) << name;
  }
  expect_schema_valid(out);
}

// The summary's two byte counts differ only by the embedding table: tied (SmolLM2) it is the LM
// head and read whole; untied a step reads one row of it, and the line says so.
TEST(RunCli, SummaryExplainsBytesReadPerStep) {
  const auto tied = run_decodebench(tiny({}));
  ASSERT_EQ(tied.exit_code, 0) << tied.err;
  EXPECT_NE(tied.out.find("read per step\n"), std::string::npos) << tied.out;
  const auto untied = run_decodebench(tiny({"--untied"}));
  ASSERT_EQ(untied.exit_code, 0) << untied.err;
  EXPECT_NE(untied.out.find("read per step (one embedding row)"), std::string::npos) << untied.out;
}

TEST(RunCli, BatchedRunReportsEverySequenceAndTheAggregate) {
  TempDir dir;
  const auto out = dir / "batch.json";
  const auto r = run_decodebench(tiny({"--batch", "3", "--json", out.string()}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("3 sequences in lockstep"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("aggregate"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("seq 2"), std::string::npos) << r.out;
  const auto doc = nlohmann::json::parse(read_file(out));
  EXPECT_EQ(doc["config"]["batch"]["value"], 3);
  const auto& run = doc["runs"][0];
  EXPECT_EQ(run["batch"], 3);
  ASSERT_EQ(run["results"]["sequences"].size(), 3u);
  EXPECT_EQ(run["results"]["samples_ns"].size(), 6u);
  for (const auto& s : run["results"]["sequences"]) EXPECT_EQ(s["tokens"].size(), 7u);
  EXPECT_GT(run["results"]["stats"]["aggregate_tokens_per_s"].get<double>(),
            run["results"]["stats"]["tokens_per_s"].get<double>());
  expect_schema_valid(out);
}

TEST(RunCli, RunSubcommandIsTheDefault) {
  const auto a = run_decodebench(tiny({"--json", "-", "-q"}));
  std::vector<std::string> b_args = {"run"};
  b_args.insert(b_args.end(), kTiny.begin(), kTiny.end());
  b_args.insert(b_args.end(), {"--json", "-", "-q"});
  const auto b = run_decodebench(b_args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  // Same seed → same tokens, whichever spelling.
  EXPECT_EQ(nlohmann::json::parse(a.out)["runs"][0]["results"]["tokens"],
            nlohmann::json::parse(b.out)["runs"][0]["results"]["tokens"]);
}

TEST(RunCli, JsonToStdoutKeepsStdoutPureJson) {
  const auto r = run_decodebench(tiny({"--json", "-"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NO_THROW(nlohmann::json::parse(r.out)) << r.out.substr(0, 200);
  EXPECT_NE(r.err.find("tokens/s"), std::string::npos) << "the report goes to stderr";
}

// Flags that do less than they seem to say so: --min-time beyond --max-time (min wins),
// --verify-argmax on the cpu backend (no second argmax: skipped), and more --threads than
// the machine has.
TEST(RunCli, WarnsAboutFlagsThatDoLessThanAsked) {
  const auto r = run_decodebench(
      tiny({"-q", "--min-time", "0.2", "--max-time", "0.1", "--verify-argmax", "--threads",
            std::to_string(std::max(2u, std::thread::hardware_concurrency() + 1))}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("--min-time 0.2 s is longer than --max-time 0.1 s"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("--verify-argmax re-checks a GPU's argmax"), std::string::npos) << r.err;
  // Skipped, so the report claims no check ("argmax checked on N steps, 0 mismatches").
  const auto report = run_decodebench(tiny({"--verify-argmax"}));
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.err.find("it was skipped"), std::string::npos) << report.err;
  EXPECT_EQ(report.out.find("argmax checked"), std::string::npos) << report.out;
  if (std::thread::hardware_concurrency() > 0) {
    EXPECT_NE(r.err.find("hardware threads"), std::string::npos) << r.err;
  }
  // CUDA-only execution flags on the cpu backend.
  const auto cuda_only =
      run_decodebench(tiny({"-q", "--capture-mode", "global", "--weight-layout", "tiled"}));
  ASSERT_EQ(cuda_only.exit_code, 0) << cuda_only.err;
  EXPECT_NE(cuda_only.err.find("--capture-mode, --weight-layout apply to the CUDA backend only; "
                               "the cpu backend ran without them"),
            std::string::npos)
      << cuda_only.err;
  const auto quiet = run_decodebench(tiny({"-q", "--threads", "1"}));
  EXPECT_EQ(quiet.err.find("warning"), std::string::npos) << quiet.err;
}

// A misspelled measurement switch is named on stderr (quiet too) and in the result's warnings,
// and the run goes on at the defaults.
TEST(RunCli, MisspelledSwitchIsNamedNotIgnoredSilently) {
  TempDir dir;
  const auto out = dir / "result.json";
  const ScopedVariable typo("DECODEBENCH_GEMV_RNG", "16x3");
  const auto r = run_decodebench(tiny({"-q", "--json", out.string()}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string want =
      "DECODEBENCH_GEMV_RNG is set, but decodebench reads no variable of that name (did you mean "
      "DECODEBENCH_GEMV_RING?)";
  EXPECT_NE(r.err.find(want), std::string::npos) << r.err;
  const auto doc = nlohmann::json::parse(read_file(out));
  bool recorded = false;
  for (const auto& w : doc["warnings"]) recorded |= w.get<std::string>().rfind(want, 0) == 0;
  EXPECT_TRUE(recorded) << doc["warnings"].dump();
  EXPECT_FALSE(doc["environment"]["variables"].contains("DECODEBENCH_GEMV_RNG"));
}

TEST(RunCli, ThreadCountDoesNotChangeTokens) {
  const auto one =
      run_decodebench(tiny({"--threads", "1", "--json", "-", "-q", "--dtype", "bf16"}));
  const auto two =
      run_decodebench(tiny({"--threads", "2", "--json", "-", "-q", "--dtype", "bf16"}));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(nlohmann::json::parse(one.out)["runs"][0]["results"]["tokens"],
            nlohmann::json::parse(two.out)["runs"][0]["results"]["tokens"]);
}

struct BadInput {
  std::vector<std::string> args;
  std::string expect;
};

TEST(RunCli, BadInputExitsTwoNamingTheRule) {
  const std::vector<BadInput> cases = {
      {{"--heads", "5"}, "divisible by heads"},
      {{"--kv-heads", "4"}, "divisible by kv-heads"},
      {{"--layers", "0"}, "layers must be > 0"},
      {{"--layers", "-3"}, "layers must be > 0"},
      {{"--hidden", "-1"}, "invalid model shape: --hidden must be > 0 (got -1)"},
      {{"--vocab", "1"}, "vocab must be >= 2"},
      {{"--head-dim", "63"}, "even"},
      {{"--preset", "nope"}, "known presets"},
      {{"--dtype", "f8"}, "--dtype"},
      {{"--context", "8", "--prompt-tokens", "6", "--tokens", "4"}, "context limit"},
      {{"--context", "8", "--prompt-tokens", "6", "--warmup", "5"},
       "prompt (6) + warm-up steps (5) exceed the context limit of 8"},
      {{"--prompt-ids", "1,a"}, "--prompt-ids"},
      {{"--tokens", "0"}, "--tokens"},
      {{"--backend", "cpu", "--graph", "on"}, "cuda"},
      {{"--no-such-flag"}, "no-such-flag"},
      {{"--prompt", "hello"}, "tokenizer"},
      {{"--model", "/nonexistent/model.gguf"}, "model.gguf"},
      {{"--json", "/nonexistent-dir/x.json"}, "folder '/nonexistent-dir' does not exist"},
      // A file where the folder should be: not "does not exist".
      {{"--json", "/proc/self/status/x.json"}, "'/proc/self/status' is not a folder"},
      {{"--json", "/proc/x.json"}, "cannot create files"},
      {{"--seed", "-1"}, "--seed must be >= 0"},
      {{"--batch", "0"}, "--batch must be in [1, 256]"},
      {{"--batch", "257"}, "--batch must be in [1, 256]"},
      {{"--batch", "2", "--graph", "on", "--backend", "cpu"}, "--graph on needs the cuda backend"},
      {{"--weight-layout", "blocked"}, "--weight-layout"},
      // Sizes whose products would overflow int64 (a crash in the weight builder, a loop over
      // 10^11 layers) are refused before anything is computed from them.
      {{"--ffn", "2305843009213693952"}, "ffn must be <= 4194304"},
      {{"--head-dim", "4611686018427387904"}, "head-dim must be <= 4096"},
      {{"--hidden", "4611686018427387904", "--head-dim", "64"}, "hidden must be <= 4194304"},
      {{"--layers", "99999999999"}, "layers must be <= 4096"},
      {{"--kv-heads", "2048", "--heads", "2048", "--head-dim", "64"}, "heads must be <= 1024"},
      {{"--context", "100000000"}, "context length must be <= 16777216"},
      {{"--rms-eps", "inf"}, "rms-eps must be a normal f32 value in (0, 1) (got inf)"},
      {{"--rope-theta", "inf"}, "rope-theta must be a positive normal f32 value (got inf)"},
      // Outside f32 (GGUF and the kernels store both as f32): inf or 0 there, every token 0.
      {{"--rms-eps", "1e300"}, "rms-eps must be a normal f32 value in (0, 1) (got 1e+300)"},
      {{"--rms-eps", "1e-50"}, "rms-eps must be a normal f32 value in (0, 1) (got 1e-50)"},
      // GGUF files are held to (0, 1) as well: make-gguf wrote files their own run refused.
      {{"--rms-eps", "2"}, "rms-eps must be a normal f32 value in (0, 1) (got 2)"},
      {{"--rope-theta", "1e39"}, "rope-theta must be a positive normal f32 value (got 1e+39)"},
      // Step counts are bounded like the context, and the KV-cache size is computed without
      // wrapping: 256 sequences × 4096 layers × 2^24 positions × 16×4096 KV floats passed the
      // memory check as a wrapped small number.
      {{"--tokens", "9223372036854775807", "--stateless"}, "--tokens must be in [1, 16777216]"},
      {{"--warmup", "16777217"}, "--warmup must be in [0, 16777216]"},
      {{"--prompt-tokens", "16777217", "--stateless"}, "--prompt-tokens must be <= 16777216"},
      // An empty value is not "not given" (it ran the preset's value, or wrote no JSON).
      {{"--layers", ""}, "--layers: empty value"},
      {{"--json", ""}, "--json: empty value"},
      {{"--layers="}, "--layers: empty value"},
      // Beyond int64: the conversion used to clamp to INT64_MAX silently.
      {{"--seed", "18446744073709551615"}, "--seed: '18446744073709551615' is out of range"},
      {{"--seed=1,99999999999999999999"}, "--seed: '99999999999999999999' is out of range"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"--preset", "smollm2-135m", "--layers", "2", "--tokens", "2"};
    if (c.args[0] == "--preset") args = {"--layers", "2", "--tokens", "2"};
    if (c.args[0] == "--model") args = {"--tokens", "2"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const auto r = run_decodebench(args);
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    EXPECT_EQ(r.signal, 0) << joined;
    EXPECT_EQ(r.exit_code, 2) << joined << "\n" << r.err;
    EXPECT_NE((r.err + r.out).find(c.expect), std::string::npos)
        << joined << " → " << r.err << r.out;
  }
}

TEST(RunCli, ModelTooLargeForHostMemoryExitsThreeWithBothNumbers) {
  // 80 layers of a 16k-wide f32 model: ~1.6 TB of weights.
  const auto r =
      run_decodebench({"--layers", "80", "--hidden", "16384", "--heads", "128", "--kv-heads", "8",
                       "--ffn", "65536", "--dtype", "f32", "--backend", "cpu", "--tokens", "2"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("not enough host memory"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("needs"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("available"), std::string::npos) << r.err;
}

TEST(RunCli, FailedRunLeavesAnExistingResultUntouched) {
  TempDir dir;
  const auto out = dir / "result.json";
  { std::ofstream(out) << "OLD"; }
  // Fails after the model is built: the prompt id is outside the 512-token vocabulary.
  const auto r = run_decodebench(tiny({"--prompt-ids", "1,2,4000", "--json", out.string()}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(read_file(out), "OLD");
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1u) << "no temporary file may be left behind";
  const auto ok = run_decodebench(tiny({"--json", out.string()}));
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(read_file(out).find("schema_version"), std::string::npos);
}

// A reader that closes the pipe before the run ends (`decodebench ... | head -1`): no death by
// SIGPIPE (exit 141, --json never written, before round 36), but the result file written and the
// failed stdout named, with a non-zero exit.
TEST(RunCli, ClosedStdoutPipeStillWritesTheResultFile) {
  TempDir dir;
  const auto out = dir / "result.json";
  std::string cmd = "'" + decodebench_bin().string() + "'";
  for (const std::string& a : tiny({"--json", out.string()})) cmd += " '" + a + "'";
  // `exec 0<&-` closes the pipe's read end at once; PIPESTATUS keeps decodebench's exit status.
  const auto r =
      run_command({"bash", "-c", cmd + " | (exec 0<&-; sleep 1); exit ${PIPESTATUS[0]}"});
  EXPECT_EQ(r.signal, 0);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("writing to stdout failed: Broken pipe"), std::string::npos) << r.err;
  EXPECT_NE(read_file(out).find("schema_version"), std::string::npos);
}

TEST(RunCli, CudaBackendWithoutDeviceExitsThree) {
  const auto r = run_decodebench(tiny({"--backend", "cuda"}));
  if (r.exit_code == 0) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(r.err.find("no CUDA device") != std::string::npos ||
              r.err.find("no CUDA backend") != std::string::npos ||
              r.err.find("driver") != std::string::npos)
      << r.err;
}

// A fleet check that asks `doctor --json` on a host with no usable GPU gets a report saying so
// (healthy false, gpu null, the error's text as the verdict), not a missing file, and exit 3.
TEST(RunCli, DoctorWithoutAGpuWritesWhyInItsJson) {
  TempDir dir;
  const auto path = dir.path() / "doctor.json";
  const auto r = run_decodebench({"doctor", "--json", path.string()});
  if (r.exit_code == 0 || r.exit_code == 1) GTEST_SKIP() << "a CUDA device is present";
  ASSERT_EQ(r.exit_code, 3) << r.err;
  const std::string prefix = "decodebench: error: ";
  const auto at = r.err.find(prefix);
  ASSERT_NE(at, std::string::npos) << r.err;
  std::string why = r.err.substr(at + prefix.size());
  why = why.substr(0, why.find('\n'));
  EXPECT_NE(why.find("doctor: "), std::string::npos) << why;
  const auto doc = nlohmann::json::parse(read_file(path));
  EXPECT_EQ(doc["healthy"], false);
  EXPECT_TRUE(doc["gpu"].is_null()) << doc["gpu"];
  EXPECT_EQ(doc["verdict"], "unhealthy: " + why);
  EXPECT_TRUE(doc["matrix"].empty());
  EXPECT_TRUE(doc["replay_matches_eager"].is_null()) << doc["replay_matches_eager"];
  EXPECT_EQ(doc["context_unusable"], false);
  EXPECT_EQ(doc["environment"]["cores"].is_number(), true) << doc["environment"];
  // '-' puts the same report on stdout, alone.
  const auto s = run_decodebench({"doctor", "--json", "-"});
  ASSERT_EQ(s.exit_code, 3) << s.err;
  EXPECT_EQ(nlohmann::json::parse(s.out)["verdict"], "unhealthy: " + why) << s.out;
  // A report that cannot be written is a warning; the missing GPU stays the error and exit code.
  if (!std::filesystem::is_character_file("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  const auto full = run_decodebench({"doctor", "--json", "/dev/full"});
  EXPECT_EQ(full.exit_code, 3) << full.err;
  EXPECT_NE(full.err.find("decodebench: warning: cannot write '/dev/full'"), std::string::npos)
      << full.err;
  EXPECT_NE(full.err.find("decodebench: error: " + why), std::string::npos) << full.err;
}

TEST(RunCli, MinTimeRepeatsRoundsAndSaysSo) {
  const auto r = run_decodebench(tiny({"--min-time", "0.3", "--json", "-", "-q"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto run = nlohmann::json::parse(r.out)["runs"][0]["results"];
  EXPECT_EQ(run["stopping"]["rule"], "min_time");
  EXPECT_GE(run["stopping"]["timed_s"].get<double>(), 0.3);
  EXPECT_GT(run["stopping"]["rounds"].get<int>(), 1);
  EXPECT_EQ(run["samples_ns"].size(), 6u * run["stopping"]["rounds"].get<size_t>());
  EXPECT_EQ(run["tokens"].size(), 7u) << "ids come from the first round";
}

TEST(RunCli, MaxNoiseStopsAtTheBudgetWhenUnreachable) {
  // 0.001% noise of the median is out of reach in 0.3 s: the time budget ends the pass.
  const auto r =
      run_decodebench(tiny({"--max-noise", "0.001", "--max-time", "0.3", "--json", "-", "-q"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto st = nlohmann::json::parse(r.out)["runs"][0]["results"]["stopping"];
  EXPECT_EQ(st["rule"], "time_budget");
  EXPECT_GT(st["median_noise"].get<double>(), 0.00001);
  // The unmet target is a warning too (stderr, even with -q, and the result's warnings).
  EXPECT_NE(r.err.find("--max-noise 0.001% not reached"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--max-time budget (0.3 s)"), std::string::npos) << r.err;
  bool in_json = false;
  const auto doc = nlohmann::json::parse(r.out);
  for (const auto& w : doc["warnings"]) {
    in_json = in_json || w.get<std::string>().find("not reached") != std::string::npos;
  }
  EXPECT_TRUE(in_json);
  const auto bad = run_decodebench(tiny({"--max-noise", "150"}));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--max-noise must be a percentage in [0, 100) (got 150)"),
            std::string::npos)
      << bad.err;
  // "5%" reads as 5 (as compare --threshold takes percentages); "x%" is still an error.
  const auto pct = run_decodebench(
      tiny({"--max-noise", "5%", "--max-time", "0.3", "--json", "-", "-q", "--tokens", "2"}));
  ASSERT_EQ(pct.exit_code, 0) << pct.err;
  EXPECT_EQ(nlohmann::json::parse(pct.out)["config"]["max_noise_pct"]["value"], 5.0);
  EXPECT_EQ(run_decodebench(tiny({"--max-noise", "x%"})).exit_code, 2);
  // Two signs: named as typed, not as '5%'.
  const auto twice = run_decodebench(tiny({"--max-noise", "5%%"}));
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.err.find("'5%%'"), std::string::npos) << twice.err;
  // NaN passes no comparison, so it used to pass the checks and hang the repetition.
  for (const char* flag : {"--max-noise", "--min-time", "--max-time"}) {
    const auto nan = run_decodebench(tiny({flag, "nan"}));
    EXPECT_EQ(nan.exit_code, 2) << flag << ": " << nan.err;
    EXPECT_NE(nan.err.find(flag), std::string::npos) << nan.err;
  }
}

// The budget is wall clock: steps of a few µs with per-round work between them used to run for
// many times the budget (--max-time 4 took 58 s), since only timed step time counted.
TEST(RunCli, MaxTimeBoundsTheWallClockOfTheRepetition) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run_decodebench(
      tiny({"--tokens", "2", "--max-noise", "0.001", "--max-time", "1", "--json", "-", "-q"}));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto st = nlohmann::json::parse(r.out)["runs"][0]["results"]["stopping"];
  EXPECT_EQ(st["rule"], "time_budget");
  EXPECT_LT(seconds, 6.0) << "a 1 s budget (one pass, plus model set-up)";
}

// --warmup-time warms up for at least that long (a GPU's clock transient in its first ~0.5 s of
// load, docs/performance.md round 12), cycling over the warm-up positions: more warm-up steps,
// recorded, and the same tokens, since the timed steps rewrite those KV entries.
TEST(RunCli, WarmupTimeAddsStepsAndKeepsTheTokens) {
  const auto plain = run_decodebench(tiny({"--warmup", "1", "--json", "-", "-q"}));
  const auto timed =
      run_decodebench(tiny({"--warmup", "1", "--warmup-time", "0.2", "--json", "-", "-q"}));
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(timed.exit_code, 0) << timed.err;
  const auto a = nlohmann::json::parse(plain.out);
  const auto b = nlohmann::json::parse(timed.out);
  EXPECT_EQ(a["runs"][0]["results"]["warmup_steps"], 1);
  EXPECT_GT(b["runs"][0]["results"]["warmup_steps"].get<int64_t>(), 6)
      << "0.2 s of steps of a ~1 ms model, cycling over max(warmup, tokens) = 6 positions";
  EXPECT_EQ(b["config"]["warmup_time_s"]["value"], 0.2);
  EXPECT_EQ(a["runs"][0]["results"]["tokens"], b["runs"][0]["results"]["tokens"]);
  for (const char* bad : {"-1", "nan", "601"}) {
    const auto r = run_decodebench(tiny({"--warmup-time", bad}));
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("--warmup-time"), std::string::npos) << r.err;
  }
}

// One sample has no spread to judge: the noise rule needs 6 (a 95% interval of the median).
TEST(RunCli, NoiseRuleNeedsSixSamples) {
  const auto r = run_decodebench(
      tiny({"--tokens", "1", "--max-noise", "50", "--max-time", "5", "--json", "-", "-q"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  const auto& res = doc["runs"][0]["results"];
  EXPECT_EQ(res["stopping"]["rule"], "noise");
  EXPECT_GE(res["samples_ns"].size(), 6u);
  EXPECT_TRUE(res["stats"]["tpot_ns"]["median_ci95"].is_array());
  EXPECT_TRUE(res["stopping"]["median_noise"].is_number());
  // Two samples: neither an interval nor a noise figure.
  const auto two =
      run_decodebench(tiny({"--tokens", "2", "--min-time", "0.000001", "--json", "-", "-q"}));
  ASSERT_EQ(two.exit_code, 0) << two.err;
  const auto doc2 = nlohmann::json::parse(two.out);
  EXPECT_TRUE(doc2["runs"][0]["results"]["stopping"]["median_noise"].is_null())
      << doc2["runs"][0]["results"]["stopping"];
}

TEST(RunCli, GraphOnWithoutAGpuIsAMissingResource) {
  const auto r = run_decodebench(tiny({"--backend", "auto", "--graph", "on"}));
  if (r.exit_code == 0) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("--graph on needs a CUDA device"), std::string::npos) << r.err;
  // No "using the cpu backend" announcement for a run that does not happen.
  EXPECT_EQ(r.err.find("using the cpu backend"), std::string::npos) << r.err;
}

// Under an address-space limit (ulimit -v) the model's memory is checked against what the limit
// leaves, so the error gives both numbers instead of a bare "out of host memory" from a failed
// allocation.
TEST(RunCli, AddressSpaceLimitIsNamedWithBothNumbers) {
  const auto r = run_command({"/bin/sh", "-c", "ulimit -v 200000 && exec \"$0\" \"$@\"",
                              decodebench_bin().string(), "--preset", "smollm2-135m", "--backend",
                              "cpu", "--tokens", "2", "-q"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("not enough host memory: the synthetic model (weights 269100288 bytes + "
                       "KV cache and workspace "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("are left under this process's address-space limit (ulimit -v)"),
            std::string::npos)
      << r.err;
}

TEST(RunCli, CpuFallbackWarnsOnStderrEvenWhenQuiet) {
  const auto r = run_decodebench(tiny({"--backend", "auto", "-q"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (r.err.find("no usable CUDA device") == std::string::npos) {
    // A CPU-only build has no CUDA provider and nothing to fall back from.
    EXPECT_EQ(r.err, "");
  }
  EXPECT_EQ(r.out, "") << "quiet prints nothing on stdout";
}

// A run that --backend auto puts on the CPU says why on stdout and in the JSON (backend.fallback),
// not only in a stderr warning; a run on a named backend has no such line. The GPU is hidden, so
// a CUDA build falls back as a CPU-only build does.
TEST(RunCli, CpuFallbackReasonInTheReportAndJson) {
#ifdef DECODEBENCH_HAVE_CUDA
  const std::string why = "no usable CUDA device (";
#else
  const std::string why = "this build has no CUDA backend";
#endif
  TempDir dir;
  const auto out = dir / "auto.json";
  const std::vector<std::string> hide_gpu = {"CUDA_VISIBLE_DEVICES="};
  const auto r =
      run_decodebench(tiny({"--backend", "auto", "--json", out.string()}), 300, hide_gpu);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string line = "\nbackend  cpu, chosen by --backend auto: ";
  EXPECT_NE(r.out.find(line + why), std::string::npos) << r.out;
  const auto doc = nlohmann::json::parse(read_file(out));
  EXPECT_EQ(doc["backend"]["name"], "cpu");
  ASSERT_TRUE(doc["backend"]["fallback"].is_string()) << doc["backend"].dump();
  EXPECT_EQ(doc["backend"]["fallback"].get<std::string>().rfind(why, 0), 0u)
      << doc["backend"].dump();
  // The report's line and the JSON give the same reason.
  EXPECT_NE(r.out.find(line + doc["backend"]["fallback"].get<std::string>() + "\n"),
            std::string::npos)
      << r.out;
  expect_schema_valid(out);

  const auto cpu_out = dir / "cpu.json";
  const auto named = run_decodebench(tiny({"--json", cpu_out.string()}), 300, hide_gpu);
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_EQ(named.out.find("chosen by --backend auto"), std::string::npos) << named.out;
  EXPECT_TRUE(nlohmann::json::parse(read_file(cpu_out))["backend"]["fallback"].is_null());
}

// The argv checks concern option values only: a prompt may end in '=' or hold long digit runs,
// and float options take any number CLI11 can read.
TEST(RunCli, RawValueChecksLeaveTextAndFloatsAlone) {
  for (const std::vector<std::string>& extra : std::vector<std::vector<std::string>>{
           {"--prompt=2+2="}, {"--prompt", "pi 3,14159265358979323846264338"}}) {
    const auto r = run_decodebench(tiny(extra));
    EXPECT_EQ(r.err.find("empty value"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("out of range"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("tokenizer"), std::string::npos) << r.err;  // synthetic: no tokenizer
  }
  const auto big = run_decodebench(tiny({"--rope-theta", "100000000000000000000", "-q"}));
  EXPECT_EQ(big.exit_code, 0) << big.err;
  // A time that would look like a hang is refused.
  const auto forever = run_decodebench(tiny({"--min-time", "100000000000000000000"}));
  EXPECT_EQ(forever.exit_code, 2) << forever.err;
  EXPECT_NE(forever.err.find("--min-time must be a number of seconds in [0, 3600]"),
            std::string::npos)
      << forever.err;
}

// A parse error names the help that lists the flags in question.
TEST(RunCli, UsageErrorPointsAtTheRightHelp) {
  const auto root = run_decodebench({"--tokens", "x"});
  EXPECT_EQ(root.exit_code, 2);
  // A value of the wrong type: the flag, the value and what it must be, not CLI11's wording.
  EXPECT_NE(root.err.find("--tokens: 'x' is not an integer"), std::string::npos) << root.err;
  const auto eps = run_decodebench({"run", "--rms-eps", "1e-6x"});
  EXPECT_EQ(eps.exit_code, 2);
  EXPECT_NE(eps.err.find("--rms-eps: '1e-6x' is not a number"), std::string::npos) << eps.err;
  EXPECT_NE(eps.err.find("Run 'decodebench run --help'"), std::string::npos) << eps.err;
  EXPECT_NE(root.err.find("Run 'decodebench --help' for the flags."), std::string::npos)
      << root.err;
  const auto inspect = run_decodebench({"inspect"});
  EXPECT_EQ(inspect.exit_code, 2);
  EXPECT_NE(inspect.err.find("Run 'decodebench inspect --help' for the flags."), std::string::npos)
      << inspect.err;
  const auto compare = run_decodebench({"compare", "a.json", "b.json", "--format", "html"});
  EXPECT_EQ(compare.exit_code, 2);
  EXPECT_NE(compare.err.find("Run 'decodebench compare --help'"), std::string::npos) << compare.err;
}

// bench-kernels checks every flag before it looks for a GPU, so a typo fails at once with exit 2
// on any machine, not after minutes of timing (the gemm section, which reads --batches, runs
// last) or as "no CUDA device" (exit 3).
TEST(RunCli, BenchKernelsRefusesBadFlagsBeforeAnyDeviceWork) {
  const std::vector<BadInput> cases = {
      {{"--batches", "0"}, "--batches must be in 1..256, got 0"},
      {{"--batches", "1,300"}, "--batches must be in 1..256, got 300"},
      {{"--iterations", "0"}, "--iterations must be >= 1"},
      {{"--variants", "some"}, "--variants must be all or auto"},
      {{"--sections", "gemv,attn"}, "unknown section 'attn'"},
      {{"--shapes", "7b,12x"}, "'12x' is neither 7b, smollm2 nor ROWSxCOLS"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args{"bench-kernels"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const auto r = run_decodebench(args);
    EXPECT_EQ(r.exit_code, 2) << c.expect << ": " << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << r.err;
  }
}

// bench-kernels names a misspelled switch on stderr, and refuses a bad value of any switch before
// it looks for a GPU (exit 2, an input error, naming the variable; a CPU-only build has no
// bench-kernels: exit 3); doctor names the misspelled switch too.
TEST(RunCli, BenchKernelsNamesMisspelledAndBadSwitchesBeforeAnyDeviceWork) {
  const ScopedVariable typo("DECODEBENCH_GEMV_RING_CTA", "3");
  const ScopedVariable bad("DECODEBENCH_GEMV_RING_LONG", "3x2");
  const auto r = run_decodebench({"bench-kernels", "--sections", "gemv", "--shapes", "64x64"});
#ifdef DECODEBENCH_HAVE_CUDA
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("DECODEBENCH_GEMV_RING_LONG: '3x2' is neither 0"), std::string::npos)
      << r.err;
#else
  EXPECT_EQ(r.exit_code, 3) << r.err;
#endif
  EXPECT_NE(r.err.find("decodebench: warning: DECODEBENCH_GEMV_RING_CTA is set, but decodebench "
                       "reads no variable of that name (did you mean "
                       "DECODEBENCH_GEMV_RING_CTAS?)"),
            std::string::npos)
      << r.err;
  // The backend's other switches are refused there too, not only when a kernel reads them.
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"DECODEBENCH_ATTENTION", "clustr"},
                                                        {"DECODEBENCH_ATTENTION_TRIGGER", "end"},
                                                        {"DECODEBENCH_TOKEN_D2H", "yes"},
                                                        {"DECODEBENCH_SPLIT_TRIGGER", "exit"},
                                                        {"DECODEBENCH_GEMV_PRESPLIT_MIN", "-1"},
                                                        {"DECODEBENCH_GEMV_DIRECT_SPREAD", "on"}}) {
    const ScopedVariable unset_bad("DECODEBENCH_GEMV_RING_LONG", std::nullopt);
    const ScopedVariable other(name.c_str(), value.c_str());
    const auto o = run_decodebench({"bench-kernels", "--sections", "gemv", "--shapes", "64x64"});
#ifdef DECODEBENCH_HAVE_CUDA
    EXPECT_EQ(o.exit_code, 2) << name << ": " << o.err;
    EXPECT_NE(o.err.find(name + ": '" + value + "'"), std::string::npos) << o.err;
#else
    EXPECT_EQ(o.exit_code, 3) << name << ": " << o.err;
#endif
  }
  // doctor names it too, before it looks for a GPU (here: none, exit 3).
  const auto d = run_decodebench({"doctor"});
  EXPECT_NE(d.err.find("decodebench: warning: DECODEBENCH_GEMV_RING_CTA is set"), std::string::npos)
      << d.err;
}

TEST(RunCli, VersionAndHelp) {
  const auto v = run_decodebench({"--version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.out.find("decodebench"), std::string::npos);
  const auto h = run_decodebench({"--help"});
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_NE(h.out.find("Exit codes"), std::string::npos);
  EXPECT_NE(h.out.find("--layers"), std::string::npos);
  EXPECT_NE(h.out.find("Sweeps: these run flags accept comma lists"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("--fusion --pdl --launch-ahead --weight-layout"), std::string::npos)
      << h.out;
  EXPECT_NE(h.out.find("docs/measurement-switches.md"), std::string::npos) << h.out;
  // The sweep and switch paragraphs are the main run's (and `run`'s); other commands end with the
  // exit codes.
  EXPECT_NE(run_decodebench({"run", "--help"}).out.find("Sweeps:"), std::string::npos);
  EXPECT_NE(run_decodebench({"run", "--help"}).out.find("Measurement switches:"),
            std::string::npos);
  // Every command's help ends with its exit codes, also after a footer of its own (suite,
  // make-gguf: what the file holds).
  for (const std::string cmd :
       {"inspect", "doctor", "bandwidth", "compare", "make-gguf", "suite", "bench-kernels"}) {
    const auto c = run_decodebench({cmd, "--help"});
    EXPECT_EQ(c.exit_code, 0) << cmd;
    EXPECT_EQ(c.out.find("Sweeps:"), std::string::npos) << cmd << ":\n" << c.out;
    EXPECT_EQ(c.out.find("Measurement switches:"), std::string::npos) << cmd << ":\n" << c.out;
    EXPECT_NE(c.out.find("Exit codes"), std::string::npos) << cmd << ":\n" << c.out;
  }
  EXPECT_NE(run_decodebench({"make-gguf", "--help"}).out.find("as BOS/EOS."), std::string::npos);
}

}  // namespace
}  // namespace decodebench::testing
