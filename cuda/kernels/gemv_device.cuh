// Device helpers shared by the fast GEMV kernels (gemv_direct.cu, gemv_mma.cu, gemv_stream.cu):
// streaming loads, bulk copies and mbarriers (sm_90), programmatic-dependent-launch controls,
// named barriers, forming x' in shared memory and writing results. Device code only: include
// from .cu files.
#pragma once

#if !defined(__CUDACC__)
#error "cuda/kernels/gemv_device.cuh holds device code; include it from .cu files only"
#endif

#include <cstdint>

#include "cuda/kernels/common.cuh"
#include "cuda/kernels/gemv_impl.cuh"

namespace decodebench::cuda::kernels {

/// 16 bytes from global memory that is read once: non-coherent path, no L1 allocation.
__device__ __forceinline__ uint4 ldg_stream(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// ---- bulk copies and mbarriers (PTX ISA 8.0, sm_90) ---------------------------------------------

/// The 32-bit shared-memory address of `p` (a pointer into shared memory).
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// Initialises the mbarrier at `bar` (8 bytes of shared memory, 8-byte aligned) for `count`
/// arrivals per phase. Follow the initialisations with mbar_init_fence and a barrier before other
/// threads or the bulk-copy engine use them.
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count)
               : "memory");
}

/// Makes this thread's mbarrier initialisations visible to the async proxy (bulk copies).
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

/// Arrives on `bar` and adds `bytes` to the transaction count its current phase waits for.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)),
               "r"(bytes)
               : "memory");
}

/// Waits until the phase with parity `parity` of `bar` has completed.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "wait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n"
      "}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}

/// Copies `bytes` (a multiple of 16) from global `src` to shared `dst` (both 16-byte aligned);
/// completion is signalled on `bar` as transaction bytes.
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, uint32_t bytes,
                                          uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::
          "r"(smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar))
      : "memory");
}

/// PDL: blocks until the kernels this one depends on have completed and their writes are
/// visible (a no-op when the kernel was launched without the programmatic attribute).
__device__ __forceinline__ void grid_dependency_wait() {
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
}

