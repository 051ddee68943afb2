#include "core/cpu/cpu_backend.hpp"

#include <chrono>
#include <string>
#include <thread>

#include "core/cpu/ops.hpp"
#include "core/error.hpp"
#include "core/result/environment.hpp"
#include "core/run_config.hpp"

namespace decodebench::cpu {

namespace {
int64_t kv_floats_per_layer(const ModelConfig& c, int64_t positions) {
  return c.n_kv_heads * positions * c.head_dim;
}
}  // namespace

void require_f32_vectors(const Model& model) {
  const auto check = [](const TensorView& t) {
    if (t.present() && t.type != WeightType::kF32) {
      throw runtime_error("internal error: 1-D tensor " + t.name + " is " +
                          weight_traits(t.type).name + ", expected F32");
    }
  };
  for (const auto& l : model.weights.layers) {
    for (const TensorView* t :
         {&l.attn_norm, &l.bq, &l.bk, &l.bv, &l.q_norm, &l.k_norm, &l.ffn_norm}) {
      check(*t);
    }
  }
  check(model.weights.output_norm);
}

int64_t CpuBackend::workspace_bytes(const ModelConfig& c, int64_t max_positions,
                                    int64_t max_batch) {
  const int64_t slots = std::max<int64_t>(1, max_batch);
  // Saturating: within the shape bounds the KV term alone can pass 2^63 (the memory check then
  // refuses INT64_MAX instead of a wrapped small number).
  const int64_t kv =
      saturating_product({2, slots, c.n_layers, kv_floats_per_layer(c, max_positions), 4});
  // Per sequence of a batch: x, xn, proj; q, att; k, v; gate, up, act; its logits; an attention
  // score row per KV head.
  const int64_t per_sequence =
      saturating_sum(3 * c.hidden + 2 * c.q_dim() + 2 * c.kv_dim() + 3 * c.ffn + c.vocab,
                     saturating_product({max_positions, std::max<int64_t>(1, c.n_kv_heads)}));
  const int64_t work = saturating_product({slots, per_sequence});
  return saturating_sum(kv, saturating_product({4, work}));
}

CpuBackend::CpuBackend(const Model& model, int64_t max_positions, int threads, int64_t max_batch)
    : model_(model),
      c_(model.config),
      max_positions_(max_positions),
      max_batch_(max_batch),
      pool_(threads) {
  if (max_positions < 1) throw usage_error("KV-cache capacity must be >= 1 position");
  if (max_batch < 1 || max_batch > kMaxBatch) {
    throw usage_error("--batch must be in [1, " + std::to_string(kMaxBatch) + "] (got " +
                      std::to_string(max_batch) + ")");
  }
  require_f32_vectors(model);
  inv_freq_ = rope_inv_freq(c_);
  const size_t kv =
      static_cast<size_t>(max_batch_ * c_.n_layers * kv_floats_per_layer(c_, max_positions));
  k_cache_.assign(kv, 0.0f);
  v_cache_.assign(kv, 0.0f);
  // Activations: max_batch rows each, row i for sequence i of a batched step.
  const auto rows = [&](int64_t n) { return static_cast<size_t>(max_batch_ * n); };
  x_.resize(rows(c_.hidden));
  xn_.resize(rows(c_.hidden));
  q_.resize(rows(c_.q_dim()));
  k_.resize(rows(c_.kv_dim()));
  v_.resize(rows(c_.kv_dim()));
  att_.resize(rows(c_.q_dim()));
  proj_.resize(rows(c_.hidden));
  gate_.resize(rows(c_.ffn));
  up_.resize(rows(c_.ffn));
  act_.resize(rows(c_.ffn));
  logits_.resize(rows(c_.vocab));
  // One attention score row per sequence and KV head, so that they all can run in parallel.
  scratch_.resize(static_cast<size_t>(max_batch_ * c_.n_kv_heads * max_positions));
}

std::string CpuBackend::device_name() const {
  const int n = pool_.threads();
  return cpu_model_name() + " (" + std::to_string(n) + (n == 1 ? " thread)" : " threads)");
}

void CpuBackend::layer(int64_t l, std::span<const int64_t> positions) {
  const LayerWeights& w = model_.weights.layers[l];
  const float eps = static_cast<float>(c_.rms_eps);
  const int64_t hd = c_.head_dim;
  const int64_t m = static_cast<int64_t>(positions.size());
  const int64_t dim = c_.hidden, qd = c_.q_dim(), kvd = c_.kv_dim(), ffn = c_.ffn;

  for (int64_t i = 0; i < m; ++i) {
    rms_norm(&x_[i * dim], w.attn_norm.f32(), &xn_[i * dim], dim, eps);
  }
  gemm(w.wq, xn_.data(), dim, q_.data(), qd, m, pool_);
  gemm(w.wk, xn_.data(), dim, k_.data(), kvd, m, pool_);
  gemm(w.wv, xn_.data(), dim, v_.data(), kvd, m, pool_);
  const int64_t layer_floats = kv_floats_per_layer(c_, max_positions_);
  const int64_t group = c_.n_heads / c_.n_kv_heads;
  for (int64_t i = 0; i < m; ++i) {
    const int64_t pos = positions[i];
    float* q = &q_[i * qd];
    float* k = &k_[i * kvd];
    float* v = &v_[i * kvd];
    if (w.bq.present()) {
      for (int64_t e = 0; e < qd; ++e) q[e] += w.bq.f32()[e];
      for (int64_t e = 0; e < kvd; ++e) k[e] += w.bk.f32()[e];
      for (int64_t e = 0; e < kvd; ++e) v[e] += w.bv.f32()[e];
    }
    if (w.q_norm.present()) {
      for (int64_t h = 0; h < c_.n_heads; ++h)
        rms_norm(&q[h * hd], w.q_norm.f32(), &q[h * hd], hd, eps);
      for (int64_t h = 0; h < c_.n_kv_heads; ++h)
        rms_norm(&k[h * hd], w.k_norm.f32(), &k[h * hd], hd, eps);
    }
    rope(q, c_.n_heads, hd, c_.rope_dim, pos, inv_freq_.data(), c_.rope_style);
    rope(k, c_.n_kv_heads, hd, c_.rope_dim, pos, inv_freq_.data(), c_.rope_style);

    // Sequence i's KV cache is slot i.
    const int64_t base = (i * c_.n_layers + l) * layer_floats;
    float* kc = &k_cache_[static_cast<size_t>(base)];
    float* vc = &v_cache_[static_cast<size_t>(base)];
    for (int64_t h = 0; h < c_.n_kv_heads; ++h) {
      for (int64_t d = 0; d < hd; ++d) {
        kc[(h * max_positions_ + pos) * hd + d] = k[h * hd + d];
        vc[(h * max_positions_ + pos) * hd + d] = v[h * hd + d];
      }
    }
  }
  // Each (sequence, KV head) pair and its query group is independent: one task each, with its
  // own score row.
  pool_.parallel_for(m * c_.n_kv_heads, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t i = task / c_.n_kv_heads, g = task % c_.n_kv_heads;
      const int64_t base = (i * c_.n_layers + l) * layer_floats + g * max_positions_ * hd;
      attention(&q_[i * qd + g * group * hd], &k_cache_[static_cast<size_t>(base)],
                &v_cache_[static_cast<size_t>(base)], &att_[i * qd + g * group * hd], group, 1, hd,
                max_positions_, positions[i] + 1, &scratch_[task * max_positions_]);
    }
  });
  gemm(w.wo, att_.data(), qd, proj_.data(), dim, m, pool_);
  for (int64_t e = 0; e < m * dim; ++e) x_[e] += proj_[e];

  for (int64_t i = 0; i < m; ++i) {
    rms_norm(&x_[i * dim], w.ffn_norm.f32(), &xn_[i * dim], dim, eps);
  }
  gemm(w.w_gate, xn_.data(), dim, gate_.data(), ffn, m, pool_);
  gemm(w.w_up, xn_.data(), dim, up_.data(), ffn, m, pool_);
  for (int64_t i = 0; i < m; ++i) swiglu(&gate_[i * ffn], &up_[i * ffn], &act_[i * ffn], ffn);
  gemm(w.w_down, act_.data(), ffn, proj_.data(), dim, m, pool_);
  for (int64_t e = 0; e < m * dim; ++e) x_[e] += proj_[e];
}

