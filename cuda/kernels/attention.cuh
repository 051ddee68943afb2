// Decode attention (one query token) over the KV cache, split-KV ("flash-decoding") for long
// contexts. Host launchers only; includable from g++ code.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "core/model/config.hpp"

namespace decodebench::cuda {

/// Arguments of one decode-attention launch. All pointers are device pointers.
struct AttentionParams {
  const float* q = nullptr;        ///< [n_heads][head_dim]
  const float* k_cache = nullptr;  ///< [n_kv_heads][capacity][head_dim]
  const float* v_cache = nullptr;  ///< [n_kv_heads][capacity][head_dim]
  float* out = nullptr;            ///< [n_heads][head_dim]; must not alias q or scratch
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;  ///< divides n_heads; head h reads KV head h / (n_heads/n_kv_heads)
  int64_t head_dim = 0;    ///< 16, 32, 64, 128 or 256
  int64_t capacity = 0;    ///< KV positions allocated per head
  const int32_t* d_seq_len = nullptr;  ///< positions [0, *d_seq_len) attend (read on the device)
  int splits = 1;                      ///< from attention_splits(capacity); fixed per workspace
  float* scratch = nullptr;    ///< attention_scratch_floats(...) floats; unused if splits == 1
  int32_t* d_error = nullptr;  ///< optional device error word (kv_cache.cuh): seq_len clamped
  /// Kernel choice: 0 = automatic (short-context form when capacity <= 512, on clusters on
  /// sm_90, merged as path 5 does at batch 1 unless x_split is set: attention_pushes), 1 = split-KV
  /// with `splits`, 2 = short-context form in one block per KV head (one split, so no combine
  /// kernel: one launch; splits and scratch unused), 3 = short-context form on a thread-block
  /// cluster (sm_90; elsewhere as 2): min(8, ceil(capacity / tile)) blocks (tile = 8192 / head_dim
  /// positions) split the positions and block 0 merges their partials from distributed shared
  /// memory (one launch, no scratch). 4 = the merge form (batch 1): the short-context form's min(8,
  /// ceil(capacity / tile)) blocks without a cluster; each stores its partials in `scratch`
  /// (attention_scratch_floats(n_heads, head_dim, attention_short_splits(capacity, head_dim))
  /// floats, 16-byte aligned) and the last to finish, counted in `merge_count`, merges them (one
  /// launch, no cluster: any GPU). 5 = path 3 with the push merge: the other blocks store their
  /// partials into block 0's shared memory (st.async, counted on an mbarrier there) and exit; block
  /// 0 waits for their bytes instead of a cluster barrier and remote reads. The same values in the
  /// same order: path 3's output bits.
  int path = 0;
  /// Path 4: n_heads zeroed words, one count per block group; every launch leaves them at 0.
  unsigned* merge_count = nullptr;
  bool pdl = false;  ///< programmatic dependent launch (see GemvParams::pdl)
  /// With pdl: the kernel after this one launches when every block has exited, not once every
  /// block is past its PDL wait (attention_trigger_request: a measurement switch).
  bool trigger_at_exit = false;

  // ---- fused RoPE + KV append (+ QK-norm), instead of launch_rope_kv_append ----------------
  // When k_new is set, every block writes this token's rope(qk_norm(k)) and v for its KV head
  // to position *d_pos of the caches (blocks of one KV head write identical values; each uses
  // its own copy of the row from shared memory, never the cache row) and rotates its query heads
  // in shared memory; q in memory stays as it was (not rotated). Out-of-range positions write
  // nothing and set kDeviceErrorKvPosition in *d_error.
  // With PDL, *d_pos, *d_seq_len, d_inv_freq and the cache rows before *d_pos are read before
  // the kernel waits on the preceding one: they must not be written by a kernel still in flight
  // (the decode step writes them by its H2D copy and in earlier steps). q, k_new, v_new and
  // rows after *d_pos (seq_len > pos + 1) are read after the wait.
  const float* k_new = nullptr;        ///< [n_kv_heads][head_dim] this token's k, or null
  const float* v_new = nullptr;        ///< [n_kv_heads][head_dim] this token's v
  const int32_t* d_pos = nullptr;      ///< its position (read on the device)
  const double* d_inv_freq = nullptr;  ///< rope_dim / 2 doubles (rope_inv_freq)
  int64_t rope_dim = 0;                ///< even, in (0, head_dim]
  RopeStyle rope_style = RopeStyle::kHalfSplit;
  const float* q_norm = nullptr;  ///< [head_dim] qwen3 per-head RMSNorm of q, or null
  const float* k_norm = nullptr;  ///< [head_dim] of k (with q_norm)
  float eps = 0.0f;               ///< QK-norm epsilon

