// `decodebench inspect FILE [--json PATH|-]` end to end: reports on fixture models and real
// vocabulary files, JSON output, and exit 2 (never a signal) with the offset for malformed files.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tests/core/gguf_bytes.hpp"
#include "tests/support/support.hpp"

namespace decodebench::testing {
namespace {

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// Writes a fixture with tests/fixtures/write_gguf_fixture.py; false (with a test failure) when it
// could not be written.
bool write_fixture(const std::filesystem::path& out, const std::vector<std::string>& args,
                   nlohmann::json* expected = nullptr) {
  const std::string expected_path = out.string() + ".json";
  std::vector<std::string> argv{
      python(), (source_dir() / "tests" / "fixtures" / "write_gguf_fixture.py").string(),
      out.string(), "--expected", expected_path};
  argv.insert(argv.end(), args.begin(), args.end());
  const CommandResult r = run_command(argv, 120);
  if (r.exit_code != 0) {
    ADD_FAILURE() << "fixture writer failed: " << r.err;
    return false;
  }
  if (expected != nullptr) *expected = nlohmann::json::parse(read_file(expected_path));
  return true;
}

// The tiny llama of the fixture writer: D=64, F=128, V=32, 2 layers, Hq=4, Hkv=2.
// Bytes, by tensor: token_embd Q8_0 {64,32} 2176 (68 per row); output_norm 256; per layer
// attn_norm 256 + attn_q 4352 + attn_k 2176 + attn_v 2176 + attn_output 4352 + ffn_norm 256 +
// ffn_gate 4608 + ffn_up 4608 + ffn_down F16 16384 = 39168; output F16 {64,32} 4096.
constexpr uint64_t kUntiedBytesPerToken = 2 * 39168 + 256 + 4096 + 68;  // 82756
constexpr uint64_t kTiedBytesPerToken = 2 * 39168 + 256 + 68 + 2176;    // 80836

TEST(InspectCli, ModelJsonOnStdout) {
  DB_REQUIRE_PYTHON_GGUF();
  for (const bool tied : {false, true}) {
    SCOPED_TRACE(tied ? "tied" : "untied");
    TempDir dir;
    const auto path = dir / "model.gguf";
    nlohmann::json expected;
    std::vector<std::string> args{"--kind", "model", "--alignment", "64"};
    if (tied) args.push_back("--tied");
    ASSERT_TRUE(write_fixture(path, args, &expected));

    const CommandResult r = run_decodebench({"inspect", path.string(), "--json", "-"}, 60);
    ASSERT_EQ(r.signal, 0);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json doc = nlohmann::json::parse(r.out);  // stdout holds only JSON

    EXPECT_EQ(doc["file"]["path"], path.string());
    EXPECT_EQ(doc["file"]["version"], 3);
    EXPECT_EQ(doc["file"]["alignment"], 64);
    EXPECT_EQ(doc["file"]["size"], std::filesystem::file_size(path));
    EXPECT_EQ(doc["file"]["data_offset"].get<uint64_t>() % 64, 0u);
    EXPECT_EQ(doc["file"]["tensor_count"], tied ? 20 : 21);

    const uint64_t want = tied ? kTiedBytesPerToken : kUntiedBytesPerToken;
    EXPECT_EQ(doc["bytes_per_token"], want);
    EXPECT_EQ(expected["bytes_per_token"], want);  // the Python side agrees

    ASSERT_EQ(doc["tensors"].size(), expected["tensors"].size());
    uint64_t total = 0;
    for (size_t i = 0; i < doc["tensors"].size(); ++i) {
      const auto& t = doc["tensors"][i];
      const auto& e = expected["tensors"][i];
      EXPECT_EQ(t["name"], e["name"]);
      EXPECT_EQ(t["type_id"], e["type_id"]);
      EXPECT_EQ(t["shape"], e["dims"]);
      EXPECT_EQ(t["bytes"], e["bytes"]);
      EXPECT_EQ(t["offset"].get<uint64_t>() % 64, 0u);
      EXPECT_EQ(t["file_offset"].get<uint64_t>(),
                doc["file"]["data_offset"].get<uint64_t>() + t["offset"].get<uint64_t>());
      total += t["bytes"].get<uint64_t>();
    }
    EXPECT_EQ(doc["tensors"][0]["name"], "token_embd.weight");
    EXPECT_EQ(doc["tensors"][0]["type"], "Q8_0");
    EXPECT_EQ(doc["tensors"][0]["shape"], nlohmann::json::array({64, 32}));
    EXPECT_EQ(doc["tensors"][0]["bytes"], 2176);
    EXPECT_EQ(doc["totals"]["tensor_bytes"], total);

    const auto& arch = doc["architecture"];
    EXPECT_EQ(arch["name"], "llama");
    EXPECT_EQ(arch["layers"], 2);
    EXPECT_EQ(arch["hidden"], 64);
    EXPECT_EQ(arch["heads"], 4);
    EXPECT_EQ(arch["kv_heads"], 2);
    EXPECT_EQ(arch["head_dim"], 16);
    EXPECT_EQ(arch["head_dim_source"], "hidden/heads");
    EXPECT_EQ(arch["ffn"], 128);
    EXPECT_EQ(arch["vocab"], 32);
    EXPECT_EQ(arch["vocab_source"], "tokenizer.ggml.tokens");
    EXPECT_EQ(arch["context_length"], 256);
    EXPECT_EQ(arch["rope_freq_base"], 500000.0);
    EXPECT_EQ(arch["rms_eps"], 1e-5);  // FLOAT32 shown as its shortest decimal
    EXPECT_EQ(arch["tied"], tied);

    // Bytes per type: Q8_0 = token_embd + 4 attention matrices x 2 layers.
    std::map<std::string, std::pair<uint64_t, uint64_t>> types;
    for (const auto& u : doc["tensor_types"]) {
      types[u["type"].get<std::string>()] = {u["count"].get<uint64_t>(),
                                             u["bytes"].get<uint64_t>()};
    }
    EXPECT_EQ(types["Q8_0"], (std::pair<uint64_t, uint64_t>{9, 2176 + 2 * (4352 * 2 + 2176 * 2)}));
    EXPECT_EQ(types["F32"], (std::pair<uint64_t, uint64_t>{5, 5 * 256}));
    EXPECT_EQ(types["Q4_0"], (std::pair<uint64_t, uint64_t>{4, 4 * 4608}));
    EXPECT_EQ(types["F16"],
              (std::pair<uint64_t, uint64_t>{tied ? 2 : 3, 2 * 16384 + (tied ? 0 : 4096)}));
    EXPECT_EQ(types.size(), 4u);

    // Metadata: the token array is summarised with its count and first elements.
    bool saw_tokens = false;
    for (const auto& m : doc["metadata"]) {
      if (m["key"] != "tokenizer.ggml.tokens") continue;
      saw_tokens = true;
      EXPECT_EQ(m["type"], "ARRAY");
      EXPECT_EQ(m["elem_type"], "STRING");
      EXPECT_EQ(m["count"], 32);
      EXPECT_EQ(m["values"].size(), 16u);
      EXPECT_EQ(m["values"][0], "tok0");
      EXPECT_EQ(m["truncated"], true);
    }
    EXPECT_TRUE(saw_tokens);
    EXPECT_EQ(doc["model_check"], nlohmann::json({{"status", "runs"},
                                                  {"message", nullptr},
                                                  {"unread_tensors", nlohmann::json::array()},
                                                  {"unread_bytes", 0}}));
  }
}

// Writes the model fixture with one `--set KEY=TYPE:VALUE` to `path` and runs it for two tokens
// on the CPU backend.
CommandResult run_model_with(const std::filesystem::path& path, const std::string& set) {
  EXPECT_TRUE(write_fixture(path, {"--kind", "model", "--normal-weights", "--set", set}));
  return run_decodebench(
      {"--model", path.string(), "--backend", "cpu", "--tokens", "2", "--prompt-tokens", "2"}, 60);
}

// inspect refuses what a run refuses (exit 2, the same message after the report): as broken,
// more layers in llama.block_count than the file has tensors for, a llama.vocab_size that is not
// the embedding's row count; as a file decodebench does not run, an adapter, value_length other
// than key_length, per-layer head counts, no general.architecture (these exited 0). A complete
// model, also with a uniform per-layer head count, is reported as one decodebench runs.
TEST(InspectCli, ModelsARunRefusesAreInvalid) {
  DB_REQUIRE_PYTHON_GGUF();
  TempDir dir;
  const struct {
    std::vector<std::string> args;
    std::string error;         // "" = runs
    bool unsupported = false;  // a file decodebench does not run, not a broken one
  } cases[] = {
      {{}, ""},
      {{"--set", "llama.attention.head_count=u32[]:4,4"}, ""},
      {{"--set", "llama.attention.value_length=u32:32"},
       "attention.value_length (32) differs from key_length (16), which decodebench does not "
       "support",
       true},
      {{"--set", "llama.attention.head_count=u32[]:4,8"},
       "metadata key 'llama.attention.head_count' varies per layer, which decodebench does not "
       "support",
       true},
      {{"--set", "llama.attention.head_count_kv=u32[]:2,1"},
       "metadata key 'llama.attention.head_count_kv' varies per layer, which decodebench does not "
       "support",
       true},
      {{"--drop", "general.architecture"},
       "missing metadata key 'general.architecture' (decodebench runs llama, qwen2, qwen3)",
       true},
      // Not a string: reported (the key noted as ignored), then refused, not a bare error.
      {{"--set", "general.architecture=u32:7"},
       "offset 24: metadata key 'general.architecture' has type UINT32, expected STRING "
       "(decodebench runs llama, qwen2, qwen3)",
       true},
      {{"--block-count", "3"}, "missing tensor 'blk.2.attn_norm.weight'"},
      // A RoPE frequency divided by 0 (or a negative, subnormal or non-finite value): NaN logits.
      {{"--rope-freqs", "0"},
       "rope_freqs.weight[0] is 0 (each divides a RoPE frequency: a positive, normal number)"},
      {{"--rope-freqs", "-2"},
       "rope_freqs.weight[0] is -2 (each divides a RoPE frequency: a positive, normal number)"},
      {{"--rope-freqs", "inf"},
       "rope_freqs.weight[0] is inf (each divides a RoPE frequency: a positive, normal number)"},
      {{"--rope-freqs", "1e-40"},
       "rope_freqs.weight[0] is 1e-40 (each divides a RoPE frequency: a positive, normal number)"},
      {{"--rope-freqs", "8"}, ""},
      // Too low: the second layer's tensors would be left out, a run timing another model.
      {{"--block-count", "1"},
       "tensor 'blk.1.attn_norm.weight' belongs to layer 1, but llama.block_count is 1 (9 "
       "tensor(s) of layers up to 1 past it): block_count is likely wrong"},
      {{"--vocab-size", "300"},
       "llama.vocab_size (300) differs from the 32 rows of token_embd.weight"},
      {{"--general-type", "adapter"},
       "general.type is 'adapter', not 'model' (decodebench runs whole models)",
       true},
      // Heads that kv-heads does not divide: the shape rule, said to come from the file (with
      // key_length, as 7 heads do not divide the hidden size 64 either: that is refused first).
      {{"--heads", "7", "--set", "llama.attention.key_length=u32:16"},
       "invalid model shape: heads (7) must be divisible by kv-heads (2) (values from the file's "
       "metadata and tensor shapes)"},
      // A tensor of a layer that decodebench does not compute: refused, not run as another model.
      {{"--output-bias"},
       "tensors decodebench does not compute: blk.0.attn_output.bias (running without them would "
       "time another model)",
       true},
      {{"--expert-count", "8"},
       "a mixture-of-experts model (llama.expert_count 8), which decodebench does not run",
       true},
  };
  for (const auto& c : cases) {
    const auto path = dir / "m.gguf";
    std::vector<std::string> args{"--kind", "model", "--normal-weights"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    ASSERT_TRUE(write_fixture(path, args));
    const CommandResult r = run_decodebench({"inspect", path.string()}, 60);
    const CommandResult run = run_decodebench(
        {"--model", path.string(), "--backend", "cpu", "--tokens", "2", "--prompt-tokens", "2"},
        60);
    if (c.error.empty()) {
      EXPECT_EQ(r.exit_code, 0) << r.err;
      EXPECT_TRUE(contains(r.out, "decodebench runs this model")) << r.out;
      EXPECT_EQ(run.exit_code, 0) << run.err;
      continue;
    }
    // The whole report, then the reason as the error that ends the command.
    EXPECT_TRUE(contains(r.out, "bytes read per decode token:")) << r.out;
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err, std::string("decodebench: error: ") +
                         (c.unsupported ? "decodebench does not run this file: "
                                        : "cannot run this model: ") +
                         path.string() + ": " + c.error + "\n");
    const CommandResult j = run_decodebench({"inspect", path.string(), "--json", "-"}, 60);
    EXPECT_EQ(j.exit_code, 2) << j.err;
    const auto doc = nlohmann::json::parse(j.out);  // the JSON is written all the same
    EXPECT_EQ(doc["model_check"]["status"], c.unsupported ? "unsupported" : "invalid");
    EXPECT_EQ(doc["model_check"]["message"], path.string() + ": " + c.error);
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_TRUE(contains(run.err, path.string() + ": " + c.error)) << run.err;
  }
}

// The float hyperparameters are FLOAT32 keys (FLOAT64 read too) in range: a UINT64 rms epsilon
// of 1.8e19 ran. A run and inspect refuse (exit 2) an integer type, an rms epsilon outside (0, 1)
// or not finite, a rope freq_base that is not finite and > 0, a rope scaling factor that is not
// finite and >= 0; each message names the key and the value (or its type).
TEST(InspectCli, FloatKeysAreCheckedForTypeAndRange) {
  DB_REQUIRE_PYTHON_GGUF();
  TempDir dir;
  const std::string eps = "llama.attention.layer_norm_rms_epsilon";
  const std::string integer_type =
      "' has type {}, expected FLOAT32 or FLOAT64 (as llama.cpp writes and reads it; decodebench "
      "refuses integer types for float keys)";
  const std::string eps_rule = ", which must be finite and in (0, 1) (models use 1e-6 to 1e-5)";
  const struct {
    std::string set;
    std::string error;  // "" = runs
  } cases[] = {
      {eps + "=u64:18446744073709551615", "metadata key '" + eps + "' has type UINT64"},
      {eps + "=f32:1.5", "metadata key '" + eps + "' is 1.5" + eps_rule},
      {eps + "=f32:1", "metadata key '" + eps + "' is 1" + eps_rule},
      {eps + "=f32:0", "metadata key '" + eps + "' is 0" + eps_rule},
      {eps + "=f32:-1e-05", "metadata key '" + eps + "' is -1e-05" + eps_rule},
      {eps + "=f32:nan", "metadata key '" + eps + "' is nan" + eps_rule},
      {eps + "=f64:1e-05", ""},
      {"llama.rope.freq_base=f32:-10000",
       "metadata key 'llama.rope.freq_base' is -10000, which must be finite and > 0"},
      {"llama.rope.freq_base=f32:inf",
       "metadata key 'llama.rope.freq_base' is inf, which must be finite and > 0"},
      {"llama.rope.freq_base=f32:0",
       "metadata key 'llama.rope.freq_base' is 0, which must be finite and > 0"},
      {"llama.rope.freq_base=u32:10000", "metadata key 'llama.rope.freq_base' has type UINT32"},
      {"llama.rope.scaling.factor=f32:nan",
       "metadata key 'llama.rope.scaling.factor' is nan, which must be finite and >= 0 (0 or 1: "
       "no scaling)"},
      {"llama.rope.scaling.factor=f32:1", ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.set);
    const auto path = dir / "m.gguf";
    const CommandResult run = run_model_with(path, c.set);
    const CommandResult r = run_decodebench({"inspect", path.string(), "--json", "-"}, 60);
    if (c.error.empty()) {
      EXPECT_EQ(run.exit_code, 0) << run.err;
      EXPECT_EQ(r.exit_code, 0) << r.err;
      continue;
    }
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_TRUE(contains(run.err, path.string() + ": ")) << run.err;
    EXPECT_TRUE(contains(run.err, c.error)) << run.err;
    if (contains(c.error, "has type")) {
      const std::string type = c.error.substr(c.error.rfind(' ') + 1);
      EXPECT_TRUE(contains(run.err, fmt::format(fmt::runtime(integer_type), type))) << run.err;
    }
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(contains(r.err, "decodebench: error: cannot run this model: ")) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["model_check"]["status"], "invalid");
  }
}

// A tensor no layer reads (unused.weight, outside every layer) is named, with its bytes, which the
// bytes per decode token of the report count and a run does not.
TEST(InspectCli, TensorsARunDoesNotReadAreNamed) {
  DB_REQUIRE_PYTHON_GGUF();
  TempDir dir;
  const auto path = dir / "m.gguf";
  ASSERT_TRUE(write_fixture(path, {"--kind", "model", "--normal-weights", "--extra-tensor"}));
  const CommandResult r = run_decodebench({"inspect", path.string()}, 60);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out,
                       "note: a run reads none of 1 tensor(s), 4.4 kB: "
                       "unused.weight (the bytes per decode token above count them)"))
      << r.out;
  const CommandResult j = run_decodebench({"inspect", path.string(), "--json", "-"}, 60);
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["model_check"]["unread_tensors"], nlohmann::json::array({"unused.weight"}));
  EXPECT_EQ(doc["model_check"]["unread_bytes"], 64 * 2 * 34);
}