void CpuBackend::forward(std::span<const int32_t> tokens, std::span<const int64_t> positions) {
  const auto m = static_cast<int64_t>(tokens.size());
  const int64_t dim = c_.hidden;
  for (int64_t i = 0; i < m; ++i) embedding_row(model_.weights.token_embd, tokens[i], &x_[i * dim]);
  for (int64_t l = 0; l < c_.n_layers; ++l) layer(l, positions);
  for (int64_t i = 0; i < m; ++i) {
    rms_norm(&x_[i * dim], model_.weights.output_norm.f32(), &xn_[i * dim], dim,
             static_cast<float>(c_.rms_eps));
  }
  gemm(model_.weights.output, xn_.data(), dim, logits_.data(), c_.vocab, m, pool_);
}

int32_t CpuBackend::step(int32_t token, int64_t pos, StepPhases* phases) {
  const auto t0 = std::chrono::steady_clock::now();
  check_step_inputs(token, pos, c_.vocab, max_positions_);
  forward(std::span<const int32_t>(&token, 1), std::span<const int64_t>(&pos, 1));
  last_batch_ = 1;
  const auto t1 = std::chrono::steady_clock::now();
  const int32_t next = argmax(logits_.data(), c_.vocab);
  if (phases) {
    const auto t2 = std::chrono::steady_clock::now();
    phases->launch_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
    phases->argmax_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t2 - t1).count();
    phases->total_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t2 - t0).count();
  }
  return next;
}

