// GEMV for the float weight types (F32, F16, BF16): "direct" kernel.
//
// Weights are streamed straight into registers with 16-byte non-coherent loads that skip L1
// (ld.global.nc.L1::no_allocate), kU independent loads per row and lane in flight before the
// first use, kR = 2 rows per warp sharing each x value. x' (x, RMSNorm(x) or SwiGLU(gate, up)) is
// formed once per CTA in shared memory. The grid is persistent (at most what fits on the GPU at
// once) and each CTA walks its row groups ("tasks"); the warps of a CTA split the columns of a
// row group (ksplit) and their partial sums are added in a fixed order, so results are
// deterministic for a given shape. In the spread form (KernelArgs::spread) the grid fills every CTA
// slot and the row pairs are dealt across the whole grid's row groups, group g = rg · grid + CTA
// taking pairs g, g + groups, ...: every SM then holds about the same bytes, where row groups of
// 16 rows per CTA leave some SMs with one CTA and others with two (the 7B down projection's 224
// tasks in 264 slots). Each row's sum is formed as in the default form, so outputs are equal bit
// for bit. A long plain x' is brought in by bulk copies in pieces, so the
// first batches need not wait for all of it. Weight loads of the first task are issued before the
// CTA waits on the preceding kernel (programmatic dependent launch) and before x' is formed. With a
// SwiGLU output (stacked [Wgate; Wup]) a warp's two rows are gate row k and up row k, and it
// stores silu(gate)·up: the down projection then reads a plain x.
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "cuda/check.hpp"
#include "cuda/kernels/common.cuh"
#include "cuda/kernels/gemv_device.cuh"
#include "cuda/kernels/gemv_impl.cuh"

