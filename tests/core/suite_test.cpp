// Comma sweeps (argv expansion) and suite files: expansion order, what is left alone, errors.
#include "core/suite/suite.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "tests/support/support.hpp"

namespace decodebench {
namespace {

using Args = std::vector<std::string>;

template <typename Fn>
void expect_usage_error(Fn fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    for (const auto& p : parts) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what() << " lacks " << p;
    }
  }
}

TEST(Sweep, CartesianProductFirstFlagOutermost) {
  const Args args = {"--preset", "smollm2-135m", "--layers", "2,4",
                     "--json",   "out.json",     "--dtype",  "f16,bf16"};
  const auto points = expand_sweep(args);
  ASSERT_EQ(points.size(), 4u);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"2", "f16"}, {"2", "bf16"}, {"4", "f16"}, {"4", "bf16"}};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(points[i].args, (Args{"--preset", "smollm2-135m", "--layers", expected[i].first,
                                    "--json", "out.json", "--dtype", expected[i].second}))
        << i;
    ASSERT_EQ(points[i].values.size(), 2u);
    EXPECT_EQ(points[i].values[0], std::make_pair(std::string("layers"), expected[i].first));
    EXPECT_EQ(points[i].values[1], std::make_pair(std::string("dtype"), expected[i].second));
  }
  EXPECT_EQ(sweep_label(points[1].values), "layers=2 dtype=bf16");
}

TEST(Sweep, ThreeAxesAndTheInlineForm) {
  const Args args = {"run", "--tokens=8,16", "--graph", "on", "--seed", "1,2,3"};
  const auto points = expand_sweep(args);
  ASSERT_EQ(points.size(), 6u);
  EXPECT_EQ(points[0].args, (Args{"run", "--tokens=8", "--graph", "on", "--seed", "1"}));
  EXPECT_EQ(points[2].args, (Args{"run", "--tokens=8", "--graph", "on", "--seed", "3"}));
  EXPECT_EQ(points[3].args, (Args{"run", "--tokens=16", "--graph", "on", "--seed", "1"}));
  EXPECT_EQ(points[5].args, (Args{"run", "--tokens=16", "--graph", "on", "--seed", "3"}));
  EXPECT_EQ(sweep_label(points[4].values), "tokens=16 seed=2");
}

// A run takes a repeated flag's last value: a list next to another occurrence of its flag would
// label runs with values they did not use (--layers 2,4 --layers 3 ran layers 3 twice).
TEST(Sweep, SweptFlagGivenTwiceIsAUsageError) {
  for (const Args& args : std::vector<Args>{{"--layers", "2,4", "--layers", "3"},
                                            {"--layers", "3", "--layers=2,4"},
                                            {"--layers=2,4", "--tokens", "8", "--layers", "1,5"}}) {
    expect_usage_error([&] { expand_sweep(args); },
                       {"--layers is given 2 times",
                        "give a swept flag once, with all its values (--layers A,B,C)"});
  }
  // Repeats without a list are CLI11's business (last value wins), and other flags may repeat.
  EXPECT_EQ(expand_sweep({"--layers", "2", "--layers", "3"}).size(), 1u);
  EXPECT_EQ(expand_sweep({"--layers", "2,4", "--dtype", "f16", "--dtype", "bf16"}).size(), 2u);
}

TEST(Sweep, CommaValuesOfOtherFlagsAreLeftAlone) {
  for (const Args& args : std::vector<Args>{{"--prompt-ids", "1,2,3", "--tokens", "4"},
                                            {"--model", "a,b.gguf"},
                                            {"--prompt", "Hello, world", "--json", "x,y.json"},
                                            {"--prompt-ids=1,2"},
                                            {"--layers", "2"},
                                            {}}) {
    const auto points = expand_sweep(args);
    ASSERT_EQ(points.size(), 1u);
    EXPECT_EQ(points[0].args, args);
    EXPECT_TRUE(points[0].values.empty());
  }
  // The value of a non-sweep flag is not mistaken for a flag, nor a sweep flag's value.
  const auto points = expand_sweep({"--prompt-ids", "1,2", "--layers", "2,4"});
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[1].args, (Args{"--prompt-ids", "1,2", "--layers", "4"}));
}