/// PDL: lets the next kernel in the stream start launching its CTAs (no-op without PDL).
__device__ __forceinline__ void grid_dependency_trigger() {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

/// Barrier `id` (1..15) over `threads` threads (a multiple of 32) of the CTA.
__device__ __forceinline__ void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

/// x'[i] for SwiGLU: g / (1 + e^-g) · u with IEEE division and a separately rounded product
/// (the CPU's operation order; cpu::swiglu).
__device__ __forceinline__ float swiglu_value(float g, float u) {
  return __fmul_rn(g / (1.0f + expf(-g)), u);
}

/// Sum over the CTA (blockDim.x a multiple of 32, <= 1024); every thread gets the result.
/// `red` holds 32 floats of shared memory; fixed reduction order.
__device__ __forceinline__ float block_sum(float v, float* red) {
  const int t = static_cast<int>(threadIdx.x);
  v = warp_sum(v);
  __syncthreads();  // `red` may still be read from an earlier call
  if ((t & 31) == 0) red[t >> 5] = v;
  __syncthreads();
  const int nw = static_cast<int>(blockDim.x) >> 5;
  float s = (t & 31) < nw ? red[t & 31] : 0.0f;
  return warp_sum(s);
}

/// The part of x' that does not depend on earlier kernels, loaded before the PDL wait: the
/// RMSNorm weights of this thread's float4 columns i = t + k·blockDim.x (k < kRegs), when they
/// all fit (cols <= 16 · blockDim.x; `ok`), else nothing (load_x_to_smem loads them itself).
struct XPrefetch {
  static constexpr int kRegs = 4;
  float4 w[kRegs];
  bool ok = false;
};

/// Fills an XPrefetch for `src` (cols floats of x'); every thread of the CTA calls it before the
/// PDL wait and passes the result to load_x_to_smem. Nothing it reads is written by earlier
/// kernels (weights only).
__device__ __forceinline__ XPrefetch prefetch_x(const gemv_impl::XSource& src, int64_t cols) {
  XPrefetch p;
  const int64_t t = threadIdx.x;
  const int64_t nt = blockDim.x;
  const int64_t n4 = cols / 4;
  if (src.kind == gemv_impl::XKind::kRmsNorm && n4 <= XPrefetch::kRegs * nt) {
#pragma unroll
    for (int k = 0; k < XPrefetch::kRegs; ++k) {
      const int64_t i = t + k * nt;
      p.w[k] = i < n4 ? __ldg(reinterpret_cast<const float4*>(src.norm_w) + i)
                      : make_float4(0.f, 0.f, 0.f, 0.f);
    }
    p.ok = true;
  }
  return p;
}

/// ss + v.x² + v.y² + v.z² + v.w², in that order (fmaf): RMSNorm's sum of squares.
__device__ __forceinline__ float add_squares(float4 v, float ss) {
  ss = fmaf(v.x, v.x, ss);
  ss = fmaf(v.y, v.y, ss);
  ss = fmaf(v.z, v.z, ss);
  return fmaf(v.w, v.w, ss);
}

/// RMSNorm's output for four columns: (v·scale)·w, each product rounded (as cpu::rms_norm).
__device__ __forceinline__ float4 rms_scaled(float4 v, float scale, float4 w) {
  return make_float4(__fmul_rn(__fmul_rn(v.x, scale), w.x), __fmul_rn(__fmul_rn(v.y, scale), w.y),
                     __fmul_rn(__fmul_rn(v.z, scale), w.z), __fmul_rn(__fmul_rn(v.w, scale), w.w));
}

/// Writes x' (cols floats, cols % 4 == 0, sources 16-byte aligned) into shared memory `xs`
/// (16-byte aligned), as `src` says (kPlain, kRmsNorm or kSwiGlu). All threads of the CTA take
/// part; ends with __syncthreads. `red`: 32 floats of scratch shared memory; `pre`: from
/// prefetch_x (before the PDL wait). x, and for SwiGLU the first batch of up, cost one memory
/// round trip together. kRegisterForm (the direct kernel): x of 8-16 floats per thread goes
/// through registers instead of cp.async (see the branch for the measurements); otherwise (the
/// staged kernel) an RMSNorm x of at most 4 floats per thread (`pre` filled) goes through one.
template <bool kRegisterForm = false>
__device__ __forceinline__ void load_x_to_smem(const gemv_impl::XSource& src, int64_t cols,
                                               float* xs, float* red, const XPrefetch& pre = {}) {
  const int t = static_cast<int>(threadIdx.x);
  const int nt = static_cast<int>(blockDim.x);
  const int64_t n4 = cols / 4;
  if (!kRegisterForm && src.kind == gemv_impl::XKind::kRmsNorm && n4 <= nt && pre.ok) {
    // The staged kernel: a short RMSNorm input (at most one float4 per thread: SmolLM2's 576
    // columns) goes through a register: no cp.async wait, one barrier and one shared-memory pass
    // fewer than the form below, the same sums in the same order. Measured on the H200 (median
    // TPOT, graph, SmolLM2-135M shape Q4_1) in a build with both this and the early residual as
    // run-time switches: 481.1 / 475.9 µs with neither, 457.0 / 456.8 with this, 450.9 / 452.3
    // with both; the direct kernel (F16) keeps the form below (docs/performance.md, round 20).
    const float4 v = t < n4 ? __ldcg(reinterpret_cast<const float4*>(src.x) + t)
                            : make_float4(0.f, 0.f, 0.f, 0.f);
    const float ss = block_sum(add_squares(v, 0.0f), red);
    // Same expression as cpu::rms_norm: 1 / sqrt(mean + eps), IEEE sqrt and division.
    const float scale = 1.0f / sqrtf(ss / static_cast<float>(cols) + src.eps);
    if (t < n4) reinterpret_cast<float4*>(xs)[t] = rms_scaled(v, scale, pre.w[0]);
    __syncthreads();
    return;
  }
  if (kRegisterForm && n4 >= 2 * nt && n4 <= XPrefetch::kRegs * nt) {
    // 8-16 floats per thread: register loads, all in flight at once, RMSNorm's sum of squares
    // taken from the registers. Measured on the H200 against the cp.async form below: 7B F16
    // step 249.7 → 263.6 tokens/s (QKV GEMV 12.5 → 10.6 µs, gate/up 64.4 → 61.7 µs, LM head
    // 247.7 → 241.0 µs); for shorter x (SmolLM2, 576 and 1536 columns) the step lost 6%. Only
    // the direct kernel takes it: compiled into the staged kernel as well (not taken there), the
    // SmolLM2 Q4_1 step lost 3%.
    constexpr int kRegs = XPrefetch::kRegs;
    float4 v[kRegs], u[kRegs];
    const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
    const bool swiglu = src.kind == gemv_impl::XKind::kSwiGlu;
#pragma unroll
    for (int k = 0; k < kRegs; ++k) {
      const int64_t i = t + static_cast<int64_t>(k) * nt;
      v[k] = i < n4 ? __ldcg(reinterpret_cast<const float4*>(src.x) + i) : zero;
      u[k] = swiglu && i < n4 ? __ldcg(reinterpret_cast<const float4*>(src.x2) + i) : zero;
    }
    if (swiglu) {
#pragma unroll
      for (int k = 0; k < kRegs; ++k) {
        v[k] = make_float4(swiglu_value(v[k].x, u[k].x), swiglu_value(v[k].y, u[k].y),
                           swiglu_value(v[k].z, u[k].z), swiglu_value(v[k].w, u[k].w));
      }
    } else if (src.kind == gemv_impl::XKind::kRmsNorm) {
      float ss = 0.0f;  // this thread's columns in the order of the shared-memory form below
#pragma unroll
      for (int k = 0; k < kRegs; ++k) {
        ss = add_squares(v[k], ss);
      }
      ss = block_sum(ss, red);
      // Same expression as cpu::rms_norm: 1 / sqrt(mean + eps), IEEE sqrt and division.
      const float scale = 1.0f / sqrtf(ss / static_cast<float>(cols) + src.eps);
#pragma unroll
      for (int k = 0; k < kRegs; ++k) {
        const int64_t i = t + static_cast<int64_t>(k) * nt;
        if (i < n4) {
          const float4 w =
              pre.ok ? pre.w[k] : __ldg(reinterpret_cast<const float4*>(src.norm_w) + i);
          v[k] = rms_scaled(v[k], scale, w);
        }
      }
    }
#pragma unroll
    for (int k = 0; k < kRegs; ++k) {
      const int64_t i = t + static_cast<int64_t>(k) * nt;
      if (i < n4) reinterpret_cast<float4*>(xs)[i] = v[k];
    }
    __syncthreads();
    return;
  }
  // One cp.async per 16 bytes, all in flight at once: x costs one memory round trip.
  const float* first = src.x;
  for (int64_t i = t; i < n4; i += nt) cp_async_16(xs + 4 * i, first + 4 * i, 16);
  cp_async_commit();
  if (src.kind == gemv_impl::XKind::kSwiGlu) {
    // up is combined on the fly: a batch of 8 float4 per thread in flight at a time, the first
    // issued together with the copies of gate.
    constexpr int kBatch = 8;
    float4 u[kBatch];
    const auto load_up = [&](int64_t i0) {
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int64_t i = i0 + static_cast<int64_t>(b) * nt;
        u[b] = i < n4 ? __ldg(reinterpret_cast<const float4*>(src.x2) + i)
                      : make_float4(0.f, 0.f, 0.f, 0.f);
      }
    };
    load_up(t);
    cp_async_wait<0>();
    __syncthreads();
    for (int64_t i0 = t; i0 < n4; i0 += static_cast<int64_t>(kBatch) * nt) {
      if (i0 != t) load_up(i0);
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int64_t i = i0 + static_cast<int64_t>(b) * nt;
        if (i < n4) {
          float4* p = reinterpret_cast<float4*>(xs) + i;
          const float4 g = *p;
          *p = make_float4(swiglu_value(g.x, u[b].x), swiglu_value(g.y, u[b].y),
                           swiglu_value(g.z, u[b].z), swiglu_value(g.w, u[b].w));
        }
      }
    }
    __syncthreads();
    return;
  }
  cp_async_wait<0>();
  __syncthreads();
  if (src.kind == gemv_impl::XKind::kRmsNorm) {
    float ss = 0.0f;
    for (int64_t i = t; i < n4; i += nt) {
      const float4 v = reinterpret_cast<const float4*>(xs)[i];
      ss = add_squares(v, ss);
    }
    ss = block_sum(ss, red);
    // Same expression as cpu::rms_norm: 1 / sqrt(mean + eps), IEEE sqrt and division.
    const float scale = 1.0f / sqrtf(ss / static_cast<float>(cols) + src.eps);
    const auto apply = [&](int64_t i, float4 w) {
      float4* p = reinterpret_cast<float4*>(xs) + i;
      *p = rms_scaled(*p, scale, w);
    };
    if (pre.ok) {
#pragma unroll
      for (int k = 0; k < XPrefetch::kRegs; ++k) {
        const int64_t i = t + static_cast<int64_t>(k) * nt;
        if (i < n4) apply(i, pre.w[k]);
      }
    } else {  // long x: the weights cost a second round trip
      for (int64_t i = t; i < n4; i += nt) {
        apply(i, __ldg(reinterpret_cast<const float4*>(src.norm_w) + i));
      }
    }
    __syncthreads();
  }
}

