// Decode attention with grouped-query heads and split-KV ("flash-decoding").
//
// Block (split, kv_head, z) handles positions [c0, c1) of one KV head for up to kMaxGroup query
// heads that share it (K and V are read once for the whole group). It walks its positions in
// tiles of kTile: (1) scores s = q·k / sqrt(head_dim) for the tile into shared memory, kLP lanes
// per position; (2) one warp per head updates the running max m and sum l (online softmax) and
// turns scores into e^(s - m); (3) every thread rescales its accumulator by e^(m_old - m_new) and
// adds p·v for its 16 positions and 4 dims. Per tile each thread issues all its K and V loads
// before using them, so 64 KB per block are in flight.
//
// Latency, not bandwidth, sets its time at decode contexts (the cache of a layer is a few MB at
// most), so the fused form (RoPE + KV append) does all it can before the PDL wait: position,
// RoPE angles and the first tile's history rows are read while the preceding GEMV finishes
// (H200, 7B shape, 129 positions, bench-kernels: the cluster form 6.4 µs in round 3, 4.7 µs with
// the lean per-group code below, 4.4 µs fused with PDL; docs/performance.md, round 6).
//
// With splits == 1 the block normalizes and writes `out` directly. Otherwise it writes the
// unnormalized accumulator, m and l of its split and attention_combine_kernel merges them:
// out = Σ_s acc_s·e^(m_s − M) / Σ_s l_s·e^(m_s − M), M = max_s m_s.
//
// The merge form (path 4) runs the cluster form's blocks without a cluster: each stores its
// partials in the scratch, the last of a group (an atomic count) merges them. It was slower than
// the cluster on the H200 (SmolLM2 steps +0.6–0.9 µs per layer, 7B Q8_0 +2.2–2.4%, Q4_K_M
// +1.3–1.4%, Q4_0 within ±1%; docs/performance.md, round 31), so the cluster stays automatic.
// The push merge (path 5) keeps the cluster and replaces its barrier and remote reads: the other
// blocks store their partials into block 0 (st.async) and exit; automatic where attention writes
// no x' split (attention_pushes, round 39).
//
// The split size is computed on the device from *d_seq_len (max(kMinChunk, ceil(seq_len /
// splits))), so the launch shape is fixed by the capacity alone and every split has work once
// the context is long; splits that start past seq_len return after the fused prologue (KV append).
#include <cooperative_groups.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "cuda/check.hpp"
#include "cuda/kernels/attention.cuh"
#include "cuda/kernels/common.cuh"
#include "cuda/kernels/gemv_device.cuh"
#include "cuda/kernels/gemv_impl.cuh"
#include "cuda/kernels/kv_cache.cuh"
#include "cuda/kernels/rope_device.cuh"
#include "cuda/kernels/x_split.cuh"

