// GEMV for every weight type, weights read in their storage type: planning, dispatch and the
// two portable kernels.
//
// Variants (gemv.cuh: gemv_variants): 1 "staged" (this file, every type), 2 "direct" (F32, F16,
// BF16; gemv_direct.cu), 3 "mma" (quantized types on the int8 tensor cores; gemv_mma.cu), 4
// "stream" (quantized types on a pre-split x', bulk-copy pipeline; gemv_stream.cu), 5 "tiled"
// (weights in the tiled layout on a pre-split x', loads straight to registers; gemv_tiled.cu), 6
// "tiled-mma" (gemv_tiled_mma.cu, only when forced), 7 "stream-tiled" (the stream kernel reading
// the tiled layout). The automatic choice takes stream-tiled (Q4_0, Q4_1, Q8_0 on sm_90; Q6_K's
// tiled layout has no other reader) or tiled for tiled weights and direct / mma / stream where the
// pointers and shape allow, else staged, and the scalar fallback for unaligned pointers.
//
// Staged kernel. Decode at batch 1 streams each weight byte exactly once, so the kernel is built
// around keeping HBM busy: each warp owns kRows rows (x values loaded once serve both rows) and
// copies its rows' bytes chunk by chunk into shared memory with 16-byte cp.async, kStages chunks
// deep, while it computes on the oldest chunk. Staging through shared memory makes the global
// loads 16-byte and coalesced whatever the block size (18, 22, 34, 210 bytes ... are not 16-byte
// multiples, so rows and blocks start at any even address). When there are too few row groups to
// fill the GPU, the warps of a block split the columns of one row group (column_splits) and their
// partial sums are added in shared memory in a fixed order, so results are deterministic for a
// given shape.
//
// Per-type decoding (which lane reads which codes and x values) lives in dequant.cuh.
#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.hpp"
#include "core/quant/tiled_layout.hpp"
#include "cuda/check.hpp"
#include "cuda/kernels/common.cuh"
#include "cuda/kernels/dequant.cuh"
#include "cuda/kernels/gemv.cuh"
#include "cuda/kernels/gemv_device.cuh"
#include "cuda/kernels/gemv_impl.cuh"

namespace decodebench::cuda {
namespace {

using kernels::ceil_div;
using kernels::QuantOps;

constexpr int kWarps = 8;  ///< warps per block
constexpr int kThreads = kWarps * 32;
constexpr int kRows = 2;    ///< rows per warp
constexpr int kStages = 4;  ///< cp.async pipeline depth (chunks)
constexpr int kFallbackWarps = 8;
constexpr int kVariantStaged = 1;
constexpr int kVariantDirect = 2;
constexpr int kVariantMma = 3;
constexpr int kVariantStream = 4;
constexpr int kVariantTiled = 5;
constexpr int kVariantTiledMma = 6;
constexpr int kVariantStreamTiled = 7;

/// Shared-memory layout of the staged kernel for type T (per warp: kStages stages of kRows row
/// regions, then the K-quant coefficient table; after all warps: kWarps × kRows partial sums).
template <WeightType T>
struct Layout {
  using Ops = QuantOps<T>;
  static constexpr int kChunkBytes = Ops::kChunkBlocks * Ops::kBlockBytes;
  // A chunk starts at any address ≡ its global address mod 16: up to 15 bytes of slack in front.
  static constexpr int kRegionBytes = (kChunkBytes + 15 + 15) / 16 * 16;
  static constexpr int kStageBytes = kRows * kRegionBytes;
  static constexpr int kTableEntries = Ops::kTable ? kRows * Ops::kChunkBlocks * 4 : 0;
  static constexpr int kWarpBytes = kStages * kStageBytes + kTableEntries * 16;
  static constexpr int kSmemBytes = kWarps * kWarpBytes + kWarps * kRows * 4;
  static constexpr int kBlocksPerStep = 32 / Ops::kPieces;
  static constexpr int kSteps = Ops::kChunkBlocks / kBlocksPerStep;
  static_assert(32 % Ops::kPieces == 0, "pieces per block must divide the warp");
  static_assert(Ops::kChunkBlocks % kBlocksPerStep == 0, "a chunk is a whole number of steps");
  static_assert(kSmemBytes <= 48 * 1024, "stay under the default dynamic shared-memory limit");
};

/// Plain-old-data copy of GemvParams for the kernel (plus the column split).
struct GemvArgs {
  const uint8_t* w;
  const float* x;
  float* y;
  const float* bias;
  const float* residual;
  int64_t rows;
  int64_t cols;
  int ksplit;
};

/// kXSmem: x' is formed in shared memory (an RMSNorm or SwiGLU input, or a plain x of at most
/// kStagedPlainXMax floats); otherwise x is read from global memory (L1-cached) as it is.
template <WeightType T, bool kXSmem>
__global__ void __launch_bounds__(kThreads) gemv_staged_kernel(const gemv_impl::KernelArgs a) {
  using Ops = QuantOps<T>;
  using L = Layout<T>;
  constexpr int kNbc = Ops::kChunkBlocks;
  constexpr int kBb = Ops::kBlockBytes;
  extern __shared__ __align__(16) uint8_t smem[];

  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int ks = warp % a.ksplit;  // column split of this warp
  const int rg = warp / a.ksplit;  // row group within the block
  const int rg_per_block = kWarps / a.ksplit;
  // SwiGLU output (YSink::swiglu_half): row group k holds rows k and k + half (gate and up).
  const int64_t half = a.y.swiglu_half;
  const int64_t group = static_cast<int64_t>(blockIdx.x) * rg_per_block + rg;
  const int64_t row0 = group * kRows;

  uint8_t* wsm = smem + warp * L::kWarpBytes;
  float4* table = reinterpret_cast<float4*>(wsm + kStages * L::kStageBytes);
  float* partial = reinterpret_cast<float*>(smem + kWarps * L::kWarpBytes);

  const int64_t nb = a.cols / Ops::kBlockElems;
  const int64_t row_bytes = nb * kBb;
  // Rows past the end (last block) re-read the last row: no special case in the pipeline; their
  // sums are discarded.
  const uint8_t* rowp[kRows];
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    const int64_t r = half > 0 ? kernels::min64(group, half - 1) + i * half
                               : kernels::min64(row0 + i, a.rows - 1);
    rowp[i] = a.w + r * row_bytes;
  }

