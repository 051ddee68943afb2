#include "core/model/gguf_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/gguf/printable.hpp"
#include "core/gguf/reader.hpp"
#include "core/quant/dequant.hpp"

namespace decodebench {

std::string file_type_name(int64_t t) {
  switch (t) {
    case 0:
      return "ALL_F32";
    case 1:
      return "MOSTLY_F16";
    case 2:
      return "MOSTLY_Q4_0";
    case 3:
      return "MOSTLY_Q4_1";
    case 7:
      return "MOSTLY_Q8_0";
    case 8:
      return "MOSTLY_Q5_0";
    case 9:
      return "MOSTLY_Q5_1";
    case 10:
      return "MOSTLY_Q2_K";
    case 11:
      return "MOSTLY_Q3_K_S";
    case 12:
      return "MOSTLY_Q3_K_M";
    case 13:
      return "MOSTLY_Q3_K_L";
    case 14:
      return "MOSTLY_Q4_K_S";
    case 15:
      return "MOSTLY_Q4_K_M";
    case 16:
      return "MOSTLY_Q5_K_S";
    case 17:
      return "MOSTLY_Q5_K_M";
    case 18:
      return "MOSTLY_Q6_K";
    case 32:
      return "MOSTLY_BF16";
    default:
      return "type#" + std::to_string(t);
  }
}

namespace {

/// The alignment the CPU kernels may assume of a tensor's bytes: what GGUF's default alignment
/// (32) gives in a page-aligned mapping.
constexpr size_t kTensorAlignment = 32;
struct alignas(kTensorAlignment) AlignedChunk {
  uint8_t bytes[kTensorAlignment];
};

// Keeps the mapping and the F32 copies of small tensors alive as long as the Model.
struct GgufStorage {
  std::shared_ptr<gguf::Reader> reader;
  std::vector<std::vector<float>> f32_copies;
  /// Copies of tensors whose bytes sit off kTensorAlignment in the mapping (aligned_data).
  std::vector<std::vector<AlignedChunk>> aligned_copies;
};

// "{576, 1000}": a tensor's GGUF dims, for messages.
std::string dims_text(const gguf::TensorInfo& t) {
  std::string s = "{";
  for (uint32_t i = 0; i < t.n_dims; ++i) s += (i ? ", " : "") + std::to_string(t.dims[i]);
  return s + "}";
}

class Binder {
 public:
  Binder(const gguf::Reader& r, GgufStorage& storage) : r_(r), storage_(storage) {}

  // A matrix of `rows` × `cols` (GGUF dims {cols, rows}); nullopt-like empty view when optional
  // and absent.
  TensorView matrix(const std::string& name, int64_t rows, int64_t cols, bool required = true) {
    const gguf::TensorInfo* t = r_.find_tensor(name);
    if (!t) {
      if (required) throw usage_error(r_.path() + ": missing tensor '" + name + "'");
      return {};
    }
    check_type(*t);
    if (t->n_dims > 2 || t->dims[0] != cols || t->dims[1] != rows) {
      throw usage_error(r_.path() + ": tensor '" + name + "' has GGUF dims " + dims_text(*t) +
                        ", expected {" + std::to_string(cols) + ", " + std::to_string(rows) +
                        "} from the hyperparameters");
    }
    TensorView v;
    v.name = name;
    v.type = static_cast<WeightType>(t->type_id);
    v.data = aligned_data(*t);
    v.rows = rows;
    v.cols = cols;
    return v;
  }

  // A 1-D tensor of `n` values, always presented as F32.
  TensorView vector(const std::string& name, int64_t n, bool required = true) {
    const gguf::TensorInfo* t = r_.find_tensor(name);
    if (!t) {
      if (required) throw usage_error(r_.path() + ": missing tensor '" + name + "'");
      return {};
    }
    check_type(*t);
    if (t->elements() != n || t->dims[0] != n) {
      throw usage_error(r_.path() + ": tensor '" + name + "' has GGUF dims " + dims_text(*t) +
                        ", expected {" + std::to_string(n) + "}");
    }
    TensorView v;
    v.name = name;
    v.type = WeightType::kF32;
    v.rows = 1;
    v.cols = n;
    const auto type = static_cast<WeightType>(t->type_id);
    if (type == WeightType::kF32) {
      v.data = aligned_data(*t);
    } else {
      std::vector<float> copy(static_cast<size_t>(n));
      quant::dequantize_row(type, r_.tensor_data(*t), copy.data(), n);
      storage_.f32_copies.push_back(std::move(copy));
      v.data = storage_.f32_copies.back().data();
    }
    return v;
  }

