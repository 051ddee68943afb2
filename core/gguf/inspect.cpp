#include "core/gguf/inspect.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include "core/error.hpp"
#include "core/gguf/printable.hpp"
#include "core/quant/dequant.hpp"
#include "core/text.hpp"

namespace decodebench::gguf {

namespace {

constexpr size_t kJsonArrayHead = 16;    // array elements listed in JSON
constexpr size_t kTextArrayHead = 8;     // array elements listed in the terminal report
constexpr size_t kTextStringBytes = 72;  // string bytes shown in the terminal report

// FLOAT32 values widened to double print as 9.999999747378752e-06; show the shortest decimal
// that reads back as the same float instead (1e-05). Doubles that are not floats stay as they are.
double tidy_float(double x) {
  const auto f = static_cast<float>(x);
  if (static_cast<double>(f) != x || !std::isfinite(f)) return x;
  return std::strtod(fmt::format("{}", f).c_str(), nullptr);
}

std::string float_text(double x) {
  const auto f = static_cast<float>(x);
  if (static_cast<double>(f) == x) return fmt::format("{}", f);
  return fmt::format("{}", x);
}

std::string type_label(const Value& v) {
  if (v.type == ValueType::kArray) return fmt::format("ARRAY[{}]", value_type_name(v.elem_type));
  return value_type_name(v.type);
}

std::string scalar_text(const Value& v) {
  switch (v.type) {
    case ValueType::kFloat32:
      return fmt::format("{}", static_cast<float>(v.f));
    case ValueType::kFloat64:
      return fmt::format("{}", v.f);
    case ValueType::kBool:
      return v.b ? "true" : "false";
    case ValueType::kString:
      return "\"" + escape_text(v.s, kTextStringBytes) + "\"";
    case ValueType::kArray:
      return "[...]";
    default:
      return is_signed(v.type) ? fmt::format("{}", v.i) : fmt::format("{}", v.u);
  }
}

std::string value_text(const Value& v) {
  if (v.type != ValueType::kArray) return scalar_text(v);
  std::string out = fmt::format("count {} [", v.array.size());
  const size_t shown = std::min(v.array.size(), kTextArrayHead);
  for (size_t k = 0; k < shown; ++k) {
    if (k > 0) out += ", ";
    out += scalar_text(v.array[k]);
  }
  if (shown < v.array.size()) out += ", ...";
  return out + "]";
}

nlohmann::json scalar_json(const Value& v) {
  switch (v.type) {
    case ValueType::kFloat32:
      return tidy_float(v.f);
    case ValueType::kFloat64:
      return v.f;
    case ValueType::kBool:
      return v.b;
    case ValueType::kString:
      return valid_utf8(v.s);
    case ValueType::kArray:
      return nullptr;  // nested arrays are refused by the reader
    default:
      return is_signed(v.type) ? nlohmann::json(v.i) : nlohmann::json(v.u);
  }
}

std::string shape_text(const TensorInfo& t) {
  std::string out = "[";
  for (uint32_t d = 0; d < t.n_dims; ++d) out += (d > 0 ? ", " : "") + std::to_string(t.dims[d]);
  return out + "]";
}

// Value of a count key; per-layer integer arrays give their maximum. Odd types become notes.
std::optional<uint64_t> count_key(const Reader& r, const std::string& key, ArchitectureSummary& s) {
  const KeyValue* kv = r.find(key);
  if (kv == nullptr) return std::nullopt;
  const Value& v = kv->value;
  if (v.type == ValueType::kArray && is_integer(v.elem_type)) {
    std::optional<uint64_t> best;
    for (const Value& e : v.array) {
      if (is_signed(e.type) && e.i < 0) continue;
      const uint64_t x = is_signed(e.type) ? static_cast<uint64_t>(e.i) : e.u;
      best = std::max(best.value_or(0), x);
    }
    s.notes.push_back(fmt::format("{} is a per-layer array of {} values; showing the maximum", key,
                                  v.array.size()));
    return best;
  }
  try {
    return r.get_uint(key);
  } catch (const Error& e) {
    s.notes.push_back(fmt::format("ignored: {}", e.what()));
    return std::nullopt;
  }
}

std::optional<double> float_key(const Reader& r, const std::string& key, ArchitectureSummary& s) {
  try {
    return r.get_float(key);
  } catch (const Error& e) {
    s.notes.push_back(fmt::format("ignored: {}", e.what()));
    return std::nullopt;
  }
}

template <typename T>
nlohmann::json opt_json(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

template <typename T>
std::string opt_text(const std::optional<T>& v) {
  return v ? fmt::format("{}", *v) : std::string("?");
}

std::string opt_text(const std::optional<double>& v) { return v ? float_text(*v) : "?"; }

// "no tensor named 'X'" with the file's tensor names: all of them when there are few, else the
// nearest by edit distance.
std::string no_tensor_message(const Reader& r, const std::string& name) {
  constexpr size_t kListAll = 8;  // up to this many tensors are all listed
  constexpr size_t kNearest = 5;
  std::string msg = "no tensor named '" + echo_value(name) + "'";
  std::vector<std::string> names;
  for (const TensorInfo& t : r.tensors()) names.push_back(t.name);
  if (names.empty()) return msg + " (the file holds no tensors)";
  const bool all = names.size() <= kListAll;
  const std::vector<std::string> shown = all ? names : nearest_names(name, names, kNearest);
  msg += all ? fmt::format("; the file's {} tensor{}: ", names.size(), names.size() == 1 ? "" : "s")
             : "; nearest: ";
  for (size_t i = 0; i < shown.size(); ++i) msg += (i == 0 ? "" : ", ") + escape_text(shown[i], 64);
  if (!all) msg += fmt::format(" ('decodebench inspect' lists all {})", names.size());
  return msg;
}

}  // namespace

ArchitectureSummary summarize_architecture(const Reader& r) {
  ArchitectureSummary s;
  try {
    s.architecture = r.get_string("general.architecture").value_or("");
  } catch (const Error& e) {
    s.notes.push_back(fmt::format("ignored: {}", e.what()));
  }
  const std::string p = s.architecture + ".";
  if (!s.architecture.empty()) {
    s.layers = count_key(r, p + "block_count", s);
    s.hidden = count_key(r, p + "embedding_length", s);
    s.heads = count_key(r, p + "attention.head_count", s);
    s.kv_heads = count_key(r, p + "attention.head_count_kv", s);
    s.ffn = count_key(r, p + "feed_forward_length", s);
    s.context_length = count_key(r, p + "context_length", s);
    s.rope_freq_base = float_key(r, p + "rope.freq_base", s);
    s.rms_eps = float_key(r, p + "attention.layer_norm_rms_epsilon", s);
    s.head_dim = count_key(r, p + "attention.key_length", s);
    if (s.head_dim) {
      s.head_dim_source = "key_length";
    } else if (s.hidden && s.heads && *s.heads > 0) {
      s.head_dim = *s.hidden / *s.heads;
      s.head_dim_source = "hidden/heads";
    }
    s.vocab = count_key(r, p + "vocab_size", s);
    if (s.vocab) s.vocab_source = "vocab_size";
  }
  if (!s.vocab) {
    const KeyValue* tokens = r.find("tokenizer.ggml.tokens");
    if (tokens != nullptr && tokens->value.type == ValueType::kArray) {
      s.vocab = tokens->value.array.size();
      s.vocab_source = "tokenizer.ggml.tokens";
    }
  }
  const TensorInfo* embd = r.find_tensor("token_embd.weight");
  if (!s.vocab && embd != nullptr) {
    s.vocab = static_cast<uint64_t>(embd->dims[1]);
    s.vocab_source = "token_embd.weight";
  }
  // A run computes logits over the embedding's rows; a shorter tokenizer (a padded vocabulary)
  // leaves the last ids without text.
  if (s.vocab_source == "tokenizer.ggml.tokens" && embd != nullptr &&
      static_cast<uint64_t>(embd->dims[1]) > *s.vocab) {
    s.notes.push_back(
        fmt::format("the tokenizer holds {} tokens for the {} rows of "
                    "token_embd.weight: ids {} to {} have no text",
                    *s.vocab, embd->dims[1], *s.vocab, embd->dims[1] - 1));
    s.vocab = static_cast<uint64_t>(embd->dims[1]);
    s.vocab_source = "token_embd.weight";
  }
  if (embd != nullptr) s.tied = r.find_tensor("output.weight") == nullptr;
  return s;
}

std::vector<TypeUsage> bytes_per_type(const Reader& r) {
  std::map<uint32_t, TypeUsage> by_id;
  for (const TensorInfo& t : r.tensors()) {
    TypeUsage& u = by_id[t.type_id];
    u.type_id = t.type_id;
    ++u.count;
    u.bytes += t.bytes;
  }
  std::vector<TypeUsage> out;
  for (const auto& [id, u] : by_id) out.push_back(u);
  return out;
}

uint64_t decode_bytes_per_token(const Reader& r) {
  uint64_t total = 0;
  for (const TensorInfo& t : r.tensors()) {
    if (t.name != "token_embd.weight") total += t.bytes;
  }
  if (const TensorInfo* embd = r.find_tensor("token_embd.weight")) {
    const auto rows = static_cast<uint64_t>(embd->dims[1] * embd->dims[2] * embd->dims[3]);
    total += embd->bytes / rows;
    if (r.find_tensor("output.weight") == nullptr) total += embd->bytes;
  }
  return total;
}

nlohmann::json inspect_json(const Reader& r) {
  nlohmann::json doc;
  doc["file"] = {{"path", valid_utf8(r.path())},   {"version", r.version()},
                 {"size", r.file_size()},          {"alignment", r.alignment()},
                 {"data_offset", r.data_offset()}, {"tensor_count", r.tensors().size()},
                 {"kv_count", r.metadata().size()}};

  nlohmann::json metadata = nlohmann::json::array();
  for (const KeyValue& kv : r.metadata()) {
    nlohmann::json m = {{"key", valid_utf8(kv.key)},
                        {"type", value_type_name(kv.value.type)},
                        {"offset", kv.offset}};
    if (kv.value.type == ValueType::kArray) {
      const auto& a = kv.value.array;
      nlohmann::json values = nlohmann::json::array();
      for (size_t k = 0; k < std::min(a.size(), kJsonArrayHead); ++k) {
        values.push_back(scalar_json(a[k]));
      }
      m["elem_type"] = value_type_name(kv.value.elem_type);
      m["count"] = a.size();
      m["values"] = std::move(values);
      m["truncated"] = a.size() > kJsonArrayHead;
    } else {
      m["value"] = scalar_json(kv.value);
    }
    metadata.push_back(std::move(m));
  }
  doc["metadata"] = std::move(metadata);

  nlohmann::json tensors = nlohmann::json::array();
  uint64_t total_bytes = 0;
  uint64_t parameters = 0;
  for (const TensorInfo& t : r.tensors()) {
    nlohmann::json shape = nlohmann::json::array();
    for (uint32_t d = 0; d < t.n_dims; ++d) shape.push_back(t.dims[d]);
    tensors.push_back({{"name", valid_utf8(t.name)},
                       {"type", ggml_type_name(t.type_id)},
                       {"type_id", t.type_id},
                       {"shape", std::move(shape)},
                       {"elements", t.elements()},
                       {"bytes", t.bytes},
                       {"offset", t.offset},
                       {"file_offset", t.file_offset}});
    total_bytes += t.bytes;
    parameters += static_cast<uint64_t>(t.elements());
  }
  doc["tensors"] = std::move(tensors);

  const ArchitectureSummary s = summarize_architecture(r);
  const auto tidy = [](const std::optional<double>& v) {
    return v ? nlohmann::json(tidy_float(*v)) : nlohmann::json(nullptr);
  };
  doc["architecture"] = {{"name", valid_utf8(s.architecture)},
                         {"layers", opt_json(s.layers)},
                         {"hidden", opt_json(s.hidden)},
                         {"heads", opt_json(s.heads)},
                         {"kv_heads", opt_json(s.kv_heads)},
                         {"head_dim", opt_json(s.head_dim)},
                         {"head_dim_source", s.head_dim_source},
                         {"ffn", opt_json(s.ffn)},
                         {"vocab", opt_json(s.vocab)},
                         {"vocab_source", s.vocab_source},
                         {"context_length", opt_json(s.context_length)},
                         {"rope_freq_base", tidy(s.rope_freq_base)},
                         {"rms_eps", tidy(s.rms_eps)},
                         {"tied", opt_json(s.tied)}};

  nlohmann::json types = nlohmann::json::array();
  for (const TypeUsage& u : bytes_per_type(r)) {
    types.push_back({{"type", ggml_type_name(u.type_id)},
                     {"type_id", u.type_id},
                     {"count", u.count},
                     {"bytes", u.bytes}});
  }
  doc["tensor_types"] = std::move(types);
  doc["totals"] = {{"tensor_bytes", total_bytes}, {"parameters", parameters}};
  doc["bytes_per_token"] = decode_bytes_per_token(r);
  nlohmann::json notes = nlohmann::json::array();
  for (const std::string& n : s.notes) notes.push_back(valid_utf8(n));
  doc["notes"] = std::move(notes);
  return doc;
}

std::string inspect_report(const Reader& r) {
  std::string out;
  const auto line = [&out](const std::string& s) {
    out += s;
    out += '\n';
  };
  line(fmt::format("file: {}", escape_text(r.path(), r.path().size())));
  line(fmt::format("  GGUF v{}, {} bytes ({}), alignment {}, data offset {}", r.version(),
                   r.file_size(), decimal_bytes(r.file_size()), r.alignment(), r.data_offset()));
  line(fmt::format("  {} tensors, {} metadata keys", r.tensors().size(), r.metadata().size()));

  line("");
  line(fmt::format("metadata ({} keys):", r.metadata().size()));
  size_t key_width = 0;
  size_t type_width = 0;
  for (const KeyValue& kv : r.metadata()) {
    key_width = std::max(key_width, escape_text(kv.key, 60).size());
    type_width = std::max(type_width, type_label(kv.value).size());
  }
  for (const KeyValue& kv : r.metadata()) {
    line(fmt::format("  {:<{}}  {:<{}}  {}", escape_text(kv.key, 60), key_width,
                     type_label(kv.value), type_width, value_text(kv.value)));
  }

  line("");
  line(fmt::format("tensors ({}):", r.tensors().size()));
  if (!r.tensors().empty()) {
    size_t name_width = 4;
    for (const TensorInfo& t : r.tensors()) {
      name_width = std::max(name_width, escape_text(t.name, 64).size());
    }
    // The offset from the file's start, as a hex dump and the reader's errors count it (the
    // JSON also has the offset within the data section).
    line(fmt::format("  {:<{}}  {:<8}  {:<24}  {:>14}  {:>14}", "name", name_width, "type",
                     "shape (GGUF dims)", "bytes", "file offset"));
    for (const TensorInfo& t : r.tensors()) {
      line(fmt::format("  {:<{}}  {:<8}  {:<24}  {:>14}  {:>14}", escape_text(t.name, 64),
                       name_width, ggml_type_name(t.type_id), shape_text(t), t.bytes,
                       t.file_offset));
    }
  }

  const ArchitectureSummary s = summarize_architecture(r);
  line("");
  line(fmt::format("architecture: {}",
                   s.architecture.empty() ? "(none)" : escape_text(s.architecture, 64)));
  line(fmt::format("  layers {}, hidden {}, heads {}, kv heads {}, head dim {}{}",
                   opt_text(s.layers), opt_text(s.hidden), opt_text(s.heads), opt_text(s.kv_heads),
                   opt_text(s.head_dim),
                   s.head_dim_source.empty() ? "" : " (" + s.head_dim_source + ")"));
  line(fmt::format("  ffn {}, vocab {}{}, context length {}", opt_text(s.ffn), opt_text(s.vocab),
                   s.vocab_source.empty() ? "" : " (" + s.vocab_source + ")",
                   opt_text(s.context_length)));
  line(fmt::format("  rope freq base {}, rms eps {}, tied embeddings {}",
                   opt_text(s.rope_freq_base), opt_text(s.rms_eps),
                   s.tied ? (*s.tied ? "yes (no output.weight)" : "no") : "?"));
  for (const std::string& n : s.notes) line("  note: " + escape_text(n, n.size()));

  line("");
  line("bytes per type:");
  uint64_t total_bytes = 0;
  uint64_t parameters = 0;
  for (const TensorInfo& t : r.tensors()) {
    total_bytes += t.bytes;
    parameters += static_cast<uint64_t>(t.elements());
  }
  line(fmt::format("  {:<8}  {:>8}  {:>16}", "type", "tensors", "bytes"));
  for (const TypeUsage& u : bytes_per_type(r)) {
    line(fmt::format("  {:<8}  {:>8}  {:>16}  ({})", ggml_type_name(u.type_id), u.count, u.bytes,
                     decimal_bytes(u.bytes)));
  }
  line(fmt::format("  {:<8}  {:>8}  {:>16}  ({}), {} parameters", "total", r.tensors().size(),
                   total_bytes, decimal_bytes(total_bytes), parameters));
  const uint64_t per_token = decode_bytes_per_token(r);
  line("");
  line(fmt::format("bytes read per decode token: {} ({})", per_token, decimal_bytes(per_token)));
  return out;
}

std::vector<float> dequantize_tensor(const Reader& r, const std::string& name) {
  const TensorInfo* t = r.find_tensor(name);
  if (t == nullptr) throw usage_error(r.path() + ": " + no_tensor_message(r, name));
  if (!is_supported_weight_type(t->type_id)) {
    throw usage_error(r.path() + ": tensor '" + name + "' has type " + ggml_type_name(t->type_id) +
                      ", which decodebench cannot dequantize");
  }
  const auto type = static_cast<WeightType>(t->type_id);
  const int64_t cols = t->dims[0];
  const int64_t rows = t->elements() / cols;
  const int64_t row_size = row_bytes(type, cols);
  std::vector<float> out(static_cast<size_t>(rows * cols));
  const uint8_t* data = r.tensor_data(*t);
  for (int64_t i = 0; i < rows; ++i) {
    quant::dequantize_row(type, data + i * row_size, out.data() + i * cols, cols);
  }
  return out;
}

}  // namespace decodebench::gguf