  const int64_t nchunks = ceil_div<int64_t>(nb, kNbc);
  const int64_t my_chunks = nchunks > ks ? ceil_div<int64_t>(nchunks - ks, a.ksplit) : 0;

  // Copies local chunk `ci` of both rows into stage buffer `buf`: the 16-byte aligned span that
  // covers the chunk. The span may start up to 15 bytes early (inside W, since W is 16-byte
  // aligned); the last piece reads only up to the chunk's end (zero-fill), never past W.
  auto issue = [&](int64_t ci, int buf) {
    const int64_t blk0 = (ks + ci * a.ksplit) * kNbc;
    const int64_t bytes = kernels::min64(kNbc, nb - blk0) * kBb;
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const uint8_t* start = rowp[i] + blk0 * kBb;
      const int lead = static_cast<int>(reinterpret_cast<uintptr_t>(start) & 15u);
      const uint8_t* base = start - lead;
      const int span = lead + static_cast<int>(bytes);
      uint8_t* dst = wsm + buf * L::kStageBytes + i * L::kRegionBytes;
      for (int o = lane * 16; o < span; o += 32 * 16) {
        kernels::cp_async_16(dst + o, base + o, min(16, span - o));
      }
    }
  };

  float acc[kRows];
#pragma unroll
  for (int i = 0; i < kRows; ++i) acc[i] = 0.0f;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < my_chunks) issue(s, s);
    kernels::cp_async_commit();
  }
  // Weights (and RMSNorm weights) only so far: the rest waits for the preceding kernel (PDL)
  // and forms x'.
  kernels::XPrefetch pre;
  if constexpr (kXSmem) pre = kernels::prefetch_x(a.x, a.cols);
  kernels::grid_dependency_wait();
  // The next kernel may launch once every CTA of this one is past its wait, not before: with the
  // trigger ahead of the wait, kernels launched up to five ahead (their CTAs resident and
  // waiting, 20 µs before they ended), and a small kernel's CTAs, placed wherever room was left,
  // sat up to four on one SM while most SMs held none, so its slowest CTA set its end. Measured
  // on the H200, SmolLM2-135M shape Q4_1 step: 548.8 / 547.7 µs → 519.4 / 521.9 µs
  // (docs/performance.md, round 17).
  kernels::grid_dependency_trigger();
  // The bias or residual of the row this thread stores, read now (kernels::row_addend).
  float add = 0.0f;
  if (half == 0 && static_cast<int>(threadIdx.x) < rg_per_block * kRows) {
    const int tt = static_cast<int>(threadIdx.x);
    const int64_t r =
        (static_cast<int64_t>(blockIdx.x) * rg_per_block + tt / kRows) * kRows + tt % kRows;
    if (r < a.rows) add = kernels::row_addend(a.y, r);
  }
  const float* xsrc = a.x.x;
  if constexpr (kXSmem) {
    float* xs = reinterpret_cast<float*>(smem + L::kSmemBytes);
    kernels::load_x_to_smem(a.x, a.cols, xs, xs + (a.cols + 3) / 4 * 4, pre);
    xsrc = xs;
  }

  const int piece = lane % Ops::kPieces;
  const int bsub = lane / Ops::kPieces;
  int tcol[Ops::kGroups];
#pragma unroll
  for (int g = 0; g < Ops::kGroups; ++g) tcol[g] = Ops::group_col(piece, g);

  for (int64_t ci = 0; ci < my_chunks; ++ci) {
    if (ci + kStages - 1 < my_chunks) issue(ci + kStages - 1, (ci + kStages - 1) % kStages);
    kernels::cp_async_commit();
    kernels::cp_async_wait<kStages - 1>();  // this lane's copies of chunk ci have landed
    __syncwarp();                           // ... and every other lane's

    const int buf = static_cast<int>(ci % kStages);
    const int64_t blk0 = (ks + ci * a.ksplit) * kNbc;
    const int nblk = static_cast<int>(kernels::min64(kNbc, nb - blk0));
    const uint8_t* region[kRows];
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const int lead = static_cast<int>(reinterpret_cast<uintptr_t>(rowp[i] + blk0 * kBb) & 15u);
      region[i] = wsm + buf * L::kStageBytes + i * L::kRegionBytes + lead;
    }

    if constexpr (Ops::kTable) {
      for (int e = lane; e < L::kTableEntries; e += 32) {
        const int i = e / (kNbc * 4);
        const int b = (e / 4) % kNbc;
        // Select the row's region without a run-time index into the register array.
        const uint8_t* rb = region[0];
#pragma unroll
        for (int k = 1; k < kRows; ++k) rb = i == k ? region[k] : rb;
        if (b < nblk) table[e] = Ops::table_entry(rb + b * kBb, e & 3);
      }
      __syncwarp();
    }

    const float* xc = xsrc + blk0 * Ops::kBlockElems;
#pragma unroll
    for (int st = 0; st < L::kSteps; ++st) {
      const int b = st * L::kBlocksPerStep + bsub;
      if (b < nblk) {
        const float* xb = xc + b * Ops::kBlockElems;
        float4 xg[Ops::kGroups];
#pragma unroll
        for (int g = 0; g < Ops::kGroups; ++g) {
          if constexpr (kXSmem) {
            xg[g] = *reinterpret_cast<const float4*>(xb + tcol[g]);
          } else {
            xg[g] = __ldg(reinterpret_cast<const float4*>(xb + tcol[g]));
          }
        }
#pragma unroll
        for (int i = 0; i < kRows; ++i) {
          float4 coef = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
          if constexpr (Ops::kTable) coef = table[(i * kNbc + b) * 4 + Ops::table_index(piece)];
          acc[i] += Ops::dot(region[i] + b * kBb, piece, xg, coef);
        }
      }
    }
    __syncwarp();  // all lanes are done with stage `buf` (and the table) before they are refilled
  }