 private:
  // The tensor's bytes in the mapping, or a copy where they sit off kTensorAlignment: a file may
  // set general.alignment as low as 1 (ggml accepts any power of two), and the CPU kernels read
  // F32 and F16 values in place (unaligned loads are undefined behaviour).
  const uint8_t* aligned_data(const gguf::TensorInfo& t) {
    const uint8_t* p = r_.tensor_data(t);
    if (reinterpret_cast<uintptr_t>(p) % kTensorAlignment == 0) return p;
    const size_t bytes = static_cast<size_t>(t.bytes);
    std::vector<AlignedChunk> copy((bytes + kTensorAlignment - 1) / kTensorAlignment);
    std::memcpy(copy.data(), p, bytes);
    storage_.aligned_copies.push_back(std::move(copy));
    return storage_.aligned_copies.back().front().bytes;
  }

  void check_type(const gguf::TensorInfo& t) const {
    if (!is_supported_weight_type(t.type_id)) {
      throw unsupported_error(
          r_.path() + ": unsupported tensor type " + gguf::ggml_type_name(t.type_id) +
          " in tensor " + t.name +
          " (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, "
          "Q6_K)");
    }
  }
  const gguf::Reader& r_;
  GgufStorage& storage_;
};

uint64_t require_uint64(const gguf::Reader& r, const std::string& key) {
  const auto v = r.get_uint(key);
  if (!v) throw usage_error(r.path() + ": missing metadata key '" + key + "'");
  return *v;
}

// `v`, the value of metadata key `key`, as a model dimension: a uint64 past INT64_MAX would turn
// negative and be reported as "must be > 0 (got -1)".
int64_t dimension(const gguf::Reader& r, const std::string& key, uint64_t v) {
  if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    throw usage_error(r.path() + ": metadata key '" + key + "' is " + std::to_string(v) +
                      ", too large for a model dimension");
  }
  return static_cast<int64_t>(v);
}

int64_t require_uint(const gguf::Reader& r, const std::string& key) {
  return dimension(r, key, require_uint64(r, key));
}

// The optional key `key` as a model dimension, or `fallback` when absent.
int64_t uint_or(const gguf::Reader& r, const std::string& key, int64_t fallback) {
  const auto v = r.get_uint(key);
  return v ? dimension(r, key, *v) : fallback;
}

// The float metadata key `key`, or nullopt when absent. GGUF stores the float hyperparameters as
// FLOAT32 (gguf-facts.md §3) and llama.cpp refuses other types; FLOAT64 is read too, an integer
// type is refused: a UINT64 rms epsilon of 1.8e19 ran.
std::optional<double> float_key(const gguf::Reader& r, const std::string& key) {
  const gguf::KeyValue* kv = r.find(key);
  if (kv == nullptr) return std::nullopt;
  if (!gguf::is_float(kv->value.type)) {
    throw usage_error(
        fmt::format("{}: offset {}: metadata key '{}' has type {}, expected FLOAT32 or FLOAT64 "
                    "(as llama.cpp writes and reads it; decodebench refuses integer types for "
                    "float keys)",
                    r.path(), kv->offset, key, gguf::value_type_name(kv->value.type)));
  }
  return r.get_float(key);
}

// Error (exit 2) naming float key `key` and its value `v` when `ok` is false: "must be RULE".
void require_float(const gguf::Reader& r, const std::string& key, double v, bool ok,
                   const char* rule) {
  if (!ok) {
    throw usage_error(
        fmt::format("{}: metadata key '{}' is {:g}, which must be {}", r.path(), key, v, rule));
  }
}

// A per-layer array must be uniform for decodebench's fixed-shape kernels.
int64_t uint_or_uniform_array(const gguf::Reader& r, const std::string& key,
                              std::optional<int64_t> fallback) {
  const gguf::KeyValue* kv = r.find(key);
  if (kv && kv->value.type == gguf::ValueType::kArray) {
    const auto values = r.get_int_array(key);
    if (values.empty()) throw usage_error(r.path() + ": metadata key '" + key + "' is empty");
    for (int64_t v : values) {
      if (v != values[0]) {
        throw unsupported_error(r.path() + ": metadata key '" + key +
                                "' varies per layer, which decodebench does not support");
      }
    }
    return values[0];
  }
  if (kv) return dimension(r, key, *r.get_uint(key));
  if (fallback) return *fallback;
  throw usage_error(r.path() + ": missing metadata key '" + key + "'");
}

}  // namespace

