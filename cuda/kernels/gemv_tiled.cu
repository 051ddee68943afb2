// GEMV for quantized weights in the tiled layout (core/quant/tiled_layout.hpp) on a pre-split x':
// "tiled" kernel.
//
// Why: the stream kernel (gemv_stream.cu) stages GGUF rows through shared memory (their codes
// sit at 2-byte alignment) and reached only 71-84% of the read bandwidth with its math skipped,
// while the F16/BF16 direct kernel, loading straight into registers, streams the large 7B shapes
// at 86-96% math included (docs/performance.md). With each tile's codes in an aligned 16-byte
// piece, lane l of a warp loads tile l's codes and its scale straight into registers, the warp
// reading 512 contiguous bytes per load; no shared memory, no copy engine, no mbarriers.
//
// Work: a pass is one tile group of a row (32 tiles, 1,024 columns; tiled_layout.hpp), one tile
// per lane, and reads one group of the split's stream layout for x' (gemv_impl.cuh). A warp owns
// kR = 2 rows at a time (a task) and walks the (task, pass) items of its tasks in batches of kU,
// the next batch's loads in flight while it computes on the current one (as the direct kernel).
// Batches run across pass and task boundaries: cut at row ends, 3,584-column rows (3.5 passes)
// alternated three passes in flight with half a pass (Q4_0 gate/up 54% of the read bandwidth on
// the H200). A ring that refilled each item's registers as soon as they were used, one pass per
// row at a time, streamed worse still (Q4_0 gate/up, loads only: 58% against 71%): each row's
// bytes are best requested several passes at once. A last pass of at most 16 tiles gives lanes
// 0-15 row 0 and lanes 16-31 row 1. The persistent grid, the column split
// over a CTA's warps (ksplit) and the fixed-order reduction follow the direct kernel, so results
// are deterministic for a shape. Math as in the stream kernel (gemv_digits.cuh): exact integer
// dot products of the codes with two 7-bit digits of x', results within f32 rounding and a
// residue of at most 2^-13 of each tile's largest |x'| of the CPU's dot product.
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
constexpr int kR = 2;  ///< rows per warp (they share the lane's x' tile)
constexpr int kSmemBytes = 2 * kWarps * kR * 4;