#pragma unroll
  for (int i = 0; i < kRows; ++i) acc[i] = kernels::warp_sum(acc[i]);
  if (lane == 0) {
#pragma unroll
    for (int i = 0; i < kRows; ++i) partial[warp * kRows + i] = acc[i];
  }
  __syncthreads();

  const int t = static_cast<int>(threadIdx.x);
  if (half > 0) {
    if (t < rg_per_block) {
      const int64_t k = static_cast<int64_t>(blockIdx.x) * rg_per_block + t;
      if (k < half) {
        float g = 0.0f, u = 0.0f;
        for (int w = 0; w < a.ksplit; ++w) {
          g += partial[(t * a.ksplit + w) * kRows];
          u += partial[(t * a.ksplit + w) * kRows + 1];
        }
        a.y.y0[k] = kernels::swiglu_value(g, u);
      }
    }
    return;
  }
  if (t < rg_per_block * kRows) {
    const int g = t / kRows;
    const int i = t % kRows;
    const int64_t r = (static_cast<int64_t>(blockIdx.x) * rg_per_block + g) * kRows + i;
    if (r < a.rows) {
      float s = 0.0f;
      for (int k = 0; k < a.ksplit; ++k) s += partial[(g * a.ksplit + k) * kRows + i];
      kernels::store_row_added(a.y, r, s, add);
    }
  }
}

/// Fallback for shapes or pointers the staged kernel does not take: one warp per row, one element
/// per lane and step, exact element dequantization (slow, but any alignment and any cols).
template <WeightType T>
__global__ void __launch_bounds__(kFallbackWarps * 32) gemv_fallback_kernel(const GemvArgs a) {
  using Ops = QuantOps<T>;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kFallbackWarps + (threadIdx.x >> 5);
  if (r >= a.rows) return;
  const uint8_t* row = a.w + r * row_bytes(T, a.cols);
  float acc = 0.0f;
  for (int64_t c = lane; c < a.cols; c += 32) acc = fmaf(Ops::elem(row, c), a.x[c], acc);
  acc = kernels::warp_sum(acc);
  if (lane == 0) {
    if (a.bias != nullptr) acc += a.bias[r];
    if (a.residual != nullptr) acc += a.residual[r];
    a.y[r] = acc;
  }
}