namespace {

// The layer of a "blk.<l>.<tensor>" name, or -1.
int64_t layer_of(const std::string& name) {
  if (!name.starts_with("blk.")) return -1;
  const size_t dot = name.find('.', 4);
  const std::string digits = dot == std::string::npos ? "" : name.substr(4, dot - 4);
  if (digits.empty() || digits.size() > 9 ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    return -1;
  }
  return std::stoll(digits);
}

// Whether the model of config `c` reads tensor `name` (what load_gguf_model binds; optional
// biases count as read, since a file that has them gets them applied).
bool model_reads(const ModelConfig& c, const std::string& name) {
  if (name == "token_embd.weight" || name == "output_norm.weight" || name == "output.weight" ||
      name == "rope_freqs.weight") {
    return true;
  }
  const int64_t layer = layer_of(name);
  if (layer < 0 || layer >= c.n_layers) return false;
  const std::string t = name.substr(name.find('.', 4) + 1);
  for (const char* known :
       {"attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_q.bias",
        "attn_k.bias", "attn_v.bias", "attn_output.weight", "ffn_norm.weight", "ffn_gate.weight",
        "ffn_up.weight", "ffn_down.weight"}) {
    if (t == known) return true;
  }
  return c.qk_norm && (t == "attn_q_norm.weight" || t == "attn_k_norm.weight");
}

// A layer's tensor the model does not read is part of a model decodebench does not compute (an
// output bias, a norm it lacks): refused rather than run as another model. Returns their names.
std::vector<std::string> unread_layer_tensors(const gguf::Reader& r, const ModelConfig& c) {
  std::vector<std::string> out;
  for (const gguf::TensorInfo& t : r.tensors()) {
    const int64_t layer = layer_of(t.name);
    if (layer >= 0 && layer < c.n_layers && !model_reads(c, t.name)) out.push_back(t.name);
  }
  return out;
}

}  // namespace

