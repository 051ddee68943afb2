// What `decodebench inspect FILE` reports about a GGUF file: file facts, metadata, tensors, an
// architecture summary, bytes per tensor type and the weight bytes read per decoded token.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/gguf/reader.hpp"

namespace decodebench::gguf {

/// Model shape read from `general.architecture` and the `{arch}.*` keys (gguf-facts.md §3).
/// Fields are std::nullopt when the file does not say. Per-layer arrays (e.g. head_count in some
/// files) are reported as their maximum, with a note.
struct ArchitectureSummary {
  std::string architecture;                ///< general.architecture, "" when absent
  std::optional<uint64_t> layers;          ///< {arch}.block_count
  std::optional<uint64_t> hidden;          ///< {arch}.embedding_length (D)
  std::optional<uint64_t> heads;           ///< {arch}.attention.head_count (Hq)
  std::optional<uint64_t> kv_heads;        ///< {arch}.attention.head_count_kv (Hkv)
  std::optional<uint64_t> head_dim;        ///< {arch}.attention.key_length, else hidden / heads
  std::optional<uint64_t> ffn;             ///< {arch}.feed_forward_length (F)
  std::optional<uint64_t> vocab;           ///< vocab_size, else max(token count, token_embd rows)
  std::optional<uint64_t> context_length;  ///< {arch}.context_length (tokens)
  std::optional<double> rope_freq_base;    ///< {arch}.rope.freq_base
  std::optional<double> rms_eps;           ///< {arch}.attention.layer_norm_rms_epsilon
  /// True when token_embd.weight exists and output.weight does not (tied LM head); nullopt when
  /// the file has no token_embd.weight (e.g. vocabulary-only files).
  std::optional<bool> tied;
  std::string head_dim_source;     ///< "key_length" or "hidden/heads" ("" when unknown)
  std::string vocab_source;        ///< "vocab_size", "tokenizer.ggml.tokens" or "token_embd.weight"
  std::vector<std::string> notes;  ///< keys of unexpected type (ignored) and per-layer arrays
};

/// Summarises the architecture keys. Never throws for odd key types: such keys are skipped and
/// named in `notes`.
ArchitectureSummary summarize_architecture(const Reader& reader);

/// Tensor count and bytes of one ggml type.
struct TypeUsage {
  uint32_t type_id = 0;
  uint64_t count = 0;  ///< tensors of this type
  uint64_t bytes = 0;  ///< their total data bytes
};

/// Usage per tensor type, ordered by type id.
std::vector<TypeUsage> bytes_per_type(const Reader& reader);

/// Weight bytes one decode step reads: every tensor except token_embd.weight, plus one row of
/// token_embd.weight (the looked-up embedding), plus all of token_embd.weight again when
/// output.weight is absent (tied LM head). Files without token_embd.weight count every tensor.
uint64_t decode_bytes_per_token(const Reader& reader);

/// The JSON document of `inspect --json`: {file, metadata, tensors, architecture, tensor_types,
/// totals, bytes_per_token, notes}. Strings are made valid UTF-8 (invalid bytes become U+FFFD);
/// arrays longer than 16 elements list only their first 16 ("truncated": true).
nlohmann::json inspect_json(const Reader& reader);

/// The values of tensor `name` dequantized to f32 by decodebench's CPU dequantizer
/// (quant::dequantize_row), in storage order: dims[0] contiguous, then dims[1], ... (a matrix of
/// ne1 rows × ne0 columns, row-major). For comparing our dequantization with other readers
/// (`inspect FILE --dump NAME --dump-out PATH`). Throws decodebench::Error (exit 2) for a missing
/// tensor (the message lists the file's tensors when there are at most 8, else the 5 nearest
/// names by edit distance) or a type decodebench does not support.
std::vector<float> dequantize_tensor(const Reader& reader, const std::string& name);

/// The terminal report of `inspect` (several lines, ends with a newline). Long strings and arrays
/// are shortened; control characters are escaped.
std::string inspect_report(const Reader& reader);

}  // namespace decodebench::gguf
