// Two-pass argmax. Candidates are ordered by a total order — any NaN beats any number, then the
// larger value, then the lower index — so every reduction tree gives cpu::argmax's answer
// (first NaN, else the lowest index of the maximum; -0 == +0 ties go to the lower index).
#include <climits>
#include <string>

#include "core/error.hpp"
#include "cuda/check.hpp"
#include "cuda/kernels/argmax.cuh"
#include "cuda/kernels/common.cuh"
#include "cuda/kernels/gemv_device.cuh"
#include "cuda/kernels/gemv_impl.cuh"
#include "cuda/kernels/step_clock.cuh"

namespace decodebench::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kPerThread = 8;
constexpr int64_t kChunk = int64_t{kThreads} * kPerThread;  ///< values per pass-1 block
constexpr int kMaxRows = 65535;                             ///< gridDim.y limit

struct Candidate {
  float v;
  int32_t i;  ///< INT_MAX: no candidate yet (loses to every real element, -inf included)
};

__device__ __forceinline__ bool better(Candidate a, Candidate b) {
  const bool a_nan = isnan(a.v);
  const bool b_nan = isnan(b.v);
  if (a_nan != b_nan) return a_nan;
  if (!a_nan && a.v != b.v) return a.v > b.v;
  return a.i < b.i;
}

__device__ __forceinline__ Candidate warp_best(Candidate c) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const Candidate other{__shfl_xor_sync(kernels::kFullMask, c.v, o),
                          __shfl_xor_sync(kernels::kFullMask, c.i, o)};
    if (better(other, c)) c = other;
  }
  return c;
}

/// Best candidate of the block (valid in thread 0).
__device__ __forceinline__ Candidate block_best(Candidate c) {
  __shared__ Candidate warp_c[kThreads / 32];
  c = warp_best(c);
  const int t = static_cast<int>(threadIdx.x);
  if ((t & 31) == 0) warp_c[t >> 5] = c;
  __syncthreads();
  if (t < 32) {
    c = t < kThreads / 32 ? warp_c[t] : Candidate{-INFINITY, INT_MAX};
    c = warp_best(c);
  }
  return c;
}

/// Pass 1: block (b, r) reduces values [b·kChunk, (b+1)·kChunk) of row r to partial[r][b].
__global__ void __launch_bounds__(kThreads)
    argmax_partial_kernel(const float* x, int64_t n, int64_t row_stride, Candidate* partial) {
  kernels::grid_dependency_trigger();
  kernels::grid_dependency_wait();
  const int64_t row = blockIdx.y;
  const float* xr = x + row * row_stride;
  const int64_t base = static_cast<int64_t>(blockIdx.x) * kChunk + threadIdx.x;
  float v[kPerThread];
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {  // all loads first: several in flight per thread
    const int64_t idx = base + int64_t{j} * kThreads;
    v[j] = idx < n ? xr[idx] : -INFINITY;
  }
  Candidate c{-INFINITY, INT_MAX};
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const int64_t idx = base + int64_t{j} * kThreads;
    const Candidate cand{v[j], idx < n ? static_cast<int32_t>(idx) : INT_MAX};
    if (better(cand, c)) c = cand;
  }
  c = block_best(c);
  if (threadIdx.x == 0) partial[row * gridDim.x + blockIdx.x] = c;
}

/// Pass 2: block r reduces the `nparts` partials of row r to out[r].
__global__ void __launch_bounds__(kThreads)
    argmax_final_kernel(const Candidate* partial, int nparts, int32_t* out, int32_t* advance,
                        int slot_mask, StepClock* clock) {
  kernels::grid_dependency_trigger();
  kernels::grid_dependency_wait();
  const Candidate* pr = partial + static_cast<int64_t>(blockIdx.x) * nparts;
  Candidate c{-INFINITY, INT_MAX};
  for (int p = static_cast<int>(threadIdx.x); p < nparts; p += kThreads) {
    if (better(pr[p], c)) c = pr[p];
  }
  c = block_best(c);
  if (threadIdx.x == 0) {
    // With slots (m = 1), the step's position picks one: a step launched ahead cannot overwrite
    // the token of the step before it before the host has read that one.
    out[blockIdx.x + (advance != nullptr ? (advance[1] & slot_mask) : 0)] = c.i;
    // The next greedy step's inputs (m = 1): every kernel before this one has completed.
    if (advance != nullptr && advance[3] != 0) {
      const int32_t pos = advance[1] + 1;
      advance[0] = c.i;
      advance[1] = pos;
      advance[2] = pos + 1;
    }
    kernels::step_clock_end(clock);  // the step's last kernel: its GPU work ends here
  }
}