void check_params(const GemvParams& p) {
  const WeightTraits tr = weight_traits(p.type);
  if (tr.name == nullptr) {
    throw usage_error("GEMV: unsupported weight type #" +
                      std::to_string(static_cast<uint32_t>(p.type)));
  }
  const bool presplit = p.x_split != nullptr;
  if (p.w == nullptr || (p.x == nullptr && !presplit) || p.y == nullptr) {
    throw runtime_error("GEMV: null device pointer (w, x and y are required)");
  }
  if (p.rows <= 0 || p.cols <= 0 || p.cols % tr.block_elems != 0) {
    throw runtime_error("GEMV: invalid shape " + std::to_string(p.rows) + "x" +
                        std::to_string(p.cols) + " for " + tr.name +
                        " (cols must be a positive "
                        "multiple of " +
                        std::to_string(tr.block_elems) + ")");
  }
  if (p.cols > (int64_t{1} << 30) || p.rows > (int64_t{1} << 30)) {
    throw runtime_error("GEMV: shape " + std::to_string(p.rows) + "x" + std::to_string(p.cols) +
                        " exceeds 2^30 in one dimension");
  }
  const std::vector<int> v = gemv_variants(p.type);
  if (p.variant != 0 && std::find(v.begin(), v.end(), p.variant) == v.end()) {
    throw runtime_error("GEMV: variant " + std::to_string(p.variant) + " is not available for " +
                        tr.name);
  }
  if (p.tiled) {
    if (!presplit) throw runtime_error("GEMV: tiled weights need a pre-split x (x_split)");
    if (p.variant != 0 && p.variant != kVariantTiled && p.variant != kVariantTiledMma &&
        p.variant != kVariantStreamTiled) {
      throw runtime_error(
          "GEMV: tiled weights are read by the tiled kernels (variants 5, 6, 7) only, not " +
          std::string(gemv_variant_name(p.variant)));
    }
    if (!quant::tiled_layout_supported(p.type, p.cols)) {
      throw runtime_error("GEMV: " + std::string(tr.name) + " rows of " + std::to_string(p.cols) +
                          " columns have no tiled layout");
    }
  } else if (p.variant == kVariantTiled || p.variant == kVariantTiledMma ||
             p.variant == kVariantStreamTiled) {
    throw runtime_error("GEMV: the " + std::string(gemv_variant_name(p.variant)) +
                        " kernel (variant " + std::to_string(p.variant) +
                        ") needs weights in the tiled layout (GemvParams::tiled)");
  }
  if (p.input == GemvInput::kSwiGlu && p.x2 == nullptr && !presplit) {
    throw runtime_error("GEMV: SwiGLU input needs x2 (up)");
  }
  if (p.input == GemvInput::kRmsNorm && !presplit && (p.norm_w == nullptr || !(p.eps >= 0.0f))) {
    throw runtime_error("GEMV: RMSNorm input needs norm_w and eps >= 0");
  }
  if (p.y1 != nullptr) {
    const int64_t end1 = p.y2 != nullptr ? p.y_end1 : p.rows;
    if (p.y_end0 <= 0 || p.y_end0 >= end1 || end1 > p.rows || (p.y2 != nullptr && end1 >= p.rows)) {
      throw runtime_error("GEMV: invalid output segments [0, " + std::to_string(p.y_end0) + ", " +
                          std::to_string(end1) + ", " + std::to_string(p.rows) + ")");
    }
  } else if (p.y2 != nullptr) {
    throw runtime_error("GEMV: y2 needs y1");
  }
  if (p.swiglu_out && (p.rows % 2 != 0 || p.bias != nullptr || p.residual != nullptr ||
                       p.y1 != nullptr || p.x_split != nullptr)) {
    throw runtime_error(
        "GEMV: a SwiGLU output needs an even row count and no bias, residual, segments or "
        "pre-split x");
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

/// True when the request uses a form the scalar fallback does not implement.
bool needs_fast(const GemvParams& p) {
  return p.input != GemvInput::kPlain || p.x_split != nullptr || p.y1 != nullptr || p.swiglu_out;
}

bool is_float_type(WeightType t) {
  return t == WeightType::kF32 || t == WeightType::kF16 || t == WeightType::kBF16;
}

/// Whether the automatic choice takes the mma kernel for a quantized GEMV of `bytes` weight
/// bytes and `cols` columns. From bench-kernels on the H200 (RESULT-2/3): the mma kernel is
/// ahead only on large matrices with short rows (FFN gate/up, LM head) for Q4_K/Q5_K (0.64-0.89×
/// the staged kernel's time) and on the LM head for Q4_0 (0.8×); elsewhere the staged kernel is
/// as fast or faster, and much faster on latency-bound sizes.
bool prefer_mma(WeightType t, int64_t bytes, int64_t cols) {
  if (cols > 8192) return false;
  switch (t) {
    case WeightType::kQ4_K:
    case WeightType::kQ5_K:
      return bytes >= (int64_t{48} << 20);
    case WeightType::kQ4_0:
      return bytes >= (int64_t{128} << 20);
    default:
      return false;
  }
}

/// Whether tiled weights of type t go to the stream-tiled kernel (variant 7) rather than the
/// tiled one (5) when no variant is asked for: the types it reads (Q4_0, Q4_1, Q8_0). Measured on
/// the H200 (docs/performance.md, round 16): 7B Q8_0 step 2,556 / 2,549 µs against 2,596 / 2,602
/// on the tiled kernel; Q4_0 1,839 / 1,836 against 1,905 / 1,900 on the stream kernel in GGUF
/// blocks.
/// Q6_K (round 27: 7B Q6_K step −6.6%, Q4_K_M −1.7%): only the stream-tiled kernel reads its
/// tiled layout.
bool stream_tiled_default(WeightType t) {
  return t == WeightType::kQ4_0 || t == WeightType::kQ4_1 || t == WeightType::kQ8_0 ||
         t == WeightType::kQ6_K;
}

/// Types whose tiled layout only the stream-tiled kernel reads (no tiled or tiled-mma kernel).
bool stream_tiled_only(WeightType t) { return t == WeightType::kQ6_K; }

/// Variant the automatic choice takes for `p` (before alignment checks).
int auto_variant(const GemvParams& p) {
  if (is_float_type(p.type)) {
    return gemv_impl::direct_supported(p.type, p.cols) ? kVariantDirect : kVariantStaged;
  }
  if (p.x_split != nullptr) return kVariantStream;  // choose() falls back to mma where needed
  const int64_t bytes = p.rows * row_bytes(p.type, p.cols);
  return prefer_mma(p.type, bytes, p.cols) && gemv_impl::mma_supported(p.type, p.cols)
             ? kVariantMma
             : kVariantStaged;
}

/// Whether the vectors `p` reads allow the vectorized kernels.
bool inputs_aligned(const GemvParams& p) {
  if (p.x_split != nullptr) return aligned16(p.x_split);
  return aligned16(p.x) && (p.x2 == nullptr || aligned16(p.x2)) &&
         (p.norm_w == nullptr || aligned16(p.norm_w));
}

struct Choice {
  GemvLaunchInfo info;
  gemv_impl::Plan plan;
  bool staged_x_smem = false;  ///< staged kernel: x' in shared memory (kXSmem)
};

/// Longest plain x (floats) the staged kernel copies into shared memory rather than reading it
/// from global memory in its inner loop: 48 KB of x'. Measured on the H200 (SmolLM2-135M shape,
/// Q4_1 step, o and down projections of 576 and 1,536 columns; trigger after the PDL wait in both
/// builds): 519.4 / 521.9 µs → 475.6 / 479.4 µs (docs/performance.md, round 17). Longer rows were
/// not measured and keep the global-memory form.
constexpr int64_t kStagedPlainXMax = 12288;

template <WeightType T>
Choice staged_choice(const GemvParams& p) {
  using Ops = QuantOps<T>;
  using L = Layout<T>;
  Choice c;
  GemvLaunchInfo& info = c.info;
  const int64_t groups = ceil_div<int64_t>(p.rows, kRows);
  const int64_t nchunks = ceil_div<int64_t>(p.cols / Ops::kBlockElems, Ops::kChunkBlocks);
  // Split the columns of a row group over more warps while the GPU would otherwise hold too few
  // warps (about 32 per SM keep enough bytes in flight) and every warp still gets a chunk.
  const int64_t target_warps = static_cast<int64_t>(gemv_impl::sm_count()) * 32;
  int ks = 1;
  while (ks < kWarps && groups * ks < target_warps && nchunks >= 2 * ks) ks *= 2;
  info.variant = kVariantStaged;
  info.kernel = "staged";
  info.staged = true;
  info.column_splits = ks;
  info.rows_per_warp = kRows;
  info.block = kThreads;
  info.grid = ceil_div<int64_t>(groups, kWarps / ks);
  info.smem_bytes = L::kSmemBytes;
  c.staged_x_smem = p.input != GemvInput::kPlain || p.cols <= kStagedPlainXMax;
  if (c.staged_x_smem) {  // x' in shared memory after the staging buffers
    info.smem_bytes += static_cast<int>((p.cols + 3) / 4 * 16 + 128);
    // Raises the kernel's dynamic shared-memory limit (once) when x' needs more than 48 KB.
    (void)gemv_impl::ctas_per_sm(reinterpret_cast<const void*>(&gemv_staged_kernel<T, true>),
                                 kThreads, info.smem_bytes);
  }
  info.tasks = info.grid;
  return c;
}

Choice choose(const GemvParams& p) {
  Choice c;
  const bool float_type = is_float_type(p.type);
  const bool aligned = aligned16(p.w) && inputs_aligned(p) && (!float_type || p.cols % 4 == 0);
  int v = p.variant != 0 ? p.variant : auto_variant(p);
  if (p.tiled && stream_tiled_only(p.type)) {
    // No fallback: the stream-tiled kernel is the only reader of this layout.
    if (!gemv_impl::stream_supported(p.type, p.w, p.rows, p.cols, gemv_impl::cc_major(), true) ||
        !aligned16(p.x_split)) {
      throw runtime_error("GEMV: tiled " + std::string(weight_traits(p.type).name) +
                          " weights are read by the stream-tiled kernel only, which needs sm_90 "
                          "and w, the matrix end and x_split 16-byte aligned (" +
                          std::to_string(p.rows) + "x" + std::to_string(p.cols) + ")");
    }
    v = kVariantStreamTiled;
  } else if (p.tiled) {
    if (p.cols / 32 >= gemv_impl::kTiledMaxTiles) {
      throw runtime_error("GEMV: the tiled kernel takes rows of fewer than " +
                          std::to_string(gemv_impl::kTiledMaxTiles * 32) + " columns, not " +
                          std::to_string(p.cols));
    }
    if (!gemv_impl::tiled_supported(p.type, p.w, p.cols) || !aligned16(p.x_split)) {
      throw runtime_error("GEMV: tiled weights need w and x_split 16-byte aligned (" +
                          std::string(weight_traits(p.type).name) + " " + std::to_string(p.rows) +
                          "x" + std::to_string(p.cols) + ")");
    }
    // The tiled-mma kernel only where asked for: it ran slower than the tiled kernel on every
    // 7B shape (docs/performance.md, round 14). Rows it cannot walk fall back to the tiled one.
    // The stream-tiled kernel where asked for or by default for its types, on sm_90 (bulk
    // copies); elsewhere the tiled one.
    v = p.variant == kVariantTiledMma && gemv_impl::tiled_mma_supported(p.type, p.w, p.cols)
            ? kVariantTiledMma
            : kVariantTiled;
    if ((p.variant == kVariantStreamTiled || (p.variant == 0 && stream_tiled_default(p.type))) &&
        gemv_impl::stream_supported(p.type, p.w, p.rows, p.cols, gemv_impl::cc_major(), true)) {
      v = kVariantStreamTiled;
    }
  } else if (p.x_split != nullptr) {
    // A pre-split x: the stream kernel where it applies (sm_90, aligned matrix end), else mma.
    const bool stream_ok =
        gemv_impl::stream_supported(p.type, p.w, p.rows, p.cols, gemv_impl::cc_major());
    v = (v == kVariantMma || !stream_ok) ? kVariantMma : kVariantStream;
  } else if (v == kVariantStream) {
    throw runtime_error("GEMV: the stream kernel (variant 4) needs a pre-split x (x_split)");
  }
  if (v == kVariantDirect && !gemv_impl::direct_supported(p.type, p.cols)) v = kVariantStaged;
  if (v == kVariantMma && !gemv_impl::mma_supported(p.type, p.cols)) v = kVariantStaged;
  if (p.x_split != nullptr && v != kVariantMma && v != kVariantStream && v != kVariantTiled &&
      v != kVariantTiledMma && v != kVariantStreamTiled) {
    throw runtime_error(
        "GEMV: a pre-split x needs the stream or mma kernel (quantized types, cols " +
        std::to_string(p.cols) + ")");
  }
  const bool staged_ok = !float_type || p.cols % 4 == 0;
  if (!aligned || (v == kVariantStaged && !staged_ok)) {
    if (needs_fast(p)) {
      throw runtime_error(
          "GEMV: fused input / output segments need 16-byte aligned w and x vectors and a shape "
          "the vectorized kernels take (" +
          std::string(weight_traits(p.type).name) + " " + std::to_string(p.rows) + "x" +
          std::to_string(p.cols) + ")");
    }
    c.info.kernel = "fallback";
    c.info.rows_per_warp = 1;
    c.info.block = kFallbackWarps * 32;
    c.info.grid = ceil_div<int64_t>(p.rows, kFallbackWarps);
    c.info.tasks = c.info.grid;
    return c;
  }
  if (v == kVariantStaged) {
    kernels::dispatch_weight_type(p.type, [&]<WeightType T>() { c = staged_choice<T>(p); });
    return c;
  }
  const int sms = gemv_impl::sm_count();
  if (v == kVariantDirect) {
    c.plan = gemv_impl::direct_plan(p.type, p.rows, p.cols, sms);
  } else if (v == kVariantStream || v == kVariantStreamTiled) {
    c.plan = gemv_impl::stream_plan(p.type, p.rows, p.cols, sms, v == kVariantStreamTiled);
  } else if (v == kVariantTiled) {
    c.plan = gemv_impl::tiled_plan(p.type, p.rows, p.cols, sms);
  } else if (v == kVariantTiledMma) {
    c.plan = gemv_impl::tiled_mma_plan(p.type, p.rows, p.cols, sms);
  } else {
    c.plan = gemv_impl::mma_plan(p.type, p.rows, p.cols, p.x_split != nullptr, sms);
  }
  if (p.swiglu_out && v != kVariantDirect) {
    throw runtime_error("GEMV: a SwiGLU output needs the direct or staged kernel, not " +
                        std::string(gemv_variant_name(v)));
  }
  c.info.variant = v;
  c.info.kernel = v == kVariantDirect        ? "direct"
                  : v == kVariantStream      ? "stream"
                  : v == kVariantTiled       ? "tiled"
                  : v == kVariantTiledMma    ? "tiled-mma"
                  : v == kVariantStreamTiled ? "stream-tiled"
                  : p.x_split != nullptr     ? "mma-presplit"
                                             : "mma";
  c.info.staged = true;
  c.info.column_splits = c.plan.ksplit;
  c.info.rows_per_warp = c.plan.rows_per_warp;
  c.info.grid = c.plan.grid;
  c.info.block = c.plan.block;
  c.info.smem_bytes = c.plan.smem;
  // The direct kernel's spread form deals row pairs (a stacked gate/up: gate and up rows k).
  c.info.tasks =
      v == kVariantDirect && c.plan.spread != 0 ? ceil_div<int64_t>(p.rows, 2) : c.plan.ntasks;
  c.info.chunk = c.plan.chunk;
  if (v == kVariantStream || v == kVariantStreamTiled) {
    // gemv_impl::Plan: ring_pairs equal to the CTA's warps is the whole-row ring.
    const bool ring = c.plan.ring_slots > 0;
    const bool split = ring && c.plan.ring_pairs != c.plan.block / 32;
    c.info.form = split ? "split" : ring ? "ring" : "per-warp";
    c.info.ring_slots = c.plan.ring_slots;
    c.info.ring_pairs = split ? c.plan.ring_pairs : 0;
    c.info.ring_ctas = ring ? c.plan.ring_ctas : 0;
  } else if (v == kVariantMma && p.x_split != nullptr) {
    c.info.form = "presplit";
  } else if (v == kVariantDirect && c.plan.spread != 0) {
    c.info.form = "spread";
  }
  return c;
}

gemv_impl::XSource x_source(const GemvParams& p) {
  gemv_impl::XSource s;
  s.x = p.x;
  s.x2 = p.x2;
  s.norm_w = p.norm_w;
  s.eps = p.eps;
  s.split = p.x_split;
  if (p.x_split != nullptr) {
    s.kind = gemv_impl::XKind::kPreSplit;
  } else if (p.input == GemvInput::kRmsNorm) {
    s.kind = gemv_impl::XKind::kRmsNorm;
  } else if (p.input == GemvInput::kSwiGlu) {
    s.kind = gemv_impl::XKind::kSwiGlu;
  } else {
    s.kind = gemv_impl::XKind::kPlain;
  }
  return s;
}

}  // namespace

namespace gemv_impl {

namespace {

/// Attribute kAttr of the current device, cached per thread for the device last asked about
/// (these run for every GEMV launch and plan).
template <cudaDeviceAttr kAttr>
int cached_device_attribute() {
  thread_local int cached_device = -1;
  thread_local int cached_value = 0;
  int device = 0;
  DB_CUDA_CHECK(cudaGetDevice(&device));
  if (device != cached_device) {
    DB_CUDA_CHECK(cudaDeviceGetAttribute(&cached_value, kAttr, device));
    cached_device = device;
  }
  return cached_value;
}

}  // namespace

int sm_count() { return cached_device_attribute<cudaDevAttrMultiProcessorCount>(); }

int cc_major() { return cached_device_attribute<cudaDevAttrComputeCapabilityMajor>(); }

int smem_optin() { return cached_device_attribute<cudaDevAttrMaxSharedMemoryPerBlockOptin>(); }

int smem_per_sm() { return cached_device_attribute<cudaDevAttrMaxSharedMemoryPerMultiprocessor>(); }

int smem_reserved_per_cta() {
  return cached_device_attribute<cudaDevAttrReservedSharedMemoryPerBlock>();
}

int ctas_per_sm(const void* kernel, int threads, int smem) {
  struct Entry {
    const void* kernel;
    int threads;
    int smem;
    int device;
    int ctas;
  };
  thread_local Entry cache[64] = {};
  thread_local int next = 0;
  thread_local const void* raised[64] = {};
  thread_local int raised_device[64] = {};
  thread_local int nraised = 0;
  int device = 0;
  DB_CUDA_CHECK(cudaGetDevice(&device));
  for (const Entry& e : cache) {
    if (e.kernel == kernel && e.threads == threads && e.smem == smem && e.device == device) {
      return e.ctas;
    }
  }
  bool done = false;
  for (int i = 0; i < nraised; ++i)
    done = done || (raised[i] == kernel && raised_device[i] == device);
  if (!done) {
    int max_optin = 0;
    DB_CUDA_CHECK(
        cudaDeviceGetAttribute(&max_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    DB_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, max_optin));
    if (nraised < 64) {
      raised[nraised] = kernel;
      raised_device[nraised] = device;
      ++nraised;
    }
  }
  int ctas = 0;
  DB_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, kernel, threads, smem));
  cache[next] = Entry{kernel, threads, smem, device, ctas};
  next = (next + 1) % 64;
  return ctas;
}

