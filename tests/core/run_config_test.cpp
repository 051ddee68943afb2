// Resolution of run options: defaults < preset < flags, origins, and the input rules.
#include "core/run_config.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "core/model/preset.hpp"
#include "tests/support/support.hpp"

namespace decodebench {
namespace {

const ResolvedParam& param(const RunConfig& c, const std::string& name) {
  for (const auto& p : c.params) {
    if (p.name == name) return p;
  }
  throw std::runtime_error("no param " + name);
}

ExitCode code_of(const RunOptions& o, std::string* message = nullptr) {
  try {
    resolve_run_config(o, 2);
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.code();
  }
  return ExitCode::kOk;
}

TEST(RunConfig, ShapeFlagsTakeTheRestFromQwen25_7b) {
  RunOptions o;
  o.layers = 28;
  o.vocab = 152064;
  const RunConfig c = resolve_run_config(o, 2);
  EXPECT_EQ(c.preset, "qwen2.5-7b");
  EXPECT_EQ(c.shape.n_layers, 28);
  EXPECT_EQ(c.shape.hidden, 3584);
  EXPECT_EQ(c.shape.n_heads, 28);
  EXPECT_EQ(c.shape.n_kv_heads, 4);
  EXPECT_EQ(c.shape.head_dim, 128);
  EXPECT_EQ(c.shape.ffn, 18944);
  EXPECT_EQ(c.shape.vocab, 152064);
  EXPECT_TRUE(c.shape.qkv_bias);
  EXPECT_FALSE(c.shape.tied_embeddings);
  EXPECT_DOUBLE_EQ(c.shape.rope_theta, 1e6);
  EXPECT_EQ(c.dtype, WeightType::kBF16);
  EXPECT_EQ(param(c, "layers").origin, Origin::kFlag);
  EXPECT_EQ(param(c, "hidden").origin, Origin::kPreset);
  EXPECT_EQ(param(c, "dtype").origin, Origin::kDefault);
}

TEST(RunConfig, PresetThenFlagOverride) {
  RunOptions o;
  o.preset = "smollm2-135m";
  o.layers = 2;
  o.dtype = "f16";
  const RunConfig c = resolve_run_config(o, 2);
  EXPECT_EQ(c.shape.n_layers, 2);
  EXPECT_EQ(c.shape.hidden, 576);
  EXPECT_EQ(c.shape.head_dim, 64);
  EXPECT_TRUE(c.shape.tied_embeddings);
  EXPECT_EQ(c.dtype, WeightType::kF16);
  EXPECT_EQ(param(c, "preset").origin, Origin::kFlag);
  EXPECT_EQ(param(c, "hidden").origin, Origin::kPreset);
}

TEST(RunConfig, EveryShippedPresetResolvesAndCitesItsSource) {
  for (const auto& name : preset_names()) {
    RunOptions o;
    o.preset = name;
    const RunConfig c = resolve_run_config(o, 1);
    EXPECT_GT(c.shape.n_layers, 0) << name;
    const auto j = load_preset(name);
    ASSERT_TRUE(j.contains("source")) << name;
    EXPECT_NE(j["source"].get<std::string>().find("http"), std::string::npos) << name;
  }
  for (const char* required : {"qwen2.5-7b", "qwen2.5-0.5b", "llama-3-8b", "smollm2-135m"}) {
    EXPECT_NO_THROW(load_preset(required)) << required;
  }
}

TEST(RunConfig, HeadDimFollowsChangedHiddenOrHeads) {
  RunOptions o;
  o.hidden = 1024;
  o.heads = 8;
  o.kv_heads = 2;
  EXPECT_EQ(resolve_run_config(o, 1).shape.head_dim, 128);
}

TEST(RunConfig, ShapeRulesAreUsageErrors) {
  std::string msg;
  RunOptions o;
  o.heads = 5;  // 3584 % 5 != 0
  EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage);
  EXPECT_NE(msg.find("divisible by heads"), std::string::npos) << msg;

  o = {};
  o.kv_heads = 3;  // 28 % 3 != 0
  EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage);
  EXPECT_NE(msg.find("divisible by kv-heads"), std::string::npos) << msg;

  for (int64_t bad : {0, -4}) {
    o = {};
    o.layers = bad;
    EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage);
    EXPECT_NE(msg.find("layers must be > 0"), std::string::npos) << msg;
  }
  o = {};
  o.vocab = 1;
  EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage);
  EXPECT_NE(msg.find("vocab must be >= 2"), std::string::npos) << msg;

  o = {};
  o.head_dim = 127;
  EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage);
  EXPECT_NE(msg.find("even"), std::string::npos) << msg;

  o = {};
  o.context_length = 16;
  o.prompt_tokens = 10;
  o.tokens = 10;
  EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage);
  EXPECT_NE(msg.find("context limit"), std::string::npos) << msg;
}

