// The CUDA backend: weights on the device in their storage type, a preallocated workspace, one
// non-blocking stream, eager or CUDA-graph execution of the decode step.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/backend_registry.hpp"
#include "core/model/model.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/graph.hpp"
#include "cuda/kernels/attention.cuh"
#include "cuda/kernels/gemv.cuh"

namespace decodebench::cuda {

/// Per-token inputs of a decode step, in device memory so that a captured graph reads them.
struct StepInputs {
  int32_t token;
  int32_t pos;
  int32_t seq_len;
  /// 1: the step's argmax kernel writes the next greedy step's inputs over these (token = its
  /// argmax, pos + 1, seq_len + 1; CudaBackendOptions::device_advance); 0: it leaves them.
  int32_t advance;
};

/// A weight tensor on the device.
struct DeviceTensor {
  WeightType type = WeightType::kF32;
  const void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  /// Rows in the tiled layout (core/quant/tiled_layout.hpp), read only by the tiled GEMV kernels
  /// (stream-tiled, tiled).
  bool tiled = false;
  [[nodiscard]] bool present() const { return data != nullptr; }
  [[nodiscard]] const float* f32() const { return static_cast<const float*>(data); }
};

/// One layer on the device. With fusion, `wqkv` ([Wq; Wk; Wv]) and `w_gate_up` ([Wgate; Wup]) are
/// stacked matrices read by one GEMV each, and wq/wk/wv, w_gate/w_up are views into them. Where V
/// has another type than Q and K (GGUF's Q4_K_M keeps some V in Q6_K), `wqk` ([Wq; Wk]) is
/// stacked instead and V read by a second GEMV on the same x'.
struct DeviceLayer {
  DeviceTensor attn_norm, wq, wk, wv, bq, bk, bv, q_norm, k_norm, wo, ffn_norm, w_gate, w_up,
      w_down;
  DeviceTensor wqkv, bqkv, w_gate_up;  ///< stacked forms (absent when types differ or unfused)
  DeviceTensor wqk,
      bqk;  ///< [Wq; Wk] and [bq; bk] when only V's type differs (fused); bq, bk view bqk
  /// The gate/up GEMV stores SwiGLU(gate, up) itself (GemvParams::swiglu_out; decided once when
  /// the workspace is allocated, as the pointers and shapes never change).
  bool swiglu_in_gate_up = false;
  /// With `wqk`: V's GEMV reads the QK GEMV's pre-split x' when that one is pre-split (a stream
  /// kernel takes V on it; decided once when the workspace is allocated, as swiglu_in_gate_up).
  bool v_on_qk_split = false;
};

/// How a batch-1 step's token reaches the host, from DECODEBENCH_TOKEN_D2H (a measurement switch,
/// read once per backend): unset or empty → false, the final argmax kernel stores the token into
/// pinned host memory itself (mapped; no copy in the step; a device without unified addressing
/// or host-memory mapping takes the copy anyway); "copy" → true, the kernel stores it on the
/// device and a 4-byte D2H copy follows it (the form before round 32). Throws
/// decodebench::Error (exit 2) naming the variable for any other value.
bool token_copy_request();

/// Where the standalone x' split kernels let the next kernel (the GEMV that reads the split)
/// launch under PDL, from DECODEBENCH_SPLIT_TRIGGER (a measurement switch, read once per
/// backend): at their CTAs' entry or once past their wait for the kernel that wrote x.
enum class SplitTrigger {
  kDefault,    ///< unset or empty: split_trigger_after_wait's per-type choice
  kEntry,      ///< "entry": at entry, for every type
  kAfterWait,  ///< "wait": after the wait, for every type
  kLmHead,     ///< "head": after the wait before the LM head only, else at entry
};

/// Reads DECODEBENCH_SPLIT_TRIGGER: unset or empty → kDefault, "entry" → kEntry, "wait" →
/// kAfterWait, "head" → kLmHead. Throws decodebench::Error (exit 2) naming the variable for any
/// other value.
SplitTrigger split_trigger_request();

/// Whether the split kernel ahead of a GEMV of `type` (`lm_head`: the LM head's GEMV) triggers
/// after its PDL wait under `request`. The default (kDefault): after the wait before Q4_K and
/// Q6_K GEMVs (the types of the Q4_K_M mix), at entry before all others, on every GPU. At entry
/// the GEMV that reads the split fills the SMs as the producer of x drains, and its weight copies
/// overlap the producer's end; the split itself then runs among those copies (its work took 3.4
/// µs instead of 1.9 in a 7B Q4_0 step on an H200). Measured in 7B steps (docs/performance.md,
/// round 35): on the H200, after the wait Q4_K_M ran 2.3–2.5% faster (round 18: 1.1–1.4%), Q4_0
/// 5.2% and Q8_0 4.2% slower; on an H100, Q4_K_M 0.1–0.3% slower, Q4_0 7.4–7.5% and Q8_0
/// 3.1–3.2% slower, the SmolLM2 shape's Q4_1 unchanged. Unmeasured: pure Q4_K or Q6_K models,
/// and GGUFs of other types whose LM head is Q6_K (llama.cpp's usual output.weight), whose LM
/// head's split then triggers after its wait. kLmHead is a measurement: the Q4_0 timeline on the
/// H200 had the LM head 32 µs per step faster with every split after its wait (not measured
/// alone yet).
bool split_trigger_after_wait(SplitTrigger request, WeightType type, bool lm_head);

/// The default of presplit_min_request: quantized GEMVs of at least 2 Mi weights (rows × cols) run
/// on a pre-split x' (the 7B shape's every GEMV but Q4_K_M's separate Q6_K v, 1.75 Mi, which
/// reads the QK GEMV's split on sm_90; SmolLM2's none but its LM head, as its largest other one,
/// gate/up, is 1.69 Mi). Measured on an H100 (docs/performance.md, round 51; median
/// TPOT): the Qwen2.5-1.5B shape, whose QKV (3.0 Mi) and o (2.25 Mi) GEMVs were staged under the
/// former 4 Mi, ran 4.6% (Q4_0), 11.0% (Q8_0) and 9.4% (Q4_K_M) faster with every GEMV pre-split,
/// while the SmolLM2 shape ran 23% (Q4_1) and 15% (Q8_0) slower so, and the 3B shape's Q4_0
/// step 8.7–8.9% slower with its QKV and o (4.0–5.0 Mi) staged; 2 Mi lies between the two.
inline constexpr int64_t kPresplitMinElements = int64_t{2} << 20;

/// The smallest quantized GEMV (rows × cols weights) that runs on an x' pre-split by its own
/// kernel (or written by attention) and, with the automatic or tiled layout, in the tiled layout,
/// from DECODEBENCH_GEMV_PRESPLIT_MIN (a measurement switch, read once per backend): unset or
/// empty → kPresplitMinElements; a decimal count of weights from 0 to 2^40 (digits only) →
/// that count (0: every quantized GEMV of columns a multiple of 32 that a pre-split kernel takes:
/// the stream kernels on sm_90, else the mma kernel; a count above the largest matrix: none but
/// those the planner gives the mma kernel on an unsplit x', prefer_mma's large matrices, which
/// stay pre-split). Smaller GEMVs run on the staged kernel, which forms x' itself (and RMSNorm's
/// in the QKV and gate/up GEMVs). CudaBackendOptions::gemv_presplit 1 or 2 overrides it. Throws
/// decodebench::Error (exit 2) naming the variable for any other value.
int64_t presplit_min_request();

/// Parses every DECODEBENCH_* measurement switch that the CUDA backend reads
/// (attention_path_request, attention_trigger_request, token_copy_request, split_trigger_request,
/// presplit_min_request and check_gemv_switches) without touching a device, so that a command can
/// refuse a bad value before it looks for a GPU (bench-kernels; the backend's constructor reads
/// them itself). Throws decodebench::Error (exit 2) naming the first bad variable.
void check_cuda_switches();

/// Decodes a Model on one GPU (see core/backend.hpp for the step contract).
///
/// The decode step (`enqueue_forward` + `enqueue_argmax`) issues only kernel launches on
/// `stream_` with fixed pointers and launch shapes (and a 4-byte D2H under
/// DECODEBENCH_TOKEN_D2H=copy); token, position and seq_len are read from `d_inputs_`, written by
/// an async H2D before a step that does not find them there. The same functions run eagerly or
/// under stream capture, so graph replay and eager execution compute identical results.
class CudaBackend final : public Backend {
 public:
  /// Uploads the weights and allocates the workspace. Throws decodebench::Error: exit 3 when the
  /// device has too little free memory (device name, free and needed bytes in the message).
  CudaBackend(const Model& model, const CudaBackendOptions& options);
  ~CudaBackend() override;