namespace decodebench::cuda {
namespace {

using kernels::ceil_div;

constexpr int kThreads = 128;
constexpr int kMaxGroup = 8;   ///< query heads per block (more → more blocks along z)
constexpr int kMinChunk = 64;  ///< smallest split, in positions
constexpr int kMaxSplits = 64;
constexpr int kSplitGranule = 128;      ///< capacity per split in attention_splits
constexpr int kShortMaxCapacity = 512;  ///< automatic short-context path up to this capacity
constexpr int kMaxCluster = 8;          ///< portable thread-block cluster size
constexpr int kMinChunkCluster = 16;    ///< smallest split of a cluster, in positions

/// Compile-time geometry for one head dimension (all tiles hold 8192 floats of K).
template <int HD>
struct Cfg {
  static constexpr int kLP = HD / 16;  ///< lanes per position (scores), 16 dims each
  static constexpr int kPosPerPass = kThreads / kLP;
  static constexpr int kPasses = 4;
  static constexpr int kTile = kPosPerPass * kPasses;  ///< positions per tile: 8192 / HD
  static constexpr int kVT = HD / 4;                   ///< threads per V row (one float4 each)
  static constexpr int kPG = kThreads / kVT;           ///< position groups in the V phase
  static constexpr int kVPos = kTile / kPG;            ///< positions per thread per tile (16)
  static_assert(kLP >= 1 && kLP <= 32 && (kLP & (kLP - 1)) == 0, "kLP must be a power of two");
  static_assert(kPG >= 1 && kTile % kPG == 0, "V phase covers the tile");
};

struct AttnArgs {
  const float* q;
  const float* k;
  const float* v;
  float* out;
  float* part_acc;  ///< [splits][n_heads][head_dim]
  float* part_ml;   ///< [splits][n_heads][2]: running max, running sum
  int n_heads;
  int group;  ///< n_heads / n_kv_heads
  int head_dim;
  int capacity;
  int splits;
  int hpb;  ///< query heads per block (<= kMaxGroup); grid.z = ceil(group / hpb)
  float scale;
  const int32_t* d_seq_len;
  int32_t* d_error;
  // Fused RoPE + KV append (k_new != nullptr).
  const float* k_new;
  const float* v_new;
  float* k_w;  ///< = k (writable) for the cache append
  float* v_w;
  const int32_t* d_pos;
  const double* inv_freq;
  // Batch (step_batch): sequence b = blockIdx.y / n_kv_heads (combine: blockIdx.x / n_heads).
  int n_kv_heads;
  int64_t q_stride;        ///< floats between sequences in q and out
  int64_t kv_new_stride;   ///< floats between sequences in k_new / v_new
  int64_t cache_stride;    ///< floats between the KV caches (slots) of sequences
  int64_t input_stride;    ///< int32 between sequences' seq_len / pos words
  int64_t scratch_stride;  ///< floats of scratch per sequence
  int rope_half;
  bool adjacent;
  const float* q_norm;
  const float* k_norm;
  float eps;
  /// 1: the blocks along x form one thread-block cluster (sm_90); rank 0 merges the splits from
  /// the others' shared memory, so no scratch and no combine kernel.
  int cluster;
  /// With cluster: 1 = the push merge (path 5): every other block stores its partials into block
  /// 0's shared memory (st.async, completing on an mbarrier there) and exits; block 0 waits for
  /// their bytes instead of meeting them at a cluster barrier and reading theirs.
  int push;
  /// 1: no explicit PDL trigger; the next kernel launches when every block has exited
  /// (AttentionParams::trigger_at_exit).
  int trigger_at_exit;
  int min_chunk;  ///< smallest split, in positions (kMinChunk; kMinChunkCluster for clusters)
  /// Not null: the merge form (path 4, batch 1). Every block stores its split's partials in the
  /// scratch and counts itself in merge_count[blockIdx.y · gridDim.z + blockIdx.z] (wrapping to
  /// 0 after `splits`); the last block of those merges them (as the cluster's rank 0 does). No
  /// cluster, no combine kernel.
  unsigned* merge_count;
  /// x_split.dig != nullptr: the writer of `out` also writes its digit split there (batch 1,
  /// head_dim 128 or 256, short-context form or one split; AttentionParams::x_split).
  gemv_impl::SplitOut x_split;
};

/// The arguments of sequence b: every per-sequence pointer moved to its slot.
__device__ __forceinline__ AttnArgs seq_args(AttnArgs a, int64_t b) {
  a.q += b * a.q_stride;
  a.out += b * a.q_stride;
  a.k += b * a.cache_stride;
  a.v += b * a.cache_stride;
  a.k_w += b * a.cache_stride;
  a.v_w += b * a.cache_stride;
  if (a.part_acc != nullptr) a.part_acc += b * a.scratch_stride;
  if (a.part_ml != nullptr) a.part_ml += b * a.scratch_stride;
  a.d_seq_len += b * a.input_stride;
  if (a.d_pos != nullptr) a.d_pos += b * a.input_stride;
  if (a.k_new != nullptr) {
    a.k_new += b * a.kv_new_stride;
    a.v_new += b * a.kv_new_stride;
  }
  return a;
}

/// *d_seq_len clamped to [0, capacity]; `report` sets the error bit when it was too large.
__device__ __forceinline__ int read_seq_len(const AttnArgs& a, bool report) {
  int s = *a.d_seq_len;
  if (s > a.capacity) {
    if (report && a.d_error != nullptr) atomicOr(a.d_error, kDeviceErrorSeqLen);
    s = a.capacity;
  }
  return s < 0 ? 0 : s;
}

/// Positions per split for this seq_len (identical in both kernels).
__device__ __forceinline__ int split_chunk(int seq_len, int splits, int min_chunk) {
  const int c = ceil_div(seq_len, splits);
  return c > min_chunk ? c : min_chunk;
}

__device__ __forceinline__ float4 fma4(float p, float4 v, float4 acc) {
  return make_float4(fmaf(p, v.x, acc.x), fmaf(p, v.y, acc.y), fmaf(p, v.z, acc.z),
                     fmaf(p, v.w, acc.w));
}

/// The merged, normalized output of one unit (4 columns) from the first `n` splits' running max
/// m_r, sum l_r and accumulator o_r (the cluster's and the merge form's last step):
/// Σ_r o_r·e^(m_r − M) / Σ_r l_r·e^(m_r − M), M = max_r m_r. With every split empty (m = −inf)
/// every weight is e^−inf = 0 and the output 0.
__device__ __forceinline__ float4 merge_splits(const float (&mr)[kMaxCluster],
                                               const float (&lr)[kMaxCluster],
                                               const float4 (&orr)[kMaxCluster], int n) {
  float m = -INFINITY;
#pragma unroll
  for (int r = 0; r < kMaxCluster; ++r) m = fmaxf(m, mr[r]);
  const float ms = m > -INFINITY ? m : 0.0f;
  float l = 0.0f;
  float4 o = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
  for (int r = 0; r < kMaxCluster; ++r) {
    const float w = r < n ? expf(mr[r] - ms) : 0.0f;
    l = fmaf(lr[r], w, l);
    o = make_float4(fmaf(orr[r].x, w, o.x), fmaf(orr[r].y, w, o.y), fmaf(orr[r].z, w, o.z),
                    fmaf(orr[r].w, w, o.w));
  }
  return l > 0.0f ? make_float4(o.x / l, o.y / l, o.z / l, o.w / l)
                  : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
}

/// Unit i (4 columns) of the block's outputs, y, into the digit split of `out` when asked for.
/// All 32 lanes of a warp call it with 32 consecutive units (128 columns of one head: head_dim
/// 128 or 256), so the warp holds whole 32-column tiles, as split_128 needs.
__device__ __forceinline__ void split_unit(const AttnArgs& a, int h0, int i, float4 y) {
  if (a.x_split.dig == nullptr) return;  // uniform over the launch
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t c0 = static_cast<int64_t>(h0) * a.head_dim + 4 * (i - lane);
  gemv_impl::split_128(y, c0, true, a.x_split.dig, a.x_split.stride, a.x_split.meta, a.x_split.so);
}

#if __CUDA_ARCH__ >= 900
/// The address of shared-memory address `addr` (this block's) in block `rank` of the cluster.
__device__ __forceinline__ uint32_t cluster_addr(uint32_t addr, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}
/// Stores 16 bytes at `addr` (shared::cluster) and counts them on the mbarrier at `bar` (in the
/// same block as `addr`): PTX ISA 8.1, st.async.
__device__ __forceinline__ void st_async(uint32_t addr, float4 v, uint32_t bar) {
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, "
      "[%5];\n" ::"r"(addr),
      "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w), "r"(bar)
      : "memory");
}
/// 8 bytes, as st_async.
__device__ __forceinline__ void st_async(uint32_t addr, float2 v, uint32_t bar) {
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];\n" ::"r"(
          addr),
      "f"(v.x), "f"(v.y), "r"(bar)
      : "memory");
}
/// Waits for phase `parity` of this block's mbarrier at `bar`, acquiring at cluster scope (the
/// bytes other blocks stored with st_async).
__device__ __forceinline__ void mbar_wait_cluster(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "wait_%=:\n"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n"
      "}\n" ::"r"(kernels::smem_addr(bar)),
      "r"(parity)
      : "memory");
}
#endif

/// Bytes of block 0's receive buffer in the push merge (path 5): the other blocks' unit sums
/// ([splits − 1][hpb · head_dim] floats), then their m and l ([splits − 1][hpb] float2).
__host__ __device__ constexpr int push_bytes(int splits, int hpb, int head_dim) {
  return (splits - 1) * hpb * (head_dim + 2) * 4;
}
// Block 0's mbarrier counts every byte of one launch: its tx count holds at most 2^20 − 1.
static_assert(push_bytes(kMaxCluster, kMaxGroup, 256) < (1 << 20), "push merge tx count");