namespace decodebench::cuda::gemv_impl {
namespace {

using kernels::ceil_div;

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kR = 2;  ///< rows per warp
constexpr int kU = 4;  ///< 16-byte loads per row and lane in flight

/// Per-type 16-byte vector: kE elements; dot(w, x) adds the products to acc in element order.
template <WeightType T>
struct FloatVec;

template <>
struct FloatVec<WeightType::kF32> {
  static constexpr int kE = 4;
  __device__ static float dot(uint4 w, const float* x, float acc) {
    const float4 a = *reinterpret_cast<const float4*>(x);
    acc = fmaf(__uint_as_float(w.x), a.x, acc);
    acc = fmaf(__uint_as_float(w.y), a.y, acc);
    acc = fmaf(__uint_as_float(w.z), a.z, acc);
    return fmaf(__uint_as_float(w.w), a.w, acc);
  }
};

__device__ __forceinline__ float2 half2_bits_to_float2(uint32_t u) {
  return __half22float2(*reinterpret_cast<const __half2*>(&u));
}

template <>
struct FloatVec<WeightType::kF16> {
  static constexpr int kE = 8;
  __device__ static float dot(uint4 w, const float* x, float acc) {
    const float4 a = *reinterpret_cast<const float4*>(x);
    const float4 b = *reinterpret_cast<const float4*>(x + 4);
    const float2 w0 = half2_bits_to_float2(w.x);
    const float2 w1 = half2_bits_to_float2(w.y);
    const float2 w2 = half2_bits_to_float2(w.z);
    const float2 w3 = half2_bits_to_float2(w.w);
    acc = fmaf(w0.x, a.x, acc);
    acc = fmaf(w0.y, a.y, acc);
    acc = fmaf(w1.x, a.z, acc);
    acc = fmaf(w1.y, a.w, acc);
    acc = fmaf(w2.x, b.x, acc);
    acc = fmaf(w2.y, b.y, acc);
    acc = fmaf(w3.x, b.z, acc);
    return fmaf(w3.y, b.w, acc);
  }
};

template <>
struct FloatVec<WeightType::kBF16> {
  static constexpr int kE = 8;
  __device__ static float lo(uint32_t u) { return __uint_as_float(u << 16); }
  __device__ static float hi(uint32_t u) { return __uint_as_float(u & 0xFFFF0000u); }
  __device__ static float dot(uint4 w, const float* x, float acc) {
    const float4 a = *reinterpret_cast<const float4*>(x);
    const float4 b = *reinterpret_cast<const float4*>(x + 4);
    acc = fmaf(lo(w.x), a.x, acc);
    acc = fmaf(hi(w.x), a.y, acc);
    acc = fmaf(lo(w.y), a.z, acc);
    acc = fmaf(hi(w.y), a.w, acc);
    acc = fmaf(lo(w.z), b.x, acc);
    acc = fmaf(hi(w.z), b.y, acc);
    acc = fmaf(lo(w.w), b.z, acc);
    return fmaf(hi(w.w), b.w, acc);
  }
};

/// A long plain x' (more than 16 floats per thread: the down projection's 18,944 columns) is
/// copied into shared memory in kXChunks pieces by the bulk-copy engine (sm_90, as the stream
/// kernel's weights), one mbarrier each, and a warp waits only for the pieces its next batch
/// reads: the copy overlaps the weight stream instead of preceding it. Measured on the H200 (7B
/// F16 down, 3584×18944, with PDL): 35.6 → 34.6 µs. A kernel of its own (template argument):
/// with the branch compiled into the one kernel, the SmolLM2 F16 step (which never takes it) ran
/// 2,219–2,231 tokens/s in six runs against 2,277–2,305 for builds whose short-input kernel is
/// unchanged (one session; docs/performance.md, round 8).
constexpr int kXChunks = 8;

/// Columns above which x' is long: more than 16 floats per thread (4,096).
constexpr int64_t kLongCols = int64_t{kernels::XPrefetch::kRegs} * 4 * kThreads;

/// Whether a launch takes the bulk-copy form: a long plain x'.
bool bulk_x(const KernelArgs& a) { return a.x.kind == XKind::kPlain && a.cols > kLongCols; }

/// Shared memory: x' (cols floats, rounded up to 4), 32 floats of reduction scratch, partial sums
/// [2][kWarps][kR], then kXChunks mbarriers (64 bytes, reserved by every launch: one layout for
/// both kernel forms).
constexpr int64_t smem_bytes(int64_t cols) {
  return (cols + 3) / 4 * 16 + 32 * 4 + 2 * kWarps * kR * 4 + kXChunks * 8;
}

template <WeightType T, bool kBulkX>
__global__ void __launch_bounds__(kThreads, 2) gemv_direct_kernel(const KernelArgs a) {
  using V = FloatVec<T>;
  constexpr int kE = V::kE;
  constexpr int kEB = 16 / kE;  // bytes per element
  extern __shared__ __align__(16) float smem[];
  float* xs = smem;
  float* red = smem + (a.cols + 3) / 4 * 4;
  float* partial = red + 32;
  uint64_t* xbar = reinterpret_cast<uint64_t*>(partial + 2 * kWarps * kR);

  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int ks = warp % a.ksplit;
  const int rg = warp / a.ksplit;
  const int rgs = kWarps / a.ksplit;
  const int64_t row_bytes = a.cols * kEB;
  const int64_t units = ceil_div<int64_t>(a.cols, 32 * kE);  // 512-byte column units of a row
  const int64_t upw = units > ks ? ceil_div<int64_t>(units - ks, a.ksplit) : 0;

  // Loads of one batch: kU units of this warp's columns for kR rows.
  const auto load_batch = [&](const uint8_t* const* rp, int64_t j0, uint4(&wv)[kR][kU]) {
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int64_t col = (ks + (j0 + u) * a.ksplit) * (32 * kE) + lane * kE;
      const bool ok = j0 + u < upw && col < a.cols && a.probe != 2;
#pragma unroll
      for (int i = 0; i < kR; ++i) {
        wv[i][u] = ok ? kernels::ldg_stream(rp[i] + col * kEB) : make_uint4(0u, 0u, 0u, 0u);
      }
    }
  };
  // SwiGLU output (YSink::swiglu_half): pair k holds rows k and k + half (gate and up); else
  // rows 2k and 2k + 1.
  const int64_t half = a.y.swiglu_half;
  const auto row_ptrs = [&](int64_t pair, const uint8_t** rp) {
    if (half > 0) {
      const int64_t k = kernels::min64(pair, half - 1);
      rp[0] = a.w + k * row_bytes;
      rp[1] = a.w + (k + half) * row_bytes;
      return;
    }
    const int64_t row0 = pair * kR;
#pragma unroll
    for (int i = 0; i < kR; ++i) rp[i] = a.w + kernels::min64(row0 + i, a.rows - 1) * row_bytes;
  };
  // This warp's row group walks pairs pair, pair + stride, ... below pair_end. The default form:
  // CTA b's tasks b, b + grid, ..., task t holding pairs t · rgs .. t · rgs + rgs − 1 (past the
  // last row, pairs re-read it and are discarded). The spread form: group rg · grid + b of the
  // grid's, pairs below the last.
  const int64_t stride = static_cast<int64_t>(gridDim.x) * rgs;
  const int64_t pair_end =
      a.spread != 0 ? (half > 0 ? half : ceil_div<int64_t>(a.rows, kR)) : a.ntasks * rgs;
  int64_t pair = a.spread != 0 ? static_cast<int64_t>(rg) * gridDim.x + blockIdx.x
                               : static_cast<int64_t>(blockIdx.x) * rgs + rg;