  /// Device bytes this model and capacity need (weights + KV cache + workspace).
  static int64_t device_bytes_needed(const Model& model, int64_t max_positions,
                                     int64_t max_batch = 1);

  [[nodiscard]] std::string name() const override { return "cuda"; }
  [[nodiscard]] std::string device_name() const override { return device_name_; }
  [[nodiscard]] int64_t max_positions() const override { return max_positions_; }
  [[nodiscard]] int64_t vocab() const { return c_.vocab; }
  int32_t step(int32_t token, int64_t pos, StepPhases* phases) override;
  void logits(std::vector<float>& out) override;
  ExecReport set_exec_mode(ExecMode mode) override;
  double replayed_step_gpu_us(int32_t token, int64_t pos, int replays) override;
  void begin_idle_series() override;
  std::vector<int64_t> idle_series_ns() override;
  /// "" unless the token is copied (DECODEBENCH_TOKEN_D2H=copy, or a device that cannot map host
  /// memory: one buffer for every step's token) or device_advance is off.
  [[nodiscard]] std::string launch_ahead_unavailable() const override;
  void enqueue_step(int32_t token, int64_t pos) override;
  int32_t finish_step() override;

  // Batched decode (CudaBackendOptions::max_batch slots; see core/backend.hpp). Each layer runs
  // one batched product per weight matrix (launch_gemm: tensor-core kernel, weights read once per
  // 32 sequences), one attention launch for all sequences, and one batched argmax; one graph per
  // batch size.
  [[nodiscard]] int64_t max_batch() const override { return max_batch_; }
  void step_batch(std::span<const int32_t> tokens, std::span<const int64_t> positions,
                  std::span<int32_t> next, StepPhases* phases) override;
  void logits_batch(int64_t seq, std::vector<float>& out) override;
  ExecReport set_exec_mode_batch(ExecMode mode, int64_t batch) override;