// Strings of the file reach messages escaped and cut: a newline in the architecture, the RoPE
// scaling type or the tokenizer model would otherwise print a line of the file's own (one that can
// pass for an error of decodebench's), a long one flood the terminal.
TEST(InspectCli, FileStringsInMessagesAreEscapedAndCut) {
  DB_REQUIRE_PYTHON_GGUF();
  TempDir dir;
  const std::string forged = "x\ndecodebench: error: forged";
  const struct {
    std::string set;
    std::string shown;
  } cases[] = {
      {"general.architecture=str:" + forged,
       "unsupported architecture 'x\\ndecodebench: error: forged'"},
      {"llama.rope.scaling.type=str:" + forged,
       "RoPE scaling 'x\\ndecodebench: error: forged' with factor"},
      {"tokenizer.ggml.model=str:" + forged + std::string(300, 'p'),
       "tokenizer.ggml.model = \"x\\ndecodebench: error: forged" + std::string(172, 'p') +
           "... (328 bytes)\" is not supported"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.set);
    const auto path = dir / "m.gguf";
    const CommandResult run = run_model_with(path, c.set);
    EXPECT_EQ(run.exit_code, 2) << run.err;
    EXPECT_TRUE(contains(run.err, c.shown)) << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  }
}

// Weights whose f16 scales include NaN and inf (the fixture's random bytes) give NaN logits: the
// run warns (token 0 at every step means nothing); finite weights do not.
TEST(InspectCli, NonFiniteLogitsAreWarned) {
  DB_REQUIRE_PYTHON_GGUF();
  TempDir dir;
  for (const bool finite : {false, true}) {
    SCOPED_TRACE(finite ? "finite" : "random bytes");
    const auto path = dir / "m.gguf";
    // Token 0 ends generation: argmax of all-NaN logits picks it, which is no answer to warn of.
    std::vector<std::string> args{"--kind", "model", "--eos-id", "0"};
    if (finite) args.push_back("--normal-weights");
    ASSERT_TRUE(write_fixture(path, args));
    const auto json = dir / "r.json";
    const CommandResult r =
        run_decodebench({"--model", path.string(), "--backend", "cpu", "--tokens", "3",
                         "--prompt-tokens", "2", "--json", json.string()},
                        60);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const std::string warning =
        "the logits after the prompt hold 32 of 32 values that are NaN or inf";
    EXPECT_EQ(contains(r.err, warning), !finite) << r.err;
    if (!finite) {
      EXPECT_FALSE(contains(r.err, "ends generation right after the prompt")) << r.err;
      const auto d = nlohmann::json::parse(read_file(json));
      EXPECT_EQ(d["runs"][0]["results"]["timed_steps"], 3);  // every step, as --ignore-eos
    }
    const auto doc = nlohmann::json::parse(read_file(json));
    bool in_json = false;
    for (const auto& w : doc["warnings"]) in_json = in_json || contains(w, warning);
    EXPECT_EQ(in_json, !finite) << doc["warnings"];
  }
}

