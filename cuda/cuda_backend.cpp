#include "cuda/cuda_backend.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <system_error>

#include "core/error.hpp"
#include "core/quant/tiled_layout.hpp"
#include "cuda/check.hpp"
#include "cuda/kernels/argmax.cuh"
#include "cuda/kernels/attention.cuh"
#include "cuda/kernels/embedding.cuh"
#include "cuda/kernels/gemm.cuh"
#include "cuda/kernels/gemv.cuh"
#include "cuda/kernels/kv_cache.cuh"
#include "cuda/kernels/rms_norm.cuh"
#include "cuda/kernels/rope.cuh"
#include "cuda/kernels/swiglu.cuh"

namespace decodebench::cuda {

namespace {

using Clock = std::chrono::steady_clock;

int64_t ns(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count();
}

constexpr size_t kAlign = 256;  // every tensor starts on a 256-byte boundary (16-byte loads)

/// Idle times a series holds (Backend::idle_series_ns): more steps than a round of a pass takes
/// in practice (32 KiB of device memory).
constexpr uint32_t kIdleCapacity = 4096;

size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

/// A GEMV over matrix `w` as placed on the device (type, layout, shape); inputs and outputs unset.
GemvParams gemv_over(const DeviceTensor& w) {
  GemvParams p;
  p.type = w.type;
  p.w = w.data;
  p.tiled = w.tiled;
  p.rows = w.rows;
  p.cols = w.cols;
  return p;
}

// Tensors of the model in upload order (a tied LM head is uploaded once).
template <typename Fn>
void for_each_tensor(const Model& m, Fn&& fn) {
  const ModelWeights& w = m.weights;
  fn(w.token_embd);
  for (const auto& l : w.layers) {
    for (const TensorView* t : {&l.attn_norm, &l.wq, &l.wk, &l.wv, &l.bq, &l.bk, &l.bv, &l.q_norm,
                                &l.k_norm, &l.wo, &l.ffn_norm, &l.w_gate, &l.w_up, &l.w_down}) {
      fn(*t);
    }
  }
  fn(w.output_norm);
  if (!m.config.tied_embeddings) fn(w.output);
}

int64_t workspace_floats(const ModelConfig& c) {
  return 2 * c.hidden + 2 * c.q_dim() + 2 * c.kv_dim() + 3 * c.ffn + c.vocab;
}

std::string gib(int64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return buf;
}

}  // namespace

namespace {

/// Scratch of the batched products: the largest gemm_scratch_bytes of the model's matrices
/// (stacked Q/K/V and gate/up counted as stacked, which needs at least as much).
int64_t batch_scratch_bytes(const Model& model) {
  const ModelConfig& c = model.config;
  const ModelWeights& w = model.weights;
  size_t s = 16;
  const auto need = [&](const TensorView& t, int64_t rows) {
    if (t.present()) s = std::max(s, gemm_scratch_bytes(t.type, rows, t.cols));
  };
  for (const LayerWeights& l : w.layers) {
    need(l.wq, c.q_dim() + 2 * c.kv_dim());
    need(l.wo, l.wo.rows);
    need(l.w_gate, 2 * c.ffn);
    need(l.w_down, l.w_down.rows);
  }
  need(c.tied_embeddings ? w.token_embd : w.output, c.vocab);
  return static_cast<int64_t>(s);
}

/// Floats of the per-sequence batch buffers (x, x', q, k, v, attention out, gate, up, act,
/// logits).
int64_t batch_floats(const ModelConfig& c) {
  return 2 * c.hidden + 2 * c.q_dim() + 2 * c.kv_dim() + 3 * c.ffn + c.vocab;
}

}  // namespace

bool token_copy_request() {
  const char* e = std::getenv("DECODEBENCH_TOKEN_D2H");
  if (e == nullptr || *e == '\0') return false;
  if (std::string_view(e) == "copy") return true;
  throw usage_error("DECODEBENCH_TOKEN_D2H: '" + std::string(e) +
                    "' is not copy (a D2H copy of the token after the argmax kernel); leave it "
                    "unset for the default (the kernel stores the token in host memory)");
}

SplitTrigger split_trigger_request() {
  const char* e = std::getenv("DECODEBENCH_SPLIT_TRIGGER");
  if (e == nullptr || *e == '\0') return SplitTrigger::kDefault;
  const std::string_view v(e);
  if (v == "entry") return SplitTrigger::kEntry;
  if (v == "wait") return SplitTrigger::kAfterWait;
  if (v == "head") return SplitTrigger::kLmHead;
  throw usage_error("DECODEBENCH_SPLIT_TRIGGER: '" + std::string(v) +
                    "' is not entry, wait or head (where the x' split kernels let the next "
                    "kernel launch); leave it unset for the per-type default");
}

void check_cuda_switches() {
  // The constructor's order, so both name the same variable first when several are bad.
  (void)attention_trigger_request();
  (void)attention_path_request();
  (void)token_copy_request();
  (void)split_trigger_request();
  (void)presplit_min_request();
  check_gemv_switches();
}

bool split_trigger_after_wait(SplitTrigger request, WeightType type, bool lm_head) {
  switch (request) {
    case SplitTrigger::kEntry:
      return false;
    case SplitTrigger::kAfterWait:
      return true;
    case SplitTrigger::kLmHead:
      return lm_head;
    case SplitTrigger::kDefault:
      break;
  }
  return type == WeightType::kQ4_K || type == WeightType::kQ6_K;
}

int64_t CudaBackend::device_bytes_needed(const Model& model, int64_t max_positions,
                                         int64_t max_batch) {
  int64_t weights = 0;
  for_each_tensor(model, [&](const TensorView& t) {
    if (t.present()) weights += static_cast<int64_t>(align_up(static_cast<size_t>(t.bytes())));
  });
  const ModelConfig& c = model.config;
  // Saturating: within the shape bounds this can pass 2^63 (then refused as too large).
  const int64_t kv = saturating_product({2, c.n_layers, c.kv_dim(), max_positions, 4, max_batch});
  const int splits = attention_splits(max_positions);
  // The single sequence's scratch also holds the merge form's partials (DECODEBENCH_ATTENTION).
  const int64_t scratch = attention_scratch_floats(
                              c.n_heads, c.head_dim,
                              std::max(splits, attention_short_splits(max_positions, c.head_dim))) *
                              4 +
                          static_cast<int64_t>(c.n_heads) * 4 +
                          static_cast<int64_t>(argmax_scratch_bytes(c.vocab, 1)) +
                          static_cast<int64_t>(step_clock_bytes(kIdleCapacity));
  int64_t batch = 0;
  if (max_batch > 1) {
    const int64_t widest = std::max({c.hidden, c.q_dim(), c.ffn});
    batch =
        max_batch *
            (batch_floats(c) * 4 + attention_scratch_floats(c.n_heads, c.head_dim, splits) * 4) +
        static_cast<int64_t>(argmax_scratch_bytes(c.vocab, max_batch)) +
        static_cast<int64_t>(gemm_x_split_bytes(max_batch, widest)) + batch_scratch_bytes(model);
  }
  return saturating_sum(kv, weights + workspace_floats(c) * 4 + scratch + batch + (1 << 20));
}

CudaBackend::CudaBackend(const Model& model, const CudaBackendOptions& options)
    : model_(model),
      c_(model.config),
      options_(options),
      max_positions_(options.max_positions),
      max_batch_(options.max_batch) {
  if (max_positions_ < 1) throw usage_error("KV-cache capacity must be >= 1 position");
  if (max_batch_ < 1 || max_batch_ > 256) {
    throw usage_error("batch must be in 1..256, got " + std::to_string(max_batch_));
  }
  attn_trigger_at_exit_ = attention_trigger_request();
  attn_path_ = attention_path_request();     // a bad DECODEBENCH_ATTENTION fails before any upload
  token_copy_ = token_copy_request();        // and a bad DECODEBENCH_TOKEN_D2H
  split_trigger_ = split_trigger_request();  // and DECODEBENCH_SPLIT_TRIGGER
  presplit_min_ = presplit_min_request();    // and DECODEBENCH_GEMV_PRESPLIT_MIN
  check_gemv_switches();                     // and the other GEMV switches, float models included
  DB_CUDA_CHECK(cudaSetDevice(options.device));
  cudaDeviceProp prop{};
  DB_CUDA_CHECK(cudaGetDeviceProperties(&prop, options.device));
  device_name_ = prop.name;
  // A device that cannot address pinned host memory (no unified addressing or mapping, e.g.
  // confidential-computing modes) gets its token by the D2H copy instead.
  if (prop.canMapHostMemory == 0 || prop.unifiedAddressing == 0) token_copy_ = true;
  size_t free_bytes = 0, total_bytes = 0;
  DB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const int64_t needed = device_bytes_needed(model, max_positions_, max_batch_);
  if (needed > static_cast<int64_t>(free_bytes)) {
    throw resource_error("not enough device memory on GPU " + std::to_string(options.device) +
                         " (" + device_name_ + "): the model needs " + std::to_string(needed) +
                         " bytes (" + gib(needed) + "), " + std::to_string(free_bytes) +
                         " bytes (" + gib(static_cast<int64_t>(free_bytes)) + ") are free of " +
                         gib(static_cast<int64_t>(total_bytes)));
  }
  upload_weights();
  allocate_workspace();
  step_gemv_forms_.reserve(16);
  step_attention_forms_.reserve(4);
}

CudaBackend::~CudaBackend() {
  // Work still queued must finish before the buffers it uses are freed.
  if (stream_.get()) DB_CUDA_CHECK_NOEXCEPT(cudaStreamSynchronize(stream_.get()));
}

void CudaBackend::upload_weights() {
  size_t total = 0;
  for_each_tensor(model_, [&](const TensorView& t) {
    if (t.present()) total += align_up(static_cast<size_t>(t.bytes()));
  });
  weights_ = DeviceBuffer(total);
  auto* base = weights_.data<uint8_t>();
  size_t offset = 0;
  // Places tensors back to back (one stacked matrix when they share type and row length, e.g.
  // [Wq; Wk; Wv]), starting on a 256-byte boundary. Returns the first tensor's view; with
  // `stack`, the view spans all rows.
  // A GEMV matrix (`gemv`) whose GEMV will read a pre-split x' goes up in the tiled layout when
  // tiled() says so (the stream-tiled or tiled kernel then reads it).
  std::vector<uint8_t> tiled_rows;
  const auto place_group = [&](std::initializer_list<const TensorView*> group, bool stack,
                               bool gemv = false) -> DeviceTensor {
    DeviceTensor d;
    const TensorView& first = **group.begin();
    if (!first.present()) return d;
    d.type = first.type;
    d.data = base + offset;
    d.cols = first.cols;
    d.rows = 0;
    for (const TensorView* t : group) d.rows += t->rows;
    d.tiled = gemv && tiled(d.type, stack ? d.rows : first.rows, d.cols);
    tiled_matrices_ += d.tiled ? 1 : 0;
    size_t bytes = 0;
    for (const TensorView* t : group) {
      const void* src = t->data;
      if (d.tiled) {
        tiled_rows.resize(static_cast<size_t>(t->bytes()));
        quant::tile_rows(t->type, t->rows, t->cols, t->data, tiled_rows.data());
        src = tiled_rows.data();
      }
      copy_to_device(base + offset + bytes, src, static_cast<size_t>(t->bytes()));
      bytes += static_cast<size_t>(t->bytes());
    }
    if (!stack) d.rows = first.rows;
    offset += align_up(bytes);
    return d;
  };
  const auto place = [&](const TensorView& t) { return place_group({&t}, false); };
  const auto place_matrix = [&](const TensorView& t) { return place_group({&t}, false, true); };
  // A view of rows [row0, row0 + rows) of a stacked tensor.
  const auto slice = [](const DeviceTensor& stacked, int64_t row0, int64_t rows) {
    DeviceTensor d = stacked;
    d.data =
        static_cast<const uint8_t*>(stacked.data) + row0 * row_bytes(stacked.type, stacked.cols);
    d.rows = rows;
    return d;
  };
  const auto same_layout = [](const TensorView& a, const TensorView& b) {
    return a.present() && b.present() && a.type == b.type && a.cols == b.cols;
  };
  const ModelWeights& w = model_.weights;
  token_embd_ = place(w.token_embd);
  layers_.resize(w.layers.size());
  for (size_t i = 0; i < w.layers.size(); ++i) {
    const LayerWeights& l = w.layers[i];
    DeviceLayer& d = layers_[i];
    d.attn_norm = place(l.attn_norm);
    // Q, K and V read the same normalised input: one stacked matrix, one GEMV, when the file
    // stores them alike (GGUF mixes types, e.g. Q4_K_M keeps some V in Q6_K).
    if (options_.fused && same_layout(l.wq, l.wk) && same_layout(l.wq, l.wv)) {
      d.wqkv = place_group({&l.wq, &l.wk, &l.wv}, true, true);
      d.wq = slice(d.wqkv, 0, l.wq.rows);
      d.wk = slice(d.wqkv, l.wq.rows, l.wk.rows);
      d.wv = slice(d.wqkv, l.wq.rows + l.wk.rows, l.wv.rows);
      if (l.bq.present()) {
        d.bqkv = place_group({&l.bq, &l.bk, &l.bv}, false);
        d.bqkv.cols = l.bq.cols + l.bk.cols + l.bv.cols;
      }
    } else if (options_.fused && same_layout(l.wq, l.wk) && l.wv.present()) {
      // V in another type (Q4_K_M's Q6_K layers): Q and K stacked, V apart; both GEMVs read the
      // same x' (one split of RMSNorm(x), or the norm fused into each).
      d.wqk = place_group({&l.wq, &l.wk}, true, true);
      d.wq = slice(d.wqk, 0, l.wq.rows);
      d.wk = slice(d.wqk, l.wq.rows, l.wk.rows);
      d.wv = place_matrix(l.wv);
      if (l.bq.present()) {
        d.bqk = place_group({&l.bq, &l.bk}, false);
        d.bqk.cols = l.bq.cols + l.bk.cols;
        d.bq = d.bqk;  // views of the stacked bias, for the batched step's separate products
        d.bq.cols = l.bq.cols;
        d.bk = d.bqk;
        d.bk.data = d.bqk.f32() + l.bq.cols;
        d.bk.cols = l.bk.cols;
        d.bv = place(l.bv);
      }
    } else {
      d.wq = place_matrix(l.wq);
      d.wk = place_matrix(l.wk);
      d.wv = place_matrix(l.wv);
    }
    if (!d.wqkv.present() && !d.wqk.present()) {
      d.bq = place(l.bq);
      d.bk = place(l.bk);
      d.bv = place(l.bv);
    }
    d.q_norm = place(l.q_norm);
    d.k_norm = place(l.k_norm);
    d.wo = place_matrix(l.wo);
    d.ffn_norm = place(l.ffn_norm);
    if (options_.fused && same_layout(l.w_gate, l.w_up)) {
      d.w_gate_up = place_group({&l.w_gate, &l.w_up}, true, true);
      d.w_gate = slice(d.w_gate_up, 0, l.w_gate.rows);
      d.w_up = slice(d.w_gate_up, l.w_gate.rows, l.w_up.rows);
    } else {
      d.w_gate = place_matrix(l.w_gate);
      d.w_up = place_matrix(l.w_up);
    }
    d.w_down = place_matrix(l.w_down);
  }
  output_norm_ = place(w.output_norm);
  // A tied LM head is the embedding table, which the embedding kernel reads in GGUF blocks.
  output_ = c_.tied_embeddings ? token_embd_ : place_matrix(w.output);
}

void CudaBackend::allocate_workspace() {
  const auto floats = [](int64_t n) { return DeviceBuffer(static_cast<size_t>(n) * 4); };
  const std::vector<double> inv = rope_inv_freq(c_);
  inv_freq_ = DeviceBuffer(inv.size() * sizeof(double));
  copy_to_device(inv_freq_.data(), inv.data(), inv.size() * sizeof(double));
  // One KV cache per slot: [slot][layer][kv_head][position][head_dim]; slot 0 serves `step`.
  const int64_t kv = c_.n_layers * c_.kv_dim() * max_positions_ * max_batch_;
  k_cache_ = floats(kv);
  v_cache_ = floats(kv);
  fill_device(k_cache_.data(), 0, k_cache_.bytes());
  fill_device(v_cache_.data(), 0, v_cache_.bytes());
  x_ = floats(c_.hidden);
  xn_ = floats(c_.hidden);
  q_ = floats(c_.q_dim());
  k_ = floats(c_.kv_dim());
  v_ = floats(c_.kv_dim());
  att_ = floats(c_.q_dim());
  gate_ = floats(c_.ffn);
  up_ = floats(c_.ffn);
  act_ = floats(c_.ffn);
  logits_ = floats(c_.vocab);
  attn_splits_ = attention_splits(max_positions_);
  // Also the merge form's partials (path 4, DECODEBENCH_ATTENTION=merge) and its counts.
  attn_scratch_ = floats(attention_scratch_floats(
      c_.n_heads, c_.head_dim,
      std::max(attn_splits_, attention_short_splits(max_positions_, c_.head_dim))));
  attn_merge_count_ = DeviceBuffer(static_cast<size_t>(c_.n_heads) * sizeof(unsigned));
  fill_device(attn_merge_count_.data(), 0, attn_merge_count_.bytes());
  argmax_scratch_ = DeviceBuffer(std::max<size_t>(argmax_scratch_bytes(c_.vocab, 1), 16));
  step_clock_ = DeviceBuffer(step_clock_bytes(kIdleCapacity));
  const StepClock clock_header{0, 0, kIdleCapacity};
  copy_to_device(step_clock_.data(), &clock_header, sizeof clock_header);
  const int64_t widest = std::max({c_.hidden, c_.q_dim(), c_.ffn});
  x_split_ = DeviceBuffer(gemv_x_split_bytes((widest + 31) / 32 * 32));
  d_next_ = DeviceBuffer(sizeof(int32_t));
  d_inputs_ = DeviceBuffer(sizeof(StepInputs));
  d_error_flag_ = DeviceBuffer(sizeof(int32_t));
  fault_scratch_ = DeviceBuffer(256);
  fill_device(d_error_flag_.data(), 0, sizeof(int32_t));
  fill_device(d_inputs_.data(), 0, sizeof(StepInputs));  // advance 0 until a copy
  h_inputs_ = PinnedBuffer(sizeof(StepInputs));
  h_next_ = PinnedBuffer(kTokenSlots * sizeof(int32_t));
  for (CudaEvent& e : step_done_) e = CudaEvent(cudaEventDisableTiming);
  // Pinned memory is mapped for the device under unified addressing: the final argmax kernel
  // can store the token there itself.
  if (!token_copy_) {
    DB_CUDA_CHECK(
        cudaHostGetDevicePointer(reinterpret_cast<void**>(&h_next_device_), h_next_.data(), 0));
  }
  std::memset(h_inputs_.data(), 0, sizeof(StepInputs));
  if (max_batch_ > 1) allocate_batch_workspace();
  for (DeviceLayer& L : layers_) {
    L.swiglu_in_gate_up = L.w_gate_up.present() && L.w_gate.rows == L.w_up.rows &&
                          gemv_swiglu_out_supported(gate_up_swiglu(L)) &&
                          !presplit(gate_up_swiglu(L));
    // V reads the QK GEMV's split only onto the stream kernels (sm_90), where it was measured
    // (docs/performance.md, round 28); elsewhere the mma kernel would take it, which bench-kernels
    // found no faster than the staged kernel on small matrices (prefer_mma in gemv.cu).
    if (L.wqk.present()) {
      GemvParams v = gemv_over(L.wv);
      v.y = v_.data<float>();
      v.x_split = x_split_.data();
      const int variant = gemv_presplit_supported(v) ? gemv_launch_info(v).variant : 0;
      L.v_on_qk_split = variant == 4 || variant == 7;
    }
  }
  DB_CUDA_CHECK(cudaDeviceSynchronize());
}

GemvParams CudaBackend::gate_up_swiglu(const DeviceLayer& L) {
  GemvParams p = gemv_over(L.w_gate_up);
  p.x = x_.data<float>();
  p.y = act_.data<float>();
  p.input = GemvInput::kRmsNorm;
  p.norm_w = L.ffn_norm.f32();
  p.eps = static_cast<float>(c_.rms_eps);
  p.swiglu_out = true;
  return p;
}

void CudaBackend::allocate_batch_workspace() {
  const int64_t b = max_batch_;
  const auto floats = [](int64_t n) { return DeviceBuffer(static_cast<size_t>(n) * 4); };
  bx_ = floats(b * c_.hidden);
  bxn_ = floats(b * c_.hidden);
  bq_ = floats(b * c_.q_dim());
  bk_ = floats(b * c_.kv_dim());
  bv_ = floats(b * c_.kv_dim());
  batt_ = floats(b * c_.q_dim());
  bgate_ = floats(b * c_.ffn);
  bup_ = floats(b * c_.ffn);
  bact_ = floats(b * c_.ffn);
  blogits_ = floats(b * c_.vocab);
  battn_scratch_ = floats(
      std::max<int64_t>(1, b * attention_scratch_floats(c_.n_heads, c_.head_dim, attn_splits_)));
  bargmax_scratch_ = DeviceBuffer(std::max<size_t>(argmax_scratch_bytes(c_.vocab, b), 16));
  const int64_t widest = std::max({c_.hidden, c_.q_dim(), c_.ffn});
  bsplit_ = DeviceBuffer(gemm_x_split_bytes(b, widest));
  // Column-split partial sums of the batched products (the largest any matrix needs).
  size_t scratch = 16;
  const auto need = [&](const DeviceTensor& w) {
    if (w.present()) scratch = std::max(scratch, gemm_scratch_bytes(w.type, w.rows, w.cols));
  };
  for (const DeviceLayer& L : layers_) {
    for (const DeviceTensor* w :
         {&L.wqkv, &L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate_up, &L.w_gate, &L.w_up, &L.w_down}) {
      need(*w);
    }
  }
  need(output_);
  bgemm_scratch_ = DeviceBuffer(scratch);
  d_bnext_ = DeviceBuffer(static_cast<size_t>(b) * sizeof(int32_t));
  d_binputs_ = DeviceBuffer(static_cast<size_t>(b) * sizeof(StepInputs));
  h_binputs_ = PinnedBuffer(static_cast<size_t>(b) * sizeof(StepInputs));
  h_bnext_ = PinnedBuffer(static_cast<size_t>(b) * sizeof(int32_t));
  std::memset(h_binputs_.data(), 0, static_cast<size_t>(b) * sizeof(StepInputs));
  fill_device(d_binputs_.data(), 0, static_cast<size_t>(b) * sizeof(StepInputs));
}

/// Large quantized GEMVs run fastest on a pre-split x' (the split written once per GEMV by one
/// small kernel; measured on the H200: Qwen2.5-7B Q4_0 step 394 tokens/s, against 293 with only
/// the down projection pre-split and 216 with none). Small GEMVs (SmolLM2) are latency-bound:
/// there the extra kernel would cost more than it saves (kPresplitMinElements).
int64_t presplit_min_request() {
  const char* e = std::getenv("DECODEBENCH_GEMV_PRESPLIT_MIN");
  if (e == nullptr || *e == '\0') return kPresplitMinElements;
  const std::string_view v(e);
  constexpr int64_t kMax = int64_t{1} << 40;
  int64_t n = -1;  // digits only: from_chars alone would take a leading '-'
  if (v.find_first_not_of("0123456789") == std::string_view::npos) {
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size()) n = -1;  // out of int64's range
  }
  if (n < 0 || n > kMax) {
    throw usage_error("DECODEBENCH_GEMV_PRESPLIT_MIN: '" + std::string(v) +
                      "' is not a count of weights from 0 to 2^40 (the smallest quantized GEMV "
                      "that runs on a pre-split x'); leave it unset for the default, " +
                      std::to_string(kPresplitMinElements));
  }
  return n;
}