  /// GEMV kernel variants counted: 0 = scalar fallback, 1..7 = gemv_variant_name's.
  static constexpr size_t kGemvVariants = 8;
  /// Batch-1 GEMVs enqueued so far (eager steps and graph captures), by the variant that ran
  /// (index = gemv_variants id; 0 = scalar fallback). Diagnostics and tests.
  [[nodiscard]] const std::array<int64_t, kGemvVariants>& gemv_variant_counts() const {
    return gemv_variant_counts_;
  }
  /// GEMVs of the last batch-1 step enqueued, by kernel name and by kernel form
  /// (gemv_form_name); matrices uploaded tiled.
  [[nodiscard]] KernelMix kernel_mix() const override;
  /// attention_form_name of the last batched step (step_batch) enqueued, eagerly or into a
  /// graph ("cluster-push 4", ...); "" before any. Diagnostics and tests (kernel_mix tells the
  /// batch-1 step's).
  [[nodiscard]] std::string batch_attention_form() const;
  /// Batch-1 steps so far whose inputs were copied to the device (the others found them there,
  /// written by the previous step's argmax kernel). Diagnostics and tests.
  [[nodiscard]] int64_t input_copies() const { return input_copies_; }

 private:
  void upload_weights();
  void allocate_workspace();
  void enqueue_forward();
  void enqueue_argmax();
  /// Attention arguments of layer l shared by the single and batched steps (caches of slot 0,
  /// shapes, RoPE, QK-norm); the caller sets q, out, scratch, k_new/v_new and the batch fields.
  AttentionParams attention_params(const DeviceLayer& L, size_t l, const int32_t* d_pos,
                                   const int32_t* d_seq_len);
  /// Enqueues one batch-1 GEMV (splitting x' first where presplit says so). Returns the pre-split
  /// x' it read (x_split_ when it split x' itself, or p.x_split), or null for an unsplit input.
  const void* enqueue_gemv(GemvParams p);
  /// Counts one attention launch of the step being enqueued under `form` (attention_form_name)
  /// in step_attention_forms_.
  void count_attention_form(std::string form);
  /// Whether enqueue_gemv runs `p` on an x' pre-split by its own kernel (quantized GEMVs of at
  /// least presplit_min_ weights, or as CudaBackendOptions::gemv_presplit says).
  [[nodiscard]] bool presplit(const GemvParams& p) const;
  /// Whether a GEMV matrix of `rows` (stacked: all of them) × `cols` of `type` is uploaded in the
  /// tiled layout: CudaBackendOptions::weight_layout, batch 1, a type and row length the tiled
  /// kernel takes, and a GEMV that runs on a pre-split x' (as presplit decides by size).
  [[nodiscard]] bool tiled(WeightType type, int64_t rows, int64_t cols) const;
  /// The batch-1 gate/up GEMV of layer L with its SwiGLU output into act_ (y1 etc. unset).
  GemvParams gate_up_swiglu(const DeviceLayer& L);
  ExecReport capture();
  /// Captures enqueue_first + enqueue_second into `out` (full, forward-only and argmax-only
  /// graphs); on failure reports why and leaves `out` empty (exit 5 when the context broke).
  ExecReport capture_pair(const std::function<void()>& first, const std::function<void()>& second,
                          std::unique_ptr<StepGraphs>& out);
  /// Copies the step inputs (in_bytes at h_in → d_in; h_in null: they are on the device already)
  /// and runs forward + argmax, from `graphs` (null: eagerly through the two functions); with
  /// `phases`, split at the phase boundaries.
  void run_step(const void* h_in, void* d_in, size_t in_bytes, const StepGraphs* graphs,
                const std::function<void()>& forward, const std::function<void()>& argmax,
                StepPhases* phases);
  /// Throws decodebench::Error (exit 1) naming `what` while launched-ahead steps are in flight.
  void check_no_step_in_flight(const char* what) const;
  /// The token the step at `pos` stored in h_next_ (its slot, or the one slot of the copy form).
  [[nodiscard]] int32_t token_of_step(int64_t pos) const;
  void allocate_batch_workspace();
  void enqueue_forward_batch(int64_t m);
  void enqueue_argmax_batch(int64_t m);

