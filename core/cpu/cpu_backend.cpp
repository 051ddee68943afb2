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
  const int64_t work = 3 * c.hidden + 2 * c.q_dim() + 2 * c.kv_dim() + 3 * c.ffn + slots * c.vocab +
                       max_positions * std::max<int64_t>(1, c.n_kv_heads);
  return saturating_sum(kv, 4 * work);
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
  x_.resize(c_.hidden);
  xn_.resize(c_.hidden);
  q_.resize(c_.q_dim());
  k_.resize(c_.kv_dim());
  v_.resize(c_.kv_dim());
  att_.resize(c_.q_dim());
  proj_.resize(c_.hidden);
  gate_.resize(c_.ffn);
  up_.resize(c_.ffn);
  act_.resize(c_.ffn);
  logits_.resize(static_cast<size_t>(max_batch_ * c_.vocab));
  // One attention score row per KV head so that KV heads can run in parallel.
  scratch_.resize(static_cast<size_t>(c_.n_kv_heads * max_positions));
}

std::string CpuBackend::device_name() const {
  const int n = pool_.threads();
  return cpu_model_name() + " (" + std::to_string(n) + (n == 1 ? " thread)" : " threads)");
}

void CpuBackend::layer(int64_t slot, int64_t l, int64_t pos) {
  const LayerWeights& w = model_.weights.layers[l];
  const float eps = static_cast<float>(c_.rms_eps);
  const int64_t hd = c_.head_dim;

  rms_norm(x_.data(), w.attn_norm.f32(), xn_.data(), c_.hidden, eps);
  gemv(w.wq, xn_.data(), q_.data(), pool_);
  gemv(w.wk, xn_.data(), k_.data(), pool_);
  gemv(w.wv, xn_.data(), v_.data(), pool_);
  if (w.bq.present()) {
    for (int64_t i = 0; i < c_.q_dim(); ++i) q_[i] += w.bq.f32()[i];
    for (int64_t i = 0; i < c_.kv_dim(); ++i) k_[i] += w.bk.f32()[i];
    for (int64_t i = 0; i < c_.kv_dim(); ++i) v_[i] += w.bv.f32()[i];
  }
  if (w.q_norm.present()) {
    for (int64_t h = 0; h < c_.n_heads; ++h)
      rms_norm(&q_[h * hd], w.q_norm.f32(), &q_[h * hd], hd, eps);
    for (int64_t h = 0; h < c_.n_kv_heads; ++h)
      rms_norm(&k_[h * hd], w.k_norm.f32(), &k_[h * hd], hd, eps);
  }
  rope(q_.data(), c_.n_heads, hd, c_.rope_dim, pos, inv_freq_.data(), c_.rope_style);
  rope(k_.data(), c_.n_kv_heads, hd, c_.rope_dim, pos, inv_freq_.data(), c_.rope_style);

  const int64_t layer_floats = kv_floats_per_layer(c_, max_positions_);
  const int64_t base = (slot * c_.n_layers + l) * layer_floats;
  float* kc = &k_cache_[static_cast<size_t>(base)];
  float* vc = &v_cache_[static_cast<size_t>(base)];
  for (int64_t h = 0; h < c_.n_kv_heads; ++h) {
    for (int64_t d = 0; d < hd; ++d) {
      kc[(h * max_positions_ + pos) * hd + d] = k_[h * hd + d];
      vc[(h * max_positions_ + pos) * hd + d] = v_[h * hd + d];
    }
  }
  // Each KV head and its query group is independent: one task per KV head.
  const int64_t group = c_.n_heads / c_.n_kv_heads;
  pool_.parallel_for(c_.n_kv_heads, [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g) {
      attention(&q_[g * group * hd], kc + g * max_positions_ * hd, vc + g * max_positions_ * hd,
                &att_[g * group * hd], group, 1, hd, max_positions_, pos + 1,
                &scratch_[g * max_positions_]);
    }
  });
  gemv(w.wo, att_.data(), proj_.data(), pool_);
  for (int64_t i = 0; i < c_.hidden; ++i) x_[i] += proj_[i];

  rms_norm(x_.data(), w.ffn_norm.f32(), xn_.data(), c_.hidden, eps);
  gemv(w.w_gate, xn_.data(), gate_.data(), pool_);
  gemv(w.w_up, xn_.data(), up_.data(), pool_);
  swiglu(gate_.data(), up_.data(), act_.data(), c_.ffn);
  gemv(w.w_down, act_.data(), proj_.data(), pool_);
  for (int64_t i = 0; i < c_.hidden; ++i) x_[i] += proj_[i];
}

void CpuBackend::forward(int64_t slot, int32_t token, int64_t pos) {
  embedding_row(model_.weights.token_embd, token, x_.data());
  for (int64_t l = 0; l < c_.n_layers; ++l) layer(slot, l, pos);
  rms_norm(x_.data(), model_.weights.output_norm.f32(), xn_.data(), c_.hidden,
           static_cast<float>(c_.rms_eps));
  gemv(model_.weights.output, xn_.data(), &logits_[static_cast<size_t>(slot * c_.vocab)], pool_);
}

int32_t CpuBackend::step(int32_t token, int64_t pos, StepPhases* phases) {
  const auto t0 = std::chrono::steady_clock::now();
  check_step_inputs(token, pos, c_.vocab, max_positions_);
  forward(0, token, pos);
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
  for (int64_t i = 0; i < m; ++i) forward(i, tokens[i], positions[i]);
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
