#include "core/model/synthetic.hpp"

#include <cmath>
#include <memory>
#include <string>

#include "core/cpu/thread_pool.hpp"
#include "core/error.hpp"
#include "core/quant/dequant.hpp"

namespace decodebench {

namespace {

uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// FNV-1a of the tensor name: a stable stream key per tensor.
uint64_t name_hash(const std::string& name) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char ch : name) {
    h ^= ch;
    h *= 0x100000001B3ull;
  }
  return h;
}

// Owns every synthetic tensor's bytes.
struct SyntheticStorage {
  std::vector<std::unique_ptr<uint8_t[]>> buffers;
};

enum class Init { kMatrix, kNorm, kSignedNorm, kBias, kEmbedding };

class Builder {
 public:
  Builder(uint64_t seed, cpu::ThreadPool& pool, SyntheticStorage& storage)
      : seed_(seed), pool_(pool), storage_(storage) {}

  // Generates `rows` × `cols` values stored in `type` (vectors: always F32).
  TensorView make(const std::string& name, int64_t rows, int64_t cols, Init init, float scale,
                  WeightType type) {
    TensorView t;
    t.name = name;
    t.type = type;
    t.rows = rows;
    t.cols = cols;
    const int64_t rb = row_bytes(type, cols);
    auto buffer = std::make_unique<uint8_t[]>(static_cast<size_t>(rb * rows));
    uint8_t* base = buffer.get();
    const uint64_t key = mix64(seed_ ^ name_hash(name));
    pool_.parallel_for(
        rows,
        [&](int64_t begin, int64_t end) {
          std::vector<float> row(static_cast<size_t>(cols));
          for (int64_t r = begin; r < end; ++r) {
            for (int64_t c = 0; c < cols; ++c) {
              const float u = synthetic_uniform(key, static_cast<uint64_t>(r * cols + c));
              row[c] = init == Init::kNorm ? 1.0f + 0.1f * u : scale * u;
            }
            quant::quantize_row(type, row.data(), base + r * rb, cols);
          }
        },
        64);
    t.data = base;
    storage_.buffers.push_back(std::move(buffer));
    return t;
  }

  // A norm weight or bias: [cols] F32.
  TensorView vector(const std::string& name, int64_t cols, Init init, float scale) {
    return make(name, 1, cols, init, scale, WeightType::kF32);
  }

 private:
  uint64_t seed_;
  cpu::ThreadPool& pool_;
  SyntheticStorage& storage_;
};

}  // namespace