// A GGUF string is bytes: an architecture name that is not UTF-8 reaches the terminal escaped
// (run's error, inspect's report line) and the JSON as valid UTF-8.
TEST(InspectCli, ArchitectureNamesThatAreNotUtf8AreEscaped) {
  TempDir dir;
  FileSpec spec = base_spec();
  spec.kvs[0] = {"general.architecture", v_string("llam\xff")};
  const auto path = dir / "odd.gguf";
  build_gguf(spec).write(path);
  const CommandResult run = run_decodebench({"--model", path.string(), "--tokens", "2"}, 60);
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_TRUE(contains(run.err, "unsupported architecture 'llam\\xff'")) << run.err;
  EXPECT_FALSE(contains(run.err, "\xff")) << run.err;
  const CommandResult r = run_decodebench({"inspect", path.string(), "--json", "-"}, 60);
  // Another architecture is a file decodebench does not run, not a broken model: inspected with
  // exit 0 (a run refuses it).
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["model_check"]["status"], "unsupported");
  EXPECT_EQ(
      doc["model_check"]["message"],
      path.string() + ": unsupported architecture 'llam\\xff' (supported: llama, qwen2, qwen3)");
}

TEST(InspectCli, TerminalReportAndJsonFile) {
  DB_REQUIRE_PYTHON_GGUF();
  TempDir dir;
  const auto path = dir / "types.gguf";
  ASSERT_TRUE(write_fixture(path, {"--kind", "types", "--version", "2"}));
  const auto json_path = dir / "out" / "inspect.json";
  std::filesystem::create_directory(dir / "out");
  const CommandResult r =
      run_decodebench({"inspect", path.string(), "--json", json_path.string()}, 60);
  ASSERT_EQ(r.signal, 0);
  // A llama file without the llama keys: reported and written, then refused as a model (exit 2).
  ASSERT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, "decodebench: wrote " + json_path.string() +  // the file, named
                       "\ndecodebench: error: cannot run this model: " + path.string() +
                       ": missing metadata key 'llama.block_count'\n");
  EXPECT_TRUE(contains(r.out, "bytes read per decode token:")) << r.out;  // the whole report
  EXPECT_TRUE(contains(r.out, "GGUF v2")) << r.out;
  EXPECT_TRUE(contains(r.out, "10 tensors")) << r.out;
  // Long arrays: type, count and the first few elements.
  EXPECT_TRUE(contains(r.out, "ARRAY[INT32]")) << r.out;
  EXPECT_TRUE(contains(r.out, "count 1000 [-500, -497, -494, -491, -488, -485, -482, -479, ...]"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "test.string_nul")) << r.out;
  EXPECT_TRUE(contains(r.out, "\"a\\x00b\"")) << r.out;  // control bytes escaped
  EXPECT_TRUE(contains(r.out, "test.f32")) << r.out;
  EXPECT_TRUE(contains(r.out, "0.1")) << r.out;
  EXPECT_TRUE(contains(r.out, "t.q4_k")) << r.out;
  EXPECT_TRUE(contains(r.out, "[512, 1]")) << r.out;
  EXPECT_TRUE(contains(r.out, "Q6_K")) << r.out;
  EXPECT_TRUE(contains(r.out, "BF16")) << r.out;
  EXPECT_TRUE(contains(r.out, "bytes read per decode token:")) << r.out;

  const nlohmann::json doc = nlohmann::json::parse(read_file(json_path));
  EXPECT_EQ(doc["file"]["version"], 2);
  EXPECT_EQ(doc["tensors"].size(), 10u);
  // No token_embd.weight: every tensor counts.
  EXPECT_EQ(doc["bytes_per_token"], doc["totals"]["tensor_bytes"]);
  EXPECT_EQ(doc["totals"]["tensor_bytes"], 48 + 20 + 48 + 136 + 288 + 420 + 54 + 28 + 96 + 24);
  EXPECT_TRUE(doc["architecture"]["tied"].is_null());
  EXPECT_EQ(doc["model_check"]["status"], "invalid");
  EXPECT_EQ(doc["model_check"]["message"],
            path.string() + ": missing metadata key 'llama.block_count'");
  bool saw_u64 = false;
  for (const auto& m : doc["metadata"]) {
    if (m["key"] == "test.u64") {
      saw_u64 = true;
      EXPECT_EQ(m["value"].get<uint64_t>(), std::numeric_limits<uint64_t>::max());
      EXPECT_EQ(m["type"], "UINT64");
    }
    if (m["key"] == "test.string") {
      EXPECT_EQ(m["value"], "h\xC3\xA9llo w\xC3\xB6rld \xE2\x96\x81 \xF0\x9F\x99\x82");
    }
    if (m["key"] == "test.f32") {
      EXPECT_EQ(m["value"], 0.1);
    }
    if (m["key"] == "test.f64") {
      EXPECT_EQ(m["value"], 3.141592653589793);
    }
    if (m["key"] == "test.arr_f32") {
      EXPECT_EQ(m["values"], nlohmann::json::array({1.5, -2.25, 0.1}));
    }
    if (m["key"] == "test.arr_long") {
      EXPECT_EQ(m["count"], 1000);
      EXPECT_EQ(m["values"][1], -497);
    }
  }
  EXPECT_TRUE(saw_u64);
  // Each tensor's line ends with its bytes and its offset from the file's start.
  EXPECT_TRUE(contains(r.out, "bytes     file offset\n")) << r.out;
  for (const auto& t : doc["tensors"]) {
    const uint64_t at = t["file_offset"];
    EXPECT_GT(at, t["offset"].get<uint64_t>());  // past the header: not the data-section offset
    const auto column = [](uint64_t v) {         // right-aligned in 14 characters
      const std::string s = std::to_string(v);
      return std::string(14 - s.size(), ' ') + s;
    };
    EXPECT_TRUE(contains(r.out, column(t["bytes"].get<uint64_t>()) + "  " + column(at) + "\n"))
        << t["name"] << "\n"
        << r.out;
  }
}