/// 2 or 4 bytes of weight scales, read once (non-coherent, no L1 allocation).
__device__ __forceinline__ uint32_t ldg_stream_u16(const void* p) {
  unsigned short v;
  asm volatile("ld.global.nc.L1::no_allocate.u16 %0, [%1];\n" : "=h"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ uint32_t ldg_stream_u32(const void* p) {
  uint32_t v;
  asm volatile("ld.global.nc.L1::no_allocate.u32 %0, [%1];\n" : "=r"(v) : "l"(p));
  return v;
}

// Per type: kP 16-byte code pieces per tile, Sc the scale data a lane loads per tile, kU items
// per batch (an item: both rows' codes and scales of one pass; two batches in registers, as many
// as fit the 128 registers of 2 CTAs per SM without spilling), load_scale(scales of the group,
// tile in the group), dot(codes, scale, x' tile, tile).

template <WeightType T>
struct TiledOps;

/// Q4_0 (scale d, code offset 8) and Q4_1 (scale d and min m, 4 bytes per tile).
template <bool kMin>
struct Tiled4 {
  static constexpr int kP = 1, kU = 3;
  static constexpr bool kSx = kMin;
  using Sc = uint32_t;
  __device__ static Sc load_scale(const uint8_t* scales, int i) {
    return kMin ? ldg_stream_u32(scales + 4 * i) : ldg_stream_u16(scales + 2 * i);
  }
  __device__ static float dot(const uint4 (&w)[kP], Sc sc, const XTile& x, int) {
    uint32_t q[8];
    unpack4(w[0], q);
    if constexpr (kMin) {
      return fmaf(half_bits(sc >> 16), x.sx, half_bits(sc) * tile_dot<0>(q, x));
    } else {
      return half_bits(sc) * tile_dot<8>(q, x);
    }
  }
};

template <>
struct TiledOps<WeightType::kQ4_0> : Tiled4<false> {};
template <>
struct TiledOps<WeightType::kQ4_1> : Tiled4<true> {};

template <>
struct TiledOps<WeightType::kQ8_0> {
  static constexpr int kP = 2, kU = 2;
  static constexpr bool kSx = false;
  using Sc = uint32_t;
  __device__ static Sc load_scale(const uint8_t* scales, int i) {
    return ldg_stream_u16(scales + 2 * i);
  }
  __device__ static float dot(const uint4 (&w)[kP], Sc sc, const XTile& x, int) {
    const uint32_t q[8] = {w[0].x, w[0].y, w[0].z, w[0].w, w[1].x, w[1].y, w[1].z, w[1].w};
    return half_bits(sc) * tile_dot<0>(q, x);
  }
};

/// Q4_K: tile t is sub-block t % 8 of block t / 8, whose 16-byte head (d, dmin, 12 scale bytes)
/// every lane of the block loads (8 lanes, one address); 6-bit scale and min as in
/// gguf-facts.md §2.3.
template <>
struct TiledOps<WeightType::kQ4_K> {
  static constexpr int kP = 1, kU = 2;
  static constexpr bool kSx = true;
  using Sc = uint4;
  __device__ static Sc load_scale(const uint8_t* heads, int i) {
    return kernels::ldg_stream(heads + 16 * (i >> 3));
  }
  __device__ static float dot(const uint4 (&w)[kP], Sc head, const XTile& x, int t) {
    uint32_t q[8];
    unpack4(w[0], q);
    const int s = t & 7;
    int sc, mn;
    kquant_scale_min(head.y, head.z, head.w, s, sc, mn);
    const float d = half_bits(head.x) * static_cast<float>(sc);
    const float m = half_bits(head.x >> 16) * static_cast<float>(mn);
    return fmaf(d, tile_dot<0>(q, x), -m * x.sx);
  }
};

template <WeightType T>
__global__ void __launch_bounds__(kThreads, 2) gemv_tiled_kernel(const KernelArgs a) {
  using Ops = TiledOps<T>;
  constexpr int kP = Ops::kP;
  constexpr int kU = Ops::kU;
  constexpr int kTB = 16 * kP + (T == WeightType::kQ4_1 ? 4 : 2);  // bytes per tile
  using Sc = typename Ops::Sc;
  // Dynamic, not static: the shared-memory opt-in (ctas_per_sm) raises the dynamic limit to the
  // device maximum, which fails for a kernel that also has static shared memory.
  extern __shared__ float partial[];  // [2][kWarps][kR] partial sums of the column split

  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int ks = warp % a.ksplit;
  const int rg = warp / a.ksplit;
  const int rgs = kWarps / a.ksplit;
  const int nt = static_cast<int>(a.cols / 32);  // tiles per row
  const int64_t row_bytes = decodebench::row_bytes(T, a.cols);
  const int units = ceil_div(nt, 32);  // passes (tile groups) per row
  // Passes of a task for this warp (>= 1: the planner keeps ksplit <= units).
  const int upw = units > ks ? ceil_div(units - ks, a.ksplit) : 0;
  const int64_t my_tasks =
      blockIdx.x < a.ntasks ? ceil_div<int64_t>(a.ntasks - blockIdx.x, gridDim.x) : 0;
  const int64_t items = my_tasks * upw;  // (task, pass) pairs, task-major

  const auto task_row = [&](int64_t k) {  // first row of the warp's k-th task
    return ((static_cast<int64_t>(blockIdx.x) + k * gridDim.x) * rgs + rg) * kR;
  };
  // Per pass, as a function of "is it the row's last pass": the group's tiles n, whether the
  // pass is split over the two rows (n <= 16: lanes 0-15 row 0, 16-31 row 1, into slot 0), the
  // lane's tile in the group and its byte offsets (codes, scales) from the group's start. Only a
  // row's last group can be short, so this is computed once.
  const int n_last = nt - (units - 1) * 32;
  const bool split_last = n_last <= 16;
  const int tile_full = lane, tile_last = split_last ? (lane & 15) : lane;
  const bool valid_last = tile_last < n_last;
  const uint32_t codes_full = static_cast<uint32_t>(tile_full) * 16u;
  const uint32_t codes_last = static_cast<uint32_t>(tile_last) * 16u;
  const uint32_t scales_full = kP * 32 * 16;
  const uint32_t scales_last = static_cast<uint32_t>(kP * n_last * 16);
  const uint32_t group_step = static_cast<uint32_t>(a.ksplit * 32 * kTB);
  const uint32_t group0 = static_cast<uint32_t>(ks * 32 * kTB);
  // Load cursor: items loaded, the pass within the task, the group's byte offset in its row,
  // and the rows of the task (clamped to the last row; a split pass takes the lane's row).
  int64_t ld_n = 0;
  int ld_j = 0;
  int64_t ld_task = 0;
  uint32_t ld_off = group0;
  const uint8_t* ld_rows[kR];
  const uint8_t* ld_split_row;
  const auto set_rows = [&]() {
    const int64_t row0 = task_row(ld_task);
#pragma unroll
    for (int i = 0; i < kR; ++i)
      ld_rows[i] = a.w + kernels::min64(row0 + i, a.rows - 1) * row_bytes;
    ld_split_row = lane < 16 ? ld_rows[0] : ld_rows[1];
  };
  set_rows();
  const auto load_item = [&](uint4(&w)[kR][kP], Sc(&sc)[kR]) {
    const bool last = ld_j == upw - 1 && ks + ld_j * a.ksplit == units - 1;
    const bool split = last && split_last;
    const bool ok = ld_n < items && a.probe != 2 && (!last || valid_last);
    const uint32_t co = ld_off + (last ? codes_last : codes_full);
    const uint32_t so = ld_off + (last ? scales_last : scales_full);
    const int i_t = last ? tile_last : tile_full;
    const int n = last ? n_last : 32;
#pragma unroll
    for (int i = 0; i < kR; ++i) {
      const uint8_t* row = split ? ld_split_row : ld_rows[i];
      const bool use = ok && (i == 0 || !split);
#pragma unroll
      for (int p = 0; p < kP; ++p) {
        w[i][p] = use ? kernels::ldg_stream(row + co + p * n * 16) : make_uint4(0u, 0u, 0u, 0u);
      }
      sc[i] = use ? Ops::load_scale(row + so, i_t) : Sc{};
    }
    ++ld_n;
    ld_off += group_step;
    if (++ld_j == upw) {
      ld_j = 0;
      ld_off = group0;
      ++ld_task;
      set_rows();
    }
  };
  // A batch: the next kU items (crossing pass and task boundaries, so every batch but the last
  // keeps kU passes in flight; batches cut at row ends would alternate 3 passes with the half
  // pass of a 3,584-column row).
  const auto load_batch = [&](uint4(&w)[kU][kR][kP], Sc(&sc)[kU][kR]) {
#pragma unroll
    for (int u = 0; u < kU; ++u) load_item(w[u], sc[u]);
  };

  // The first batch does not depend on earlier kernels: loaded before the PDL wait.
  uint4 wv[kU][kR][kP];
  Sc sv[kU][kR];
  load_batch(wv, sv);
  kernels::grid_dependency_trigger();
  kernels::grid_dependency_wait();
  const int8_t* sx = static_cast<const int8_t*>(a.x.split) + x_split_stream_offset(a.cols);

  float acc[kR];
#pragma unroll
  for (int i = 0; i < kR; ++i) acc[i] = 0.0f;
  int parity = 0;
  int j = 0;         // pass of the item in use
  int64_t task = 0;  // and its task (the warp's k-th)
  for (int64_t base = 0; base < items; base += kU) {
    uint4 nv[kU][kR][kP];
    Sc ns[kU][kR];
    load_batch(nv, ns);  // the next batch is in flight while this one is used
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      if (base + u < items) {
        const int unit = ks + j * a.ksplit;
        const bool last = unit == units - 1;
        const bool split = last && split_last;
        const int i_t = last ? tile_last : tile_full;
        if ((!last || valid_last) && a.probe != 1) {
          const XTile x = load_x_tile<Ops::kSx, false>(
              sx + static_cast<int64_t>(unit) * kStreamGroupBytes, i_t);
          if (split) {
            const float v = Ops::dot(wv[u][0], sv[u][0], x, i_t);
            acc[0] += lane < 16 ? v : 0.0f;
            acc[1] += lane < 16 ? 0.0f : v;
          } else {
#pragma unroll
            for (int i = 0; i < kR; ++i) acc[i] += Ops::dot(wv[u][i], sv[u][i], x, i_t);
          }
        }
        if (++j == upw) {  // the task is complete: reduce and store its rows
          j = 0;
#pragma unroll
          for (int i = 0; i < kR; ++i) acc[i] = kernels::warp_sum(acc[i]);
          const int64_t row0 = task_row(task);
          if (a.ksplit == 1) {
            if (lane < kR && row0 + lane < a.rows) {
              kernels::store_row(a.y, row0 + lane, lane == 0 ? acc[0] : acc[1]);
            }
          } else {
            float* pb = partial + parity * kWarps * kR;
            if (lane == 0) {
#pragma unroll
              for (int i = 0; i < kR; ++i) pb[warp * kR + i] = acc[i];
            }
            kernels::named_barrier(1 + rg, a.ksplit * 32);
            if (ks == 0 && lane < kR && row0 + lane < a.rows) {
              float v = 0.0f;
              for (int w = 0; w < a.ksplit; ++w) v += pb[(rg * a.ksplit + w) * kR + lane];
              kernels::store_row(a.y, row0 + lane, v);
            }
            parity ^= 1;
          }
#pragma unroll
          for (int i = 0; i < kR; ++i) acc[i] = 0.0f;
          ++task;
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
#pragma unroll
      for (int i = 0; i < kR; ++i) {
        sv[u][i] = ns[u][i];
#pragma unroll
        for (int p = 0; p < kP; ++p) wv[u][i][p] = nv[u][i][p];
      }
    }
  }
}
static_assert(kR == 2, "a split pass and the store use lane ? acc[1] : acc[0]");

/// The tiled kernel for `t` and its passes per batch (kernel nullptr for a type the layout does
/// not hold).
struct TiledKernel {
  const void* kernel = nullptr;
  int batch = 1;
};

template <WeightType T>
TiledKernel tiled_for() {
  return {reinterpret_cast<const void*>(&gemv_tiled_kernel<T>), TiledOps<T>::kU};
}

TiledKernel tiled_kernel(WeightType t) {
  switch (t) {
    case WeightType::kQ4_0:
      return tiled_for<WeightType::kQ4_0>();
    case WeightType::kQ4_1:
      return tiled_for<WeightType::kQ4_1>();
    case WeightType::kQ8_0:
      return tiled_for<WeightType::kQ8_0>();
    case WeightType::kQ4_K:
      return tiled_for<WeightType::kQ4_K>();
    default:
      return {};
  }
}

}  // namespace

bool tiled_supported(WeightType t, const void* w, int64_t cols) {
  return tiled_kernel(t).kernel != nullptr && quant::tiled_layout_supported(t, cols) &&
         (reinterpret_cast<uintptr_t>(w) & 15u) == 0 && cols / 32 < kTiledMaxTiles;
}

Plan tiled_plan(WeightType t, int64_t rows, int64_t cols, int sms) {
  Plan p;
  p.block = kThreads;
  p.rows_per_warp = kR;
  p.smem = kSmemBytes;
  const int ctas = std::max(1, ctas_per_sm(tiled_kernel(t).kernel, kThreads, kSmemBytes));
  const int64_t max_grid = static_cast<int64_t>(sms) * ctas;
  const int64_t units = ceil_div<int64_t>(cols / 32, 32);
  // Batches run across tasks, so a warp's depth counts the passes of all its tasks, and every
  // warp of a split must have a pass (the kernel has no empty tasks).
  const SplitPlan sp = plan_column_split(rows, units, tiled_kernel(t).batch, max_grid, true);
  p.ksplit = sp.ksplit;
  p.ntasks = sp.ntasks;
  p.grid = sp.grid;
  return p;
}

void tiled_launch(WeightType t, const KernelArgs& a, const Plan& p, cudaStream_t stream) {
  // Every warp of a split must have a pass: a warp without one would skip the named barrier its
  // row group meets at each task's end, and the CTA would hang (tiled_plan keeps this).
  const int64_t units = ceil_div<int64_t>(a.cols / 32, 32);
  if (p.ksplit < 1 || kWarps % p.ksplit != 0 || p.ksplit > units) {
    throw runtime_error("GEMV: tiled kernel plan with " + std::to_string(p.ksplit) +
                        " column splits for " + std::to_string(units) + " passes per row");
  }
  KernelArgs args = a;
  args.ksplit = p.ksplit;
  args.ntasks = p.ntasks;
  void* params[] = {&args};
  launch_with_attrs(tiled_kernel(t).kernel, params, dim3(static_cast<unsigned>(p.grid)),
                    dim3(static_cast<unsigned>(p.block)), static_cast<size_t>(p.smem), a.pdl != 0,
                    stream);
}

}  // namespace decodebench::cuda::gemv_impl
