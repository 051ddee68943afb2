// Probe (not part of the build): what a thread-block cluster kernel costs between two GEMVs of a
// decode step under programmatic dependent launch (PDL), against a plain kernel doing the same
// trivial work. Rounds 29 and 30 made a SmolLM2 layer two cluster kernels and the step took
// 2.6–3.1× as long; decode attention on sm_90 is a cluster kernel at every short context. This
// separates the cluster launch from the work inside those kernels.
//
// A graph holds N pairs [gemv, middle]: `gemv` is a GEMV-like kernel (one CTA per SM, 256
// threads, dynamic shared memory as asked, so it holds the SMs as the real GEMVs do): each thread
// loads its share of a weight buffer (16-byte loads, before the PDL wait, as the real GEMVs ask
// for their weights), triggers its dependents, waits, reads 16 floats of the previous kernel's
// output and writes one float. `middle` is a small kernel (M CTAs of 128 threads, M the same
// multiple of 8 in every form; wait, trigger, read and write 1 float per thread, as attention
// orders its wait and trigger) launched
//   - not at all (the baseline: only the GEMVs),
//   - as a plain kernel,
//   - as a cluster kernel of C CTAs (cluster attribute; C = 1 too, to see the attribute alone).
//   - with PDL, also plain and as a cluster of 2 with its trigger before its wait (the GEMV
//     after it may then load its weights while it waits).
// Each configuration runs with PDL on and off. Printed: µs per pair (median over timed graph
// replays) and the middle kernel's cost = that minus the baseline's.
//
// The weights of all pairs together should exceed the L2 (60 MiB on the H200, 50 on the H100),
// as a decode step's do, so the GEMVs stream from HBM: 120 pairs of 1 MiB by default. Round 31
// in docs/performance.md has its figures (the trigger-first forms were added after that run).
//
// Build and run (H200):
//   nvcc -std=c++20 -O3 -arch=sm_90 docs/probes/cluster_pdl.cu -o cluster_pdl
//   ./cluster_pdl [pairs=120] [weight_kib_per_gemv=1024] [middle_ctas=24] [gemv_smem_kib=0]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

namespace {

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }
__device__ __forceinline__ void pdl_trigger() {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

constexpr int kGemvThreads = 256;
constexpr int kMaxLoads = 16;  ///< 16-byte weight loads per thread held in registers

/// GEMV-like: weights first, then the PDL wait, then the input, then one output per thread. The
/// CTA reads `units` 16-byte words of its share (units <= kGemvThreads · kMaxLoads).
__global__ void __launch_bounds__(kGemvThreads)
    gemv_like(const uint4* __restrict__ w, int units, const float* in, float* out) {
  extern __shared__ float smem[];  // only to hold the SM as a real GEMV's ring does
  const int t = threadIdx.x;
  const int64_t base = static_cast<int64_t>(blockIdx.x) * units;
  uint4 r[kMaxLoads];
#pragma unroll
  for (int i = 0; i < kMaxLoads; ++i) {
    const int u = t + i * kGemvThreads;
    r[i] = u < units ? __ldg(w + base + u) : make_uint4(0, 0, 0, 0);
  }
  pdl_trigger();
  pdl_wait();
  float acc = 0.0f;
#pragma unroll
  for (int i = 0; i < 16; ++i) acc += in[(t * 16 + i) & 4095];
  uint32_t s = 0;
#pragma unroll
  for (int i = 0; i < kMaxLoads; ++i) s ^= r[i].x ^ r[i].y ^ r[i].z ^ r[i].w;
  if (t == 0 && blockDim.x == 0) smem[0] = 0.0f;  // never: keeps the allocation
  out[(blockIdx.x * kGemvThreads + t) & 4095] = acc * 1e-3f + static_cast<float>(s & 1u);
}

/// The middle kernel, trivial work: attention's order (wait, then trigger), or the trigger first
/// (the next GEMV may then start loading its weights while this kernel waits).
template <bool kTriggerFirst>
__global__ void __launch_bounds__(128) middle_kernel(const float* in, float* out) {
  if (kTriggerFirst) pdl_trigger();
  pdl_wait();
  if (!kTriggerFirst) pdl_trigger();
  const int i = (blockIdx.x * 128 + threadIdx.x) & 4095;
  out[i] = in[i] * 0.5f + 1.0f;
}

void launch(const void* kernel, void** args, dim3 grid, dim3 block, size_t smem, bool pdl,
            int cluster, cudaStream_t s) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cudaLaunchAttribute attr[2];
  int n = 0;
  if (pdl) {
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  if (cluster > 0) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = static_cast<unsigned>(cluster);
    attr[n].val.clusterDim.y = 1;
    attr[n].val.clusterDim.z = 1;
    ++n;
  }
  cfg.attrs = attr;
  cfg.numAttrs = n;
  CK(cudaLaunchKernelExC(&cfg, kernel, args));
}

}  // namespace