// A file without tensors (a tokenizer's vocabulary) is inspected with exit 0, its report saying
// that decodebench does not run it (a run refuses it, exit 2).
TEST(InspectCli, VocabularyOnlyFiles) {
  const auto folder = source_dir() / "tests" / "data" / "tokenizer";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    if (entry.path().extension() != ".gguf") continue;
    ++files;
    SCOPED_TRACE(entry.path().filename().string());
    const CommandResult text = run_decodebench({"inspect", entry.path().string()}, 60);
    ASSERT_EQ(text.signal, 0);
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_TRUE(contains(text.out, "decodebench does not run this file: " + entry.path().string() +
                                       ": no tensors (a vocabulary-only file)\n"))
        << text.out;
    EXPECT_TRUE(contains(text.out, "tokenizer.ggml.tokens")) << text.out;
    EXPECT_TRUE(contains(text.out, "0 tensors")) << text.out;
    EXPECT_TRUE(contains(text.out, "bytes read per decode token: 0")) << text.out;

    const CommandResult json =
        run_decodebench({"inspect", entry.path().string(), "--json", "-"}, 60);
    ASSERT_EQ(json.exit_code, 0) << json.err;
    const nlohmann::json doc = nlohmann::json::parse(json.out);
    EXPECT_EQ(doc["file"]["tensor_count"], 0);
    EXPECT_TRUE(doc["tensors"].empty());
    EXPECT_EQ(doc["bytes_per_token"], 0);
    EXPECT_GT(doc["architecture"]["vocab"].get<uint64_t>(), 1000u);
    uint64_t tokens = 0;
    for (const auto& m : doc["metadata"]) {
      if (m["key"] == "tokenizer.ggml.tokens") tokens = m["count"].get<uint64_t>();
    }
    EXPECT_EQ(doc["architecture"]["vocab"].get<uint64_t>(), tokens);
  }
  EXPECT_EQ(files, 4);
}