/// NG: query heads per block at most (1, or kMaxGroup); the block's own count ng <= NG is a
/// runtime value. Per-group work runs for all NG groups (padding groups have q = 0), so the
/// warp shuffles never sit in divergent code.
template <int HD, int NG>
__global__ void __launch_bounds__(kThreads) attention_kernel(const AttnArgs args) {
  const AttnArgs a = seq_args(args, blockIdx.y / args.n_kv_heads);
  using C = Cfg<HD>;
  __shared__ __align__(16) float q_s[NG][HD];
  __shared__ float s_s[NG][C::kTile];
  __shared__ __align__(16) float red_s[C::kPG][NG][HD];
  __shared__ float m_s[NG];
  __shared__ float l_s[NG];
  __shared__ float alpha_s[NG];
  __shared__ __align__(16) float kn_s[HD];  // this token's k (QK-normed, rotated), fused form
  __shared__ __align__(16) float vn_s[HD];  // ... and its v
  __shared__ float2 cs_s[HD / 2];           // RoPE (cos, sin) of this token's position
  __shared__ uint64_t push_bar;             // push merge: block 0's count of the others' bytes
  extern __shared__ __align__(16) float push_s[];  // ... and their partials (push_bytes)

  const int t = static_cast<int>(threadIdx.x);
  const int warp = t >> 5;
  const int lane = t & 31;
  const int split = static_cast<int>(blockIdx.x);
  const int kvh = static_cast<int>(blockIdx.y % a.n_kv_heads);
  const int g0 = static_cast<int>(blockIdx.z) * a.hpb;
  const int ng = min(a.hpb, a.group - g0);  // query heads in this block (<= NG)
  const int h0 = kvh * a.group + g0;        // the first of them
  const bool reporter = split == 0 && kvh == 0 && blockIdx.z == 0 && t == 0;
  const bool fused = a.k_new != nullptr;
  const float* kbase = a.k + static_cast<int64_t>(kvh) * a.capacity * HD;
  const float* vbase = a.v + static_cast<int64_t>(kvh) * a.capacity * HD;
  const int sp_pos = t / C::kLP;   // score phase: position slot within a pass
  const int sp_part = t % C::kLP;  // ... and float4 columns sp_part + kLP·j, j < 4
  const int vp_col = t % C::kVT;   // value phase: float4 column
  const int vp_grp = t / C::kVT;   // ... and positions vp_grp + kPG·j, j < kVPos

  // The fused form reads its position, sequence length, RoPE angles and the first tile's
  // history rows (positions before this token's) before the PDL wait: they come from the step's
  // H2D copy and from earlier steps, not from the preceding kernels (AttentionParams::k_new).
  int pos = -1;
  int seq_len = 0;
  bool too_long = false;
  if (fused) {
    pos = *a.d_pos;
    const int s = *a.d_seq_len;
    too_long = s > a.capacity;
    seq_len = max(0, min(s, a.capacity));
  }
  int c0 = 0;
  int c1 = 0;
  const auto set_range = [&] {
    const int chunk = split_chunk(seq_len, a.splits, a.min_chunk);
    c0 = static_cast<int>(min(static_cast<int64_t>(split) * chunk, static_cast<int64_t>(seq_len)));
    c1 = min(seq_len, c0 + chunk);
  };

  // K and V rows of a tile in registers: rows in [lo, hi) from the caches, row `pos` (this token,
  // fused form) from shared memory where asked; the others keep their value. Plain predicated
  // loads: each row is one condition, no else paths.
  float4 kr[C::kPasses][4];
  float4 vr[C::kVPos];
  const auto zero_tile = [&] {
#pragma unroll
    for (int j = 0; j < C::kVPos; ++j) vr[j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int p = 0; p < C::kPasses; ++p) {
#pragma unroll
      for (int j = 0; j < 4; ++j) kr[p][j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
  };
  const auto load_tile = [&](int t0, int lo, int hi) {
#pragma unroll
    for (int j = 0; j < C::kVPos; ++j) {
      const int r = t0 + vp_grp + C::kPG * j;
      if (r >= lo && r < hi) {
        vr[j] = reinterpret_cast<const float4*>(vbase + static_cast<int64_t>(r) * HD)[vp_col];
      }
    }
#pragma unroll
    for (int p = 0; p < C::kPasses; ++p) {
      const int r = t0 + p * C::kPosPerPass + sp_pos;
      const float4* krow = reinterpret_cast<const float4*>(kbase + static_cast<int64_t>(r) * HD);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if (r >= lo && r < hi) kr[p][j] = krow[sp_part + C::kLP * j];
      }
    }
  };
  // Row `pos` of the tile from kn_s / vn_s, when this block attends it (p = 0 would not cancel
  // a non-finite k or v in a masked slot).
  const auto take_new_row = [&](int t0) {
    const int pnew = pos >= c0 && pos < c1 ? pos : -1;
#pragma unroll
    for (int j = 0; j < C::kVPos; ++j) {
      if (t0 + vp_grp + C::kPG * j == pnew) vr[j] = reinterpret_cast<const float4*>(vn_s)[vp_col];
    }
#pragma unroll
    for (int p = 0; p < C::kPasses; ++p) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if (t0 + p * C::kPosPerPass + sp_pos == pnew) {
          kr[p][j] = reinterpret_cast<const float4*>(kn_s)[sp_part + C::kLP * j];
        }
      }
    }
  };
#if __CUDA_ARCH__ >= 900
  if (a.cluster && a.push) {
    // Block 0's mbarrier, initialised before any block can store to it: every block arrives at
    // the cluster barrier here and waits on it just before its stores, by when all have arrived.
    if (split == 0 && t == 0) {
      kernels::mbar_init(&push_bar, 1);
      kernels::mbar_init_fence();
    }
    asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
  }
