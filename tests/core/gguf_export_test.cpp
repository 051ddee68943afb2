// The GGUF writer and synthetic-model export: what the reader sees, layout rules, errors, and the
// round trip synthetic model → GGUF file → loaded model decoding the same tokens.
#include "core/model/gguf_export.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "core/cpu/cpu_backend.hpp"
#include "core/cpu/thread_pool.hpp"
#include "core/error.hpp"
#include "core/gguf/reader.hpp"
#include "core/gguf/writer.hpp"
#include "core/model/gguf_model.hpp"
#include "core/model/synthetic.hpp"
#include "core/quant/dequant.hpp"
#include "tests/support/model_configs.hpp"
#include "tests/support/support.hpp"

namespace decodebench {
namespace {

using testing::TempDir;

gguf::Writer::Source bytes_source(std::vector<uint8_t> bytes) {
  return [bytes](gguf::TensorSink& sink) { sink.write(bytes.data(), bytes.size()); };
}

TEST(GgufWriter, ReaderSeesMetadataTensorsAndAlignedData) {
  TempDir dir;
  const std::string path = (dir / "w.gguf").string();
  gguf::Writer w;
  w.add_string("general.architecture", "llama");
  w.add_uint32("llama.block_count", 7);
  w.add_uint64("x.u64", 1ull << 40);
  w.add_int32("x.i32", -5);
  w.add_float32("x.f32", 0.25f);
  w.add_bool("x.bool", true);
  w.add_string_array("x.strings", {"a", "", "ĠHello"});
  w.add_int32_array("x.ints", {1, -2, 3});
  w.add_float32_array("x.floats", {1.5f});
  w.add_string_array("x.empty", {});
  std::vector<uint8_t> f32(3 * 4);
  for (size_t i = 0; i < f32.size(); ++i) f32[i] = static_cast<uint8_t>(i + 1);
  std::vector<uint8_t> q8(2 * 34);  // 2 rows of one Q8_0 block
  for (size_t i = 0; i < q8.size(); ++i) q8[i] = static_cast<uint8_t>(200 - i);
  w.add_tensor("a", {3}, 0, bytes_source(f32));
  w.add_tensor("b.weight", {32, 2}, 8, bytes_source(q8));
  w.write(path);

  const gguf::Reader r(path);
  EXPECT_EQ(r.version(), 3u);
  EXPECT_EQ(r.alignment(), 32u);
  EXPECT_EQ(r.file_size(), w.file_bytes());
  EXPECT_EQ(r.get_string("general.architecture"), "llama");
  EXPECT_EQ(r.find("llama.block_count")->value.type, gguf::ValueType::kUint32);
  EXPECT_EQ(r.get_uint("llama.block_count"), 7u);
  EXPECT_EQ(r.get_uint("x.u64"), 1ull << 40);
  EXPECT_EQ(r.get_int("x.i32"), -5);
  EXPECT_EQ(r.get_float("x.f32"), 0.25);
  EXPECT_EQ(r.get_bool("x.bool"), true);
  EXPECT_EQ(r.get_string_array("x.strings"), (std::vector<std::string>{"a", "", "ĠHello"}));
  EXPECT_EQ(r.get_int_array("x.ints"), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(r.get_float_array("x.floats"), (std::vector<double>{1.5}));
  EXPECT_TRUE(r.get_string_array("x.empty").empty());
  ASSERT_EQ(r.tensors().size(), 2u);
  const gguf::TensorInfo& a = r.tensors()[0];
  const gguf::TensorInfo& b = r.tensors()[1];
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.offset, 0u);
  EXPECT_EQ(b.offset, 32u) << "12 bytes padded to the alignment";
  EXPECT_EQ(b.type_id, 8u);
  EXPECT_EQ(b.dims[0], 32);
  EXPECT_EQ(b.dims[1], 2);
  EXPECT_EQ(r.data_offset() % 32, 0u);
  EXPECT_EQ(std::memcmp(r.tensor_data(a), f32.data(), f32.size()), 0);
  EXPECT_EQ(std::memcmp(r.tensor_data(b), q8.data(), q8.size()), 0);
  EXPECT_EQ(r.file_size(), r.data_offset() + 32 + 96) << "every tensor padded, the last included";
}

TEST(GgufWriter, CustomAlignmentIsRecorded) {
  TempDir dir;
  const std::string path = (dir / "a.gguf").string();
  gguf::Writer w(64);
  w.add_tensor("t", {4}, 0, bytes_source(std::vector<uint8_t>(16, 7)));
  w.add_tensor("u", {4}, 0, bytes_source(std::vector<uint8_t>(16, 9)));
  w.write(path);
  const gguf::Reader r(path);
  EXPECT_EQ(r.alignment(), 64u);
  EXPECT_EQ(r.tensors()[1].offset, 64u);
  EXPECT_THROW(gguf::Writer(48), Error);
}

ExitCode code_of(const std::function<void()>& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.code();
  }
  return ExitCode::kOk;
}

// A uint64 dimension past INT64_MAX is named with its value, whichever key holds it (before round
// 36 only block_count and embedding_length were: the others read "ffn must be > 0 (got -1)").
TEST(GgufModelConfig, Uint64DimensionsPastInt64AreNamed) {
  TempDir dir;
  const std::string path = (dir / "m.gguf").string();
  const uint64_t huge = ~uint64_t{0};
  for (const char* key : {"llama.feed_forward_length", "llama.attention.head_count",
                          "llama.attention.head_count_kv", "llama.attention.key_length",
                          "llama.attention.value_length", "llama.rope.dimension_count"}) {
    gguf::Writer w;
    w.add_string("general.architecture", "llama");
    w.add_uint32("llama.block_count", 1);
    w.add_uint32("llama.embedding_length", 64);
    for (const auto& [k, v] :
         {std::pair{"llama.feed_forward_length", 96}, {"llama.attention.head_count", 4}}) {
      if (std::string(k) != key) w.add_uint32(k, v);
    }
    w.add_uint64(key, huge);
    w.write(path);
    std::string message;
    try {
      (void)load_gguf_model(path);
    } catch (const Error& e) {
      message = e.what();
      EXPECT_EQ(e.code(), ExitCode::kUsage) << key;
    }
    EXPECT_NE(message.find(std::string("metadata key '") + key +
                           "' is 18446744073709551615, too large for a model dimension"),
              std::string::npos)
        << key << ": " << message;
  }
}

// An embedding_length that disagrees with token_embd.weight is named as such, not as the
// head-dimension or RoPE error derived from it; without key_length, a hidden size the head count
// does not divide is named before its truncated quotient is used.
TEST(GgufModelConfig, EmbeddingLengthIsCheckedAgainstTheEmbedding) {
  TempDir dir;
  const std::string path = (dir / "m.gguf").string();
  // A llama file whose token_embd.weight is F32 {cols, 8} (vocab 8).
  const auto write = [&](uint32_t embedding_length, bool key_length, int64_t cols = 64) {
    gguf::Writer w;
    w.add_string("general.architecture", "llama");
    w.add_uint32("llama.block_count", 1);
    w.add_uint32("llama.embedding_length", embedding_length);
    w.add_uint32("llama.feed_forward_length", 96);
    w.add_uint32("llama.attention.head_count", 4);
    if (key_length) w.add_uint32("llama.attention.key_length", 16);
    w.add_uint32("llama.context_length", 64);
    w.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    w.add_tensor("token_embd.weight", {cols, 8}, 0,
                 bytes_source(std::vector<uint8_t>(static_cast<size_t>(cols) * 8 * sizeof(float))));
    w.write(path);
  };
  std::string message;
  write(72, false);  // 72 / 4 = 18: an even head dimension, so only the embedding disagrees
  EXPECT_EQ(code_of([&] { (void)load_gguf_model(path); }, &message), ExitCode::kUsage);
  EXPECT_NE(message.find("tensor 'token_embd.weight' has GGUF dims {64, 8}, but "
                         "llama.embedding_length is 72"),
            std::string::npos)
      << message;
  write(66, false);  // 66 / 4 truncates, and the embedding disagrees: the embedding is named
  EXPECT_EQ(code_of([&] { (void)load_gguf_model(path); }, &message), ExitCode::kUsage);
  EXPECT_NE(message.find("has GGUF dims {64, 8}, but llama.embedding_length is 66"),
            std::string::npos)
      << message;
  write(66, false, 66);  // the embedding agrees, but 66 / 4 truncates
  EXPECT_EQ(code_of([&] { (void)load_gguf_model(path); }, &message), ExitCode::kUsage);
  EXPECT_NE(message.find("llama.embedding_length 66 is not a multiple of "
                         "llama.attention.head_count 4 and llama.attention.key_length is absent"),
            std::string::npos)
      << message;
}

TEST(GgufWriter, RulesAreErrors) {
  gguf::Writer w;
  w.add_uint32("k", 1);
  std::string msg;
  EXPECT_EQ(code_of([&] { w.add_uint32("k", 2); }, &msg), ExitCode::kUsage);
  EXPECT_NE(msg.find("'k' added twice"), std::string::npos) << msg;
  EXPECT_EQ(code_of([&] { w.add_string("", "x"); }), ExitCode::kUsage);
  const auto none = bytes_source({});
  EXPECT_EQ(code_of([&] { w.add_tensor(std::string(64, 'n'), {1}, 0, none); }), ExitCode::kUsage);
  EXPECT_EQ(code_of([&] { w.add_tensor("t", {}, 0, none); }), ExitCode::kUsage);
  EXPECT_EQ(code_of([&] { w.add_tensor("t", {1, 1, 1, 1, 1}, 0, none); }), ExitCode::kUsage);
  EXPECT_EQ(code_of([&] { w.add_tensor("t", {0}, 0, none); }), ExitCode::kUsage);
  EXPECT_EQ(code_of([&] { w.add_tensor("t", {4}, 4, none); }), ExitCode::kUsage) << "removed id";
  EXPECT_EQ(code_of([&] { w.add_tensor("t", {48, 2}, 12, none); }, &msg), ExitCode::kUsage);
  EXPECT_NE(msg.find("not a multiple of the Q4_K block"), std::string::npos) << msg;
  w.add_tensor("t", {4}, 0, none);
  EXPECT_EQ(code_of([&] { w.add_tensor("t", {4}, 0, none); }), ExitCode::kUsage);
}

TEST(GgufWriter, FailedWriteLeavesTheOldFileAndNoTemporary) {
  TempDir dir;
  const std::string path = (dir / "keep.gguf").string();
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    std::fputs("old", f);
    std::fclose(f);
  }
  gguf::Writer w;
  w.add_tensor("t", {4}, 0, bytes_source(std::vector<uint8_t>(15)));  // one byte short
  std::string msg;
  EXPECT_EQ(code_of([&] { w.write(path); }, &msg), ExitCode::kRuntime);
  EXPECT_NE(msg.find("wrote 15 bytes, expected 16"), std::string::npos) << msg;
  EXPECT_EQ(testing::read_file(path), "old");
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 1u) << "temporary file left behind";
  EXPECT_EQ(code_of([&] { w.write((dir / "no/such/dir/x.gguf").string()); }), ExitCode::kUsage);
}

