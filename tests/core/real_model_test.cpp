// The CPU backend on a real model (SmolLM2-135M-Instruct, Q4_1, llama architecture) against
// scripts/reference.py, an independent float64 NumPy forward pass: tokenizer ids, logits of the
// first prompt positions, argmax at every position, and a greedy continuation.
//
// The model comes from $DECODEBENCH_SMOLLM2 (a path that is not a file fails the tests) or
// `scripts/fetch-model smollm2`; when that cannot get it (no network, no cache) they skip with the
// reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/cpu/cpu_backend.hpp"
#include "core/model/gguf_model.hpp"
#include "tests/support/support.hpp"

namespace decodebench {
namespace {

namespace fs = std::filesystem;
using testing::python;
using testing::run_command;
using testing::source_dir;

constexpr const char* kPrompt =
    "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n";
// The prompt's ids from Hugging Face `tokenizers` (HuggingFaceTB/SmolLM2-135M-Instruct).
constexpr std::array<int32_t, 16> kPromptIds = {1,    4093, 198, 1780, 314, 260, 3575, 282,
                                                4649, 47,   2,   198,  1,   520, 9531, 198};
constexpr int kComparedPositions = 8;  // full logits compared (reference JSON stays ~4 MB)
constexpr int kGreedyTokens = 24;
constexpr int kThreads = 2;

// Tolerances, CPU backend (f32 activations and accumulation) vs reference.py (float64 throughout),
// both on the same dequantised weights, so the difference is f32 rounding alone.
// Measured (Release, x86-64, GCC): SmolLM2 max |diff| 4.2e-5 over 8 x 49152 logits, 1.5e-6 of the
// position's logit range; the same reference run in all-float32 NumPy differs from float64 by
// 4.8e-5 / 2.2e-6, so that is the f32 noise floor. Tiny models: 9.4e-5 / 2.0e-6 (qwen2), less
// for llama and qwen3. The bounds give ~10x margin for other compilers, FMA contraction or
// summation orders, yet catch subtle numeric defects: moving RMSNorm's eps outside the square root
// shifts SmolLM2's logits by 5.5e-3 (2.2e-4 of the range), an eps of 1e-6 instead of 1e-5 by
// 6.9e-3; structural defects (RoPE pairing, GQA mapping, a missing bias or norm) move logits by
// whole units and change the argmax.
constexpr double kMaxAbsDiff = 5e-4;
constexpr double kMaxRelToRange = 2e-5;
constexpr double kTinyMaxAbsDiff = 1e-3;
constexpr double kTinyMaxRelToRange = 2e-5;

// The model file, or why it is unavailable (skip) or misconfigured (fail).
struct ModelLocation {
  std::string path;
  std::string unavailable;
  std::string misconfigured;
};

ModelLocation locate_model() {
  ModelLocation loc;
  if (const char* env = std::getenv("DECODEBENCH_SMOLLM2"); env && *env) {
    loc.path = env;
    if (!fs::is_regular_file(loc.path))
      loc.misconfigured = "DECODEBENCH_SMOLLM2=" + loc.path + " is not a file";
    return loc;
  }
  std::vector<std::string> env;
  if (!python().empty()) env.push_back("PYTHON=" + python());
  const auto r = run_command(
      {"/bin/bash", (source_dir() / "scripts" / "fetch-model").string(), "smollm2"}, 600, env);
  std::string out = r.out;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  const std::string last = out.substr(out.find_last_of('\n') + 1);
  if (r.exit_code != 0 || last.empty() || !fs::is_regular_file(last)) {
    loc.unavailable = "scripts/fetch-model smollm2 failed (exit " + std::to_string(r.exit_code) +
                      "): " + r.err.substr(0, 400);
    return loc;
  }
  loc.path = last;
  return loc;
}

// Located and loaded once for all tests of this file.
struct Shared {
  ModelLocation location;
  Model model;
};

const Shared& shared() {
  static const Shared* s = [] {
    auto* out = new Shared;
    out->location = locate_model();
    if (out->location.unavailable.empty() && out->location.misconfigured.empty())
      out->model = load_gguf_model(out->location.path);
    return out;
  }();
  return *s;
}

#define REQUIRE_MODEL()                                                                        \
  do {                                                                                         \
    if (!shared().location.misconfigured.empty()) FAIL() << shared().location.misconfigured;   \
    if (!shared().location.unavailable.empty()) GTEST_SKIP() << shared().location.unavailable; \
  } while (0)

// scripts/reference.py's output for a prompt: logits of the first positions, argmax at every
// prompt position and a greedy continuation.
struct Reference {
  std::string error;  // non-empty when the script failed
  std::vector<std::vector<float>> logits;
  std::vector<int32_t> argmax;
  std::vector<int32_t> greedy;
};

Reference run_reference(const std::string& model_path, std::span<const int32_t> ids, int positions,
                        int greedy) {
  Reference out;
  testing::TempDir dir;
  const fs::path json_path = dir / "reference.json";
  std::string list;
  for (int32_t id : ids) list += (list.empty() ? "" : ",") + std::to_string(id);
  const auto r =
      run_command({python(), (source_dir() / "scripts" / "reference.py").string(), model_path,
                   "--tokens", list, "--positions", std::to_string(positions), "--greedy",
                   std::to_string(greedy), "--json", json_path.string()},
                  600);
  if (r.exit_code != 0) {
    out.error = "reference.py exited with " + std::to_string(r.exit_code) + " (signal " +
                std::to_string(r.signal) + "): " + r.err;
    return out;
  }
  const auto doc = nlohmann::json::parse(testing::read_file(json_path));
  out.logits = doc.at("logits").get<std::vector<std::vector<float>>>();
  out.argmax = doc.at("argmax").get<std::vector<int32_t>>();
  out.greedy = doc.at("greedy").get<std::vector<int32_t>>();
  return out;
}

// The SmolLM2 reference, run once for the tests that need it.
const Reference& smollm2_reference() {
  static const Reference* ref = new Reference(
      run_reference(shared().location.path, kPromptIds, kComparedPositions, kGreedyTokens));
  return *ref;
}

// Largest |cpu - reference| over one position's logits, also relative to the reference's range.
struct LogitDiff {
  double max_abs = 0.0;
  double rel_to_range = 0.0;
  size_t where = 0;  // vocabulary index of max_abs
};

LogitDiff compare_logits(const std::vector<float>& got, const std::vector<float>& want) {
  LogitDiff d;
  const auto [lo, hi] = std::minmax_element(want.begin(), want.end());
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    const double diff = std::fabs(static_cast<double>(got[i]) - static_cast<double>(want[i]));
    if (!(diff <= d.max_abs)) {  // also catches NaN
      d.max_abs = diff;
      d.where = i;
    }
  }
  d.rel_to_range = d.max_abs / (static_cast<double>(*hi) - static_cast<double>(*lo));
  return d;
}

// Runs the CPU backend over `ids`, checks argmax at every position and the logits of the first
// ref.logits.size() positions against the reference, then the greedy continuation.
void check_against_reference(const Model& model, std::span<const int32_t> ids, const Reference& ref,
                             double max_abs, double max_rel, std::vector<int32_t>* greedy_out) {
  EXPECT_EQ(ref.argmax.size(), ids.size());
  cpu::CpuBackend backend(model, static_cast<int64_t>(ids.size() + ref.greedy.size()), kThreads);
  std::vector<float> logits;
  LogitDiff worst;
  int32_t next = 0;
  for (size_t pos = 0; pos < ids.size(); ++pos) {
    next = backend.step(ids[pos], static_cast<int64_t>(pos), nullptr);
    if (pos < ref.argmax.size()) {
      EXPECT_EQ(next, ref.argmax[pos]) << "argmax differs at position " << pos;
    }
    if (pos >= ref.logits.size()) continue;
    backend.logits(logits);
    EXPECT_EQ(logits.size(), ref.logits[pos].size());
    const LogitDiff d = compare_logits(logits, ref.logits[pos]);
    EXPECT_LE(d.max_abs, max_abs) << "position " << pos << ", token " << d.where << ": cpu "
                                  << logits[d.where] << " vs reference "
                                  << ref.logits[pos][d.where];
    EXPECT_LE(d.rel_to_range, max_rel) << "position " << pos;
    worst.max_abs = std::max(worst.max_abs, d.max_abs);
    worst.rel_to_range = std::max(worst.rel_to_range, d.rel_to_range);
  }
  std::vector<int32_t> greedy;
  for (size_t i = 0; i < ref.greedy.size(); ++i) {
    greedy.push_back(next);
    if (i + 1 < ref.greedy.size())
      next = backend.step(next, static_cast<int64_t>(ids.size() + i), nullptr);
  }
  EXPECT_EQ(greedy, ref.greedy) << "greedy continuation differs";
  if (greedy_out) *greedy_out = greedy;
  std::printf("[ measured ] %zu positions: max |cpu - reference| = %.3g, / logit range = %.3g\n",
              ref.logits.size(), worst.max_abs, worst.rel_to_range);
}

// Text of `ids` up to (not including) the first end-of-generation token.
std::string text_until_end(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  std::vector<int32_t> kept;
  for (int32_t id : ids) {
    if (tok.is_end_of_generation(id)) break;
    kept.push_back(id);
  }
  return tok.decode(kept);
}

TEST(RealModel, LoadsAsLlamaWithTiedHead) {
  REQUIRE_MODEL();
  const ModelConfig& c = shared().model.config;
  EXPECT_EQ(c.architecture, "llama");
  EXPECT_EQ(c.rope_style, RopeStyle::kAdjacent);
  EXPECT_TRUE(c.tied_embeddings);
  EXPECT_EQ(c.n_layers, 30);
  EXPECT_EQ(c.hidden, 576);
  EXPECT_EQ(c.n_heads, 9);
  EXPECT_EQ(c.n_kv_heads, 3);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.ffn, 1536);
  EXPECT_EQ(c.vocab, 49152);
  EXPECT_DOUBLE_EQ(c.rope_theta, 100000.0);
}