#endif
  zero_tile();
  if (fused) {
    set_range();
    load_tile(c0, c0, min(pos, c1));  // history rows: written by earlier steps
    // The angles after the loads are issued (double sincos: the slowest part of the prologue).
    if (t < a.rope_half) cs_s[t] = kernels::rope_cos_sin(pos, a.inv_freq[t]);
  }
  static_assert(HD / 2 <= kThreads, "one thread per RoPE pair");

  kernels::grid_dependency_wait();
  // The next kernel (the o projection, or the combine kernel with splits) launches once every
  // block is past its wait, not at this kernel's start: launched earlier, the kernels after it
  // had their CTAs resident long before their turn and packed onto few SMs (as the staged GEMV's,
  // gemv.cu). Measured on the H200, the staged GEMV's two round-17 changes in both builds:
  // SmolLM2-135M shape Q4_1 step 477.9 → 466.7 µs, F16 437.3 → 435.3 µs, 7B shape Q4_0 1,835.9 /
  // 1,838.9 → 1,820.6 / 1,821.8 µs, F16 (power-capped) 3,787.8 / 3,793.7 → 3,800.1 / 3,801.0 µs
  // (docs/performance.md, round 17).
  if (!a.trigger_at_exit) kernels::grid_dependency_trigger();
  if (fused) {
    if (too_long && reporter && a.d_error != nullptr) atomicOr(a.d_error, kDeviceErrorSeqLen);
  } else {
    seq_len = read_seq_len(a, reporter);
    set_range();
  }
  // q, and this token's k and v, in one round trip.
  for (int i = t; i < NG * HD; i += kThreads) {
    const int g = i / HD;
    q_s[g][i % HD] = g < ng ? a.q[static_cast<int64_t>(h0) * HD + i] : 0.0f;
  }
  const bool in_range = pos >= 0 && pos < a.capacity;
  if (fused && warp < 2) {
    constexpr int kPer = (HD + 31) / 32;
    const float* src = (warp == 0 ? a.k_new : a.v_new) + static_cast<int64_t>(kvh) * HD;
    float x[kPer];
#pragma unroll
    for (int j = 0; j < kPer; ++j) x[j] = lane + 32 * j < HD ? src[lane + 32 * j] : 0.0f;
    float* dst = warp == 0 ? kn_s : vn_s;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      if (lane + 32 * j < HD) dst[lane + 32 * j] = x[j];
    }
    if (warp == 1 && in_range) {  // every block of the KV head writes the same row
      float* vrow = a.v_w + (static_cast<int64_t>(kvh) * a.capacity + pos) * HD;
#pragma unroll
      for (int j = 0; j < kPer; ++j) {
        if (lane + 32 * j < HD) vrow[lane + 32 * j] = x[j];
      }
    }
  }
  if (t < NG) {
    m_s[t] = -INFINITY;
    l_s[t] = 0.0f;
  }
  __syncthreads();
  if (fused) {
    // Warp w: QK-norm and RoPE of this token's k (item 0, then appended to the cache) and of the
    // block's query heads (items 1..ng).
    for (int item = warp; item <= ng; item += kThreads / 32) {
      float* h = item == 0 ? kn_s : q_s[item - 1];
      const float* nw = item == 0 ? a.k_norm : a.q_norm;
      if (nw != nullptr) kernels::rms_norm_head(h, HD, nw, a.eps, lane);
      kernels::rope_head_table(h, a.rope_half, a.adjacent, cs_s, lane);
      if (item == 0 && in_range) {
        float* dst = a.k_w + (static_cast<int64_t>(kvh) * a.capacity + pos) * HD;
        for (int i = lane; i < HD; i += 32) dst[i] = kn_s[i];
      }
    }
    if (!in_range && reporter && a.d_error != nullptr) atomicOr(a.d_error, kDeviceErrorKvPosition);
    __syncthreads();
  }
  // Nothing to attend in this split (uniform over the block). Cluster blocks carry on with an
  // empty range (m = −inf, l = 0): every block of a cluster must reach its barriers, and every
  // block of the merge form must be counted.
  if (c0 >= c1 && !a.cluster && a.merge_count == nullptr) {
    if (a.splits == 1) {
      for (int i = t; i < ng * HD; i += kThreads) a.out[static_cast<int64_t>(h0) * HD + i] = 0.0f;
      if constexpr (HD % 128 == 0) {
        // The split of these zeros; a warp's 32 units are 128 columns of one head.
        for (int i = t; i < ng * HD / 4; i += kThreads) split_unit(a, h0, i, float4{});
      }
    } else if (t < ng) {
      float* ml = a.part_ml + (static_cast<int64_t>(split) * a.n_heads + h0 + t) * 2;
      ml[0] = -INFINITY;
      ml[1] = 0.0f;
    }
    return;
  }
  if (fused) {
    load_tile(c0, max(c0, pos + 1), c1);  // rows after this token's (seq_len > pos + 1)
    take_new_row(c0);
  } else {
    load_tile(c0, c0, c1);
  }

  float4 acc[NG];
#pragma unroll
  for (int g = 0; g < NG; ++g) acc[g] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

  for (int t0 = c0; t0 < c1; t0 += C::kTile) {
    if (t0 != c0) {
      zero_tile();
      load_tile(t0, t0, c1);
      if (fused) take_new_row(t0);
    }
    // (1) Scores of the tile (all NG groups: the shuffles run on the whole warp).
#pragma unroll
    for (int p = 0; p < C::kPasses; ++p) {
      const int slot = p * C::kPosPerPass + sp_pos;
      const bool valid = t0 + slot < c1;
#pragma unroll
      for (int g = 0; g < NG; ++g) {
        const float4* qv = reinterpret_cast<const float4*>(q_s[g]);
        float d = 0.0f;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const float4 qq = qv[sp_part + C::kLP * j];
          d = fmaf(qq.x, kr[p][j].x, d);
          d = fmaf(qq.y, kr[p][j].y, d);
          d = fmaf(qq.z, kr[p][j].z, d);
          d = fmaf(qq.w, kr[p][j].w, d);
        }
        d = kernels::group_sum<C::kLP>(d);
        if (sp_part == 0 && g < ng) s_s[g][slot] = valid ? d * a.scale : -INFINITY;
      }
    }
    __syncthreads();

    // (2) Online softmax, one warp per head.
    for (int g = warp; g < ng; g += kThreads / 32) {
      float mt = -INFINITY;
      for (int i = lane; i < C::kTile; i += 32) mt = fmaxf(mt, s_s[g][i]);
      mt = kernels::warp_max(mt);
      const float m_old = m_s[g];
      const float m_new = fmaxf(m_old, mt);  // finite: the tile has a valid position
      float sum = 0.0f;
      for (int i = lane; i < C::kTile; i += 32) {
        const float pv = t0 + i < c1 ? expf(s_s[g][i] - m_new) : 0.0f;
        s_s[g][i] = pv;
        sum += pv;
      }
      sum = kernels::warp_sum(sum);
      if (lane == 0) {
        const float alpha = expf(m_old - m_new);  // 0 on the first tile (m_old = -inf)
        alpha_s[g] = alpha;
        l_s[g] = l_s[g] * alpha + sum;
        m_s[g] = m_new;
      }
    }
    __syncthreads();

    // (3) Accumulate p·v.