bool CudaBackend::tiled(WeightType type, int64_t rows, int64_t cols) const {
  // Automatic: only where the tiled layout measured faster than GGUF blocks in 7B steps on the
  // H200: Q8_0 (the tiled kernel, round 9; the stream-tiled kernel since round 16) and Q4_0 where
  // the stream-tiled kernel runs (sm_90; round 16: 128-bit shared-memory loads of a tile's codes
  // instead of five 32-bit loads and funnel shifts; the tiled kernel's 4-bit math costs more than
  // the stream kernel's on GGUF blocks). Q4_1 measured the same either way and stays in GGUF
  // blocks; Q4_K's blocks already align (docs/performance.md). Q6_K where the stream-tiled kernel
  // runs (round 27: its decoder needs a third of the GGUF decoder's loads; 7B Q6_K step 2,303–2,315
  // µs against 2,471–2,475 in GGUF blocks, Q4_K_M 2,021–2,022 against 2,057–2,058).
  const WeightLayout layout = options_.weight_layout;
  const bool auto_tiled =
      type == WeightType::kQ8_0 || ((type == WeightType::kQ4_0 || type == WeightType::kQ6_K) &&
                                    gemv_stream_tiled_available(type));
  if (layout == WeightLayout::kGguf || (layout == WeightLayout::kAuto && !auto_tiled)) {
    return false;
  }
  // Batched products (max_batch > 1) read GGUF blocks, so only batch-1 backends tile.
  const int mode = options_.gemv_presplit;
  return max_batch_ == 1 && mode != 2 && gemv_tiled_layout_supported(type, rows, cols) &&
         (mode == 1 || rows * cols >= presplit_min_);
}

