#include "core/cpu/ops.hpp"

#include <cmath>
#include <limits>

#include "core/cpu/thread_pool.hpp"
#include "core/quant/dequant.hpp"

namespace decodebench::cpu {

void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += x[i] * x[i];
  const float scale = 1.0f / std::sqrt(sum / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * w[i];
}

void rope(float* x, int64_t n_heads, int64_t head_dim, int64_t rope_dim, int64_t pos,
          const double* inv_freq, RopeStyle style) {
  const int64_t half = rope_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const double angle = static_cast<double>(pos) * inv_freq[i];
    const float c = static_cast<float>(std::cos(angle));
    const float s = static_cast<float>(std::sin(angle));
    const int64_t ia = style == RopeStyle::kAdjacent ? 2 * i : i;
    const int64_t ib = style == RopeStyle::kAdjacent ? 2 * i + 1 : i + half;
    for (int64_t h = 0; h < n_heads; ++h) {
      float* head = x + h * head_dim;
      const float a = head[ia];
      const float b = head[ib];
      head[ia] = a * c - b * s;
      head[ib] = a * s + b * c;
    }
  }
}

void attention(const float* q, const float* k_cache, const float* v_cache, float* out,
               int64_t n_heads, int64_t n_kv_heads, int64_t head_dim, int64_t capacity,
               int64_t seq_len, float* scratch) {
  const int64_t group = n_heads / n_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  for (int64_t h = 0; h < n_heads; ++h) {
    const float* qh = q + h * head_dim;
    const int64_t kvh = h / group;
    const float* kh = k_cache + kvh * capacity * head_dim;
    const float* vh = v_cache + kvh * capacity * head_dim;
    float max_score = -std::numeric_limits<float>::infinity();
    for (int64_t t = 0; t < seq_len; ++t) {
      float dot = 0.0f;
      for (int64_t d = 0; d < head_dim; ++d) dot += qh[d] * kh[t * head_dim + d];
      scratch[t] = dot * scale;
      max_score = std::fmax(max_score, scratch[t]);
    }
    float denom = 0.0f;
    for (int64_t t = 0; t < seq_len; ++t) {
      scratch[t] = std::exp(scratch[t] - max_score);
      denom += scratch[t];
    }
    float* oh = out + h * head_dim;
    for (int64_t d = 0; d < head_dim; ++d) oh[d] = 0.0f;
    for (int64_t t = 0; t < seq_len; ++t) {
      const float p = scratch[t] / denom;
      for (int64_t d = 0; d < head_dim; ++d) oh[d] += p * vh[t * head_dim + d];
    }
  }
}

void swiglu(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void gemv(const TensorView& w, const float* x, float* y, ThreadPool& pool) {
  gemm(w, x, 0, y, 0, 1, pool);
}

void gemm(const TensorView& w, const float* x, int64_t x_stride, float* y, int64_t y_stride,
          int64_t m, ThreadPool& pool) {
  const int64_t cols = w.cols;
  pool.parallel_for(
      w.rows,
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const void* row = w.row(r);
          for (int64_t i = 0; i < m; ++i) {
            y[i * y_stride + r] = quant::dot_row(w.type, row, x + i * x_stride, cols);
          }
        }
      },
      16);
}

int32_t argmax(const float* x, int64_t n) {
  int64_t best = 0;
  if (std::isnan(x[0])) return 0;
  for (int64_t i = 1; i < n; ++i) {
    if (std::isnan(x[i])) return static_cast<int32_t>(i);
    if (x[i] > x[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

void embedding_row(const TensorView& w, int64_t r, float* out) {
  quant::dequantize_row(w.type, w.row(r), out, w.cols);
}

}  // namespace decodebench::cpu
