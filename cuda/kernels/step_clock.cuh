// The GPU's idle time between consecutive decode steps, stamped on the GPU by the step's own first
// and last kernels (embedding and the final argmax kernel). Includable from g++ code (the device
// functions only under nvcc).
#pragma once

#include <cstddef>
#include <cstdint>

namespace decodebench::cuda {

/// Header of a step clock in device memory; `capacity` gaps (uint64 ns) follow it directly.
/// The final argmax kernel of a batch-1 step writes `last_end_ns`; the next step's embedding
/// kernel, at its entry, stores now − last_end_ns as gap `count` (while count < capacity), adds 1
/// to count and clears last_end_ns, so a step records one gap only after a step that ended with
/// the clock, and a kernel that runs twice records it once. Steps run one after another (the host
/// synchronises on each), so one thread does this without atomics. Zeroing the first 12 bytes
/// (last_end_ns and count: offsetof(StepClock, capacity)) starts a new series; `capacity` is set
/// once at allocation.
struct StepClock {
  uint64_t last_end_ns;  ///< %globaltimer at the end of the last step's argmax; 0: none
  uint32_t count;        ///< gaps recorded since the series began (may exceed capacity)
  uint32_t capacity;     ///< gaps the buffer holds after this header
};
static_assert(sizeof(StepClock) == 16 && offsetof(StepClock, capacity) == 12);

/// Bytes of a step clock holding `capacity` gaps.
constexpr uint64_t step_clock_bytes(uint32_t capacity) {
  return sizeof(StepClock) + uint64_t{capacity} * sizeof(uint64_t);
}

#ifdef __CUDACC__
namespace kernels {

/// %globaltimer: the GPU's global nanosecond clock (PTX ISA, "Special registers"), the same on
/// every SM.
__device__ __forceinline__ uint64_t global_timer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// A step's first kernel, one thread, after its PDL wait (so the last step's stamp is visible
/// even if a launch ever overlapped the two): records the gap since the last step's end.
__device__ __forceinline__ void step_clock_begin(StepClock* clock) {
  if (clock == nullptr) return;
  const uint64_t now = global_timer_ns();
  const uint64_t end = clock->last_end_ns;
  if (end == 0) return;
  const uint32_t n = clock->count;
  if (n < clock->capacity) {
    reinterpret_cast<uint64_t*>(clock + 1)[n] = now > end ? now - end : 0;
  }
  clock->count = n + 1;
  clock->last_end_ns = 0;
}

/// A step's last kernel, one thread, after its last store: stamps the step's end.
__device__ __forceinline__ void step_clock_end(StepClock* clock) {
  if (clock != nullptr) clock->last_end_ns = global_timer_ns();
}

}  // namespace kernels
#endif

}  // namespace decodebench::cuda
