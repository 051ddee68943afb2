// Small model shapes shared by the CPU and GPU tests.
#pragma once

#include <cstdint>

#include "core/model/config.hpp"

namespace decodebench::testing {

/// A llama-style ModelConfig for tests: `layers` layers of width `hidden`, `heads` query and
/// `kv_heads` KV heads of `head_dim` values (RoPE over the whole head), FFN width `ffn`, `vocab`
/// tokens, a 64-position context, ModelConfig's default RoPE base (10000) and RMSNorm epsilon
/// (1e-6), no Q/K/V biases, untied LM head. Callers change what their test needs.
inline ModelConfig small_model_config(int64_t layers, int64_t hidden, int64_t heads,
                                      int64_t kv_heads, int64_t head_dim, int64_t ffn,
                                      int64_t vocab) {
  ModelConfig c;
  c.n_layers = layers;
  c.hidden = hidden;
  c.n_heads = heads;
  c.n_kv_heads = kv_heads;
  c.head_dim = head_dim;
  c.rope_dim = head_dim;
  c.ffn = ffn;
  c.vocab = vocab;
  c.context_length = 64;
  return c;
}

}  // namespace decodebench::testing
