// The CUTLASS 3.x sm90a GEMM family: its tuning space and its procedural kernel names.
//
// A kernel is fixed by (element types, layouts, epilogue) from the problem and a
// configuration (CTA tile M x N x K, cluster M x N, schedule, tile scheduler) from the
// space below. Its name spells all of these and is the cache key part, report row and
// allow/deny list entry, e.g.
//   cutlass3x_sm90a_tf32_rrr_128x128x32_1x2x1_coop_persistent_lincomb
//   cutlass3x_sm90a_3xtf32_crr-stAB_128x256x32_2x1x1_coop_persistent_lincomb-align1
// (MMA token: tf32, 3xtf32 (fp32-accurate, three tf32 products), bf16, f16; the caller's
// layouts of A, B, D as r = row-major, c = column-major; operands staged K-major in the
// workspace: -stA, -stB, -stAB (staging is for fp32 operands: bf16 with -stAB rounds them
// to bf16 in the copy, and D stays fp32); tile; cluster; schedule; scheduler; epilogue "lincomb" =
// alpha*acc, "lincomb-biasn" = alpha*acc + bias[n], "evt<hash>" = a fused elementwise tail,
// the first 8 hex digits of SHA-256 of its expression tree; "-align1" = D written without TMA).
// A tuning candidate may add scheduler options chosen at run time, after a '+':
//   <kernel>+splitk16, <kernel>+swz4, <kernel>+rasterN+swz2.
// A D element type other than the operands' adds "-d<dtype>" (bf16 operands writing fp32 D,
// or fp32 operands staged to bf16 writing bf16 D: narrowed values, discover/narrow.h), and
// a bias/tail input type other than D's "-e<dtype>", e.g. ..._lincomb-biasn-df32 or
// ..._evt2c11607a-dbf16-ef32.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/build.h"
#include "families/gemm/problem.h"

namespace fact::realize {

enum class Schedule { Cooperative, Pingpong };
enum class TileScheduler { Persistent, StreamK };

struct GemmConfig {
  int tile_m, tile_n, tile_k;
  int cluster_m, cluster_n;
  Schedule schedule;
  TileScheduler scheduler;
};

/// What the problem fixes about a kernel: the MMA dtype token (tf32 for fp32 inputs under
/// the tf32 policy, 3xtf32 under fp32, bf16 for bf16 inputs and for fp32 inputs under bf16,
/// f16), the element types, the layouts and the epilogue.
struct GemmFamilyKey {
  std::string mma;  // "tf32" | "3xtf32" | "bf16" | "f16"
  DType element;    // the caller's A, B and D element type (fp32 under a bf16 MMA: staged)
  Layout layout_a, layout_b;  // the caller's layouts
  bool bias_n;
  bool stage_a = false, stage_b = false;  // copied K-major into the workspace first
  int split = 1;                          // 3 for 3xTF32 (both operands staged)
  bool align1_d = false;                  // D's leading dimension is not 16-byte aligned
  /// A fused elementwise tail (discovery's epilogue "tree" and input "broadcast"), or null:
  /// the kernel's epilogue is then generated as an EVT (evt_codegen.h).
  nlohmann::json epilogue_tree = nullptr, epilogue_broadcast = nullptr;
  /// D's element type when it is not `element`, and the bias's and tail inputs' when it is
  /// not D's (gemm_d_element, gemm_epi_element).
  std::optional<DType> element_d = std::nullopt, element_epi = std::nullopt;