TEST(InspectCli, MalformedFilesExitTwoWithTheOffset) {
  TempDir dir;
  for (const MalformedCase& c : malformed_cases()) {
    const auto path = dir / (c.name + ".gguf");
    GgufBytes b;
    b.data = c.bytes;
    b.write(path);
    const CommandResult r = run_decodebench({"inspect", path.string()}, 60);
    EXPECT_EQ(r.signal, 0) << c.name;
    EXPECT_EQ(r.exit_code, 2) << c.name << ": " << r.err;
    EXPECT_TRUE(contains(r.err, path.string() + ": offset ")) << c.name << ": " << r.err;
    EXPECT_TRUE(contains(r.err, c.expect)) << c.name << ": " << r.err;
    EXPECT_EQ(r.out, "") << c.name;
  }
}

TEST(InspectCli, TruncatedFilesExitTwo) {
  TempDir dir;
  const GgufBytes b = build_gguf(base_spec());
  // Every section boundary (and one byte either side), then every 5th offset.
  std::set<uint64_t> cuts;
  for (const auto& [name, at] : b.marks) {
    for (int64_t d : {-1, 0, 1}) {
      const int64_t n = static_cast<int64_t>(at) + d;
      if (n >= 0 && n < static_cast<int64_t>(b.data.size())) cuts.insert(static_cast<uint64_t>(n));
    }
  }
  for (uint64_t n = 0; n < b.data.size(); n += 5) cuts.insert(n);
  EXPECT_GT(cuts.size(), 100u);
  const auto path = dir / "cut.gguf";
  for (uint64_t n : cuts) {
    GgufBytes cut;
    cut.data = b.data.substr(0, n);
    cut.write(path);
    const CommandResult r = run_decodebench({"inspect", path.string(), "--json", "-"}, 60);
    EXPECT_EQ(r.signal, 0) << n;
    EXPECT_EQ(r.exit_code, 2) << "prefix of " << n << " bytes: " << r.err;
    EXPECT_TRUE(contains(r.err, ": offset ")) << n << ": " << r.err;
    EXPECT_EQ(r.out, "") << n;
  }
  // The whole file reads: reported in full, then refused as a model (a llama file without the
  // llama keys), not as a malformed file.
  b.write(path);
  const CommandResult ok = run_decodebench({"inspect", path.string()}, 60);
  EXPECT_EQ(ok.exit_code, 2) << ok.err;
  EXPECT_TRUE(contains(ok.out, "Q4_K")) << ok.out;
  EXPECT_TRUE(contains(ok.err, "cannot run this model: ")) << ok.err;
  EXPECT_FALSE(contains(ok.err, ": offset ")) << ok.err;
}