float synthetic_uniform(uint64_t key, uint64_t index) {
  const uint64_t bits = mix64(key + mix64(index));
  // 24 random bits → [0, 1) exactly representable, then → [-1, 1).
  return static_cast<float>(bits >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

int64_t synthetic_weight_bytes(const ModelConfig& c, const WeightScheme& scheme) {
  const auto row_bytes = [](WeightType t, int64_t n) {
    const WeightTraits tr = weight_traits(t);
    return (n + tr.block_elems - 1) / tr.block_elems * tr.block_bytes;  // ceil: any shape
  };
  const auto matrix = [&](MatrixRole role, int64_t layer, int64_t rows, int64_t cols) {
    return rows * row_bytes(scheme.type_of(role, layer, c.n_layers, c.tied_embeddings), cols);
  };
  int64_t total = matrix(MatrixRole::kTokenEmbd, 0, c.vocab, c.hidden) + 4 * c.hidden;
  if (!c.tied_embeddings) total += matrix(MatrixRole::kOutput, 0, c.vocab, c.hidden);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    total += matrix(MatrixRole::kAttnQ, l, c.q_dim(), c.hidden) +
             matrix(MatrixRole::kAttnK, l, c.kv_dim(), c.hidden) +
             matrix(MatrixRole::kAttnV, l, c.kv_dim(), c.hidden) +
             matrix(MatrixRole::kAttnOutput, l, c.hidden, c.q_dim()) +
             matrix(MatrixRole::kFfnGate, l, c.ffn, c.hidden) +
             matrix(MatrixRole::kFfnUp, l, c.ffn, c.hidden) +
             matrix(MatrixRole::kFfnDown, l, c.hidden, c.ffn) +
             4 * (2 * c.hidden + (c.qkv_bias ? c.q_dim() + 2 * c.kv_dim() : 0));
  }
  return total;
}

Model make_synthetic_model(const ModelConfig& config, const WeightScheme& scheme, uint64_t seed,
                           cpu::ThreadPool& pool) {
  validate(config);
  // Quantization blocks never straddle rows: every matrix's row length (hidden, q_dim, ffn) must
  // be a multiple of the block size of each type the scheme uses.
  check_weight_scheme_fits(config, scheme);
  auto storage = std::make_shared<SyntheticStorage>();
  Builder b(seed, pool, *storage);
  Model m;
  m.config = config;
  const ModelConfig& c = config;
  const auto type = [&](MatrixRole role, int64_t layer) {
    return scheme.type_of(role, layer, c.n_layers, c.tied_embeddings);
  };
  const auto fan = [](int64_t fan_in) { return std::sqrt(3.0f / static_cast<float>(fan_in)); };
  // Residual branches scaled by 1/sqrt(2·layers) (GPT-2, Radford et al. 2019) keep the residual
  // stream's variance O(1) at any depth, so the current token's embedding stays visible.
  const float branch = 1.0f / std::sqrt(2.0f * static_cast<float>(c.n_layers));
  ModelWeights& w = m.weights;
  w.token_embd = b.make("token_embd.weight", c.vocab, c.hidden, Init::kEmbedding, std::sqrt(3.0f),
                        type(MatrixRole::kTokenEmbd, 0));
  w.layers.resize(static_cast<size_t>(c.n_layers));
  for (int64_t l = 0; l < c.n_layers; ++l) {
    LayerWeights& L = w.layers[l];
    const std::string p = "blk." + std::to_string(l) + ".";
    L.attn_norm = b.vector(p + "attn_norm.weight", c.hidden, Init::kNorm, 0.0f);
    L.wq = b.make(p + "attn_q.weight", c.q_dim(), c.hidden, Init::kMatrix, fan(c.hidden),
                  type(MatrixRole::kAttnQ, l));
    L.wk = b.make(p + "attn_k.weight", c.kv_dim(), c.hidden, Init::kMatrix, fan(c.hidden),
                  type(MatrixRole::kAttnK, l));
    L.wv = b.make(p + "attn_v.weight", c.kv_dim(), c.hidden, Init::kMatrix, fan(c.hidden),
                  type(MatrixRole::kAttnV, l));
    if (c.qkv_bias) {
      L.bq = b.vector(p + "attn_q.bias", c.q_dim(), Init::kBias, 0.1f);
      L.bk = b.vector(p + "attn_k.bias", c.kv_dim(), Init::kBias, 0.1f);
      L.bv = b.vector(p + "attn_v.bias", c.kv_dim(), Init::kBias, 0.1f);
    }
    L.wo = b.make(p + "attn_output.weight", c.hidden, c.q_dim(), Init::kMatrix,
                  branch * fan(c.q_dim()), type(MatrixRole::kAttnOutput, l));
    L.ffn_norm = b.vector(p + "ffn_norm.weight", c.hidden, Init::kNorm, 0.0f);
    L.w_gate = b.make(p + "ffn_gate.weight", c.ffn, c.hidden, Init::kMatrix, fan(c.hidden),
                      type(MatrixRole::kFfnGate, l));
    L.w_up = b.make(p + "ffn_up.weight", c.ffn, c.hidden, Init::kMatrix, fan(c.hidden),
                    type(MatrixRole::kFfnUp, l));
    L.w_down = b.make(p + "ffn_down.weight", c.hidden, c.ffn, Init::kMatrix, branch * fan(c.ffn),
                      type(MatrixRole::kFfnDown, l));
  }
  // Signed final-norm weights: with a tied LM head, logit(t) = E[t]·norm(x) would otherwise favour
  // the input token itself (E[t] dominates x), and greedy decoding would repeat it forever.
  w.output_norm = b.vector("output_norm.weight", c.hidden, Init::kSignedNorm, 1.0f);
  if (c.tied_embeddings) {
    w.output = w.token_embd;
  } else {
    w.output = b.make("output.weight", c.vocab, c.hidden, Init::kMatrix, 4.0f * fan(c.hidden),
                      type(MatrixRole::kOutput, 0));
  }
  m.storage = storage;
  m.info.source = "synthetic";
  m.info.file_type = scheme.label();
  compute_model_info(m);
  return m;
}

std::vector<int32_t> synthetic_prompt(int64_t n, int64_t vocab, uint64_t seed) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  const uint64_t key = mix64(seed ^ 0x70726F6D7074ull);  // "prompt"
  for (int64_t i = 0; i < n; ++i) {
    ids[i] = static_cast<int32_t>(mix64(key + mix64(static_cast<uint64_t>(i))) %
                                  static_cast<uint64_t>(vocab));
  }
  return ids;
}

}  // namespace decodebench