  // ---- batch (Backend::step_batch): `batch` sequences in one launch ------------------------
  // Sequence b reads q + b·q_stride, writes out + b·q_stride, uses the caches at
  // k_cache/v_cache + b·cache_stride, this token's k/v at k_new/v_new + b·kv_new_stride, its
  // seq_len/pos at d_seq_len/d_pos + b·input_stride, and scratch of attention_scratch_floats(...)
  // floats per sequence (the scratch must hold batch times that).
  int64_t batch = 1;
  int64_t q_stride = 0;       ///< 0: n_heads · head_dim
  int64_t kv_new_stride = 0;  ///< 0: n_kv_heads · head_dim
  int64_t cache_stride = 0;   ///< >= n_kv_heads · capacity · head_dim when batch > 1
  int64_t input_stride = 0;   ///< >= 1 when batch > 1
  // ---- the o projection's input, split (attention_writes_x_split) ------------------------
  /// Optional: gemv_x_split_bytes(n_heads · head_dim) bytes, 16-byte aligned. The kernel then
  /// also writes the exact digit split of `out` there, byte for byte what launch_gemv_prepare_x
  /// (GemvInput::kPlain) writes for it, so the following quantized GEMV on a pre-split x'
  /// (GemvParams::x_split) needs no split kernel of its own: one launch and one kernel boundary
  /// fewer per layer. Written after the kernel's PDL wait, like `out`.
  void* x_split = nullptr;
};

/// The attention kernel a decode step asks for (AttentionParams::path), from the measurement
/// switch DECODEBENCH_ATTENTION: unset or empty = 0 (automatic: the cluster form on sm_90 at short
/// contexts, with the push merge at batch 1 where it writes no x' split); "cluster" = 3, "block" =
/// 2 (one block per KV head and group of query heads, no cluster), "merge" = 4 (the short-context
/// blocks merged by the last one, no cluster), "push" = 5 (the cluster form with the push merge),
/// "split" = 1 (split-KV with its combine kernel). Throws decodebench::Error (exit 2) naming the
/// variable for any other value.
int attention_path_request();

/// Where the attention kernel lets the next kernel launch under PDL
/// (AttentionParams::trigger_at_exit), from the measurement switch DECODEBENCH_ATTENTION_TRIGGER:
/// unset, empty or "wait" = false (once every block is past its PDL wait, the default), "exit" =
/// true (when every block has exited). Throws decodebench::Error (exit 2) naming the variable for
/// any other value.
bool attention_trigger_request();

/// What launch_attention runs for `p`, for the run record: "cluster C" (the short-context form on
/// a thread-block cluster of C blocks; "cluster-push C" with the push merge: path 5, and path 0
/// where attention_pushes), "block" (the
/// short-context form, one block per KV head and group of query heads), "merge S" (S short-context
/// blocks merged by the last one, no cluster), "split-kv S" (S splits, and the combine kernel when
/// S > 1); followed by " (trigger at exit)" when p.pdl and p.trigger_at_exit.
std::string attention_form_name(const AttentionParams& p);

/// Blocks of the short-context form over `capacity` positions: min(8, ceil(capacity / (8192 /
/// head_dim))), one per K tile (the cluster's size on sm_90, the merge form's splits).
int attention_short_splits(int64_t capacity, int64_t head_dim);

/// Splits the merge form (path 4) takes for `p`; 1 for any other path.
int attention_merge_splits(const AttentionParams& p);

/// Whether launch_attention takes the short-context kernel for `p` (path and capacity).
bool attention_uses_short_path(const AttentionParams& p);

/// Whether the cluster form merges by pushing (path 5's merge) for `p`: on a cluster of more than
/// one block, for path 5, and for path 0 at batch 1 when attention writes no x' split (x_split
/// null; with a split the push merge measured slower, docs/performance.md round 39; batched steps
/// were not measured with it).
bool attention_pushes(const AttentionParams& p);

/// Blocks of the cluster the short-context form runs on for `p` (1: no cluster): min(8,
/// ceil(capacity / (8192 / head_dim))) for paths 0 (short), 3 and 5 on compute capability >= 9.
int attention_cluster_blocks(const AttentionParams& p);

/// Whether launch_attention can write AttentionParams::x_split for `p`: batch 1, head_dim 128 or
/// 256 (a warp then holds 128 columns of one head: whole 32-column tiles of `out`), and one
/// writer per output (the short-context form, or splits == 1).
bool attention_writes_x_split(const AttentionParams& p);
/// Number of KV splits for a cache of `capacity` positions: ceil(capacity / 128) clamped to
/// [1, 64]. Fixed when the workspace is allocated, so the launch shape never changes; at run time
/// a split takes max(64, ceil(seq_len / splits)) positions and splits past the end do nothing.
int attention_splits(int64_t capacity);

/// Floats of scratch launch_attention needs: splits · n_heads · (head_dim + 2) when splits > 1
/// (partial accumulators, running max and sum per split and head), else 0.
int64_t attention_scratch_floats(int64_t n_heads, int64_t head_dim, int splits);

/// out[h] = softmax(q[h]·Kᵀ / sqrt(head_dim)) · V over positions [0, *d_seq_len) of KV head
/// h / (n_heads / n_kv_heads) (cpu::attention). Split-KV path: one block per (split, KV head,
/// group of up to 8 query heads sharing it) with an online softmax over tiles of positions; with
/// splits > 1 a second kernel merges the per-split partials. K and V rows of a tile are loaded
/// together (one memory round trip per tile). When that gives too few blocks for the GPU, the
/// query heads of a KV head are spread over more blocks (each re-reads K/V from L2).
/// Short-context form (capacity <= 512 or paths 2, 3): no combine kernel — a single split (path
/// 2, or before sm_90) or a cluster of splits merged in distributed shared memory. seq_len >
/// capacity is clamped to capacity and sets kDeviceErrorSeqLen in *d_error; seq_len <= 0 gives
/// zeros. Throws decodebench::Error: exit 2 "attention: unsupported head_dim: N" for head dims
/// other than 16/32/64/128/256; exit 1 for null pointers, bad shapes, splits < 1 without scratch,
/// an x_split the launch cannot write (attention_writes_x_split, or not 16-byte aligned), or a
/// failed launch.
void launch_attention(const AttentionParams& p, cudaStream_t stream);

}  // namespace decodebench::cuda
