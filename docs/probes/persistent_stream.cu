// Probe (not part of the build): how much of the read bandwidth a decode step's weight stream
// keeps when the step is one persistent kernel whose weight loads never stop at GEMV boundaries,
// against one kernel per GEMV (graph + PDL, as decodebench runs the step today). The math is
// skipped (a sum per 16 bytes), so the figures are the ceiling of each structure, not of a GEMV.
//
// Both forms run the same CTA code: one producer warp streams the CTA's share of each matrix
// (contiguous rows, so one contiguous byte range) into a ring of shared-memory slots with bulk
// copies (cp.async.bulk, completion on an mbarrier per slot); consumer warps take the slots in
// order. Before it uses matrix g's first slot, a consumer must have matrix g−1's output (its x):
//   - per-GEMV kernels: griddepcontrol.wait (the producer streams before it: PDL), one launch
//     per matrix in a CUDA graph;
//   - persistent: a counter per matrix in global memory, incremented by each CTA when its share
//     of g−1 is written (release) and polled (acquire) until it reaches the grid size; the
//     producer streams on into the next matrices meanwhile, as far as the ring reaches;
//   - free: persistent with no waits at all and no read of the previous output (the pipeline's
//     own ceiling).
// Round 50 added the same three with dynamic tasks (`dynamic_kernel`): the producer takes the next
// task (a slot's worth of bytes; rows may be cut, as the math is skipped) of the lowest matrix
// with one left from a counter per matrix, so a matrix ends when its last task is done rather
// than when the slowest CTA's fixed share is; the persistent form counts tasks done per matrix
// (one release add per task).
// With math = 1 (F16 only) the consumers compute real dot products instead, x read through L1
// with two 16-byte loads per 16 bytes of weights: that form is bound by those loads (round 23),
// so it gives no ceiling of an F16 GEMV.
// A plain read kernel (16-byte non-coherent loads, grid-stride) gives the read bandwidth of the
// same run. Shapes: the Qwen2.5-7B step (28 layers of QKV 4608×3584, o 3584×3584, gate/up
// 37888×3584, down 3584×18944, and the LM head 152064×3584) at the row bytes of Q4_0, Q8_0 or F16.
//
// Build and run (H200):
//   nvcc -std=c++20 -O3 -arch=sm_90 -I. docs/probes/persistent_stream.cu -o persistent_stream
//   ./persistent_stream q4_0|q8_0|f16 [stages=12] [chunk_kib=16] [ctas_per_sm_per_gemv=1] [math=0]
// Figures: docs/performance.md, rounds 23 and 50.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/kernels/gemv_device.cuh"

namespace {

using namespace decodebench::cuda::kernels;

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

constexpr int kMaxMats = 160;
constexpr int kConsumerWarps = 8;
constexpr int kThreads = 32 * (kConsumerWarps + 1);
constexpr int kMaxStages = 32;
constexpr int kMaxRows = 152064;
constexpr int kMaxCtaRows = 2048;  ///< rows of one CTA's share of a matrix (math)

struct Mat {
  uint64_t off;  ///< byte offset in W
  uint32_t rows;
  uint32_t row_bytes;   ///< a multiple of 16
  uint32_t task_bytes;  ///< dynamic modes: bytes per task (a slot's worth)
  uint32_t tasks;       ///< dynamic modes: tasks of the matrix
};
__constant__ Mat c_mats[kMaxMats];

struct Args {
  const uint8_t* w;
  float* out;      ///< [kMaxMats][grid · kConsumerWarps]; dynamic modes [kMaxMats][kOutStride]
  unsigned* done;  ///< [kMaxMats] CTAs (modes 1) or tasks (mode 3) done per matrix
  unsigned* next;  ///< [kMaxMats] tasks handed out per matrix (dynamic modes 3 to 5)
  int g0, g1;      ///< matrices [g0, g1)
  int mode;  ///< 0 per-GEMV kernel (PDL wait), 1 persistent with counters, 2 no waits; dynamic
             ///< tasks: 3 persistent with counters, 4 persistent without waits, 5 per-GEMV (PDL)
  int stages;
  uint32_t chunk;  ///< bytes per slot, a multiple of 16
  int math;        ///< 1: F16 dot products with x (y per row), not a sum of words
  const float* x;  ///< [18944] the dot products' input (read through L1)
  float* y;        ///< [kMaxMats][kMaxRows] the dot products (math)
};

__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
}