Model load_gguf_model(const std::string& path) {
  auto storage = std::make_shared<GgufStorage>();
  storage->reader = std::make_shared<gguf::Reader>(path);
  const gguf::Reader& r = *storage->reader;

  // Without a string architecture the file is no model decodebench knows (not a broken one).
  std::optional<std::string> arch;
  try {
    arch = r.get_string("general.architecture");
  } catch (const Error& e) {
    throw unsupported_error(std::string(e.what()) + " (decodebench runs " +
                            kSupportedArchitectures + ")");
  }
  if (!arch) {
    throw unsupported_error(path +
                            ": missing metadata key 'general.architecture' (decodebench runs " +
                            kSupportedArchitectures + ")");
  }
  if (*arch != "llama" && *arch != "qwen2" && *arch != "qwen3") {
    throw unsupported_error(path + ": unsupported architecture '" +
                            gguf::escape_text(*arch, gguf::kMessageStringBytes) +
                            "' (supported: " + kSupportedArchitectures + ")");
  }
  // LoRA adapters and other GGUF kinds carry an architecture but no model.
  if (const auto type = r.get_string("general.type"); type && *type != "model") {
    throw unsupported_error(path + ": general.type is '" +
                            gguf::escape_text(*type, gguf::kMessageStringBytes) +
                            "', not 'model' (decodebench runs whole models)");
  }
  const std::string a = *arch + ".";
  if (const auto experts = r.get_uint(a + "expert_count"); experts && *experts > 0) {
    throw unsupported_error(path + ": a mixture-of-experts model (" + a + "expert_count " +
                            std::to_string(*experts) + "), which decodebench does not run");
  }
  Model m;
  ModelConfig& c = m.config;
  c.architecture = *arch;
  c.n_layers = require_uint(r, a + "block_count");
  c.hidden = require_uint(r, a + "embedding_length");
  c.ffn = uint_or_uniform_array(r, a + "feed_forward_length", std::nullopt);
  c.n_heads = uint_or_uniform_array(r, a + "attention.head_count", std::nullopt);
  c.n_kv_heads = uint_or_uniform_array(r, a + "attention.head_count_kv", c.n_heads);
  if (c.n_heads <= 0) throw usage_error(path + ": attention.head_count must be > 0");
  c.head_dim = uint_or(r, a + "attention.key_length", c.hidden / c.n_heads);
  const int64_t value_length = uint_or(r, a + "attention.value_length", c.head_dim);
  if (value_length != c.head_dim) {
    throw unsupported_error(path + ": attention.value_length (" + std::to_string(value_length) +
                            ") differs from key_length (" + std::to_string(c.head_dim) +
                            "), which decodebench does not support");
  }
  c.rope_dim = uint_or(r, a + "rope.dimension_count", c.head_dim);
  c.rope_theta = float_key(r, a + "rope.freq_base").value_or(10000.0);
  require_float(r, a + "rope.freq_base", c.rope_theta,
                std::isfinite(c.rope_theta) && c.rope_theta > 0, "finite and > 0");
  const auto eps = float_key(r, a + "attention.layer_norm_rms_epsilon");
  if (!eps)
    throw usage_error(path + ": missing metadata key '" + a + "attention.layer_norm_rms_epsilon'");
  c.rms_eps = *eps;
  // validate()'s rule for every model (core/model/config.cpp), checked here to name the key.
  require_float(r, a + "attention.layer_norm_rms_epsilon", c.rms_eps,
                std::isfinite(c.rms_eps) && c.rms_eps > 0 && c.rms_eps < 1,
                "finite and in (0, 1) (models use 1e-6 to 1e-5)");
  // Only a limit on prompt + tokens here: a file that claims more than we can address is
  // decoded within kMaxContext rather than refused.
  c.context_length = static_cast<int64_t>(
      std::min(require_uint64(r, a + "context_length"), static_cast<uint64_t>(kMaxContext)));
  const auto scaling = r.get_string(a + "rope.scaling.type");
  const double factor = float_key(r, a + "rope.scaling.factor").value_or(0.0);
  require_float(r, a + "rope.scaling.factor", factor, std::isfinite(factor) && factor >= 0,
                "finite and >= 0 (0 or 1: no scaling)");
  if ((scaling && *scaling != "none" &&
       !(*scaling == "linear" && (factor == 0.0 || factor == 1.0))) ||
      (!scaling && factor != 0.0 && factor != 1.0)) {
    throw unsupported_error(
        path + ": RoPE scaling '" +
        gguf::escape_text(scaling.value_or("linear"), gguf::kMessageStringBytes) +
        "' with factor " + std::to_string(factor) + " is not supported");
  }
  c.rope_style = *arch == "llama" ? RopeStyle::kAdjacent : RopeStyle::kHalfSplit;
  c.qkv_bias = *arch == "qwen2";
  c.qk_norm = *arch == "qwen3";

  const gguf::TensorInfo* embd = r.find_tensor("token_embd.weight");
  if (!embd) throw usage_error(path + ": missing tensor 'token_embd.weight'");
  c.vocab = embd->dims[1];
  // The embedding's columns are the hidden size: a disagreeing embedding_length would otherwise
  // surface as a head-dimension or RoPE error derived from it.
  if (embd->n_dims > 2 || embd->dims[0] != c.hidden) {
    throw usage_error(path + ": tensor 'token_embd.weight' has GGUF dims " + dims_text(*embd) +
                      ", but " + a + "embedding_length is " + std::to_string(c.hidden) +
                      " (expected {" + std::to_string(c.hidden) + ", vocab})");
  }
  // Without key_length the head dimension is hidden / heads (head_dim above), which must then
  // divide exactly (a truncated quotient would be blamed on RoPE or the tensors' shapes).
  if (!r.get_uint(a + "attention.key_length") && c.hidden % c.n_heads != 0) {
    throw usage_error(path + ": " + a + "embedding_length " + std::to_string(c.hidden) +
                      " is not a multiple of " + a + "attention.head_count " +
                      std::to_string(c.n_heads) + " and " + a +
                      "attention.key_length is absent (no head dimension)");
  }
  // The embedding's rows are the vocabulary the model computes logits over; a vocab_size or a
  // tokenizer that disagrees would give inspect and a run different vocabularies, or token ids
  // without an embedding row.
  if (const auto vs = r.get_uint(a + "vocab_size"); vs && *vs != static_cast<uint64_t>(c.vocab)) {
    throw usage_error(path + ": " + a + "vocab_size (" + std::to_string(*vs) +
                      ") differs from the " + std::to_string(c.vocab) +
                      " rows of token_embd.weight");
  }
  if (const gguf::KeyValue* tokens = r.find("tokenizer.ggml.tokens");
      tokens != nullptr && tokens->value.type == gguf::ValueType::kArray &&
      tokens->value.array.size() > static_cast<uint64_t>(c.vocab)) {
    throw usage_error(path + ": tokenizer.ggml.tokens has " +
                      std::to_string(tokens->value.array.size()) + " tokens, more than the " +
                      std::to_string(c.vocab) + " rows of token_embd.weight");
  }
  c.tied_embeddings = r.find_tensor("output.weight") == nullptr;
  try {
    validate(c);
  } catch (const Error& e) {  // its rules name the flags; here the values come from the file
    throw Error(e.code(),
                path + ": " + e.what() + " (values from the file's metadata and tensor shapes)");
  }

  Binder b(r, *storage);
  ModelWeights& w = m.weights;
  w.token_embd = b.matrix("token_embd.weight", c.vocab, c.hidden);
  if (r.find_tensor("rope_freqs.weight") != nullptr) {
    const TensorView f = b.vector("rope_freqs.weight", c.rope_dim / 2);
    c.rope_freq_divisors.assign(f.f32(), f.f32() + f.cols);
    // Each divides a RoPE frequency: 0, a negative, a subnormal or a non-finite value makes the
    // angles infinite or NaN (NaN logits), where rope.freq_base is held to the same rule.
    for (size_t i = 0; i < c.rope_freq_divisors.size(); ++i) {
      const float v = c.rope_freq_divisors[i];
      if (!std::isnormal(v) || v < 0) {
        throw usage_error(
            fmt::format("{}: rope_freqs.weight[{}] is {} (each divides a RoPE "
                        "frequency: a positive, normal number)",
                        path, i, v));
      }
    }
  }
  w.layers.resize(static_cast<size_t>(c.n_layers));
  for (int64_t l = 0; l < c.n_layers; ++l) {
    LayerWeights& L = w.layers[l];
    const std::string p = "blk." + std::to_string(l) + ".";
    L.attn_norm = b.vector(p + "attn_norm.weight", c.hidden);
    L.wq = b.matrix(p + "attn_q.weight", c.q_dim(), c.hidden);
    L.wk = b.matrix(p + "attn_k.weight", c.kv_dim(), c.hidden);
    L.wv = b.matrix(p + "attn_v.weight", c.kv_dim(), c.hidden);
    // qwen2 requires the biases; llama may carry them (rare).
    L.bq = b.vector(p + "attn_q.bias", c.q_dim(), c.qkv_bias);
    L.bk = b.vector(p + "attn_k.bias", c.kv_dim(), c.qkv_bias);
    L.bv = b.vector(p + "attn_v.bias", c.kv_dim(), c.qkv_bias);
    if (L.bq.present() != L.bk.present() || L.bq.present() != L.bv.present()) {
      throw usage_error(path + ": layer " + std::to_string(l) +
                        " has some but not all of attn_q/k/v.bias");
    }
    if (c.qk_norm) {
      L.q_norm = b.vector(p + "attn_q_norm.weight", c.head_dim);
      L.k_norm = b.vector(p + "attn_k_norm.weight", c.head_dim);
    }
    L.wo = b.matrix(p + "attn_output.weight", c.hidden, c.q_dim());
    L.ffn_norm = b.vector(p + "ffn_norm.weight", c.hidden);
    L.w_gate = b.matrix(p + "ffn_gate.weight", c.ffn, c.hidden);
    L.w_up = b.matrix(p + "ffn_up.weight", c.ffn, c.hidden);
    L.w_down = b.matrix(p + "ffn_down.weight", c.hidden, c.ffn);
  }
  if (!w.layers.empty() && w.layers[0].bq.present()) c.qkv_bias = true;
  w.output_norm = b.vector("output_norm.weight", c.hidden);
  w.output = c.tied_embeddings ? w.token_embd : b.matrix("output.weight", c.vocab, c.hidden);

  // A layer past block_count is a model of more layers than the header says (a wrong count):
  // running the first block_count layers would time another model.
  int64_t past = 0, last_layer = -1;
  std::string first_past;
  for (const gguf::TensorInfo& t : r.tensors()) {
    const int64_t layer = layer_of(t.name);
    if (layer < c.n_layers) continue;
    if (past++ == 0) first_past = t.name;
    last_layer = std::max(last_layer, layer);
  }
  if (past > 0) {
    throw usage_error(path + ": tensor '" +
                      gguf::escape_text(first_past, gguf::kMessageStringBytes) +
                      "' belongs to layer " + std::to_string(layer_of(first_past)) + ", but " + a +
                      "block_count is " + std::to_string(c.n_layers) + " (" + std::to_string(past) +
                      " tensor(s) of layers up to " + std::to_string(last_layer) +
                      " past it): block_count is likely wrong");
  }
  if (const auto extra = unread_layer_tensors(r, c); !extra.empty()) {
    std::string names;
    for (size_t i = 0; i < extra.size() && i < 4; ++i) {
      names += (i ? ", " : "") + gguf::escape_text(extra[i], gguf::kMessageStringBytes);
    }
    throw unsupported_error(
        path + ": tensors decodebench does not compute: " + names +
        (extra.size() > 4 ? ", ... (" + std::to_string(extra.size()) + ")" : "") +
        " (running without them would time another model)");
  }
  m.info.source = "gguf";
  m.info.path = path;
  m.info.name = r.get_string("general.name").value_or("");
  const auto ft = r.get_uint("general.file_type");
  m.info.file_type = ft ? file_type_name(static_cast<int64_t>(*ft)) : "unknown";
  compute_model_info(m);
  m.tokenizer = Tokenizer::from_gguf(r);
  m.storage = storage;
  return m;
}

