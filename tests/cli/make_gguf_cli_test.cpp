// `decodebench make-gguf` end to end: the written file decodes the synthetic run's tokens, inspect
// reads its tensor types, errors exit 2 without leaving files; and `--dtype q4_k_m` runs.
#include <gtest/gtest.h>

#include <array>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "tests/support/support.hpp"

namespace decodebench::testing {
namespace {

std::vector<std::string> cat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Tiny shapes whose rows are whole blocks of 256: a qwen2-style one (Q/K/V biases, untied) and a
// llama-style one (no biases, tied embeddings, written with permuted Q/K rows).
const std::vector<std::string> kQwen2Shape = {
    "--preset",   "qwen2.5-7b", "--layers", "3",   "--hidden", "256", "--heads",   "4",
    "--kv-heads", "2",          "--ffn",    "512", "--vocab",  "400", "--context", "256"};
const std::vector<std::string> kLlamaShape = {
    "--preset",  "smollm2-135m", "--layers", "2",     "--hidden", "256",     "--heads",
    "4",         "--kv-heads",   "2",        "--ffn", "512",      "--vocab", "300",
    "--context", "256"};
const std::vector<std::string> kDecode = {"--backend", "cpu",    "--tokens", "8", "--prompt-tokens",
                                          "5",         "--json", "-",        "-q"};

nlohmann::json run_json(const std::vector<std::string>& args) {
  const CommandResult r = run_decodebench(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  try {
    return nlohmann::json::parse(r.out);
  } catch (const nlohmann::json::exception&) {
    ADD_FAILURE() << "not JSON: " << r.out.substr(0, 200) << r.err;
    return nlohmann::json::object();
  }
}

struct Case {
  const char* dtype;
  const std::vector<std::string>* shape;
  const char* arch;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.dtype << " " << c.arch; }

class MakeGgufCli : public ::testing::TestWithParam<Case> {};

TEST_P(MakeGgufCli, FileDecodesTheTokensOfTheSyntheticRun) {
  const Case& p = GetParam();
  TempDir dir;
  const std::string file = (dir / "model.gguf").string();
  const auto made = run_decodebench(
      cat(cat({"make-gguf"}, *p.shape), {"--dtype", p.dtype, "--seed", "3", "--out", file}));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_NE(made.out.find("wrote " + file), std::string::npos) << made.out;
  ASSERT_TRUE(std::filesystem::exists(file));

  const nlohmann::json synthetic =
      run_json(cat(cat(*p.shape, {"--dtype", p.dtype, "--seed", "3"}), kDecode));
  const nlohmann::json gguf =
      run_json(cat({"--model", file, "--seed", "3", "--ignore-eos"}, kDecode));
  ASSERT_TRUE(synthetic.contains("runs") && gguf.contains("runs"));
  EXPECT_EQ(gguf["model"]["architecture"], p.arch);
  EXPECT_EQ(gguf["prompt"]["ids"], synthetic["prompt"]["ids"]) << "same seed, same prompt";
  const nlohmann::json& tokens = synthetic["runs"][0]["results"]["tokens"];
  EXPECT_EQ(tokens.size(), 9u);
  EXPECT_EQ(gguf["runs"][0]["results"]["tokens"], tokens);
  // The file holds every tensor in its storage type: same bytes read per token.
  EXPECT_EQ(gguf["model"]["bytes_per_token"], synthetic["model"]["bytes_per_token"]);
  EXPECT_EQ(gguf["model"]["tensor_types"], synthetic["model"]["tensor_types"]);

  const auto inspected = run_decodebench({"inspect", file, "--json", "-"});
  ASSERT_EQ(inspected.exit_code, 0) << inspected.err;
  const auto doc = nlohmann::json::parse(inspected.out);
  EXPECT_EQ(doc["architecture"]["name"], p.arch);
  EXPECT_EQ(doc["bytes_per_token"], synthetic["model"]["bytes_per_token"]);
}

INSTANTIATE_TEST_SUITE_P(
    Dtypes, MakeGgufCli,
    ::testing::Values(Case{"f32", &kQwen2Shape, "qwen2"}, Case{"q8_0", &kLlamaShape, "llama"},
                      Case{"q4_k_m", &kQwen2Shape, "qwen2"}, Case{"q4_k_m", &kLlamaShape, "llama"}),
    [](const auto& info) { return std::string(info.param.dtype) + "_" + info.param.arch; });

TEST(MakeGgufCli, ErrorsExitTwoAndLeaveNoFile) {
  TempDir dir;
  const std::string file = (dir / "x.gguf").string();
  auto r = run_decodebench(
      {"make-gguf", "--preset", "smollm2-135m", "--dtype", "q4_k_m", "--out", file});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("hidden (576) must be a multiple of 256"), std::string::npos) << r.err;
  r = run_decodebench({"make-gguf", "--preset", "smollm2-135m", "--layers", "1", "--out",
                       (dir / "missing/x.gguf").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
  r = run_decodebench({"make-gguf", "--preset", "smollm2-135m", "--dtype", "int3", "--out", file});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = run_decodebench({"make-gguf", "--preset", "smollm2-135m"});
  EXPECT_EQ(r.exit_code, 2) << "--out is required: " << r.err;
  // GGUF keeps these as f32: 1e-50 would be written as 0 and 1e300 as inf, files no loader takes.
  // Refused with the shape, before any weight is generated, the value as a short number.
  for (const auto& [flag, value, shown] : std::vector<std::array<std::string, 3>>{
           {"--rms-eps", "1e-50", "1e-50"}, {"--rope-theta", "1e300", "1e+300"}}) {
    r = run_decodebench({"make-gguf", "--preset", "smollm2-135m", "--layers", "1", "--vocab", "300",
                         flag, value, "--out", file});
    EXPECT_EQ(r.exit_code, 2) << flag << ": " << r.err;
    const std::string rule = flag == "--rms-eps" ? " must be a normal f32 value in (0, 1) (got "
                                                 : " must be a positive normal f32 value (got ";
    EXPECT_NE(r.err.find(flag.substr(2) + rule + shown + ")"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("generating"), std::string::npos) << r.out;
  }
  // --threads: 0 or a negative count is an error, not "all threads" (leave the flag out for that).
  for (const std::string threads : {"0", "-2", "1025"}) {
    r = run_decodebench({"make-gguf", "--preset", "smollm2-135m", "--layers", "1", "--vocab", "300",
                         "--threads", threads, "--out", file});
    EXPECT_EQ(r.exit_code, 2) << threads << ": " << r.err;
    EXPECT_NE(r.err.find("--threads must be in [1, 1024] (got " + threads + ")"), std::string::npos)
        << r.err;
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

// SIGINT, SIGTERM or SIGHUP while the file is being written ends the process as the signal would
// (no exit code of its own), removes the temporary file (before, every Ctrl-C left one as large as
// what had been written: hundreds of MB here, gigabytes for a 7B model) and keeps the old file.
TEST(MakeGgufCli, SignalsRemoveTheTemporaryFile) {
  TempDir dir;
  const std::filesystem::path file = dir / "x.gguf";
  // As soon as the temporary file exists (it is written for about 0.1 s here: the weights are
  // made first). A run that ends before the signal lands is tried again, up to 5 times.
  const auto temp_exists = [&] {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir.path(), ec)) {
      if (e.path().filename().string().starts_with("x.gguf.tmp.")) return true;
    }
    return false;
  };
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    CommandResult r;
    for (int attempt = 0; attempt < 5 && r.signal == 0; ++attempt) {
      { std::ofstream(file) << "old"; }
      const Interrupt interrupt{temp_exists, sig};
      r = run_decodebench({"make-gguf", "--preset", "qwen2.5-0.5b", "--dtype", "q4_0", "--out",
                           file.string(), "-q"},
                          300, {}, &interrupt);
      ASSERT_TRUE(r.signal != 0 || r.exit_code == 0) << r.err;
    }
    EXPECT_EQ(r.signal, sig) << "exit " << r.exit_code << ", signal sent " << r.interrupted;
    std::vector<std::string> left;
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
      left.push_back(e.path().filename().string());
    }
    EXPECT_EQ(left, std::vector<std::string>{"x.gguf"}) << "signal " << sig;
    EXPECT_EQ(read_file(file), "old") << "signal " << sig;
  }
}

// A character device takes the file like --json's /dev/null: exit 0 with or without -q (before,
// the report's read-back of the written file refused it as "not a regular file" without -q).
TEST(MakeGgufCli, DevNullIsWrittenWithOrWithoutQuiet) {
  const std::vector<std::string> args = {"make-gguf", "--preset", "smollm2-135m", "--layers", "1",
                                         "--vocab",   "300",      "--out",        "/dev/null"};
  auto r = run_decodebench(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote /dev/null (llama, BF16; not a regular file, so not read back)"),
            std::string::npos)
      << r.out;
  r = run_decodebench(cat(args, {"-q"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
}

// The filler vocabulary of a small --vocab lacks most byte tokens: a prompt it cannot encode is
// refused instead of decoding with the missing characters dropped.
TEST(MakeGgufCli, PromptOutsideASmallVocabularyIsRefused) {
  TempDir dir;
  const std::string file = (dir / "v.gguf").string();
  auto r = run_decodebench({"make-gguf", "-q", "--preset", "smollm2-135m", "--layers", "1",
                            "--vocab", "100", "--out", file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_decodebench({"--model", file, "--backend", "cpu", "--prompt", "h\xc3\xa9llo~ZZ",
                       "--tokens", "2", "--warmup", "0"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  // The first byte without a token ('h', 0x68: ids 0-98 are bytes 0-98, id 99 the end token),
  // its piece, and how many byte values have a token.
  EXPECT_NE(r.err.find("the prompt holds byte 0x68 (in 'h\xc3\xa9llo'), which this vocabulary has "
                       "no token for, and it has no unknown token: it has tokens for 99 of the 256 "
                       "byte values"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("`decodebench make-gguf` files hold"), std::string::npos) << r.err;
}

// A vocabulary of two tokens (byte 0 and <|endoftext|>): seed 0's model answers the prompt with
// the end-of-generation token at once. Rather than stop at the next one (an arbitrary stretch),
// the run times every --tokens step, as with --ignore-eos, and warns. Seed 1's model answers
// with token 0: no warning.
TEST(MakeGgufCli, EndOfGenerationRightAfterThePromptIsWarned) {
  TempDir dir;
  for (const std::string seed : {"0", "1"}) {
    SCOPED_TRACE("seed " + seed);
    const std::string file = (dir / ("v2-" + seed + ".gguf")).string();
    auto r = run_decodebench({"make-gguf", "-q", "--preset", "smollm2-135m", "--layers", "1",
                              "--vocab", "2", "--seed", seed, "--out", file});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string json = (dir / "r.json").string();
    r = run_decodebench({"--model", file, "--seed", seed, "--backend", "cpu", "--prompt-ids", "0",
                         "--tokens", "6", "--warmup", "0", "--json", json, "-q"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const std::string warning =
        "the model ends generation right after the prompt (its first token is the "
        "end-of-generation token 1, '<|endoftext|>'): all 6 steps are timed past it";
    EXPECT_EQ(r.err.find(warning) != std::string::npos, seed == "0") << r.err;
    const auto doc = nlohmann::json::parse(read_file(json));
    if (seed == "0") {
      EXPECT_EQ(doc["runs"][0]["results"]["timed_steps"], 6);
      EXPECT_EQ(doc["runs"][0]["results"]["stopped_at_end_of_generation"], false);
    }
  }
}

TEST(MakeGgufCli, InspectDumpWritesTheDequantizedValues) {
  TempDir dir;
  const std::string file = (dir / "m.gguf").string();
  const auto made = run_decodebench(
      cat(cat({"make-gguf"}, kLlamaShape), {"--dtype", "q4_k_m", "--out", file, "-q"}));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_TRUE(made.out.empty()) << made.out;
  const std::string dump = (dir / "v.f32").string();
  const auto r =
      run_decodebench({"inspect", file, "--dump", "blk.1.ffn_down.weight", "--dump-out", dump});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::filesystem::file_size(dump), 256u * 512u * 4u);
  const auto bad = run_decodebench({"inspect", file, "--dump", "nope", "--dump-out", dump});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("no tensor named 'nope'"), std::string::npos) << bad.err;
}

TEST(Q4KMCli, RunReportsTheMix) {
  const nlohmann::json doc = run_json(cat(kQwen2Shape, cat({"--dtype", "q4_k_m"}, kDecode)));
  EXPECT_EQ(doc["config"]["dtype"]["value"], "q4_k_m");
  EXPECT_EQ(doc["model"]["file_type"], "Q4_K_M");
  const nlohmann::json& types = doc["model"]["tensor_types"];
  // 3 layers: attn_v and ffn_down promoted in layer 2 (the last eighth), plus the LM head.
  EXPECT_EQ(types["Q6_K"]["count"], 3);
  EXPECT_EQ(types["Q4_K"]["count"], 1 + 3 * 7 - 2);
  int64_t sum = 0;
  for (const auto& [name, t] : types.items()) sum += t["bytes"].get<int64_t>();
  EXPECT_EQ(sum, doc["model"]["weight_bytes"].get<int64_t>());
}

}  // namespace
}  // namespace decodebench::testing