bool CudaBackend::presplit(const GemvParams& p) const {
  if (p.tiled) return true;  // the tiled kernel reads only a pre-split x'
  const bool quantized =
      p.type != WeightType::kF32 && p.type != WeightType::kF16 && p.type != WeightType::kBF16;
  const int mode = options_.gemv_presplit;
  // Cheapest tests first: this runs for every GEMV of an eager step.
  return quantized && p.cols % 32 == 0 && mode != 2 &&
         (mode == 1 || p.rows * p.cols >= presplit_min_ ||
          std::string_view(gemv_launch_info(p).kernel) == "mma") &&
         gemv_presplit_supported(p);
}

const void* CudaBackend::enqueue_gemv(GemvParams p) {
  p.pdl = options_.pdl;
  if (p.x_split == nullptr && !p.swiglu_out && presplit(p)) {
    // Without PDL neither place means anything: no kernel launches early.
    // The LM head is the one GEMV that writes the batch-1 logits.
    const bool late =
        p.pdl && split_trigger_after_wait(split_trigger_, p.type, p.y == logits_.data<float>());
    launch_gemv_prepare_x(p.input, p.x, p.x2, p.norm_w, p.eps, p.cols, x_split_.data(), p.pdl,
                          stream_.get(), late);
    p.x_split = x_split_.data();
    ++step_split_kernels_;
    if (late) ++step_late_splits_;
  }
  GemvLaunchInfo info;
  const int variant = launch_gemv(p, stream_.get(), &info);
  // A variant without a slot would be counted under another's name.
  if (variant < 0 || static_cast<size_t>(variant) >= kGemvVariants) {
    throw runtime_error("CUDA backend: GEMV variant " + std::to_string(variant) +
                        " has no kernel-count slot");
  }
  ++gemv_variant_counts_[static_cast<size_t>(variant)];
  ++step_gemv_counts_[static_cast<size_t>(variant)];
  // Forms compare as gemv_form_name names them (no string built per GEMV).
  const auto same_form = [&info](const GemvFormCount& f) {
    const GemvLaunchInfo& g = f.info;
    if (std::strcmp(g.kernel, info.kernel) != 0 || std::strcmp(g.form, info.form) != 0) {
      return false;
    }
    const std::string_view form = info.form;
    if (g.ring_ctas != info.ring_ctas) return false;
    if (form == "ring") {
      return g.block == info.block && g.ring_slots == info.ring_slots &&
             g.rows_per_warp == info.rows_per_warp;
    }
    return form != "split" || (g.ring_pairs == info.ring_pairs && g.ring_slots == info.ring_slots);
  };
  const auto it = std::find_if(step_gemv_forms_.begin(), step_gemv_forms_.end(), same_form);
  if (it != step_gemv_forms_.end()) {
    ++it->count;
  } else {
    step_gemv_forms_.push_back({info, 1});
  }
  return p.x_split;
}