SplitPlan plan_column_split(int64_t rows, int64_t units, int batch, int64_t max_grid,
                            bool across_tasks) {
  constexpr int kSplitWarps = 8, kSplitRows = 2;
  SplitPlan p;
  double best = -1.0;
  for (int ks = 1; ks <= kSplitWarps; ks *= 2) {
    if (across_tasks && ks > 1 && units < ks) break;
    const int64_t tasks =
        ceil_div<int64_t>(rows, static_cast<int64_t>(kSplitWarps / ks) * kSplitRows);
    const int64_t grid = std::min(tasks, max_grid);
    const double per_cta = static_cast<double>(tasks) / static_cast<double>(grid);
    const double balance = per_cta / std::ceil(per_cta);
    const double fill = static_cast<double>(grid) / static_cast<double>(max_grid);
    const int64_t upw = ceil_div<int64_t>(units, ks);
    const double col_use = static_cast<double>(units) / static_cast<double>(upw * ks);
    // Row slots past the last row re-read it and discard the result.
    const double row_use =
        static_cast<double>(rows) / static_cast<double>(tasks * (kSplitWarps / ks) * kSplitRows);
    const double warp_units =
        across_tasks ? std::ceil(per_cta) * static_cast<double>(upw) : static_cast<double>(upw);
    const double depth = std::min(1.0, warp_units / batch + 0.25);
    // An empirical calibration: in a sweep with every split forced (H200, bench-kernels, F16
    // with PDL, the 7B and SmolLM2 shapes; docs/performance.md, round 8) 4 and 8 splits ran
    // slower than this score predicted. Every split above 1 ends its tasks at a named barrier and
    // adds partial sums through shared memory; why 4 and 8 lose more is not established. Without
    // the factor the 7B QKV GEMV (4608×3584) took 4 splits, 12.43 µs, where 2 run it in 11.34
    // µs; with it the pick is the fastest split, or within 1%, on all 14 shapes.
    const double sync = ks >= 4 ? 0.9 : 1.0;
    const double score = balance * col_use * row_use * depth * std::min(1.0, 0.2 + fill) * sync;
    if (score > best + 1e-9) {
      best = score;
      p.ksplit = ks;
      p.ntasks = tasks;
      p.grid = grid;
    }
  }
  return p;
}