TEST(Sweep, OtherSubcommandsAndHelpAreNotExpanded) {
  for (const Args& args : std::vector<Args>{{"compare", "a.json", "b.json", "--metric", "a,b"},
                                            {"suite", "s.json", "--backend", "cpu,cuda"},
                                            {"--layers", "2,4", "--help"},
                                            {"-h", "--layers", "2,4"}}) {
    const auto points = expand_sweep(args);
    ASSERT_EQ(points.size(), 1u);
    EXPECT_EQ(points[0].args, args);
  }
}

TEST(Sweep, EmptyElementIsAUsageError) {
  expect_usage_error(
      [] {
        (void)expand_sweep({"--layers", "2,,4"});
      },
      {"--layers", "empty element", "2,,4"});
  expect_usage_error([] { (void)expand_sweep({"--layers", ",4"}); }, {"--layers", "empty element"});
  // "--layers 1, 2": the shell gives "1," and "2"; the message names the space, not an empty
  // element.
  expect_usage_error(
      [] {
        (void)expand_sweep({"--layers", "1,", "2"});
      },
      {"--layers", "the list '1,' ends with a comma", "if a space followed it"});
  expect_usage_error([] { (void)expand_sweep({"--dtype=f16,"}); },
                     {"--dtype", "ends with a comma"});
}

// A product of lists beyond kMaxSweepRuns is refused before it is built, with the list sizes.
TEST(Sweep, TooManyRunsIsAUsageError) {
  std::string hundred = "0";
  for (int i = 1; i < 100; ++i) hundred += "," + std::to_string(i);
  expect_usage_error(
      [&] {
        (void)expand_sweep({"--seed", hundred, "--tokens", hundred, "--warmup", "0,1"});
      },
      {"100 (--seed) × 100 (--tokens) × 2 (--warmup)", "more than 10000"});
  EXPECT_EQ(expand_sweep({"--seed", hundred, "--tokens", hundred}).size(), 10000u);
}

TEST(Sweep, FlagSet) {
  EXPECT_TRUE(is_sweep_flag("--layers"));
  EXPECT_TRUE(is_sweep_flag("--preset"));
  EXPECT_TRUE(is_sweep_flag("--graph"));
  // Kernel settings one compares on a GPU: fusion, PDL, the weight layout; and --batch.
  for (const char* f :
       {"--fusion", "--pdl", "--launch-ahead", "--weight-layout", "--batch", "--warmup-time"}) {
    EXPECT_TRUE(is_sweep_flag(f)) << f;
    EXPECT_NE(sweep_flag_list().find(f), std::string::npos) << f;
  }
  EXPECT_FALSE(is_sweep_flag("--prompt"));
  EXPECT_FALSE(is_sweep_flag("--prompt-ids"));
  EXPECT_FALSE(is_sweep_flag("--json"));
  EXPECT_FALSE(is_sweep_flag("--model"));
  EXPECT_FALSE(is_sweep_flag("layers"));
}

TEST(SuiteFile, ListsExpandInKeyOrderAndConfigurationsInFileOrder) {
  const auto doc = nlohmann::ordered_json::parse(R"({
    "name": "t", "description": "d",
    "configurations": [
      {"preset": "smollm2-135m", "layers": [2, 4], "dtype": ["f16", "bf16"], "backend": "cpu",
       "phase_timing": true, "ignore_eos": false, "rms_eps": 1e-05},
      {"preset": "qwen2.5-0.5b", "tokens": 8}
    ]})");
  const SuiteDefinition s = parse_suite(doc, "t.json");
  EXPECT_EQ(s.name, "t");
  EXPECT_EQ(s.description, "d");
  EXPECT_EQ(s.source, "t.json");
  ASSERT_EQ(s.configurations.size(), 5u);
  EXPECT_EQ(s.configurations[0].args,
            (Args{"--preset", "smollm2-135m", "--layers", "2", "--dtype", "f16", "--backend", "cpu",
                  "--phase-timing", "--rms-eps", "1e-05"}));
  EXPECT_EQ(s.configurations[1].args[3], "2");
  EXPECT_EQ(s.configurations[1].args[5], "bf16");
  EXPECT_EQ(s.configurations[2].args[3], "4");
  EXPECT_EQ(s.configurations[2].args[5], "f16");
  EXPECT_EQ(s.configurations[3].args[3], "4");
  EXPECT_EQ(s.configurations[3].args[5], "bf16");
  EXPECT_EQ(s.configurations[4].args, (Args{"--preset", "qwen2.5-0.5b", "--tokens", "8"}));
  // Labels: the pairs that tell configurations apart (none is shared by all five here).
  EXPECT_EQ(s.configurations[1].label,
            "preset=smollm2-135m layers=2 dtype=bf16 backend=cpu phase-timing=true "
            "ignore-eos=false rms-eps=1e-05");
  EXPECT_EQ(s.configurations[4].label, "preset=qwen2.5-0.5b tokens=8");
  // Each run knows the file entry it came from (errors name it: configurations[i]).
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(s.configurations[i].entry, std::optional<size_t>(i < 4 ? 0 : 1)) << i;
  }
}