#pragma unroll
    for (int g = 0; g < NG; ++g) {
      if (g < ng) {
        const float al = alpha_s[g];
        float4 ac = make_float4(acc[g].x * al, acc[g].y * al, acc[g].z * al, acc[g].w * al);
#pragma unroll
        for (int j = 0; j < C::kVPos; ++j) ac = fma4(s_s[g][vp_grp + C::kPG * j], vr[j], ac);
        acc[g] = ac;
      }
    }
    __syncthreads();  // s_s and alpha_s are rewritten by the next tile
  }

  // Sum the position groups' accumulators, then normalize (single split), store the partial, or
  // merge the cluster's splits. Thread i handles "unit" i: 4 consecutive columns of the block's
  // ng · HD outputs (float4 reads of shared memory, and of the other blocks' in the cluster).
#pragma unroll
  for (int g = 0; g < NG; ++g) {
    if (g < ng) *reinterpret_cast<float4*>(&red_s[vp_grp][g][4 * vp_col]) = acc[g];
  }
  __syncthreads();
  const int units = ng * HD / 4;
  const auto unit_sum = [&](int g, int d) {  // this split's sums of columns d..d+3 of head g
    float4 o = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int k = 0; k < C::kPG; ++k) {
      const float4 v = *reinterpret_cast<const float4*>(&red_s[k][g][d]);
      o = make_float4(o.x + v.x, o.y + v.y, o.z + v.z, o.w + v.w);
    }
    return o;
  };
  // Writes the normalized outputs of unit i.
  const auto store_unit = [&](int i, float4 y) {  // scalar stores: `out` may be 4-byte aligned
    float* o = a.out + static_cast<int64_t>(h0) * HD + 4 * i;
    o[0] = y.x;
    o[1] = y.y;
    o[2] = y.z;
    o[3] = y.w;
  };
  const auto scaled = [](float4 o, float l) {
    return l > 0.0f ? make_float4(o.x / l, o.y / l, o.z / l, o.w / l)
                    : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  };
#if __CUDA_ARCH__ >= 900
  if (a.cluster && a.push) {
    // The push merge: the same values merged in the same order as below (the same bits), but
    // every other block stores its sums, m and l into block 0's shared memory and exits, and
    // block 0 waits for their bytes on its mbarrier: no cluster-wide release and no remote reads.
    const int n = a.splits;                              // the cluster's blocks (gridDim.x)
    const int hu = a.hpb * HD / 4;                       // units of one block's receive row
    float4* recv_o = reinterpret_cast<float4*>(push_s);  // [n − 1][hu]
    float2* recv_ml = reinterpret_cast<float2*>(push_s + (n - 1) * a.hpb * HD);  // [n − 1][hpb]
    asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");  // block 0's mbarrier is ready
    if (split != 0) {
      const uint32_t bar = cluster_addr(kernels::smem_addr(&push_bar), 0);
      for (int i = t; i < units; i += kThreads) {
        const int g = 4 * i / HD;
        const int d = 4 * i % HD;
        st_async(cluster_addr(kernels::smem_addr(&recv_o[(split - 1) * hu + i]), 0), unit_sum(g, d),
                 bar);
      }
      if (t < ng) {
        st_async(cluster_addr(kernels::smem_addr(&recv_ml[(split - 1) * a.hpb + t]), 0),
                 make_float2(m_s[t], l_s[t]), bar);
      }
      return;
    }
    if (t == 0) {
      kernels::mbar_arrive_expect_tx(&push_bar,
                                     static_cast<uint32_t>((n - 1) * (units * 16 + ng * 8)));
    }
    float4 own[(NG * HD / 4 + kThreads - 1) / kThreads];
#pragma unroll
    for (int k = 0; k * kThreads < NG * HD / 4; ++k) {
      const int i = t + k * kThreads;
      if (i < units) own[k] = unit_sum(4 * i / HD, 4 * i % HD);
    }
    mbar_wait_cluster(&push_bar, 0);
#pragma unroll
    for (int k = 0; k * kThreads < NG * HD / 4; ++k) {
      const int i = t + k * kThreads;
      if (i < units) {
        const int g = 4 * i / HD;
        float mr[kMaxCluster];
        float lr[kMaxCluster];
        float4 orr[kMaxCluster];
#pragma unroll
        for (int r = 0; r < kMaxCluster; ++r) {
          const bool ok = r < n;
          const float2 ml = r == 0 ? make_float2(m_s[g], l_s[g])
                            : ok   ? recv_ml[(r - 1) * a.hpb + g]
                                   : make_float2(-INFINITY, 0.0f);
          mr[r] = ml.x;
          lr[r] = ml.y;
          orr[r] = r == 0 ? own[k]
                   : ok   ? recv_o[(r - 1) * hu + i]
                          : make_float4(0.f, 0.f, 0.f, 0.f);
        }
        const float4 y = merge_splits(mr, lr, orr, n);
        store_unit(i, y);
        if constexpr (HD % 128 == 0) split_unit(a, h0, i, y);
      }
    }
    return;
  }
  if (a.cluster) {
    // Block 0 of the cluster merges the splits as attention_combine_kernel does, reading the
    // others' shared memory (all ranks' values requested at once: one DSMEM round trip).
    // This split's sums into red_s[0] (each thread reads and writes only its own units).
    for (int i = t; i < units; i += kThreads) {
      const int g = 4 * i / HD;
      const int d = 4 * i % HD;
      *reinterpret_cast<float4*>(&red_s[0][g][d]) = unit_sum(g, d);
    }
    cooperative_groups::cluster_group cl = cooperative_groups::this_cluster();
    cl.sync();  // every split's sums, m and l are written and visible to the cluster
    if (cl.block_rank() == 0) {
      const int n = static_cast<int>(cl.num_blocks());
      for (int i = t; i < units; i += kThreads) {
        const int g = 4 * i / HD;
        const int d = 4 * i % HD;
        float mr[kMaxCluster];
        float lr[kMaxCluster];
        float4 orr[kMaxCluster];
#pragma unroll
        for (int r = 0; r < kMaxCluster; ++r) {
          const bool ok = r < n;
          mr[r] = ok ? *cl.map_shared_rank(&m_s[g], r) : -INFINITY;
          lr[r] = ok ? *cl.map_shared_rank(&l_s[g], r) : 0.0f;
          orr[r] = ok ? *cl.map_shared_rank(reinterpret_cast<const float4*>(&red_s[0][g][d]), r)
                      : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
        // No branch on m: every value read feeds the stores below (see the barrier).
        const float4 y = merge_splits(mr, lr, orr, n);
        store_unit(i, y);
        if constexpr (HD % 128 == 0) split_unit(a, h0, i, y);
      }
    }
    // The other blocks' shared memory stays alive until block 0 has read it. The arrive is
    // relaxed (no GPU-wide fence): block 0's remote reads have completed before it because every
    // value they returned feeds a store issued before it (data dependence, in-order issue).
    asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.aligned;\n" ::
                     : "memory");
    return;
  }