AttentionParams CudaBackend::attention_params(const DeviceLayer& L, size_t l, const int32_t* d_pos,
                                              const int32_t* d_seq_len) {
  const int64_t kv_layer = c_.kv_dim() * max_positions_;
  AttentionParams ap;
  ap.k_cache = k_cache_.data<float>() + static_cast<int64_t>(l) * kv_layer;
  ap.v_cache = v_cache_.data<float>() + static_cast<int64_t>(l) * kv_layer;
  ap.n_heads = c_.n_heads;
  ap.n_kv_heads = c_.n_kv_heads;
  ap.head_dim = c_.head_dim;
  ap.capacity = max_positions_;
  ap.d_seq_len = d_seq_len;
  ap.splits = attn_splits_;
  ap.path = attn_path_;
  ap.merge_count = attn_merge_count_.data<unsigned>();
  ap.d_error = d_error_flag_.data<int32_t>();
  ap.pdl = options_.pdl;
  ap.trigger_at_exit = attn_trigger_at_exit_;
  // (QK-norm,) RoPE of q and k and the KV-cache append happen inside the attention kernel.
  ap.d_pos = d_pos;
  ap.d_inv_freq = inv_freq_.data<double>();
  ap.rope_dim = c_.rope_dim;
  ap.rope_style = c_.rope_style;
  ap.q_norm = L.q_norm.present() ? L.q_norm.f32() : nullptr;
  ap.k_norm = L.k_norm.present() ? L.k_norm.f32() : nullptr;
  ap.eps = static_cast<float>(c_.rms_eps);
  return ap;
}

