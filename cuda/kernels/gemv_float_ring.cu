// GEMV for the float weight types (F32, F16, BF16): the direct kernel's ring form (sm_90).
//
// A CTA of 8 warps streams groups of G consecutive whole rows, each with one bulk copy (7B F16: G
// = 4 rows of 3,584 columns, 28 KB), into a ring of S shared-memory slots, as the quantized
// stream kernel's ring does (gemv_stream.cu), instead of each warp loading its own rows into
// registers. Round 23's probe of the 7B step's weight stream (docs/probes/persistent_stream.cu,
// math skipped) streamed F16 rows this way at 91.5-94.8% of the read bandwidth with one kernel per
// GEMV under PDL, while the 7B F16 step runs at about 82% on the H200 (docs/performance.md).
//
// The 8 warps split every row's columns: warp w takes the same contiguous eighth of each row of
// every group, so its part of x' stays in registers (16 floats per lane for rows of up to 4,096
// columns of a 16-bit type) or, for longer rows, is read from shared memory. Each warp adds its
// part of the G rows, and the last warp done with a slot (a counter per slot) adds the 8 partial
// sums of each row in warp order (deterministic), stores the rows and refills the slot with the
// CTA's group S ahead. CTA b takes groups b, b + grid, ... Every slot is asked for before the
// PDL wait (weights do not depend on earlier kernels). With a SwiGLU output a group is G / 2
// gate rows and the G / 2 up rows of the same pairs (two copies into one slot).
#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "cuda/check.hpp"
#include "cuda/kernels/common.cuh"
#include "cuda/kernels/gemv_device.cuh"
#include "cuda/kernels/gemv_float.cuh"
#include "cuda/kernels/gemv_impl.cuh"

namespace decodebench::cuda::gemv_impl {
namespace {

using kernels::ceil_div;
using kernels::FloatVec;
using kernels::mbar_arrive_expect_tx;
using kernels::mbar_init;
using kernels::mbar_wait;
using kernels::smem_addr;

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kMaxGroupRows = 8;
constexpr int kMaxSlots = 4;
/// 16-byte units of x' a lane keeps in registers (kXRegs form): a warp's eighth of a row of up to
/// 2 · 32 units (4,096 columns of F16 or BF16, 2,048 of F32).
constexpr int kXUnits = 2;

/// Bytes after the slots: x' (cols floats, rounded up to 4), 32 floats of reduction scratch, the
/// partial sums [kMaxSlots][kWarps][kMaxGroupRows], then kMaxSlots mbarriers and counters.
constexpr int64_t tail_bytes(int64_t cols) {
  return (cols + 3) / 4 * 16 + 32 * 4 + kMaxSlots * kWarps * kMaxGroupRows * 4 + kMaxSlots * 16;
}

template <WeightType T, bool kXRegs>
__global__ void __launch_bounds__(kThreads, 2) gemv_float_ring_kernel(const KernelArgs a) {
  using V = FloatVec<T>;
  constexpr int kE = V::kE;
  constexpr int kEB = 16 / kE;  // bytes per element
  extern __shared__ __align__(128) uint8_t smem[];

  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int slots = a.ring_slots;
  const int g_rows = a.ring_rows;  // rows per group (even with a SwiGLU output)
  const int64_t row_bytes = a.cols * kEB;
  const int64_t slot_bytes = g_rows * row_bytes;
  float* xs = reinterpret_cast<float*>(smem + slots * slot_bytes);
  float* red = xs + (a.cols + 3) / 4 * 4;
  float* partial = red + 32;  // [slot][warp][row of the group]
  uint64_t* full = reinterpret_cast<uint64_t*>(partial + kMaxSlots * kWarps * kMaxGroupRows);
  uint32_t* done = reinterpret_cast<uint32_t*>(full + kMaxSlots);

  // Items: rows, or with a SwiGLU output (gate k, up k) pairs, g_items per group.
  const int64_t half = a.y.swiglu_half;
  const int64_t items = half > 0 ? half : a.rows;
  const int g_items = half > 0 ? g_rows / 2 : g_rows;
  const int64_t groups = ceil_div<int64_t>(items, g_items);
  const int64_t mine = blockIdx.x < groups ? ceil_div<int64_t>(groups - blockIdx.x, gridDim.x) : 0;

  if (threadIdx.x == 0) {
    for (int s = 0; s < slots; ++s) {
      mbar_init(&full[s], 1);
      done[s] = 0;
    }
    kernels::mbar_init_fence();
  }
  __syncthreads();

  // Group k of this CTA into slot s: its rows are one contiguous byte range (two with a SwiGLU
  // output: the gate rows, then the up rows of the same pairs).
  const auto issue = [&](int64_t k, int s) {
    const int64_t i0 = (blockIdx.x + k * gridDim.x) * g_items;
    const int64_t n = kernels::min64(g_items, items - i0);
    uint8_t* slot = smem + s * slot_bytes;
    if (a.probe == 2) {  // diagnostics: no copies, the math on whatever the slot holds
      mbar_arrive_expect_tx(&full[s], 0);
      return;
    }
    // Earlier generic-proxy reads of this slot are ordered before the async-proxy refill.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    const uint32_t len = static_cast<uint32_t>(n * row_bytes);
    mbar_arrive_expect_tx(&full[s], half > 0 ? 2 * len : len);
    kernels::bulk_copy(slot, a.w + i0 * row_bytes, len, &full[s]);
    if (half > 0) {
      kernels::bulk_copy(slot + g_items * row_bytes, a.w + (half + i0) * row_bytes, len, &full[s]);
    }
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < slots && s < mine; ++s) issue(s, s);
  }
  const kernels::XPrefetch pre = kernels::prefetch_x(a.x, a.cols);
  kernels::grid_dependency_trigger();
  kernels::grid_dependency_wait();
  kernels::load_x_to_smem<true>(a.x, a.cols, xs, red, pre);

