// Token embedding lookup of the decode step. Host launcher only; includable from g++ code.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/quant/weight_type.hpp"
#include "cuda/kernels/step_clock.cuh"

namespace decodebench::cuda {

/// Writes row `*d_token` of the [vocab × cols] table `table` (stored as `type`, rows of
/// row_bytes(type, cols) bytes) to `out` as `cols` floats, bit-identical to
/// quant::dequantize_row. The token id is read on the device (graph-capturable); it must be in
/// [0, vocab) — the launcher cannot check it (the host validates prompt ids, argmax yields ids
/// < vocab). `table` must be 2-byte aligned (4-byte for F32).
/// Throws decodebench::Error: exit 2 for an unsupported type, exit 1 for null pointers, cols not
/// a positive multiple of the block size, or a failed launch.
/// `pdl`: programmatic dependent launch (the kernel waits for the preceding kernel first).
/// `clock` (optional): this launch begins a decode step; one thread records the GPU's idle time
/// since the previous step's end in it at the kernel's entry (StepClock).
void launch_embedding(WeightType type, const void* table, int64_t cols, const int32_t* d_token,
                      float* out, cudaStream_t stream, bool pdl = false,
                      StepClock* clock = nullptr);

/// Batched form: out[b·out_stride + e] = row d_tokens[b·token_stride] for b < batch (1..65535),
/// in one launch. Same rules and errors as launch_embedding (exit 1 for bad batch or strides).
void launch_embedding_batched(WeightType type, const void* table, int64_t cols,
                              const int32_t* d_tokens, int64_t token_stride, int64_t batch,
                              float* out, int64_t out_stride, cudaStream_t stream, bool pdl = false,
                              StepClock* clock = nullptr);

}  // namespace decodebench::cuda