KernelMix CudaBackend::kernel_mix() const {
  KernelMix m;
  for (size_t v = 0; v < step_gemv_counts_.size(); ++v) {
    if (step_gemv_counts_[v] == 0) continue;
    m.gemv_per_step.emplace_back(v == 0 ? "fallback" : gemv_variant_name(static_cast<int>(v)),
                                 step_gemv_counts_[v]);
  }
  for (const GemvFormCount& f : step_gemv_forms_) {
    m.gemv_forms_per_step.emplace_back(gemv_form_name(f.info), f.count);
  }
  m.tiled_matrices = tiled_matrices_;
  m.x_split_kernels = step_split_kernels_;
  m.x_split_kernels_after_wait = step_late_splits_;
  m.x_splits_in_attention = step_attention_splits_;
  m.attention = describe_attention_forms(step_attention_forms_);
  return m;
}

std::string CudaBackend::batch_attention_form() const {
  return batch_attention_.path < 0 ? "" : attention_form_name(batch_attention_);
}

void CudaBackend::count_attention_form(std::string form) {
  for (auto& [name, count] : step_attention_forms_) {
    if (name == form) {
      ++count;
      return;
    }
  }
  step_attention_forms_.emplace_back(std::move(form), 1);
}

void CudaBackend::enqueue_forward() {
  step_gemv_counts_.fill(0);
  step_gemv_forms_.clear();
  step_split_kernels_ = 0;
  step_late_splits_ = 0;
  step_attention_splits_ = 0;
  step_attention_forms_.clear();
  cudaStream_t s = stream_.get();
  const bool pdl = options_.pdl;
  const auto* in = d_inputs_.data<StepInputs>();
  const int32_t* d_token = &in->token;
  const int32_t* d_pos = &in->pos;
  const int32_t* d_seq_len = &in->seq_len;
  const float eps = static_cast<float>(c_.rms_eps);
  float* x = x_.data<float>();
  float* xn = xn_.data<float>();
  float* q = q_.data<float>();
  float* k = k_.data<float>();
  float* v = v_.data<float>();
  // y = W·x' (+bias) (+residual), x' = x or RMSNorm(x)·norm_w (fused into the GEMV's input).
  const auto gemv = [&](const DeviceTensor& w, const float* in_vec, float* out,
                        const DeviceTensor* bias, const float* residual, const DeviceTensor* norm) {
    GemvParams p = gemv_over(w);
    p.x = in_vec;
    p.y = out;
    p.bias = bias && bias->present() ? bias->f32() : nullptr;
    p.residual = residual;
    if (norm) {
      p.input = GemvInput::kRmsNorm;
      p.norm_w = norm->f32();
      p.eps = eps;
    }
    return p;
  };

  launch_embedding(token_embd_.type, token_embd_.data, c_.hidden, d_token, x, s, pdl,
                   step_clock_.data<StepClock>());
  for (size_t l = 0; l < layers_.size(); ++l) {
    const DeviceLayer& L = layers_[l];
    // Q, K, V from RMSNorm(x): one GEMV over the stacked [Wq; Wk; Wv] when uploaded so.
    if (L.wqkv.present()) {
      GemvParams p = gemv(L.wqkv, x, q, &L.bqkv, nullptr, &L.attn_norm);
      p.y1 = k;
      p.y2 = v;
      p.y_end0 = c_.q_dim();
      p.y_end1 = c_.q_dim() + c_.kv_dim();
      enqueue_gemv(p);
    } else if (L.wqk.present()) {
      // [Wq; Wk], then V on the x' the first GEMV split (where V's kernel reads a split x'), else
      // with the RMSNorm fused into its own kernel: two or three launches instead of five.
      GemvParams p = gemv(L.wqk, x, q, &L.bqk, nullptr, &L.attn_norm);
      p.y1 = k;
      p.y_end0 = c_.q_dim();
      const void* split = enqueue_gemv(p);
      GemvParams pv = gemv(L.wv, x, v, &L.bv, nullptr, &L.attn_norm);
      if (split != nullptr && L.v_on_qk_split) pv.x_split = split;
      enqueue_gemv(pv);
    } else {
      launch_rms_norm(x, L.attn_norm.f32(), xn, 1, c_.hidden, eps, s);
      enqueue_gemv(gemv(L.wq, xn, q, &L.bq, nullptr, nullptr));
      enqueue_gemv(gemv(L.wk, xn, k, &L.bk, nullptr, nullptr));
      enqueue_gemv(gemv(L.wv, xn, v, &L.bv, nullptr, nullptr));
    }
    AttentionParams ap = attention_params(L, l, d_pos, d_seq_len);
    ap.q = q;
    ap.out = att_.data<float>();
    ap.scratch = attn_scratch_.data<float>();
    ap.k_new = k;
    ap.v_new = v;
    // The o projection on a pre-split x': attention writes the split with its output, where it
    // can, saving a split kernel and a kernel boundary per layer.
    GemvParams o = gemv(L.wo, att_.data<float>(), x, nullptr, x, nullptr);
    // Cheapest tests first: presplit asks the GEMV planner (eager steps run this per layer).
    if (options_.fused && options_.attention_x_split && attention_writes_x_split(ap) &&
        presplit(o)) {
      ap.x_split = x_split_.data();
      o.x_split = x_split_.data();
      ++step_attention_splits_;
    }
    count_attention_form(attention_form_name(ap));
    launch_attention(ap, s);
    enqueue_gemv(o);
    // Gate and up from RMSNorm(x), then down from SwiGLU(gate, up) with the residual add. The
    // direct and staged kernels compute SwiGLU themselves: every CTA of the down projection then
    // reads one vector instead of two and no exp (docs/performance.md, round 7). A pre-split x'
    // (the stream kernel: large quantized GEMVs) keeps the separate form.
    if (L.swiglu_in_gate_up) {
      enqueue_gemv(gate_up_swiglu(L));
      enqueue_gemv(gemv(L.w_down, act_.data<float>(), x, nullptr, x, nullptr));
      continue;
    }
    if (L.w_gate_up.present()) {
      GemvParams p = gemv(L.w_gate_up, x, gate_.data<float>(), nullptr, nullptr, &L.ffn_norm);
      p.y1 = up_.data<float>();
      p.y_end0 = c_.ffn;
      p.y_end1 = 2 * c_.ffn;
      enqueue_gemv(p);
    } else {
      launch_rms_norm(x, L.ffn_norm.f32(), xn, 1, c_.hidden, eps, s);
      enqueue_gemv(gemv(L.w_gate, xn, gate_.data<float>(), nullptr, nullptr, nullptr));
      enqueue_gemv(gemv(L.w_up, xn, up_.data<float>(), nullptr, nullptr, nullptr));
    }
    GemvParams down = gemv(L.w_down, gate_.data<float>(), x, nullptr, x, nullptr);
    down.input = GemvInput::kSwiGlu;
    down.x2 = up_.data<float>();
    enqueue_gemv(down);
  }
  enqueue_gemv(gemv(output_, x, logits_.data<float>(), nullptr, nullptr, &output_norm_));
}

void CudaBackend::enqueue_argmax() {
  cudaStream_t s = stream_.get();
  // The argmax kernel reads the step's position there (its token slot) and, when the inputs say
  // so (StepInputs::advance, set with device_advance), writes the next greedy step's inputs.
  int32_t* inputs = &d_inputs_.data<StepInputs>()->token;
  // The token goes straight to pinned host memory: a 4-byte store over PCIe from the kernel
  // costs less than a copy after it (docs/performance.md, round 32). The host reads it after
  // synchronising with the stream (or the step's event), which makes the kernel's stores visible.
  // Its slot follows the position, so a step launched ahead leaves the previous token alone.
  int32_t* out = token_copy_ ? d_next_.data<int32_t>() : h_next_device_;
  launch_argmax(logits_.data<float>(), c_.vocab, argmax_scratch_.data(), argmax_scratch_.bytes(),
                out, s, options_.pdl, inputs, step_clock_.data<StepClock>(),
                token_copy_ ? 1 : kTokenSlots);
  if (token_copy_) {
    DB_CUDA_CHECK(cudaMemcpyAsync(h_next_.data(), d_next_.data(), sizeof(int32_t),
                                  cudaMemcpyDeviceToHost, s));
  }
}