  // Warp w's units (16 bytes of a row each): [u0, u1), lane l taking u0 + l + 32j.
  const int64_t units = a.cols / kE;
  const int64_t u0 = warp * units / kWarps;
  const int64_t u1 = (warp + 1) * units / kWarps;
  float4 xr[kXUnits][2];
  if constexpr (kXRegs) {
#pragma unroll
    for (int j = 0; j < kXUnits; ++j) {
      const int64_t u = u0 + lane + 32 * j;
      const float* xp = xs + (u < u1 ? u : u0) * kE;
      xr[j][0] = *reinterpret_cast<const float4*>(xp);
      xr[j][1] = kE == 8 ? *reinterpret_cast<const float4*>(xp + 4) : float4{};
    }
  }

  int s = 0;
  uint32_t parity = 0, use = 0;
  for (int64_t k = 0; k < mine; ++k) {
    const int64_t i0 = (blockIdx.x + k * gridDim.x) * g_items;
    // Row i0 + lane's bias or residual, read while the slot's bytes arrive: whichever warp ends up
    // last stores the rows with it.
    float add = 0.0f;
    if (half == 0 && lane < g_rows && i0 + lane < a.rows) add = kernels::row_addend(a.y, i0 + lane);
    mbar_wait(&full[s], parity);
    float acc[kMaxGroupRows];
#pragma unroll
    for (int i = 0; i < kMaxGroupRows; ++i) acc[i] = 0.0f;
    // Rows past the end read bytes of the slot no copy wrote; their sums are not stored.
    const uint8_t* slot = smem + s * slot_bytes;
    if (a.probe != 1) {
      if constexpr (kXRegs) {
#pragma unroll
        for (int j = 0; j < kXUnits; ++j) {
          const int64_t u = u0 + lane + 32 * j;
          if (u < u1) {
#pragma unroll
            for (int i = 0; i < kMaxGroupRows; ++i) {
              if (i < g_rows) {
                const uint4 w = *reinterpret_cast<const uint4*>(slot + i * row_bytes + u * 16);
                acc[i] = V::dot(w, xr[j][0], xr[j][1], acc[i]);
              }
            }
          }
        }
      } else {
        for (int64_t u = u0 + lane; u < u1; u += 32) {
          const float* xp = xs + u * kE;
          const float4 xa = *reinterpret_cast<const float4*>(xp);
          const float4 xb = kE == 8 ? *reinterpret_cast<const float4*>(xp + 4) : float4{};
#pragma unroll
          for (int i = 0; i < kMaxGroupRows; ++i) {
            if (i < g_rows) {
              const uint4 w = *reinterpret_cast<const uint4*>(slot + i * row_bytes + u * 16);
              acc[i] = V::dot(w, xa, xb, acc[i]);
            }
          }
        }
      }
    }
    float* part_s = partial + s * kWarps * kMaxGroupRows;
#pragma unroll
    for (int i = 0; i < kMaxGroupRows; ++i) {
      if (i < g_rows) {
        acc[i] = kernels::warp_sum(acc[i]);
        if (lane == 0) part_s[warp * kMaxGroupRows + i] = acc[i];
      }
    }
    __syncwarp();  // every lane is done with slot s
    uint32_t before = 0;
    if (lane == 0) {
      // release: this warp's reads of the slot and its partial sums; acquire (the last warp):
      // every other warp's.
      asm volatile("atom.acq_rel.cta.shared::cta.add.u32 %0, [%1], 1;\n"
                   : "=r"(before)
                   : "r"(smem_addr(&done[s]))
                   : "memory");
    }
    before = __shfl_sync(kernels::kFullMask, before, 0);
    if (before == (use + 1) * kWarps - 1) {
      __syncwarp();  // lane 0's acquire orders the other lanes' reads of the partial sums
      // Lane i adds row i's partial sums in warp order (with a SwiGLU output also the up row's),
      // the slot is refilled, and then the rows are stored: the refill waits on no global load.
      const auto row_sum = [&](int i) {
        float v = 0.0f;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) v += part_s[w * kMaxGroupRows + i];
        return v;
      };
      const float v = lane < g_rows ? row_sum(lane) : 0.0f;
      const float up = half > 0 && lane < g_items ? row_sum(g_items + lane) : 0.0f;
      __syncwarp();  // the partial sums of slot s are read before its next group can write them
      if (lane == 0 && k + slots < mine) issue(k + slots, s);
      if (half > 0) {
        if (lane < g_items && i0 + lane < half) {
          a.y.y0[i0 + lane] = kernels::swiglu_value(v, up);
        }
      } else if (lane < g_rows && i0 + lane < a.rows) {
        kernels::store_row_added(a.y, i0 + lane, v, add);
      }
    }
    if (++s == slots) {
      s = 0;
      parity ^= 1;
      ++use;
    }
  }
}

