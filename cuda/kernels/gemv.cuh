// Matrix-vector product of the decode step: y = W·x' (+ bias) (+ residual), W in its storage
// type, x' = x, RMSNorm(x) or SwiGLU(gate, up). Host launchers only; includable from g++ code.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/quant/weight_type.hpp"

namespace decodebench::cuda {

/// How the GEMV forms its input vector x' (length cols) from device memory.
enum class GemvInput {
  kPlain,  ///< x' = x
  kRmsNorm,  ///< x' = x · (1 / sqrt(Σx²/cols + eps)) · norm_w, as cpu::rms_norm (x is not written)
  kSwiGlu,  ///< x' = silu(x) · x2 = x / (1 + e^-x) · x2, as cpu::swiglu (x = gate, x2 = up)
};

/// Arguments of one GEMV. W is `rows` × `cols`, row-major, each row row_bytes(type, cols) bytes
/// (GGUF layout: ne0 = cols contiguous). All pointers are device pointers.
struct GemvParams {
  WeightType type = WeightType::kF32;
  const void* w = nullptr;   ///< [rows][row_bytes(type, cols)] bytes
  int64_t rows = 0;          ///< output length (all segments together)
  int64_t cols = 0;          ///< input length; a multiple of the type's block size
  const float* x = nullptr;  ///< [cols]; must not alias any output
  float* y = nullptr;  ///< [rows], or rows [0, y_end0) when y1 is set, or [rows / 2] (swiglu_out)
  const float* bias = nullptr;      ///< [rows] or null (indexed by row over all segments)
  const float* residual = nullptr;  ///< [rows] or null; may alias y (y = W·x' + y)
  /// Kernel variant: 0 = automatic choice (what the backend uses); k > 0 forces variant k from
  /// gemv_variants(type) (benchmarks and tests). A forced variant still falls back to the scalar
  /// kernel when the pointers or shape do not allow it; with x_split the stream kernel runs (the
  /// mma kernel when forced, or where the stream kernel does not apply); a forced 6 (tiled-mma)
  /// on rows that are not a multiple of 128 columns, or 7 (stream-tiled) where the stream kernel
  /// does not apply (before sm_90, matrices of 4 GiB or more, too little shared memory), runs 5
  /// (tiled). GemvLaunchInfo::variant says which ran.
  int variant = 0;

