// Greedy sampling: argmax over logits, written as an int32 token id to memory the device
// addresses (device memory, or mapped pinned host memory). Host launchers only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "cuda/kernels/step_clock.cuh"

namespace decodebench::cuda {

/// Bytes of device scratch that launch_argmax / launch_argmax_batched need for `m` rows of `n`
/// values (preallocate once with the workspace). Throws decodebench::Error (exit 1) for n <= 0,
/// n >= 2^31 or m <= 0.
size_t argmax_scratch_bytes(int64_t n, int64_t m);

/// d_out[0] = index of the largest of x[0, n), with cpu::argmax's rules: ties go to the lowest
/// index, and the first NaN (lowest index) wins over every number. Two launches: many blocks
/// reduce chunks to (value, index) partials in `scratch`, one block reduces the partials.
/// `scratch` must hold argmax_scratch_bytes(n, 1) bytes (`scratch_bytes` is checked).
/// Throws decodebench::Error (exit 1) for null pointers, bad sizes, too little scratch or a
/// failed launch.
/// `pdl`: programmatic dependent launch (both kernels wait for the preceding kernel's results).
/// `d_advance` (optional): a decode step's inputs, 4 int32 {token, pos, seq_len, on}. When on != 0
/// the final kernel also writes the next greedy step's inputs there: token = the argmax, pos + 1,
/// seq_len = pos + 2, so that step needs no H2D copy (written after every earlier kernel of the
/// step has finished reading them).
/// `clock` (optional): this launch ends a decode step; the final kernel stamps the step's end in it
/// after its stores (StepClock).
/// `out_slots` (a power of two, 1..64; > 1 needs `d_advance`): d_out holds that many tokens and the
/// step at position pos (d_advance[1], read before advancing) writes d_out[pos % out_slots], so two
/// steps in flight (launch-ahead decoding) keep their tokens apart; any other count throws
/// decodebench::Error (exit 1).
void launch_argmax(const float* x, int64_t n, void* scratch, size_t scratch_bytes, int32_t* d_out,
                   cudaStream_t stream, bool pdl = false, int32_t* d_advance = nullptr,
                   StepClock* clock = nullptr, int out_slots = 1);

/// Batched form: d_out[r] = argmax of row r (x + r·row_stride, n values) for r < m, in the same
/// two launches. row_stride >= n (in floats). `d_advance` and `clock` need m = 1 (exit 1
/// otherwise).
void launch_argmax_batched(const float* x, int64_t n, int64_t m, int64_t row_stride, void* scratch,
                           size_t scratch_bytes, int32_t* d_out, cudaStream_t stream,
                           bool pdl = false, int32_t* d_advance = nullptr,
                           StepClock* clock = nullptr);

}  // namespace decodebench::cuda