  bool operator==(const GemmFamilyKey&) const = default;
};

/// Scheduler options a candidate sets at run time (FactGemmArgs.splits/raster/swizzle);
/// zeros are CUTLASS's defaults.
struct GemmRuntime {
  int splits = 0;   // > 1: split-K with this many splits (stream-K kernels only)
  int raster = 0;   // 0 heuristic, 1 along M, 2 along N
  int swizzle = 0;  // 0/1 none, else 2, 4 or 8
  bool operator==(const GemmRuntime&) const = default;
};

/// The CUTLASS families that implement `p` under `policy`; empty with `why` set when none
/// does (then only the vendor path is a candidate). fp32 inputs: under tf32, the operands
/// as given where tf32 WGMMA can read them (A row-major with B either, or both
/// column-major) and with 16-byte aligned strides, plus every staging that turns the
/// problem into one of those (an unaligned operand, or K not a multiple of 4, must be
/// staged); under fp32, 3xTF32 with both operands staged, when the cost model predicts it
/// beats SGEMM (not for memory-bound problems, where staging's extra traffic dominates);
/// under bf16, bf16 WGMMA with both operands staged, rounded to bf16 (to nearest even) in
/// the copy, fp32 accumulation and D in fp32. bf16/f16 inputs: the operands as given
/// with 16-byte aligned strides. Neither serves mixed dtypes or a GEMV (M or N of 1:
/// memory-bound, the vendor's GEMV reads at bandwidth).
std::vector<GemmFamilyKey> gemm_families(const GemmProblem& p, Precision policy, std::string& why);

/// One compiled kernel: a family and a configuration.
struct GemmKernelChoice {
  GemmFamilyKey family;
  GemmConfig config;
  double estimate_s;  // the cost model's estimate (a ranking key, not a prediction)
};

/// Estimated seconds for `config` of `family` on `p` with `sm_count` multiprocessors of an
/// H200-class GPU: max(compute, memory) + staging. Compute = waves of output tiles (tile
/// quantization included; stream-K spreads the MACs evenly, 5% fix-up) x one tile's MACs at
/// the per-SM dense peak (tf32 380 TFLOP/s, bf16/f16 760, over 132 SMs; docs/perf-notes.md),
/// times a small-tile re-read penalty and 1.08 for an operand transposed through registers.
/// Memory = operand and D bytes at 4.0 TB/s (for stream-K with fewer tiles than SMs, each
/// tile column/row re-reads its panel unless a cluster shares it), plus a quarter of D's
/// store time for cooperative kernels (their epilogue does not overlap the next tile's
/// mainloop; pingpong's does), and so is a fused tail's arithmetic (about 20 fp32
/// instructions per transcendental, 1 per other node, per element, at 33e12 instructions/s).
/// Staging = bytes read (the caller's dtype) and written (the MMA's) at 3.0 TB/s.
double estimate_seconds(const GemmFamilyKey& family, const GemmConfig& config, const GemmProblem& p,
                        int sm_count);

/// The tuning space of one family, ranked by the cost model, best first; at most `budget`
/// entries (0 = all). 3xTF32 keeps only tiles of at most 64 fp32 accumulators per thread
/// (its mainloop holds two accumulators).
std::vector<GemmConfig> gemm_tuning_space(const GemmFamilyKey& family, const GemmProblem& p,
                                          int sm_count, int budget);

/// The kernels to build for `p` over all `families`: each family's best configuration
/// first (so every family is tried), then the rest by estimate; at most `budget` (0 = all).
std::vector<GemmKernelChoice> gemm_kernel_choices(const std::vector<GemmFamilyKey>& families,
                                                  const GemmProblem& p, int sm_count, int budget);

/// Run-time scheduler variants tuned for one kernel: CUTLASS's defaults, a swizzle of 4
/// for persistent kernels with more than one wave of tiles, and for stream-K kernels with
/// fewer output tiles than SMs, split-K with about half, one and two SMs' worth of splits
/// (at least 4 K tiles per split).
std::vector<GemmRuntime> gemm_runtime_variants(const GemmConfig& config, const GemmProblem& p,
                                               int sm_count);

/// "" for defaults, else "+splitk<n>", "+raster{M,N}", "+swz<n>" in that order.
std::string runtime_suffix(const GemmRuntime& r);

/// Splits a candidate name into its kernel name and run-time options. Throws fact::Error
/// on an unknown option.
std::string split_candidate_name(const std::string& candidate, GemmRuntime& runtime);

/// The element type the GEMM's MMA reads: bf16 for mma "bf16" (fp32 inputs are rounded to
/// it while staged), fp16 for "f16", else fp32 (tf32 and 3xTF32 read fp32 bits).
DType gemm_operand_element(const GemmFamilyKey& family);

/// D's element type: element_d, else the caller's element.
DType gemm_d_element(const GemmFamilyKey& family);
/// The bias's and the tail inputs' element type: element_epi, else D's.
DType gemm_epi_element(const GemmFamilyKey& family);

/// True when the kernel computes D^T = B^T A^T instead of D: 4-byte (tf32) operands with A
/// row-major (K-major) and B row-major (N-major) as the GEMM reads them (after staging). tf32 WGMMA reads K-major shared memory
/// only, and for this layout pair CUTLASS's sm90 builder would swap A and B internally
/// (sm90_gmma_builder.inl, is_swapAB) while its epilogue keeps the unswapped M x N bounds:
/// wrong for M != N. In the transposed problem B^T is an M-major A and A^T a K-major B,
/// which CUTLASS runs without a swap (A goes through registers).
bool gemm_transposes_problem(const GemmFamilyKey& family);

/// "evt" + the first 8 hex digits of SHA-256 of a fused tail's tree and its inputs'
/// broadcast kinds: the epilogue token of kernel names.
std::string epilogue_token(const nlohmann::json& tree, const nlohmann::json& broadcast);

/// The procedural kernel name (see the header comment).
std::string gemm_kernel_name(const GemmFamilyKey& family, const GemmConfig& c);

}  // namespace fact::realize