void CudaBackend::run_step(const void* h_in, void* d_in, size_t in_bytes, const StepGraphs* graphs,
                           const std::function<void()>& forward,
                           const std::function<void()>& argmax, StepPhases* phases) {
  cudaStream_t s = stream_.get();
  if (phases == nullptr) {
    if (h_in != nullptr) {
      DB_CUDA_CHECK(cudaMemcpyAsync(d_in, h_in, in_bytes, cudaMemcpyHostToDevice, s));
    }
    if (graphs != nullptr) {
      graphs->full.launch(s);
    } else {
      forward();
      argmax();
    }
    DB_CUDA_CHECK(cudaStreamSynchronize(s));
    return;
  }
  // Phase timing: the step is split at its phase boundaries, each closed by a synchronisation.
  const auto t0 = Clock::now();
  if (h_in != nullptr) {
    DB_CUDA_CHECK(cudaMemcpyAsync(d_in, h_in, in_bytes, cudaMemcpyHostToDevice, s));
  }
  const auto t1 = Clock::now();
  DB_CUDA_CHECK(cudaEventRecord(ev_start_.get(), s));
  if (graphs != nullptr) {
    graphs->forward.launch(s);
  } else {
    forward();
  }
  const auto t2 = Clock::now();
  DB_CUDA_CHECK(cudaStreamSynchronize(s));
  const auto t3 = Clock::now();
  if (graphs != nullptr) {
    graphs->argmax.launch(s);
  } else {
    argmax();
  }
  DB_CUDA_CHECK(cudaEventRecord(ev_stop_.get(), s));
  DB_CUDA_CHECK(cudaStreamSynchronize(s));
  const auto t4 = Clock::now();
  float gpu_ms = 0;
  DB_CUDA_CHECK(cudaEventElapsedTime(&gpu_ms, ev_start_.get(), ev_stop_.get()));
  phases->h2d_ns = ns(t0, t1);
  phases->launch_ns = ns(t1, t2);
  phases->wait_ns = ns(t2, t3);
  phases->argmax_ns = ns(t3, t4);
  phases->total_ns = ns(t0, t4);
  phases->gpu_ms = gpu_ms;
}

int32_t CudaBackend::token_of_step(int64_t pos) const {
  return h_next_.data<int32_t>()[token_copy_ ? 0 : pos % kTokenSlots];
}

void CudaBackend::check_no_step_in_flight(const char* what) const {
  if (in_flight_count_ > 0) {
    throw runtime_error(std::string(what) + ": " + std::to_string(in_flight_count_) +
                        " launched-ahead step(s) still in flight (finish_step first)");
  }
}

std::string CudaBackend::launch_ahead_unavailable() const {
  if (token_copy_) {
    return "the token is copied to the host into one buffer for every step (DECODEBENCH_TOKEN_D2H="
           "copy, or a device that cannot map host memory)";
  }
  if (!options_.device_advance) return "the device does not advance the step's inputs";
  return "";
}

void CudaBackend::enqueue_step(int32_t token, int64_t pos) {
  if (const std::string why = launch_ahead_unavailable(); !why.empty()) {
    throw runtime_error("enqueue_step: " + why);
  }
  if (in_flight_count_ == kMaxStepsInFlight) {
    throw runtime_error("enqueue_step: " + std::to_string(kMaxStepsInFlight) +
                        " steps are in flight already (finish_step first)");
  }
  bool resident = false;
  if (token == kTokenOnDevice) {
    // The device holds the inputs of the step after the last one enqueued.
    const int64_t next_pos =
        in_flight_count_ > 0 ? in_flight_[in_flight_count_ - 1].pos + 1 : resident_.pos;
    if (in_flight_count_ == 0 && !resident_.valid) {
      throw usage_error(
          "enqueue_step: the device does not hold the next step's inputs (the last step did "
          "not advance them); feed the token from the host");
    }
    if (pos != next_pos) {
      throw usage_error(
          "enqueue_step: a step fed the previous step's token on the device must follow it at "
          "position " +
          std::to_string(next_pos) + ", got " + std::to_string(pos));
    }
    check_step_inputs(0, pos, c_.vocab, max_positions_);
    resident = true;
  } else {
    check_step_inputs(token, pos, c_.vocab, max_positions_);
    // Its inputs go through the one pinned input buffer, which an earlier copy may still read.
    check_no_step_in_flight("enqueue_step with a token from the host");
    resident = resident_.valid && resident_.token == token && resident_.pos == pos;
  }
  resident_.valid = false;  // until the last step in flight has finished
  last_batch_ = 0;
  cudaStream_t s = stream_.get();
  if (!resident) {
    auto* in = h_inputs_.data<StepInputs>();
    in->token = token;
    in->pos = static_cast<int32_t>(pos);
    in->seq_len = static_cast<int32_t>(pos + 1);
    in->advance = 1;  // device_advance: launch_ahead_unavailable() checked it
    DB_CUDA_CHECK(
        cudaMemcpyAsync(d_inputs_.data(), in, sizeof(StepInputs), cudaMemcpyHostToDevice, s));
    ++input_copies_;
  }
  if (mode_ == ExecMode::kGraph && graphs_ && graphs_->full.valid()) {
    graphs_->full.launch(s);
  } else {
    enqueue_forward();
    enqueue_argmax();
  }
  // The oldest step's event is free again once it has finished, so events rotate with the slots.
  const size_t event =
      in_flight_count_ > 0 ? (in_flight_[in_flight_count_ - 1].event + 1) % step_done_.size() : 0;
  step_done_[event].record(s);
  in_flight_[in_flight_count_++] = {pos, event};
}

int32_t CudaBackend::finish_step() {
  if (in_flight_count_ == 0) throw runtime_error("finish_step: no step in flight");
  const StepInFlight oldest = in_flight_[0];
  step_done_[oldest.event].synchronize();
  const int32_t next = token_of_step(oldest.pos);
  for (int i = 1; i < in_flight_count_; ++i) in_flight_[i - 1] = in_flight_[i];
  --in_flight_count_;
  if (in_flight_count_ == 0) resident_ = {true, next, oldest.pos + 1};
  return next;
}

int32_t CudaBackend::step(int32_t token, int64_t pos, StepPhases* phases) {
  check_step_inputs(token, pos, c_.vocab, max_positions_);
  check_no_step_in_flight("step");
  // The previous step's argmax kernel left this step's inputs on the device when this step is
  // fed its output at the next position (greedy decoding): no H2D copy then.
  const bool resident = resident_.valid && resident_.token == token && resident_.pos == pos;
  resident_.valid = false;  // until this step has run
  auto* in = h_inputs_.data<StepInputs>();
  in->token = token;
  in->pos = static_cast<int32_t>(pos);
  in->seq_len = static_cast<int32_t>(pos + 1);
  in->advance = options_.device_advance ? 1 : 0;
  const bool graph = mode_ == ExecMode::kGraph && graphs_ && graphs_->full.valid();
  last_batch_ = 0;
  run_step(
      resident ? nullptr : in, d_inputs_.data(), sizeof(StepInputs),
      graph ? graphs_.get() : nullptr, [&] { enqueue_forward(); }, [&] { enqueue_argmax(); },
      phases);
  if (!resident) ++input_copies_;
  const int32_t next = token_of_step(pos);
  if (options_.device_advance) resident_ = {true, next, pos + 1};
  return next;
}

