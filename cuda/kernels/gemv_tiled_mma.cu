// GEMV for quantized weights in the tiled layout on the int8 tensor cores, on a pre-split x':
// "tiled-mma" kernel.
//
// Why: the tiled kernel (gemv_tiled.cu) streams the 4-bit types at 80% of the read bandwidth
// with its math skipped but about 60% with it: each lane multiplied its 2 rows' codes with the
// three 7-bit digits of its own x' tile by dp4a (48 of a pass's ~125 instructions; two digits
// since round 21) and held that tile in 24+ registers (docs/performance.md, rounds 9 and 11). Here
// one mma.m16n8k32 does the digit products of 16 rows × 8 codes × 8 digit columns and x' is shared
// by 16 rows instead of 2.
//
// Outcome (round 14, H200): slower than the tiled kernel on every 7B shape, so only run when
// forced (GemvParams::variant = 6; bench-kernels times it). With its loads skipped it took longer
// than the tiled kernel's loads alone (down, Q4_0: 14.3 µs against 12.3): over 80% of the MMAs'
// products are with zeros. Its own loads reached less (58% against 67% of the read bandwidth),
// and 16-row tasks leave the 18,944-row gate/up GEMV too few tasks for 2 CTAs on every SM
// (docs/performance.md, round 14).
//
// Mapping. A warp owns 16 rows (a task) and walks them in steps of 4 tiles (128 columns): lane
// (g = lane / 4, t = lane % 4) loads tile 4s + t of rows g and g + 8 straight into registers
// (16-byte loads, the quad reading 64 contiguous bytes of a row) with its scales. An MMA's k range
// belongs to the lanes t that supply it (A fragment: k = 4t..4t+3 and 16+4t..16+4t+3), so lane
// t's codes of word q (columns 4q..4q+3 of its tile, and 16+4q.. from the high nibbles or the
// second 16-byte piece) form its part of A, and B column n holds digit n % 2 of tile n / 2 on
// that tile's k range and zero elsewhere: the result columns 2t, 2t+1 of lane t are its own
// tile's digit-0 and digit-1 sums for rows g and g + 8. A second MMA per word does digit 2
// (columns 2t, the odd ones zero). Four words complete the tile's exact integer dot products
// (the code offset enters as the accumulator's start value, −offset · digit sum), which combine
// with the tile's scale as the dp4a kernels did with three digits (gemv_digits.cuh:
// digits_value), so each tile's value keeps a residue of at most 2^-20 of its largest |x'|, where
// the dp4a kernels' two digits leave up to 2^-13 (docs/performance.md, round 21).
//
// Work distribution, batches across task boundaries, the column split over a CTA's warps
// (ksplit) and the fixed-order reduction follow the tiled kernel: results are deterministic for a
// shape.
#include <algorithm>

#include "core/error.hpp"
#include "core/quant/tiled_layout.hpp"
#include "cuda/check.hpp"
#include "cuda/kernels/common.cuh"
#include "cuda/kernels/dequant.cuh"
#include "cuda/kernels/gemv_device.cuh"
#include "cuda/kernels/gemv_digits.cuh"
#include "cuda/kernels/gemv_impl.cuh"