#endif
  if (a.merge_count != nullptr) {
    // This split's sums, m and l into the scratch (split-major, as the split-KV path), then the
    // last block to arrive merges all splits in split order (deterministic). The fences order
    // each thread's stores before the count and the last block's loads after it (the classic
    // last-block reduction, CUDA Programming Guide, memory fence functions).
    for (int i = t; i < units; i += kThreads) {
      const int g = 4 * i / HD;
      const int d = 4 * i % HD;
      *reinterpret_cast<float4*>(a.part_acc +
                                 (static_cast<int64_t>(split) * a.n_heads + h0 + g) * HD + d) =
          unit_sum(g, d);
    }
    if (t < ng) {
      *reinterpret_cast<float2*>(a.part_ml + (static_cast<int64_t>(split) * a.n_heads + h0 + t) *
                                                 2) = make_float2(m_s[t], l_s[t]);
    }
    __threadfence();
    __syncthreads();
    __shared__ bool last_s;
    unsigned* count = a.merge_count + blockIdx.y * gridDim.z + blockIdx.z;
    // atomicInc wraps to 0 after splits − 1: the last block leaves the count ready for the next
    // launch with no store of its own.
    const unsigned last = static_cast<unsigned>(a.splits) - 1;
    if (t == 0) last_s = atomicInc(count, last) == last;
    __syncthreads();
    if (!last_s) return;
    __threadfence();
    for (int i = t; i < units; i += kThreads) {
      const int g = 4 * i / HD;
      const int d = 4 * i % HD;
      const int64_t h = h0 + g;
      float mr[kMaxCluster];
      float lr[kMaxCluster];
      float4 orr[kMaxCluster];
#pragma unroll
      for (int r = 0; r < kMaxCluster; ++r) {  // every split's values requested at once (L2)
        const bool ok = r < a.splits;
        const int64_t sh = static_cast<int64_t>(r) * a.n_heads + h;
        const float2 ml = ok ? __ldcg(reinterpret_cast<const float2*>(a.part_ml + sh * 2))
                             : make_float2(-INFINITY, 0.0f);
        mr[r] = ml.x;
        lr[r] = ml.y;
        orr[r] = ok ? __ldcg(reinterpret_cast<const float4*>(a.part_acc + sh * HD + d))
                    : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      }
      const float4 y = merge_splits(mr, lr, orr, a.splits);
      store_unit(i, y);
      if constexpr (HD % 128 == 0) split_unit(a, h0, i, y);
    }
    return;
  }
  for (int i = t; i < units; i += kThreads) {
    const int g = 4 * i / HD;
    const int d = 4 * i % HD;
    const float4 o = unit_sum(g, d);
    const int64_t h = h0 + g;
    if (a.splits == 1) {
      const float4 y = scaled(o, l_s[g]);
      store_unit(i, y);
      if constexpr (HD % 128 == 0) split_unit(a, h0, i, y);
    } else {
      float* pa = a.part_acc + (static_cast<int64_t>(split) * a.n_heads + h) * HD + d;
      pa[0] = o.x;  // scalar stores: the scratch of a sequence may be 8-byte aligned
      pa[1] = o.y;
      pa[2] = o.z;
      pa[3] = o.w;
      if (d == 0) {
        float* ml = a.part_ml + (static_cast<int64_t>(split) * a.n_heads + h) * 2;
        ml[0] = m_s[g];
        ml[1] = l_s[g];
      }
    }
  }
}

/// Merges the partials of the active splits: block h, thread d.
__global__ void __launch_bounds__(256) attention_combine_kernel(const AttnArgs args) {
  if (!args.trigger_at_exit) kernels::grid_dependency_trigger();
  kernels::grid_dependency_wait();
  const AttnArgs a = seq_args(args, blockIdx.x / args.n_heads);
  const int h = static_cast<int>(blockIdx.x % args.n_heads);
  const int d = static_cast<int>(threadIdx.x);
  const int seq_len = read_seq_len(a, false);
  const int active = min(a.splits, ceil_div(seq_len, split_chunk(seq_len, a.splits, a.min_chunk)));
  float m = -INFINITY;
  for (int s = 0; s < active; ++s) {
    m = fmaxf(m, a.part_ml[(static_cast<int64_t>(s) * a.n_heads + h) * 2]);
  }
  float l = 0.0f;
  float o = 0.0f;
  for (int s = 0; s < active; ++s) {
    const int64_t sh = static_cast<int64_t>(s) * a.n_heads + h;
    const float w = expf(a.part_ml[sh * 2] - m);
    l = fmaf(a.part_ml[sh * 2 + 1], w, l);
    o = fmaf(a.part_acc[sh * a.head_dim + d], w, o);
  }
  a.out[static_cast<int64_t>(h) * a.head_dim + d] = l > 0.0f ? o / l : 0.0f;
}

template <int HD>
void launch_for_head_dim(const AttnArgs& args, int64_t batch, bool pdl, cudaStream_t stream) {
  AttnArgs a = args;
  void* params[] = {&a};
  const void* kernel = args.hpb == 1
                           ? reinterpret_cast<const void*>(&attention_kernel<HD, 1>)
                           : reinterpret_cast<const void*>(&attention_kernel<HD, kMaxGroup>);
  const dim3 grid(static_cast<unsigned>(args.splits),
                  static_cast<unsigned>(args.n_kv_heads * batch),
                  static_cast<unsigned>(ceil_div(args.group, args.hpb)));
  if (args.cluster) {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(kThreads);
    cfg.stream = stream;
    if (args.push) {
      cfg.dynamicSmemBytes = static_cast<size_t>(push_bytes(args.splits, args.hpb, HD));
      // Up to 7 × 8 × 258 floats (57 KB) beside the static arrays: the most any launch of this
      // head_dim asks for, raised once per device.
      raise_dynamic_smem(kernel, push_bytes(kMaxCluster, kMaxGroup, HD));
    }
    cudaLaunchAttribute attr[2];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = static_cast<unsigned>(args.splits);
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[1].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = pdl ? 2 : 1;
    DB_CUDA_CHECK(cudaLaunchKernelExC(&cfg, kernel, params));
    return;
  }
  gemv_impl::launch_with_attrs(kernel, params, grid, dim3(kThreads), 0, pdl, stream);
  if (args.splits > 1 && args.merge_count == nullptr) {  // the merge form merges in the kernel
    gemv_impl::launch_with_attrs(reinterpret_cast<const void*>(&attention_combine_kernel), params,
                                 dim3(static_cast<unsigned>(args.n_heads * batch)), dim3(HD), 0,
                                 pdl, stream);
  }
}