double CudaBackend::replayed_step_gpu_us(int32_t token, int64_t pos, int replays) {
  check_no_step_in_flight("replayed_step_gpu_us");
  if (replays < 1) throw usage_error("replays must be >= 1, got " + std::to_string(replays));
  check_step_inputs(token, pos, c_.vocab, max_positions_);
  if (mode_ != ExecMode::kGraph || !graphs_ || !graphs_->full.valid()) return -1.0;
  auto* in = h_inputs_.data<StepInputs>();
  in->token = token;
  in->pos = static_cast<int32_t>(pos);
  in->seq_len = static_cast<int32_t>(pos + 1);
  in->advance = 0;  // every replay is the same step
  resident_.valid = false;
  last_batch_ = 0;
  cudaStream_t s = stream_.get();
  DB_CUDA_CHECK(
      cudaMemcpyAsync(d_inputs_.data(), in, sizeof(StepInputs), cudaMemcpyHostToDevice, s));
  graphs_->full.launch(s);  // untimed: the first replay after a pause
  DB_CUDA_CHECK(cudaEventRecord(ev_start_.get(), s));
  for (int i = 0; i < replays; ++i) graphs_->full.launch(s);
  DB_CUDA_CHECK(cudaEventRecord(ev_stop_.get(), s));
  DB_CUDA_CHECK(cudaStreamSynchronize(s));
  float ms = 0;
  DB_CUDA_CHECK(cudaEventElapsedTime(&ms, ev_start_.get(), ev_stop_.get()));
  return 1e3 * static_cast<double>(ms) / replays;
}

void CudaBackend::begin_idle_series() {
  check_no_step_in_flight("begin_idle_series");
  // last_end_ns and count only: capacity stays.
  DB_CUDA_CHECK(
      cudaMemsetAsync(step_clock_.data(), 0, offsetof(StepClock, capacity), stream_.get()));
}