TEST(RealModel, ChatPromptTokenizesLikeHuggingFace) {
  REQUIRE_MODEL();
  EXPECT_EQ(shared().model.tokenizer->encode(kPrompt),
            std::vector<int32_t>(kPromptIds.begin(), kPromptIds.end()));
}

TEST(RealModel, PromptLogitsAndGreedyContinuationMatchReference) {
  REQUIRE_MODEL();
  DB_REQUIRE_PYTHON_GGUF();
  const Reference& ref = smollm2_reference();
  ASSERT_TRUE(ref.error.empty()) << ref.error;
  ASSERT_EQ(ref.logits.size(), static_cast<size_t>(kComparedPositions));
  ASSERT_EQ(ref.greedy.size(), static_cast<size_t>(kGreedyTokens));

  std::vector<int32_t> greedy;
  check_against_reference(shared().model, kPromptIds, ref, kMaxAbsDiff, kMaxRelToRange, &greedy);

  // The answer, up to the end-of-turn token the model emits, is one fluent sentence.
  const std::string answer = text_until_end(*shared().model.tokenizer, greedy);
  EXPECT_NE(answer.find("Paris"), std::string::npos) << answer;
  EXPECT_EQ(answer, "The capital of France is Paris.");
}

// Tiny random models of each supported architecture (tests/fixtures/write_arch_gguf.py), so that
// the qwen2 biases, qwen3 q/k norms and head_dim != hidden/heads, and llama rope_freqs paths are
// checked against the reference too. They need no download.
class ArchParity : public ::testing::TestWithParam<std::string> {
 protected:
  /// Writes the fixture of GetParam()'s architecture to `path` and loads it.
  static Model write_and_load(const std::string& path) {
    const auto w = run_command(
        {python(), (source_dir() / "tests" / "fixtures" / "write_arch_gguf.py").string(), path,
         "--arch", GetParam()});
    if (w.exit_code != 0) throw std::runtime_error("write_arch_gguf.py failed: " + w.err);
    return load_gguf_model(path);
  }
};