int64_t partial_count(int64_t n) { return kernels::ceil_div<int64_t>(n, kChunk); }

void check_sizes(int64_t n, int64_t m) {
  if (n <= 0 || n >= INT_MAX || m <= 0 || m > kMaxRows) {
    throw runtime_error("argmax: invalid size n=" + std::to_string(n) + " m=" + std::to_string(m) +
                        " (need 0 < n < 2^31 - 1, 0 < m <= 65535)");
  }
}

}  // namespace

size_t argmax_scratch_bytes(int64_t n, int64_t m) {
  check_sizes(n, m);
  return static_cast<size_t>(partial_count(n) * m) * sizeof(Candidate);
}

namespace {

void launch_argmax_rows(const float* x, int64_t n, int64_t m, int64_t row_stride, void* scratch,
                        size_t scratch_bytes, int32_t* d_out, cudaStream_t stream, bool pdl,
                        int32_t* d_advance, StepClock* clock, int out_slots) {
  check_sizes(n, m);
  if (out_slots < 1 || out_slots > 64 || (out_slots & (out_slots - 1)) != 0 ||
      (out_slots > 1 && d_advance == nullptr)) {
    throw runtime_error(
        "argmax: out_slots must be a power of two in [1, 64] and needs d_advance, "
        "got " +
        std::to_string(out_slots));
  }
  if ((d_advance != nullptr || clock != nullptr) && m != 1) {
    throw runtime_error("argmax: d_advance and clock need one row, got m=" + std::to_string(m));
  }
  if (x == nullptr || d_out == nullptr || scratch == nullptr) {
    throw runtime_error("argmax: null device pointer");
  }
  if (m > 1 && row_stride < n) {
    throw runtime_error("argmax: row stride " + std::to_string(row_stride) +
                        " is smaller than the row length " + std::to_string(n));
  }
  const size_t need = argmax_scratch_bytes(n, m);
  if (scratch_bytes < need) {
    throw runtime_error("argmax: scratch of " + std::to_string(scratch_bytes) + " bytes, need " +
                        std::to_string(need));
  }
  auto* partial = static_cast<Candidate*>(scratch);
  const int64_t parts = partial_count(n);
  const dim3 grid1(static_cast<unsigned>(parts), static_cast<unsigned>(m));
  int64_t stride = row_stride;
  void* args1[] = {const_cast<float**>(&x), &n, &stride, &partial};
  gemv_impl::launch_with_attrs(reinterpret_cast<const void*>(&argmax_partial_kernel), args1, grid1,
                               dim3(kThreads), 0, pdl, stream);
  int nparts = static_cast<int>(parts);
  int slot_mask = out_slots - 1;
  void* args2[] = {&partial, &nparts, &d_out, &d_advance, &slot_mask, &clock};
  gemv_impl::launch_with_attrs(reinterpret_cast<const void*>(&argmax_final_kernel), args2,
                               dim3(static_cast<unsigned>(m)), dim3(kThreads), 0, pdl, stream);
}

}  // namespace

void launch_argmax_batched(const float* x, int64_t n, int64_t m, int64_t row_stride, void* scratch,
                           size_t scratch_bytes, int32_t* d_out, cudaStream_t stream, bool pdl,
                           int32_t* d_advance, StepClock* clock) {
  launch_argmax_rows(x, n, m, row_stride, scratch, scratch_bytes, d_out, stream, pdl, d_advance,
                     clock, 1);
}

void launch_argmax(const float* x, int64_t n, void* scratch, size_t scratch_bytes, int32_t* d_out,
                   cudaStream_t stream, bool pdl, int32_t* d_advance, StepClock* clock,
                   int out_slots) {
  launch_argmax_rows(x, n, 1, n, scratch, scratch_bytes, d_out, stream, pdl, d_advance, clock,
                     out_slots);
}

}  // namespace decodebench::cuda