__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void red_release_add(unsigned* p, unsigned v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}

constexpr int kOutStride = 1024;  ///< floats of `out` per matrix in the dynamic modes

/// This CTA's byte range of matrix g: rows [rows·b/n, rows·(b+1)/n).
__device__ __forceinline__ void share(int g, uint64_t* begin, uint64_t* end) {
  const Mat m = c_mats[g];
  const uint64_t n = gridDim.x, b = blockIdx.x;
  *begin = m.off + m.rows * b / n * m.row_bytes;
  *end = m.off + m.rows * (b + 1) / n * m.row_bytes;
}

/// Thread 0 initialises the ring's mbarriers: slot s full after the producer's arrival and its
/// copy's bytes, empty after every consumer warp's arrival. A __syncthreads must follow.
__device__ __forceinline__ void init_ring(uint64_t* full, uint64_t* empty, int stages) {
  if (threadIdx.x != 0) return;
  for (int s = 0; s < stages; ++s) {
    mbar_init(&full[s], 1);
    mbar_init(&empty[s], kConsumerWarps);
  }
  mbar_init_fence();
}

/// The bytes of task `task` of matrix m and, in *p, its offset from the matrix's first byte.
__device__ __forceinline__ uint32_t task_bytes(const Mat& m, uint32_t task, uint64_t* p) {
  const uint64_t total = static_cast<uint64_t>(m.rows) * m.row_bytes;
  *p = static_cast<uint64_t>(task) * m.task_bytes;
  return static_cast<uint32_t>(total - *p < m.task_bytes ? total - *p : m.task_bytes);
}

