#include "core/model/config.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <string>

#include "core/error.hpp"

namespace decodebench {

namespace {
void require(bool ok, const std::string& rule) {
  if (!ok) throw usage_error("invalid model shape: " + rule);
}
}  // namespace

int64_t saturating_product(std::initializer_list<int64_t> factors) {
  int64_t p = 1;
  for (const int64_t f : factors) {
    if (__builtin_mul_overflow(p, f, &p)) return INT64_MAX;
  }
  return p;
}

int64_t saturating_sum(int64_t a, int64_t b) {
  int64_t s = 0;
  return __builtin_add_overflow(a, b, &s) ? INT64_MAX : s;
}

std::string shape_flag_name(const std::string& key) {
  if (key == "context_length") return "context length";
  std::string name = key;
  for (char& ch : name) ch = ch == '_' ? '-' : ch;
  return name;
}

void validate(const ModelConfig& c, const ShapeFieldName& name) {
  // Upper bounds first: they keep every size product below int64 (and every per-layer loop
  // short) before anything multiplies them; each is far above any published model.
  const auto at_most = [&](const char* key, int64_t value, int64_t limit) {
    require(value <= limit, name(key) + " must be <= " + std::to_string(limit) + " (got " +
                                std::to_string(value) + ")");
  };
  at_most("layers", c.n_layers, kMaxLayers);
  at_most("hidden", c.hidden, kMaxWidth);
  at_most("heads", c.n_heads, kMaxHeads);
  at_most("kv_heads", c.n_kv_heads, kMaxHeads);
  at_most("head_dim", c.head_dim, kMaxHeadDim);
  at_most("ffn", c.ffn, kMaxWidth);
  at_most("context_length", c.context_length, kMaxContext);
  // Then every lower bound, before any rule that divides or tests divisibility: a negative
  // dimension is "must be > 0", not "not divisible".
  const auto positive = [&](const char* key, int64_t value) {
    require(value > 0, name(key) + " must be > 0 (got " + std::to_string(value) + ")");
  };
  positive("layers", c.n_layers);
  positive("hidden", c.hidden);
  positive("heads", c.n_heads);
  positive("kv_heads", c.n_kv_heads);
  positive("head_dim", c.head_dim);
  positive("ffn", c.ffn);
  positive("context_length", c.context_length);
  require(c.vocab >= 2, name("vocab") + " must be >= 2 (got " + std::to_string(c.vocab) + ")");
  require(c.vocab <= (int64_t{1} << 31) - 1, name("vocab") + " must fit a 32-bit token id");
  require(c.n_heads % c.n_kv_heads == 0, name("heads") + " (" + std::to_string(c.n_heads) +
                                             ") must be divisible by " + name("kv_heads") + " (" +
                                             std::to_string(c.n_kv_heads) + ")");
  require(c.head_dim % 2 == 0,
          name("head_dim") + " must be even for RoPE (got " + std::to_string(c.head_dim) + ")");
  require(c.rope_dim > 0 && c.rope_dim % 2 == 0 && c.rope_dim <= c.head_dim,
          "rope dimension must be even and in (0, " + name("head_dim") + "] (got " +
              std::to_string(c.rope_dim) + ")");
  // Both are f32 in GGUF and in the kernels: a value outside the normal f32 range (1e300, 1e-50)
  // would become inf or 0 there.
  const auto normal_f32 = [](double v) {
    return std::isfinite(v) && v >= std::numeric_limits<float>::min() &&
           v <= std::numeric_limits<float>::max();
  };
  require(normal_f32(c.rope_theta), fmt::format("{} must be a positive normal f32 value (got {:g})",
                                                name("rope_theta"), c.rope_theta));
  // Published models use 1e-6 to 1e-5; an epsilon of 1 or more would outweigh the mean square it
  // is added to (about 1e-2 to 1 for normalized activations) and flatten every norm. One rule for
  // synthetic runs, make-gguf and GGUF files (which check it first, naming the key).
  require(normal_f32(c.rms_eps) && c.rms_eps < 1,
          fmt::format("{} must be a normal f32 value in (0, 1) (got {:g})", name("rms_eps"),
                      c.rms_eps));
  require(c.rope_freq_divisors.empty() ||
              static_cast<int64_t>(c.rope_freq_divisors.size()) == c.rope_dim / 2,
          "rope_freqs must hold rope_dim/2 values");
}

std::vector<double> rope_inv_freq(const ModelConfig& c) {
  std::vector<double> inv(static_cast<size_t>(c.rope_dim / 2));
  for (size_t i = 0; i < inv.size(); ++i) {
    inv[i] =
        std::pow(c.rope_theta, -2.0 * static_cast<double>(i) / static_cast<double>(c.rope_dim));
    if (!c.rope_freq_divisors.empty()) inv[i] /= static_cast<double>(c.rope_freq_divisors[i]);
  }
  return inv;
}

const char* rope_style_name(RopeStyle style) {
  return style == RopeStyle::kAdjacent ? "adjacent" : "half-split";
}

}  // namespace decodebench
