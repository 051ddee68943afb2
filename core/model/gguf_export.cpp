#include "core/model/gguf_export.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"
#include "core/gguf/reader.hpp"
#include "core/gguf/writer.hpp"
#include "core/tokenizer/unicode.hpp"

namespace decodebench {

namespace {

// The tensor source of a matrix view, rows in stored order or, with `heads` > 0, each head's rows
// interleaved (file row 2i + s = model row s·d/2 + i, d = rows per head).
gguf::Writer::Source matrix_source(const TensorView& t, int64_t heads) {
  return [t, heads](gguf::TensorSink& sink) {
    if (heads == 0) {
      sink.write(t.data, static_cast<uint64_t>(t.bytes()));
      return;
    }
    const int64_t d = t.rows / heads;
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t r = 0; r < d; ++r) {
        const int64_t src = h * d + (r % 2) * (d / 2) + r / 2;
        sink.write(t.row(src), static_cast<uint64_t>(t.row_bytes()));
      }
    }
  };
}

// The same interleaving for a 1-D F32 bias of heads·d values.
gguf::Writer::Source bias_source(const TensorView& t, int64_t heads) {
  return [t, heads](gguf::TensorSink& sink) {
    std::vector<float> v(t.f32(), t.f32() + t.cols);
    if (heads > 0) {
      const int64_t d = t.cols / heads;
      for (int64_t h = 0; h < heads; ++h) {
        for (int64_t r = 0; r < d; ++r) v[h * d + r] = t.f32()[h * d + (r % 2) * (d / 2) + r / 2];
      }
    }
    sink.write(v.data(), v.size() * sizeof(float));
  };
}

}  // namespace

std::string gguf_architecture_for(const ModelConfig& config) {
  return config.qkv_bias ? "qwen2" : "llama";
}

std::optional<uint32_t> gguf_file_type(const WeightScheme& scheme) {
  if (scheme.mix == WeightScheme::Mix::kQ4_K_M) return 15;
  switch (scheme.type) {
    case WeightType::kF32:
      return 0;
    case WeightType::kF16:
      return 1;
    case WeightType::kBF16:
      return 32;
    case WeightType::kQ4_0:
      return 2;
    case WeightType::kQ4_1:
      return 3;
    case WeightType::kQ5_0:
      return 8;
    case WeightType::kQ5_1:
      return 9;
    case WeightType::kQ8_0:
      return 7;
    case WeightType::kQ6_K:
      return 18;
    case WeightType::kQ4_K:
    case WeightType::kQ5_K:
      return std::nullopt;
  }
  return std::nullopt;
}

FillerVocab filler_vocab(int64_t vocab) {
  if (vocab < 2) throw usage_error("a filler vocabulary needs at least 2 tokens");
  FillerVocab v;
  v.tokens.reserve(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i) {
    std::string text;
    if (i < kFillerByteTokens) {
      unicode::append_utf8(text, unicode::byte_to_codepoint(static_cast<uint8_t>(i)));
    } else {
      text = "<t" + std::to_string(i) + ">";
    }
    v.tokens.push_back(std::move(text));
  }
  v.token_types.assign(static_cast<size_t>(vocab), 1);
  v.eos_id = static_cast<int32_t>(vocab - 1);
  v.tokens.back() = "<|endoftext|>";
  v.token_types.back() = 3;
  return v;
}