void launch_with_attrs(const void* kernel, void** args, dim3 grid, dim3 block, size_t smem,
                       bool pdl, cudaStream_t stream) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = pdl ? 1 : 0;
  DB_CUDA_CHECK(cudaLaunchKernelExC(&cfg, kernel, args));
}

}  // namespace gemv_impl

std::vector<int> gemv_variants(WeightType type) {
  if (weight_traits(type).name == nullptr) return {};
  if (is_float_type(type)) return {kVariantStaged, kVariantDirect};
  // 4096 columns (128 tiles, a multiple of the tiled-mma kernel's 4-tile step): a shape every
  // type with that kernel takes, so this asks only whether the type has it.
  if (gemv_impl::tiled_mma_supported(type, nullptr, 4096)) {
    // The types with a tiled-mma kernel (Q4_0, Q4_1, Q8_0) are those the stream-tiled one reads.
    return {kVariantStaged, kVariantMma,      kVariantStream,
            kVariantTiled,  kVariantTiledMma, kVariantStreamTiled};
  }
  if (stream_tiled_only(type)) {
    return {kVariantStaged, kVariantMma, kVariantStream, kVariantStreamTiled};
  }
  if (quant::tiled_code_pieces(type) > 0) {
    return {kVariantStaged, kVariantMma, kVariantStream, kVariantTiled};
  }
  return {kVariantStaged, kVariantMma, kVariantStream};
}