ModelConfig tiny(bool qkv_bias, bool tied) {
  ModelConfig c = ::decodebench::testing::small_model_config(3, 256, 4, 2, 64, 512, 300);
  c.context_length = 128;
  c.rope_theta = 1000000.0;
  c.qkv_bias = qkv_bias;
  c.tied_embeddings = tied;
  return c;
}

std::vector<int32_t> decode(const Model& m, int steps) {
  cpu::CpuBackend b(m, steps + 5, 2);
  std::vector<int32_t> ids;
  int32_t t = b.prefill(std::vector<int32_t>{7, 1, 299, 42, 0});
  ids.push_back(t);
  for (int i = 0; i < steps; ++i) ids.push_back(t = b.step(t, 5 + i, nullptr));
  return ids;
}

struct ExportCase {
  const char* name;
  WeightScheme scheme;
  bool qkv_bias;
  bool tied;
};

void PrintTo(const ExportCase& c, std::ostream* os) { *os << c.name; }

class SyntheticGgufRoundTrip : public ::testing::TestWithParam<ExportCase> {};

TEST_P(SyntheticGgufRoundTrip, LoadedFileHasTheShapeTypesAndTokensOfTheSyntheticModel) {
  const ExportCase& p = GetParam();
  cpu::ThreadPool pool(2);
  const ModelConfig c = tiny(p.qkv_bias, p.tied);
  const Model synthetic = make_synthetic_model(c, p.scheme, 21, pool);
  TempDir dir;
  const std::string path = (dir / "m.gguf").string();
  write_synthetic_gguf(synthetic, {"round trip", p.scheme, "test", 21}, path);

  const Model loaded = load_gguf_model(path);
  const ModelConfig& l = loaded.config;
  EXPECT_EQ(l.architecture, p.qkv_bias ? "qwen2" : "llama");
  EXPECT_EQ(l.rope_style, p.qkv_bias ? RopeStyle::kHalfSplit : RopeStyle::kAdjacent);
  EXPECT_EQ(l.n_layers, c.n_layers);
  EXPECT_EQ(l.hidden, c.hidden);
  EXPECT_EQ(l.n_heads, c.n_heads);
  EXPECT_EQ(l.n_kv_heads, c.n_kv_heads);
  EXPECT_EQ(l.head_dim, c.head_dim);
  EXPECT_EQ(l.ffn, c.ffn);
  EXPECT_EQ(l.vocab, c.vocab);
  EXPECT_EQ(l.context_length, c.context_length);
  EXPECT_EQ(l.rope_theta, c.rope_theta);
  EXPECT_EQ(static_cast<float>(l.rms_eps), static_cast<float>(c.rms_eps));
  EXPECT_EQ(l.tied_embeddings, c.tied_embeddings);
  EXPECT_EQ(l.qkv_bias, c.qkv_bias);
  // Same bytes per token and per type: every tensor kept its storage type.
  EXPECT_EQ(loaded.info.bytes_per_token, synthetic.info.bytes_per_token);
  EXPECT_EQ(loaded.info.weight_bytes, synthetic.info.weight_bytes);
  ASSERT_EQ(loaded.info.tensor_types.size(), synthetic.info.tensor_types.size());
  for (const auto& [type, stats] : synthetic.info.tensor_types) {
    EXPECT_EQ(loaded.info.tensor_types.at(type).count, stats.count) << type;
  }
  // Unpermuted tensors are byte-identical; llama's Q rows are interleaved per head.
  const LayerWeights& s1 = synthetic.weights.layers[1];
  const LayerWeights& l1 = loaded.weights.layers[1];
  EXPECT_EQ(std::memcmp(s1.w_down.data, l1.w_down.data, s1.w_down.bytes()), 0);
  EXPECT_EQ(std::memcmp(s1.wv.data, l1.wv.data, s1.wv.bytes()), 0);
  const int64_t d = c.head_dim;
  for (int64_t r : {int64_t{0}, int64_t{1}, d - 1, d + 2, 3 * d + 5}) {
    const int64_t src = p.qkv_bias ? r : (r / d) * d + (r % 2) * (d / 2) + (r % d) / 2;
    EXPECT_EQ(std::memcmp(s1.wq.row(src), l1.wq.row(r), s1.wq.row_bytes()), 0) << "row " << r;
  }
  ASSERT_TRUE(loaded.tokenizer);
  EXPECT_EQ(loaded.tokenizer->vocab_size(), c.vocab);
  EXPECT_EQ(loaded.tokenizer->eos_id(), c.vocab - 1);
  EXPECT_EQ(loaded.tokenizer->encode("Hi!", false), (std::vector<int32_t>{'H', 'i', '!'}));
  EXPECT_EQ(loaded.tokenizer->decode(std::vector<int32_t>{'o', 'k', 200}), "ok<t200>");

  EXPECT_EQ(decode(loaded, 12), decode(synthetic, 12));
}