void CpuBackend::step_batch(std::span<const int32_t> tokens, std::span<const int64_t> positions,
                            std::span<int32_t> next, StepPhases* phases) {
  const auto t0 = std::chrono::steady_clock::now();
  check_batch_inputs(tokens, positions, next, max_batch_, c_.vocab, max_positions_);
  const auto m = static_cast<int64_t>(tokens.size());
  forward(tokens, positions);
  last_batch_ = m;
  const auto t1 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < m; ++i) {
    next[i] = argmax(&logits_[static_cast<size_t>(i * c_.vocab)], c_.vocab);
  }
  if (phases) {
    const auto t2 = std::chrono::steady_clock::now();
    phases->launch_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
    phases->argmax_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t2 - t1).count();
    phases->total_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t2 - t0).count();
  }
}

void CpuBackend::logits(std::vector<float>& out) {
  out.assign(logits_.begin(), logits_.begin() + c_.vocab);
}

void CpuBackend::logits_batch(int64_t seq, std::vector<float>& out) {
  if (seq < 0 || seq >= last_batch_) {
    throw usage_error("sequence " + std::to_string(seq) +
                      " is outside the batch of the last step (" + std::to_string(last_batch_) +
                      " sequence" + (last_batch_ == 1 ? "" : "s") + ")");
  }
  const auto begin = logits_.begin() + seq * c_.vocab;
  out.assign(begin, begin + c_.vocab);
}

ExecReport CpuBackend::set_exec_mode_batch(ExecMode mode, int64_t batch) {
  if (batch < 1 || batch > max_batch_) {
    throw usage_error("a batched step holds 1 to " + std::to_string(max_batch_) +
                      " sequences on this cpu backend, got " + std::to_string(batch));
  }
  return set_exec_mode(mode);
}

}  // namespace decodebench::cpu