  // ---- fused forms (every kernel but the scalar fallback for unaligned pointers; swiglu_out:
  // the direct and staged kernels only) --------------------------------------------------------
  GemvInput input = GemvInput::kPlain;
  const float* x2 = nullptr;      ///< kSwiGlu: up [cols]
  const float* norm_w = nullptr;  ///< kRmsNorm: weight [cols]
  float eps = 0.0f;               ///< kRmsNorm epsilon (>= 0)
  /// Quantized types: x' already split by launch_gemv_prepare_x (gemv_x_split_bytes(cols) bytes);
  /// x, input, x2, norm_w are then ignored. Lets several GEMVs share one split of x' and keeps
  /// long inputs (e.g. the FFN down projection) from being split once per CTA.
  const void* x_split = nullptr;
  /// W is in the tiled layout (core/quant/tiled_layout.hpp: quant::tile_rows), not GGUF blocks.
  /// Only the tiled kernels (variants 5, 6, 7) read it: needs x_split, gemv_tiled_supported(type,
  /// cols) (Q6_K: gemv_tiled_layout_supported, the stream-tiled kernel only), w 16-byte aligned,
  /// and variant 0, 5, 6 or 7 (else launch_gemv throws, exit 1).
  bool tiled = false;
  /// Output segments for stacked weights ([Wq; Wk; Wv]): rows [0, y_end0) go to y, rows
  /// [y_end0, y_end1) to y1[r − y_end0], rows [y_end1, rows) to y2[r − y_end1]. y1 == nullptr:
  /// one segment (all rows to y). y2 == nullptr: two segments (y_end1 = rows).
  float* y1 = nullptr;
  float* y2 = nullptr;
  int64_t y_end0 = 0;
  int64_t y_end1 = 0;
  /// SwiGLU output for a stacked [Wgate; Wup] (rows = 2h): y[k] = silu(Wgate[k]·x')·(Wup[k]·x')
  /// for k < h (SwiGLU: Shazeer, "GLU Variants Improve Transformer", 2020, eq. 6), as
  /// cpu::swiglu on the two products (y holds h floats). The direct and staged kernels take it
  /// (gemv_swiglu_out_supported); no bias, residual, y1 or x_split (launch_gemv throws, exit 1).
  bool swiglu_out = false;
  /// Programmatic dependent launch: the kernel may start while the previous kernel on the stream
  /// is still running (it prefetches weights, then waits for that kernel's results). Ignored by
  /// the scalar fallback.
  bool pdl = false;
  /// Diagnostics only (bench-kernels); results are garbage: 1 = the fast kernels stream the
  /// weights but skip the math (load-pipeline ceiling), 2 = they skip the weight loads and do the
  /// math on stale data (math ceiling; not the stream kernel), 3 = the stream kernel reads every
  /// chunk's x' from the first chunk's tiles (x' always L1-resident: the cost of x' misses).
  int probe = 0;
};

/// Launches y[r] = Σ_c W[r][c]·x'[c] (+ bias[r]) (+ residual[r]) for every row (with swiglu_out:
/// y[k] = swiglu of rows k and k + rows/2), f32 accumulation, on `stream`; returns the variant id
/// that ran (0: the scalar fallback). Fixed
/// launch shape for given (type, rows, cols, variant, pointer alignment): capturable. Results are
/// deterministic (fixed summation order) for a given shape. The fast paths need `w` and the x
/// vectors 16-byte aligned (and, for F32/F16/BF16, cols % 4 == 0); otherwise a slower fallback
/// kernel with the same semantics runs (plain input and one output segment only). The quantized
/// "mma" kernel splits x' into exact 7-bit digits and multiplies on the int8 tensor cores; its
/// results differ from the f32 CPU dot product by f32 rounding and a residue of at most 2^-27 of
/// each 32-column tile's largest |x'| (the "stream", "tiled" and "stream-tiled" kernels use the
/// first two digits of a pre-split x': at most 2^-13).
/// Throws decodebench::Error: exit 2 for an unsupported type ("GEMV: unsupported weight type
/// #<id>"), exit 1 for null pointers, non-positive sizes, cols not a multiple of the block size,
/// bad segment bounds, a fused form on pointers or a shape the fast kernels do not take, a SwiGLU
/// output with an odd row count, a bias, residual, segments, a pre-split x or a kernel other than
/// direct / staged, an unknown variant, or a failed launch.
int launch_gemv(const GemvParams& p, cudaStream_t stream);

/// How launch_gemv runs a given GEMV (for diagnostics and the run record).
struct GemvLaunchInfo {
  int variant = 0;          ///< variant id (see gemv_variants); 0 for the scalar fallback
  const char* kernel = "";  ///< "staged", "direct", "mma", "mma-presplit", "stream", "tiled",
                            ///< "tiled-mma", "stream-tiled", "fallback"
  bool staged = false;      ///< true: a fast (vectorized) kernel; false: scalar fallback
  int column_splits = 1;    ///< warps sharing one row group (split over the columns)
  int rows_per_warp = 1;
  int64_t grid = 0;    ///< blocks
  int block = 0;       ///< threads per block
  int smem_bytes = 0;  ///< dynamic shared memory per block
  /// Units of work per launch that the grid walks (persistent kernels loop over them): row
  /// groups; in the direct kernel's spread form ("spread") row pairs.
  int64_t tasks = 0;
  int chunk = 0;  ///< mma / stream: weight blocks per pipeline stage
  /// The form of the "stream" and "stream-tiled" kernels (cuda/kernels/gemv_stream.cu); "" for
  /// the other kernels:
  ///   "ring": a CTA-wide ring of ring_slots shared-memory slots, each a group of (block / 32) ·
  ///           rows_per_warp whole rows (DECODEBENCH_GEMV_RING's W × S × R);
  ///   "split": the ring's split form for rows too long for that: groups of ring_pairs row pairs,
  ///           column_splits warps on each pair, ring_slots slots (DECODEBENCH_GEMV_RING_LONG's
  ///           P × S, with fewer pairs where the slots do not fit and, for Q6_K rows that are not
  ///           16-byte multiples, more where fewer make no group of a 16-byte multiple);
  ///   "per-warp": each warp streams the row pieces of its own tasks.
  /// And "presplit" for the mma kernel on a pre-split x' (kernel "mma-presplit"); "spread" for
  /// the direct kernel's spread form (DECODEBENCH_GEMV_DIRECT_SPREAD: the row pairs dealt across
  /// every CTA slot).
  const char* form = "";
  int ring_slots = 0;  ///< "ring" and "split": slots of the ring; else 0
  int ring_pairs = 0;  ///< "split": row pairs per group; else 0
  /// "ring" and "split": CTAs per SM the kernel's registers are sized for (2, or 3 where the type
  /// and form have that budget: gemv_stream.cu, ring_ctas); else 0
  int ring_ctas = 0;
};

/// A GEMV's kernel and form in one name, as the run record counts them: the variant's name
/// (gemv_variant_name: "staged", "direct", "mma", ...; "fallback" for variant 0), then its form,
/// for the stream kernels with its shape in the switches' syntax: "stream-tiled ring 8x2x2"
/// (warps × slots × rows per warp), "stream split 1x2" (pairs × slots), "stream per-warp"; "mma
/// presplit"; "direct spread"; other kernels by name alone. A ring or split kernel whose registers
/// are sized for more than 2 CTAs per SM (ring_ctas) adds it: "stream-tiled split 1x2 (registers
/// for 3 CTAs/SM)".
std::string gemv_form_name(const GemvLaunchInfo& info);

/// The launch configuration launch_gemv would use for `p` on the current device (same checks).
GemvLaunchInfo gemv_launch_info(const GemvParams& p);

/// launch_gemv that also says how it ran `p`: *info (not null) gets what gemv_launch_info(p)
/// returns, from the one plan the launch used. Same errors.
int launch_gemv(const GemvParams& p, cudaStream_t stream, GemvLaunchInfo* info);

/// Whether a pre-split x (GemvParams::x_split) can be used for `p`'s type, shape and weight
/// pointer: the stream kernel or the tensor-core kernel takes it.
bool gemv_presplit_supported(const GemvParams& p);

/// Whether launch_gemv takes `p` with swiglu_out set: the direct or staged kernel would run it
/// (aligned pointers, no pre-split x), an even row count, no bias, residual or segments. Returns
/// false for any other form; throws decodebench::Error (exit 1) only when the CUDA runtime fails
/// (device queries).
bool gemv_swiglu_out_supported(const GemvParams& p);

/// Whether the tiled kernel takes weights of `type` with `cols` columns in the tiled layout (Q4_0,
/// Q4_1, Q8_0, Q4_K; quant::tiled_layout_supported). Host-only check, no device query.
bool gemv_tiled_supported(WeightType type, int64_t cols);

/// Whether this device runs tiled weights of `type` on the stream-tiled kernel by default (variant
/// 7: Q4_0, Q4_1, Q8_0, Q6_K on sm_90; a matrix may still fall back to the tiled kernel when its
/// size or alignment does not suit the stream kernel, except Q6_K, which only the stream-tiled
/// kernel reads). Queries the device once (cached).
bool gemv_stream_tiled_available(WeightType type);

/// Whether a `rows` × `cols` matrix of `type` may go to this device in the tiled layout, i.e. a
/// kernel here reads it: gemv_tiled_supported for the types the tiled kernel reads; for Q6_K
/// (which only the stream-tiled kernel reads) the layout, sm_90 and a matrix end 16-byte aligned
/// from a 16-byte aligned start. Queries the device once (cached).
bool gemv_tiled_layout_supported(WeightType type, int64_t rows, int64_t cols);

/// Variant ids (for GemvParams::variant) available for `type`; empty for an unsupported type.
/// 1 "staged" (cp.async-staged FFMA kernel, every type), 2 "direct" (F32/F16/BF16), 3 "mma"
/// (quantized types), 4 "stream" (quantized types; needs x_split: bulk-copy pipeline and dp4a on
/// the first two digits of x', sm_90, w and the matrix end 16-byte aligned), 5 "tiled" (Q4_0,
/// Q4_1, Q8_0, Q4_K; weights in the tiled layout, GemvParams::tiled), 6 "tiled-mma" (Q4_0, Q4_1,
/// Q8_0 in the tiled layout, the digit products on the int8 tensor cores; only when forced: it
/// ran slower than 5, docs/performance.md round 14; rows not a multiple of 128 columns run 5), 7
/// "stream-tiled" (Q4_0, Q4_1, Q8_0 in the tiled layout through the stream kernel's bulk-copy
/// pipeline, a tile's codes one 128-bit shared-memory load; sm_90, else 5).
/// Automatic choice (from bench-kernels measurements and decode steps on the H200): direct for
/// the float types; for the quantized types staged, except mma for Q4_K/Q5_K from 48 MB and Q4_0
/// from 128 MB of weights with cols <= 8192; whenever x_split is given, stream where it applies,
/// else mma; tiled weights stream-tiled where it applies, else tiled.
/// Forcing variant 4 without x_split, or 5, 6 or 7 without tiled weights, throws (exit 1).
std::vector<int> gemv_variants(WeightType type);

/// Checks the GEMV measurement switches (DECODEBENCH_GEMV_RING, _RING_LONG, _RING_CTAS,
/// _RING_MAX_CTAS, _RING_GGUF, _RING_Q6_K, _RING_FEW_GROUPS, _RING_FEW_GROUPS_PER_SM,
/// DECODEBENCH_GEMV_DIRECT_SPREAD;
/// docs/measurement-switches.md) without a device: throws decodebench::Error (exit 2) naming the
/// first variable whose value is bad. The stream kernel's plans read them too, but a model with no
/// quantized matrix makes none, so a backend checks them here once, before any upload.
void check_gemv_switches();

/// Name of variant `variant` ("staged", ...), or "?" for an unknown id.
const char* gemv_variant_name(int variant);

/// Bytes of the split form of an input of `cols` values (a multiple of 32) for
/// launch_gemv_prepare_x / GemvParams::x_split.
size_t gemv_x_split_bytes(int64_t cols);

/// Writes the split form of x' (input as in GemvParams: x, and x2 / norm_w / eps for the fused
/// forms; cols a multiple of 32, pointers 16-byte aligned) to `split` (gemv_x_split_bytes(cols)
/// bytes, 16-byte aligned) for the quantized GEMVs that read GemvParams::x_split. One small
/// kernel (ceil(cols / 1024) CTAs); `pdl` as in GemvParams. With PDL its CTAs let the next kernel
/// launch at their entry (`trigger_after_wait` false: the GEMV that reads the split starts its
/// weight copies while the producer of x still runs) or once past their wait for that producer
/// (true: the next kernel's CTAs do not compete with the producer's).
/// Throws decodebench::Error (exit 1) for null or misaligned pointers, bad cols or a failed
/// launch.
void launch_gemv_prepare_x(GemvInput input, const float* x, const float* x2, const float* norm_w,
                           float eps, int64_t cols, void* split, bool pdl, cudaStream_t stream,
                           bool trigger_after_wait);

}  // namespace decodebench::cuda