/// Stores row r's finished value s in its output segment.
__device__ __forceinline__ void store_segment(const gemv_impl::YSink& y, int64_t r, float s) {
  if (r < y.end0) {
    y.y0[r] = s;
  } else if (r < y.end1) {
    y.y1[r - y.end0] = s;
  } else {
    y.y2[r - y.end1] = s;
  }
}

/// Adds bias/residual to row r's dot product and stores it in its output segment.
__device__ __forceinline__ void store_row(const gemv_impl::YSink& y, int64_t r, float s) {
  if (y.bias != nullptr) s += y.bias[r];
  if (y.residual != nullptr) s += y.residual[r];
  store_segment(y, r, s);
}

/// The one term store_row adds to row r when exactly one of bias and residual is set, else 0 (at
/// most one is set in every GEMV of the decode step: a QKV bias, or the o and down projections'
/// residual). The staged kernel reads it right after its PDL wait (the residual is written by
/// earlier kernels), so the load's latency overlaps the row's dot product instead of following
/// it; a plain load, as the residual may alias y. Measured on the H200 (SmolLM2-135M shape Q4_1,
/// median TPOT, graph): 481.1 / 475.9 → 469.4 / 466.0 µs in a build with it as a run-time switch.
/// The direct kernel lost with it against the unchanged build (SmolLM2 F16 +1.8%, 7B BF16 +0.3%,
/// together with the short RMSNorm form); the stream kernel gained 7B Q4_0 1.5% inside the switch
/// build but 0.7% against the unchanged build, and was not measured alone (docs/performance.md,
/// round 20). The direct kernel reads at the store; the stream kernel reads early on tiled
/// weights and at the store on GGUF blocks (round 21).
__device__ __forceinline__ float row_addend(const gemv_impl::YSink& y, int64_t r) {
  if ((y.bias == nullptr) == (y.residual == nullptr)) return 0.0f;
  return (y.bias != nullptr ? y.bias : y.residual)[r];
}

/// store_row with row_addend(y, r) read in advance as `add` (the same sum: one addition; with
/// both bias and residual set, store_row itself).
__device__ __forceinline__ void store_row_added(const gemv_impl::YSink& y, int64_t r, float s,
                                                float add) {
  if (y.bias != nullptr && y.residual != nullptr) {
    store_row(y, r, s);
    return;
  }
  if (y.bias != nullptr || y.residual != nullptr) s += add;
  store_segment(y, r, s);
}

}  // namespace decodebench::cuda::kernels