// Sizes in the decimal units of the run report (kB, MB, GB), never KiB/MiB/GiB: the fixture's
// 82,756 bytes per token were "80.82 KiB" before.
TEST(InspectCli, SizesInDecimalUnitsAsTheRunReport) {
  DB_REQUIRE_PYTHON_GGUF();
  TempDir dir;
  const auto path = dir / "model.gguf";
  ASSERT_TRUE(write_fixture(path, {"--kind", "model", "--alignment", "64"}));
  const CommandResult r = run_decodebench({"inspect", path.string()}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "bytes read per decode token: 82756 (82.8 kB)\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "  F32              5              1280  (1.3 kB)\n")) << r.out;
  EXPECT_TRUE(
      contains(r.out, "  total           21             84864  (84.9 kB), 78144 parameters"))
      << r.out;
  EXPECT_FALSE(contains(r.out, "iB")) << r.out;

  // Megabytes: a 1-layer f32 model written by make-gguf (6.5 MB of weights).
  const auto big = dir / "f32.gguf";
  const CommandResult made =
      run_decodebench({"make-gguf", "-q", "--preset", "smollm2-135m", "--layers", "1", "--vocab",
                       "512", "--ffn", "256", "--dtype", "f32", "--out", big.string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const CommandResult text = run_decodebench({"inspect", big.string()}, 60);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  const uint64_t size = std::filesystem::file_size(big);
  char mb[32];
  std::snprintf(mb, sizeof mb, "%.1f MB", static_cast<double>(size) / 1e6);
  EXPECT_TRUE(contains(text.out, std::to_string(size) + " bytes (" + mb + ")")) << text.out;
  EXPECT_GT(size, 6'000'000u);
  EXPECT_FALSE(contains(text.out, "iB")) << text.out;
}

// --dump of a name the file lacks: exit 2 with the nearest names (edit distance), or all of them
// when the file has few; a written --dump-out file is named on stderr with its size, and stdout
// describes the tensor.
TEST(InspectCli, DumpNamesTheNearestTensorsAndTheFileWritten) {
  DB_REQUIRE_PYTHON_GGUF();
  TempDir dir;
  const auto path = dir / "model.gguf";
  ASSERT_TRUE(write_fixture(path, {"--kind", "model", "--alignment", "64"}));
  const std::string dump = (dir / "v.f32").string();
  const CommandResult typo = run_decodebench(
      {"inspect", path.string(), "--dump", "blk.0.attn_q.weigth", "--dump-out", dump}, 60);
  EXPECT_EQ(typo.exit_code, 2) << typo.err;
  EXPECT_EQ(typo.err, "decodebench: error: " + path.string() +
                          ": no tensor named 'blk.0.attn_q.weigth'; nearest: "
                          "blk.0.attn_q.weight, blk.0.attn_k.weight, blk.0.attn_v.weight, "
                          "blk.1.attn_q.weight, blk.1.attn_k.weight ('decodebench inspect' lists "
                          "all 21)\n");
  EXPECT_EQ(typo.out, "");
  EXPECT_FALSE(std::filesystem::exists(dump));

  // A file of 3 tensors: all are listed.
  const auto small = dir / "small.gguf";
  build_gguf(base_spec()).write(small);
  const CommandResult few =
      run_decodebench({"inspect", small.string(), "--dump", "d", "--dump-out", dump}, 60);
  EXPECT_EQ(few.exit_code, 2) << few.err;
  EXPECT_TRUE(contains(few.err, "no tensor named 'd'; the file's 3 tensors: a, b, c\n")) << few.err;

  // output_norm.weight: 64 F32 values.
  const CommandResult ok = run_decodebench(
      {"inspect", path.string(), "--dump", "output_norm.weight", "--dump-out", dump}, 60);
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(std::filesystem::file_size(dump), 256u);
  EXPECT_EQ(ok.err, "decodebench: wrote " + dump + " (256 bytes, 64 f32 values)\n");
  // The report is the dumped tensor's line, not the whole file's.
  EXPECT_EQ(ok.out,
            "output_norm.weight: F32, ne 64, 64 values dequantized to f32 (rows of 64; the whole "
            "file's report: leave out --dump)\n");
  // With --dump-out - the values are stdout, and nothing is announced.
  const CommandResult piped = run_decodebench(
      {"inspect", path.string(), "--dump", "output_norm.weight", "--dump-out", "-"}, 60);
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.out.size(), 256u);
  EXPECT_EQ(piped.err, "");
}

TEST(InspectCli, UsageErrors) {
  TempDir dir;
  const CommandResult missing = run_decodebench({"inspect", (dir / "absent.gguf").string()}, 60);
  EXPECT_EQ(missing.signal, 0);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_TRUE(contains(missing.err, "absent.gguf: cannot open")) << missing.err;

  const CommandResult no_file = run_decodebench({"inspect"}, 60);
  EXPECT_EQ(no_file.exit_code, 2) << no_file.err;

  const auto path = dir / "ok.gguf";
  build_gguf(base_spec()).write(path);
  const CommandResult bad_dest = run_decodebench(
      {"inspect", path.string(), "--json", (dir / "no" / "such" / "out.json").string()}, 60);
  EXPECT_EQ(bad_dest.exit_code, 2);
  EXPECT_TRUE(contains(bad_dest.err, "does not exist")) << bad_dest.err;

  const CommandResult scan_and_dump =
      run_decodebench({"inspect", path.string(), "--scan-values", "--dump", "a", "--dump-out",
                       (dir / "a.f32").string()},
                      60);
  EXPECT_EQ(scan_and_dump.exit_code, 2);
  EXPECT_TRUE(contains(scan_and_dump.err, "--scan-values reports on the whole file"))
      << scan_and_dump.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "a.f32"));
}