void write_synthetic_gguf(const Model& model, const GgufExportInfo& info, const std::string& path) {
  const ModelConfig& c = model.config;
  if (c.qk_norm || !c.rope_freq_divisors.empty() || c.rope_dim != c.head_dim ||
      c.rope_style != RopeStyle::kHalfSplit) {
    throw usage_error(
        "only synthetic-shaped models can be written as GGUF (half-split RoPE over the whole "
        "head, no RoPE scaling, no QK-norm)");
  }
  const std::string arch = gguf_architecture_for(c);
  const bool llama = arch == "llama";
  const std::string a = arch + ".";
  const auto u32 = [](int64_t v, const char* what) {
    if (v < 0 || v > UINT32_MAX) {
      throw usage_error(std::string(what) + " (" + std::to_string(v) + ") does not fit a UINT32");
    }
    return static_cast<uint32_t>(v);
  };
  // GGUF stores these as f32: a value that rounds to 0, a subnormal or inf would write a file
  // that no loader (ours included) accepts.
  const auto f32 = [](double v, const char* what) {
    const auto f = static_cast<float>(v);
    if (!std::isnormal(f) || f < 0) {
      throw usage_error(
          fmt::format("{} ({:g}) is not a positive normal f32, as GGUF stores it", what, v));
    }
    return f;
  };
  const float rope_theta = f32(c.rope_theta, "rope-theta");
  const float rms_eps = f32(c.rms_eps, "rms-eps");

  gguf::Writer w;
  w.add_string("general.architecture", arch);
  w.add_string("general.name", info.name);
  if (const auto ft = gguf_file_type(info.scheme)) w.add_uint32("general.file_type", *ft);
  bool quantized = false;
  for (WeightType t : info.scheme.types()) quantized |= weight_traits(t).block_elems > 1;
  if (quantized) w.add_uint32("general.quantization_version", gguf::kQuantizationVersion);

  w.add_uint32(a + "context_length", u32(c.context_length, "context length"));
  w.add_uint32(a + "embedding_length", u32(c.hidden, "hidden"));
  w.add_uint32(a + "block_count", u32(c.n_layers, "layers"));
  w.add_uint32(a + "feed_forward_length", u32(c.ffn, "ffn"));
  w.add_uint32(a + "attention.head_count", u32(c.n_heads, "heads"));
  w.add_uint32(a + "attention.head_count_kv", u32(c.n_kv_heads, "kv heads"));
  if (c.head_dim * c.n_heads != c.hidden) {
    w.add_uint32(a + "attention.key_length", u32(c.head_dim, "head dim"));
    w.add_uint32(a + "attention.value_length", u32(c.head_dim, "head dim"));
  }
  w.add_uint32(a + "rope.dimension_count", u32(c.rope_dim, "rope dims"));
  w.add_float32(a + "rope.freq_base", rope_theta);
  w.add_float32(a + "attention.layer_norm_rms_epsilon", rms_eps);
  w.add_uint32(a + "vocab_size", u32(c.vocab, "vocab"));

  const FillerVocab vocab = filler_vocab(c.vocab);
  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", "default");
  w.add_string_array("tokenizer.ggml.tokens", vocab.tokens);
  w.add_int32_array("tokenizer.ggml.token_type", vocab.token_types);
  w.add_string_array("tokenizer.ggml.merges", {});
  w.add_uint32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(vocab.eos_id));
  w.add_uint32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(vocab.eos_id));
  w.add_bool("tokenizer.ggml.add_bos_token", false);

  w.add_string("decodebench.synthetic.preset", info.preset);
  w.add_uint64("decodebench.synthetic.seed", info.seed);
  w.add_string("decodebench.synthetic.dtype", info.scheme.flag_name());

  const auto matrix = [&](const TensorView& t, int64_t permute_heads = 0) {
    w.add_tensor(t.name, {t.cols, t.rows}, static_cast<uint32_t>(t.type),
                 matrix_source(t, permute_heads));
  };
  const auto vec = [&](const TensorView& t, int64_t permute_heads = 0) {
    if (t.type != WeightType::kF32 || t.rows != 1) {
      throw usage_error("tensor '" + t.name + "' is not an F32 vector");
    }
    w.add_tensor(t.name, {t.cols}, static_cast<uint32_t>(WeightType::kF32),
                 bias_source(t, permute_heads));
  };
  const ModelWeights& mw = model.weights;
  const int64_t q_heads = llama ? c.n_heads : 0;
  const int64_t k_heads = llama ? c.n_kv_heads : 0;
  matrix(mw.token_embd);
  for (const LayerWeights& L : mw.layers) {
    vec(L.attn_norm);
    matrix(L.wq, q_heads);
    matrix(L.wk, k_heads);
    matrix(L.wv);
    if (L.bq.present()) {
      vec(L.bq, q_heads);
      vec(L.bk, k_heads);
      vec(L.bv);
    }
    matrix(L.wo);
    vec(L.ffn_norm);
    matrix(L.w_gate);
    matrix(L.w_up);
    matrix(L.w_down);
  }
  vec(mw.output_norm);
  if (!c.tied_embeddings) matrix(mw.output);
  w.write(path);
}

}  // namespace decodebench