__global__ void __launch_bounds__(kThreads, 1) stream_kernel(const Args a) {
  extern __shared__ __align__(128) uint8_t smem[];
  uint64_t* full = reinterpret_cast<uint64_t*>(smem);
  uint64_t* empty = full + kMaxStages;
  uint8_t* ring = smem + 2 * kMaxStages * sizeof(uint64_t);
  __shared__ float ysm[kMaxCtaRows];
  for (int i = threadIdx.x; i < kMaxCtaRows; i += blockDim.x) ysm[i] = 0.0f;
  const int t = static_cast<int>(threadIdx.x);
  const int warp = t >> 5, lane = t & 31;
  init_ring(full, empty, a.stages);
  __syncthreads();
  if (a.mode == 0) grid_dependency_trigger();
  if (warp == 0) {  // producer
    if (lane != 0) return;
    uint32_t k = 0;
    for (int g = a.g0; g < a.g1; ++g) {
      uint64_t p, e;
      share(g, &p, &e);
      for (; p < e; p += a.chunk, ++k) {
        const uint32_t bytes = static_cast<uint32_t>(e - p < a.chunk ? e - p : a.chunk);
        const uint32_t s = k % a.stages, use = k / a.stages;
        if (use > 0) mbar_wait(&empty[s], (use - 1) & 1);
        mbar_arrive_expect_tx(&full[s], bytes);
        bulk_copy(ring + static_cast<size_t>(s) * a.chunk, a.w + p, bytes, &full[s]);
      }
    }
    return;
  }
  const int ct = t - 32;  // consumer thread 0 .. 32·kConsumerWarps − 1
  const int nct = 32 * kConsumerWarps;
  uint32_t k = 0;
  for (int g = a.g0; g < a.g1; ++g) {
    // The input of matrix g: the previous matrix's output, complete.
    if (a.mode == 0) {
      grid_dependency_wait();
    } else if (a.mode == 1 && g > a.g0) {
      if (ct == 0) {
        while (ld_acquire(&a.done[g - 1]) < gridDim.x) {
        }
      }
      named_barrier(1, nct);
    }
    float x = 0.0f;
    if (g > a.g0 && a.mode != 2)
      x = a.out[static_cast<size_t>(g - 1) * gridDim.x * kConsumerWarps + lane];
    uint32_t acc = __float_as_uint(x);
    uint64_t p, e;
    share(g, &p, &e);
    for (; p < e; p += a.chunk, ++k) {
      const uint32_t bytes = static_cast<uint32_t>(e - p < a.chunk ? e - p : a.chunk);
      const uint32_t s = k % a.stages, use = k / a.stages;
      mbar_wait(&full[s], use & 1);
      const uint4* v = reinterpret_cast<const uint4*>(ring + static_cast<size_t>(s) * a.chunk);
      if (a.math) {
        // Warp w takes words [128w, 128w + 128) of the slot: at most two rows (rows >= 2 KiB).
        const Mat m = c_mats[g];
        const uint32_t cols = m.row_bytes / 2;
        const uint64_t w0 = (p - m.off) / 16 + 128 * (warp - 1);  // word index in the matrix
        const uint64_t r_first = w0 * 8 / cols;
        const uint64_t r_base = static_cast<uint64_t>(m.rows) * blockIdx.x / gridDim.x;
        // Column of this lane's first word, then stepped by 256 per j (32-bit, no division).
        int c = static_cast<int>(w0 * 8 - r_first * cols) + 8 * lane;
        bool second = false;
        if (c >= static_cast<int>(cols)) {
          c -= cols;
          second = true;
        }
        float s0 = 0.0f, s1 = 0.0f;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const uint32_t i = 128 * (warp - 1) + lane + 32 * j;
          if (i < bytes / 16) {
            const uint4 q = v[i];
            const float4 xa = __ldg(reinterpret_cast<const float4*>(a.x + c));
            const float4 xb = __ldg(reinterpret_cast<const float4*>(a.x + c) + 1);
            const float2 f0 = __half22float2(*reinterpret_cast<const __half2*>(&q.x));
            const float2 f1 = __half22float2(*reinterpret_cast<const __half2*>(&q.y));
            const float2 f2 = __half22float2(*reinterpret_cast<const __half2*>(&q.z));
            const float2 f3 = __half22float2(*reinterpret_cast<const __half2*>(&q.w));
            float d = f0.x * xa.x;
            d = fmaf(f0.y, xa.y, d);
            d = fmaf(f1.x, xa.z, d);
            d = fmaf(f1.y, xa.w, d);
            d = fmaf(f2.x, xb.x, d);
            d = fmaf(f2.y, xb.y, d);
            d = fmaf(f3.x, xb.z, d);
            d = fmaf(f3.y, xb.w, d);
            if (second)
              s1 += d;
            else
              s0 += d;
          }
          c += 256;
          if (c >= static_cast<int>(cols)) {
            c -= cols;
            second = true;
          }
        }
        s0 = warp_sum(s0);
        s1 = warp_sum(s1);
        if (lane == 0 && 128 * (warp - 1) < bytes / 16) {
          atomicAdd(&ysm[r_first - r_base], s0);
          if (s1 != 0.0f) atomicAdd(&ysm[r_first + 1 - r_base], s1);
        }
      } else {
        for (uint32_t i = ct; i < bytes / 16; i += nct) {
          const uint4 q = v[i];
          acc += q.x ^ q.y ^ q.z ^ q.w;
        }
      }
      __syncwarp();
      if (lane == 0) mbar_arrive(&empty[s]);
    }
    if (a.math) {
      // The CTA's rows of y, written once its slots are all added in.
      named_barrier(1, nct);
      const Mat m = c_mats[g];
      const uint32_t r0 = static_cast<uint64_t>(m.rows) * blockIdx.x / gridDim.x;
      const uint32_t r1 = static_cast<uint64_t>(m.rows) * (blockIdx.x + 1) / gridDim.x;
      for (uint32_t r = r0 + ct; r < r1; r += nct) {
        a.y[static_cast<size_t>(g % 4) * kMaxRows + r] = ysm[r - r0];
        ysm[r - r0] = 0.0f;
      }
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(kFullMask, acc, o);
    if (lane == 0) {
      a.out[static_cast<size_t>(g) * gridDim.x * kConsumerWarps + blockIdx.x * kConsumerWarps +
            (warp - 1)] = __uint_as_float(acc & 0x3FFFFFFFu);
    }
    if (a.mode == 1) {
      named_barrier(1, nct);
      if (ct == 0) {
        __threadfence();
        atomicAdd(&a.done[g], 1u);
      }
    }
  }
}