/// The ring kernel for `t`, with x' in registers (`regs`) or read from shared memory.
const void* ring_kernel(WeightType t, bool regs) {
  switch (t) {
    case WeightType::kF32:
      return regs ? reinterpret_cast<const void*>(&gemv_float_ring_kernel<WeightType::kF32, true>)
                  : reinterpret_cast<const void*>(&gemv_float_ring_kernel<WeightType::kF32, false>);
    case WeightType::kF16:
      return regs ? reinterpret_cast<const void*>(&gemv_float_ring_kernel<WeightType::kF16, true>)
                  : reinterpret_cast<const void*>(&gemv_float_ring_kernel<WeightType::kF16, false>);
    case WeightType::kBF16:
      return regs
                 ? reinterpret_cast<const void*>(&gemv_float_ring_kernel<WeightType::kBF16, true>)
                 : reinterpret_cast<const void*>(&gemv_float_ring_kernel<WeightType::kBF16, false>);
    default:
      return nullptr;
  }
}

int elems_per_unit(WeightType t) { return t == WeightType::kF32 ? 4 : 8; }

/// Whether x' goes to registers: every lane's units of a warp's eighth fit kXUnits.
bool x_in_registers(WeightType t, int64_t cols) {
  const int64_t units = cols / elems_per_unit(t);
  return ceil_div<int64_t>(units, kWarps) <= 32 * kXUnits;
}

}  // namespace