  // The warp walks a flat sequence of batches (pair, j0); the batch after the current one —
  // possibly the first of the next pair — is always in flight while the current one is used.
  // The very first batch does not depend on earlier kernels: it is issued before the PDL wait.
  uint4 wv[kR][kU];
  const uint8_t* rp[kR];
  int64_t j0 = 0;
  if (pair < pair_end) {
    row_ptrs(pair, rp);
    if (upw > 0) load_batch(rp, 0, wv);
  }
  const kernels::XPrefetch pre = kernels::prefetch_x(a.x, a.cols);
  // Long plain x' (bulk_x): bulk copies in kXChunks pieces, each the columns of whole 512-byte
  // units.
  const int64_t xchunk_cols = ceil_div<int64_t>(units, kXChunks) * (32 * kE);
  if constexpr (kBulkX) {
    if (threadIdx.x == 0) {
      for (int c = 0; c < kXChunks; ++c) kernels::mbar_init(&xbar[c], 1);
      kernels::mbar_init_fence();
    }
    __syncthreads();
  }
  kernels::grid_dependency_trigger();
  kernels::grid_dependency_wait();
  if constexpr (kBulkX) {
    if (threadIdx.x == 0) {
      for (int c = 0; c < kXChunks; ++c) {
        const int64_t c0 = kernels::min64(c * xchunk_cols, a.cols);
        const uint32_t bytes = static_cast<uint32_t>(kernels::min64(xchunk_cols, a.cols - c0) * 4);
        kernels::mbar_arrive_expect_tx(&xbar[c], bytes);
        if (bytes > 0) kernels::bulk_copy(xs + c0, a.x.x + c0, bytes, &xbar[c]);
      }
    }
  } else {
    kernels::load_x_to_smem<true>(a.x, a.cols, xs, red, pre);
  }
  int xready = 0;  // kBulkX: x' pieces this warp has seen complete

  float acc[kR];
#pragma unroll
  for (int i = 0; i < kR; ++i) acc[i] = 0.0f;
  int parity = 0;
  while (pair < pair_end) {
    int64_t next_pair = pair;
    int64_t next_j0 = j0 + kU;
    if (next_j0 >= upw) {
      next_pair = pair + stride;
      next_j0 = 0;
    }
    uint4 nv[kR][kU];
    const uint8_t* nrp[kR];
#pragma unroll
    for (int i = 0; i < kR; ++i) nrp[i] = rp[i];
    if (next_pair < pair_end && upw > 0) {
      if (next_pair != pair) row_ptrs(next_pair, nrp);
      load_batch(nrp, next_j0, nv);
    }
    if constexpr (kBulkX) {
      if (xready < kXChunks && j0 < upw) {
        // Columns this batch reads: up to unit ks + (j0 + kU − 1)·ksplit.
        const int64_t last = kernels::min64(ks + (j0 + kU - 1) * a.ksplit, units - 1);
        const int need = static_cast<int>((last * (32 * kE)) / xchunk_cols) + 1;
        while (xready < need) kernels::mbar_wait(&xbar[xready++], 0);
      }
    }
    if (j0 < upw && a.probe != 1) {
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int64_t col = (ks + (j0 + u) * a.ksplit) * (32 * kE) + lane * kE;
        if (j0 + u < upw && col < a.cols) {
#pragma unroll
          for (int i = 0; i < kR; ++i) acc[i] = V::dot(wv[i][u], xs + col, acc[i]);
        }
      }
    }
    if (next_pair != pair) {  // the pair is complete: reduce and store its rows
#pragma unroll
      for (int i = 0; i < kR; ++i) acc[i] = kernels::warp_sum(acc[i]);
      const int64_t row0 = pair * kR;
      const int64_t k = pair;  // SwiGLU output: the pair's index
      if (a.ksplit == 1) {
        if (half > 0) {
          if (lane == 0 && k < half) a.y.y0[k] = kernels::swiglu_value(acc[0], acc[1]);
        } else if (lane < kR && row0 + lane < a.rows) {
          kernels::store_row(a.y, row0 + lane, lane == 0 ? acc[0] : acc[1]);
        }
      } else {
        float* pb = partial + parity * kWarps * kR;
        if (lane == 0) {
#pragma unroll
          for (int i = 0; i < kR; ++i) pb[warp * kR + i] = acc[i];
        }
        kernels::named_barrier(1 + rg, a.ksplit * 32);
        if (half > 0) {
          if (ks == 0 && lane == 0 && k < half) {
            float g = 0.0f, u = 0.0f;
            for (int w = 0; w < a.ksplit; ++w) {
              g += pb[(rg * a.ksplit + w) * kR];
              u += pb[(rg * a.ksplit + w) * kR + 1];
            }
            a.y.y0[k] = kernels::swiglu_value(g, u);
          }
        } else if (ks == 0 && lane < kR && row0 + lane < a.rows) {
          float s = 0.0f;
          for (int w = 0; w < a.ksplit; ++w) s += pb[(rg * a.ksplit + w) * kR + lane];
          kernels::store_row(a.y, row0 + lane, s);
        }
      }
#pragma unroll
      for (int i = 0; i < kR; ++i) acc[i] = 0.0f;
      parity ^= 1;
    }
    pair = next_pair;
    j0 = next_j0;
#pragma unroll
    for (int i = 0; i < kR; ++i) rp[i] = nrp[i];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
#pragma unroll
      for (int i = 0; i < kR; ++i) wv[i][u] = nv[i][u];
    }
  }
}
static_assert(kR == 2, "store uses lane ? acc[1] : acc[0]");