TEST_P(ArchParity, CpuBackendMatchesReference) {
  DB_REQUIRE_PYTHON_GGUF();
  testing::TempDir dir;
  const std::string path = (dir / (GetParam() + ".gguf")).string();
  const Model model = write_and_load(path);
  ASSERT_EQ(model.config.architecture, GetParam());

  const std::array<int32_t, 12> ids = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const Reference ref = run_reference(path, ids, static_cast<int>(ids.size()), 9);
  ASSERT_TRUE(ref.error.empty()) << ref.error;
  ASSERT_EQ(ref.logits.size(), ids.size());
  check_against_reference(model, ids, ref, kTinyMaxAbsDiff, kTinyMaxRelToRange, nullptr);
}

// A file may set general.alignment as low as 1 (ggml accepts any power of two), which leaves
// tensors at odd offsets in the mapping; the CPU kernels read F32 and F16 values in place, so the
// loader copies such tensors to aligned memory (a sanitizer build reported misaligned float loads
// in rms_norm before). Logits equal those of the same weights written with the default alignment.
TEST(GgufAlignment, TensorsOffTheAlignmentAreCopiedAndDecodeAlike) {
  DB_REQUIRE_PYTHON_GGUF();
  testing::TempDir dir;
  const std::string script = (source_dir() / "tests" / "fixtures" / "write_arch_gguf.py").string();
  const std::string packed = (dir / "packed.gguf").string(), usual = (dir / "usual.gguf").string();
  for (const auto& [path, extra] : {std::pair{packed, std::vector<std::string>{"--alignment", "1"}},
                                    std::pair{usual, std::vector<std::string>{}}}) {
    std::vector<std::string> cmd = {python(), script, path, "--arch", "qwen3"};
    cmd.insert(cmd.end(), extra.begin(), extra.end());
    const auto w = run_command(cmd);
    ASSERT_EQ(w.exit_code, 0) << w.err;
  }
  const Model a = load_gguf_model(packed), b = load_gguf_model(usual);
  const auto aligned = [](const TensorView& t) {
    return t.data == nullptr || reinterpret_cast<uintptr_t>(t.data) % 32 == 0;
  };
  int checked = 0;
  const auto check = [&](const TensorView& t, const char* what) {
    EXPECT_TRUE(aligned(t)) << what;
    checked += t.data != nullptr ? 1 : 0;
  };
  check(a.weights.token_embd, "token_embd");
  check(a.weights.output_norm, "output_norm");
  check(a.weights.output, "output");
  for (const LayerWeights& l : a.weights.layers) {
    for (const TensorView* t : {&l.attn_norm, &l.wq, &l.wk, &l.wv, &l.q_norm, &l.k_norm, &l.wo,
                                &l.ffn_norm, &l.w_gate, &l.w_up, &l.w_down}) {
      check(*t, t->name.c_str());
    }
  }
  EXPECT_GE(checked, 20);
  cpu::CpuBackend ba(a, 16, 2), bb(b, 16, 2);
  const std::vector<int32_t> prompt = {1, 2, 3};
  int32_t ta = ba.prefill(prompt), tb = bb.prefill(prompt);
  EXPECT_EQ(ta, tb);
  std::vector<float> la, lb;
  for (int i = 0; i < 4; ++i) {
    ta = ba.step(ta, 3 + i, nullptr);
    tb = bb.step(tb, 3 + i, nullptr);
    ba.logits(la);
    bb.logits(lb);
    ASSERT_EQ(ta, tb) << "step " << i;
    ASSERT_EQ(la, lb) << "step " << i;
  }
}

