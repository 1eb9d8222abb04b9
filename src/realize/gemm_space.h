// The CUTLASS 3.x sm90a GEMM family: its tuning space and its procedural kernel names.
//
// A kernel is fixed by (element types, layouts, epilogue) from the problem and a
// configuration (CTA tile M x N x K, cluster M x N, schedule, tile scheduler) from the
// space below. Its name spells all of these and is the cache key part, report row and
// allow/deny list entry, e.g.
//   cutlass3x_sm90a_tf32_rrr_128x128x32_1x2x1_coop_persistent_lincomb
// (dtype token; layouts of A, B, D as r = row-major, c = column-major; tile; cluster;
// schedule; scheduler; epilogue "lincomb" = alpha*acc or "lincomb-biasn" = alpha*acc + bias[n]).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "realize/gemm_problem.h"

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
/// the tf32 policy, bf16, f16), the element types, the layouts and the epilogue.
struct GemmFamilyKey {
  std::string mma;  // "tf32" | "bf16" | "f16"
  DType element;    // A, B and D element type
  Layout layout_a, layout_b;
  bool bias_n;
};

/// The CUTLASS family for `p` under `policy`, or std::nullopt with `why` set when no CUTLASS
/// kernel of this family implements it (then only the vendor path is a candidate):
/// fp32 inputs under fp32 (no fp32-accurate CUTLASS kernel yet) or bf16 policy; mixed
/// dtypes; pointers/leading dimensions that cannot meet TMA's 16-byte alignment.
std::optional<GemmFamilyKey> gemm_family(const GemmProblem& p, Precision policy, std::string& why);

/// The tuning space, ranked by a simple cost model (tile quantization and waves on
/// `sm_count` multiprocessors), best first; at most `budget` entries (0 = all).
std::vector<GemmConfig> gemm_tuning_space(const GemmFamilyKey& family, const GemmProblem& p,
                                          int sm_count, int budget);

/// True when the kernel computes D^T = B^T A^T instead of D: 4-byte (tf32) operands with A
/// row-major (K-major) and B row-major (N-major). tf32 WGMMA reads K-major shared memory
/// only, and for this layout pair CUTLASS's sm90 builder would swap A and B internally
/// (sm90_gmma_builder.inl, is_swapAB) while its epilogue keeps the unswapped M x N bounds:
/// wrong for M != N. In the transposed problem B^T is an M-major A and A^T a K-major B,
/// which CUTLASS runs without a swap (A goes through registers).
bool gemm_transposes_problem(const GemmFamilyKey& family);

/// The procedural kernel name (see the header comment).
std::string gemm_kernel_name(const GemmFamilyKey& family, const GemmConfig& c);

/// The C symbol prefix of a kernel: "fact_k_" + the first 16 hex digits of SHA-256(name).
std::string kernel_symbol(const std::string& kernel_name);

}  // namespace fact::realize