  const Model& model_;
  const ModelConfig& c_;
  CudaBackendOptions options_;
  std::array<int64_t, kGemvVariants> gemv_variant_counts_{};
  std::array<int64_t, kGemvVariants> step_gemv_counts_{};  ///< the last enqueue_forward's
  /// The last enqueue_forward's GEMVs by form (GemvLaunchInfo's kernel, form and shape), in
  /// order of first launch; reserved in the constructor, so a step allocates nothing here.
  struct GemvFormCount {
    GemvLaunchInfo info;
    int64_t count = 0;
  };
  std::vector<GemvFormCount> step_gemv_forms_;
  int64_t tiled_matrices_ = 0;
  /// The inputs the device holds after the last step (device_advance): valid only when the
  /// last batch-1 step ran to its end with advance on.
  struct ResidentInputs {
    bool valid = false;
    int32_t token = 0;
    int64_t pos = 0;
  } resident_;
  int64_t input_copies_ = 0;
  int64_t step_split_kernels_ = 0;     ///< standalone x' splits of the last enqueue_forward
  int64_t step_late_splits_ = 0;       ///< those that let the next kernel launch after their wait
  int64_t step_attention_splits_ = 0;  ///< x' splits the attention kernel wrote in it
  /// attention_form_name of its attention launches, with their counts, in order of first launch
  std::vector<std::pair<std::string, int64_t>> step_attention_forms_;
  int64_t max_positions_;
  std::string device_name_;