// A batched step (every matrix read once for all sequences, layer by layer) gives each sequence
// the logits of its single-sequence steps bit for bit, also through the qwen2 biases, the qwen3
// q/k norms and llama's rope_freqs: two sequences with prompts of 5 and 2 tokens, fed token by
// token (the first 3 of sequence 0 alone), so they decode side by side at different positions.
TEST_P(ArchParity, BatchedStepsEqualSingleSequenceSteps) {
  DB_REQUIRE_PYTHON_GGUF();
  testing::TempDir dir;
  const Model model = write_and_load((dir / (GetParam() + ".gguf")).string());
  const std::vector<int32_t> p0 = {1, 2, 3, 4, 5}, p1 = {9, 7};
  constexpr int kSteps = 6;
  // Each sequence decoded alone: its first token after the prompt, then each step's logits.
  const auto alone = [&](const std::vector<int32_t>& prompt, int32_t* first) {
    cpu::CpuBackend b(model, 16, 2);
    int32_t t = b.prefill(prompt);
    *first = t;
    std::vector<std::vector<float>> logits(kSteps);
    for (int i = 0; i < kSteps; ++i) {
      t = b.step(t, static_cast<int64_t>(prompt.size()) + i, nullptr);
      b.logits(logits[static_cast<size_t>(i)]);
    }
    return logits;
  };
  int32_t first0 = 0, first1 = 0;
  const auto want0 = alone(p0, &first0), want1 = alone(p1, &first1);
  cpu::CpuBackend b(model, 16, 2, 2);
  std::vector<int32_t> one(1), next(2);
  for (int64_t pos = 0; pos < 3; ++pos) {
    b.step_batch(std::vector<int32_t>{p0[static_cast<size_t>(pos)]}, std::vector<int64_t>{pos}, one,
                 nullptr);
  }
  b.step_batch(std::vector<int32_t>{p0[3], p1[0]}, std::vector<int64_t>{3, 0}, next, nullptr);
  b.step_batch(std::vector<int32_t>{p0[4], p1[1]}, std::vector<int64_t>{4, 1}, next, nullptr);
  ASSERT_EQ(next[0], first0);
  ASSERT_EQ(next[1], first1);
  std::vector<float> got;
  for (int i = 0; i < kSteps; ++i) {
    const std::vector<int32_t> tokens = next;
    b.step_batch(tokens, std::vector<int64_t>{5 + i, 2 + i}, next, nullptr);
    b.logits_batch(0, got);
    ASSERT_EQ(got, want0[static_cast<size_t>(i)]) << "sequence 0, step " << i;
    b.logits_batch(1, got);
    ASSERT_EQ(got, want1[static_cast<size_t>(i)]) << "sequence 1, step " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, ArchParity, ::testing::Values("llama", "qwen2", "qwen3"),
                         [](const auto& info) { return info.param; });

// A context length past INT64_MAX (a uint64 key) is decoded within kMaxContext like any other
// length beyond it, not turned negative and refused as "must be > 0".
TEST(RealModel, HugeContextLengthIsCappedNotRefused) {
  DB_REQUIRE_PYTHON_GGUF();
  testing::TempDir dir;
  const std::string script = (source_dir() / "tests" / "fixtures" / "write_arch_gguf.py").string();
  for (const std::string length : {"9223372036854775813", "4294967296", "300"}) {
    const std::string path = (dir / ("ctx" + length + ".gguf")).string();
    const auto w =
        run_command({python(), script, path, "--arch", "llama", "--context-length", length});
    ASSERT_EQ(w.exit_code, 0) << w.err;
    const Model model = load_gguf_model(path);
    EXPECT_EQ(model.config.context_length, length == "300" ? 300 : kMaxContext) << length;
  }
}

// A run that does not fit the model's context names every term of the sum: the warm-up steps
// were counted without being named ("prompt (3 tokens) + 6 decode steps exceed ...").
TEST(RealModel, ContextOverflowNamesItsTerms) {
  DB_REQUIRE_PYTHON_GGUF();
  testing::TempDir dir;
  const std::string script = (source_dir() / "tests" / "fixtures" / "write_arch_gguf.py").string();
  const std::string path = (dir / "ctx8.gguf").string();
  const auto w = run_command({python(), script, path, "--arch", "llama", "--context-length", "8"});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  const struct {
    std::string tokens, warmup, message;
  } cases[] = {
      {"2", "6",
       "prompt tokens (3) + the larger of generated tokens (--tokens 2) and warm-up steps "
       "(--warmup 6) = 9 positions exceed the model's context limit of 8 positions (warm-up and "
       "timed steps both start right after the prompt)"},
      {"7", "4",
       "prompt tokens (3) + the larger of generated tokens (--tokens 7) and warm-up steps "
       "(--warmup 4) = 10 positions exceed the model's context limit of 8 positions (warm-up and "
       "timed steps both start right after the prompt)"},
  };
  for (const auto& c : cases) {
    const auto r = testing::run_decodebench({"--model", path, "--backend", "cpu", "--prompt-ids",
                                             "1,2,3", "--tokens", c.tokens, "--warmup", c.warmup},
                                            60);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err, "decodebench: error: " + c.message + "\n");
  }
  // 3 + max(5, 5) = 8 fits.
  const auto fits = testing::run_decodebench({"--model", path, "--backend", "cpu", "--prompt-ids",
                                              "1,2,3", "--tokens", "5", "--warmup", "5", "-q"},
                                             60);
  EXPECT_EQ(fits.exit_code, 0) << fits.err;
}

TEST(RealModel, ReferenceScriptRejectsMissingFileAndUnsupportedArchitecture) {
  DB_REQUIRE_PYTHON_GGUF();
  testing::TempDir dir;
  const std::string script = (source_dir() / "scripts" / "reference.py").string();
  auto r = run_command({python(), script, (dir / "absent.gguf").string(), "--tokens", "1"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("not found"), std::string::npos) << r.err;

  // A minimal, valid GGUF whose architecture the reference does not implement.
  const std::string gemma = (dir / "gemma.gguf").string();
  r = run_command({python(), "-c",
                   "import sys, numpy as np, gguf\n"
                   "w = gguf.GGUFWriter(sys.argv[1], 'gemma')\n"
                   "w.add_tensor('token_embd.weight', np.zeros((4, 8), np.float32))\n"
                   "w.write_header_to_file(); w.write_kv_data_to_file()\n"
                   "w.write_tensors_to_file(); w.close()\n",
                   gemma});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_command({python(), script, gemma, "--tokens", "1"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("unsupported architecture 'gemma'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace decodebench