/// Query heads per block: as many as share a KV head (K and V are then read once per block),
/// but fewer when that leaves the GPU with under ~2 blocks per SM (each block then re-reads the
/// KV head from L2, which is cheap next to a mostly idle GPU).
int heads_per_block(int splits, int64_t n_kv_heads, int group) {
  const int64_t units = static_cast<int64_t>(splits) * n_kv_heads * group;
  const int64_t target = 2 * static_cast<int64_t>(gemv_impl::sm_count());
  int hpb = static_cast<int>(std::min<int64_t>(kMaxGroup, ceil_div<int64_t>(units, target)));
  hpb = std::max(1, std::min(hpb, group));
  // Even out the blocks of a KV head (e.g. group 7 with hpb 4 → 4 + 3, not 4 + 4 padded).
  const int z = ceil_div(group, hpb);
  return ceil_div(group, z);
}

}  // namespace

int attention_path_request() {
  const char* e = std::getenv("DECODEBENCH_ATTENTION");
  if (e == nullptr || *e == '\0') return 0;
  const std::string v(e);
  if (v == "cluster") return 3;
  if (v == "block") return 2;
  if (v == "split") return 1;
  if (v == "merge") return 4;
  if (v == "push") return 5;
  throw usage_error("DECODEBENCH_ATTENTION: '" + v +
                    "' is none of cluster (the short-context form on a thread-block cluster), "
                    "push (the same, the other blocks pushing their partials into block 0), "
                    "block (one block per KV head, no cluster), merge (blocks merged by the "
                    "last one, no cluster) and split (split-KV and its combine kernel)");
}

bool attention_trigger_request() {
  const char* e = std::getenv("DECODEBENCH_ATTENTION_TRIGGER");
  if (e == nullptr || *e == '\0') return false;
  const std::string v(e);
  if (v == "wait") return false;
  if (v == "exit") return true;
  throw usage_error("DECODEBENCH_ATTENTION_TRIGGER: '" + v +
                    "' is neither wait (the next kernel launches once every attention block is "
                    "past its PDL wait) nor exit (once every block has exited)");
}

std::string attention_form_name(const AttentionParams& p) {
  const std::string trigger = p.pdl && p.trigger_at_exit ? " (trigger at exit)" : "";
  if (!attention_uses_short_path(p)) return "split-kv " + std::to_string(p.splits) + trigger;
  const int c = attention_cluster_blocks(p);
  const int m = attention_merge_splits(p);
  const std::string cluster = attention_pushes(p) ? "cluster-push " : "cluster ";
  return (c > 1   ? cluster + std::to_string(c)
          : m > 1 ? "merge " + std::to_string(m)
                  : "block") +
         trigger;
}

bool attention_uses_short_path(const AttentionParams& p) {
  return p.path >= 2 || (p.path == 0 && p.capacity <= kShortMaxCapacity);
}

int attention_short_splits(int64_t capacity, int64_t head_dim) {
  if (head_dim <= 0 || capacity <= 0) return 1;
  // One block per K tile of the capacity (8192 / head_dim positions; Cfg<HD>::kTile).
  const int64_t tile = 8192 / head_dim;
  return static_cast<int>(std::clamp<int64_t>(ceil_div<int64_t>(capacity, tile), 1, kMaxCluster));
}

int attention_cluster_blocks(const AttentionParams& p) {
  if (!attention_uses_short_path(p) || p.path == 2 || p.path == 4 || gemv_impl::cc_major() < 9) {
    return 1;
  }
  return attention_short_splits(p.capacity, p.head_dim);
}

bool attention_pushes(const AttentionParams& p) {
  // Automatic: the push merge unless block 0 also writes the o projection's x' split. Measured
  // on the H200 (round 39, median TPOT, graph, 128 tokens after 128, the cluster form against
  // push): SmolLM2-135M shape Q4_1 430.9 / 431.2 → 423.5 / 423.3 µs, F16 414.6 / 414.6 → 404.6
  // / 404.5, F16 with a 384-token prompt (4 blocks) 421.8 → 413.8; 7B F16 (power-capped) no
  // measurable change; but 7B Q4_0, whose attention writes the split, 1,594.0 / 1,591.9 → 1,642.4
  // / 1,645.4 µs (docs/performance.md, round 39).
  // Batched steps keep the cluster form: not measured with the push merge.
  if (attention_cluster_blocks(p) <= 1) return false;
  return p.path == 5 || (p.path == 0 && p.x_split == nullptr && p.batch == 1);
}

int attention_merge_splits(const AttentionParams& p) {
  return p.path == 4 ? attention_short_splits(p.capacity, p.head_dim) : 1;
}

bool attention_writes_x_split(const AttentionParams& p) {
  // One writer per output: the short-context form (one block, or cluster rank 0) or a single
  // split; the combine kernel's one thread per column holds no whole tile.
  return p.batch == 1 && (p.head_dim == 128 || p.head_dim == 256) &&
         (attention_uses_short_path(p) || p.splits == 1);
}

int attention_splits(int64_t capacity) {
  if (capacity <= kSplitGranule) return 1;
  const int64_t s = ceil_div<int64_t>(capacity, kSplitGranule);
  return static_cast<int>(s < kMaxSplits ? s : kMaxSplits);
}

int64_t attention_scratch_floats(int64_t n_heads, int64_t head_dim, int splits) {
  return splits > 1 ? static_cast<int64_t>(splits) * n_heads * (head_dim + 2) : 0;
}