std::vector<int64_t> CudaBackend::idle_series_ns() {
  check_no_step_in_flight("idle_series_ns");
  DB_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  StepClock header{};
  DB_CUDA_CHECK(cudaMemcpy(&header, step_clock_.data(), sizeof header, cudaMemcpyDeviceToHost));
  std::vector<uint64_t> gaps(std::min(header.count, header.capacity));
  if (!gaps.empty()) {
    DB_CUDA_CHECK(cudaMemcpy(gaps.data(), step_clock_.data<StepClock>() + 1,
                             gaps.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
  }
  return {gaps.begin(), gaps.end()};
}

void CudaBackend::logits(std::vector<float>& out) {
  check_no_step_in_flight("logits");
  if (last_batch_ > 0) {  // after a batched step: sequence 0's logits
    logits_batch(0, out);
    return;
  }
  out.resize(static_cast<size_t>(c_.vocab));
  DB_CUDA_CHECK(cudaMemcpyAsync(out.data(), logits_.data(), out.size() * sizeof(float),
                                cudaMemcpyDeviceToHost, stream_.get()));
  DB_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
}

ExecReport CudaBackend::capture() {
  ExecReport report = capture_pair([&] { enqueue_forward(); }, [&] { enqueue_argmax(); }, graphs_);
  return report;
}

ExecReport CudaBackend::capture_pair(const std::function<void()>& first,
                                     const std::function<void()>& second,
                                     std::unique_ptr<StepGraphs>& out) {
  ExecReport report;
  report.capture_attempted = true;
  report.capture_mode = capture_mode_name(options_.capture_mode);
  auto graphs = std::make_unique<StepGraphs>();
  // The full step carries the injected fault (when asked for); the split graphs are clean.
  CaptureOutcome full = capture_graph(stream_.get(), options_.capture_mode, options_.inject_fault,
                                      first, second, fault_scratch_.data());
  report.capture_ms = full.ms;
  if (!full.exec.valid()) {
    report.failed_call = full.failed_call;
    report.error_name = full.error_name;
    report.error_message = full.error_message;
    if (!full.context_healthy) {
      throw Error(ExitCode::kContextUnusable,
                  "the CUDA context is unusable after a failed graph capture (" + full.failed_call +
                      ": " + full.error_name + "; " + full.error_message +
                      "); restart the process");
    }
    report.recovery = "recovered";
    report.mode = ExecMode::kEager;
    return report;
  }
  CaptureOutcome fwd = capture_graph(
      stream_.get(), options_.capture_mode, CaptureFault::kNone, first, [] {}, nullptr);
  CaptureOutcome arg = capture_graph(
      stream_.get(), options_.capture_mode, CaptureFault::kNone, second, [] {}, nullptr);
  if (!fwd.exec.valid() || !arg.exec.valid()) {
    const CaptureOutcome& bad = fwd.exec.valid() ? arg : fwd;
    report.failed_call = bad.failed_call;
    report.error_name = bad.error_name;
    report.error_message = bad.error_message;
    report.recovery = bad.context_healthy ? "recovered" : "";
    if (!bad.context_healthy) {
      throw Error(ExitCode::kContextUnusable,
                  "the CUDA context is unusable after a failed graph capture (" + bad.failed_call +
                      ": " + bad.error_name + ")");
    }
    report.mode = ExecMode::kEager;
    return report;
  }
  report.captured = true;
  report.mode = ExecMode::kGraph;
  report.graph_nodes = static_cast<int64_t>(full.exec.nodes());
  graphs->full = std::move(full.exec);
  graphs->forward = std::move(fwd.exec);
  graphs->argmax = std::move(arg.exec);
  out = std::move(graphs);
  return report;
}

ExecReport CudaBackend::set_exec_mode(ExecMode mode) {
  check_no_step_in_flight("set_exec_mode");
  if (mode == ExecMode::kEager) {
    mode_ = ExecMode::kEager;
    ExecReport r;
    r.capture_mode = capture_mode_name(options_.capture_mode);
    return r;
  }
  if (!graphs_) last_report_ = capture();
  mode_ = last_report_.mode;
  return last_report_;
}

// ---- batched decode ----------------------------------------------------------------------

void CudaBackend::enqueue_forward_batch(int64_t m) {
  cudaStream_t s = stream_.get();
  const bool pdl = options_.pdl;
  auto* in = d_binputs_.data<StepInputs>();
  constexpr int64_t kInputStride = sizeof(StepInputs) / sizeof(int32_t);
  const float eps = static_cast<float>(c_.rms_eps);
  const int64_t hd = c_.hidden, qd = c_.q_dim(), kvd = c_.kv_dim(), ffn = c_.ffn;
  float* x = bx_.data<float>();
  float* xn = bxn_.data<float>();
  // The split inputs of the last prepared (vector, piece format): Q, K and V (gate and up) of a
  // layer share one split even when they are separate matrices.
  const float* split_of = nullptr;
  bool split_f16 = false;
  // Y = W·X (+bias) (+residual) for the m sequences; `seg` describes extra output segments.
  const auto gemm = [&](const DeviceTensor& w, const float* xin, float* y, int64_t ldy,
                        const DeviceTensor* bias, const float* residual) {
    GemmParams p;
    p.type = w.type;
    p.w = w.data;
    p.rows = w.rows;
    p.cols = w.cols;
    p.batch = m;
    p.x = xin;
    p.ldx = w.cols;
    p.y = y;
    p.ldy = ldy;
    p.bias = bias && bias->present() ? bias->f32() : nullptr;
    p.residual = residual;
    p.ldr = residual ? ldy : 0;
    p.variant = options_.gemm_variant;
    p.pdl = pdl;
    p.scratch = bgemm_scratch_.data();
    p.scratch_bytes = bgemm_scratch_.bytes();
    return p;
  };
  const auto run = [&](GemmParams p) {
    if (std::string_view(gemm_kernel_name(p)) == "mma") {
      const bool f16 = p.type == WeightType::kF16;
      if (split_of != p.x || split_f16 != f16) {
        launch_gemm_prepare_x(p.type, p.x, p.ldx, m, p.cols, bsplit_.data(), pdl, s);
        split_of = p.x;
        split_f16 = f16;
      }
      p.x_split = bsplit_.data();
    }
    launch_gemm(p, s);
  };

  launch_embedding_batched(token_embd_.type, token_embd_.data, hd, &in->token, kInputStride, m, x,
                           hd, s, pdl);
  const int64_t kv_layer = c_.kv_dim() * max_positions_;
  const int64_t slot_stride = c_.n_layers * kv_layer;
  for (size_t l = 0; l < layers_.size(); ++l) {
    const DeviceLayer& L = layers_[l];
    split_of = nullptr;  // xn is rewritten below
    launch_rms_norm(x, L.attn_norm.f32(), xn, m, hd, eps, s);
    if (L.wqkv.present()) {
      GemmParams p = gemm(L.wqkv, xn, bq_.data<float>(), qd, &L.bqkv, nullptr);
      p.y1 = bk_.data<float>();
      p.ldy1 = kvd;
      p.y2 = bv_.data<float>();
      p.ldy2 = kvd;
      p.y_end0 = qd;
      p.y_end1 = qd + kvd;
      run(p);
    } else {
      run(gemm(L.wq, xn, bq_.data<float>(), qd, &L.bq, nullptr));
      run(gemm(L.wk, xn, bk_.data<float>(), kvd, &L.bk, nullptr));
      run(gemm(L.wv, xn, bv_.data<float>(), kvd, &L.bv, nullptr));
    }
    AttentionParams ap = attention_params(L, l, &in->pos, &in->seq_len);
    ap.q = bq_.data<float>();
    ap.out = batt_.data<float>();
    ap.scratch = battn_scratch_.data<float>();
    ap.k_new = bk_.data<float>();
    ap.v_new = bv_.data<float>();
    ap.batch = m;
    if (ap.path == 4) ap.path = 0;  // the merge form is batch-1 only (its scratch and counts)
    ap.q_stride = qd;
    ap.kv_new_stride = kvd;
    ap.cache_stride = slot_stride;
    ap.input_stride = kInputStride;
    batch_attention_ = ap;
    launch_attention(ap, s);
    run(gemm(L.wo, batt_.data<float>(), x, hd, nullptr, x));
    launch_rms_norm(x, L.ffn_norm.f32(), xn, m, hd, eps, s);
    split_of = nullptr;
    if (L.w_gate_up.present()) {
      GemmParams p = gemm(L.w_gate_up, xn, bgate_.data<float>(), ffn, nullptr, nullptr);
      p.y1 = bup_.data<float>();
      p.ldy1 = ffn;
      p.y_end0 = ffn;
      p.y_end1 = 2 * ffn;
      run(p);
    } else {
      run(gemm(L.w_gate, xn, bgate_.data<float>(), ffn, nullptr, nullptr));
      run(gemm(L.w_up, xn, bup_.data<float>(), ffn, nullptr, nullptr));
    }
    launch_swiglu(bgate_.data<float>(), bup_.data<float>(), bact_.data<float>(), m * ffn, s);
    run(gemm(L.w_down, bact_.data<float>(), x, hd, nullptr, x));
  }
  split_of = nullptr;
  launch_rms_norm(x, output_norm_.f32(), xn, m, hd, eps, s);
  run(gemm(output_, xn, blogits_.data<float>(), c_.vocab, nullptr, nullptr));
}

void CudaBackend::enqueue_argmax_batch(int64_t m) {
  cudaStream_t s = stream_.get();
  launch_argmax_batched(blogits_.data<float>(), c_.vocab, m, c_.vocab, bargmax_scratch_.data(),
                        bargmax_scratch_.bytes(), d_bnext_.data<int32_t>(), s, options_.pdl);
  DB_CUDA_CHECK(cudaMemcpyAsync(h_bnext_.data(), d_bnext_.data(),
                                static_cast<size_t>(m) * sizeof(int32_t), cudaMemcpyDeviceToHost,
                                s));
}

void CudaBackend::step_batch(std::span<const int32_t> tokens, std::span<const int64_t> positions,
                             std::span<int32_t> next, StepPhases* phases) {
  check_no_step_in_flight("step_batch");
  check_batch_inputs(tokens, positions, next, max_batch_, c_.vocab, max_positions_);
  const auto m = static_cast<int64_t>(tokens.size());
  if (m == 1) {  // slot 0 through the single-sequence step (its kernels and graph)
    next[0] = step(tokens[0], positions[0], phases);
    last_batch_ = 0;
    return;
  }
  auto* in = h_binputs_.data<StepInputs>();
  for (int64_t i = 0; i < m; ++i) {
    in[i].token = tokens[static_cast<size_t>(i)];
    in[i].pos = static_cast<int32_t>(positions[static_cast<size_t>(i)]);
    in[i].seq_len = static_cast<int32_t>(positions[static_cast<size_t>(i)] + 1);
    in[i].advance = 0;  // the batched argmax does not advance
  }
  const auto it = batch_graphs_.find(m);
  const bool graph = batch_mode_ == ExecMode::kGraph && batch_mode_m_ == m &&
                     it != batch_graphs_.end() && it->second && it->second->full.valid();
  last_batch_ = m;
  run_step(
      in, d_binputs_.data(), static_cast<size_t>(m) * sizeof(StepInputs),
      graph ? it->second.get() : nullptr, [&] { enqueue_forward_batch(m); },
      [&] { enqueue_argmax_batch(m); }, phases);
  const auto* h = h_bnext_.data<int32_t>();
  for (int64_t i = 0; i < m; ++i) next[static_cast<size_t>(i)] = h[i];
}

void CudaBackend::logits_batch(int64_t seq, std::vector<float>& out) {
  check_no_step_in_flight("logits_batch");
  const int64_t m = last_batch_ > 0 ? last_batch_ : 1;
  if (seq < 0 || seq >= m) {
    throw usage_error("sequence " + std::to_string(seq) + " is outside the last step's batch of " +
                      std::to_string(m));
  }
  if (last_batch_ == 0) {
    logits(out);
    return;
  }
  out.resize(static_cast<size_t>(c_.vocab));
  DB_CUDA_CHECK(cudaMemcpyAsync(out.data(), blogits_.data<float>() + seq * c_.vocab,
                                out.size() * sizeof(float), cudaMemcpyDeviceToHost, stream_.get()));
  DB_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
}

ExecReport CudaBackend::set_exec_mode_batch(ExecMode mode, int64_t batch) {
  check_no_step_in_flight("set_exec_mode_batch");
  if (batch < 1 || batch > max_batch_) {
    throw usage_error("batch " + std::to_string(batch) + " is outside 1.." +
                      std::to_string(max_batch_) + " (the backend's KV-cache slots)");
  }
  if (batch == 1) return set_exec_mode(mode);
  batch_mode_m_ = batch;
  if (mode == ExecMode::kEager) {
    batch_mode_ = ExecMode::kEager;
    ExecReport r;
    r.capture_mode = capture_mode_name(options_.capture_mode);
    return r;
  }
  if (batch_reports_.find(batch) == batch_reports_.end()) {
    std::unique_ptr<StepGraphs> graphs;
    batch_reports_[batch] = capture_pair([&] { enqueue_forward_batch(batch); },
                                         [&] { enqueue_argmax_batch(batch); }, graphs);
    batch_graphs_[batch] = std::move(graphs);
  }
  batch_mode_ = batch_reports_[batch].mode;
  return batch_reports_[batch];
}

}  // namespace decodebench::cuda
