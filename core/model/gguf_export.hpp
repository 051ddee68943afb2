// Writing a synthetic model as a GGUF file (`decodebench make-gguf`), so that other engines can
// run the very weights decodebench measures. Keys and tensor names: gguf-facts.md §3–§5.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/model/model.hpp"
#include "core/model/weight_scheme.hpp"

namespace decodebench {

/// What a synthetic GGUF file records besides the weights.
struct GgufExportInfo {
  std::string name;     ///< general.name
  WeightScheme scheme;  ///< the storage the model was generated with (general.file_type)
  std::string preset;   ///< decodebench.synthetic.preset (provenance)
  uint64_t seed = 0;    ///< decodebench.synthetic.seed (provenance)
};

/// The GGUF architecture of a synthetic shape: "qwen2" when it has Q/K/V biases (llama.cpp's
/// qwen2 loader requires them), else "llama".
std::string gguf_architecture_for(const ModelConfig& config);

/// general.file_type (llama.cpp's llama_ftype, gguf-facts.md §2.4) of a scheme: 0 F32, 1 F16,
/// 32 BF16, 2 Q4_0, 3 Q4_1, 8 Q5_0, 9 Q5_1, 7 Q8_0, 18 Q6_K, 15 Q4_K_M. std::nullopt for uniform
/// Q4_K and Q5_K, which no llama_ftype describes exactly (llama.cpp then guesses from the tensors).
std::optional<uint32_t> gguf_file_type(const WeightScheme& scheme);

/// Byte tokens of the filler vocabulary: the 128 ASCII bytes. Generated text is then always valid
/// UTF-8 (a token of a non-ASCII byte could end the text inside a character).
inline constexpr int64_t kFillerByteTokens = 128;

/// The filler vocabulary of a synthetic file with `vocab` tokens: id b < 128 is the GPT-2
/// byte-level stand-in of ASCII byte b (so ASCII text encodes, one token per byte, with no
/// merges), ids from 128 on are "<t128>", "<t129>", ...; the last id is "<|endoftext|>", a control
/// token (type 3; all others type 1) used as BOS and EOS. Requires vocab >= 2.
struct FillerVocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> token_types;
  int32_t eos_id = 0;  ///< also the BOS id
};
FillerVocab filler_vocab(int64_t vocab);

/// Writes `model`, a synthetic model (make_synthetic_model), to `path` as a GGUF v3 file
/// (little-endian, alignment 32) with:
///   - general.architecture = gguf_architecture_for(), general.name, general.file_type (where
///     gguf_file_type() has one), general.quantization_version 2 when any tensor is quantized;
///   - {arch}.context_length, embedding_length, block_count, feed_forward_length,
///     attention.head_count, attention.head_count_kv, attention.key_length/value_length (when
///     head_dim ≠ hidden/heads), rope.dimension_count, rope.freq_base,
///     attention.layer_norm_rms_epsilon, vocab_size (u32 / f32 as llama.cpp expects);
///   - the filler tokenizer (filler_vocab(); tokenizer.ggml.model "gpt2", pre "default", tokens,
///     token_type,
///     an empty merges list, bos/eos ids, add_bos_token false);
///   - decodebench.synthetic.{preset, seed, dtype} (provenance; other readers ignore them);
///   - every tensor in its storage type under the names core/model/gguf_model.cpp loads
///     (token_embd, blk.N.attn_norm/attn_q/attn_k/attn_v[/biases]/attn_output/ffn_norm/ffn_gate/
///     ffn_up/ffn_down, output_norm, output unless tied), dims {cols, rows}.
/// Synthetic models rotate half-split pairs (NEOX, as qwen2). For the llama architecture, whose
/// loaders rotate adjacent pairs, the rows of attn_q and attn_k (and their biases) are written
/// in the permuted order llama.cpp's converter uses (within each head of d rows, file row 2i + s
/// = model row s·d/2 + i), so the file computes the same attention (up to the summation order of
/// q·k) and decodes the same tokens.
/// Tensor bytes are streamed from the model's buffers (no second copy of the weights).
/// The file is written to a temporary file and renamed (Writer::write).
/// Throws decodebench::Error: exit 2 for a model that is not synthetic-shaped (qk-norm, RoPE
/// scaling, rope_dim ≠ head_dim) or an unwritable destination, exit 3 when the disk is full,
/// exit 1 for other write errors.
void write_synthetic_gguf(const Model& model, const GgufExportInfo& info, const std::string& path);

}  // namespace decodebench