template <WeightType T>
const void* kernel_for(bool bulk) {
  return bulk ? reinterpret_cast<const void*>(&gemv_direct_kernel<T, true>)
              : reinterpret_cast<const void*>(&gemv_direct_kernel<T, false>);
}

/// The direct kernel for `t`, in its bulk-copy form for a long plain x' (`bulk`).
const void* direct_kernel(WeightType t, bool bulk = false) {
  switch (t) {
    case WeightType::kF32:
      return kernel_for<WeightType::kF32>(bulk);
    case WeightType::kF16:
      return kernel_for<WeightType::kF16>(bulk);
    case WeightType::kBF16:
      return kernel_for<WeightType::kBF16>(bulk);
    default:
      return nullptr;
  }
}

int elems_per_vec(WeightType t) { return t == WeightType::kF32 ? 4 : 8; }

/// Which matrices take the spread form by default (docs/performance.md, round 56).
constexpr DirectSpread kDirectSpreadDefault = DirectSpread::kNone;

}  // namespace

DirectSpread direct_spread_request() {
  const char* e = std::getenv("DECODEBENCH_GEMV_DIRECT_SPREAD");
  if (e == nullptr || *e == '\0') return kDirectSpreadDefault;
  const std::string v(e);
  if (v == "0") return DirectSpread::kNone;
  if (v == "long") return DirectSpread::kLong;
  if (v == "1") return DirectSpread::kAll;
  throw usage_error("DECODEBENCH_GEMV_DIRECT_SPREAD: '" + v +
                    "' is neither 0 (each CTA's own row groups: the default), long (the row "
                    "pairs of rows over 4,096 columns dealt across every CTA slot of the GPU) "
                    "nor 1 (every matrix's); unset or empty: 0");
}

bool direct_supported(WeightType t, int64_t cols) {
  if (direct_kernel(t) == nullptr) return false;
  return cols % elems_per_vec(t) == 0 && smem_bytes(cols) <= 200 * 1024;
}

Plan direct_plan(WeightType t, int64_t rows, int64_t cols, int sms) {
  Plan p;
  p.block = kThreads;
  p.smem = static_cast<int>(smem_bytes(cols));
  p.rows_per_warp = kR;
  // Both forms of the kernel (the call also raises each one's shared-memory limit); their
  // register counts differ a little, so the smaller count of resident CTAs sizes the grid.
  const int ctas = std::max(1, std::min(ctas_per_sm(direct_kernel(t), kThreads, p.smem),
                                        ctas_per_sm(direct_kernel(t, true), kThreads, p.smem)));
  const int64_t max_grid = static_cast<int64_t>(sms) * ctas;
  const int64_t units = ceil_div<int64_t>(cols, 32 * elems_per_vec(t));
  const SplitPlan sp = plan_column_split(rows, units, kU, max_grid, false);
  p.ksplit = sp.ksplit;
  p.ntasks = sp.ntasks;
  p.grid = sp.grid;
  const DirectSpread spread = direct_spread_request();
  if (spread == DirectSpread::kAll || (spread == DirectSpread::kLong && cols > kLongCols)) {
    // Every CTA slot, as long as each CTA gets a pair (SwiGLU: a pair is a gate and an up row).
    p.spread = 1;
    p.grid = std::min(max_grid, ceil_div<int64_t>(rows, kR));
    // The spread form walks row pairs and reads no task count; 0 leaves a kernel that ignored
    // `spread` nothing to do, so a test that compares the forms would see it.
    p.ntasks = 0;
  }
  return p;
}

void direct_launch(WeightType t, const KernelArgs& a, const Plan& p, cudaStream_t stream) {
  KernelArgs args = a;
  args.ksplit = p.ksplit;
  args.ntasks = p.ntasks;
  args.spread = p.spread;
  void* params[] = {&args};
  launch_with_attrs(direct_kernel(t, bulk_x(a)), params, dim3(static_cast<unsigned>(p.grid)),
                    dim3(static_cast<unsigned>(p.block)), static_cast<size_t>(p.smem), a.pdl != 0,
                    stream);
}

}  // namespace decodebench::cuda::gemv_impl