// Every shape dimension is checked for > 0, naming the flag and the value, before any rule
// divides by it or tests divisibility: --hidden -1 read "hidden (-1) must be divisible by heads
// (28)".
TEST(RunConfig, NonPositiveDimensionsAreNamedBeforeDivisibility) {
  const struct {
    std::optional<int64_t> RunOptions::*field;
    int64_t value;
    std::string expect;
  } cases[] = {
      {&RunOptions::hidden, -1, "invalid model shape: --hidden must be > 0 (got -1)"},
      {&RunOptions::hidden, 0, "invalid model shape: --hidden must be > 0 (got 0)"},
      {&RunOptions::heads, -7, "invalid model shape: --heads must be > 0 (got -7)"},
      {&RunOptions::kv_heads, -2, "invalid model shape: --kv-heads must be > 0 (got -2)"},
      {&RunOptions::kv_heads, 0, "invalid model shape: --kv-heads must be > 0 (got 0)"},
      {&RunOptions::head_dim, -128, "invalid model shape: --head-dim must be > 0 (got -128)"},
      {&RunOptions::layers, -3, "invalid model shape: --layers must be > 0 (got -3)"},
      {&RunOptions::ffn, -1, "invalid model shape: --ffn must be > 0 (got -1)"},
      {&RunOptions::context_length, -5, "invalid model shape: --context must be > 0 (got -5)"},
      {&RunOptions::vocab, 0, "invalid model shape: --vocab must be >= 2 (got 0)"},
      {&RunOptions::vocab, 1, "invalid model shape: --vocab must be >= 2 (got 1)"},
  };
  for (const auto& c : cases) {
    RunOptions o;
    o.*c.field = c.value;
    std::string msg;
    EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage);
    EXPECT_EQ(msg, c.expect);
  }
  // Before the divisibility of hidden by heads (3584 % 5 != 0) with a negative --kv-heads.
  RunOptions o;
  o.heads = 5;
  o.kv_heads = -1;
  std::string msg;
  EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage);
  EXPECT_EQ(msg, "invalid model shape: --kv-heads must be > 0 (got -1)");
  // A value from a preset file names the preset key.
  decodebench::testing::TempDir dir;
  nlohmann::json preset = load_preset("smollm2-135m");
  preset["hidden"] = 0;  // negative values are refused as preset types
  const auto path = dir / "bad.json";
  std::ofstream(path) << preset.dump();
  o = {};
  o.preset = path.string();
  EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage);
  EXPECT_EQ(msg, "invalid model shape: preset key 'hidden' must be > 0 (got 0)");
  // The shape's other rules too: the key where the file gave the value, the flag where the
  // command line did.
  preset = load_preset("smollm2-135m");
  preset["rms_eps"] = 2;
  preset["kv_heads"] = 4;  // 9 heads
  std::ofstream(path) << preset.dump();
  o = {};
  o.preset = path.string();
  EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage);
  EXPECT_EQ(msg,
            "invalid model shape: preset key 'heads' (9) must be divisible by preset key "
            "'kv_heads' (4)");
  o.kv_heads = 3;
  EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage);
  EXPECT_EQ(msg,
            "invalid model shape: preset key 'rms_eps' must be a normal f32 value in (0, 1) "
            "(got 2)");
  o.rms_eps = 1.5;
  EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage);
  EXPECT_EQ(msg, "invalid model shape: rms-eps must be a normal f32 value in (0, 1) (got 1.5)");
}

TEST(RunConfig, UnknownPresetListsKnownOnes) {
  RunOptions o;
  o.preset = "gpt-5";
  std::string msg;
  EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage);
  EXPECT_NE(msg.find("unknown preset 'gpt-5'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("qwen2.5-7b"), std::string::npos) << msg;
  EXPECT_NE(msg.find("smollm2-135m"), std::string::npos) << msg;
}

TEST(RunConfig, EnumerationsAndListsAreChecked) {
  std::string msg;
  RunOptions o;
  o.dtype = "int3";
  EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage);
  EXPECT_NE(msg.find("--dtype"), std::string::npos);
  o = {};
  o.backend = "tpu";
  EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage);
  EXPECT_NE(msg.find("auto|cpu|cuda"), std::string::npos) << msg;
  o = {};
  o.prompt_ids = "1,x,3";
  EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage);
  EXPECT_NE(msg.find("element 2"), std::string::npos) << msg;
  o = {};
  o.prompt_ids = "1,152064";
  EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage);
  EXPECT_NE(msg.find("outside the vocabulary"), std::string::npos) << msg;
  o = {};
  o.tokens = 0;
  EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage);
  o = {};
  o.launch_ahead = "maybe";
  EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage);
  EXPECT_NE(msg.find("--launch-ahead"), std::string::npos) << msg;
  o = {};
  EXPECT_TRUE(resolve_run_config(o, 2).launch_ahead) << "on by default";
  o.launch_ahead = "off";
  EXPECT_FALSE(resolve_run_config(o, 2).launch_ahead);
  o = {};
  o.backend = "cpu";
  o.graph = "on";
  EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage);
  EXPECT_NE(msg.find("cuda"), std::string::npos) << msg;
}