TEST(SuiteFile, LabelsDropWhatEveryConfigurationShares) {
  const auto doc = nlohmann::ordered_json::parse(
      R"({"name": "t", "configurations": [
          {"preset": "p", "layers": [2, 4], "tokens": 8},
          {"preset": "p", "layers": 2, "dtype": "q8_0", "tokens": 8}]})");
  const SuiteDefinition s = parse_suite(doc, "t.json");
  ASSERT_EQ(s.configurations.size(), 3u);
  EXPECT_EQ(s.configurations[0].label, "layers=2");
  EXPECT_EQ(s.configurations[1].label, "layers=4");
  EXPECT_EQ(s.configurations[2].label, "layers=2 dtype=q8_0");
  // One configuration: every pair.
  const auto one = parse_suite(
      nlohmann::ordered_json::parse(R"({"name": "o", "configurations": [{"tokens": 8}]})"), "o");
  EXPECT_EQ(one.configurations.at(0).label, "tokens=8");
}

// An integer flag's string value runs as plain decimal ("010" is 10 layers), so it is labelled and
// passed as the run uses it; other notations are refused when the file is read, naming the key.
TEST(SuiteFile, IntegerValuesAreLabelledAsTheRunsUseThem) {
  const auto s = parse_suite(nlohmann::ordered_json::parse(R"({"name": "t", "configurations": [
          {"layers": ["010", "2"], "seed": "-07", "tokens": 8, "dtype": "08",
           "prompt_tokens": "016"}]})"),
                             "t.json");
  ASSERT_EQ(s.configurations.size(), 2u);
  EXPECT_EQ(s.configurations[0].args, (Args{"--layers", "10", "--seed", "-7", "--tokens", "8",
                                            "--dtype", "08", "--prompt-tokens", "16"}));
  EXPECT_EQ(s.configurations[0].label, "layers=10");
  EXPECT_EQ(s.configurations[1].label, "layers=2");
  for (const char* value : {"1e3", "16.0", "1e20"}) {
    const std::string text =
        std::string(R"({"name": "t", "configurations": [{"layers": )") + value + "}]}";
    expect_usage_error([&] { (void)parse_suite(nlohmann::ordered_json::parse(text), "s.json"); },
                       {"key 'layers': ", "is a JSON number with a fraction or an exponent"});
  }
  for (const char* value : {R"("0x10")", R"("+16")", R"(" 16")", R"("1e3")", R"("16.0")"}) {
    const std::string text =
        std::string(R"({"name": "t", "configurations": [{"tokens": 8, "layers": )") + value + "}]}";
    expect_usage_error([&] { (void)parse_suite(nlohmann::ordered_json::parse(text), "s.json"); },
                       {"s.json: configurations[0]: key 'layers'", "is not a decimal integer"});
  }
  for (const auto& [value, message] :
       {std::pair{R"("abc")", "'abc' is not an integer"},
        std::pair{R"("")", "'' is not an integer"},
        std::pair{R"("2,4")", "'2,4' is not an integer (a list of values is a JSON array"}}) {
    const std::string text =
        std::string(R"({"name": "t", "configurations": [{"layers": )") + value + "}]}";
    expect_usage_error([&] { (void)parse_suite(nlohmann::ordered_json::parse(text), "s.json"); },
                       {"s.json: configurations[0]: key 'layers': ", message});
  }
  const std::string huge = R"({"name": "t", "configurations": [{"seed": "99999999999999999999"}]})";
  expect_usage_error([&] { (void)parse_suite(nlohmann::ordered_json::parse(huge), "s.json"); },
                     {"key 'seed'", "is out of range"});
}