void launch_attention(const AttentionParams& p, cudaStream_t stream) {
  if (p.head_dim != 16 && p.head_dim != 32 && p.head_dim != 64 && p.head_dim != 128 &&
      p.head_dim != 256) {
    throw usage_error("attention: unsupported head_dim: " + std::to_string(p.head_dim) +
                      " (supported: 16, 32, 64, 128, 256)");
  }
  if (p.q == nullptr || p.k_cache == nullptr || p.v_cache == nullptr || p.out == nullptr ||
      p.d_seq_len == nullptr) {
    throw runtime_error("attention: null device pointer");
  }
  if (p.n_heads <= 0 || p.n_kv_heads <= 0 || p.n_heads % p.n_kv_heads != 0 ||
      p.n_kv_heads > 65535 || p.n_heads > (int64_t{1} << 30) || p.capacity <= 0 ||
      p.capacity * p.head_dim > (int64_t{1} << 40) || p.capacity > (int64_t{1} << 30)) {
    throw runtime_error("attention: invalid shape n_heads=" + std::to_string(p.n_heads) +
                        " n_kv_heads=" + std::to_string(p.n_kv_heads) +
                        " capacity=" + std::to_string(p.capacity));
  }
  if (p.k_new != nullptr && (p.v_new == nullptr || p.d_pos == nullptr || p.d_inv_freq == nullptr ||
                             p.rope_dim <= 0 || p.rope_dim % 2 != 0 || p.rope_dim > p.head_dim ||
                             (p.k_norm != nullptr) != (p.q_norm != nullptr) || !(p.eps >= 0.0f))) {
    throw runtime_error(
        "attention: fused RoPE/KV append needs v_new, d_pos, d_inv_freq, an even "
        "rope_dim in (0, head_dim], both or neither QK-norm weights, eps >= 0");
  }
  if (p.batch < 1 || p.batch > 256 || p.n_kv_heads * p.batch > 65535 ||
      (p.batch > 1 &&
       (p.cache_stride < p.n_kv_heads * p.capacity * p.head_dim || p.input_stride < 1))) {
    throw runtime_error("attention: invalid batch " + std::to_string(p.batch) +
                        " (cache_stride and input_stride must cover a sequence)");
  }
  if (p.path < 0 || p.path > 5) {
    throw runtime_error("attention: invalid path " + std::to_string(p.path));
  }
  const int merge = attention_merge_splits(p);
  if (merge > 1 && (p.batch != 1 || p.merge_count == nullptr || p.scratch == nullptr ||
                    (reinterpret_cast<uintptr_t>(p.scratch) & 15u) != 0)) {
    throw runtime_error(
        "attention: the merge form (path 4) needs batch 1, merge_count and a 16-byte aligned "
        "scratch of attention_scratch_floats(n_heads, head_dim, attention_short_splits(capacity, "
        "head_dim)) floats");
  }
  if (p.x_split != nullptr &&
      (!attention_writes_x_split(p) || (reinterpret_cast<uintptr_t>(p.x_split) & 15u) != 0)) {
    throw runtime_error(
        "attention: x_split needs batch 1, head_dim 128 or 256, one split or the "
        "short-context form, and a 16-byte aligned buffer (head_dim " +
        std::to_string(p.head_dim) + ", batch " + std::to_string(p.batch) + ", splits " +
        std::to_string(p.splits) + ")");
  }
  const bool small = attention_uses_short_path(p);
  if (!small && (p.splits < 1 || p.splits > 65535 || (p.splits > 1 && p.scratch == nullptr))) {
    throw runtime_error("attention: invalid splits " + std::to_string(p.splits) +
                        (p.splits > 1 && p.scratch == nullptr ? " without scratch" : ""));
  }
  AttnArgs a{};
  a.q = p.q;
  a.k = p.k_cache;
  a.v = p.v_cache;
  a.out = p.out;
  a.part_acc = small && merge == 1 ? nullptr : p.scratch;
  a.part_ml = !small && p.splits > 1
                  ? p.scratch + static_cast<int64_t>(p.splits) * p.n_heads * p.head_dim
              : merge > 1 ? p.scratch + static_cast<int64_t>(merge) * p.n_heads * p.head_dim
                          : nullptr;
  a.n_heads = static_cast<int>(p.n_heads);
  a.group = static_cast<int>(p.n_heads / p.n_kv_heads);
  a.head_dim = static_cast<int>(p.head_dim);
  a.capacity = static_cast<int>(p.capacity);
  const int cluster = attention_cluster_blocks(p);
  a.splits = !small ? p.splits : merge > 1 ? merge : cluster;
  a.cluster = small && cluster > 1 ? 1 : 0;
  a.push = a.cluster && attention_pushes(p) ? 1 : 0;
  a.trigger_at_exit = p.trigger_at_exit ? 1 : 0;
  a.merge_count = merge > 1 ? p.merge_count : nullptr;
  a.min_chunk = a.cluster || merge > 1 ? kMinChunkCluster : kMinChunk;
  a.hpb = heads_per_block(a.splits, p.n_kv_heads * p.batch, a.group);
  a.scale = 1.0f / std::sqrt(static_cast<float>(p.head_dim));  // as cpu::attention
  a.d_seq_len = p.d_seq_len;
  a.d_error = p.d_error;
  a.k_new = p.k_new;
  a.v_new = p.v_new;
  a.k_w = const_cast<float*>(p.k_cache);  // the cache is written only in the fused form
  a.v_w = const_cast<float*>(p.v_cache);
  a.d_pos = p.d_pos;
  a.inv_freq = p.d_inv_freq;
  a.rope_half = static_cast<int>(p.rope_dim / 2);
  a.adjacent = p.rope_style == RopeStyle::kAdjacent;
  a.q_norm = p.q_norm;
  a.k_norm = p.k_norm;
  a.eps = p.eps;
  a.n_kv_heads = static_cast<int>(p.n_kv_heads);
  a.q_stride = p.q_stride > 0 ? p.q_stride : p.n_heads * p.head_dim;
  a.kv_new_stride = p.kv_new_stride > 0 ? p.kv_new_stride : p.n_kv_heads * p.head_dim;
  a.cache_stride = p.cache_stride;
  a.input_stride = p.input_stride;
  a.scratch_stride = attention_scratch_floats(p.n_heads, p.head_dim, a.splits);
  if (p.x_split != nullptr) a.x_split = gemv_impl::split_out(p.x_split, p.n_heads * p.head_dim);
  const int64_t batch = p.batch;
  switch (p.head_dim) {
    case 16:
      launch_for_head_dim<16>(a, batch, p.pdl, stream);
      break;
    case 32:
      launch_for_head_dim<32>(a, batch, p.pdl, stream);
      break;
    case 64:
      launch_for_head_dim<64>(a, batch, p.pdl, stream);
      break;
    case 128:
      launch_for_head_dim<128>(a, batch, p.pdl, stream);
      break;
    case 256:
      launch_for_head_dim<256>(a, batch, p.pdl, stream);
      break;
    default:
      break;  // rejected above
  }
  DB_CUDA_CHECK_LAUNCH();
}

}  // namespace decodebench::cuda
