#include "core/model/weight_scheme.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

#include "core/error.hpp"
#include "core/text.hpp"

namespace decodebench {

namespace {

// The --dtype names and their schemes, in the order the error message lists them.
const std::pair<const char*, WeightScheme> kSchemes[] = {
    {"f32", WeightType::kF32},   {"f16", WeightType::kF16},   {"bf16", WeightType::kBF16},
    {"q8_0", WeightType::kQ8_0}, {"q4_0", WeightType::kQ4_0}, {"q4_1", WeightType::kQ4_1},
    {"q5_0", WeightType::kQ5_0}, {"q5_1", WeightType::kQ5_1}, {"q4_k", WeightType::kQ4_K},
    {"q5_k", WeightType::kQ5_K}, {"q6_k", WeightType::kQ6_K}, {"q4_k_m", WeightScheme::q4_k_m()},
};

}  // namespace

bool q4_k_m_promoted_layer(int64_t layer, int64_t n_layers) {
  const int64_t eighth = n_layers / 8;
  return layer < eighth || layer >= 7 * n_layers / 8 || (layer - eighth) % 3 == 2;
}

WeightType WeightScheme::type_of(MatrixRole role, int64_t layer, int64_t n_layers,
                                 bool tied) const {
  if (mix == Mix::kUniform) return type;
  switch (role) {
    case MatrixRole::kOutput:
      return WeightType::kQ6_K;
    case MatrixRole::kTokenEmbd:
      return tied ? WeightType::kQ6_K : WeightType::kQ4_K;
    case MatrixRole::kAttnV:
    case MatrixRole::kFfnDown:
      return q4_k_m_promoted_layer(layer, n_layers) ? WeightType::kQ6_K : WeightType::kQ4_K;
    default:
      return WeightType::kQ4_K;
  }
}

std::string WeightScheme::label() const {
  if (mix == Mix::kQ4_K_M) return "Q4_K_M";
  return weight_traits(type).name;
}

std::string WeightScheme::flag_name() const {
  std::string s = label();
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

std::vector<WeightType> WeightScheme::types() const {
  if (mix == Mix::kQ4_K_M) return {WeightType::kQ4_K, WeightType::kQ6_K};
  return {type};
}

WeightScheme parse_weight_scheme(const std::string& name, const std::string& flag) {
  std::string choices;
  std::vector<std::string> names;
  for (const auto& [n, scheme] : kSchemes) {
    if (name == n) return scheme;
    choices += (choices.empty() ? "" : "|") + std::string(n);
    names.emplace_back(n);
  }
  throw usage_error(flag + ": invalid value '" + echo_value(name) + "'" + choice_hint(name, names) +
                    " (expected " + choices + ")");
}

void check_weight_scheme_fits(const ModelConfig& config, const WeightScheme& scheme) {
  for (WeightType t : scheme.types()) {
    const WeightTraits tr = weight_traits(t);
    if (tr.name == nullptr) throw usage_error("unsupported synthetic dtype");
    for (const auto& [what, n] : {std::pair<const char*, int64_t>{"hidden", config.hidden},
                                  {"heads·head_dim", config.q_dim()},
                                  {"ffn", config.ffn}}) {
      if (n % tr.block_elems != 0) {
        throw usage_error("--dtype " + scheme.flag_name() + " stores blocks of " +
                          std::to_string(tr.block_elems) + " values: " + what + " (" +
                          std::to_string(n) + ") must be a multiple of " +
                          std::to_string(tr.block_elems));
      }
    }
  }
}

}  // namespace decodebench