/// Dynamic tasks (modes 3 to 5): the producer warp takes the next task of the lowest matrix that
/// has one left (an atomic per matrix) whenever a slot is free, so CTAs that stream faster take
/// more tasks and a matrix ends when its last task is done, not when the slowest CTA's fixed share
/// is. Every consumer warp reads every slot (as in modes 0 to 2); the last one done with a slot
/// counts its task for the matrix (mode 3: one release add per task). Before its first slot of
/// matrix g a consumer warp waits until all of matrix g − 1's tasks are counted (mode 3), or for
/// the PDL wait (mode 5: one kernel per matrix).
__global__ void __launch_bounds__(kThreads, 1) dynamic_kernel(const Args a) {
  extern __shared__ __align__(128) uint8_t smem[];
  uint64_t* full = reinterpret_cast<uint64_t*>(smem);
  uint64_t* empty = full + kMaxStages;
  uint8_t* ring = smem + 2 * kMaxStages * sizeof(uint64_t);
  __shared__ int2 desc[kMaxStages];     // (matrix, task) in the slot; matrix −1: no more tasks
  __shared__ unsigned cnt[kMaxStages];  // consumer warps done with the slot's current use
  __shared__ int ready;                 // mode 3: the last matrix whose input is known complete
  const int t = static_cast<int>(threadIdx.x);
  const int warp = t >> 5, lane = t & 31;
  init_ring(full, empty, a.stages);
  if (t < a.stages) cnt[t] = 0;
  if (t == 0) ready = a.g0;
  __syncthreads();
  if (a.mode == 5) grid_dependency_trigger();
  if (warp == 0) {  // producer
    if (lane != 0) return;
    // Each slot's task is claimed while the slot before it is copied: the atomic's round trip
    // overlaps the wait for a free slot (only a matrix's end adds one in line).
    int g = a.g0;
    uint32_t task = atomicAdd(&a.next[g], 1u);
    for (uint32_t k = 0;; ++k) {
      const uint32_t s = k % a.stages, use = k / a.stages;
      if (use > 0) mbar_wait(&empty[s], (use - 1) & 1);
      while (task >= c_mats[g].tasks && ++g < a.g1) task = atomicAdd(&a.next[g], 1u);
      if (g >= a.g1) {
        desc[s] = make_int2(-1, 0);
        mbar_arrive(&full[s]);
        return;
      }
      const Mat m = c_mats[g];
      uint64_t p = 0;
      const uint32_t bytes = task_bytes(m, task, &p);
      desc[s] = make_int2(g, static_cast<int>(task));
      mbar_arrive_expect_tx(&full[s], bytes);
      bulk_copy(ring + static_cast<size_t>(s) * a.chunk, a.w + m.off + p, bytes, &full[s]);
      task = atomicAdd(&a.next[g], 1u);
    }
  }
  const int ct = t - 32;
  const int nct = 32 * kConsumerWarps;
  int cur = -1;
  float x = 0.0f;
  for (uint32_t k = 0;; ++k) {
    const uint32_t s = k % a.stages, use = k / a.stages;
    mbar_wait(&full[s], use & 1);
    const int2 d = desc[s];
    if (d.x < 0) break;
    const int g = d.x;
    if (g != cur) {
      if (a.mode == 5) {
        grid_dependency_wait();
      } else if (a.mode == 3 && g > a.g0) {
        // One warp of the CTA polls the counter; the others find its answer in `ready`.
        if (lane == 0 && *static_cast<volatile int*>(&ready) < g) {
          while (ld_acquire(&a.done[g - 1]) < c_mats[g - 1].tasks) {
          }
          atomicMax(&ready, g);
        }
        __syncwarp();
      }
      if (g > a.g0 && a.mode == 3) x = a.out[static_cast<size_t>(g - 1) * kOutStride + lane];
      cur = g;
    }
    uint64_t p = 0;
    const uint32_t bytes = task_bytes(c_mats[g], static_cast<uint32_t>(d.y), &p);
    const uint4* v = reinterpret_cast<const uint4*>(ring + static_cast<size_t>(s) * a.chunk);
    uint32_t acc = __float_as_uint(x);
    for (uint32_t i = ct; i < bytes / 16; i += nct) {
      const uint4 q = v[i];
      acc += q.x ^ q.y ^ q.z ^ q.w;
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(kFullMask, acc, o);
    __syncwarp();  // every lane is done with slot s
    if (lane == 0) {
      const bool last = atomicAdd(&cnt[s], 1u) == kConsumerWarps - 1;
      if (last) cnt[s] = 0;
      mbar_arrive(&empty[s]);  // the refill first; the task's count after it
      if (last) {
        a.out[static_cast<size_t>(g) * kOutStride + d.y % kOutStride] =
            __uint_as_float(acc & 0x3FFFFFFFu);
        if (a.mode == 3) red_release_add(&a.done[g], 1u);
      }
    }
  }
}

__global__ void read_kernel(const uint4* w, size_t n, unsigned* sink) {
  uint32_t acc = 0;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint4 q = ldg_stream(w + i);
    acc += q.x ^ q.y ^ q.z ^ q.w;
  }
  if (acc == 0x12345678u) *sink = acc;
}