void check_gemv_switches() {
  gemv_impl::check_stream_switches();
  (void)gemv_impl::direct_spread_request();
}

const char* gemv_variant_name(int variant) {
  switch (variant) {
    case kVariantStaged:
      return "staged";
    case kVariantDirect:
      return "direct";
    case kVariantMma:
      return "mma";
    case kVariantStream:
      return "stream";
    case kVariantTiled:
      return "tiled";
    case kVariantTiledMma:
      return "tiled-mma";
    case kVariantStreamTiled:
      return "stream-tiled";
    default:
      return "?";
  }
}

bool gemv_tiled_supported(WeightType type, int64_t cols) {
  return quant::tiled_layout_supported(type, cols) &&
         gemv_impl::tiled_supported(type, nullptr, cols);
}

bool gemv_stream_tiled_available(WeightType type) {
  return stream_tiled_default(type) && gemv_impl::cc_major() >= 9;
}

bool gemv_tiled_layout_supported(WeightType type, int64_t rows, int64_t cols) {
  if (!stream_tiled_only(type)) return gemv_tiled_supported(type, cols);
  // What the stream kernel checks at launch, for a 16-byte aligned start (tensors go up on
  // 256-byte boundaries; a null w counts as aligned): the matrix end 16-byte aligned, below 4 GiB,
  // its pipeline within the shared memory.
  return gemv_stream_tiled_available(type) &&
         gemv_impl::stream_supported(type, nullptr, rows, cols, gemv_impl::cc_major(), true);
}

size_t gemv_x_split_bytes(int64_t cols) {
  return static_cast<size_t>(gemv_impl::x_split_bytes(cols));
}

bool gemv_presplit_supported(const GemvParams& p) {
  if (is_float_type(p.type) || p.cols <= 0 || p.cols % 32 != 0) return false;
  if (p.tiled && stream_tiled_only(p.type)) {
    return gemv_impl::stream_supported(p.type, p.w, p.rows, p.cols, gemv_impl::cc_major(), true);
  }
  if (p.tiled) return gemv_impl::tiled_supported(p.type, p.w, p.cols);
  return gemv_impl::stream_supported(p.type, p.w, p.rows, p.cols, gemv_impl::cc_major()) ||
         gemv_impl::mma_supported(p.type, p.cols);
}

bool gemv_swiglu_out_supported(const GemvParams& p) {
  if (p.rows % 2 != 0 || p.bias != nullptr || p.residual != nullptr || p.y1 != nullptr ||
      p.x_split != nullptr) {
    return false;
  }
  GemvParams q = p;
  q.swiglu_out = false;
  try {
    const Choice c = choose(q);  // throws for forms no kernel takes (e.g. a fused input unaligned)
    return c.info.staged && (c.info.variant == kVariantDirect || c.info.variant == kVariantStaged);
  } catch (const Error&) {
    return false;
  }
}

GemvLaunchInfo gemv_launch_info(const GemvParams& p) {
  check_params(p);
  return choose(p).info;
}