// --scan-values dequantizes every tensor: its NaN and inf counts, finite ranges and first
// non-finite positions equal those of the gguf package's dequantizer (the fixture writer's
// --expected), on the tiny model (Q8_0, Q4_0, F16, F32) and on the types file (BF16, Q4_K, Q6_K,
// 3-D and 4-D tensors; its I32 tensor is listed as not scanned, with its type). Random weight
// bytes (NaN scales) exit 2 naming the first such tensor, after the report and JSON are written;
// finite weights pass (the types file exits 2 as a model a run refuses).
TEST(InspectCli, ScanValuesAgreesWithTheGgufPackage) {
  DB_REQUIRE_PYTHON_GGUF();
  TempDir dir;
  const struct {
    std::vector<std::string> args;
    const char* what;
    bool finite;
  } cases[] = {{{"--kind", "model"}, "random bytes", false},
               {{"--kind", "model", "--normal-weights"}, "finite", true},
               {{"--kind", "types"}, "types", true}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const bool types = std::string(c.what) == "types";
    const auto path = dir / "m.gguf";
    nlohmann::json expected;
    ASSERT_TRUE(write_fixture(path, c.args, &expected));
    const auto json = dir / "scan.json";
    const CommandResult r =
        run_decodebench({"inspect", path.string(), "--scan-values", "--json", json.string()}, 120);
    ASSERT_EQ(r.signal, 0);
    EXPECT_EQ(r.exit_code, c.finite && !types ? 0 : 2) << r.err;
    const nlohmann::json values = nlohmann::json::parse(read_file(json))["values"];
    std::map<std::string, nlohmann::json> scanned;
    for (const auto& t : values["tensors"]) scanned[t["name"]] = t;
    int64_t bad = 0;
    size_t not_scanned = 0;
    std::string first_bad;
    for (const nlohmann::json& want : expected["tensors"]) {
      const std::string name = want["name"];
      SCOPED_TRACE(name);
      if (!want.contains("nan")) {  // an integer type: not scanned
        ASSERT_LT(not_scanned, values["skipped"].size());
        EXPECT_EQ(values["skipped"][not_scanned]["name"], name);
        EXPECT_EQ(values["skipped"][not_scanned]["type"], "I32");
        EXPECT_TRUE(contains(r.out, "  " + name + ": I32, not scanned\n")) << r.out;
        ++not_scanned;
        continue;
      }
      ASSERT_TRUE(scanned.contains(name));
      const nlohmann::json& got = scanned[name];
      EXPECT_EQ(got["nan"], want["nan"]);
      EXPECT_EQ(got["inf"], want["inf"]);
      const int64_t first = want["first_nonfinite"];
      const int64_t row_length = want["dims"][0];
      if (first < 0) {
        EXPECT_TRUE(got["first_nonfinite"].is_null());
      } else {
        EXPECT_EQ(got["first_nonfinite"]["row"], first / row_length);
        EXPECT_EQ(got["first_nonfinite"]["column"], first % row_length);
        if (bad++ == 0) {
          first_bad = "the first '" + name + "' at row " + std::to_string(first / row_length) +
                      ", column " + std::to_string(first % row_length);
        }
      }
      for (const char* end : {"min", "max"}) {
        if (want[end].is_null()) {  // no finite value
          EXPECT_TRUE(got[end].is_null()) << end;
          continue;
        }
        const double w = want[end];
        EXPECT_NEAR(got[end].get<double>(), w, 1e-6 * std::max(1.0, std::abs(w))) << end;
      }
    }
    EXPECT_EQ(values["tensors"].size() + values["skipped"].size(), expected["tensors"].size());
    EXPECT_EQ(values["skipped"].size(), not_scanned);
    EXPECT_EQ(not_scanned, types ? 1u : 0u);
    EXPECT_EQ(values["nonfinite_tensors"], bad);
    EXPECT_EQ(bad > 0, !c.finite);
    if (c.finite) {
      EXPECT_TRUE(
          contains(r.out, "values: " + std::to_string(values["tensors"].size()) + " tensor(s), "))
          << r.out;
      EXPECT_TRUE(contains(r.out, "dequantized, all finite")) << r.out;
    } else {
      EXPECT_TRUE(contains(r.out, "values: " + std::to_string(bad) + " of ")) << r.out;
      EXPECT_TRUE(contains(r.err, std::to_string(bad) + " tensor(s) hold NaN or inf weights, " +
                                      first_bad + " (a run reads it: its logits can turn NaN)"))
          << r.err;
    }
  }
}