GgufModelCheck check_gguf_model(const std::string& path) {
  const gguf::Reader r(path);  // a malformed file throws here, as for any command
  GgufModelCheck check;
  if (r.tensors().empty()) {
    check.status = GgufModelCheck::Status::kUnsupported;
    check.message = path + ": no tensors (a vocabulary-only file)";
    return check;
  }
  try {
    const Model m = load_gguf_model(path);
    for (const gguf::TensorInfo& t : r.tensors()) {
      if (!model_reads(m.config, t.name)) {
        check.unread.push_back(t.name);
        check.unread_bytes += t.bytes;
      }
    }
  } catch (const UnsupportedError& e) {  // valid, perhaps, but not something decodebench runs
    check.status = GgufModelCheck::Status::kUnsupported;
    check.message = e.what();
  } catch (const Error& e) {
    // Out of memory (or another resource) says nothing about the file: the command fails with it.
    if (e.code() != ExitCode::kUsage) throw;
    check.status = GgufModelCheck::Status::kInvalid;
    check.message = e.what();
  }
  return check;
}

const char* gguf_model_status_name(GgufModelCheck::Status status) {
  switch (status) {
    case GgufModelCheck::Status::kRuns:
      return "runs";
    case GgufModelCheck::Status::kUnsupported:
      return "unsupported";
    case GgufModelCheck::Status::kInvalid:
      return "invalid";
  }
  return "?";
}

}  // namespace decodebench
