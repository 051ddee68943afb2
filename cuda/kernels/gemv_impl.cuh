// Internal interface between the GEMV translation units (gemv.cu plans and dispatches;
// gemv_direct.cu, gemv_mma.cu and gemv_stream.cu hold the fast kernels). Plain structs and host
// declarations only: includable from g++ and nvcc; not part of the public launcher API (gemv.cuh).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/quant/weight_type.hpp"

namespace decodebench::cuda::gemv_impl {

/// How a kernel forms its input vector x' from device memory (per CTA, into shared memory).
enum class XKind : int32_t {
  kPlain = 0,     ///< x' = x
  kRmsNorm = 1,   ///< x' = (x · 1/sqrt(Σx²/cols + eps)) · norm_w, as cpu::rms_norm
  kSwiGlu = 2,    ///< x' = silu(x) · x2, as cpu::swiglu (x = gate, x2 = up)
  kPreSplit = 3,  ///< mma / stream kernels: x already split (launch_gemv_prepare_x), in `split`
};

struct XSource {
  XKind kind = XKind::kPlain;
  const float* x = nullptr;       ///< [cols]
  const float* x2 = nullptr;      ///< [cols] (SwiGLU: up)
  const float* norm_w = nullptr;  ///< [cols] (RMSNorm weight)
  float eps = 0.0f;
  const void* split = nullptr;  ///< kPreSplit: x_split_bytes(cols) bytes from prepare_x
};

/// Where results go: rows [0, end0) → y0[r], [end0, end1) → y1[r − end0], [end1, rows) →
/// y2[r − end1]; bias[r] and residual[r] (global row index) are added when not null. With
/// swiglu_half > 0 instead y0[k] = swiglu(row k, row k + swiglu_half).
struct YSink {
  float* y0 = nullptr;
  float* y1 = nullptr;
  float* y2 = nullptr;
  int64_t end0 = 0;
  int64_t end1 = 0;
  const float* bias = nullptr;
  const float* residual = nullptr;
  /// > 0 (direct and staged kernels): rows [0, h) and [h, 2h) are gate and up; y0[k] =
  /// silu(gate_k)·up_k for k < h (cpu::swiglu), no bias, residual or segments.
  int64_t swiglu_half = 0;
};

/// Everything a fast GEMV kernel needs (plain data, passed by value).
struct KernelArgs {
  const uint8_t* w = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  XSource x;
  YSink y;
  int ksplit = 1;  ///< warps sharing one row group (column split), divides the CTA's warps
  /// Row groups of a CTA (CTAs loop over tasks: persistent grid); 0 in the direct kernel's
  /// spread form, which walks row pairs.
  int64_t ntasks = 0;
  int pdl = 0;         ///< 1: launched with the programmatic-dependent-launch attribute
  int chunk = 0;       ///< MMA kernel: blocks per pipeline stage (<= the type's maximum)
  int probe = 0;       ///< diagnostics (wrong results): GemvParams::probe
  int ring_slots = 0;  ///< stream kernel's ring form: shared-memory slots (0: the per-warp form)
  int spread = 0;      ///< direct kernel: 1 deals row pairs across the whole grid (gemv_direct.cu)
};

/// A launch configuration.
struct Plan {
  int64_t grid = 0;
  int block = 0;
  int smem = 0;
  int ksplit = 1;
  int rows_per_warp = 1;
  int64_t ntasks = 0;  ///< KernelArgs::ntasks
  int chunk = 0;       ///< MMA / stream kernels: blocks per stage
  int ring_slots = 0;  ///< stream kernel: > 0 runs its ring form (whole rows) with that many slots
  /// ring form: = the CTA's warps in the whole-row form (a warp per rows_per_warp rows); fewer:
  /// the split form, groups of ring_pairs row pairs with block / 32 / ring_pairs warps per pair
  int ring_pairs = 0;
  /// ring form: the CTAs per SM the kernel's registers are sized for (its __launch_bounds__
  /// minimum; gemv_stream.cu, ring_ctas): 2 by default, 3 where the type's budget or
  /// DECODEBENCH_GEMV_RING_CTAS asks for it; 0 for the other forms.
  int ring_ctas = 0;
  /// direct kernel: 1 runs its spread form (every CTA slot filled, the row pairs dealt across
  /// the grid's row groups: direct_spread_request)
  int spread = 0;
};

// ---- x split format (mma and stream kernels) ----------------------------------------------------
// For every 32-column tile j of x': an exponent e_j (2^e_j ≥ max|x'|/64) and four signed 8-bit
// digits per column, x'[c] ≈ 2^e_j · (X0 + X1/128 + X2/128² + X3/128³) (error ≤ 2^-22 relative to
// the tile's max), stored as digits [4][cols + 16] bytes followed by per-tile meta: three int4:
//   {f0, f1, Σ X0, Σ X1}, {f2, f3, Σ X2, Σ X3} (f_n = 2^(e_j − 7n) as float bits; digit sums over
//   the tile's 32 columns) and {Σ x'[c] as float bits, Σlo X0 | Σlo X1 << 16, Σlo X2 | Σlo X3 <<
//   16, 0} (Σlo: over columns 0..15, as int16).
//
// A pre-split x (prepare_x) then holds the same numbers again in the stream kernel's layout, in
// groups of 32 tiles (one warp-wide pass of that kernel: lane l reads tile 32g + l of group g).
// A group is kStreamGroupBytes: for digits n = 0..2 and halves h = 0, 1 (columns 16h..16h + 15
// of the tile), 32 × 16 bytes at (2n + h)·512 + l·16, then five int32 planes of 32 at 3072 +
// p·128 + l·4: f_1 bits; Σ X0 | Σ X1 << 16; Σ X2 | Σlo X2 << 16; Σ x' (float bits); Σlo X0 |
// Σlo X1 << 16 (digit sums fit int16: |Σ| ≤ 32·64). Every warp-wide load is contiguous, and a
// lane reaches all of its tile's numbers from one address with immediate offsets.

/// Bytes of the digit rows of a split x of `cols` columns (4 rows of cols + 16 bytes).
constexpr int64_t x_split_digit_bytes(int64_t cols) { return 4 * (cols + 16); }
/// Bytes of the mma kernel's layout (digits then 48 bytes of meta per tile), 16-byte multiple.
constexpr int64_t x_split_mma_bytes(int64_t cols) {
  return x_split_digit_bytes(cols) + cols / 32 * 48;
}
/// Digits in the stream layout, its int32 planes per tile, tiles and bytes per group.
constexpr int kStreamDigits = 3;
constexpr int kStreamPlanes = 5;
constexpr int kStreamGroupTiles = 32;
constexpr int kStreamPlaneBase = 2 * kStreamDigits * kStreamGroupTiles * 16;  // 3072
constexpr int kStreamGroupBytes = kStreamPlaneBase + kStreamPlanes * kStreamGroupTiles * 4;
static_assert(kStreamGroupBytes % 16 == 0, "groups keep 16-byte alignment");
/// Byte offset of the stream layout in a pre-split x (16-byte aligned).
constexpr int64_t x_split_stream_offset(int64_t cols) { return x_split_mma_bytes(cols); }
/// Offset, within the stream layout, of digit n's 16 bytes for half h of tile j.
constexpr int64_t x_stream_digit_offset(int64_t j, int n, int h) {
  return j / kStreamGroupTiles * kStreamGroupBytes + (2 * n + h) * kStreamGroupTiles * 16 +
         j % kStreamGroupTiles * 16;
}
/// Offset, within the stream layout, of plane p's int32 for tile j.
constexpr int64_t x_stream_plane_offset(int64_t j, int p) {
  return j / kStreamGroupTiles * kStreamGroupBytes + kStreamPlaneBase + p * kStreamGroupTiles * 4 +
         j % kStreamGroupTiles * 4;
}
/// Bytes of a whole pre-split x: the mma layout, then the stream layout's groups (16-byte
/// multiple). prepare_x always writes both, about 3.6 bytes per column more than the mma kernel
/// reads; the split kernel's time is its launch latency either way.
constexpr int64_t x_split_bytes(int64_t cols) {
  return x_split_stream_offset(cols) +
         (cols / 32 + kStreamGroupTiles - 1) / kStreamGroupTiles * kStreamGroupBytes;
}

// ---- per-kernel entry points (defined in gemv_direct.cu / gemv_mma.cu) ---------------------

/// Direct kernel (F32/F16/BF16; 16-byte loads, 2 rows per warp, x' in shared memory).
/// Requirements: w 16-byte aligned, cols a multiple of 8 (16-bit types) or 4 (F32), x pointers
/// 16-byte aligned, cols·4 + 256 bytes of shared memory available.
bool direct_supported(WeightType t, int64_t cols);
/// The launch shape: the column split of plan_column_split; with the spread form
/// (direct_spread_request) a grid of min(CTA slots, row pairs) CTAs. Queries the kernel's
/// occupancy (CudaError on failure); a bad DECODEBENCH_GEMV_DIRECT_SPREAD throws
/// decodebench::Error (exit 2).
Plan direct_plan(WeightType t, int64_t rows, int64_t cols, int sms);
/// Which matrices the direct kernel runs in its spread form.
enum class DirectSpread {
  kNone,  ///< none: each CTA's tasks of 8 / ksplit row pairs, the grid no larger than the tasks
  kLong,  ///< rows of more than 4,096 columns (the down projections: a long x' in pieces)
  kAll,   ///< every matrix
};
/// From DECODEBENCH_GEMV_DIRECT_SPREAD (a measurement switch): unset or empty → the default
/// (gemv_direct.cu, kDirectSpreadDefault); "0" → kNone; "long" → kLong; "1" → kAll. Any other
/// value throws decodebench::Error (exit 2) naming the variable. No device query.
DirectSpread direct_spread_request();
void direct_launch(WeightType t, const KernelArgs& a, const Plan& p, cudaStream_t stream);

/// MMA kernel (quantized types; int8 tensor-core MMA on exact digit splits of x').
bool mma_supported(WeightType t, int64_t cols);
Plan mma_plan(WeightType t, int64_t rows, int64_t cols, bool presplit, int sms);
void mma_launch(WeightType t, const KernelArgs& a, const Plan& p, cudaStream_t stream);
/// Stream kernel (quantized types on a pre-split x'; sm_90 bulk copies, dp4a on the digits).
/// Requirements: compute capability >= 9 (`major`), w 16-byte aligned, the matrix end
/// (w + rows·row_bytes) 16-byte aligned, cols a multiple of 32 and of the block size. `tiled`:
/// the weights are in the tiled layout (Q4_0, Q4_1, Q8_0 with quant::tiled_layout_supported; the
/// "stream-tiled" variant), else GGUF blocks. stream_plan / stream_launch throw
/// decodebench::Error (exit 1) for a type the tiled form does not read.
bool stream_supported(WeightType t, const void* w, int64_t rows, int64_t cols, int major,
                      bool tiled = false);
Plan stream_plan(WeightType t, int64_t rows, int64_t cols, int sms, bool tiled = false);
/// Parses every DECODEBENCH_GEMV_RING* measurement switch that stream_plan reads (the same
/// parsers, so the same rules) and throws decodebench::Error (exit 2) for the first bad value;
/// no device query.
void check_stream_switches();
void stream_launch(WeightType t, const KernelArgs& a, const Plan& p, cudaStream_t stream,
                   bool tiled = false);

/// Tiled kernel (Q4_0, Q4_1, Q8_0, Q4_K in the tiled layout of core/quant/tiled_layout.hpp, on a
/// pre-split x'; 16-byte loads straight to registers, dp4a on the first two digits of x').
/// Requirements: quant::tiled_layout_supported(t, cols), w 16-byte aligned.
bool tiled_supported(WeightType t, const void* w, int64_t cols);
/// Tiles per row the tiled kernel takes (its per-row offsets are 32-bit).
constexpr int64_t kTiledMaxTiles = int64_t{1} << 24;
Plan tiled_plan(WeightType t, int64_t rows, int64_t cols, int sms);
void tiled_launch(WeightType t, const KernelArgs& a, const Plan& p, cudaStream_t stream);

/// Tiled-mma kernel (Q4_0, Q4_1, Q8_0 in the tiled layout, on a pre-split x'; 16 rows per warp,
/// the digit products on the int8 tensor cores (PTX ISA, mma.m16n8k32), gemv_tiled_mma.cu).
/// Supported: the type has the kernel, tiled_supported(t, w, cols), and cols a multiple of 128
/// (4 tiles of 32 columns per step). Host-only check.
bool tiled_mma_supported(WeightType t, const void* w, int64_t cols);
/// Launch shape for `rows` × `cols` on `sms` SMs: 256 threads, 1 KiB of shared memory, tasks of
/// 16 rows per warp, column split from plan_column_split. Queries the kernel's occupancy (needs a
/// device; CUDA errors throw CudaError).
Plan tiled_mma_plan(WeightType t, int64_t rows, int64_t cols, int sms);
/// Enqueues y = W·x' on `stream` with plan `p` (PDL when a.pdl). Throws decodebench::Error
/// (runtime, exit 1) for a plan whose column split does not divide the CTA's 8 warps or exceeds
/// the row's steps; CUDA launch errors as CudaError.
void tiled_mma_launch(WeightType t, const KernelArgs& a, const Plan& p, cudaStream_t stream);

/// Writes the split form of x' (x_split_bytes(cols) bytes at `out`, 16-byte aligned). With PDL
/// (`pdl` != 0) its CTAs let the next kernel launch at their entry, or once past their wait for
/// the producer of x when `trigger_after_wait` != 0 (launch_gemv_prepare_x).
void prepare_x_launch(const XSource& x, int64_t cols, void* out, int pdl, cudaStream_t stream,
                      int trigger_after_wait);

/// A column split for the row-group kernels (direct, tiled: 8 warps per CTA, 2 rows per warp).
struct SplitPlan {
  int ksplit = 1;      ///< warps sharing a row group
  int64_t ntasks = 0;  ///< row groups
  int64_t grid = 0;    ///< CTAs (persistent: at most max_grid)
};

/// The column split (1, 2, 4 or 8 warps per row group) whose tasks spread most evenly over the
/// `max_grid` resident CTAs for `rows` rows of `units` column units each, `batch` units per batch
/// of loads: the product of task balance over the CTAs, used share of columns and rows, load
/// depth (a warp with fewer units than a batch keeps few loads in flight; `across_tasks`: the
/// kernel's batches run across tasks, so all of a warp's tasks count, and every warp of a split
/// needs a unit: splits above `units` are not considered) and fill of the GPU, times 0.9 for 4
/// and 8 splits (an empirical calibration: docs/performance.md, round 8).
SplitPlan plan_column_split(int64_t rows, int64_t units, int batch, int64_t max_grid,
                            bool across_tasks);

/// Launches `kernel` with the given configuration; with `pdl` the launch carries the
/// programmatic-stream-serialization attribute (the kernel must call
/// cudaGridDependencySynchronize before reading what earlier kernels wrote).
void launch_with_attrs(const void* kernel, void** args, dim3 grid, dim3 block, size_t smem,
                       bool pdl, cudaStream_t stream);

/// Number of SMs of the current device (cached).
int sm_count();

/// Compute-capability major version of the current device (cached).
int cc_major();

/// Largest dynamic shared memory one block of the current device may opt in to, bytes (cached).
int smem_optin();

/// Shared memory of one SM (bytes), and what the system reserves of it for each CTA (cached).
int smem_per_sm();
int smem_reserved_per_cta();

/// CTAs of `threads` threads and `smem` bytes of dynamic shared memory that fit on one SM
/// (occupancy API; cached). The first call for a kernel raises its dynamic shared-memory limit to
/// the device's opt-in maximum.
int ctas_per_sm(const void* kernel, int threads, int smem);

}  // namespace decodebench::cuda::gemv_impl