  CudaStream stream_;
  DeviceBuffer weights_;  // one arena for every tensor
  DeviceTensor token_embd_, output_norm_, output_;
  std::vector<DeviceLayer> layers_;

  DeviceBuffer inv_freq_;           // double[rope_dim / 2]
  DeviceBuffer k_cache_, v_cache_;  // [layer][kv_head][position][head_dim] f32
  DeviceBuffer x_, xn_, q_, k_, v_, att_, gate_, up_, act_, logits_;
  DeviceBuffer attn_scratch_, argmax_scratch_, d_next_, d_inputs_, d_error_flag_;
  DeviceBuffer fault_scratch_;  // target of the injected legacy-stream copy (never read)
  DeviceBuffer x_split_;        // pre-split GEMV input for the tensor-core kernels
  int attn_splits_ = 1;
  DeviceBuffer attn_merge_count_;      ///< AttentionParams::merge_count (n_heads words)
  DeviceBuffer step_clock_;            ///< StepClock: the GPU's idle time between batch-1 steps
  bool attn_trigger_at_exit_ = false;  ///< attention_trigger_request()
  /// The last batched step's attention launch (batch_attention_form); path -1: none yet.
  AttentionParams batch_attention_{.path = -1};
  int attn_path_ = 0;  ///< AttentionParams::path: attention_path_request() (DECODEBENCH_ATTENTION)
  PinnedBuffer h_inputs_;
  /// The tokens of batch-1 steps: kTokenSlots slots, the step at pos in slot pos % kTokenSlots
  /// (launch_argmax's out_slots); the copy form uses slot 0 only.
  PinnedBuffer h_next_;
  static constexpr int kTokenSlots = 4;
  int32_t* h_next_device_ = nullptr;  ///< h_next_ as the device addresses it (mapped)
  /// Launch-ahead steps in flight (enqueue_step), oldest first: position and completion event.
  struct StepInFlight {
    int64_t pos = 0;
    size_t event = 0;  ///< index into step_done_
  };
  std::array<StepInFlight, kMaxStepsInFlight> in_flight_{};
  int in_flight_count_ = 0;
  std::array<CudaEvent, kMaxStepsInFlight> step_done_;
  bool token_copy_ = false;  ///< token_copy_request(): a D2H copy after the argmax
  SplitTrigger split_trigger_ = SplitTrigger::kDefault;  ///< split_trigger_request()
  int64_t presplit_min_ = kPresplitMinElements;          ///< presplit_min_request()
  CudaEvent ev_start_, ev_stop_;

  // Batch workspace (max_batch_ > 1): [slot][...] per sequence.
  int64_t max_batch_ = 1;
  DeviceBuffer bx_, bxn_, bq_, bk_, bv_, batt_, bgate_, bup_, bact_, blogits_;
  DeviceBuffer battn_scratch_, bargmax_scratch_, bsplit_, bgemm_scratch_, d_bnext_, d_binputs_;
  PinnedBuffer h_binputs_, h_bnext_;
  int64_t last_batch_ = 0;  // M of the most recent step_batch (0: the last step was `step`)
  ExecMode batch_mode_ = ExecMode::kEager;
  int64_t batch_mode_m_ = 0;  // the batch size batch_mode_ applies to
  std::map<int64_t, std::unique_ptr<StepGraphs>> batch_graphs_;
  std::map<int64_t, ExecReport> batch_reports_;

  ExecMode mode_ = ExecMode::kEager;
  std::unique_ptr<StepGraphs> graphs_;
  ExecReport last_report_;
};

}  // namespace decodebench::cuda
