// Batched decode end to end in-process: per-sequence prompts, lockstep passes on the CPU backend,
// sequence i of a batch equal to a single-sequence run with its prompt, the result JSON.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cpu/cpu_backend.hpp"
#include "core/cpu/thread_pool.hpp"
#include "core/decode/decode_loop.hpp"
#include "core/error.hpp"
#include "core/model/synthetic.hpp"
#include "core/run_config.hpp"
#include "core/runner.hpp"
#include "tests/support/model_configs.hpp"

namespace decodebench {
namespace {

// A model small enough to decode in a fraction of a second.
RunOptions tiny(int64_t batch, const std::string& dtype = "f32") {
  RunOptions o;
  o.preset = "smollm2-135m";
  o.layers = 2;
  o.vocab = 512;
  o.ffn = 256;
  o.dtype = dtype;
  o.tokens = 16;
  o.warmup = 2;
  o.prompt_tokens = 5;
  o.backend = "cpu";
  o.threads = 2;
  o.batch = batch;
  return o;
}

RunReport run(const RunOptions& o) { return execute_run(resolve_run_config(o, 2)); }

std::string join(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

TEST(BatchDecode, BatchIsResolvedAndRecordedWithItsOrigin) {
  RunOptions o = tiny(1);
  o.batch.reset();
  const RunConfig def = resolve_run_config(o, 2);
  EXPECT_EQ(def.batch, 1);
  const RunConfig four = resolve_run_config(tiny(4), 2);
  EXPECT_EQ(four.batch, 4);
  bool found = false;
  for (const auto& p : four.params) {
    if (p.name != "batch") continue;
    found = true;
    EXPECT_EQ(p.value, 4);
    EXPECT_EQ(p.origin, Origin::kFlag);
  }
  EXPECT_TRUE(found) << "batch is missing from the resolved parameters";
  for (int64_t bad : {int64_t{0}, int64_t{-1}, int64_t{257}}) {
    try {
      resolve_run_config(tiny(bad), 2);
      ADD_FAILURE() << "--batch " << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kUsage);
      EXPECT_NE(std::string(e.what()).find("--batch must be in [1, 256]"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(resolve_run_config(tiny(256), 2).batch, 256);
}

TEST(BatchDecode, SequencePromptSeedKeepsSequenceZeroOnTheRunSeed) {
  EXPECT_EQ(sequence_prompt_seed(42, 0), 42u);
  EXPECT_EQ(sequence_prompt_seed(42, 1), 42u + 0x9E3779B97F4A7C15ull);
  EXPECT_NE(sequence_prompt_seed(0, 1), sequence_prompt_seed(0, 2));
}

class BatchDecodeDtype : public ::testing::TestWithParam<std::string> {};

TEST_P(BatchDecodeDtype, SequenceIEqualsASingleSequenceRunWithItsPrompt) {
  constexpr int64_t kBatch = 3;
  const RunReport batched = run(tiny(kBatch, GetParam()));
  ASSERT_EQ(batched.passes.size(), 1u);
  const PassResult& pass = batched.passes[0].pass;
  EXPECT_EQ(pass.spec.batch, kBatch);
  ASSERT_EQ(pass.sequence_ids.size(), static_cast<size_t>(kBatch));
  ASSERT_EQ(batched.sequence_prompts.size(), static_cast<size_t>(kBatch));
  EXPECT_EQ(pass.samples_ns.size(), 16u) << "one sample per lockstep step";
  EXPECT_EQ(pass.ids, pass.sequence_ids[0]);
  EXPECT_EQ(batched.prompt_ids, batched.sequence_prompts[0]);
  for (int64_t i = 0; i < kBatch; ++i) {
    const auto& prompt = batched.sequence_prompts[i];
    EXPECT_EQ(prompt, synthetic_prompt(5, 512, sequence_prompt_seed(0, i))) << "sequence " << i;
    EXPECT_EQ(pass.sequence_ids[i].size(), 17u);
  }
  EXPECT_NE(batched.sequence_prompts[0], batched.sequence_prompts[1]);
  EXPECT_NE(pass.sequence_ids[0], pass.sequence_ids[1]) << "different prompts, same generation";

  // Sequence 0 is what a batch-1 run with the same seed decodes.
  const RunReport alone0 = run(tiny(1, GetParam()));
  EXPECT_EQ(alone0.prompt_ids, batched.sequence_prompts[0]);
  EXPECT_EQ(alone0.passes[0].pass.ids, pass.sequence_ids[0]);
  // Sequences 1.. are what a batch-1 run with their prompt decodes.
  for (int64_t i = 1; i < kBatch; ++i) {
    RunOptions o = tiny(1, GetParam());
    o.prompt_tokens.reset();
    o.prompt_ids = join(batched.sequence_prompts[i]);
    const RunReport alone = run(o);
    EXPECT_EQ(alone.passes[0].pass.ids, pass.sequence_ids[i]) << "sequence " << i;
  }

  const PassReport& p = batched.passes[0];
  EXPECT_NEAR(p.aggregate_tokens_per_s, kBatch * 1e9 / p.tpot_ns.median,
              1e-9 * p.aggregate_tokens_per_s);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, BatchDecodeDtype, ::testing::Values("f32", "q8_0"));

TEST(BatchDecode, ExplicitPromptIsSharedByEverySequenceWithAWarning) {
  RunOptions o = tiny(2);
  o.prompt_tokens.reset();
  o.prompt_ids = "1,2,3";
  const RunReport r = run(o);
  ASSERT_EQ(r.sequence_prompts.size(), 2u);
  EXPECT_EQ(r.sequence_prompts[0], r.sequence_prompts[1]);
  EXPECT_EQ(r.passes[0].pass.sequence_ids[0], r.passes[0].pass.sequence_ids[1]);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("same prompt"), std::string::npos) << r.warnings[0];
}

TEST(BatchDecode, ResultJsonHasBatchSequencesAndAggregate) {
  const RunReport r = run(tiny(3));
  const nlohmann::json doc = result_json(r);
  EXPECT_EQ(doc["config"]["batch"]["value"], 3);
  const auto& run0 = doc["runs"][0];
  EXPECT_EQ(run0["batch"], 3);
  EXPECT_EQ(run0["key"]["batch"], 3);
  EXPECT_NE(run0["key"]["id"].get<std::string>().find("|batch=3|"), std::string::npos);
  // The key's shape, from model.shape's fields (kKeyShapeFields), in its fixed format.
  const auto& shape = doc["model"]["shape"];
  const auto field = [&shape](const char* name) {
    return std::to_string(shape[name].get<int64_t>());
  };
  EXPECT_EQ(run0["key"]["shape"], field("layers") + "x" + field("hidden") + "/h" + field("heads") +
                                      "kv" + field("kv_heads") + "/ffn" + field("ffn") + "/v" +
                                      field("vocab"));
  const auto& seqs = run0["results"]["sequences"];
  ASSERT_EQ(seqs.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(seqs[i]["index"], i);
    EXPECT_EQ(seqs[i]["prompt_tokens"], 5);
    EXPECT_EQ(seqs[i]["prompt_ids"], r.sequence_prompts[i]);
    EXPECT_EQ(seqs[i]["tokens"], r.passes[0].pass.sequence_ids[i]);
    EXPECT_DOUBLE_EQ(seqs[i]["tpot_ms_median"].get<double>(), r.passes[0].tpot_ns.median / 1e6);
  }
  EXPECT_EQ(run0["results"]["tokens"], r.passes[0].pass.sequence_ids[0]);
  EXPECT_DOUBLE_EQ(run0["results"]["stats"]["aggregate_tokens_per_s"].get<double>(),
                   r.passes[0].aggregate_tokens_per_s);
  EXPECT_NE(doc["verdict"].get<std::string>().find("aggregate"), std::string::npos);

  // Batch 1 keeps its shape: one sequence, batch 1.
  const nlohmann::json one = result_json(run(tiny(1)));
  EXPECT_EQ(one["runs"][0]["batch"], 1);
  EXPECT_EQ(one["runs"][0]["key"]["batch"], 1);
  ASSERT_EQ(one["runs"][0]["results"]["sequences"].size(), 1u);
  EXPECT_EQ(one["runs"][0]["results"]["sequences"][0]["tokens"],
            one["runs"][0]["results"]["tokens"]);
}

ModelConfig small_config() {
  ModelConfig c = ::decodebench::testing::small_model_config(2, 64, 4, 2, 16, 96, 300);
  c.rms_eps = 1e-5;
  return c;
}

// The decode loop checks the argmax of every sequence at every step (here on the CPU backend,
// whose logits it re-reads); a run on the cpu backend skips the check with a warning, as there
// is no second argmax to compare.
TEST(BatchDecode, VerifyArgmaxChecksEverySequenceOfEveryStep) {
  cpu::ThreadPool pool(2);
  const Model m = make_synthetic_model(small_config(), WeightType::kF32, 3, pool);
  cpu::CpuBackend b(m, 32, 2, 3);
  std::vector<int32_t> firsts(3);
  b.prefill_batch(std::vector<std::vector<int32_t>>{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}, firsts);
  PassSpec spec;
  spec.label = "cpu";
  spec.start_pos = 3;
  spec.tokens = 16;
  spec.batch = 3;
  spec.first_tokens = firsts;
  spec.first_token = firsts[0];
  spec.verify_argmax = true;
  const PassResult pass = run_pass(b, spec);
  EXPECT_EQ(pass.argmax_checked, 3 * 16);
  EXPECT_TRUE(pass.argmax_mismatches.empty());

  RunOptions o = tiny(3);
  o.verify_argmax = true;
  const RunReport r = run(o);
  EXPECT_EQ(r.passes[0].pass.argmax_checked, 0);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("no other argmax to check and it was skipped"), std::string::npos)
      << r.warnings[0];
  EXPECT_EQ(r.exit_code, ExitCode::kOk);
}

TEST(BatchDecode, EndOfGenerationStopsBatchOneButNeverABatchedPass) {
  cpu::ThreadPool pool(2);
  const Model m = make_synthetic_model(small_config(), WeightType::kF32, 3, pool);
  cpu::CpuBackend b(m, 32, 2, 2);
  std::vector<int32_t> firsts(2);
  b.prefill_batch(std::vector<std::vector<int32_t>>{{1, 2, 3}, {4, 5, 6}}, firsts);
  PassSpec spec;
  spec.label = "cpu";
  spec.start_pos = 3;
  spec.tokens = 8;
  spec.is_end_of_generation = [](int32_t) { return true; };  // every token ends generation
  spec.batch = 2;
  spec.first_tokens = firsts;
  spec.first_token = firsts[0];
  const PassResult batched = run_pass(b, spec);
  EXPECT_FALSE(batched.stopped_at_end_of_generation);
  EXPECT_EQ(batched.samples_ns.size(), 8u);
  EXPECT_EQ(batched.stopping.rule, "tokens");
  ASSERT_EQ(batched.sequence_ids.size(), 2u);
  EXPECT_EQ(batched.sequence_ids[1].size(), 9u);

  spec.batch = 1;
  spec.first_tokens.clear();
  const PassResult single = run_pass(b, spec);
  EXPECT_TRUE(single.stopped_at_end_of_generation);
  EXPECT_EQ(single.samples_ns.size(), 1u);
  EXPECT_EQ(single.stopping.rule, "eos");
}

TEST(BatchDecode, BatchedPassNeedsOneFirstTokenPerSequence) {
  cpu::ThreadPool pool(1);
  const Model m = make_synthetic_model(small_config(), WeightType::kF32, 3, pool);
  cpu::CpuBackend b(m, 8, 1, 2);
  PassSpec spec;
  spec.tokens = 2;
  spec.batch = 2;
  spec.first_tokens = {1};
  try {
    run_pass(b, spec);
    FAIL() << "expected a usage error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    EXPECT_NE(std::string(e.what()).find("2 first tokens"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace decodebench