INSTANTIATE_TEST_SUITE_P(
    Dtypes, SyntheticGgufRoundTrip,
    ::testing::Values(ExportCase{"F32_qwen2", WeightType::kF32, true, false},
                      ExportCase{"F32_llama", WeightType::kF32, false, false},
                      ExportCase{"Q8_0_llama_tied", WeightType::kQ8_0, false, true},
                      ExportCase{"Q4_K_M_qwen2", WeightScheme::q4_k_m(), true, false},
                      ExportCase{"Q4_K_M_llama_tied", WeightScheme::q4_k_m(), false, true},
                      ExportCase{"BF16_qwen2_tied", WeightType::kBF16, true, true}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(SyntheticGguf, MetadataFollowsTheFacts) {
  cpu::ThreadPool pool(1);
  ModelConfig c = tiny(false, false);
  c.head_dim = 128;  // ≠ hidden/heads: key_length and value_length are written
  c.rope_dim = 128;
  const Model m = make_synthetic_model(c, WeightScheme::q4_k_m(), 1, pool);
  TempDir dir;
  const std::string path = (dir / "m.gguf").string();
  write_synthetic_gguf(m, {"meta", WeightScheme::q4_k_m(), "qwen2.5-7b", 1}, path);
  const gguf::Reader r(path);
  const auto type_of = [&](const char* key) { return r.find(key)->value.type; };
  EXPECT_EQ(r.get_string("general.architecture"), "llama");
  EXPECT_EQ(r.get_string("general.name"), "meta");
  EXPECT_EQ(r.get_uint("general.file_type"), 15u) << "MOSTLY_Q4_K_M";
  EXPECT_EQ(r.get_uint("general.quantization_version"), 2u);
  for (const char* key :
       {"llama.context_length", "llama.embedding_length", "llama.block_count",
        "llama.feed_forward_length", "llama.attention.head_count", "llama.attention.head_count_kv",
        "llama.attention.key_length", "llama.attention.value_length", "llama.rope.dimension_count",
        "llama.vocab_size", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"}) {
    ASSERT_NE(r.find(key), nullptr) << key;
    EXPECT_EQ(type_of(key), gguf::ValueType::kUint32) << key;
  }
  EXPECT_EQ(r.get_uint("llama.attention.key_length"), 128u);
  EXPECT_EQ(type_of("llama.rope.freq_base"), gguf::ValueType::kFloat32);
  EXPECT_EQ(type_of("llama.attention.layer_norm_rms_epsilon"), gguf::ValueType::kFloat32);
  EXPECT_EQ(r.get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(r.get_string_array("tokenizer.ggml.tokens").size(), 300u);
  EXPECT_EQ(r.get_int_array("tokenizer.ggml.token_type").back(), 3);
  EXPECT_EQ(r.get_string("decodebench.synthetic.dtype"), "q4_k_m");
  EXPECT_EQ(r.get_uint("decodebench.synthetic.seed"), 1u);
  // Tensor order and offsets as ggml requires: in info order, each at align(previous end).
  uint64_t expect = 0;
  for (const gguf::TensorInfo& t : r.tensors()) {
    EXPECT_EQ(t.offset, expect) << t.name;
    expect = (t.offset + t.bytes + 31) / 32 * 32;
  }
  EXPECT_EQ(r.find_tensor("blk.2.ffn_down.weight")->type_id, 14u) << "Q6_K (last layer)";
  EXPECT_EQ(r.find_tensor("blk.1.ffn_down.weight")->type_id, 12u) << "Q4_K";
  EXPECT_EQ(r.find_tensor("output.weight")->type_id, 14u);
  EXPECT_EQ(r.find_tensor("token_embd.weight")->type_id, 12u);
  EXPECT_EQ(r.find_tensor("blk.0.attn_q.bias"), nullptr);
}

TEST(SyntheticGguf, FileTypesAndFillerVocab) {
  EXPECT_EQ(gguf_file_type(WeightType::kBF16), 32u);
  EXPECT_EQ(gguf_file_type(WeightType::kQ4_0), 2u);
  EXPECT_EQ(gguf_file_type(WeightType::kQ8_0), 7u);
  EXPECT_EQ(gguf_file_type(WeightType::kQ4_K), std::nullopt);
  const FillerVocab small = filler_vocab(4);
  EXPECT_EQ(small.tokens, (std::vector<std::string>{"Ā", "ā", "Ă", "<|endoftext|>"}));
  EXPECT_EQ(small.eos_id, 3);
  const FillerVocab big = filler_vocab(1000);
  EXPECT_EQ(big.tokens[' '], "Ġ");
  EXPECT_EQ(big.tokens['A'], "A");
  EXPECT_EQ(big.tokens[127], "ġ") << "the stand-in of byte 0x7f";
  EXPECT_EQ(big.tokens[128], "<t128>");
  EXPECT_EQ(big.tokens[999], "<|endoftext|>");
  EXPECT_THROW(filler_vocab(1), Error);
}

}  // namespace
}  // namespace decodebench