int main(int argc, char** argv) {
  const int pairs = argc > 1 ? std::atoi(argv[1]) : 120;
  const int weight_kib = argc > 2 ? std::atoi(argv[2]) : 1024;
  const int middle_ctas = argc > 3 ? std::atoi(argv[3]) : 24;
  const int smem_kib = argc > 4 ? std::atoi(argv[4]) : 0;
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  // 16-byte words per CTA: the asked bytes over the SMs, at most 64 KiB a CTA.
  const int units = std::clamp(weight_kib * 1024 / (sms * 16), 1, kGemvThreads * kMaxLoads);
  const size_t per_gemv = static_cast<size_t>(sms) * units * 16;
  // One grid for every middle form (a multiple of 8, the largest cluster), so only the cluster
  // attribute differs between them.
  const int grid = (middle_ctas + 7) / 8 * 8;
  const size_t smem = static_cast<size_t>(smem_kib) * 1024;
  if (smem > 48 * 1024) {
    CK(cudaFuncSetAttribute(gemv_like, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            static_cast<int>(smem)));
  }
  // Each pair reads its own weights (a decode step reads each matrix once).
  uint4* w = nullptr;
  CK(cudaMalloc(&w, per_gemv * pairs));
  CK(cudaMemset(w, 1, per_gemv * pairs));
  float *a = nullptr, *b = nullptr;
  CK(cudaMalloc(&a, 4096 * 4));
  CK(cudaMalloc(&b, 4096 * 4));
  CK(cudaMemset(a, 0, 4096 * 4));
  CK(cudaMemset(b, 0, 4096 * 4));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::printf(
      "%d SMs, %d pairs, %.0f KiB of weights per GEMV (%.1f MiB in all), middle: %d CTAs, "
      "GEMV dynamic shared memory %d KiB\n",
      sms, pairs, per_gemv / 1024.0, per_gemv * pairs / 1048576.0, grid, smem_kib);

  // {cluster, trigger first}: cluster -1 = no middle kernel, 0 = plain, C >= 1 = a cluster of C.
  const std::pair<int, bool> forms[] = {{-1, false}, {0, false}, {1, false}, {2, false},
                                        {4, false},  {8, false}, {0, true},  {2, true}};
  double base[2] = {0, 0};
  for (int pdl = 1; pdl >= 0; --pdl) {
    for (const auto& [form, trigger_first] : forms) {
      if (trigger_first && pdl == 0) continue;  // the same kernel without PDL
      const void* middle = trigger_first ? reinterpret_cast<const void*>(&middle_kernel<true>)
                                         : reinterpret_cast<const void*>(&middle_kernel<false>);
      cudaGraph_t g;
      CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
      for (int p = 0; p < pairs; ++p) {
        const uint4* wp = w + per_gemv / 16 * p;
        float* gin = form < 0 ? a : b;  // with no middle kernel the GEMV reads its predecessor's
        void* gargs[] = {&wp, const_cast<int*>(&units), &gin, &a};
        launch(reinterpret_cast<const void*>(&gemv_like), gargs, dim3(sms), dim3(kGemvThreads),
               smem, pdl != 0, 0, s);
        if (form >= 0) {
          void* margs[] = {&a, &b};
          launch(middle, margs, dim3(grid), dim3(128), 0, pdl != 0, form, s);
        }
      }
      CK(cudaStreamEndCapture(s, &g));
      cudaGraphExec_t ge;
      CK(cudaGraphInstantiate(&ge, g, 0));
      cudaEvent_t e0, e1;
      CK(cudaEventCreate(&e0));
      CK(cudaEventCreate(&e1));
      for (int i = 0; i < 20; ++i) CK(cudaGraphLaunch(ge, s));
      std::vector<float> ms;
      for (int i = 0; i < 200; ++i) {
        CK(cudaEventRecord(e0, s));
        CK(cudaGraphLaunch(ge, s));
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        float m = 0;
        CK(cudaEventElapsedTime(&m, e0, e1));
        ms.push_back(m);
      }
      std::sort(ms.begin(), ms.end());
      const double us = ms[ms.size() / 2] * 1e3 / pairs;
      if (form < 0) base[pdl] = us;
      const char* name = form < 0 ? "GEMVs only" : form == 0 ? "plain middle" : "cluster middle";
      std::printf("pdl %s  %-15s", pdl ? "on " : "off", name);
      if (form > 0)
        std::printf(" C=%d", form);
      else
        std::printf("    ");
      std::printf("  %7.2f µs per pair", us);
      if (trigger_first) std::printf("  (trigger first)");
      if (form >= 0) std::printf("  middle +%5.2f µs", us - base[pdl]);
      std::printf("\n");
      CK(cudaEventDestroy(e0));
      CK(cudaEventDestroy(e1));
      CK(cudaGraphExecDestroy(ge));
      CK(cudaGraphDestroy(g));
    }
  }
  CK(cudaFree(w));
  CK(cudaFree(a));
  CK(cudaFree(b));
  return 0;
}
