// core/gguf/inspect: architecture summary fallbacks, bytes per token (tied and untied), bytes
// per type, and JSON/text output for awkward metadata (invalid UTF-8, control bytes, odd types).
#include <gtest/gtest.h>

#include <string>

#include "core/gguf/inspect.hpp"
#include "tests/core/gguf_bytes.hpp"
#include "tests/support/support.hpp"

namespace decodebench::testing {
namespace {

using gguf::Reader;

ValueWriter v_f32(float v) {
  return [v](GgufBytes& b, const std::string&) {
    b.u32(6);
    b.raw(&v, 4);
  };
}

// A tiny qwen3-like file: D=256, V=8 (token_embd F16 {256, 8} = 4096 B, 512 B per row),
// one layer with attn_q Q8_0 {256, 512} (272 B per row, 139264 B) and a norm F32 {256} (1024 B).
FileSpec tiny_model(bool with_output) {
  FileSpec s;
  s.kvs = {{"general.architecture", v_string("qwen3")},
           {"qwen3.block_count", v_u32(1)},
           {"qwen3.embedding_length", v_u32(256)},
           {"qwen3.attention.head_count", v_array_u32({4, 8, 2})},  // per-layer
           {"qwen3.attention.head_count_kv", v_u64(2)},
           {"qwen3.attention.key_length", v_u32(128)},
           {"qwen3.feed_forward_length", v_string("oops")},  // wrong type: noted, ignored
           {"qwen3.rope.freq_base", v_f32(1000000.0f)},
           {"qwen3.attention.layer_norm_rms_epsilon", v_f32(1e-6f)}};
  s.tensors = {{"token_embd.weight", {256, 8}, 1, 4096, std::nullopt},
               {"blk.0.attn_q.weight", {256, 512}, 8, 256 / 32 * 34 * 512, std::nullopt},
               {"output_norm.weight", {256}, 0, 1024, std::nullopt}};
  if (with_output) s.tensors.push_back({"output.weight", {256, 8}, 1, 4096, std::nullopt});
  return s;
}

TEST(GgufInspect, SummaryAndBytesPerToken) {
  TempDir dir;
  for (const bool with_output : {false, true}) {
    SCOPED_TRACE(with_output ? "untied" : "tied");
    build_gguf(tiny_model(with_output)).write(dir / "m.gguf");
    const Reader r((dir / "m.gguf").string());
    const gguf::ArchitectureSummary s = gguf::summarize_architecture(r);
    EXPECT_EQ(s.architecture, "qwen3");
    EXPECT_EQ(s.layers, 1u);
    EXPECT_EQ(s.hidden, 256u);
    EXPECT_EQ(s.heads, 8u);  // maximum of the per-layer array
    EXPECT_EQ(s.kv_heads, 2u);
    EXPECT_EQ(s.head_dim, 128u);
    EXPECT_EQ(s.head_dim_source, "key_length");
    EXPECT_EQ(s.ffn, std::nullopt);
    EXPECT_EQ(s.vocab, 8u);
    EXPECT_EQ(s.vocab_source, "token_embd.weight");
    EXPECT_EQ(s.context_length, std::nullopt);
    EXPECT_EQ(s.rope_freq_base, 1000000.0);
    EXPECT_EQ(s.rms_eps, static_cast<double>(1e-6f));
    EXPECT_EQ(s.tied, !with_output);
    ASSERT_EQ(s.notes.size(), 2u);
    EXPECT_NE(s.notes[0].find("qwen3.attention.head_count is a per-layer array of 3 values"),
              std::string::npos)
        << s.notes[0];
    EXPECT_NE(s.notes[1].find("'qwen3.feed_forward_length' has type STRING"), std::string::npos)
        << s.notes[1];

    // attn_q + norm + one embedding row (+ the whole embedding again as the tied LM head,
    // or output.weight when present).
    const uint64_t body = 139264 + 1024 + 512;
    EXPECT_EQ(gguf::decode_bytes_per_token(r), body + 4096);

    const std::vector<gguf::TypeUsage> types = gguf::bytes_per_type(r);
    ASSERT_EQ(types.size(), 3u);
    EXPECT_EQ(types[0].type_id, 0u);
    EXPECT_EQ(types[0].count, 1u);
    EXPECT_EQ(types[0].bytes, 1024u);
    EXPECT_EQ(types[1].type_id, 1u);
    EXPECT_EQ(types[1].count, with_output ? 2u : 1u);
    EXPECT_EQ(types[1].bytes, with_output ? 8192u : 4096u);
    EXPECT_EQ(types[2].type_id, 8u);
    EXPECT_EQ(types[2].bytes, 139264u);

    const nlohmann::json doc = gguf::inspect_json(r);
    EXPECT_EQ(doc["bytes_per_token"], body + 4096);
    EXPECT_EQ(doc["architecture"]["tied"], !with_output);
    EXPECT_EQ(doc["architecture"]["rms_eps"], 1e-6);
    EXPECT_EQ(doc["architecture"]["ffn"], nullptr);
    EXPECT_EQ(doc["notes"].size(), 2u);
    EXPECT_EQ(doc["totals"]["parameters"], 256 * 8 + 256 * 512 + 256 + (with_output ? 2048 : 0));
    const std::string text = gguf::inspect_report(r);
    EXPECT_NE(text.find("head dim 128 (key_length)"), std::string::npos) << text;
    EXPECT_NE(text.find(with_output ? "tied embeddings no" : "tied embeddings yes"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("bytes read per decode token: " + std::to_string(body + 4096)),
              std::string::npos)
        << text;
  }
}

TEST(GgufInspect, HeadDimAndVocabFallbacks) {
  TempDir dir;
  FileSpec s;
  s.kvs = {{"general.architecture", v_string("llama")},
           {"llama.embedding_length", v_u32(96)},
           {"llama.attention.head_count", v_u32(3)},
           {"llama.vocab_size", v_u32(7)},
           {"tokenizer.ggml.tokens", v_array_str({"a", "b"})}};
  build_gguf(s).write(dir / "v.gguf");
  const Reader r((dir / "v.gguf").string());
  const gguf::ArchitectureSummary a = gguf::summarize_architecture(r);
  EXPECT_EQ(a.head_dim, 32u);
  EXPECT_EQ(a.head_dim_source, "hidden/heads");
  EXPECT_EQ(a.vocab, 7u);  // vocab_size wins over the token count
  EXPECT_EQ(a.vocab_source, "vocab_size");
  EXPECT_EQ(a.tied, std::nullopt);
  EXPECT_EQ(gguf::decode_bytes_per_token(r), 0u);

  s.kvs.erase(s.kvs.begin() + 3);
  build_gguf(s).write(dir / "v.gguf");
  const Reader r2((dir / "v.gguf").string());
  EXPECT_EQ(gguf::summarize_architecture(r2).vocab, 2u);
  EXPECT_EQ(gguf::summarize_architecture(r2).vocab_source, "tokenizer.ggml.tokens");

  // An embedding of more rows than the tokenizer has tokens (a padded vocabulary): a run computes
  // logits over every row, so the vocabulary shown is the rows', with a note on the ids without
  // text.
  s.tensors = {{"token_embd.weight", {64, 5}, 0, 64 * 5 * 4, std::nullopt}};
  build_gguf(s).write(dir / "v.gguf");
  const Reader r3((dir / "v.gguf").string());
  const gguf::ArchitectureSummary padded = gguf::summarize_architecture(r3);
  EXPECT_EQ(padded.vocab, 5u);
  EXPECT_EQ(padded.vocab_source, "token_embd.weight");
  ASSERT_FALSE(padded.notes.empty());
  EXPECT_EQ(padded.notes.back(),
            "the tokenizer holds 2 tokens for the 5 rows of token_embd.weight: ids 2 to 4 have no "
            "text");
}

TEST(GgufInspect, AwkwardStringsStayPrintableAndValidJson) {
  TempDir dir;
  FileSpec s;
  const std::string bad_utf8 = std::string("x\xFF\xC0\xAFy\xED\xA0\x80z", 9);
  s.kvs = {{"general.architecture", v_string("llama")},
           {std::string("bad.\xFEkey", 8), v_u32(1)},
           {"bad.value", v_string(bad_utf8)},
           {"ctl.value", v_string("line1\nline2\t\x01\x7f")},
           {"long.value", v_string(std::string(500, 'q'))},
           {"long.array", v_array_str(std::vector<std::string>(40, "\xF0\x9F\x99\x82"))},
           {"c1.value", v_string(std::string("a\xC2\x9B") + "31mb" + "\xC2\xA0" + "c")}};
  s.tensors = {{std::string("t\xFF", 2), {4}, 0, 16, std::nullopt}};
  build_gguf(s).write(dir / "s.gguf");
  const Reader r((dir / "s.gguf").string());

  const nlohmann::json doc = gguf::inspect_json(r);
  const std::string dumped = doc.dump();  // throws on invalid UTF-8
  const nlohmann::json back = nlohmann::json::parse(dumped);
  EXPECT_EQ(back["metadata"][1]["key"], "bad.\xEF\xBF\xBDkey");
  // Each invalid byte becomes U+FFFD (overlong C0 AF and the surrogate ED A0 80 included).
  EXPECT_EQ(back["metadata"][2]["value"],
            "x\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDy\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDz");
  EXPECT_EQ(back["metadata"][3]["value"], "line1\nline2\t\x01\x7f");
  EXPECT_EQ(back["metadata"][4]["value"].get<std::string>().size(), 500u);
  EXPECT_EQ(back["metadata"][5]["count"], 40);
  EXPECT_EQ(back["metadata"][5]["values"].size(), 16u);
  EXPECT_EQ(back["metadata"][5]["values"][15], "\xF0\x9F\x99\x82");
  EXPECT_EQ(back["metadata"][5]["truncated"], true);
  EXPECT_EQ(back["tensors"][0]["name"], "t\xEF\xBF\xBD");

  const std::string text = gguf::inspect_report(r);
  EXPECT_NE(text.find("bad.\\xfekey"), std::string::npos) << text;
  EXPECT_NE(text.find("\"x\\xff\\xc0\\xafy\\xed\\xa0\\x80z\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"line1\\nline2\\t\\x01\\x7f\""), std::string::npos) << text;
  // A C1 control (U+009B is a terminal's CSI) is escaped; U+00A0, printable, is not.
  EXPECT_NE(text.find("\"a\\u009b31mb\xC2\xA0"
                      "c\""),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("... (500 bytes)"), std::string::npos) << text;
  EXPECT_NE(text.find("count 40 ["), std::string::npos) << text;
  EXPECT_EQ(text.find('\x01'), std::string::npos);
  EXPECT_EQ(text.find(std::string(100, 'q')), std::string::npos);
}

}  // namespace
}  // namespace decodebench::testing
