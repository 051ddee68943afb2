// CPU reference operators of the decode step (f32 activations, f32 accumulation). These define the
// numbers every GPU kernel is checked against.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/config.hpp"
#include "core/model/weights.hpp"

namespace decodebench::cpu {

class ThreadPool;

/// RMSNorm (Zhang & Sennrich 2019; ggml form, eps inside the root):
/// y[i] = x[i] / sqrt(mean(x²) + eps) · w[i], for i < n. `y` may alias `x`.
void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps);

/// Rotates the first `rope_dim` values of each of `n_heads` heads (head_dim apart) in place for
/// position `pos` (inv_freq from rope_inv_freq(ModelConfig)): angle_i = pos·inv_freq[i] (double),
/// pair (a, b) → (a·cos − b·sin, a·sin + b·cos). Pairs are adjacent (x[2i], x[2i+1]) or half-split
/// (x[i], x[i + rope_dim/2]) per `style`.
void rope(float* x, int64_t n_heads, int64_t head_dim, int64_t rope_dim, int64_t pos,
          const double* inv_freq, RopeStyle style);

/// Decode attention for one query token with grouped-query attention (Ainslie et al. 2023):
/// query head h reads KV head h / (n_heads / n_kv_heads). For each head,
/// out = softmax(q·Kᵀ / sqrt(head_dim)) · V over positions [0, seq_len).
/// `k_cache`/`v_cache` are [n_kv_heads][capacity][head_dim]; `q` and `out` are [n_heads][head_dim];
/// `scratch` holds at least seq_len floats.
void attention(const float* q, const float* k_cache, const float* v_cache, float* out,
               int64_t n_heads, int64_t n_kv_heads, int64_t head_dim, int64_t capacity,
               int64_t seq_len, float* scratch);

/// SwiGLU (Shazeer 2020): out[i] = silu(gate[i]) · up[i], silu(g) = g / (1 + e^-g).
void swiglu(const float* gate, const float* up, float* out, int64_t n);

/// GEMV y[r] = Σ_c W[r][c]·x[c] for all rows of `w` (any supported weight type), rows split over
/// the pool's threads. Each row is one fixed-order dot product, so results are thread-independent.
void gemv(const TensorView& w, const float* x, float* y, ThreadPool& pool);

/// The GEMV of a decode batch: Y[i][r] = Σ_c W[r][c]·X[i][c] for the m vectors X[i] = x + i ·
/// x_stride (w.cols floats each) into Y[i] = y + i · y_stride (w.rows floats). Each (row, vector)
/// is gemv's dot product, so Y[i] equals gemv(w, X[i]) bit for bit; a thread takes each of its rows
/// for all m vectors in turn, so a row comes from memory once per call while it is in cache,
/// instead of once per vector. m = 0 writes nothing. Throws decodebench::Error as quant::dot_row
/// does (exit 2 for a weight type it cannot read), rethrown from the pool's threads.
void gemm(const TensorView& w, const float* x, int64_t x_stride, float* y, int64_t y_stride,
          int64_t m, ThreadPool& pool);

/// Index of the largest value in x[0, n): ties go to the lowest index; the first NaN wins (as
/// numpy.argmax). n must be >= 1.
int32_t argmax(const float* x, int64_t n);

/// Dequantizes row `r` of `w` into `out` (w.cols floats): the embedding lookup.
void embedding_row(const TensorView& w, int64_t r, float* out);

}  // namespace decodebench::cpu