TEST(SuiteFile, MalformedSuitesAreUsageErrors) {
  const auto bad = [](const char* text, std::vector<std::string> parts) {
    parts.push_back("s.json");
    expect_usage_error([&] { (void)parse_suite(nlohmann::ordered_json::parse(text), "s.json"); },
                       parts);
  };
  bad(R"({"configurations": [{"tokens": 8}]})", {"'name'"});
  bad(R"({"name": "x", "configurations": []})", {"configurations"});
  bad(R"({"name": "x"})", {"configurations"});
  bad(R"({"name": "x", "runs": [], "configurations": [{"tokens": 8}]})", {"unknown key 'runs'"});
  bad(R"({"name": "x", "configurations": [{"tokens": 8}, {"json": "a.json"}]})",
      {"configurations[1]", "'json'"});
  bad(R"({"name": "x", "configurations": [{"layers": []}]})", {"configurations[0]", "empty list"});
  bad(R"({"name": "x", "configurations": [{"layers": [[2]]}]})", {"'layers'", "array"});
  bad(R"({"name": "x", "configurations": [{"layers": null}]})", {"'layers'", "null"});
  bad(R"({"name": "x", "configurations": [{}]})", {"configurations[0]"});
  // A help flag would reach the run's parser as a request for help (CLI11's internal message).
  bad(R"({"name": "x", "configurations": [{"tokens": 8, "help": true}]})",
      {"configurations[0]", "key 'help' is not a run setting"});
  bad(R"({"name": "x", "configurations": [{"version": true}]})", {"key 'version'"});
  // One flag under two spellings: the run would take the last value without a word.
  bad(R"({"name": "x", "configurations": [{"prompt_tokens": 4, "prompt-tokens": 5}]})",
      {"configurations[0]", "key 'prompt-tokens' names the flag --prompt-tokens a second time"});
  bad(R"({"name": "x", "configurations": [{"tokens": 4, "--tokens": [5, 6]}]})",
      {"key '--tokens' names the flag --tokens a second time"});
  bad(R"([1, 2])", {"JSON object"});
  // true on a flag that takes a value would hand it the next flag as its value.
  bad(R"({"name": "x", "configurations": [{"layers": true, "hidden": 64}]})",
      {"configurations[0]", "key 'layers' is true, but --layers takes a value"});
  bad(R"({"name": "x", "configurations": [{"prompt": true, "phase_timing": true}]})",
      {"key 'prompt' is true, but --prompt takes a value"});
  // Lists whose product passes kMaxSweepRuns are refused before they are built (100^4 runs grew
  // to 10 GB before round 36).
  std::string big = "[0";
  for (int i = 1; i < 100; ++i) big += "," + std::to_string(i);
  big += "]";
  const std::string explode = R"({"name": "x", "configurations": [{"seed": )" + big +
                              R"(, "tokens": )" + big + R"(, "warmup": )" + big + "}]}";
  bad(explode.c_str(), {"configurations[0]", "more than 10000 runs"});
  // 100 × 100 is 10,000, the limit itself; one more configuration passes it.
  const std::string at_limit =
      R"({"name": "x", "configurations": [{"seed": )" + big + R"(, "tokens": )" + big + "}]}";
  EXPECT_EQ(parse_suite(nlohmann::ordered_json::parse(at_limit), "s.json").configurations.size(),
            10000u);
  const std::string past = R"({"name": "x", "configurations": [{"tokens": 8}, {"seed": )" + big +
                           R"(, "tokens": )" + big + "}]}";
  bad(past.c_str(), {"configurations[1]", "its lists make 10000 runs, after 1 from the"});
}

// A key twice in one object is refused (JSON keeps the last value silently); the same key in two
// objects is fine.
TEST(SuiteFile, DuplicateKeysAreUsageErrors) {
  testing::TempDir dir;
  const auto write = [&](const std::string& text) {
    const auto path = (dir / "s.json").string();
    std::ofstream(path) << text;
    return path;
  };
  const std::string dup =
      write(R"({"name": "x", "configurations": [{"layers": 2, "tokens": 4, "layers": 3}]})");
  expect_usage_error([&] { (void)load_suite_file(dup); },
                     {dup, "key 'layers' appears twice in one object"});
  const std::string ok =
      write(R"({"name": "x", "configurations": [{"layers": 2}, {"layers": 3, "tokens": 2}]})");
  EXPECT_EQ(load_suite_file(ok).configurations.size(), 2u);
}

TEST(SuiteFile, MissingFileIsAUsageError) {
  expect_usage_error([] { (void)load_suite_file("/nonexistent/suite.json"); },
                     {"/nonexistent/suite.json", "cannot open"});
}

}  // namespace
}  // namespace decodebench