std::string gemv_form_name(const GemvLaunchInfo& info) {
  // The variant's name, as gemv_per_step counts it ("mma", not the launch info's "mma-presplit").
  const std::string variant = gemv_variant_name(info.variant);
  const std::string kernel = info.variant == 0 || variant == "?" ? info.kernel : variant;
  const std::string form = info.form;
  // A register budget other than the default (2 CTAs per SM) is part of the form: the kernel
  // differs, so the step's form counts keep it apart and a result names it.
  const std::string budget =
      info.ring_ctas > 2 ? " (registers for " + std::to_string(info.ring_ctas) + " CTAs/SM)" : "";
  if (form == "ring") {
    return kernel + " ring " + std::to_string(info.block / 32) + "x" +
           std::to_string(info.ring_slots) + "x" + std::to_string(info.rows_per_warp) + budget;
  }
  if (form == "split") {
    return kernel + " split " + std::to_string(info.ring_pairs) + "x" +
           std::to_string(info.ring_slots) + budget;
  }
  return form.empty() ? kernel : kernel + " " + form;
}

int launch_gemv(const GemvParams& p, cudaStream_t stream) {
  GemvLaunchInfo info;
  return launch_gemv(p, stream, &info);
}

int launch_gemv(const GemvParams& p, cudaStream_t stream, GemvLaunchInfo* info) {
  check_params(p);
  const Choice c = choose(p);
  *info = c.info;
  const dim3 grid(static_cast<unsigned>(c.info.grid));
  if (c.info.variant == kVariantDirect || c.info.variant == kVariantMma ||
      c.info.variant == kVariantStream || c.info.variant == kVariantTiled ||
      c.info.variant == kVariantTiledMma || c.info.variant == kVariantStreamTiled) {
    gemv_impl::KernelArgs a;
    a.w = static_cast<const uint8_t*>(p.w);
    a.rows = p.rows;
    a.cols = p.cols;
    a.x = x_source(p);
    a.y.y0 = p.y;
    a.y.y1 = p.y1;
    a.y.y2 = p.y2;
    a.y.end0 = p.y1 != nullptr ? p.y_end0 : p.rows;
    a.y.end1 = p.y2 != nullptr ? p.y_end1 : p.rows;
    a.y.bias = p.bias;
    a.y.residual = p.residual;
    a.y.swiglu_half = p.swiglu_out ? p.rows / 2 : 0;
    a.pdl = p.pdl ? 1 : 0;
    a.probe = p.probe;
    if (c.info.variant == kVariantDirect) {
      gemv_impl::direct_launch(p.type, a, c.plan, stream);
    } else if (c.info.variant == kVariantStream || c.info.variant == kVariantStreamTiled) {
      gemv_impl::stream_launch(p.type, a, c.plan, stream, c.info.variant == kVariantStreamTiled);
    } else if (c.info.variant == kVariantTiled) {
      gemv_impl::tiled_launch(p.type, a, c.plan, stream);
    } else if (c.info.variant == kVariantTiledMma) {
      gemv_impl::tiled_mma_launch(p.type, a, c.plan, stream);
    } else {
      gemv_impl::mma_launch(p.type, a, c.plan, stream);
    }
    return c.info.variant;
  }
  if (c.info.staged) {  // staged kernel (variant 1)
    gemv_impl::KernelArgs a;
    a.w = static_cast<const uint8_t*>(p.w);
    a.rows = p.rows;
    a.cols = p.cols;
    a.x = x_source(p);
    a.y.y0 = p.y;
    a.y.y1 = p.y1;
    a.y.y2 = p.y2;
    a.y.end0 = p.y1 != nullptr ? p.y_end0 : p.rows;
    a.y.end1 = p.y2 != nullptr ? p.y_end1 : p.rows;
    a.y.bias = p.bias;
    a.y.residual = p.residual;
    a.y.swiglu_half = p.swiglu_out ? p.rows / 2 : 0;
    a.ksplit = c.info.column_splits;
    void* params[] = {&a};
    kernels::dispatch_weight_type(p.type, [&]<WeightType T>() {
      const void* kernel = c.staged_x_smem
                               ? reinterpret_cast<const void*>(&gemv_staged_kernel<T, true>)
                               : reinterpret_cast<const void*>(&gemv_staged_kernel<T, false>);
      gemv_impl::launch_with_attrs(kernel, params, grid, dim3(static_cast<unsigned>(c.info.block)),
                                   static_cast<size_t>(c.info.smem_bytes), p.pdl, stream);
    });
    return c.info.variant;
  }
  const GemvArgs args{static_cast<const uint8_t*>(p.w),
                      p.x,
                      p.y,
                      p.bias,
                      p.residual,
                      p.rows,
                      p.cols,
                      c.info.column_splits};
  kernels::dispatch_weight_type(p.type, [&]<WeightType T>() {
    gemv_fallback_kernel<T><<<grid, c.info.block, 0, stream>>>(args);
  });
  DB_CUDA_CHECK_LAUNCH();
  return 0;
}

void launch_gemv_prepare_x(GemvInput input, const float* x, const float* x2, const float* norm_w,
                           float eps, int64_t cols, void* split, bool pdl, cudaStream_t stream,
                           bool trigger_after_wait) {
  if (x == nullptr || split == nullptr || (input == GemvInput::kSwiGlu && x2 == nullptr) ||
      (input == GemvInput::kRmsNorm && norm_w == nullptr)) {
    throw runtime_error("GEMV prepare_x: null device pointer");
  }
  if (cols <= 0 || cols % 32 != 0 || cols > (int64_t{1} << 30) || !aligned16(x) ||
      !aligned16(split) || (x2 != nullptr && !aligned16(x2)) ||
      (norm_w != nullptr && !aligned16(norm_w)) || !(eps >= 0.0f)) {
    throw runtime_error("GEMV prepare_x: cols " + std::to_string(cols) +
                        " must be a positive multiple of 32, pointers 16-byte aligned, eps >= 0");
  }
  GemvParams p;
  p.x = x;
  p.x2 = x2;
  p.norm_w = norm_w;
  p.eps = eps;
  p.input = input;
  gemv_impl::prepare_x_launch(x_source(p), cols, split, pdl ? 1 : 0, stream,
                              trigger_after_wait ? 1 : 0);
}

}  // namespace decodebench::cuda