FloatRingShape float_ring_request() {
  const char* e = std::getenv("DECODEBENCH_GEMV_FLOAT_RING");
  if (e == nullptr || *e == '\0' || std::string(e) == "0") return {};
  const std::string v(e);
  const size_t x = v.find('x');
  const auto digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 2 &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (x != std::string::npos && digits(v.substr(0, x)) && digits(v.substr(x + 1))) {
    const int g = std::stoi(v.substr(0, x));
    const int s = std::stoi(v.substr(x + 1));
    if (g >= 1 && g <= kMaxGroupRows && s >= 1 && s <= kMaxSlots) return {g, s};
  }
  throw runtime_error("DECODEBENCH_GEMV_FLOAT_RING: '" + v +
                      "' is neither 0 (the direct kernel's ring form off) nor GxS (G = 1 to " +
                      std::to_string(kMaxGroupRows) + " rows per group, S = 1 to " +
                      std::to_string(kMaxSlots) + " slots)");
}

bool float_ring_supported(WeightType t, const void* w, int64_t cols, int major) {
  if (ring_kernel(t, true) == nullptr || major < 9 || cols <= 0) return false;
  const int e = elems_per_unit(t);
  // Every lane of every warp has a unit of each row (cols >= 8 warps · 32 lanes · e), rows are
  // whole 16-byte units, and the weights are 16-byte aligned (bulk copies).
  return cols % e == 0 && cols / e >= kWarps * 32 && reinterpret_cast<uintptr_t>(w) % 16 == 0;
}

Plan float_ring_plan(WeightType t, int64_t rows, int64_t cols, bool swiglu, FloatRingShape shape,
                     int sms) {
  Plan p;
  const int64_t row_bytes = cols * (16 / elems_per_unit(t));
  const int64_t limit = smem_optin();
  // The most rows per group (at most the shape's) whose slots fit the shared memory; a SwiGLU
  // output needs whole pairs.
  int g = shape.rows;
  if (swiglu) g -= g % 2;
  const int step = swiglu ? 2 : 1;
  while (g >= step && shape.slots * g * row_bytes + tail_bytes(cols) > limit) g -= step;
  if (g < step) return p;  // ring_slots 0: the direct kernel runs
  const bool regs = x_in_registers(t, cols);
  p.block = kThreads;
  p.smem = static_cast<int>(shape.slots * g * row_bytes + tail_bytes(cols));
  p.ksplit = kWarps;  // every warp takes an eighth of each row
  p.rows_per_warp = g;
  p.ring_slots = shape.slots;
  const int64_t items = swiglu ? rows / 2 : rows;
  p.ntasks = ceil_div<int64_t>(items, swiglu ? g / 2 : g);
  const int ctas = std::max(1, ctas_per_sm(ring_kernel(t, regs), kThreads, p.smem));
  p.grid = std::min<int64_t>(p.ntasks, static_cast<int64_t>(sms) * ctas);
  return p;
}

void float_ring_launch(WeightType t, const KernelArgs& a, const Plan& p, cudaStream_t stream) {
  KernelArgs args = a;
  args.ring_slots = p.ring_slots;
  args.ring_rows = p.rows_per_warp;
  void* params[] = {&args};
  launch_with_attrs(ring_kernel(t, x_in_registers(t, a.cols)), params,
                    dim3(static_cast<unsigned>(p.grid)), dim3(static_cast<unsigned>(p.block)),
                    static_cast<size_t>(p.smem), a.pdl != 0, stream);
}

}  // namespace decodebench::cuda::gemv_impl