void launch(const Args& a, int grid, size_t smem, bool pdl, cudaStream_t s) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = pdl ? 1 : 0;
  if (a.mode >= 3)
    CK(cudaLaunchKernelEx(&cfg, dynamic_kernel, a));
  else
    CK(cudaLaunchKernelEx(&cfg, stream_kernel, a));
}

/// Median of `reps` replays of `exec` in ms.
float time_graph(cudaGraphExec_t exec, cudaStream_t s, int reps) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int i = 0; i < 3; ++i) CK(cudaGraphLaunch(exec, s));
  std::vector<float> ms;
  for (int i = 0; i < reps; ++i) {
    CK(cudaEventRecord(e0, s));
    CK(cudaGraphLaunch(exec, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float m = 0;
    CK(cudaEventElapsedTime(&m, e0, e1));
    ms.push_back(m);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::string type = argc > 1 ? argv[1] : "q4_0";
  const int stages = argc > 2 ? std::atoi(argv[2]) : 12;
  const uint32_t chunk = (argc > 3 ? std::atoi(argv[3]) : 16) * 1024u;
  const int per_gemv_ctas = argc > 4 ? std::atoi(argv[4]) : 1;
  const int math = argc > 5 ? std::atoi(argv[5]) : 0;  // 1: F16 dot products (chunk a multiple
                                                       // of 2 KiB: a warp's run is 2 KiB)
  const int b32 = type == "q4_0" ? 18 : type == "q8_0" ? 34 : 64;  // bytes per 32 weights
  if (stages < 2 || stages > kMaxStages || chunk == 0 || chunk % 16 != 0) {
    std::fprintf(stderr, "stages must be 2..%d and the chunk a positive number of KiB\n",
                 kMaxStages);
    return 2;
  }
  std::vector<Mat> mats;
  uint64_t off = 0;
  auto add = [&](uint32_t rows, uint32_t cols) {
    const uint32_t rb = cols / 32 * b32;
    const uint32_t tb = chunk;  // a slot's worth (no math: rows need not be whole)
    const uint64_t total = static_cast<uint64_t>(rows) * rb;
    mats.push_back({off, rows, rb, tb, static_cast<uint32_t>((total + tb - 1) / tb)});
    off += static_cast<uint64_t>(rows) * rb;
    off = (off + 127) / 128 * 128;
  };
  for (int l = 0; l < 28; ++l) {
    add(4608, 3584);
    add(3584, 3584);
    add(37888, 3584);
    add(3584, 18944);
  }
  add(152064, 3584);
  const int nm = static_cast<int>(mats.size());
  CK(cudaMemcpyToSymbol(c_mats, mats.data(), nm * sizeof(Mat)));
  uint8_t* w = nullptr;
  CK(cudaMalloc(&w, off));
  CK(cudaMemset(w, 0x11, off));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t smem = 2 * kMaxStages * sizeof(uint64_t) + static_cast<size_t>(stages) * chunk;
  CK(cudaFuncSetAttribute(stream_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          static_cast<int>(smem)));
  CK(cudaFuncSetAttribute(dynamic_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          static_cast<int>(smem)));
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, stream_kernel, kThreads, smem));
  int occ_dynamic = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ_dynamic, dynamic_kernel, kThreads, smem));
  occ = std::min(occ, occ_dynamic);
  if (occ < 1) {
    std::fprintf(stderr, "ring of %d x %u bytes does not fit\n", stages, chunk);
    return 2;
  }
  const int pgrid = sms * occ;  // persistent: every CTA resident
  const int ggrid = sms * std::min(per_gemv_ctas, occ);
  float* out = nullptr;
  unsigned* done = nullptr;
  unsigned* sink = nullptr;
  const size_t out_floats =
      kMaxMats * std::max<size_t>(kOutStride, std::max(pgrid, ggrid) * kConsumerWarps);
  CK(cudaMalloc(&out, sizeof(float) * out_floats));
  CK(cudaMemset(out, 0, sizeof(float) * out_floats));
  // done and next in one buffer: every mode's graph starts with the same one memset.
  CK(cudaMalloc(&done, 2 * sizeof(unsigned) * kMaxMats));
  unsigned* next = done + kMaxMats;
  CK(cudaMalloc(&sink, 4));
  float* x = nullptr;
  float* y = nullptr;
  CK(cudaMalloc(&x, sizeof(float) * 18944));
  CK(cudaMemset(x, 0x3c, sizeof(float) * 18944));
  CK(cudaMalloc(&y, sizeof(float) * 4 * kMaxRows));
  if (math && (b32 != 64 || chunk % 2048 != 0 || chunk > 16384)) {
    std::fprintf(stderr, "math needs f16 and a chunk of 2, 4, ..., 16 KiB\n");
    return 2;
  }
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const double gb = static_cast<double>(off) / 1e9;

  // The read bandwidth of this run.
  cudaGraph_t g;
  cudaGraphExec_t ex;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  read_kernel<<<sms * 8, 512, 0, s>>>(reinterpret_cast<const uint4*>(w), off / 16, sink);
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ex, g, 0));
  const float read_ms = time_graph(ex, s, 20);
  const double bw = gb / (read_ms * 1e-3);
  std::printf("%s: %.3f GB per step, %d matrices; read kernel %.1f us = %.0f GB/s\n", type.c_str(),
              gb, nm, read_ms * 1e3, bw);
  std::printf("ring %d x %u KiB = %zu KiB per CTA, %d CTAs per SM fit%s\n", stages, chunk / 1024,
              smem / 1024, occ, math ? "; F16 dot products" : "");

  const char* names[] = {"per-GEMV kernels (PDL)",       "persistent, counters",
                         "persistent, no waits",         "dynamic persistent, counters",
                         "dynamic persistent, no waits", "dynamic per-GEMV (PDL)"};
  for (int mode : {0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}) {
    if (math && mode >= 3) continue;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    Args a{w, out, done, next, 0, nm, mode, stages, chunk, math, x, y};
    CK(cudaMemsetAsync(done, 0, 2 * sizeof(unsigned) * kMaxMats, s));
    if (mode == 0 || mode == 5) {
      for (int m = 0; m < nm; ++m) {
        a.g0 = m;
        a.g1 = m + 1;
        launch(a, ggrid, smem, m > 0, s);  // the first waits for the memset in full
      }
    } else {
      launch(a, pgrid, smem, false, s);
    }
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ex, g, 0));
    const float ms = time_graph(ex, s, 20);
    CK(cudaGetLastError());
    std::printf("%-30s grid %4d: %8.1f us  %6.0f GB/s  %5.1f%% of the read kernel\n", names[mode],
                mode == 0 || mode == 5 ? ggrid : pgrid, ms * 1e3, gb / (ms * 1e-3),
                100.0 * read_ms / ms);
    CK(cudaGraphExecDestroy(ex));
    CK(cudaGraphDestroy(g));
  }
  return 0;
}