namespace decodebench::cuda::gemv_impl {
namespace {

using kernels::ceil_div;

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kRows = 16;      ///< rows per task: one m16 MMA tile
constexpr int kStepTiles = 4;  ///< tiles per step: lane (g, t) takes tile 4s + t
constexpr int kSmemBytes = 2 * kWarps * kRows * 4;

/// Per type: kP 16-byte code pieces per tile, kScaleBytes per tile, kOffset the code bias
/// (Q4_0: codes 0..15 stand for −8..7), kSignedA (Q8_0 codes are s8), kMin (Q4_1: d and min),
/// kU items (steps) per batch of loads, two batches in registers.
template <WeightType T>
struct MmaOps;
template <>
struct MmaOps<WeightType::kQ4_0> {
  static constexpr int kP = 1, kScaleBytes = 2, kOffset = 8, kU = 3;
  static constexpr bool kSignedA = false, kMin = false;
};
template <>
struct MmaOps<WeightType::kQ4_1> {
  static constexpr int kP = 1, kScaleBytes = 4, kOffset = 0, kU = 3;
  static constexpr bool kSignedA = false, kMin = true;
};
template <>
struct MmaOps<WeightType::kQ8_0> {
  static constexpr int kP = 2, kScaleBytes = 2, kOffset = 0, kU = 2;
  static constexpr bool kSignedA = true, kMin = false;
};

/// D = A·B + C for one m16n8k32 tile (PTX ISA, "Matrix Fragments for mma.m16n8k32"): thread
/// (g, t) holds A rows g and g+8 at k = 4t..4t+3 (a0, a1) and 16+4t.. (a2, a3), B column g at
/// the same k (b0, b1), C/D rows g, g+8 × columns 2t, 2t+1.
template <bool kSignedA>
__device__ __forceinline__ void mma_k32(int (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                        uint32_t a3, uint32_t b0, uint32_t b1) {
  if constexpr (kSignedA) {
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
}

template <int q>
__device__ __forceinline__ uint32_t word(const uint4& v) {
  if constexpr (q == 0) return v.x;
  if constexpr (q == 1) return v.y;
  if constexpr (q == 2) return v.z;
  return v.w;
}

__device__ __forceinline__ uint32_t ldg_u16(const void* p) {
  unsigned short v;
  asm volatile("ld.global.nc.L1::no_allocate.u16 %0, [%1];\n" : "=h"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ uint32_t ldg_u32(const void* p) {
  uint32_t v;
  asm volatile("ld.global.nc.L1::no_allocate.u32 %0, [%1];\n" : "=r"(v) : "l"(p));
  return v;
}
/// x' (written by an earlier kernel, read-only here, shared by every warp: L1-cached). CUDA 13's
/// __ldg is volatile asm, so these loads stay after the PDL wait (also volatile asm).
__device__ __forceinline__ uint4 ldg_x16(const int8_t* p) {
  return __ldg(reinterpret_cast<const uint4*>(p));
}
__device__ __forceinline__ int ldg_x4(const int8_t* p) {
  return __ldg(reinterpret_cast<const int*>(p));
}
/// ldg_x16 where p holds, zeros elsewhere (built in registers: a select between two uint4
/// values would select between their addresses and put both in local memory).
__device__ __forceinline__ uint4 ldg_x16_if(bool p, const int8_t* a) {
  uint4 v = make_uint4(0u, 0u, 0u, 0u);
  if (p) v = ldg_x16(a);
  return v;
}
__device__ __forceinline__ float half_bits(uint32_t u) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(u & 0xFFFFu)));
}

/// The exact digit sums of the lane's tile for rows g and g+8 (c: digits 0, 1; e: digit 2 in
/// e[0], e[2]) from the codes of both rows and the B fragments of its step.
template <WeightType T>
__device__ __forceinline__ void tile_mma(const uint4 (&w0)[MmaOps<T>::kP],
                                         const uint4 (&w1)[MmaOps<T>::kP], const uint4& h0,
                                         const uint4& h1, const uint4& e0, const uint4& e1,
                                         int (&c)[4], int (&e)[4]) {
  using Ops = MmaOps<T>;
  const auto step = [&]<int q>() {
    uint32_t a0, a1, a2, a3;
    if constexpr (Ops::kP == 1) {  // 4-bit: low nibbles columns 4q.., high nibbles 16+4q..
      const uint32_t x = word<q>(w0[0]), y = word<q>(w1[0]);
      a0 = x & kLow4;
      a1 = y & kLow4;
      a2 = (x >> 4) & kLow4;
      a3 = (y >> 4) & kLow4;
    } else {  // Q8_0: piece 0 columns 0-15, piece 1 columns 16-31
      a0 = word<q>(w0[0]);
      a1 = word<q>(w1[0]);
      a2 = word<q>(w0[1]);
      a3 = word<q>(w1[1]);
    }
    mma_k32<Ops::kSignedA>(c, a0, a1, a2, a3, word<q>(h0), word<q>(h1));
    mma_k32<Ops::kSignedA>(e, a0, a1, a2, a3, word<q>(e0), word<q>(e1));
  };
  step.template operator()<0>();
  step.template operator()<1>();
  step.template operator()<2>();
  step.template operator()<3>();
}

template <WeightType T>
__global__ void __launch_bounds__(kThreads, 2) gemv_tiled_mma_kernel(const KernelArgs a) {
  using Ops = MmaOps<T>;
  constexpr int kP = Ops::kP;
  constexpr int kU = Ops::kU;
  constexpr int kTB = 16 * kP + Ops::kScaleBytes;  // bytes per tile
  extern __shared__ float partial[];               // [2][kWarps][kRows] column-split partials

  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int g = lane >> 2, t = lane & 3;
  const int ks = warp % a.ksplit;
  const int rg = warp / a.ksplit;
  const int rgs = kWarps / a.ksplit;
  const int nt = static_cast<int>(a.cols / 32);  // tiles per row
  const int64_t row_bytes = decodebench::row_bytes(T, a.cols);
  const int groups = ceil_div(nt, 32);
  const int n_last = nt - (groups - 1) * 32;  // tiles of the row's last group
  const int steps = nt / kStepTiles;
  // Steps of a task for this warp (>= 1: the planner keeps ksplit <= steps).
  const int upw = steps > ks ? ceil_div(steps - ks, a.ksplit) : 0;
  const int64_t my_tasks =
      blockIdx.x < a.ntasks ? ceil_div<int64_t>(a.ntasks - blockIdx.x, gridDim.x) : 0;
  const int64_t items = my_tasks * upw;  // (task, step) pairs, task-major

  const auto task_row = [&](int64_t k) {  // first row of the warp's k-th task
    return ((static_cast<int64_t>(blockIdx.x) + k * gridDim.x) * rgs + rg) * kRows;
  };
  // The lane's tile of step s: its group, place in the group, and the group's tile count.
  const auto tile_of = [&](int s, int& grp, int& i, int& n) {
    const int tile = s * kStepTiles + t;
    grp = tile >> 5;
    i = tile & 31;
    n = grp == groups - 1 ? n_last : 32;
  };

  int64_t ld_n = 0;
  int ld_j = 0;
  int64_t ld_task = 0;
  const uint8_t* ld_row[2];
  const auto set_rows = [&]() {
    const int64_t row0 = task_row(ld_task);
    ld_row[0] = a.w + kernels::min64(row0 + g, a.rows - 1) * row_bytes;
    ld_row[1] = a.w + kernels::min64(row0 + g + 8, a.rows - 1) * row_bytes;
  };
  set_rows();
  const auto load_item = [&](uint4(&w)[2][kP], uint32_t(&sc)[2]) {
    const bool ok = ld_n < items && a.probe != 2;
    int grp, i, n;
    tile_of(ks + ld_j * a.ksplit, grp, i, n);
    const uint32_t base = static_cast<uint32_t>(grp) * 32u * kTB;
    const uint32_t co = base + static_cast<uint32_t>(i) * 16u;
    const uint32_t so = base + static_cast<uint32_t>(kP * n * 16 + i * Ops::kScaleBytes);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
#pragma unroll
      for (int p = 0; p < kP; ++p) {
        w[r][p] =
            ok ? kernels::ldg_stream(ld_row[r] + co + p * n * 16) : make_uint4(0u, 0u, 0u, 0u);
      }
      if constexpr (Ops::kScaleBytes == 4) {
        sc[r] = ok ? ldg_u32(ld_row[r] + so) : 0u;
      } else {
        sc[r] = ok ? ldg_u16(ld_row[r] + so) : 0u;
      }
    }
    ++ld_n;
    if (++ld_j == upw) {
      ld_j = 0;
      ++ld_task;
      set_rows();
    }
  };

  // The first batch does not depend on earlier kernels: loaded before the PDL wait.
  uint4 wv[kU][2][kP];
  uint32_t sv[kU][2];
#pragma unroll
  for (int u = 0; u < kU; ++u) load_item(wv[u], sv[u]);
  kernels::grid_dependency_trigger();
  kernels::grid_dependency_wait();
  const int8_t* sx = static_cast<const int8_t*>(a.x.split) + x_split_stream_offset(a.cols);
  // B fragments: lane (g, t) holds column g; columns 2t, 2t+1 are tile t's digits 0, 1 (first
  // MMA), column 2t of the second MMA its digit 2.
  const bool holds = (g >> 1) == t;
  const bool holds2 = holds && (g & 1) == 0;
  const int digit = g & 1;

  float acc0 = 0.0f, acc1 = 0.0f;  // rows g, g + 8
  int parity = 0;
  int j = 0;         // step (of the warp's) of the item in use
  int64_t task = 0;  // and its task (the warp's k-th)
  for (int64_t base = 0; base < items; base += kU) {
    uint4 nv[kU][2][kP];
    uint32_t ns[kU][2];
#pragma unroll
    for (int u = 0; u < kU; ++u) load_item(nv[u], ns[u]);  // in flight while this batch is used
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      if (base + u < items) {
        if (a.probe != 1) {
          int grp, i, n;
          tile_of(ks + j * a.ksplit, grp, i, n);
          const int8_t* xg = sx + static_cast<int64_t>(grp) * kStreamGroupBytes;
          constexpr int kPiece = kStreamGroupTiles * 16;
          // Lanes that hold no B column pass zeros without loading.
          const uint4 d0 = ldg_x16_if(holds, xg + (2 * digit) * kPiece + i * 16);
          const uint4 d1 = ldg_x16_if(holds, xg + (2 * digit + 1) * kPiece + i * 16);
          const uint4 d2 = ldg_x16_if(holds2, xg + 4 * kPiece + i * 16);
          const uint4 d3 = ldg_x16_if(holds2, xg + 5 * kPiece + i * 16);
          const int8_t* pl = xg + kStreamPlaneBase + i * 4;
          constexpr int kPlane = kStreamGroupTiles * 4;
          const float f1 = __int_as_float(ldg_x4(pl));
          const int s01 = ldg_x4(pl + kPlane);
          const int s2 = ldg_x4(pl + 2 * kPlane);
          const int S0 = static_cast<int16_t>(s01 & 0xFFFF), S1 = s01 >> 16;
          const int S2 = static_cast<int16_t>(s2 & 0xFFFF);
          constexpr int kOff = Ops::kOffset;
          int c[4] = {-kOff * S0, -kOff * S1, -kOff * S0, -kOff * S1};
          int e[4] = {-kOff * S2, 0, -kOff * S2, 0};
          tile_mma<T>(wv[u][0], wv[u][1], d0, d1, d2, d3, c, e);
          const float f2 = f1 * 0.0078125f;  // f_2 = f_1 / 128 (exact)
          const float v0 =
              fmaf(f1, static_cast<float>(c[0] * 128 + c[1]), f2 * static_cast<float>(e[0]));
          const float v1 =
              fmaf(f1, static_cast<float>(c[2] * 128 + c[3]), f2 * static_cast<float>(e[2]));
          if constexpr (Ops::kMin) {
            const float sxv = __int_as_float(ldg_x4(pl + 3 * kPlane));
            acc0 += fmaf(half_bits(sv[u][0] >> 16), sxv, half_bits(sv[u][0]) * v0);
            acc1 += fmaf(half_bits(sv[u][1] >> 16), sxv, half_bits(sv[u][1]) * v1);
          } else {
            acc0 += half_bits(sv[u][0]) * v0;
            acc1 += half_bits(sv[u][1]) * v1;
          }
        }
        if (++j == upw) {  // the task is complete: reduce over the quad, store its rows
          j = 0;
          acc0 += __shfl_xor_sync(0xFFFFFFFFu, acc0, 1);
          acc0 += __shfl_xor_sync(0xFFFFFFFFu, acc0, 2);
          acc1 += __shfl_xor_sync(0xFFFFFFFFu, acc1, 1);
          acc1 += __shfl_xor_sync(0xFFFFFFFFu, acc1, 2);
          const int64_t row0 = task_row(task);
          if (a.ksplit == 1) {
            if (t == 0 && row0 + g < a.rows) kernels::store_row(a.y, row0 + g, acc0);
            if (t == 0 && row0 + g + 8 < a.rows) kernels::store_row(a.y, row0 + g + 8, acc1);
          } else {
            float* pb = partial + parity * kWarps * kRows;
            if (t == 0) {
              pb[warp * kRows + g] = acc0;
              pb[warp * kRows + g + 8] = acc1;
            }
            kernels::named_barrier(1 + rg, a.ksplit * 32);
            if (ks == 0 && lane < kRows && row0 + lane < a.rows) {
              float v = 0.0f;
              for (int w = 0; w < a.ksplit; ++w) v += pb[(rg * a.ksplit + w) * kRows + lane];
              kernels::store_row(a.y, row0 + lane, v);
            }
            parity ^= 1;
          }
          acc0 = 0.0f;
          acc1 = 0.0f;
          ++task;
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        sv[u][r] = ns[u][r];
#pragma unroll
        for (int p = 0; p < kP; ++p) wv[u][r][p] = nv[u][r][p];
      }
    }
  }
}

struct MmaKernel {
  const void* kernel = nullptr;
  int batch = 1;
};

template <WeightType T>
MmaKernel mma_for() {
  return {reinterpret_cast<const void*>(&gemv_tiled_mma_kernel<T>), MmaOps<T>::kU};
}

MmaKernel tiled_mma_kernel(WeightType t) {
  switch (t) {
    case WeightType::kQ4_0:
      return mma_for<WeightType::kQ4_0>();
    case WeightType::kQ4_1:
      return mma_for<WeightType::kQ4_1>();
    case WeightType::kQ8_0:
      return mma_for<WeightType::kQ8_0>();
    default:
      return {};
  }
}

}  // namespace

bool tiled_mma_supported(WeightType t, const void* w, int64_t cols) {
  return tiled_mma_kernel(t).kernel != nullptr && tiled_supported(t, w, cols) &&
         (cols / 32) % kStepTiles == 0;
}

Plan tiled_mma_plan(WeightType t, int64_t rows, int64_t cols, int sms) {
  Plan p;
  p.block = kThreads;
  p.rows_per_warp = kRows;
  p.smem = kSmemBytes;
  const int ctas = std::max(1, ctas_per_sm(tiled_mma_kernel(t).kernel, kThreads, kSmemBytes));
  const int64_t max_grid = static_cast<int64_t>(sms) * ctas;
  const int64_t steps = cols / 32 / kStepTiles;
  // plan_column_split counts tasks of 2 rows per warp: a 16-row task is passed as 2 rows.
  const SplitPlan sp = plan_column_split(2 * ceil_div<int64_t>(rows, kRows), steps,
                                         tiled_mma_kernel(t).batch, max_grid, true);
  p.ksplit = sp.ksplit;
  p.ntasks = sp.ntasks;
  p.grid = sp.grid;
  return p;
}

void tiled_mma_launch(WeightType t, const KernelArgs& a, const Plan& p, cudaStream_t stream) {
  // Every warp of a split must have a step (the named barrier at each task's end).
  const int64_t steps = a.cols / 32 / kStepTiles;
  if (p.ksplit < 1 || kWarps % p.ksplit != 0 || p.ksplit > steps) {
    throw runtime_error("GEMV: tiled-mma kernel plan with " + std::to_string(p.ksplit) +
                        " column splits for " + std::to_string(steps) + " steps per row");
  }
  KernelArgs args = a;
  args.ksplit = p.ksplit;
  args.ntasks = p.ntasks;
  void* params[] = {&args};
  launch_with_attrs(tiled_mma_kernel(t).kernel, params, dim3(static_cast<unsigned>(p.grid)),
                    dim3(static_cast<unsigned>(p.block)), static_cast<size_t>(p.smem), a.pdl != 0,
                    stream);
}

}  // namespace decodebench::cuda::gemv_impl
