// Device-memory read bandwidth probe, for `decodebench bandwidth` and the roofline. Host only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace decodebench::cuda {

/// Measures the read bandwidth of the current device: allocates `bytes` (rounded down to a
/// multiple of 16; use several times the L2 size, e.g. 1 GiB, so reads come from HBM), fills it,
/// runs one warm-up and `iterations` timed passes of a streaming-read kernel (16-byte loads,
/// several in flight per thread, a persistent grid of a few blocks per SM; it XORs everything into
/// a 4-byte checksum so no load can be elided), each timed with CUDA events on `stream`.
/// Returns bytes / median time in GB/s (1e9 bytes per second). Allocates and synchronizes: not
/// for use inside a decode step.
/// Throws decodebench::Error: exit 3 when the buffer cannot be allocated, exit 1 for bytes < 1 MiB,
/// iterations < 1 or a CUDA failure.
double measure_read_bandwidth_gbps(size_t bytes, int iterations, cudaStream_t stream);

}  // namespace decodebench::cuda
