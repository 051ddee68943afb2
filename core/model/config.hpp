// Model hyperparameters shared by synthetic and GGUF models.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

namespace decodebench {

/// How RoPE pairs the values of a head (gguf-facts.md §5).
enum class RopeStyle {
  kAdjacent,   ///< ggml NORM: pairs (x[2i], x[2i+1]); llama-architecture GGUF files
  kHalfSplit,  ///< ggml NEOX: pairs (x[i], x[i + n_rot/2]); qwen2, qwen3, synthetic models
};

/// Shape and numerics of a decoder-only transformer (Llama/Qwen2/Qwen3 family).
/// Sizes are element counts; `hidden` = D, `ffn` = F, heads Hq/Hkv, `head_dim` = dk = dv.
struct ModelConfig {
  std::string architecture = "synthetic";  ///< "synthetic", "llama", "qwen2", "qwen3"
  int64_t n_layers = 0;
  int64_t hidden = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t ffn = 0;
  int64_t vocab = 0;
  int64_t context_length = 0;  ///< trained context limit; positions beyond it are refused
  int64_t rope_dim = 0;        ///< rotated values per head (n_rot); <= head_dim
  double rope_theta = 10000.0;
  double rms_eps = 1e-6;
  RopeStyle rope_style = RopeStyle::kHalfSplit;
  bool tied_embeddings = false;  ///< LM head = token embedding matrix
  bool qkv_bias = false;         ///< Q/K/V projections carry a bias (qwen2)
  bool qk_norm = false;          ///< per-head RMSNorm of Q and K before RoPE (qwen3)
  /// Per-frequency divisors ff_i (GGUF `rope_freqs.weight`, Llama 3 scaling); empty = all 1.
  std::vector<float> rope_freq_divisors;

  [[nodiscard]] int64_t q_dim() const { return n_heads * head_dim; }
  [[nodiscard]] int64_t kv_dim() const { return n_kv_heads * head_dim; }
};

/// Upper bounds of validate(), far above published models (Llama 3.1 405B: 126 layers, hidden
/// 16,384, ffn 53,248, 128 heads of 128): with them no size product of the model (weights, KV
/// cache) overflows int64.
constexpr int64_t kMaxLayers = 4096;
constexpr int64_t kMaxWidth = int64_t{1} << 22;  ///< hidden and ffn
constexpr int64_t kMaxHeads = 1024;
constexpr int64_t kMaxHeadDim = 4096;
constexpr int64_t kMaxContext = int64_t{1} << 24;

/// The product of `factors` (each >= 0), or INT64_MAX when it does not fit int64: for size
/// estimates that a memory check then refuses (batch × layers × positions × KV width can pass
/// 2^63 within the bounds above).
int64_t saturating_product(std::initializer_list<int64_t> factors);
/// a + b for a, b >= 0, or INT64_MAX when it does not fit.
int64_t saturating_sum(int64_t a, int64_t b);

/// How validate() names a field in its message, given the field's preset key ("layers",
/// "kv_heads", "head_dim", "context_length", "rope_theta", "rms_eps", ...).
using ShapeFieldName = std::function<std::string(const std::string& key)>;

/// The names validate() uses by default: the run flags' spelling without dashes ("kv-heads",
/// "rms-eps"; "context length").
std::string shape_flag_name(const std::string& key);

/// Checks the shape rules (positive sizes below the bounds above, heads % kv_heads, even head_dim,
/// 2 <= vocab < 2^31, rope_dim even and <= head_dim, eps and theta finite and > 0).
/// Throws decodebench::Error (exit 2) naming the first broken rule, each field by `name` (a run
/// from a preset file names the preset's key for a value the file gave).
void validate(const ModelConfig& config, const ShapeFieldName& name = shape_flag_name);

/// The RoPE inverse-frequency table both backends use: inv_freq[i] = theta^(-2i/rope_dim) / ff_i
/// for i < rope_dim/2 (RoFormer, Su et al. 2021, eq. 15; ff_i from rope_freq_divisors), in double.
std::vector<double> rope_inv_freq(const ModelConfig& config);

/// "half-split" / "adjacent".
const char* rope_style_name(RopeStyle style);

}  // namespace decodebench