TEST(RunConfig, QuantizedDtypeNeedsWholeBlocksPerRow) {
  RunOptions o;
  o.preset = "smollm2-135m";  // hidden 576 = 2.25 blocks of 256
  o.dtype = "q4_k";
  std::string msg;
  EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage);
  EXPECT_NE(msg.find("hidden (576) must be a multiple of 256"), std::string::npos) << msg;
  o.dtype = "q4_1";  // blocks of 32 fit
  EXPECT_EQ(code_of(o), ExitCode::kOk);
  EXPECT_EQ(resolve_run_config(o, 1).dtype, WeightType::kQ4_1);
}

TEST(RunConfig, PresetFilesAreChecked) {
  decodebench::testing::TempDir dir;
  const auto write = [&](const std::string& text) {
    const auto path = dir / "p.json";
    std::ofstream(path) << text;
    return path.string();
  };
  std::string msg;
  RunOptions o;
  o.preset = write(R"({"layerz": 2})");
  EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage);
  EXPECT_NE(msg.find("unknown key 'layerz'"), std::string::npos) << msg;
  o.preset = write(R"({"layers": "two", "hidden": 64, "heads": 4, "ffn": 64, "vocab": 10})");
  EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage);
  EXPECT_NE(msg.find("'layers' has the wrong type"), std::string::npos) << msg;
  o.preset = write(R"({"hidden": 64, "heads": 4, "ffn": 64, "vocab": 10})");
  EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage);
  EXPECT_NE(msg.find("lacks the key 'layers'"), std::string::npos) << msg;
  // A number out of a count's range is named as such, with the value, not as a wrong type.
  for (const auto& [value, shown] : std::vector<std::pair<std::string, std::string>>{
           {"-2", "-2"},
           {"2.5", "2.5"},
           {"1e20", "1e+20"},
           {"64.0", "64.0"},
           {"18446744073709551615", "18446744073709551615"}}) {
    o.preset =
        write(R"({"layers": )" + value + R"(, "hidden": 64, "heads": 4, "ffn": 64, "vocab": 10})");
    EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage) << value;
    EXPECT_NE(msg.find("key 'layers' must be an integer from 0 to 9223372036854775807, written "
                       "without a fraction or exponent (got " +
                       shown + ")"),
              std::string::npos)
        << msg;
  }
  // A key given twice: JSON would keep the last value (30 layers), silently.
  o.preset =
      write(R"({"layers": 2, "hidden": 64, "heads": 4, "ffn": 64, "vocab": 10, "layers": 30})");
  EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage);
  EXPECT_NE(msg.find("key 'layers' appears twice in one object"), std::string::npos) << msg;
  // The architecture is descriptive, but only of the families decodebench runs.
  const std::string shape = R"("layers": 2, "hidden": 64, "heads": 4, "ffn": 64, "vocab": 10})";
  o.preset = write(R"({"architecture": "mamba", )" + shape);
  EXPECT_EQ(code_of(o, &msg), ExitCode::kUsage);
  EXPECT_NE(msg.find("architecture 'mamba' is none of llama, qwen2, qwen3"), std::string::npos)
      << msg;
  o.preset = write(R"({"architecture": "qwen3", )" + shape);
  EXPECT_EQ(code_of(o, &msg), ExitCode::kOk) << msg;
  o.preset = write(R"({"layers": 2, "hidden": 64, "heads": 4, "ffn": 64, "vocab": 10})");
  EXPECT_EQ(code_of(o, &msg), ExitCode::kOk) << msg;
}

TEST(RunConfig, PromptIdsParse) {
  EXPECT_EQ(parse_id_list("1,2,3", "--prompt-ids"), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_THROW(parse_id_list("", "--prompt-ids"), Error);
  EXPECT_THROW(parse_id_list("1,,2", "--prompt-ids"), Error);
  EXPECT_THROW(parse_id_list("-1", "--prompt-ids"), Error);
}

// Size estimates saturate instead of wrapping: the KV cache of 256 sequences × 4096 layers ×
// 2^25 positions × 2^22 KV floats is 2^70 bytes, which wrapped to a number a memory check passed.
TEST(SizeMath, SaturatingProductAndSum) {
  EXPECT_EQ(saturating_product({2, 3, 7}), 42);
  EXPECT_EQ(saturating_product({}), 1);
  EXPECT_EQ(saturating_product({2, 256, 4096, int64_t{1} << 25, int64_t{1} << 22, 4}), INT64_MAX);
  EXPECT_EQ(saturating_product({int64_t{1} << 31, int64_t{1} << 31}), int64_t{1} << 62);
  EXPECT_EQ(saturating_product({int64_t{1} << 32, int64_t{1} << 31}), INT64_MAX);
  EXPECT_EQ(saturating_sum(INT64_MAX, 1), INT64_MAX);
  EXPECT_EQ(saturating_sum(40, 2), 42);
}

}  // namespace
}  // namespace decodebench