// NaN in a tensor a run does not read (unused.weight, outside every layer) still exits 2, said to
// be unread; in a model a run refuses, the refusal comes first and names the NaN too.
TEST(InspectCli, ScanValuesSaysWhetherARunReadsTheTensor) {
  DB_REQUIRE_PYTHON_GGUF();
  TempDir dir;
  const auto path = dir / "m.gguf";
  ASSERT_TRUE(write_fixture(path, {"--kind", "model", "--normal-weights", "--extra-tensor"}));
  // The first Q8_0 block of unused.weight gets the f16 scale NaN (0x7E00): its 32 values.
  const CommandResult listing = run_decodebench({"inspect", path.string(), "--json", "-"}, 60);
  ASSERT_EQ(listing.exit_code, 0) << listing.err;
  int64_t at = -1;
  const nlohmann::json doc = nlohmann::json::parse(listing.out);
  for (const auto& t : doc["tensors"]) {
    if (t["name"] == "unused.weight") at = t["file_offset"];
  }
  ASSERT_GE(at, 0);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(at);
    f.write("\x00\x7E", 2);
    ASSERT_TRUE(f.good());
  }
  const CommandResult r = run_decodebench({"inspect", path.string(), "--scan-values"}, 60);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(contains(r.out,
                       "  unused.weight: 32 NaN, 0 inf of 4096 values (first at "
                       "row 0, column 0)"))
      << r.out;
  EXPECT_TRUE(contains(r.err,
                       "1 tensor(s) hold NaN or inf weights, the first "
                       "'unused.weight' at row 0, column 0 (a tensor a run does "
                       "not read)"))
      << r.err;

  // Random weight bytes (NaN scales) in a model a run refuses (block_count 3, tensors for 2).
  ASSERT_TRUE(write_fixture(path, {"--kind", "model", "--block-count", "3"}));
  const CommandResult invalid = run_decodebench({"inspect", path.string(), "--scan-values"}, 60);
  EXPECT_EQ(invalid.exit_code, 2) << invalid.err;
  EXPECT_TRUE(contains(invalid.err, "cannot run this model: " + path.string() +
                                        ": missing tensor 'blk.2.attn_norm.weight'; also 13 "
                                        "tensor(s) hold NaN or inf weights, the first "
                                        "'token_embd.weight' at row 7, column 0"))
      << invalid.err;
}

}  // namespace
}  // namespace decodebench::testing
